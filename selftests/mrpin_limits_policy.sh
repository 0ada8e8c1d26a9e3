#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The policy file /sys/kernel/security/mrpin/limits keeps its contract: it
# reads as the complete policy in the grammar it takes (sizes with the
# largest exact binary suffix, uid rules by uid, then cgroup rules by
# path), a line sets only the keys it names, one open file is one
# transaction (a line applies once ended, at the close), `cat limits >
# saved; ...; cat saved > limits` restores it byte for byte, a bad write
# fails with EINVAL and says which line, and the
# module parameters set the load-time defaults that `reset` goes back to.
# Who may read and write it: mrpin_security.sh; bad parameters:
# mrpin_params_fuzz.sh.  debugfs' limits is a second door to the same
# policy: it reads what the first holds and a write there shows here.
. "$(dirname "$0")/lib.sh"

require_root
require_built "$MRPIN_KO"
mrpin_load
LIMITS=$MRPIN_LIMITS
EVENTS=$MRPIN_DIR/events
CG=/sys/fs/cgroup
PLAN=52
ktap_plan $PLAN

tmp=$(mktemp -d)
kernel_log_mark

if [ ! -e "$LIMITS" ]; then
	ktap_diag "$LIMITS is missing: this mrpin has no policy"
	for _ in $(seq $PLAN); do ktap_fail "limits_file_exists"; done
	ktap_finish
fi

# put TEXT: write TEXT (and a newline if it lacks one) to limits in a
# single write(); dd's status, its error message in $tmp/err.
put() {
	local text=$1

	[ "${text: -1}" = $'\n' ] || text+=$'\n'
	printf '%s' "$text" | dd of="$LIMITS" bs=1M count=1 iflag=fullblock \
		conv=notrunc status=none 2>"$tmp/err"
}

# fails_einval TEXT: the write fails with EINVAL.
fails_einval() {
	! put "$1" && grep -q 'Invalid argument' "$tmp/err"
}

# has_line LINE: limits has exactly this line.
has_line() {
	grep -qxF -- "$1" "$LIMITS"
}

# same_as FILE: limits holds exactly the bytes of FILE.  (Through a pipe:
# cmp -s takes two regular files of different st_size as different, and
# debugfs files have none.)
same_as() {
	cat "$LIMITS" | cmp -s - "$1"
}

# rules_are TEXT: the uid and cgroup rules, scope and name, in order.
rules_are() {
	test "$(awk '$1 == "uid" || $1 == "cgroup" { printf "%s %s;", $1, $2 }' "$LIMITS")" = "$1"
}

cat >"$tmp/default" <<'EOF'
# mrpin limits: write this back to restore this policy
reset
global max_pinned=50% max_pins=unlimited max_pin_size=unlimited action=enforce count=distinct stack=warn oversize=1G mr_table_warn=80% callsites=off log_failures=off
process max_pinned=unlimited max_pins=unlimited max_pin_size=unlimited action=enforce count=registered
EOF

mkdir -p "$CG/mrpin_p/a/c" "$CG/mrpin_p/b"

# 1. The files.
ktap_check "limits_is_mode_0600" test "$(stat -c %a "$LIMITS")" = 600
ktap_check "events_is_mode_0400" test "$(stat -c %a "$EVENTS")" = 400
put 'reset'
ktap_check "default_policy_reads_back_as_documented" same_as "$tmp/default"
echo 'process max_pins=7' >"$MRPIN_DIR/limits"
ktap_check "a_write_through_debugfs_shows_in_securityfs" has_line \
	'process max_pinned=unlimited max_pins=7 max_pin_size=unlimited action=enforce count=registered'
ktap_check "debugfs_limits_reads_the_same_policy" same_as "$MRPIN_DIR/limits"
put 'reset'

# 2. The grammar, as read back.
put 'process max_pins=10000'
put 'process max_pin_size=1G'
ktap_check "line_sets_only_the_keys_it_names" \
	has_line 'process max_pinned=unlimited max_pins=10000 max_pin_size=1G action=enforce count=registered'
put 'global action=warn'
ktap_check "global_action_alone_keeps_its_percentage" \
	has_line 'global max_pinned=50% max_pins=unlimited max_pin_size=unlimited action=warn count=distinct stack=warn oversize=1G mr_table_warn=80% callsites=off log_failures=off'
put 'reset'
put 'uid 4242 max_pins=7'
ktap_check "new_uid_rule_starts_unlimited_and_enforcing" \
	has_line 'uid 4242 max_pinned=unlimited max_pins=7 max_pin_size=unlimited action=enforce'
put 'cgroup /mrpin_p action=warn'
ktap_check "new_cgroup_rule_starts_unlimited" \
	has_line 'cgroup /mrpin_p max_pinned=unlimited max_pins=unlimited max_pin_size=unlimited action=warn'

put $'reset\nuid 1 max_pinned=1048576\nuid 2 max_pinned=1536K\nuid 3 max_pinned=1000\nuid 4 max_pinned=2048M\nuid 5 max_pinned=1T max_pin_size=4096\nuid 6 max_pinned=3072G max_pin_size=1025K\nuid 7 max_pins=1024 max_pinned=5%\nuid 8 max_pinned=4097\n'
ktap_check "write_of_eight_rules_succeeds" test "$(grep -c '^uid ' "$LIMITS")" = 8
ktap_check "bytes_print_with_the_largest_exact_suffix" \
	has_line 'uid 1 max_pinned=1M max_pins=unlimited max_pin_size=unlimited action=enforce'
ktap_check "size_not_a_whole_mebibyte_prints_in_kibibytes" \
	has_line 'uid 2 max_pinned=1536K max_pins=unlimited max_pin_size=unlimited action=enforce'
ktap_check "size_not_a_whole_kibibyte_prints_in_bytes" \
	has_line 'uid 3 max_pinned=1000 max_pins=unlimited max_pin_size=unlimited action=enforce'
ktap_check "mebibytes_print_as_gibibytes_when_exact" \
	has_line 'uid 4 max_pinned=2G max_pins=unlimited max_pin_size=unlimited action=enforce'
ktap_check "tebibytes_and_max_pin_size_print_with_suffixes" \
	has_line 'uid 5 max_pinned=1T max_pins=unlimited max_pin_size=4K action=enforce'
ktap_check "gibibytes_print_as_tebibytes_when_exact" \
	has_line 'uid 6 max_pinned=3T max_pins=unlimited max_pin_size=1025K action=enforce'
ktap_check "max_pins_prints_as_a_plain_count_and_a_percentage_as_written" \
	has_line 'uid 7 max_pinned=5% max_pins=1024 max_pin_size=unlimited action=enforce'
ktap_check "odd_byte_count_prints_plain" \
	has_line 'uid 8 max_pinned=4097 max_pins=unlimited max_pin_size=unlimited action=enforce'

put $'reset\nuid 20000 max_pins=1\ncgroup /mrpin_p/b max_pins=1\nuid 3 max_pins=1\ncgroup /mrpin_p/a/c max_pins=1\nuid 1000 max_pins=1\ncgroup /mrpin_p/a max_pins=1\n'
ktap_check "uid_rules_by_uid_then_cgroup_rules_by_path" \
	rules_are "uid 3;uid 1000;uid 20000;cgroup /mrpin_p/a;cgroup /mrpin_p/a/c;cgroup /mrpin_p/b;"
ktap_check "header_reset_global_process_come_first" \
	test "$(head -n 4 "$LIMITS" | awk '{ print $1 }' | tr '\n' ' ')" = "# reset global process "
put 'uid 1000 delete'
put 'cgroup /mrpin_p/a delete'
ktap_check "delete_removes_only_that_rule" \
	rules_are "uid 3;uid 20000;cgroup /mrpin_p/a/c;cgroup /mrpin_p/b;"
put 'reset'
ktap_check "reset_removes_every_rule_and_restores_the_defaults" same_as "$tmp/default"

put $'uid 9 max_pins=1\nreset\n# a comment\n\nuid 10 max_pins=2\nuid 11 max_pins=3\nuid 11 delete\n'
{ cat "$tmp/default"; echo 'uid 10 max_pinned=unlimited max_pins=2 max_pin_size=unlimited action=enforce'; } >"$tmp/in_order"
ktap_check "lines_of_one_write_apply_in_order" same_as "$tmp/in_order"

# 3. One write, one transaction; errors say which line.
cat "$LIMITS" >"$tmp/before"
ktap_check "write_with_a_bad_last_line_fails_with_einval" \
	fails_einval $'uid 12 max_pins=1\nreset\nglobal max_pinned=101%\n'
ktap_check "failed_write_changes_nothing" same_as "$tmp/before"
ktap_check "write_with_a_bad_first_line_fails_with_einval" \
	fails_einval $'bogus\nuid 13 max_pins=1\n'
ktap_check "failed_write_changes_nothing_either" same_as "$tmp/before"

logged_line3() {
	local before

	kernel_log_read
	before=$(grep -c 'mrpin: limits: line 3: ' <<<"$kernel_log")
	put $'# one\n\nglobal max_pinned=abc\nuid 14 max_pins=1\n'
	kernel_log_read
	[ "$(grep -c 'mrpin: limits: line 3: ' <<<"$kernel_log")" -gt "$before" ]
}
# The log is rate-limited: give it one more chance after its window.
if logged_line3 || { sleep 6; logged_line3; }; then
	ktap_ok "error_is_logged_with_its_line_number"
else
	ktap_fail "error_is_logged_with_its_line_number"
	grep 'mrpin: limits' <<<"$kernel_log" | tail -n 3 | sed 's/^/# /'
fi

# 3b. One open file, one transaction, whatever its writes: a line applies
# only once it has ended, and only when the file is closed.
global_max() {
	awk '$1 == "global" { print $2 }' "$LIMITS"
}
put 'reset'
cat "$LIMITS" >"$tmp/before"
ktap_check "policy_cut_into_19_byte_writes_is_accepted" \
	bash -c "printf 'reset\nglobal max_pinned=4G\n' | dd of=$LIMITS bs=19 status=none"
ktap_check "lines_cut_across_writes_apply_whole" test "$(global_max)" = max_pinned=4G
put 'reset'
exec {held}>"$LIMITS"
printf 'global max_pinned=4' >&$held
ktap_check "a_line_not_ended_applies_nothing" same_as "$tmp/before"
printf 'G\nuid 21 max_pins=1\n' >&$held
ktap_check "ended_lines_wait_for_the_close" same_as "$tmp/before"
exec {held}>&-
ktap_check "the_close_applies_every_line" \
	test "$(global_max) $(grep -c '^uid 21 ' "$LIMITS")" = "max_pinned=4G 1"
put 'reset'
ktap_check "bad_line_in_a_later_write_fails_it" \
	bash -c "! printf 'uid 22 max_pins=1\nuid 23 max_pins=1\nglobal max_pinned=101%%\n' | dd of=$LIMITS bs=19 status=none 2>$tmp/err && grep -q 'Invalid argument' $tmp/err"
ktap_check "and_the_lines_before_it_do_not_apply" same_as "$tmp/before"
exec {held}>"$LIMITS"
printf 'bogus\n' >&$held 2>/dev/null
printf 'uid 24 max_pins=1\n' >&$held 2>"$tmp/err"
ktap_check "a_write_after_a_failed_one_fails" grep -q 'Invalid argument' "$tmp/err"
exec {held}>&-
ktap_check "and_its_close_applies_nothing" same_as "$tmp/before"
ktap_check "a_last_line_without_newline_applies_at_close" \
	bash -c "printf 'uid 25 max_pins=1' > $LIMITS && grep -q '^uid 25 ' $LIMITS"
put 'reset'
ktap_check "a_bad_last_line_without_newline_fails_the_close" \
	bash -c "! printf 'uid 26 max_pins=1\nbogus' | dd of=$LIMITS status=none 2>$tmp/err && grep -q 'closing output file.*Invalid argument' $tmp/err"
ktap_check "and_changes_nothing" same_as "$tmp/before"

# 4. Round trip.
put $'reset\nglobal max_pinned=40% action=warn\nprocess max_pinned=3G max_pins=500 max_pin_size=1536K\nuid 1000 max_pinned=8G action=warn\nuid 7 max_pins=3\ncgroup /mrpin_p/a max_pinned=16G\ncgroup /mrpin_p/b action=warn max_pin_size=1M\n'
cat "$LIMITS" >"$tmp/saved"
ktap_check "saved_policy_starts_with_its_header_and_reset" \
	test "$(head -n 2 "$tmp/saved" | tr '\n' ' ')" = "# mrpin limits: write this back to restore this policy reset "
put $'uid 1000 delete\nuid 8 max_pins=1\nglobal max_pinned=1G action=enforce\nprocess max_pins=unlimited\ncgroup /mrpin_p/a delete\ncgroup /mrpin_p/a/c max_pins=2\n'
ktap_check "changed_policy_differs_from_the_saved_one" bash -c "! cat $LIMITS | cmp -s - $tmp/saved"
ktap_check "cat_of_the_saved_policy_is_accepted" bash -c "cat $tmp/saved > $LIMITS"
ktap_check "round_trip_restores_the_policy_byte_for_byte" same_as "$tmp/saved"
ktap_check "writing_it_twice_changes_nothing" bash -c "cat $tmp/saved > $LIMITS && cat $LIMITS | cmp -s - $tmp/saved"
cat "$LIMITS" >"$tmp/saved2"
put 'reset'
ktap_check "restored_policy_saves_the_same_text" bash -c "cat $tmp/saved2 > $LIMITS && cat $LIMITS | cmp -s - $tmp/saved"
ktap_check "saved_default_policy_round_trips" \
	bash -c "cat $tmp/default > $LIMITS && cat $LIMITS | cmp -s - $tmp/default"

# 5. Module parameters: the defaults of `reset`.
put 'reset'
rmdir "$CG/mrpin_p/a/c" "$CG/mrpin_p/a" "$CG/mrpin_p/b" "$CG/mrpin_p"

mrpin_unload
cat >"$tmp/params" <<'EOF'
# mrpin limits: write this back to restore this policy
reset
global max_pinned=40% max_pins=unlimited max_pin_size=unlimited action=warn count=distinct stack=warn oversize=1G mr_table_warn=80% callsites=off log_failures=off
process max_pinned=1G max_pins=100 max_pin_size=64M action=enforce count=registered
EOF
ktap_check "insmod_with_good_parameters_loads" \
	insmod "$MRPIN_KO" global_max_pinned=40% global_action=warn \
	process_max_pinned=1G process_max_pins=100 process_max_pin_size=64M
ktap_check "parameters_are_the_policy_at_load" same_as "$tmp/params"
put $'uid 5 max_pins=1\nglobal max_pinned=1G action=enforce\nprocess max_pins=7\n'
put 'reset'
ktap_check "reset_goes_back_to_the_load_time_parameters" same_as "$tmp/params"
mrpin_unload
mrpin_load
ktap_check "plain_load_has_the_default_policy" same_as "$tmp/default"

ktap_check_kernel_log "kernel_log_has_no_new_problems"
rm -rf "$tmp"
if [ "$ktap_num" != "$PLAN" ]; then
	ktap_fail "the plan counts $PLAN checks, $ktap_num ran"
fi
ktap_finish
