#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where a test kernel spends a command's instructions (`make profile`):
# boot the test kernel (KSERIES, KFLAVOUR as for make check) with QEMU's
# counting plugin (selftests/qemu_insns.c), run COMMAND RUNS times on the
# guest's CPU 0 (`mrpin_bench exec`), and print the instructions per run,
# the kernel's by family (the debug kernel's checkers: lockdep, KASAN,
# stack traces, RCU's lockdep checks, kmemleak, debug objects; the rest)
# and its costliest functions (selftests/insns_profile.py).  Counts, not
# times, though the timer ticks and RCU work that land on CPU 0 follow
# the host's pace: compare runs made on an equally loaded machine.  A cost seen in a lane's times (a test
# that starts many processes, loads the module often) is read here as
# the kernel's work per process or per load.
#
#   vm-profile.sh [--runs N] [--top N] [--mrpin] [--] COMMAND...
#	--runs N   COMMAND's runs in the window (default 20), after one to
#	           warm up
#	--top N    functions listed (default 30)
#	--mrpin    with mrpin loaded (default: not loaded, what the kernel
#	           itself costs)
#
#   KFLAVOUR=debug scripts/vm-profile.sh /bin/true
#   KFLAVOUR=debug scripts/vm-profile.sh --runs 2 sh -c \
#	'insmod kmod/mrpin.ko && rmmod mrpin'
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
runs=20 top=30 load=(--no-mrpin)
while [ $# -gt 0 ]; do
	case "$1" in
	--runs | --top)
		[[ "${2:-}" =~ ^[1-9][0-9]*$ ]] ||
			{ echo "vm-profile: $1 takes a positive number, not '${2:-}'" >&2; exit 2; }
		if [ "$1" = --runs ]; then runs=$2; else top=$2; fi
		shift
		;;
	--mrpin) load=() ;;
	--) shift; break ;;
	-*) echo "vm-profile: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || { sed -n '/^#   vm-profile.sh/,/^#$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
plugin=$repo/build/qemu_insns.so
for f in "$plugin" "$repo/selftests/mrpin_bench"; do
	[ -e "$f" ] || { echo "vm-profile: $f is not built (make profile builds it)" >&2; exit 1; }
done
# The guest's side: the window, then the report once the plugin has
# written the window's end (it writes as the guest runs on).
# shellcheck disable=SC2016
guest='set -e
insns=/run/mrpin-host/insns
selftests/mrpin_bench exec "$0" 1 "$@"
for i in $(seq 60); do
	grep -q "^end 1 " "$insns" 2>/dev/null && break
	sleep 1
done
python3 selftests/insns_profile.py "$insns" /proc/kallsyms 1 "$0" "$TOP"'
exec "$here/vm-run.sh" "${load[@]}" --insns "$plugin" -- \
	env TOP="$top" bash -c "$guest" "$runs" "$@"
