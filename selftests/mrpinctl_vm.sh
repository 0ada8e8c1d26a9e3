#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpinctl against the live module, while real rdma-core programs
# (mrpin_pinner on rxe0) hold pins: every command, text and JSON (parsed),
# limits set, deleted and reset and read back, policy files applied (good,
# bad: nothing applied, and the default /etc files), events after a
# denial (also --follow), the Prometheus export checked line by line, top
# on a terminal and not, and the messages when not root or not loaded.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
here=$(cd "$(dirname "$0")" && pwd -P)
repo=$(cd "$here/.." && pwd)
CTL=$repo/userspace/mrpinctl
# promtool: scripts/check.sh passes it (setup.sh promtool unpacks it).
PROMTOOL=${PROMTOOL:-promtool}
PTY_TOP=$repo/userspace/tests/pty_top.py
LIMITS=$MRPIN_LIMITS
require_built "$CTL"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
ktap_plan 49

tmp=$(mktemp -d)
export COLUMNS=80 TZ=UTC
# A user by name: whatever this machine calls uid 65534.
user=$(getent passwd 65534 | cut -d: -f1)
[ -n "$user" ] || ktap_skip_all "this machine has no user with uid 65534 to name"
echo reset >"$LIMITS"

# json_is EXPR ARGS...: `mrpinctl -j ARGS` parses, and EXPR (of d) holds.
json_is() {
	local expr=$1
	shift
	"$CTL" -j "$@" >"$tmp/json" 2>"$tmp/err" && json_holds "$tmp/json" "$expr"
}

# start_pinner ARGS...: mrpin_pinner holding its MRs until stop_pinner.
start_pinner() {
	mkfifo "$tmp/pinner.in"
	"$here/mrpin_pinner" "$@" <"$tmp/pinner.in" >"$tmp/pinner.out" 2>&1 &
	pid=$!
	exec 7>"$tmp/pinner.in"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/pinner.out" && return 0
		sleep 0.1
	done
	return 1
}

stop_pinner() {
	exec 7>&-
	wait "$pid"
}

start_pinner 1M 8K@100 64K
vmpin=$(awk '/^VmPin:/ { printf "%d", $2 * 1024 }' "/proc/$pid/status")
stat_bytes=$(mrpin_stat pinned_bytes)

# 1. What is pinned, while the pinner holds its MRs.
ktap_check "status_text_shows_the_totals" \
	bash -c "'$CTL' status | grep -q '^Pins: *[1-9]'"
ktap_check "status_json_totals_match_the_stats_file" \
	json_is "d['pinned_bytes'] == $stat_bytes and d['pins'] >= 3 and any(x['device'] == 'rxe0' for x in d['devices'])" status
ktap_check "status_global_limit_is_half_of_ram" \
	json_is "d['global_max_pinned'] == d['ram_bytes'] * 50 // 100 and d['global_max_pinned_percent'] == 50 and d['ram_bytes'] == int(open('/proc/meminfo').read().split()[1]) * 1024" status
ktap_check "proc_text_lists_the_pinner" \
	bash -c "'$CTL' proc | grep -Eq '^ *$pid +mrpin_pinner +root '"
ktap_check "proc_json_pinned_bytes_is_vmpin" \
	json_is "len(d) == 1 and d[0]['pinned_bytes'] == $vmpin == d[0]['vm_pinned_bytes'] and d[0]['pins'] == 3 and d[0]['memlock_bytes'] is None" proc pid "$pid"
ktap_check "proc_json_sums_to_the_stats_file" \
	json_is "sum(p['pinned_bytes'] for p in d) == $stat_bytes" proc
ktap_check "proc_user_and_sort_filters" \
	json_is "[p['pid'] for p in d] == [$pid]" proc user root sort pins pid "$pid"
ktap_check "pin_json_has_the_three_mrs" \
	json_is "sorted(p['length'] for p in d) == [8192, 65536, 1048576] and [p['pinned_bytes'] for p in d if p['length'] == 8192] == [12288] and all(p['caller'] == 'rxe_mr_init_user' for p in d)" pin pid "$pid"
ktap_check "pin_min_size_filter" \
	json_is "sorted(p['pinned_bytes'] for p in d) == [65536, 1048576]" pin pid "$pid" min-size 64K
ktap_check "pin_dev_and_age_filters" \
	json_is "d == []" pin pid "$pid" dev rxe0 older-than 1h
ktap_check "dev_shows_rxe0_and_its_mr_table" \
	json_is "[x['pins'] >= 3 and x['max_mr'] > 0 and x['mr_use_percent'] > 0 for x in d if x['device'] == 'rxe0'] == [True]" dev
ktap_check "text_fits_80_columns" \
	bash -c "for c in status proc pin dev; do '$CTL' \$c; done | awk 'length(\$0) > 80 { exit 1 }'"

json_ok=1
for cmd in status proc pin dev "limit show" events; do
	for opt in -j -p; do
		# shellcheck disable=SC2086
		"$CTL" $opt $cmd >"$tmp/json"
		json_holds "$tmp/json" True || json_ok=0
	done
done
ktap_check "every_command_prints_valid_json" test "$json_ok" = 1

# 2. Limits: set, read back, delete, reset.
default=$(cat "$LIMITS")
"$CTL" limit set uid "$user" max_pinned=8G action=warn
ktap_check "limit_set_uid_by_name" \
	grep -qxF "uid 65534 max_pinned=8G max_pins=unlimited max_pin_size=unlimited action=warn" "$LIMITS"
ktap_check "limit_show_names_the_user" \
	bash -c "'$CTL' limit show | grep -Eq '^uid $user +max_pinned=8G +max_pins=unlimited +max_pin_size=unlimited +action=warn$'"
mkdir -p "/sys/fs/cgroup/mrpinctl test"
"$CTL" limit set cgroup "/mrpinctl test" max_pinned=16G max_pins=10
ktap_check "limit_set_cgroup_with_a_space" \
	grep -qxF 'cgroup /mrpinctl\040test max_pinned=16G max_pins=10 max_pin_size=unlimited action=enforce' "$LIMITS"
ktap_check "limit_show_json_has_both_rules" \
	json_is "[r.get('uid', r.get('cgroup')) for r in d[2:]] == [65534, '/mrpinctl test'] and d[3]['max_pins'] == 10" limit
"$CTL" limit delete cgroup "/mrpinctl test"
ktap_check "limit_delete_cgroup" bash -c "! grep -q '^cgroup' '$LIMITS'"
cp "$LIMITS" "$tmp/before"
"$CTL" limit delete uid 12345 2>"$tmp/err"
rc=$?
ktap_check "limit_delete_of_no_rule_exits_2" \
	bash -c "[ $rc = 2 ] && grep -q \"no rule 'uid 12345' to delete\" '$tmp/err' && cat '$LIMITS' | cmp -s - '$tmp/before'"
"$CTL" limit set global max_pinned=101% 2>"$tmp/err"
rc=$?
ktap_check "limit_set_bad_value_changes_nothing" \
	bash -c "[ $rc = 2 ] && grep -q 'percentage above 100' '$tmp/err' && cat '$LIMITS' | cmp -s - '$tmp/before'"
"$CTL" limit delete uid "$user"
ktap_check "limit_delete_uid" bash -c "! grep -q '^uid' '$LIMITS'"
"$CTL" limit set global stack=deny mr_table_warn=90%
ktap_check "limit_set_the_global_keys" \
	bash -c "grep -q '^global .* stack=deny .* mr_table_warn=90% ' '$LIMITS' || grep -q '^global .* stack=deny .* mr_table_warn=90%\$' '$LIMITS'"
ktap_check "limit_show_json_has_the_global_keys" \
	json_is "d[0]['stack'] == 'deny' and d[0]['mr_table_warn'] == 90 and 'stack' not in d[1]" limit
"$CTL" limit set process max_pins=100 && "$CTL" limit reset
ktap_check "limit_reset_restores_the_defaults" test "$(cat "$LIMITS")" = "$default"

# 3. `limit show` saved is a config that restores the policy.
"$CTL" limit set uid 0 max_pins=1000 && "$CTL" limit set cgroup "/mrpinctl test" max_pinned=1G &&
	"$CTL" limit set global max_pin_size=1G action=warn
cp "$LIMITS" "$tmp/policy"
"$CTL" limit show >"$tmp/saved.conf"
"$CTL" limit reset
"$CTL" apply "$tmp/saved.conf"
ktap_check "limit_show_output_applied_restores_the_policy" \
	bash -c "cat '$LIMITS' | cmp -s - '$tmp/policy'"
"$CTL" limit reset

# 4. Policy files.
cat >"$tmp/good.conf" <<EOF
# a policy
reset
process max_pinned=64G max_pins=100000   # each process

uid $user max_pinned=8G action=warn
cgroup /mrpinctl\\040test max_pinned=16G
EOF
"$CTL" apply --check "$tmp/good.conf" >/dev/null
ktap_check "apply_check_applies_nothing" test "$(cat "$LIMITS")" = "$default"
"$CTL" apply "$tmp/good.conf"
ktap_check "apply_good_file" \
	bash -c "grep -qxF 'process max_pinned=64G max_pins=100000 max_pin_size=unlimited action=enforce count=registered' '$LIMITS' &&
		grep -qxF 'uid 65534 max_pinned=8G max_pins=unlimited max_pin_size=unlimited action=warn' '$LIMITS' &&
		grep -qxF 'cgroup /mrpinctl\\040test max_pinned=16G max_pins=unlimited max_pin_size=unlimited action=enforce' '$LIMITS'"
cp "$LIMITS" "$tmp/before"
printf 'reset\nglobal max_pinned=10%%\nuid %s max_pinned=1G\nprocess max_pins=lots\n' "$user" >"$tmp/bad.conf"
"$CTL" apply "$tmp/bad.conf" 2>"$tmp/err"
rc=$?
ktap_check "apply_bad_file_exits_2_naming_line_and_column" \
	bash -c "[ $rc = 2 ] && grep -qF '$tmp/bad.conf:4:18: bad value '\"'\"'lots'\"'\"' for max_pins' '$tmp/err'"
ktap_check "apply_bad_file_applies_nothing" bash -c "cat '$LIMITS' | cmp -s - '$tmp/before'"
# The default files: mrpin.conf, then mrpin.d/*.conf in name order.
mkdir -p /etc/mrpin.d
printf 'reset\nprocess max_pinned=1G max_pins=50\n' >/etc/mrpin.conf
printf 'process max_pinned=2G\n' >/etc/mrpin.d/20-b.conf
printf 'process max_pinned=3G action=warn\n' >/etc/mrpin.d/10-a.conf
printf 'process max_pinned=9G\n' >/etc/mrpin.d/30-c.conf.disabled
"$CTL" apply
ktap_check "apply_default_files_later_keys_win" \
	grep -qxF "process max_pinned=2G max_pins=50 max_pin_size=unlimited action=warn count=registered" "$LIMITS"
rm -rf /etc/mrpin.conf /etc/mrpin.d
"$CTL" limit reset

# 5. Events: a denial, read back; --follow sees a new one.
"$CTL" -j events >"$tmp/events0"
n0=$(json_value "$tmp/events0" "len(d)")
"$CTL" limit set process max_pinned=64K
"$here/mrpin_pinner" 1M </dev/null >"$tmp/denied" 2>&1
ktap_check "registration_over_the_limit_is_refused" grep -q 'Cannot allocate memory' "$tmp/denied"
ktap_check "events_shows_the_denial" \
	json_is "len(d) == $n0 + 1 and d[-1]['action'] == 'deny' and d[-1]['scope'] == 'process' and d[-1]['key'] == 'max_pinned' and d[-1]['asked'] == 1048576 and d[-1]['limit'] == 65536 and d[-1]['comm'] == 'mrpin_pinner' and d[-1]['user'] == 'root'" events
ktap_check "events_text_shows_the_denial" \
	bash -c "'$CTL' events | tail -n1 | grep -Eq ' deny +[0-9]+ +mrpin_pinner .*process +max_pinned .*64.0 KiB\$'"
"$CTL" -j events --follow >"$tmp/follow" &
follower=$!
sleep 0.5
"$here/mrpin_pinner" 2M </dev/null >/dev/null 2>&1
for _ in $(seq 50); do
	[ "$(wc -l <"$tmp/follow")" -gt "$n0" ] && grep -q '"asked":2097152' "$tmp/follow" && break
	sleep 0.1
done
kill "$follower" 2>/dev/null
wait "$follower" 2>/dev/null
tail -n1 "$tmp/follow" >"$tmp/followed"
ktap_check "events_follow_sees_a_new_denial" \
	json_holds "$tmp/followed" "d['asked'] == 2097152 and d['action'] == 'deny'"
ktap_check "status_counts_the_denials" \
	json_is "d['denials_total'] == $(mrpin_stat denials_total) >= 2" status
"$CTL" limit reset

# 6. The Prometheus export.
"$CTL" export prometheus --per-process >"$tmp/metrics"
ktap_check "export_is_valid_exposition_format" bash -c "'$PROMTOOL' check metrics <'$tmp/metrics'"
ktap_check "export_has_the_device_and_process_series" \
	bash -c "grep -qx 'mrpin_device_pins{device=\"rxe0\"} [1-9][0-9]*' '$tmp/metrics' &&
		grep -qx 'mrpin_process_pinned_bytes{pid=\"$pid\",comm=\"mrpin_pinner\"} $vmpin' '$tmp/metrics' &&
		grep -qx 'mrpin_pinned_bytes $(mrpin_stat pinned_bytes)' '$tmp/metrics'"
"$CTL" export prometheus >"$tmp/metrics"
ktap_check "export_has_no_per_process_series_by_default" \
	bash -c "! grep -q 'pid=' '$tmp/metrics' && '$PROMTOOL' check metrics <'$tmp/metrics'"
mkdir -p "$tmp/textfile"
"$CTL" export prometheus "$tmp/textfile/mrpin.prom"
ktap_check "export_file_written_atomically" \
	bash -c "[ \"\$(ls -A '$tmp/textfile')\" = mrpin.prom ] && [ \"\$(stat -c %a '$tmp/textfile/mrpin.prom')\" = 644 ] && '$PROMTOOL' check metrics <'$tmp/textfile/mrpin.prom'"

# 7. top.
ktap_check "top_plain_when_not_a_terminal" \
	bash -c "'$CTL' top --iterations 2 --delay 0.2 | grep -Ec '^ *$pid +mrpin_pinner' | grep -qx 2"
"$CTL" -j top -n 2 -d 0.2 >"$tmp/top"
ktap_check "top_json_lines" \
	jsonl_holds "$tmp/top" "len(d) == 2 and any(p['pid'] == $pid for p in d[0]['procs'])"
TERM=xterm timeout 30 python3 "$PTY_TOP" "$CTL" top >"$tmp/screen" 2>&1
rc=$?
ktap_check "top_on_a_terminal_draws_and_quits_on_q" \
	bash -c "[ $rc = 0 ] && grep -q 'mrpinctl top: sorted by pinned' '$tmp/screen' && grep -q 'mrpin_pinner' '$tmp/screen'"

# 8. Unprivileged, and not loaded.
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${nobody[@]}" "$CTL" status >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "not_root_one_sentence_exit_1" \
	bash -c "[ $rc = 1 ] && grep -qx 'mrpinctl: permission denied: /sys/kernel/debug/mrpin is readable by root only: run mrpinctl as root (e.g. with sudo)' '$tmp/err'"
debugfs_mode=$(stat -c '%a' /sys/kernel/debug)
chmod 755 /sys/kernel/debug
"${nobody[@]}" "$CTL" proc >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "not_root_reading_a_table" \
	bash -c "[ $rc = 1 ] && grep -q 'permission denied reading /sys/kernel/debug/mrpin/procs: run mrpinctl as root' '$tmp/err'"
"${nobody[@]}" "$CTL" limit set uid 0 max_pins=1 >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "not_root_changing_limits" \
	bash -c "[ $rc = 1 ] && grep -q 'run mrpinctl as root' '$tmp/err' && [ \"\$(cat '$LIMITS')\" = '$default' ]"
chmod "$debugfs_mode" /sys/kernel/debug

unshare -m bash -c "umount -l /sys/kernel/debug && '$CTL' status" >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "debugfs_not_mounted_one_sentence_exit_1" \
	bash -c "[ $rc = 1 ] && grep -qx \"mrpinctl: debugfs is not mounted: run 'mount -t debugfs none /sys/kernel/debug'; /sys/kernel/debug/mrpin was not found\" '$tmp/err'"

stop_pinner
ktap_check "pins_released_shown_as_zero" json_is "d['pins'] == 0 and d['top_procs'] == []" status
rmmod mrpin
"$CTL" status >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "not_loaded_one_sentence_exit_1" \
	bash -c "[ $rc = 1 ] && grep -qx \"mrpin is not loaded: run 'modprobe mrpin' (or insmod kmod/mrpin.ko); /sys/kernel/debug/mrpin was not found\" '$tmp/err'"
mrpin_load
ktap_check "loaded_again" bash -c "'$CTL' status >/dev/null"

rmdir "/sys/fs/cgroup/mrpinctl test" 2>/dev/null
rm -rf "$tmp"
ktap_finish
