#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The policy on a locked-down kernel, as on a Secure Boot host: with mrpin
# loaded, the test raises lockdown through /sys/kernel/security/lockdown
# (integrity, then confidentiality: it never goes down again in this
# boot, so check.sh runs this test last in its VM), and every rule is
# still set, shown, reset and enforced through mrpinctl, which uses
# /sys/kernel/security/mrpin/limits; refusals still reach `mrpinctl
# events`; debugfs' `limits` is refused (which proves the door mrpinctl
# used) while the read-only views stay readable; and where mrpinctl can
# only reach debugfs' door (securityfs' hidden in a mount namespace), it
# says the kernel is locked down, and `status` still prints what it can.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
CTL=$MRPIN_CTL
PINNER=$MRPIN_PINNER
require_built "$CTL" "$PINNER"
[ -r "$MRPIN_LOCKDOWN" ] || ktap_skip_all "the kernel has no lockdown LSM ($MRPIN_LOCKDOWN)"
grep -q '\[none\]' "$MRPIN_LOCKDOWN" ||
	ktap_skip_all "the kernel is locked down already ($(cat "$MRPIN_LOCKDOWN")): this test loads mrpin first"
ktap_plan 25

tmp=$(mktemp -d)
export COLUMNS=200 TZ=UTC
mrpin_unload
mrpin_load
kernel_log_mark

# 1. The two doors, before lockdown: one policy.
ktap_check "securityfs_node_is_root_only" \
	test "$(stat -c '%a %U' "$MRPIN_LIMITS")" = "600 root"
ktap_check "both_doors_show_the_same_policy" cmp -s "$MRPIN_LIMITS" "$MRPIN_DIR/limits"
echo "process max_pins=1000" >"$MRPIN_LIMITS"
ktap_check "a_write_through_securityfs_shows_in_debugfs" \
	grep -q '^process .*max_pins=1000 ' "$MRPIN_DIR/limits"
echo reset >"$MRPIN_DIR/limits"
default=$(cat "$MRPIN_LIMITS")

# policy_checks LEVEL: the policy through mrpinctl, locked down at LEVEL.
policy_checks() {
	local level=$1 n0

	ktap_check "${level}_debugfs_limits_refused" \
		bash -c "! cat '$MRPIN_DIR/limits' >/dev/null 2>&1"
	ktap_check "${level}_views_still_readable" \
		bash -c "grep -q '^# ' '$MRPIN_DIR/procs' && grep -q '^pinned_bytes ' '$MRPIN_DIR/stats'"
	"$CTL" limit set process max_pinned=64K &&
		"$CTL" limit set uid 65534 max_pins=5 action=warn
	ktap_check "${level}_limit_set_applies" \
		bash -c "grep -q '^process max_pinned=64K ' '$MRPIN_LIMITS' && grep -q '^uid 65534 max_pinned=unlimited max_pins=5 ' '$MRPIN_LIMITS'"
	ktap_check "${level}_limit_show_shows_the_rules" \
		bash -c "'$CTL' limit show | grep -q '^process *max_pinned=64K' && '$CTL' limit show | grep -q '^uid '"
	"$CTL" -j events >"$tmp/events0"
	n0=$(grep -o '"action"' "$tmp/events0" | wc -l)
	"$PINNER" 1M </dev/null >"$tmp/denied" 2>&1
	ktap_check "${level}_limit_enforced" grep -q 'Cannot allocate memory' "$tmp/denied"
	ktap_check "${level}_refusal_in_events" \
		bash -c "[ \"\$('$CTL' -j events | grep -o '\"action\"' | wc -l)\" -gt $n0 ] && '$CTL' events | tail -n1 | grep -Eq ' deny .*mrpin_pinner .*process +max_pinned'"
	"$CTL" status >"$tmp/status" 2>"$tmp/err"
	ktap_check "${level}_status_shows_totals_and_policy" \
		bash -c "[ ! -s '$tmp/err' ] && grep -q '^Pins:' '$tmp/status' && grep -q '^Global limit:' '$tmp/status'"
	"$CTL" limit reset
	ktap_check "${level}_limit_reset" test "$(cat "$MRPIN_LIMITS")" = "$default"
}

# 2. Integrity, then confidentiality.
echo integrity >"$MRPIN_LOCKDOWN"
ktap_check "lockdown_is_integrity" grep -q '\[integrity\]' "$MRPIN_LOCKDOWN"
policy_checks integrity
printf 'reset\nprocess max_pinned=1G\n' >"$tmp/policy.conf"
"$CTL" apply "$tmp/policy.conf"
ktap_check "integrity_apply_a_file" grep -q '^process max_pinned=1G ' "$MRPIN_LIMITS"
"$CTL" limit reset
echo confidentiality >"$MRPIN_LOCKDOWN"
ktap_check "lockdown_is_confidentiality" grep -q '\[confidentiality\]' "$MRPIN_LOCKDOWN"
policy_checks confidentiality

# 3. Only debugfs' door in sight: mrpinctl tells lockdown, and status
# prints the rest.  An empty directory over securityfs' mrpin directory
# hides the node and keeps the lockdown file readable.
mkdir -p "$tmp/empty"
hidden() {
	unshare -m bash -c "mount --bind '$tmp/empty' /sys/kernel/security/mrpin && $*"
}
hidden "'$CTL' limit set process max_pins=7" >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
ktap_check "no_node_says_the_kernel_is_locked_down" \
	bash -c "[ $rc = 1 ] && grep -q 'the kernel is locked down (confidentiality): debugfs refuses $MRPIN_DIR/limits' '$tmp/err' && [ \"\$(cat '$MRPIN_LIMITS')\" = \"\$(printf '%s' \"$default\")\" ]"
hidden "'$CTL' status" >"$tmp/status" 2>"$tmp/err"
rc=$?
ktap_check "no_node_status_prints_the_rest" \
	bash -c "[ $rc = 0 ] && grep -q '^Pins:' '$tmp/status' && grep -q 'locked down' '$tmp/err'"

ktap_check_kernel_log "kernel_log_has_no_new_problems"
rm -rf "$tmp"
ktap_finish
