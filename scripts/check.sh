#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: mrpinctl's host tests, then every selftest in the test VM;
# print the KTAP streams and a last line "N passed, N failed, N skipped"
# (host test points and VM test programs together).  Exits 0 only when no test
# failed and the VM run was clean (no kernel warning, taint, crash or hang:
# a dirty run counts as one more failure).
#
#   check.sh [TEST...]       default: every test (TEST: VM tests only)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mkdir -p "$repo/build"
ktap=$repo/build/check.ktap

start=$(date +%s)
host_passed=0 host_failed=0
if [ $# -eq 0 ]; then
	# mrpinctl's own tests, on the host: parsers, printers, bad input.
	hostlog=$repo/build/check-host.log
	make -s --no-print-directory -C "$repo/userspace" check 2>&1 | tee "$hostlog"
	summary=$(sed -n 's/^# mrpinctl host tests: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$hostlog")
	if [ -n "$summary" ]; then
		read -r host_passed host_failed <<<"$summary"
	else
		echo "check: the mrpinctl host tests did not report a result" >&2
		host_failed=1
	fi
fi
"$here/vm-run.sh" -- selftests/run_kselftest.sh "$@" | tee "$ktap"
vm_status=${PIPESTATUS[0]}

passed=$(grep -Ec '^ok [0-9]+ ' "$ktap")
skipped=$(grep -Ec '^ok [0-9]+ .*# SKIP' "$ktap")
failed=$(grep -Ec '^not ok [0-9]+ ' "$ktap")
passed=$((passed - skipped))
planned=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$ktap" | head -n1)
ran=$((passed + skipped + failed))

if [ -n "$planned" ] && [ "$ran" -lt "$planned" ]; then
	echo "check: only $ran of $planned tests reported a result" >&2
	failed=$((failed + planned - ran))
fi
if [ "$vm_status" != 0 ] && [ "$failed" = 0 ]; then
	echo "check: the VM run failed (status $vm_status): counted as a failure" >&2
	failed=$((failed + 1))
fi
passed=$((passed + host_passed))
failed=$((failed + host_failed))
echo "check: $(($(date +%s) - start))s; KTAP in $ktap, console in build/vm/console.log" >&2
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
