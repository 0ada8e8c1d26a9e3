#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The packaging's tests on the host (`make install-test`): make install into
# a DESTDIR, the systemd units, the alert rules (promtool), the Slurm
# Prolog/Epilog (run outside Slurm), the openibd hooks as installed, the
# example files in /etc, dkms against the test kernel's headers, make deb
# and lintian, and the .debs installed into this machine with dpkg and
# purged again without a trace.  KTAP on stdout, a last line "N passed, N
# failed"; exits 0 only when nothing failed.
#
# Needs a built tree (`make`), the packages of `scripts/setup.sh pkg`, and
# root for the dkms and dpkg tests.  Loads no module: dkms builds and
# installs either into a private tree or, from the package's postinst, into
# /lib/modules of the kernels whose headers are installed, which loads
# nothing.  Each test's output is kept in build/install-test/NAME.log.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo" || exit 1
KVER=${KVER:-$("$here/setup.sh" kver)}
export KVER
logs=$repo/build/install-test
rm -rf "$logs"
mkdir -p "$logs"
work=$(mktemp -d /tmp/mrpin-install-test.XXXXXX)
version=$(sed -n 's/^#define MRPIN_VERSION "\(.*\)"/\1/p' kmod/version.h)
# The kernel kmod/mrpin.ko was built for: where `make install` puts it.
mkver=$(modinfo -F vermagic kmod/mrpin.ko 2>/dev/null | cut -d' ' -f1)
installed_debs=0

num=0
passed=0
failed=0
skipped=0
plan=22

echo "TAP version 13"
echo "1..$plan"

diag() { echo "# $*"; }

# check NAME FUNCTION: one test point; the function's output goes to the log,
# whose tail is shown when it fails.
check() {
	local name=$1 start rc
	shift
	num=$((num + 1))
	start=$(date +%s)
	"$@" >"$logs/$name.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		echo "ok $num $name"
	elif [ "$rc" = 4 ]; then
		skipped=$((skipped + 1))
		echo "ok $num $name # SKIP $(tail -n1 "$logs/$name.log")"
	else
		failed=$((failed + 1))
		echo "not ok $num $name"
		tail -n 25 "$logs/$name.log" | sed 's/^/#   /'
	fi
	diag "$name: $(($(date +%s) - start))s"
}

skip() {
	echo "$*"
	return 4
}

fail() {
	echo "FAIL: $*"
	return 1
}

need_root() {
	[ "$(id -u)" = 0 ]
}

cleanup() {
	# A failed run leaves nothing installed either.
	if [ "$installed_debs" = 1 ]; then
		dpkg --purge mrpin-tools mrpin-dkms >/dev/null 2>&1
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# --- versions --------------------------------------------------------------

versions_agree() {
	local dkms deb
	dkms=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
	deb=$(dpkg-parsechangelog -S Version)
	echo "version.h $version, dkms.conf $dkms, debian/changelog $deb"
	[ -n "$version" ] && [ "$dkms" = "$version" ] && [ "$deb" = "$version" ]
}

# --- make install ----------------------------------------------------------

# Files with their modes, and directories.
layout() {
	find "$1" -mindepth 1 \( -type d -printf 'd %P\n' \) -o -printf '%y %m %P\n' | sort
}

expected_layout() {
	sort <<EOF
d etc
d etc/default
f 644 etc/default/mrpin-export
f 644 etc/default/mrpin-slurm
d etc/modprobe.d
f 644 etc/modprobe.d/mrpin.conf
d etc/modules-load.d
f 644 etc/modules-load.d/mrpin.conf
f 644 etc/mrpin.conf
d etc/mrpin.d
d lib
d lib/modules
d lib/modules/$mkver
d lib/modules/$mkver/updates
f 644 lib/modules/$mkver/updates/mrpin.ko
d usr
d usr/local
d usr/local/lib
d usr/local/libexec
d usr/local/libexec/mrpin
f 755 usr/local/libexec/mrpin/mrpin-openibd
f 755 usr/local/libexec/mrpin/mrpin-slurm
d usr/local/lib/systemd
d usr/local/lib/systemd/system
f 644 usr/local/lib/systemd/system/mrpin-export.service
f 644 usr/local/lib/systemd/system/mrpin-export.timer
f 644 usr/local/lib/systemd/system/mrpin.service
d usr/local/sbin
f 755 usr/local/sbin/mrpinctl
d usr/local/share
d usr/local/share/bash-completion
d usr/local/share/bash-completion/completions
f 644 usr/local/share/bash-completion/completions/mrpinctl
d usr/local/share/man
d usr/local/share/man/man8
f 644 usr/local/share/man/man8/mrpinctl.8
d usr/local/share/mrpin
d usr/local/share/mrpin/prometheus
f 644 usr/local/share/mrpin/prometheus/mrpin.rules.yml
EOF
}

dest=$work/dest
host_modules_before=$work/host-modules.before

make_install_lays_out_exactly_the_expected_files() {
	[ -n "$mkver" ] || fail "kmod/mrpin.ko is not built (run make)" || return
	ls -la --time-style=full-iso "/lib/modules/$mkver" >"$host_modules_before" 2>&1
	make --no-print-directory install PREFIX=/usr/local DESTDIR="$dest" || return
	diff -u <(expected_layout) <(layout "$dest")
}

make_install_into_a_bare_destdir_runs_no_depmod_and_leaves_the_host_alone() {
	[ ! -e "$dest/lib/modules/$mkver/modules.dep" ] ||
		fail "depmod ran in $dest" || return
	diff -u "$host_modules_before" \
		<(ls -la --time-style=full-iso "/lib/modules/$mkver" 2>&1)
}

make_install_runs_depmod_in_a_destdir_that_holds_the_kernel() {
	local root=$work/root
	mkdir -p "$root/lib/modules/$mkver"
	: >"$root/lib/modules/$mkver/modules.builtin"
	: >"$root/lib/modules/$mkver/modules.order"
	make --no-print-directory install-module DESTDIR="$root" || return
	cat "$root/lib/modules/$mkver/modules.dep"
	grep -q '^updates/mrpin.ko:' "$root/lib/modules/$mkver/modules.dep"
}

units_run_the_installed_mrpinctl() {
	local usr=$work/usr u
	make --no-print-directory install-conf DESTDIR="$usr" PREFIX=/usr >/dev/null || return
	for u in "$dest/usr/local/lib/systemd/system/mrpin.service:/usr/local/sbin" \
		"$usr/usr/lib/systemd/system/mrpin.service:/usr/sbin" \
		"$usr/usr/lib/systemd/system/mrpin-export.service:/usr/sbin"; do
		grep -H '^Exec' "${u%%:*}"
		grep '^Exec' "${u%%:*}" | grep -v "=${u#*:}/mrpinctl " && return 1
	done
	return 0
}

# systemd-analyze verify, offline: on copies of the installed units whose
# ExecStart names the mrpinctl in DESTDIR (it checks that the program
# exists).  It must accept them without a word (unknown keys are only
# warnings).  man: pages are checked by lintian, not here.
systemd_analyze_verify_accepts_the_units() {
	local units=$work/units u out
	command -v systemd-analyze >/dev/null || fail "systemd-analyze missing" || return
	mkdir -p "$units"
	for u in mrpin.service mrpin-export.service mrpin-export.timer; do
		sed "s|/usr/local/sbin/mrpinctl|$dest/usr/local/sbin/mrpinctl|g" \
			"$dest/usr/local/lib/systemd/system/$u" >"$units/$u"
	done
	out=$(cd "$units" && systemd-analyze verify --man=no \
		mrpin.service mrpin-export.service mrpin-export.timer 2>&1) ||
		{ echo "$out"; return 1; }
	echo "$out"
	[ -z "$out" ]
}

# The alert rules as installed: Prometheus loads them (promtool, from
# Debian's prometheus: scripts/setup.sh promtool).
installed_rules_pass_promtool() {
	local promtool
	promtool=$("$here/setup.sh" promtool) || fail "no promtool" || return
	"$promtool" check rules "$dest/usr/local/share/mrpin/prometheus/mrpin.rules.yml"
}

# Everything in the shipped /etc files is commented out; the rules in them
# follow the limits grammar, and the modprobe.d example names only
# parameters the module has.  (The VM test feeds them to the module.)
example_files_are_commented_out_and_well_formed() {
	local etc=$dest/etc bad params p
	bad=$(grep -Hnv '^\(#.*\)\?$' "$etc/mrpin.conf" "$etc/modprobe.d/mrpin.conf" \
		"$etc/modules-load.d/mrpin.conf" "$etc/default/mrpin-export" \
		"$etc/default/mrpin-slurm")
	[ -z "$bad" ] || fail "not commented out: $bad" || return
	grep -c '^#[a-z]' "$etc/mrpin.conf"
	bad=$(sed -n 's/^#\([a-z]\)/\1/p' "$etc/mrpin.conf" | grep -Ev \
		'^(reset|(global|process|uid [0-9]+|cgroup /[^ ]*)( (max_pinned|max_pins|max_pin_size|action|stack)=[^ ]+)+)$')
	[ -z "$bad" ] || fail "rules outside the grammar: $bad" || return
	for rule in 'global max_pinned=50% action=warn' 'process max_pin_size=[0-9]+[KMGT]? action=warn' \
		'global .*stack=warn'; do
		grep -Eq "^#$rule" "$etc/mrpin.conf" || fail "no classic rule '$rule'" || return
	done
	params=$(modinfo -F parm kmod/mrpin.ko | cut -d: -f1)
	echo "module parameters:" "$params"
	for p in $(sed -n 's/^#options mrpin //p' "$etc/modprobe.d/mrpin.conf"); do
		echo "$params" | grep -qx "${p%%=*}" || fail "no parameter ${p%%=*}" || return
	done
	grep -qx '#mrpin' "$etc/modules-load.d/mrpin.conf"
}

# The Slurm Prolog/Epilog as installed: it names the installed mrpinctl,
# the shell reads it, and outside Slurm it does nothing but say why (exit
# 0: a prolog that fails drains the node).  Its settings, uncommented, are
# the values it has without them.
installed_slurm_hook_names_mrpinctl_and_acts_only_in_slurm() {
	local hook=$dest/usr/local/libexec/mrpin/mrpin-slurm out var
	grep -x 'MRPINCTL=/usr/local/sbin/mrpinctl' "$hook" || return 1
	bash -n "$hook" || return 1
	# Even with MRPIN_SLURM_STRICT=yes: only a prolog fails.
	echo MRPIN_SLURM_STRICT=yes >"$work/mrpin-slurm.strict"
	for var in /dev/null "$work/mrpin-slurm.strict"; do
		out=$(env -i MRPIN_SLURM_DEFAULTS="$var" "$hook" 2>&1) ||
			fail "exit status $? outside Slurm ($var): $out" || return
		echo "outside Slurm ($var): $out"
		echo "$out" | grep -q "run as Slurm's Prolog or Epilog" || return 1
	done
	while read -r var; do
		grep -qx "$var" "$hook" || fail "the default file's $var is not the hook's" || return
	done < <(sed -n 's/^#\(MRPIN_SLURM_[A-Z_]*=[^ ]*\)$/\1/p' "$dest/etc/default/mrpin-slurm")
}

# NVIDIA OFED's openibd hooks as installed: they name the installed
# mrpinctl, the shell reads them, and without an action (by a name that is
# none of openibd's hooks) they do nothing but say how to use them.  Run
# in the OFED lane's VM by selftests/mrpin_openibd.sh: here they could
# unload a module.
installed_openibd_hook_names_mrpinctl() {
	local hook=$dest/usr/local/libexec/mrpin/mrpin-openibd out
	grep -x 'MRPINCTL=/usr/local/sbin/mrpinctl' "$hook" || return 1
	bash -n "$hook" || return 1
	out=$("$hook" 2>&1)
	[ $? = 2 ] || fail "exit status not 2 without an action: $out" || return
	echo "$out"
	echo "$out" | grep -q 'usage: mrpin-openibd pre-stop|post-start'
}

make_install_keeps_an_edited_policy() {
	echo 'global max_pinned=10%' >>"$dest/etc/mrpin.conf"
	make --no-print-directory install PREFIX=/usr/local DESTDIR="$dest" || return
	tail -n1 "$dest/etc/mrpin.conf" | grep -qx 'global max_pinned=10%'
}

# make uninstall takes back all of it but the policy the operator edited.
make_uninstall_keeps_only_the_edited_policy() {
	local left
	make --no-print-directory uninstall PREFIX=/usr/local DESTDIR="$dest" || return
	left=$(find "$dest" ! -type d -printf '%P\n')
	[ "$left" = etc/mrpin.conf ] || fail "left: $left"
}

# --- dkms ------------------------------------------------------------------

dk=$work/dkms
dkms_vars() {
	printf '%s\n' "KVER=$KVER" "DKMS_KERNELS=$KVER" "DKMS_SOURCE_TREE=$dk/src" \
		"DKMS_FLAGS=--dkmstree $dk/tree --installtree $dk/modules --no-depmod"
}

# make dkms-install with dkms's trees in a temporary folder: dkms builds and
# signs mrpin.ko against /lib/modules/$KVER/build and installs it into the
# private tree.
dkms_builds_mrpin_for_the_test_kernel() {
	local vars ko=$dk/modules/$KVER/updates/dkms/mrpin.ko
	need_root || skip "needs root" || return
	[ -d "/lib/modules/$KVER/build" ] ||
		fail "no headers for $KVER (scripts/setup.sh pkg)" || return
	mkdir -p "$dk/src" "$dk/tree" "$dk/modules/$KVER"
	mapfile -t vars < <(dkms_vars)
	[ "${#vars[@]}" = 4 ] || fail "bad dkms variables: ${vars[*]}" || return
	make --no-print-directory dkms-install "${vars[@]}" || return
	dkms status --dkmstree "$dk/tree" mrpin
	modinfo "$ko" | grep -E '^(version|vermagic|signer):'
	[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$KVER" ] &&
		[ "$(modinfo -F version "$ko")" = "$version" ]
}

# Every other kernel whose headers this machine has (setup.sh pkg installs
# the 6.12 series' beside the test kernel's): dkms builds mrpin.ko for it.
dkms_builds_mrpin_for_every_kernel_with_headers() {
	local k ko n=0
	need_root || skip "needs root" || return
	[ -d "$dk/tree/mrpin" ] || fail "needs the previous test" || return
	for k in /lib/modules/*/build; do
		k=${k#/lib/modules/}
		k=${k%/build}
		[ "$k" = "$KVER" ] && continue
		mkdir -p "$dk/modules/$k"
		dkms build --dkmstree "$dk/tree" --sourcetree "$dk/src" \
			mrpin/"$version" -k "$k" >/dev/null || fail "dkms build for $k failed" || return
		ko=$(find "$dk/tree/mrpin/$version/$k" -name 'mrpin.ko*' | head -n1)
		[ -n "$ko" ] || fail "no mrpin.ko built for $k" || return
		echo "built for $k: $(modinfo -F vermagic "$ko")"
		[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$k" ] || return 1
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || fail "no kernel but $KVER has headers (scripts/setup.sh pkg)"
}

# BUILD_EXCLUSIVE_KERNEL: a kernel older than 6.1 is skipped (exit 77).
dkms_skips_a_kernel_before_6_1() {
	local ksrc=$dk/ksrc-old rc
	need_root || skip "needs root" || return
	[ -d "$dk/tree/mrpin" ] || fail "needs the previous test" || return
	mkdir -p "$ksrc"
	cp "/lib/modules/$KVER/build/.config" "$ksrc/.config"
	dkms build --dkmstree "$dk/tree" --sourcetree "$dk/src" mrpin/"$version" \
		-k 5.15.0-1-amd64 --kernelsourcedir "$ksrc"
	rc=$?
	echo "5.15: dkms build exit status $rc"
	[ "$rc" = 77 ]
}

# BUILD_EXCLUSIVE_CONFIG: a kernel without one of the options mrpin needs is
# skipped (dkms exits 77) before anything is compiled.
dkms_skips_a_kernel_without_an_option_mrpin_needs() {
	local opt ksrc=$dk/ksrc rc
	need_root || skip "needs root" || return
	[ -d "$dk/tree/mrpin" ] || fail "needs the previous test" || return
	mkdir -p "$ksrc"
	for opt in CONFIG_INFINIBAND_USER_MEM CONFIG_DYNAMIC_FTRACE_WITH_REGS CONFIG_DEBUG_FS; do
		grep -q "^$opt=y" "/lib/modules/$KVER/build/.config" ||
			fail "$KVER has no $opt" || return
		grep -v "^$opt=" "/lib/modules/$KVER/build/.config" >"$ksrc/.config"
		dkms build --dkmstree "$dk/tree" --sourcetree "$dk/src" mrpin/"$version" \
			-k "$KVER-no-${opt#CONFIG_}" --kernelsourcedir "$ksrc"
		rc=$?
		echo "without $opt: dkms build exit status $rc"
		[ "$rc" = 77 ] || return 1
	done
}

make_dkms_remove_leaves_no_trace() {
	local vars left
	need_root || skip "needs root" || return
	mapfile -t vars < <(dkms_vars)
	[ "${#vars[@]}" = 4 ] || fail "bad dkms variables: ${vars[*]}" || return
	make --no-print-directory dkms-remove "${vars[@]}" || return
	left=$(find "$dk/src" "$dk/tree" "$dk/modules/$KVER" -mindepth 1)
	[ -z "$left" ] || fail "left behind: $left"
}

# --- Debian packages -------------------------------------------------------

deb_dir=$repo/build/deb
debs() {
	echo "$deb_dir/mrpin-dkms_${version}_all.deb"
	echo "$deb_dir/mrpin-tools_${version}_$(dpkg --print-architecture).deb"
}

make_deb_builds_both_packages() {
	local d
	make --no-print-directory deb || return
	for d in $(debs); do
		[ -f "$d" ] || fail "$d missing" || return
	done
}

lintian_reports_no_errors() {
	[ -f "$(debs | tail -n1)" ] || fail "no packages" || return
	lintian --fail-on error --display-info "$deb_dir"/mrpin_"${version}"_*.changes
}

packages_hold_what_they_should() {
	local dkms tools conf want
	read -r dkms tools < <(debs | xargs)
	for want in "$dkms" ./usr/src/mrpin-"$version"/dkms.conf \
		"$dkms" ./usr/src/mrpin-"$version"/kmod/main.c \
		"$dkms" ./etc/modprobe.d/mrpin.conf \
		"$dkms" ./etc/modules-load.d/mrpin.conf \
		"$tools" ./usr/sbin/mrpinctl \
		"$tools" ./usr/share/man/man8/mrpinctl.8.gz \
		"$tools" ./usr/share/bash-completion/completions/mrpinctl \
		"$tools" ./usr/share/mrpin/prometheus/mrpin.rules.yml \
		"$tools" ./lib/systemd/system/mrpin.service \
		"$tools" ./lib/systemd/system/mrpin-export.service \
		"$tools" ./lib/systemd/system/mrpin-export.timer \
		"$tools" ./etc/mrpin.conf \
		"$tools" ./etc/default/mrpin-export \
		"$tools" ./etc/default/mrpin-slurm \
		"$tools" ./usr/libexec/mrpin/mrpin-slurm \
		"$tools" ./usr/libexec/mrpin/mrpin-openibd; do
		if [ "${want#./}" = "$want" ]; then
			conf=$want
			continue
		fi
		dpkg-deb -c "$conf" | awk '{ print $6 }' | grep -qx "$want" ||
			fail "$(basename "$conf") has no $want" || return
	done
	conf=$(dpkg-deb -f "$dkms" Depends)
	echo "mrpin-dkms Depends: $conf"
	echo "$conf" | grep -q dkms || return 1
	dpkg-deb --ctrl-tarfile "$tools" | tar -xOf - ./conffiles | tee "$work/conffiles"
	grep -qx /etc/mrpin.conf "$work/conffiles" &&
		grep -qx /etc/default/mrpin-slurm "$work/conffiles" || return 1
	dpkg-deb --fsys-tarfile "$tools" | tar -xOf - ./usr/libexec/mrpin/mrpin-slurm |
		grep -x 'MRPINCTL=/usr/sbin/mrpinctl' || return 1
	dpkg-deb --fsys-tarfile "$tools" | tar -xOf - ./usr/libexec/mrpin/mrpin-openibd |
		grep -x 'MRPINCTL=/usr/sbin/mrpinctl'
}

# Where a package could leave something: every file and folder outside the
# package manager's own state, logs and caches.
snapshot() {
	find /etc /usr /var /boot /opt /srv -xdev \( -path /var/lib/dpkg -o \
		-path /var/lib/apt -o -path /var/log -o -path /var/cache -o \
		-path /var/tmp -o -path /var/backups -o -path /var/mail \) -prune \
		-o -print 2>/dev/null | sort
}

dpkg_installs_both_packages_and_dkms_builds_the_module() {
	need_root || skip "needs root" || return
	if dpkg-query -W -f='${Status}\n' mrpin-dkms mrpin-tools 2>/dev/null |
		grep -q installed || [ -n "$(dkms status mrpin 2>/dev/null)" ] ||
		compgen -G '/usr/src/mrpin-*' >/dev/null; then
		skip "mrpin is installed on this machine already: not touching it"
		return
	fi
	[ -f "$(debs | tail -n1)" ] || fail "no packages" || return
	snapshot >"$work/snapshot.before"
	installed_debs=1
	# shellcheck disable=SC2046
	dpkg -i $(debs) || return
	dkms status mrpin
	dkms status -m mrpin -v "$version" -k "$KVER" | grep -q ': installed' ||
		fail "dkms did not install mrpin for $KVER" || return
	modinfo -F vermagic "/lib/modules/$KVER/updates/dkms/mrpin.ko" | grep "^$KVER " ||
		return 1
	/usr/sbin/mrpinctl --version || return 1
	test -L /etc/systemd/system/multi-user.target.wants/mrpin.service ||
		fail "mrpin.service is not enabled" || return
	test ! -e /etc/systemd/system/timers.target.wants/mrpin-export.timer ||
		fail "mrpin-export.timer is enabled" || return
}

# Purge both: the dkms tree, the module, the source, the units and the files
# in /etc go.  What depmod leaves is the kernel's module index
# (/lib/modules/KVER/modules.*), which exists before and after on a machine
# with the kernel's image installed; here only its headers are, so the index
# is new: it must not name mrpin, and the test removes it.  dkms's MOK key
# (/var/lib/dkms/mok.*) is kept by design: it is the key enrolled in the
# firmware for Secure Boot, made by dkms at its first signed build.
purge_leaves_nothing_behind() {
	local left
	need_root || skip "needs root" || return
	[ "$installed_debs" = 1 ] || skip "the packages were not installed" || return
	dpkg --purge mrpin-tools mrpin-dkms || return
	installed_debs=0
	snapshot >"$work/snapshot.after"
	left=$(comm -13 "$work/snapshot.before" "$work/snapshot.after")
	echo "new after purge:"
	echo "$left"
	left=$(echo "$left" | grep -Ev '^/var/lib/dkms/mok\.(key|pub)$')
	if echo "$left" | grep -E '^/(usr/)?lib/modules/[^/]+/modules\.[a-z.]+$' |
		xargs -r grep -l mrpin; then
		fail "the module index still names mrpin" || return
	fi
	echo "$left" | grep -E '^/(usr/)?lib/modules/[^/]+/modules\.[a-z.]+$' | xargs -r rm -f
	left=$(echo "$left" | grep -Ev '^/(usr/)?lib/modules/[^/]+/modules\.[a-z.]+$')
	[ -z "$left" ] || fail "left behind: $left" || return
	comm -23 "$work/snapshot.before" "$work/snapshot.after" | tee "$work/gone"
	[ ! -s "$work/gone" ] || fail "purge removed files it did not install"
}

check versions_agree versions_agree
check make_install_lays_out_exactly_the_expected_files \
	make_install_lays_out_exactly_the_expected_files
check make_install_into_a_bare_destdir_runs_no_depmod_and_leaves_the_host_alone \
	make_install_into_a_bare_destdir_runs_no_depmod_and_leaves_the_host_alone
check make_install_runs_depmod_in_a_destdir_that_holds_the_kernel \
	make_install_runs_depmod_in_a_destdir_that_holds_the_kernel
check units_run_the_installed_mrpinctl units_run_the_installed_mrpinctl
check systemd_analyze_verify_accepts_the_units systemd_analyze_verify_accepts_the_units
check installed_rules_pass_promtool installed_rules_pass_promtool
check example_files_are_commented_out_and_well_formed \
	example_files_are_commented_out_and_well_formed
check installed_slurm_hook_names_mrpinctl_and_acts_only_in_slurm \
	installed_slurm_hook_names_mrpinctl_and_acts_only_in_slurm
check installed_openibd_hook_names_mrpinctl installed_openibd_hook_names_mrpinctl
check make_install_keeps_an_edited_policy make_install_keeps_an_edited_policy
check make_uninstall_keeps_only_the_edited_policy make_uninstall_keeps_only_the_edited_policy
check dkms_builds_mrpin_for_the_test_kernel dkms_builds_mrpin_for_the_test_kernel
check dkms_builds_mrpin_for_every_kernel_with_headers dkms_builds_mrpin_for_every_kernel_with_headers
check dkms_skips_a_kernel_before_6_1 dkms_skips_a_kernel_before_6_1
check dkms_skips_a_kernel_without_an_option_mrpin_needs \
	dkms_skips_a_kernel_without_an_option_mrpin_needs
check make_dkms_remove_leaves_no_trace make_dkms_remove_leaves_no_trace
check make_deb_builds_both_packages make_deb_builds_both_packages
check lintian_reports_no_errors lintian_reports_no_errors
check packages_hold_what_they_should packages_hold_what_they_should
check dpkg_installs_both_packages_and_dkms_builds_the_module \
	dpkg_installs_both_packages_and_dkms_builds_the_module
check purge_leaves_nothing_behind purge_leaves_nothing_behind

[ "$num" = "$plan" ] || { diag "ran $num of $plan tests"; failed=$((failed + plan - num)); }
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
