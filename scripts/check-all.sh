#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-all` (what CI runs): the whole suite on every kernel mrpin
# supports, then the packaging tests on the host, and a table of what each
# step passed, failed and skipped, and how long it took.
#
#   6.1           Debian 12's kernel, and mrpinctl's host tests
#   6.12, 7       Debian 12's 6.12 (Debian 13 and RHEL 10 run 6.12) and the
#                 newest 7.x
#   6.12-rt       6.12 with PREEMPT_RT
#   ofed          6.1 with NVIDIA OFED's RDMA stack (scripts/ofed.sh) in place
#                 of the inbox one: the kernel-dependent tests
#   debug         the debug kernel (KASAN, lockdep, kmemleak, failslab)
#                 built from the 6.12 source
#   install-test  the packages and dkms on the host
#
# Every kernel runs its tests with short loops (MRPIN_LOOPS=short: the
# loops that only repeat what they already checked run fewer times, and
# say so), so that the whole run fits CI's time; MRPIN_LOOPS=full
# check-all.sh runs them at full length on 6.1.  6.1, the reference
# kernel, runs every test; 6.12 and 7.x the tests whose result depends on
# the kernel (MRPIN_CHECK_SCOPE=series); 6.12-rt and the debug kernel, two
# builds of 6.12, those whose result also depends on how the kernel is
# built: the module's code paths under RT's locks and the debug kernel's
# checkers (MRPIN_CHECK_SCOPE=kernel).  Each step's output names the tests
# it leaves out and why: what reads the module's files the same way on
# every kernel (mrpinctl's commands, doctor, the Prometheus and Slurm
# tests, the install) runs once.  selftests/scope says which test is which.
#
# How it runs:
#   1. prepare: every step's packages, kernels and build roots, one after
#      the other (they share the cache and apt); the debug kernel is built
#      (once, then cached) by its own step, beside the others;
#   2. the kernels' suites, all at once, each in a copy of the tree of its
#      own under build/check-all/STEP (a module is built for one kernel at
#      a time), each dealing its tests to MRPIN_VMS VMs (default: one per
#      CPU), and every VM of every kernel waiting for one of MRPIN_VMS slots
#      (scripts/vm-slots.sh): the VM with the most work first, whichever
#      kernel's it is.  A test VM's vCPUs run on one host thread
#      (single-threaded TCG), so a VM per CPU keeps every CPU busy until
#      the last VM, and never more VMs than CPUs: on the 2-core machine a
#      third VM beside two made every step two to four times slower, not
#      one and a half (the debug suite 1194 s alone in two VMs, about
#      2150 s with a third VM of another step beside them and fewer tests).
#      One kernel at a time, each with its two VMs, left a CPU idle while
#      the longer VM of each kernel finished, and during each kernel's
#      build.  Each step's output is printed whole when it ends;
#   3. install-test (in a copy too), once the reference kernel's step has
#      ended, beside the other kernels' last VMs: it installs and purges
#      .debs on this machine, whose root the VMs read, and only the
#      reference kernel runs the tests that read what it installs.
#
# Each step's output ends with its skips, each with its reason; a test that
# skips where selftests/skips does not allow it (a kernel where it is meant
# to run) counts as one more failure of the step (scripts/skips.sh).
#
# Every step runs, whatever the one before did: the table shows them all.
# The last line is "N passed, N failed, N skipped" over all the steps; the
# exit status is 0 only when none failed.
#
#   check-all.sh [STEP...]     default: every step
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo" || exit 1
work=$repo/build/check-all
vms=${MRPIN_VMS:-$(nproc)}
case "$vms" in
'' | *[!0-9]* | 0) echo "check-all: MRPIN_VMS must be a positive number, not '$vms'" >&2; exit 2 ;;
esac

all=(6.1 6.12 7 6.12-rt debug ofed install-test)
# The kernels' steps, in the order they start.
kernels=(debug 6.12-rt 7 6.1 ofed 6.12)
[ $# -gt 0 ] || set -- "${all[@]}"
for s in "$@"; do
	[[ " ${all[*]} " == *" $s "* ]] ||
		{ echo "check-all: unknown step '$s' (one of: ${all[*]})" >&2; exit 2; }
done

# step_env STEP: the series and flavour a step tests.
step_env() {
	case "$1" in
	6.1) echo "KSERIES=6.1 KFLAVOUR=" ;;
	6.12) echo "KSERIES=6.12 KFLAVOUR=" ;;
	7) echo "KSERIES=7 KFLAVOUR=" ;;
	6.12-rt) echo "KSERIES=6.12 KFLAVOUR=rt" ;;
	debug) echo "KSERIES=6.12 KFLAVOUR=debug" ;;
	ofed) echo "KSERIES=6.1 KFLAVOUR=ofed" ;;
	install-test) echo "KSERIES=6.1 KFLAVOUR=" ;;
	esac
}

# step_cmd STEP: what the step runs, in its tree.
step_cmd() {
	case "$1" in
	6.1) echo make check MRPIN_LOOPS="${MRPIN_LOOPS:-short}" ;;
	6.12 | 7) echo make check MRPIN_LOOPS=short MRPIN_CHECK_SCOPE=series ;;
	6.12-rt | ofed) echo make check MRPIN_LOOPS=short MRPIN_CHECK_SCOPE=kernel ;;
	debug) echo make check-debug MRPIN_LOOPS=short MRPIN_CHECK_SCOPE=kernel ;;
	install-test) echo make -j"$vms" install-test ;;
	esac
}

# copy_tree DIR: the sources of this tree (what git tracks, and new files it
# does not ignore; without git, all but build/) in DIR, nothing built.
copy_tree() {
	local dir=$1

	rm -rf "$dir"
	mkdir -p "$dir"
	if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$repo" ls-files -z -c -o --exclude-standard |
			tar -C "$repo" --null --ignore-failed-read -T - -cf - 2>/dev/null |
			tar -C "$dir" -xf -
	else
		tar -C "$repo" --exclude=./build -cf - . | tar -C "$dir" -xf -
	fi
}

# failed_of "N passed, N failed, ...": the number failed.
failed_of() {
	local f=${1#* passed, }

	echo "${f%% failed*}"
}

# run_step STEP DIR: the step's command in DIR, its output in DIR.log and
# its result ("STEP N passed, N failed, N skipped SECONDS") in DIR.result.
run_step() {
	local name=$1 dir=$2 log=$2.log start rc result seconds f

	start=$(date +%s)
	# The copy is no git work tree: git must not find this one's above it.
	# shellcheck disable=SC2046
	(cd "$dir" && env -u KVER -u KDIR GIT_CEILING_DIRECTORIES="$work" \
		MRPIN_VM_JOBS="$vms" MRPIN_VM_SLOTS="$work/slots" \
		$(step_env "$name") $(step_cmd "$name")) >"$log" 2>&1
	rc=$?
	seconds=$(($(date +%s) - start))
	result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	if [ -z "$result" ]; then
		result="0 passed, 1 failed, 0 skipped"
	elif [ "$rc" != 0 ] && [[ "$result" == *" 0 failed"* ]]; then
		# Failed without a failing test (a build or setup step).
		result=${result/ 0 failed/ 1 failed}
	fi
	[[ "$result" == *skipped* ]] || result+=", 0 skipped"
	# Every skip, with its reason; one where the test is meant to run
	# (selftests/skips) is one more failure.
	echo "check-all: $name: the skips" >>"$log"
	if ! "$here/skips.sh" "$name" "$log" >"$dir.skips" 2>&1; then
		f=$(failed_of "$result")
		result=${result/ $f failed/ $((f + 1)) failed}
	fi
	cat "$dir.skips" >>"$log"
	echo "$name $result $seconds" >"$dir.result"
}

# step_result STEP: its result row, or a failure if it left none.
step_result() {
	local row="$1 0 passed, 1 failed, 0 skipped 0"

	[ -f "$work/$1.result" ] && read -r row <"$work/$1.result"
	echo "$row"
}

# print_step STEP: its whole output, then its result line.
print_step() {
	local name=$1 row

	echo "check-all: ===== $name: $(step_cmd "$name") ($(step_env "$name"))"
	cat "$work/$name.log"
	row=$(step_result "$name")
	row=${row#"$name "}
	echo "check-all: $name: ${row% *} in ${row##* }s"
}

start_all=$(date +%s)
mkdir -p "$work"
for s in "$@"; do
	rm -f "$work/$s.result"
done

# 1. Prepare, one step after the other.
prep_start=$(date +%s)
prep_failed=0
for s in "$@"; do
	case "$s" in
	install-test) what="pkg promtool" ;;
	debug) what=source ;;
	6.1) what="build vm promtool prometheus node-exporter slurm" ;;	# and mrpinctl's host tests
	*) what="build vm" ;;
	esac
	for w in $what; do
		echo "check-all: prepare $s: setup.sh $w" >&2
		# shellcheck disable=SC2046
		env -u KVER -u KDIR $(step_env "$s") "$here/setup.sh" "$w" >/dev/null ||
			{ echo "check-all: prepare $s: setup.sh $w failed" >&2; prep_failed=1; }
	done
done
rows=("prepare 0 passed, $prep_failed failed, 0 skipped $(($(date +%s) - prep_start))")

# 2. The kernels' suites, all at once, their VMs $vms at a time.
. "$here/vm-slots.sh"
vm_slots_make "$work/slots" "$vms"
declare -A pid_step=()
running=0
for k in "${kernels[@]}"; do
	[[ " $* " == *" $k "* ]] || continue
	copy_tree "$work/$k"
	echo "check-all: $k: started ($(step_cmd "$k"))" >&2
	run_step "$k" "$work/$k" &
	pid_step[$!]=$k
	running=$((running + 1))
done
# 3. The packaging tests, in a copy too, once no test that reads what they
# install runs: they install mrpin's .debs into this machine, whose root
# every VM reads (mrpinctl in /usr/sbin, the policy in /etc that `mrpinctl
# apply` reads by default, the Slurm hook), and only the reference kernel's
# step runs the tests that look there (selftests/scope: once).  The other
# kernels' VMs use the tree's mrpinctl and module, and their guests'
# /lib/modules is the test kernel's own, not this machine's.
start_install_test() {
	copy_tree "$work/install-test"
	echo "check-all: install-test: started ($(step_cmd install-test))" >&2
	run_step install-test "$work/install-test" &
	pid_step[$!]=install-test
	running=$((running + 1))
}
if [[ " $* " == *" install-test "* ]] && [[ " $* " != *" 6.1 "* ]]; then
	start_install_test
fi
while [ "$running" -gt 0 ]; do
	wait -n -p done_pid
	print_step "${pid_step[$done_pid]}"
	running=$((running - 1))
	if [ "${pid_step[$done_pid]}" = 6.1 ] && [[ " $* " == *" install-test "* ]]; then
		start_install_test
	fi
done

for s in "$@"; do
	rows+=("$(step_result "$s")")
done

# times_table STEP...: each test program's seconds in each step (its "#
# NAME: Ns" line; install-test's points are its step's), the costliest
# first, "-" where a step did not run it: a test
# that grew slower shows in the run that made it so.
times_table() {
	local s logs=() steps=()

	for s in "$@"; do
		grep -qE '^# mrpin[[:alnum:]_.-]*: [0-9]+s(, [0-9]+ processes)?$' "$work/$s.log" 2>/dev/null || continue
		logs+=("$work/$s.log")
		steps+=("$s")
	done
	[ ${#logs[@]} -gt 0 ] || return 0
	echo
	awk -v steps="${steps[*]}" '
		BEGIN { n = split(steps, st, " ") }
		FNR == 1 { k++ }
		/^# mrpin[[:alnum:]_.-]*: [0-9]+s(, [0-9]+ processes)?$/ {
			t = substr($2, 1, length($2) - 1)
			sec = $3 + 0
			if (!(t in total)) names[++m] = t
			time[t, k] += sec
			total[t] += sec
			ran[t, k] = 1
		}
		END {
			for (i = 1; i <= m; i++) {
				t = names[i]
				line = total[t] " " t
				for (j = 1; j <= n; j++)
					line = line " " ((t, j) in ran ? time[t, j] : "-")
				print line
			}
		}' "${logs[@]}" | sort -k1,1nr -k2,2 | {
		printf '%-28s' "test (seconds)"
		printf ' %8s' "${steps[@]}"
		printf '\n'
		# shellcheck disable=SC2086
		while read -r _ name cells; do
			printf '%-28s' "$name"
			printf ' %8s' $cells
			printf '\n'
		done
	}
}

# failures STEP...: for each step that failed, the lines of its output that
# say what (a failed test point, a VM run that failed and why, a skip not
# allowed, a build error), at the end of the run, where they are read first.
failures() {
	local s row f

	for s in "$@"; do
		row=$(step_result "$s")
		f=$(failed_of "$row")
		[ "$f" != 0 ] || continue
		echo
		echo "check-all: $s failed ($f): where its output says so"
		grep -E -e '^(# )*not ok [0-9]+ ' -e '^vm-run: FAIL' -e '^    [0-9]+:' \
			-e '^check: (lane [0-9]+: the VM|the VM of|only [0-9]+ of|a VM run failed)' \
			-e '^  not allowed on ' -e ': error: ' -e '^make(\[[0-9]+\])?: \*\*\*' \
			"$work/$s.log" 2>/dev/null |
			head -n 40
	done
}

total_p=0 total_f=0 total_s=0
echo
printf '%-14s %8s %8s %8s %9s\n' step passed failed skipped seconds
for r in "${rows[@]}"; do
	read -r name p _ f _ s _ secs <<<"${r//,/}"
	printf '%-14s %8s %8s %8s %9s\n' "$name" "$p" "$f" "$s" "$secs"
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
done
printf '%-14s %8s %8s %8s %9s\n' all "$total_p" "$total_f" "$total_s" \
	"$(($(date +%s) - start_all))"
times_table "$@"
failures "$@"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
