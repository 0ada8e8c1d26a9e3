#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A cgroup's peak pinned bytes, as a job's epilog reads it: a cgroup rule
# keeps the cgroup's row in `cgroups` (peak_pinned_bytes the most its
# subtree held at once, not the sum of every pin) after its last pin, through
# rounds of reaping, and after the cgroup is removed ("-"); `mrpinctl cgroup
# show` gives the same row, by path and by id; the rule, deleted by path
# once its cgroup is gone, lets the row go.  A rule binds its path: a cgroup
# removed and made again there (a restarted service) is bound as the first
# one was, and its record replaces the old one's row; a record that holds
# a pin keeps its row after its cgroup is removed and made again; a rule
# written from
# another cgroup namespace, whose paths are not from the root, is refused
# and changes nothing.  Real registrations
# (mrpin_pinner on rxe0) in a cgroup made here and in a child of it; every
# expectation comes from the sizes chosen here.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
CTL=$MRPIN_CTL
require_built "$CTL" "$MRPIN_PINNER"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
CGROOT=/sys/fs/cgroup
[ -e "$CGROOT/cgroup.procs" ] && [ -e "$CGROOT/cgroup.controllers" ] ||
	ktap_skip_all "no cgroup v2 hierarchy at $CGROOT"
ktap_plan 30

tmp=$(mktemp -d)
kernel_log_mark
CG=/mrpin_peak
SUB=$CG/sub
CHURN=/mrpin_peak_churn
AGAIN=/mrpin_peak_again
GONE=/mrpin_peak_gone
NS=/mrpin_peak_ns

# The sizes of the three registrations, whole pages: A and B are held
# together, then B and C (C < A): the peak is A + B, below A + B + C.
page=$(getconf PAGESIZE)
A=$((256 * page))
B=$((512 * page))
C=$((128 * page))
PEAK=$((A + B))

cleanup() {
	local name

	for name in "${!mrpin_pids[@]}"; do
		! kill -0 "${mrpin_pids[$name]}" 2>/dev/null ||
			mrpin_release "$name" 2>/dev/null
	done
	"$CTL" limit delete cgroup "$CG" >/dev/null 2>&1
	"$CTL" limit delete cgroup "$AGAIN" >/dev/null 2>&1
	rmdir "$CGROOT$CHURN" "$CGROOT$SUB" "$CGROOT$CG" "$CGROOT$AGAIN" \
		"$CGROOT$GONE" "$CGROOT$NS$NS" "$CGROOT$NS" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# hold_in NAME CGROUP BYTES: mrpin_pinner registering BYTES in CGROUP,
# holding the MR until mrpin_release NAME.
hold_in() {
	mrpin_hold "$1" bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3"' \
		_ "$CGROOT$2" "$MRPIN_PINNER" "$3"
}

# row CGROUP: its `cgroups` line's pins, pinned_bytes and
# peak_pinned_bytes (found by path, or by id when CGROUP is a number).
row() {
	awk -v want="$1" 'NR > 1 && ($2 == want || $1 == want) { print $3, $4, $5 }' \
		"$MRPIN_DIR/cgroups"
}

# row_is CGROUP "PINS BYTES PEAK": the row says so, or what it says.
row_is() {
	local got

	got=$(row "$1")
	[ "$got" = "$2" ] || { ktap_diag "$1: '$got', expected '$2'"; return 1; }
}

# unlisted CGROUP: no row.
unlisted() {
	[ -z "$(row "$1")" ] || { ktap_diag "$1: '$(row "$1")', expected no row"; return 1; }
}

# ctl_fails PATTERN ARGS...: `mrpinctl ARGS` exits 1 with nothing on
# stdout and PATTERN on stderr.
ctl_fails() {
	local pattern=$1 rc

	shift
	"$CTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && grep -q "$pattern" "$tmp/err" && return 0
	ktap_diag "mrpinctl $*: status $rc: $(head -c 300 "$tmp/err")"
	return 1
}

# churn N: N new cgroup records, each of a new cgroup where a registration
# comes and goes: each new record reaps a few parked ones.
churn() {
	local i

	for ((i = 0; i < $1; i++)); do
		mkdir "$CGROOT$CHURN" || return 1
		bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" </dev/null' \
			_ "$CGROOT$CHURN" "$MRPIN_PINNER" "$page" >/dev/null 2>&1 || return 1
		rmdir_retry "$CGROOT$CHURN" || return 1
	done
}

# rmdir_retry DIR: rmdir, again while its last task is still leaving it.
rmdir_retry() {
	local i

	for i in $(seq 50); do
		rmdir "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	rmdir "$1"
}

rmdir "$CGROOT$CHURN" "$CGROOT$SUB" "$CGROOT$CG" "$CGROOT$AGAIN" \
	"$CGROOT$GONE" "$CGROOT$NS$NS" "$CGROOT$NS" 2>/dev/null
mkdir -p "$CGROOT$SUB"
cg_id=$(stat -c %i "$CGROOT$CG")
"$CTL" limit set cgroup "$CG" max_pinned=1G >"$tmp/out" 2>&1
ktap_check "rule_set_on_the_cgroup" grep -q "^cgroup $CG " "$MRPIN_LIMITS"
ktap_check "head_names_the_peak_column" \
	test "$(head -n 1 "$MRPIN_DIR/cgroups")" = "# id cgroup pins pinned_bytes peak_pinned_bytes"

# A in the cgroup and B in its child, held together.
hold_in a "$CG" "$A" && hold_in b "$SUB" "$B"
ktap_check "both_pins_held_the_subtree_holds_a_plus_b" row_is "$CG" "2 $PEAK $PEAK"
ktap_check "the_child_holds_b" row_is "$SUB" "1 $B $B"
ktap_check "the_row_id_is_the_cgroup_directory_inode" \
	test "$(awk -v cg="$CG" '$2 == cg { print $1 }' "$MRPIN_DIR/cgroups")" = "$cg_id"

# A goes, C comes while B stays: B + C < A + B.
mrpin_release a
hold_in c "$CG" "$C"
ktap_check "peak_is_the_most_held_at_once_not_the_sum" \
	row_is "$CG" "2 $((B + C)) $PEAK"
mrpin_release b
mrpin_release c
ktap_check "no_pins_left_the_rule_keeps_the_row_and_its_peak" row_is "$CG" "0 0 $PEAK"
ktap_check "the_child_without_a_rule_is_not_listed" unlisted "$SUB"

"$CTL" -j cgroup show "$CG" >"$tmp/json" 2>"$tmp/err"
ktap_check "mrpinctl_cgroup_show_path_gives_the_row" json_holds "$tmp/json" \
	"d == [{'id': $cg_id, 'cgroup': '$CG', 'pins': 0, 'pinned_bytes': 0, 'peak_pinned_bytes': $PEAK}]"

# The cgroups go; reaping looks at every record at least once (each new
# record looks at a few: more than the records there are, from the slab).
rmdir_retry "$CGROOT$SUB" && rmdir_retry "$CGROOT$CG"
records=$(awk '$1 == "mrpin_cgroup" { print $2 }' /proc/slabinfo)
rounds=$(( ${records:-64} / 2 + 8 ))
[ "$rounds" -le 200 ] || rounds=200
ktap_diag "reaping: $rounds new cgroup records (${records:-no} in the slab)"
churn "$rounds" || ktap_diag "churn: a registration in $CHURN failed"
ktap_check "cgroup_removed_and_reaping_done_the_row_stays_as_dash" \
	row_is "$cg_id" "0 0 $PEAK"
ktap_check "the_removed_cgroup_reads_dash" \
	test "$(awk -v id="$cg_id" '$1 == id { print $2 }' "$MRPIN_DIR/cgroups")" = "-"

"$CTL" -j cgroup show "$cg_id" >"$tmp/json" 2>"$tmp/err"
ktap_check "mrpinctl_cgroup_show_id_gives_the_same_row" json_holds "$tmp/json" \
	"d == [{'id': $cg_id, 'cgroup': '-', 'pins': 0, 'pinned_bytes': 0, 'peak_pinned_bytes': $PEAK}]"
ktap_check "mrpinctl_cgroup_show_of_a_removed_path_fails_and_says_why" \
	ctl_fails "no cgroup $CG in .*name it by its id" cgroup show "$CG"

# The epilog deletes the rule by path, its cgroup gone: the row goes.
"$CTL" limit delete cgroup "$CG" >"$tmp/out" 2>&1
ktap_check "rule_of_a_removed_cgroup_deleted_by_path" \
	eval '! grep -q "^cgroup $CG " "$MRPIN_LIMITS" || { ktap_diag "$(cat "$tmp/out")"; false; }'
ktap_check "rule_deleted_the_row_is_not_listed" unlisted "$cg_id"
ktap_check "mrpinctl_cgroup_show_id_then_fails" \
	ctl_fails "no cgroup with id $cg_id" cgroup show "$cg_id"
churn 4 || ktap_diag "churn: a registration in $CHURN failed"

# pin_in CGROUP BYTES: one registration of BYTES made and released in
# CGROUP; its status.
pin_in() {
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" </dev/null' \
		_ "$CGROOT$1" "$MRPIN_PINNER" "$2" >"$tmp/pin.out" 2>&1
}

# rules_for PATH: how many `limits` lines are cgroup rules of PATH.
rules_for() {
	awk -v cg="$1" '$1 == "cgroup" && $2 == cg' "$MRPIN_LIMITS" | wc -l
}

# A rule of two pages on a path; its cgroup removed and made again.
mkdir "$CGROOT$AGAIN"
"$CTL" limit set cgroup "$AGAIN" max_pinned=$((2 * page)) >"$tmp/out" 2>&1 ||
	ktap_diag "limit set: $(cat "$tmp/out")"
pin_in "$AGAIN" "$page" || ktap_diag "first cgroup: $(cat "$tmp/pin.out")"
old_id=$(stat -c %i "$CGROOT$AGAIN")
ktap_check "the_first_cgroup_at_the_path_has_its_row" row_is "$old_id" "0 0 $page"
rmdir_retry "$CGROOT$AGAIN" && mkdir "$CGROOT$AGAIN"
new_id=$(stat -c %i "$CGROOT$AGAIN")
ktap_check "a_cgroup_made_again_at_the_path_is_bound_by_its_rule" \
	eval '! pin_in "$AGAIN" $((4 * page)) || { ktap_diag "4 pages registered in the new $AGAIN"; false; }'
dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null >"$tmp/events"
ktap_check "the_refusal_names_the_rules_path" \
	eval 'awk -v cg="cgroup:$AGAIN" "\$3 == \"deny\" && \$7 == cg && \$8 == \"max_pinned\"" "$tmp/events" | grep -q . ||
		{ ktap_diag "events: $(tail -n 3 "$tmp/events")"; false; }'
ktap_check "within_the_rule_the_new_cgroup_registers" pin_in "$AGAIN" "$((2 * page))"
ktap_check "the_new_cgroups_row_reads_the_path" \
	test "$(awk -v id="$new_id" '$1 == id { print $2 }' "$MRPIN_DIR/cgroups")" = "$AGAIN"
ktap_check "the_old_cgroups_row_gives_way_to_the_new_one" unlisted "$old_id"
"$CTL" limit set cgroup "$AGAIN" max_pins=5 >"$tmp/out" 2>&1 ||
	ktap_diag "limit set: $(cat "$tmp/out")"
ktap_check "setting_the_path_again_keeps_one_rule" test "$(rules_for "$AGAIN")" = 1

# A record that holds a pin is listed whatever became of its cgroup: its
# process left it, it was removed, and a cgroup made again at its path has
# a record of its own.
mkdir "$CGROOT$GONE"
gone_id=$(stat -c %i "$CGROOT$GONE")
hold_in g "$GONE" "$page"
echo "${mrpin_pids[g]}" >"$CGROOT/cgroup.procs"
rmdir_retry "$CGROOT$GONE" && mkdir "$CGROOT$GONE"
pin_in "$GONE" "$page" || ktap_diag "the new $GONE: $(cat "$tmp/pin.out")"
ktap_check "a_removed_cgroup_still_holding_a_pin_keeps_its_row" \
	row_is "$gone_id" "1 $page $page"
ktap_check "its_row_reads_dash_beside_the_new_cgroups" \
	eval 'test "$(awk -v id="$gone_id" '"'"'$1 == id { print $2 }'"'"' "$MRPIN_DIR/cgroups")" = "-"'
mrpin_release g
ktap_check "its_last_pin_gone_without_a_rule_the_row_goes" unlisted "$gone_id"

# From a cgroup namespace rooted at $NS, "$NS" is $NS$NS from the root.
mkdir -p "$CGROOT$NS$NS"
cat "$MRPIN_LIMITS" >"$tmp/limits.before"
bash -c 'echo $$ >"$1/cgroup.procs" &&
	exec unshare -C dd of="$2" conv=notrunc status=none' \
	_ "$CGROOT$NS" "$MRPIN_LIMITS" <<<"cgroup $NS max_pins=1" 2>"$tmp/err"
ktap_check "a_rule_written_from_a_cgroup_namespace_is_refused" \
	eval 'grep -q "Invalid argument" "$tmp/err" || { ktap_diag "$(cat "$tmp/err")"; false; }'
ktap_check "the_refused_rule_changes_nothing" \
	eval 'cat "$MRPIN_LIMITS" | cmp -s - "$tmp/limits.before" ||
		{ ktap_diag "$(cat "$MRPIN_LIMITS" | diff "$tmp/limits.before" -)"; false; }'
kernel_log_read
ktap_check "the_kernel_log_says_why" \
	grep -q "cgroup rules are written from the initial cgroup namespace" <<<"$kernel_log"

ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
