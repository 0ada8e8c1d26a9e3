#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run mrpin's selftests with kselftest's own runner (KTAP on stdout, the
# timeout from `settings`), as `make run_tests` does in the kernel tree.
# Runs as root in the test VM, or on a host with rxe0 and mrpin loaded.
#
#   run_kselftest.sh [TEST...]     default: every test in the Makefile
here=$(cd "$(dirname "$0")" && pwd)
export BASE_DIR=$here/ksft
[ -f "$BASE_DIR/kselftest/runner.sh" ] || {
	echo "run_kselftest.sh: $BASE_DIR/kselftest/runner.sh missing: run make" >&2
	exit 1
}
# The collection directory, reached through ksft/mrpin -> .. so that the
# runner names the tests "selftests: mrpin: NAME" and finds `settings`.
cd "$BASE_DIR/mrpin" || exit 1
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(make -s --no-print-directory \
		KSFT_DIR="$(readlink -f "$BASE_DIR/kselftest/..")" emit_tests |
		sed -n 's/^[^:]*://p')
fi
tests=()
for t in "$@"; do
	tests+=("$BASE_DIR/mrpin/$t")
done
# shellcheck source=/dev/null
. "$BASE_DIR/kselftest/runner.sh"
# run_many's loop, with the time each program took, and the processes the
# system started meanwhile (on the debug kernel each costs about a tenth of
# a second), as a diagnostic line.
forks() { awk '$1 == "processes" { print $2 }' /proc/stat; }
echo "TAP version 13"
echo "1..${#tests[@]}"
DIR=${PWD#"$BASE_DIR"/}
test_num=0
for TEST in "${tests[@]}"; do
	test_num=$((test_num + 1))
	started=$SECONDS
	forks0=$(forks)
	run_one "$DIR" "$TEST" "$test_num"
	echo "# $(basename "$TEST"): $((SECONDS - started))s, $(($(forks) - forks0)) processes"
done
