#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin installed the way an operator installs it works: `make install`
# puts the module in /lib/modules/KVER/updates and indexes it, `modprobe
# mrpin` finds it by name and takes the options of /etc/modprobe.d, the
# modules-load.d entry loads it at boot, and the commands of the shipped
# systemd units (mrpinctl apply, mrpinctl export prometheus) work with the
# shipped /etc/mrpin.conf and with every example rule in it.
#
# The guest's /lib/modules/KVER is the test kernel's tree from the host's
# cache, read-only: the test puts a tmpfs overlay on it, installs into the
# guest's root (itself a tmpfs overlay), and undoes all of it at the end,
# leaving kmod/mrpin.ko loaded as the test bed expects.
. "$(dirname "$0")/lib.sh"

require_root
require_built "$MRPIN_KO"
repo=$(cd "$(dirname "$MRPIN_KO")/.." && pwd)
kver=$(uname -r)
moddir=/lib/modules/$kver
prefix=/usr/local
unit_dir=$prefix/lib/systemd/system
CG=/sys/fs/cgroup
ktap_plan 11

tmp=$(mktemp -d)
kernel_log_mark
# What `make install` lays down outside the module tree (and nothing else
# may be there before: the test removes it from the guest's overlay).
installed=(/etc/mrpin.conf /etc/mrpin.d /etc/modprobe.d/mrpin.conf
	/etc/modules-load.d/mrpin.conf /etc/default/mrpin-export
	/etc/default/mrpin-slurm "$prefix/libexec/mrpin" "$prefix/share/mrpin"
	"$prefix/sbin/mrpinctl" "$prefix/share/man/man8/mrpinctl.8"
	"$prefix/share/bash-completion/completions/mrpinctl"
	"$unit_dir/mrpin.service" "$unit_dir/mrpin-export.service"
	"$unit_dir/mrpin-export.timer")
textfile=

cleanup() {
	mrpin_unload 2>/dev/null
	rm -rf "${installed[@]}"
	[ -n "$textfile" ] && rm -rf "$(dirname "$textfile")"
	rmdir "$CG/jobs/a" "$CG/jobs" 2>/dev/null
	mrpin_moddir_restore "$moddir"
	rm -rf "$tmp"
	mrpin_load
}
trap cleanup EXIT

mrpin_unload
rm -rf "${installed[@]}"

# A writable module tree: an overlay on the read-only one, upper on tmpfs.
mrpin_moddir_writable "$moddir"

# The commands of a unit, as systemd would run them: Environment= first,
# then the lines of /etc/default (EnvironmentFile=-), ${VAR} expanded.
unit_cmd() {
	local unit=$unit_dir/$1 key=$2 envs

	envs=$(sed -n 's/^Environment=//p' "$unit")
	bash -c "set -a; ${envs:+$envs;} [ -r /etc/default/mrpin-export ] &&
		. /etc/default/mrpin-export; set +a;
		$(sed -n "s/^$key=//p" "$unit")"
}

make_install() {
	make --no-print-directory -C "$repo" install KVER="$kver" PREFIX="$prefix" DESTDIR= \
		>"$tmp/make.log" 2>&1 || { sed 's/^/# /' "$tmp/make.log"; return 1; }
}
start=$SECONDS
ktap_check "make_install_installs_into_the_root" make_install
ktap_diag "make install (and depmod): $((SECONDS - start))s"
ktap_check "module_is_in_updates_and_indexed_by_depmod" \
	test "$(modinfo -F filename mrpin 2>/dev/null)" = "$moddir/updates/mrpin.ko"

# The modprobe.d example, uncommented: its options must reach the module,
# as parameters and as the load-time policy (global_max_pinned=40% is the
# global rule's max_pinned=40%).
sed -i 's/^#options mrpin /options mrpin /' /etc/modprobe.d/mrpin.conf
options=$(sed -n 's/^options mrpin //p' /etc/modprobe.d/mrpin.conf)
ktap_diag "options: $options"
options_in_force() {
	local o k v

	[ -n "$options" ] || return 1
	for o in $options; do
		k=${o%%=*} v=${o#*=}
		[ "$(cat "/sys/module/mrpin/parameters/$k")" = "$v" ] ||
			{ echo "# parameter $k is not $v"; return 1; }
		grep -Eq "^${k%%_*}( .*)? ${k#*_}=$v( |\$)" "$MRPIN_LIMITS" ||
			{ echo "# limits: no ${k#*_}=$v for ${k%%_*}"; return 1; }
	done
}
ktap_check "modprobe_loads_mrpin_by_name" modprobe mrpin
ktap_check "modprobe_d_options_set_the_load_time_policy" options_in_force

# mrpin.service with the shipped /etc/mrpin.conf: everything is commented
# out, so it succeeds and changes nothing.
cat "$MRPIN_LIMITS" >"$tmp/limits.before"
ktap_check "mrpin_service_applies_the_shipped_policy" unit_cmd mrpin.service ExecStart
ktap_check "shipped_policy_changes_nothing" \
	bash -c "cat $MRPIN_LIMITS | cmp -s - $tmp/limits.before"

# Every example rule in /etc/mrpin.conf, uncommented, is one the module
# takes (the stack= rule only once the module has the key).
mkdir -p "$CG/jobs/a"
sed -n 's/^#\([a-z]\)/\1/p' /etc/mrpin.conf >"$tmp/rules"
grep -q ' stack=' "$MRPIN_LIMITS" || sed -i '/ stack=/d' "$tmp/rules"
module_takes_every_rule() {
	local rule ok=0

	[ -s "$tmp/rules" ] || return 1
	while read -r rule; do
		if ! echo "$rule" >"$MRPIN_LIMITS"; then
			echo "# refused: $rule"
			ok=1
		fi
	done <"$tmp/rules"
	echo reset >"$MRPIN_LIMITS"
	return $ok
}
ktap_check "module_takes_every_example_rule" module_takes_every_rule

# The same rules in /etc/mrpin.d, through mrpin.service's reload (lines
# mrpinctl does not know yet are left out, and said so).
while read -r rule; do
	if echo "$rule" | mrpinctl apply --check - >/dev/null 2>&1; then
		echo "$rule"
	else
		ktap_diag "mrpinctl apply --check refuses '$rule'"
	fi
done <"$tmp/rules" >/etc/mrpin.d/example.conf
examples_in_force() {
	grep -q '^global .*max_pinned=50% .*action=warn' "$MRPIN_LIMITS" &&
		grep -q '^uid 1000 max_pinned=8G ' "$MRPIN_LIMITS" &&
		grep -q '^cgroup /jobs/a max_pinned=16G ' "$MRPIN_LIMITS"
}
reload_applies_mrpin_d() {
	unit_cmd mrpin.service ExecReload && examples_in_force
}
ktap_check "mrpin_service_reload_applies_mrpin_d" reload_applies_mrpin_d
echo reset >"$MRPIN_LIMITS"
rm -f /etc/mrpin.d/example.conf

# mrpin-export.service writes node_exporter's textfile, whole.
textfile=$(sed -n 's/^Environment=MRPIN_TEXTFILE=//p' "$unit_dir/mrpin-export.service")
mkdir -p "$(dirname "$textfile")"
export_writes_the_textfile() {
	unit_cmd mrpin-export.service ExecStart &&
		grep -q '^# TYPE mrpin_' "$textfile" &&
		[ "$(ls -A "$(dirname "$textfile")")" = "$(basename "$textfile")" ]
}
ktap_check "mrpin_export_service_writes_the_textfile" export_writes_the_textfile

# At boot: systemd-modules-load with the uncommented modules-load.d entry.
rmmod mrpin
sed -i 's/^#mrpin$/mrpin/' /etc/modules-load.d/mrpin.conf
boot_loads_mrpin() {
	/lib/systemd/systemd-modules-load && mrpin_loaded && options_in_force
}
ktap_check "modules_load_d_entry_loads_mrpin_with_its_options" boot_loads_mrpin

ktap_check_kernel_log "kernel_log_has_no_new_problems"
ktap_finish
