#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A cgroup's peak pinned bytes, as a job's epilog reads it: a cgroup rule
# keeps the cgroup's row in `cgroups` (peak_pinned_bytes the most its
# subtree held at once, not the sum of every pin) after its last pin, through
# rounds of reaping, and after the cgroup is removed ("-"); `mrpinctl cgroup
# show` gives the same row, by path and by id; the rule, deleted by path
# once its cgroup is gone, lets the row go.  Real registrations
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
ktap_plan 17

tmp=$(mktemp -d)
kernel_log_mark
CG=/mrpin_peak
SUB=$CG/sub
CHURN=/mrpin_peak_churn

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
	rmdir "$CGROOT$CHURN" "$CGROOT$SUB" "$CGROOT$CG" 2>/dev/null
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

rmdir "$CGROOT$CHURN" "$CGROOT$SUB" "$CGROOT$CG" 2>/dev/null
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

ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
