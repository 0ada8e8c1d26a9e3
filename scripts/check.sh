#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: mrpinctl's host tests, then every selftest in the test VM;
# print the KTAP streams and a last line "N passed, N failed, N skipped"
# (host test points and VM test programs together).  Exits 0 only when no
# test failed and the VM runs were clean (no kernel warning, taint, crash
# or hang: a dirty run counts as one more failure).  The host tests do not
# touch the kernel: they run with the default (6.1) generic kernel's check
# only, not again with KFLAVOUR=rt or debug or another KSERIES.
#
# The tests in $single_tcg patch kernel text while other vCPUs run it: they
# get a VM of their own on single-threaded TCG (vm-run.sh --tcg single),
# where QEMU cannot run a stale translation of the patched code.
#
#   check.sh [TEST...]       default: every test (TEST: VM tests only)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mkdir -p "$repo/build"
ktap=$repo/build/check.ktap

start=$(date +%s)
host_passed=0 host_failed=0
if [ $# -eq 0 ] && [ -z "${KFLAVOUR:-}" ] && [ "${KSERIES:-6.1}" = 6.1 ]; then
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
single_tcg=(mrpin_reload_churn.sh)
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(make -s --no-print-directory -C "$repo/selftests" \
		KSFT_DIR="$(readlink -f "$repo/selftests/ksft/kselftest/..")" emit_tests |
		sed -n 's/^[^:]*://p')
	[ $# -gt 0 ] || { echo "check: no selftest is listed (run make)" >&2; exit 1; }
fi
multi=() single=()
for t in "$@"; do
	if [[ " ${single_tcg[*]} " == *" $t "* ]]; then
		single+=("$t")
	else
		multi+=("$t")
	fi
done

# run_vm TCG TEST...: the tests in one VM, their KTAP appended to $ktap.
: >"$ktap"
planned=0 vm_failed=0
run_vm() {
	local tcg=$1 log=${MRPIN_VM_LOG:-$repo/build/vm/console.log} out status plan

	shift
	[ $# -gt 0 ] || return 0
	[ "$tcg" = multi ] || log=${log%.log}-tcg-$tcg.log
	out=$(mktemp)
	MRPIN_VM_LOG=$log "$here/vm-run.sh" --tcg "$tcg" -- \
		selftests/run_kselftest.sh "$@" | tee "$out"
	status=${PIPESTATUS[0]}
	cat "$out" >>"$ktap"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$out" | head -n1)
	planned=$((planned + ${plan:-$#}))
	rm -f "$out"
	if [ "$status" != 0 ]; then
		echo "check: the VM run of $* failed (status $status; console in $log)" >&2
		vm_failed=$((vm_failed + 1))
	fi
}
run_vm multi "${multi[@]}"
run_vm single "${single[@]}"

passed=$(grep -Ec '^ok [0-9]+ ' "$ktap")
skipped=$(grep -Ec '^ok [0-9]+ .*# SKIP' "$ktap")
failed=$(grep -Ec '^not ok [0-9]+ ' "$ktap")
passed=$((passed - skipped))
ran=$((passed + skipped + failed))

if [ "$ran" -lt "$planned" ]; then
	echo "check: only $ran of $planned tests reported a result" >&2
	failed=$((failed + planned - ran))
fi
if [ "$vm_failed" != 0 ] && [ "$failed" = 0 ]; then
	echo "check: a VM run failed: counted as a failure" >&2
	failed=$((failed + 1))
fi
passed=$((passed + host_passed))
failed=$((failed + host_failed))
echo "check: $(($(date +%s) - start))s; KTAP in $ktap, console in build/vm/" >&2
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
