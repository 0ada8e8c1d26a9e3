#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The skips of one `make check-all` step, against where each test may skip
# (selftests/skips): print every skip with its reason, and fail when a
# test skips on a kernel where it is meant to run.
#
#   skips.sh STEP LOG
#
# LOG is what the step printed (scripts/check.sh's output: each test
# program's KTAP nested under its "selftests: mrpin: NAME" lines, then
# mrpinctl's host test points; or install-test's points).  A skip is named
#   PROGRAM              a whole test program (its "# SKIP" result line,
#                        with the reason of its "1..0 # SKIP" plan)
#   PROGRAM:POINT        a test point inside one (a kselftest harness test
#                        is named by its "RUN" line)
#   host:POINT           one of mrpinctl's host test points
#   install-test:POINT   one of make install-test's points
# Prints "skip NAME: REASON" for each, and "  not allowed on STEP" below
# the ones selftests/skips does not allow there.  Exit status 0 when every
# skip is allowed, 1 when one is not, 2 on bad use or a bad table.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
table=$here/../selftests/skips

[ $# = 2 ] || { echo "usage: skips.sh STEP LOG" >&2; exit 2; }
step=$1 log=$2
[ -r "$log" ] || { echo "skips.sh: cannot read $log" >&2; exit 2; }

# The table: patterns and their steps, in the file's order (each line's
# WHY is for its reader).
pats=() steps=()
n=0
while IFS= read -r line; do
	n=$((n + 1))
	case "$line" in '' | '#'*) continue ;; esac
	read -r pat st why <<<"$line"
	if [ -z "$why" ]; then
		echo "skips.sh: $table:$n: expected NAME STEPS WHY" >&2
		exit 2
	fi
	pats+=("$pat") steps+=("$st")
done <"$table"

# skips_of: "NAME<TAB>REASON" for each skip in the log, in order.
skips_of() {
	awk -v step="$step" '
	function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
	/^# selftests: mrpin: / { prog = $4; run = ""; plan = ""; next }
	/^# # +RUN +/ { run = $4; next }
	/^# 1\.\.0 # SKIP/ { plan = $0; sub(/^# 1\.\.0 # SKIP */, "", plan); next }
	/^# ok [0-9]+ .*# SKIP/ {
		s = $0
		sub(/^# ok [0-9]+ */, "", s)
		reason = s; sub(/^.*# SKIP */, "", reason)
		name = s; sub(/ *# SKIP.*$/, "", name); name = trim(name)
		if (name == "") name = run
		print prog ":" name "\t" reason
		next
	}
	/^ok [0-9]+ selftests: mrpin: [^ ]+ # SKIP/ {
		reason = $0; sub(/^.*# SKIP */, "", reason)
		# The plan is its program'"'"'s when the program ran (a check.sh
		# line for a program it did not run has no header).
		if (plan != "" && prog == $5) reason = plan
		print $5 "\t" reason
		plan = ""
		next
	}
	/^(not )?ok [0-9]+ selftests: mrpin: / { plan = ""; next }
	/^ok [0-9]+ .*# SKIP/ {
		s = $0
		sub(/^ok [0-9]+ */, "", s)
		reason = s; sub(/^.*# SKIP */, "", reason)
		name = s; sub(/ *# SKIP.*$/, "", name)
		print (step == "install-test" ? "install-test" : "host") ":" trim(name) "\t" reason
	}' "$log"
}

# allowed NAME: a line of the table lets NAME skip on $step.
allowed() {
	local i

	for i in "${!pats[@]}"; do
		# shellcheck disable=SC2053 # the pattern is a glob
		[[ "$1" == ${pats[i]} ]] || continue
		[[ ",${steps[i]}," == *",$step,"* || "${steps[i]}" == '*' ]] && return 0
	done
	return 1
}

bad=0 total=0
while IFS=$'\t' read -r name reason; do
	total=$((total + 1))
	echo "skip $name: $reason"
	if ! allowed "$name"; then
		echo "  not allowed on $step (selftests/skips): it is meant to run here"
		bad=$((bad + 1))
	fi
done < <(skips_of)
echo "$step: $total skips, $bad not allowed"
[ "$bad" = 0 ]
