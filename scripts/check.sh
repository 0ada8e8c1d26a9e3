#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: mrpinctl's host tests, the module's layers
# (scripts/layers.sh) and every selftest in the test VMs; print the KTAP
# streams and a last line "N passed, N failed, N skipped" (host test points
# and VM test programs together).  Exits 0 only when no
# test failed and the VM runs were clean (no kernel warning, taint, crash
# or hang: a dirty run counts as one more failure).  The host tests do not
# touch the kernel: they run with the default (6.1) generic kernel's check
# only, not again with KFLAVOUR=rt or debug or another KSERIES.
#
# The VM tests run in MRPIN_VM_JOBS VMs side by side (default: one per
# CPU, at most as many as the free memory holds): each VM runs the tests
# dealt to it, longest first, each to the VM with the least work so far.
# The first VM's output is printed as it comes, the others' when they end.
#
#   check.sh [TEST...]       default: every test (TEST: VM tests only)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mkdir -p "$repo/build"
ktap=$repo/build/check.ktap

start=$(date +%s)
host_passed=0 host_failed=0 hostlog=
if [ $# -eq 0 ] && [ -z "${KFLAVOUR:-}" ] && [ "${KSERIES:-6.1}" = 6.1 ]; then
	# mrpinctl's own tests, on the host (parsers, printers, bad input),
	# beside the VMs; their output comes after the VMs'.
	hostlog=$repo/build/check-host.log
	echo "check: mrpinctl's host tests run beside the VMs (build/check-host.log)" >&2
	make -s --no-print-directory -C "$repo/userspace" check >"$hostlog" 2>&1 &
fi
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(make -s --no-print-directory -C "$repo/selftests" \
		KSFT_DIR="$(readlink -f "$repo/selftests/ksft/kselftest/..")" emit_tests |
		sed -n 's/^[^:]*://p')
	[ $# -gt 0 ] || { echo "check: no selftest is listed (run make)" >&2; exit 1; }
fi

# Where each test runs: selftests/scope.  MRPIN_CHECK_SCOPE=series runs
# the tests whose result depends on the kernel (kernel and series tests),
# MRPIN_CHECK_SCOPE=kernel those that also depend on how the kernel is
# built (kernel tests: the module's code paths under PREEMPT_RT's locks and
# the debug kernel's checkers); each says which it left out and why.  make
# check-all asks for series on 6.12 and 7.x, for kernel on 6.12-rt and the
# debug kernel; the reference kernel runs them all (MRPIN_CHECK_SCOPE=all,
# the default).
scope_file=$repo/selftests/scope
declare -A where=()
while read -r t w _; do
	case "$t" in '' | '#'*) continue ;; esac
	case "$w" in
	kernel | series | once) where[$t]=$w ;;
	*) echo "check: $scope_file: $t: '$w' is none of kernel, series, once" >&2; exit 2 ;;
	esac
done <"$scope_file"
for t in "$@"; do
	[ -n "${where[$t]:-}" ] ||
		{ echo "check: $scope_file has no line for $t: say whether it is a kernel, series or once test" >&2; exit 2; }
done
case "${MRPIN_CHECK_SCOPE:-all}" in
all) left_out='' ;;
series) left_out=' once ' ;;
kernel) left_out=' once series ' ;;
*) echo "check: MRPIN_CHECK_SCOPE must be all, series or kernel, not '$MRPIN_CHECK_SCOPE'" >&2; exit 2 ;;
esac
kept=() left_once=() left_series=()
for t in "$@"; do
	case "$left_out" in
	*" ${where[$t]} "*)
		if [ "${where[$t]}" = once ]; then
			left_once+=("$t")
		else
			left_series+=("$t")
		fi
		;;
	*) kept+=("$t") ;;
	esac
done
set -- "${kept[@]}"
# The OFED lane: the signed load needs modules signed by a key the kernel
# trusts, and OFED's, built here, are signed by none (on a Secure Boot host
# NVIDIA's packages are signed with a key enrolled as a MOK): its VM could
# not load ib_core.  The debug kernel runs that test.
if [ "${KFLAVOUR:-}" = ofed ]; then
	kept=()
	for t in "$@"; do
		if [ "$t" = mrpin_secure_boot.sh ]; then
			echo "# check: not run with OFED's stack, whose modules the test bed cannot sign with a key the kernel trusts (the debug kernel runs it): $t"
		else
			kept+=("$t")
		fi
	done
	set -- "${kept[@]}"
fi
if [ ${#left_once[@]} -gt 0 ]; then
	echo "# check: MRPIN_CHECK_SCOPE=${MRPIN_CHECK_SCOPE}: not run on this kernel, as what they test reads the module's files the same way on every kernel and the reference kernel runs them (selftests/scope): ${left_once[*]}"
fi
if [ ${#left_series[@]} -gt 0 ]; then
	echo "# check: MRPIN_CHECK_SCOPE=${MRPIN_CHECK_SCOPE}: not run on this build of the kernel, as their result depends on the kernel's series, not on how it is built, and the series' generic kernel runs them (selftests/scope): ${left_series[*]}"
fi
[ $# -gt 0 ] || { echo "check: no test to run" >&2; exit 2; }

# mrpinctl_vm.sh lints the export with promtool, which its VM reads from
# this machine's cache (the VM's root is this machine's, read-only).
if [[ " $* " == *" mrpinctl_vm.sh "* ]] && [ -z "${PROMTOOL:-}" ]; then
	PROMTOOL=$("$here/setup.sh" promtool) || exit 1
	export PROMTOOL
fi
# mrpinctl_prometheus.sh runs a Prometheus server and node_exporter, from
# the cache the same way.
if [[ " $* " == *" mrpinctl_prometheus.sh "* ]]; then
	if [ -z "${PROMETHEUS:-}" ]; then
		PROMETHEUS=$("$here/setup.sh" prometheus) || exit 1
		export PROMETHEUS
	fi
	if [ -z "${NODE_EXPORTER:-}" ]; then
		NODE_EXPORTER=$("$here/setup.sh" node-exporter) || exit 1
		export NODE_EXPORTER
	fi
fi

# mrpin_slurm.sh runs Slurm's daemons and munge, installed on this machine
# (never started here).
if [[ " $* " == *" mrpin_slurm.sh "* ]]; then
	"$here/setup.sh" slurm || exit 1
fi

# What a test costs, in seconds with short loops, as check-all's table of
# times gives them (two VMs side by side, on the 2-core machine at
# 9be12a3): on 6.12's generic kernel (the once tests: on 6.1, beside the
# host tests), and on the debug kernel, where the shell tests' many small
# processes and the module loads cost most; a test not listed counts 5.
# Only the dealing uses them: a wrong one costs time, never a result.
declare -A cost
if [ "${KFLAVOUR:-}" = debug ]; then
	cost=([mrpin_security.sh]=647 [mrpin_cgroup_peak.sh]=625
		[mrpin_limits_fuzz]=579 [mrpin_failslab.sh]=457
		[mrpin_reload_churn.sh]=423 [mrpin_params_fuzz.sh]=392
		[mrpin_limits_policy.sh]=387 [mrpin_views_nomem.sh]=381
		[mrpin_owners.sh]=345 [mrpin_lifecycle.sh]=327
		[mrpin_reload.sh]=245 [mrpin_stuck.sh]=235 [mrpin_views.sh]=233
		[mrpin_load_loop.sh]=228 [mrpin_diag]=195 [mrpin_lockdown.sh]=170
		[mrpin_stress]=168 [mrpin_pressure]=155
		[mrpin_events_readers]=154 [mrpin_leaks]=150
		[mrpin_userns.sh]=148 [mrpin_limits]=131 [mrpin_load.sh]=128
		[mrpin_secure_boot.sh]=117 [mrpin_accounting]=114
		[mrpin_lifecycle]=110 [mrpin_mr_table.sh]=81 [mrpin_failures]=72
		[mrpin_distinct]=65 [mrpin_devices.sh]=57 [mrpin_counter.sh]=51
		[mrpin_events]=40 [mrpin_odp]=22)
else
	cost=([mrpin_slurm.sh]=352 [mrpin_mr_table.sh]=295
		[mrpin_install.sh]=109 [mrpin_reload_churn.sh]=93
		[mrpin_cgroup_peak.sh]=79 [mrpin_security.sh]=64
		[mrpin_pressure]=59 [mrpin_params_fuzz.sh]=58
		[mrpinctl_prometheus.sh]=53 [mrpin_load_loop.sh]=44
		[mrpinctl_vm.sh]=42 [mrpinctl_doctor.sh]=42 [mrpin_owners.sh]=32
		[mrpin_stress]=30 [mrpin_leaks]=28 [mrpinctl_growth.sh]=28
		[mrpin_stuck.sh]=26 [mrpin_limits]=21 [mrpin_limits_policy.sh]=19
		[mrpin_limits_fuzz]=19 [mrpin_lockdown.sh]=16
		[mrpin_lifecycle.sh]=15 [mrpin_diag]=13 [mrpin_reload.sh]=12
		[mrpin_views.sh]=11 [mrpin_userns.sh]=11 [mrpin_accounting]=10
		[mrpin_counter.sh]=8 [mrpin_load.sh]=7 [mrpin_secure_boot.sh]=6)
fi
# The OFED lane's own test (it skips at once on the others), as measured
# there beside another VM.
[ "${KFLAVOUR:-}" != ofed ] || cost[mrpin_openibd.sh]=58

# VMs: one per CPU, no more than the tests, nor than the memory holds
# (the guest's RAM, MRPIN_VM_MEM, plus 1 GiB for QEMU and the host each).
# mem_mib SIZE: SIZE (4G, 2048M) in MiB, or nothing.
mem_mib() {
	if [[ "$1" =~ ^([0-9]+)[gG]$ ]]; then
		echo $((BASH_REMATCH[1] * 1024))
	elif [[ "$1" =~ ^([0-9]+)[mM]$ ]]; then
		echo "${BASH_REMATCH[1]}"
	fi
}
mem_free_mib() {
	awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo
}
vm_mem=${MRPIN_VM_MEM:-4G}
vm_mib=$(mem_mib "$vm_mem")
if [ -z "$vm_mib" ]; then
	echo "check: MRPIN_VM_MEM must be a size in M or G (4G, 2048M), not '$vm_mem'" >&2
	exit 2
fi
free_mib=$(mem_free_mib)
jobs=${MRPIN_VM_JOBS:-$(nproc)}
case "$jobs" in
'' | *[!0-9]* | 0) echo "check: MRPIN_VM_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;;
esac
[ "$jobs" -le $((free_mib / (vm_mib + 1024))) ] || jobs=$((free_mib / (vm_mib + 1024)))
[ "$jobs" -le $# ] || jobs=$#
[ "$jobs" -ge 1 ] || jobs=1

# Tests that need a boot of their own: each runs in a VM of its own after
# the rest of the tests dealt to its lane (console
# build/vm/console[-N]-TEST.log).  boot_args: with more on the kernel
# command line and mrpin not loaded at boot.  alone: a test that leaves the
# kernel in a state no other test should start from (mrpin_mr_table.sh
# fills rxe's MR table, half a million MRs and gigabytes of the kernel's
# memory on 6.1, and frees them all at once).
# On the debug kernel mrpin_mr_table.sh skips at its start (its VM has too
# little memory for rxe's MRs), leaving nothing behind: it needs no boot of
# its own there, which costs that kernel about a minute.
declare -A boot_args=(
	[mrpin_secure_boot.sh]="lockdown=integrity module.sig_enforce=1")
alone=()
[ "${KFLAVOUR:-}" = debug ] || alone=(mrpin_mr_table.sh)
# boot_mem: the guest's RAM of a test's own boot, where it is not
# MRPIN_VM_MEM.  rxe's half a million MRs hold 2.5 GiB of the kernel's
# memory on 6.1: in 4 GiB the kernel reclaims all the way, and filling the
# table and releasing it took 236 s, in 8 GiB 109 s.  It is taken only
# while the machine has that much free, beside the lanes still running.
declare -A boot_mem=([mrpin_mr_table.sh]=8G)
# The tests of concurrent registrations (a limit never overshot by threads
# racing for it, totals left as found; the counter under every limit raced
# in the kernel): together, in a VM of their own whose two vCPUs are two
# host threads (multi-threaded TCG), where they interleave at the
# instruction, not at single-threaded TCG's coarse turns.  They are dealt
# as one, so that they cost one boot, not one per VM.
racing=(mrpin_limits mrpin_accounting mrpin_counter.sh)

# What a boot of its own adds to a test's cost (check-all's logs: from the
# VM's start to its first test, and its power-off).
boot_cost=15
[ "${KFLAVOUR:-}" != debug ] || boot_cost=70
for t in "${!boot_args[@]}" "${alone[@]}"; do
	cost[$t]=$((${cost[$t]:-5} + boot_cost))
done

# Deal the tests: longest first (the listed order among equals), each to
# the VM with the least work so far; the racing tests as one.
declare -a lane_tests lane_work
for ((i = 0; i < jobs; i++)); do
	lane_tests[i]='' lane_work[i]=0
done
races='' race_cost=$boot_cost
for t in "$@"; do
	[[ " ${racing[*]} " == *" $t "* ]] || continue
	races+=" $t"
	race_cost=$((race_cost + ${cost[$t]:-5}))
done
by_cost=$({
	for t in "$@"; do
		[[ " ${racing[*]} " == *" $t "* ]] || echo "${cost[$t]:-5} $t"
	done
	[ -z "$races" ] || echo "$race_cost racing"
} | sort -s -k1,1nr | cut -d' ' -f2)
for t in $by_cost; do
	min=0
	for ((i = 1; i < jobs; i++)); do
		[ "${lane_work[i]}" -lt "${lane_work[min]}" ] && min=$i
	done
	if [ "$t" = racing ]; then
		lane_tests[min]+=$races
		lane_work[min]=$((lane_work[min] + race_cost))
	else
		lane_tests[min]+=" $t"
		lane_work[min]=$((lane_work[min] + ${cost[$t]:-5}))
	fi
done

# A test that raises the kernel's lockdown leaves it raised for the rest of
# the boot: it runs last in its VM.
last=(mrpin_lockdown.sh)
for ((i = 0; i < jobs; i++)); do
	for t in "${last[@]}"; do
		[[ " ${lane_tests[i]} " == *" $t "* ]] || continue
		lane_tests[i]="${lane_tests[i]/ $t/} $t"
	done
done

# A lane's VM gives up after MRPIN_VM_TIMEOUT seconds, by default four
# times the work dealt to it and ten minutes more: a lane of every test in
# one VM (MRPIN_VM_JOBS=1), on a machine that other VMs share, takes far
# longer than vm-run.sh's 20 minutes for one command, and a test that
# hangs is stopped by its own timeout (selftests/settings) first.
lane_timeout() {
	local work=${lane_work[$1 - 1]}

	echo "${MRPIN_VM_TIMEOUT:-$((work * 4 + 600 > 1200 ? work * 4 + 600 : 1200))}"
}

# lane_vm N TEST... -- VM-RUN-ARGS...: one VM of lane N, running TESTs; its
# KTAP added to $lane_dir/N.ktap, the number of tests it had to report (its
# plan, or the TESTs it was given when it died before printing one) to
# N.planned, and its exit status, when not 0, to N.failed.  What vm-run.sh
# says goes to fd 3.
lane_vm() {
	local n=$1 tests=() plan rc

	shift
	while [ "$1" != -- ]; do
		tests+=("$1")
		shift
	done
	shift
	"$here/vm-run.sh" "$@" -- selftests/run_kselftest.sh "${tests[@]}" 2>&3 |
		tee -a "$lane_dir/$n.ktap" >"$lane_dir/$n.vm"
	rc=${PIPESTATUS[0]}
	plan=$(awk -F. '/^1\.\.[0-9]+$/ { n += $3; seen = 1 } END { if (seen) print n }' \
		"$lane_dir/$n.vm")
	echo "${plan:-${#tests[@]}}" >>"$lane_dir/$n.planned"
	if [ "$rc" != 0 ]; then
		echo "check: the VM of ${tests[*]} failed (status $rc; console in ${MRPIN_VM_LOG#"$repo/"})" >&3
		echo "$rc ${tests[*]}" >>"$lane_dir/$n.failed"
	fi
}

# run_lane N TEST...: lane N's tests, in one VM and the boots of their own
# that some need; their KTAP in $lane_dir/N.ktap, what vm-run.sh says in
# N.err (lane 1: on stderr), what each VM had to report in N.planned, the
# VMs that failed in N.failed.
lane_dir=$(mktemp -d)
trap 'rm -rf "$lane_dir"' EXIT
run_lane() {
	local n=$1 log=${MRPIN_VM_LOG:-$repo/build/vm/console.log} t
	local own=() shared=() races=() boot timeout work=0

	timeout=$(lane_timeout "$n")

	shift
	# fd 3: where vm-run.sh's own lines go (this runs in a subshell).
	if [ "$n" = 1 ]; then
		exec 3>&2
	else
		log=${log%.log}-$n.log
		exec 3>"$lane_dir/$n.err"
	fi
	for t in "$@"; do
		if [ -n "${boot_args[$t]:-}" ] || [[ " ${alone[*]} " == *" $t "* ]]; then
			own+=("$t")
		elif [[ " ${racing[*]} " == *" $t "* ]]; then
			races+=("$t")
		else
			shared+=("$t")
			work=$((work + ${cost[$t]:-5}))
		fi
	done
	: >"$lane_dir/$n.ktap"
	: >"$lane_dir/$n.planned"
	if [ ${#shared[@]} -gt 0 ]; then
		MRPIN_VM_LOG=$log MRPIN_VM_COST=$((work + boot_cost)) \
			lane_vm "$n" "${shared[@]}" -- --timeout "$timeout"
	fi
	if [ ${#races[@]} -gt 0 ]; then
		MRPIN_VM_LOG=${log%.log}-racing.log MRPIN_VM_COST=$race_cost \
			lane_vm "$n" "${races[@]}" -- --tcg multi --timeout "$timeout"
	fi
	for t in "${own[@]}"; do
		boot=()
		[ -z "${boot_args[$t]:-}" ] || boot=(--no-mrpin --append "${boot_args[$t]}")
		if [ -n "${boot_mem[$t]:-}" ]; then
			if [ "$(mem_free_mib)" -ge $(($(mem_mib "${boot_mem[$t]}") + 1024)) ]; then
				boot+=(--mem "${boot_mem[$t]}")
			else
				echo "check: $t boots with $vm_mem, not ${boot_mem[$t]}: the machine has $(mem_free_mib) MiB free" >&3
			fi
		fi
		MRPIN_VM_LOG=${log%.log}-${t%.sh}.log MRPIN_VM_COST=${cost[$t]:-5} \
			lane_vm "$n" "$t" -- "${boot[@]}"
	done
}
for ((i = 1; i < jobs; i++)); do
	echo "check: VM $((i + 1)) of $jobs runs${lane_tests[i]} (its output when it ends)" >&2
	# shellcheck disable=SC2086
	run_lane $((i + 1)) ${lane_tests[i]} &
done
[ "$jobs" = 1 ] || echo "check: VM 1 of $jobs runs${lane_tests[0]}" >&2
# shellcheck disable=SC2086
run_lane 1 ${lane_tests[0]} &
tail -n +1 --pid=$! -F "$lane_dir/1.ktap" 2>/dev/null
wait

if [ -n "$hostlog" ]; then
	cat "$hostlog"
	summary=$(sed -n 's/^# mrpinctl host tests: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$hostlog")
	if [ -n "$summary" ]; then
		read -r host_passed host_failed <<<"$summary"
	else
		echo "check: the mrpinctl host tests did not report a result" >&2
		host_failed=1
	fi
fi

# The module's files form layers (make layers), whichever kernel it was
# built for: one more host test point.
if "$here/layers.sh" "$repo/kmod" >"$repo/build/check-layers.log" 2>&1; then
	echo "ok - the module's files form layers: $(sed -n 's/^layers, bottom up: //p' \
		"$repo/build/check-layers.log")"
	host_passed=$((host_passed + 1))
else
	echo "not ok - the module's files do not form layers (make layers):"
	sed 's/^/#   /' "$repo/build/check-layers.log"
	host_failed=$((host_failed + 1))
fi

: >"$ktap"
planned=0 vm_failed=0
for ((i = 0; i < jobs; i++)); do
	n=$((i + 1))
	[ "$n" = 1 ] || cat "$lane_dir/$n.ktap" "$lane_dir/$n.err"
	cat "$lane_dir/$n.ktap" >>"$ktap"
	while read -r plan; do
		planned=$((planned + plan))
	done <"$lane_dir/$n.planned"
	[ -f "$lane_dir/$n.failed" ] || continue
	while read -r status tests; do
		echo "check: lane $n: the VM of $tests failed (status $status)" >&2
		vm_failed=$((vm_failed + 1))
	done <"$lane_dir/$n.failed"
done

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
