#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVIDIA OFED's openibd restarts the RDMA stack with mrpin loaded.  OFED's
# own script (from its tree, OFA_DIR) is installed where its packages put
# it (/etc/init.d/openibd, /usr/share/mlnx_ofed/mod_load_funcs,
# /etc/infiniband/openib.conf) and mrpin as `make install` puts it
# (/lib/modules/KVER/updates, /etc/modprobe.d/mrpin.conf, /etc/mrpin.conf,
# the hook in /usr/local/libexec/mrpin).  Without mrpin's hooks, openibd's
# stop fails and names mrpin; with them, a restart takes mrpin down with
# the stack and brings it back after, with its modprobe.d options and its
# policy, only when it was loaded before; and where mrpin cannot or
# should not go (a process holds a registration, a reader holds mrpin's
# file open, the installed mrpin.ko would not load over the installed
# OFED) the stop fails, says why, and mrpin stays with its policy.
#
# The guest's /lib/modules/KVER gets a tmpfs overlay for mrpin.ko and an
# index of the modules the restart loads (depmod over all 4,000 of the
# kernel's takes 36 s in the VM); everything is undone at the end, and the
# stack, rxe0 and kmod/mrpin.ko are left loaded, as the test bed has them.
. "$(dirname "$0")/lib.sh"

require_root
[ -f "${OFA_DIR:-}/ofed_scripts/mod_load_funcs" ] ||
	ktap_skip_all "openibd is NVIDIA OFED's (no OFED tree, OFA_DIR): the ofed step runs this test"
[ -d /sys/module/mlx_compat ] ||
	ktap_skip_all "the RDMA stack is not NVIDIA OFED's (no mlx_compat): the ofed step runs this test"
# openibd's stop looks for the processes that use the devices with lsof
# (OFED's utilities depend on it; scripts/setup.sh installs it): without
# it, it would go on to unload rxe under a registration, which rxe waits
# for.
command -v lsof >/dev/null ||
	ktap_skip_all "no lsof, which openibd needs (its package depends on it)"
require_rxe
require_built "$MRPIN_KO" "$MRPIN_PINNER" "$MRPIN_CTL"
repo=${MRPIN_KO%/kmod/mrpin.ko}
kver=$(uname -r)
moddir=/lib/modules/$kver
ofed=$OFA_DIR/ofed_scripts
HOOK=/usr/local/libexec/mrpin/mrpin-openibd
MARKER=/run/mrpin/openibd-reload
netdev=$(rdma link show rxe0/1 2>/dev/null |
	awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
[ -n "$netdev" ] || ktap_skip_all "rxe0 is missing or has no netdev"
ktap_plan 18

tmp=$(mktemp -d)
kernel_log_mark
# What the test lays down (and nothing may be there before: it is removed
# from the guest's overlay).
installed=(/etc/init.d/openibd /usr/share/mlnx_ofed /etc/infiniband
	/etc/modprobe.d/ib_ipoib.conf /etc/modprobe.d/mlnx.conf
	/etc/modprobe.d/mrpin.conf /etc/mrpin.conf /etc/mrpin.d "$HOOK"
	/run/mrpin)
pid='' reader=''

cleanup() {
	local m

	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	[ -z "$reader" ] || kill "$reader" 2>/dev/null
	wait 2>/dev/null
	mrpin_unload 2>/dev/null
	# The stack as the test bed's boot left it: openibd's start loads
	# it, but a test point that failed may have left it half down.
	for m in rdma_ucm rdma_rxe; do
		grep -q "^$m " /proc/modules || modprobe "$m" || ktap_diag "modprobe $m failed"
	done
	rdma link show rxe0/1 >/dev/null 2>&1 ||
		rdma link add rxe0 type rxe netdev "$netdev" || ktap_diag "rxe0 could not be made again"
	rm -rf "${installed[@]}" /run/mlx_ifc*
	rmdir "${HOOK%/*}" 2>/dev/null
	mrpin_moddir_restore "$moddir"
	rm -rf "$tmp"
	mrpin_load
}
trap cleanup EXIT
rm -rf "${installed[@]}"

# openibd ACTION: OFED's script as an operator runs it; its output in
# $tmp/out (and as diagnostic lines), its status in $rc.
# CONSOLETYPE=serial: its [  OK  ] and [FAILED] without terminal colours,
# as on a serial console.
openibd() {
	local start=$SECONDS

	rc=0
	CONSOLETYPE=serial /etc/init.d/openibd "$@" >"$tmp/out" 2>&1 || rc=$?
	sed 's/\r$//' "$tmp/out" >"$tmp/out.txt"
	mv "$tmp/out.txt" "$tmp/out"
	sed "s/^/openibd $*: /" "$tmp/out" | ktap_diag_lines
	ktap_diag "openibd $*: status $rc, $((SECONDS - start)) s"
}

ktap_diag_lines() {
	local line

	while IFS= read -r line; do
		ktap_diag "$line"
	done
}

said() {
	grep -Eq -- "$1" "$tmp/out"
}

hooks_install() {
	ln -sfn "$HOOK" /etc/infiniband/pre-stop-hook.sh &&
		ln -sfn "$HOOK" /etc/infiniband/post-start-hook.sh
}

hooks_remove() {
	rm -f /etc/infiniband/pre-stop-hook.sh /etc/infiniband/post-start-hook.sh
}

# The rule of /etc/mrpin.conf, and the option of /etc/modprobe.d/mrpin.conf.
policy_in_force() {
	grep -Eq '^process .*max_pin_size=(64K|65536)( |$)' "$MRPIN_LIMITS" ||
		{ ktap_diag "not in force: process max_pin_size=64K"; return 1; }
}

options_in_force() {
	[ "$(cat /sys/module/mrpin/parameters/global_max_pins 2>/dev/null)" = 100000 ] ||
		{ ktap_diag "global_max_pins is not 100000"; return 1; }
}

loaded() {
	grep -q "^$1 " /proc/modules
}

# kept: mrpin is loaded with its policy, and no marker says to load it.
kept() {
	loaded mrpin && policy_in_force && [ ! -e "$MARKER" ]
}

# rmmod_named_mrpin: openibd's stop failed on a module mrpin holds.
rmmod_named_mrpin() {
	said 'Module ib_[a-z]+ is in use by:(.* )?mrpin( |$)'
}

# rank MODULE: its line in /proc/modules, which lists the newest first.
rank() {
	awk -v m="$1" '$1 == m { print NR }' /proc/modules
}

# OFED's utilities as its Debian package (mlnx-ofed-kernel-utils, OFED's
# debian/rules) installs them; mrpin as make install does (the hook by
# the Makefile's sed: mrpinctl by its path), its module indexed for
# modprobe, its options and its policy in /etc; loaded by modprobe.
install_all() {
	install -D -m 0755 "$ofed/mlnx-ofed-kernel-utils.openibd.init" /etc/init.d/openibd &&
		install -D -m 0755 "$ofed/mod_load_funcs" /usr/share/mlnx_ofed/mod_load_funcs &&
		install -D -m 0644 "$ofed/openib.conf" /etc/infiniband/openib.conf &&
		install -D -m 0644 "$ofed/ib_ipoib.conf" /etc/modprobe.d/ib_ipoib.conf &&
		install -D -m 0644 "$ofed/mlnx.conf" /etc/modprobe.d/mlnx.conf || return 1
	cat >>/etc/infiniband/openib.conf <<'EOF'

# The test bed's settings, after the shipped ones (openibd sources this file):
# - MLX5_LOAD=no: the test bed builds OFED's core only (scripts/ofed.sh:
#   --with-core-mod --with-user_access-mod --with-addr_trans-mod) and has no
#   Mellanox device; openibd's start loads mlx5_ib and mlx5_core when
#   mlx5_core is OFED's (the kernel's is there, not OFED's: no anyway).
# - UMAD_LOAD=no, IPOIB_LOAD=no: ib_umad and ib_ipoib are not built either
#   (the kernel's own ones OFED's ib_core refuses).
# - UVERBS_LOAD=yes, RDMA_CM_LOAD=yes, RDMA_UCM_LOAD=yes: what OFED's
#   configure writes for those options (ofed_scripts/openib.conf.tmp, which
#   its installer adds here); start loads what the test bed's boot loaded.
# - NODE_DESC_TIME_BEFORE_UPDATE=0: start names the devices' node
#   descriptions in the background after so many seconds (20 as shipped):
#   at once, so that it does not outlive the test.
# As shipped: ONBOOT=yes, ALLOW_STOP=yes (stop is allowed), FORCE_MODE=no
# (a module that holds the stack is not unloaded by force).  openibd
# decides its run mode itself: called by hand as /etc/init.d/openibd (and
# Debian's script never gets systemd's boot id) it runs in "manual" mode,
# as an operator's restart does; its stop then refuses to unload a module
# another module it does not know holds, where at boot ("auto") it would
# unload that one (modprobe -r) first.
MLX5_LOAD=no
UMAD_LOAD=no
IPOIB_LOAD=no
UVERBS_LOAD=yes
RDMA_CM_LOAD=yes
RDMA_UCM_LOAD=yes
NODE_DESC_TIME_BEFORE_UPDATE=0
EOF
	mkdir -p "${HOOK%/*}" &&
		sed "s|^MRPINCTL=mrpinctl\$|MRPINCTL=$MRPIN_CTL|" \
			"$repo/packaging/openibd/mrpin-openibd" >"$HOOK" &&
		chmod 0755 "$HOOK" || return 1
	mrpin_moddir_writable "$moddir" || return 1
	install -m 0644 "$MRPIN_KO" "$moddir/updates/mrpin.ko" || return 1
	# The index of OFED's modules (updates/), those they need, and mrpin.
	# shellcheck disable=SC2046 # one module a word
	(cd "$moddir" && depmod "$kver" $(awk '{
			m = $1; sub(/:$/, "", m)
			if (m ~ /^updates\//) { print m; for (i = 2; i <= NF; i++) print $i }
		}' modules.dep | sort -u | sed "s|^|$moddir/|") "$moddir/updates/mrpin.ko") ||
		{ ktap_diag "depmod failed"; return 1; }
	echo "options mrpin global_max_pins=100000" >/etc/modprobe.d/mrpin.conf &&
		echo "process max_pin_size=64K" >/etc/mrpin.conf || return 1
	if ! { mrpin_unload && modprobe mrpin && "$MRPIN_CTL" apply >"$tmp/apply" 2>&1; }; then
		ktap_diag "mrpin: $(cat "$tmp/apply" 2>/dev/null)"
		return 1
	fi
	options_in_force && policy_in_force
}
start=$SECONDS
ktap_check "openibd_and_mrpin_are_installed_as_on_an_ofed_host" install_all
ktap_diag "installed in $((SECONDS - start)) s"
if [ "$(rank ib_core)" -gt "$(rank dummy)" ]; then
	stack_older=1
else
	ktap_diag "ib_core is not older than dummy: ib_core_was_loaded_again cannot tell"
	stack_older=0
fi

# After an OFED upgrade, before mrpin is rebuilt against it: the installed
# mrpin.ko (here the one built against the kernel's headers) would not
# load again, so pre-stop keeps the loaded one.
inbox=$repo/build/inbox/kmod/mrpin.ko
if [ -f "$inbox" ]; then
	cp "$inbox" "$moddir/updates/mrpin.ko"
	hook_rc=0
	"$HOOK" pre-stop >"$tmp/out" 2>&1 || hook_rc=$?
	ktap_diag_lines <"$tmp/out"
	cp "$MRPIN_KO" "$moddir/updates/mrpin.ko"
	stale_build_kept() {
		[ "$hook_rc" = 1 ] && said 'pre-stop: mrpin stays loaded.*built against another OFED' &&
			kept
	}
	ktap_check "pre_stop_keeps_mrpin_when_its_installed_build_is_for_another_ofed" \
		stale_build_kept
else
	ktap_skip "pre_stop_keeps_mrpin_when_its_installed_build_is_for_another_ofed" \
		"$inbox is not built (make selftests KFLAVOUR=ofed)"
fi

# 1. A process holds a registration: the hook keeps mrpin and names it,
# and openibd refuses to stop (it looks for the devices' users with lsof).
hooks_install
mrpin_start_pinner holder 16K
openibd stop
holder_named() {
	[ "$rc" != 0 ] && said "^mrpin-openibd: pre-stop: mrpin stays loaded.*mrpin_pinner\\[$pid\\]"
}
ktap_check "stop_with_the_hooks_fails_while_a_process_holds_a_registration" holder_named
nothing_unloaded() {
	loaded ib_core && loaded rdma_ucm && loaded mrpin && rdma link show rxe0/1 >/dev/null &&
		mrpin_stats_are "1 16384" pins pinned_bytes && policy_in_force && [ ! -e "$MARKER" ]
}
ktap_check "nothing_was_unloaded_and_the_registration_is_still_tracked" nothing_unloaded
kill "$pid"
wait "$pid" 2>/dev/null
pid=

# 2. Without the hooks: openibd's stop fails, naming mrpin (the modules
# before ib_uverbs in its list are gone).
hooks_remove
openibd stop
failed_naming_mrpin() {
	[ "$rc" = 1 ] && said '^Unloading ib_[a-z]+\[FAILED\]' && rmmod_named_mrpin
}
ktap_check "stop_without_the_hooks_fails_naming_mrpin" failed_naming_mrpin
ktap_check "mrpin_and_its_policy_stay_after_the_failed_stop" kept

# 3. A reader holds mrpin's policy file open: the hook cannot unload it
# (nor could it while a registration is in flight: the same EBUSY), says
# who holds it, and openibd's stop fails naming mrpin.
hooks_install
# shellcheck disable=SC2217 # sleep holds the file open, reads nothing
sleep 600 <"$MRPIN_LIMITS" &
reader=$!
export MRPIN_OPENIBD_WAIT=1
openibd stop
unset MRPIN_OPENIBD_WAIT
reader_named() {
	[ "$rc" = 1 ] &&
		said "^mrpin-openibd: pre-stop: mrpin stays loaded.*still in use after 1 s.*sleep\\[$reader\\]" &&
		rmmod_named_mrpin
}
ktap_check "stop_fails_while_mrpin_is_in_use_naming_mrpin_and_its_reader" reader_named
ktap_check "mrpin_and_its_policy_stay_and_no_marker_is_left" kept
kill "$reader"
wait "$reader" 2>/dev/null
reader=

# 4. With the hooks, a restart: the stack goes down and comes back, and
# mrpin with it, with its options and its policy.
openibd restart
restarted() {
	[ "$rc" = 0 ] && said '^Unloading HCA driver:\[  OK  \]' &&
		said '^Loading HCA driver and Access Layer:\[  OK  \]' &&
		said '^mrpin-openibd: pre-stop: mrpin unloaded' &&
		said '^mrpin-openibd: post-start: mrpin loaded again'
}
ktap_check "restart_with_the_hooks_brings_the_stack_down_and_up" restarted
ktap_check "ib_core_was_loaded_again" \
	test "$stack_older" = 1 -a "$(rank ib_core)" -lt "$(rank dummy)"
back_with_options() {
	loaded mrpin && options_in_force
}
ktap_check "mrpin_is_loaded_again_with_its_modprobe_d_options" back_with_options
ktap_check "its_policy_is_in_force_again_and_the_marker_gone" kept

# rxe is not OFED's to load: made again, as the test bed's boot makes it.
tracked_after_restart() {
	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$netdev" &&
		mrpin_start_pinner after 16K &&
		mrpin_stats_are "1 16384" pins pinned_bytes &&
		[ "$(awk '$1 == "rxe0" { print $4 }' "$MRPIN_DIR/devices")" = 1 ]
}
ktap_check "a_registration_over_rxe_after_the_restart_is_tracked" tracked_after_restart
[ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }
refused=0
"$MRPIN_PINNER" 128K </dev/null >"$tmp/over" 2>&1 || refused=1
ktap_check "the_policy_refuses_a_registration_over_it" \
	test "$refused $(mrpin_stat denials_total)" = "1 1"

# 5. mrpin not loaded: a restart leaves it so (no marker).
rmmod mrpin
openibd restart
left_unloaded() {
	[ "$rc" = 0 ] && ! loaded mrpin && [ ! -e "$MARKER" ] && ! said mrpin-openibd
}
ktap_check "a_restart_without_mrpin_loaded_leaves_it_unloaded" left_unloaded

# 6. post-start cannot load mrpin (a bad option, as a mrpin.ko built
# against another OFED would fail): it says why and keeps the marker; run
# again once it is fixed, it brings mrpin back.
post_start_fails_safe() {
	local hook_rc=0

	modprobe mrpin && "$HOOK" pre-stop >"$tmp/out" 2>&1 && [ -e "$MARKER" ] || return 1
	echo "options mrpin global_max_pins=lots" >/etc/modprobe.d/mrpin.conf
	"$HOOK" post-start >"$tmp/out" 2>&1 || hook_rc=$?
	ktap_diag_lines <"$tmp/out"
	[ "$hook_rc" = 1 ] && said 'post-start: modprobe mrpin failed' && [ -e "$MARKER" ] &&
		! loaded mrpin
}
ktap_check "post_start_that_cannot_load_mrpin_says_why_and_keeps_the_marker" post_start_fails_safe
post_start_again() {
	echo "options mrpin global_max_pins=100000" >/etc/modprobe.d/mrpin.conf
	"$HOOK" post-start >"$tmp/out" 2>&1 || { ktap_diag_lines <"$tmp/out"; return 1; }
	loaded mrpin && options_in_force && policy_in_force && [ ! -e "$MARKER" ]
}
ktap_check "post_start_run_again_brings_mrpin_back" post_start_again

ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
