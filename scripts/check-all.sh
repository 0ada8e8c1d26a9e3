#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-all` (what CI runs): the whole suite on every kernel mrpin
# supports, one after the other, then the packaging tests on the host, and a
# table of what each step passed, failed and skipped, and how long it took.
#
#   6.1           Debian 12's kernel, and mrpinctl's host tests
#   6.12, 7       Debian 12's 6.12 (Debian 13 and RHEL 10 run 6.12) and the
#                 newest 7.x
#   6.12-rt       6.12 with PREEMPT_RT
#   debug         the debug kernel (KASAN, lockdep, kmemleak, failslab)
#                 built from the 6.12 source
#   install-test  the packages and dkms on the host
#
# Every kernel runs every test with short loops (MRPIN_LOOPS=short: the
# loops that only repeat what they already checked run fewer times, and
# say so), so that the whole run fits CI's time; MRPIN_LOOPS=full
# check-all.sh runs them at full length on 6.1.
#
# Every step runs, whatever the one before did: the table shows them all.
# The last line is "N passed, N failed, N skipped" over all the steps; the
# exit status is 0 only when none failed.
#
#   check-all.sh [STEP...]     default: every step, in the order above
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo" || exit 1
mkdir -p build

all=(6.1 6.12 7 6.12-rt debug install-test)
[ $# -gt 0 ] || set -- "${all[@]}"

# The build products of mrpin.ko: each kernel builds its own.
clean_module() {
	rm -f kmod/*.o kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.cmd \
		kmod/modules.order kmod/Module.symvers modules.order Module.symvers \
		.*.cmd
	rm -rf .tmp_versions
}

# step NAME: run it; its "N passed, N failed, N skipped" line and seconds.
step() {
	local name=$1 log=build/check-all-$1.log start rc
	local -a how
	case "$name" in
	6.1) how=(make check KSERIES=6.1 MRPIN_LOOPS="${MRPIN_LOOPS:-short}") ;;
	6.12) how=(make check KSERIES=6.12 MRPIN_LOOPS=short) ;;
	7) how=(make check KSERIES=7 MRPIN_LOOPS=short) ;;
	6.12-rt) how=(make check KSERIES=6.12 KFLAVOUR=rt MRPIN_LOOPS=short) ;;
	debug) how=(make check-debug MRPIN_LOOPS=short) ;;
	install-test) how=(make install-test) ;;
	*) echo "check-all: unknown step '$name' (one of: ${all[*]})" >&2; return 2 ;;
	esac
	echo "check-all: $name: ${how[*]}" >&2
	clean_module
	start=$(date +%s)
	env -u KVER -u KDIR -u KSERIES -u KFLAVOUR "${how[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	seconds=$(($(date +%s) - start))
	result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	if [ -z "$result" ]; then
		result="0 passed, 1 failed, 0 skipped"
	elif [ "$rc" != 0 ] && [[ "$result" == *" 0 failed"* ]]; then
		# Failed without a failing test (a build or setup step).
		result=${result/ 0 failed/ 1 failed}
	fi
	[[ "$result" == *skipped* ]] || result+=", 0 skipped"
	echo "check-all: $name: $result in ${seconds}s" >&2
	rows+=("$name $result $seconds")
}

rows=()
start_all=$(date +%s)
for s in "$@"; do
	step "$s"
done
clean_module

total_p=0 total_f=0 total_s=0
echo
printf '%-14s %8s %8s %8s %9s\n' kernel passed failed skipped seconds
for r in "${rows[@]}"; do
	read -r name p _ f _ s _ secs <<<"${r//,/}"
	printf '%-14s %8s %8s %8s %9s\n' "$name" "$p" "$f" "$s" "$secs"
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
done
printf '%-14s %8s %8s %8s %9s\n' all "$total_p" "$total_f" "$total_s" \
	"$(($(date +%s) - start_all))"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
