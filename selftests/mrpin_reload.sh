#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin unloaded and loaded again under live RDMA traffic.
#
# 1. (opt-in: MRPIN_RELOAD_CHURN=1, make check-reload)
#    50 `rmmod mrpin; insmod mrpin.ko` cycles ($MRPIN_RELOAD_CYCLES) while
#    4 threads of `mrpin_lifecycle --churn` register and deregister MRs in
#    a loop, each holding at least 3 of its 4 slots at any moment: no
#    registration or deregistration fails, neither does rmmod nor insmod,
#    every load sees tracked registrations, and once the churn is over the
#    last load has no live pin left, released every pin it tracked and
#    counted as untracked exactly the releases of the MRs that were live
#    when it was loaded (between 12 and 16 of them).
# 2. insmod while a process holds 4 MRs: the new module starts at zero,
#    their release is counted as untracked, 4 exactly, no live counter
#    moves (none goes negative), and an MR registered after the insmod is
#    tracked as usual.
# 3. rmmod while tracked MRs are live: the records go with the module
#    (kmemleak finds none of them on the debug kernel, no mrpin slab cache
#    is left), the release after the next insmod is untracked.
# The kernel log has no problem and no mrpin line but load and unload
# messages.  mrpin is left loaded.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
[ -f "$MRPIN_KO" ] || ktap_skip_all "$MRPIN_KO is not built"
mrpin_load
LIFECYCLE=$(dirname "$0")/mrpin_lifecycle
PINNER=$(dirname "$0")/mrpin_pinner
DEV=rxe0
THREADS=4
SLOTS=4		# CHURN_SLOTS in mrpin_lifecycle.c
cycles=${MRPIN_RELOAD_CYCLES:-50}
PLAN=27
ktap_plan $PLAN

tmp=$(mktemp -d)
problems=$(dmesg_problems)
# mrpin's kernel log lines other than its load and unload messages.
other_mrpin_lines() {
	dmesg | grep 'mrpin' |
		grep -vc -e 'mrpin [^ ]*: tracking RDMA memory pins$' \
			-e 'mrpin [^ ]*: unloaded$' \
			-e 'mrpin: loading out-of-tree module taints kernel' \
			-e 'mrpin: module verification failed'
}
mrpin_lines=$(other_mrpin_lines)

# wait_ready PID FILE: until FILE has a line "ready"; false if PID ended.
wait_ready() {
	until grep -q '^ready$' "$2"; do
		if ! kill -0 "$1" 2>/dev/null; then
			ktap_diag "process $1 ended: $(cat "$2")"
			return 1
		fi
		sleep 0.1
	done
}

# start_pinner NAME ARGS...: mrpin_pinner --hold ARGS in the background,
# output in $tmp/NAME; its pid in $pid once it said "ready".
start_pinner() {
	local name=$1

	shift
	"$PINNER" --hold "$@" >"$tmp/$name" 2>&1 &
	pid=$!
	wait_ready "$pid" "$tmp/$name"
}

# stop PID: SIGTERM (the pinner deregisters), then its exit status.
stop() {
	kill -TERM "$1"
	wait "$1"
}

stats_are() {
	local want=$1 got="" key

	shift
	for key; do
		got+="$(mrpin_stat "$key") "
	done
	[ "$got" = "$want " ] || { ktap_diag "$*: $got"; return 1; }
}

rows() {
	tail -n +2 "$MRPIN_DIR/$1" | wc -l
}

dev_counts() {
	awk -v d="$DEV" '$1 == d { print $4, $5 }' "$MRPIN_DIR/devices"
}

# Every number in the tables and `stats` is non-negative.
nothing_negative() {
	! cat "$MRPIN_DIR"/{stats,devices,procs,users,cgroups} | grep -q -- ' -[0-9]'
}

# 1. Reloads under churn.  Opt-in ($MRPIN_RELOAD_CHURN=1, make
# check-reload): on the TCG test VM an insmod under this traffic can hang
# both vCPUs in ib_umem_release() (a soft lockup), an open problem.
if [ "${MRPIN_RELOAD_CHURN:-0}" = 1 ]; then
	"$LIFECYCLE" --churn $THREADS >"$tmp/churn" 2>"$tmp/churn_err" &
	churn=$!
	wait_ready "$churn" "$tmp/churn"
	failed=0
	tracked=0
	for i in $(seq "$cycles"); do
		if ! rmmod mrpin; then
			failed=1
			ktap_diag "rmmod failed at cycle $i"
			break
		fi
		if ! insmod "$MRPIN_KO"; then
			failed=1
			ktap_diag "insmod failed at cycle $i"
			break
		fi
		# The churn goes on: wait for it to register under this load.
		while [ "$(mrpin_stat pins_total)" = 0 ] && kill -0 "$churn"; do
			sleep 0.01
		done
		[ "$(mrpin_stat pins_total)" = 0 ] || tracked=$((tracked + 1))
	done
	ktap_check "survives_${cycles}_rmmod_insmod_cycles_under_churn" test "$failed" = 0
	ktap_check "every_load_tracked_registrations" test "$tracked" = "$cycles"
	mrpin_load
	stop "$churn"
	status=$?
	read -r _ _ regs _ deregs _ fails < <(grep '^churn ' "$tmp/churn")
	ktap_diag "churn: $regs registrations, $deregs deregistrations, $fails failed"
	ktap_check "no_registration_or_deregistration_failed" \
		test "$status $fails" = "0 0"
	[ "$status" = 0 ] || ktap_diag "churn: $(cat "$tmp/churn_err")"
	ktap_check "churn_deregistered_all_it_registered" test "$regs" = "$deregs"
	ktap_check "no_live_pin_left" stats_are "0 0" pins pinned_bytes
	ktap_check "no_pins_procs_users_or_cgroups_line_left" \
		test "$(rows pins) $(rows procs) $(rows users) $(rows cgroups)" = "0 0 0 0"
	ktap_check "device_back_to_zero" test "$(dev_counts)" = "0 0"
	ktap_check "every_tracked_pin_was_released" \
		test "$(mrpin_stat pins_total)" = "$(mrpin_stat releases_total)"
	untracked=$(mrpin_stat untracked_releases_total)
	ktap_diag "last load: $(mrpin_stat pins_total) tracked pins, $untracked untracked releases"
	ktap_check "untracked_releases_are_the_mrs_live_at_the_last_insmod" \
		test "$untracked" -ge $((THREADS * (SLOTS - 1))) -a "$untracked" -le $((THREADS * SLOTS))
else
	for i in $(seq 9); do
		ktap_ok "reload_under_churn_check_$i # SKIP opt-in: make check-reload (an insmod under traffic can hang the test VM)"
	done
fi

# 2. insmod while a process holds MRs.
rmmod mrpin
start_pinner a 4K 64K@100 1M 1@4095 && a=$pid
insmod "$MRPIN_KO"
ktap_check "insmod_with_live_mrs_succeeds" test $? = 0
ktap_check "new_module_starts_at_zero" \
	stats_are "0 0 0 0 0" pins pinned_bytes pins_total releases_total untracked_releases_total
ktap_check "earlier_mrs_are_not_listed" test "$(rows pins) $(rows procs)" = "0 0"
start_pinner b 64K && b=$pid
ktap_check "mr_registered_after_insmod_is_tracked" \
	test "$(awk -v p="$b" '$2 == p { print $4, $7 }' "$MRPIN_DIR/pins")" = "$DEV 65536"
ktap_check "its_process_line_matches_its_vmpin" \
	test "$(awk -v p="$b" '$1 == p { print $5, $6, $8 }' "$MRPIN_DIR/procs")" = "1 65536 65536"
stop "$a"
ktap_check "earlier_mrs_deregister" test $? = 0
ktap_check "their_releases_are_counted_untracked" \
	stats_are "4 0" untracked_releases_total releases_total
ktap_check "live_counters_do_not_move" stats_are "1 65536" pins pinned_bytes
ktap_check "device_counters_do_not_move" test "$(dev_counts)" = "1 65536"
ktap_check "no_counter_is_negative" nothing_negative
stop "$b"
ktap_check "tracked_mr_is_released_as_usual" \
	stats_are "0 0 1 1 4" pins pinned_bytes pins_total releases_total untracked_releases_total

# 3. rmmod while tracked MRs are live.
start_pinner c --threads 2 4K 2M 1@4095 && c=$pid
ktap_check "mrs_tracked_before_rmmod" stats_are "3" pins
ktap_check "rmmod_with_live_tracked_mrs_succeeds" rmmod mrpin
ktap_check "no_debugfs_directory_left" test ! -e "$MRPIN_DIR"
ktap_check "no_mrpin_slab_cache_left" bash -c '! grep -q "^mrpin" /proc/slabinfo'
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(grep -c 'mrpin' /sys/kernel/debug/kmemleak)
	ktap_diag "kmemleak: $leaks unreferenced objects allocated by mrpin"
	ktap_check "kmemleak_finds_no_mrpin_object" test "$leaks" = 0
else
	ktap_ok "kmemleak_finds_no_mrpin_object # SKIP no kmemleak in this kernel"
fi
insmod "$MRPIN_KO"
stop "$c"
ktap_check "release_after_reload_is_untracked" \
	stats_are "0 0 3" pins releases_total untracked_releases_total

ktap_check "kernel_log_has_no_new_problem_or_mrpin_line" \
	test "$(dmesg_problems) $(other_mrpin_lines)" = "$problems $mrpin_lines"
rm -rf "$tmp"
mrpin_load
if [ "$ktap_num" != "$PLAN" ]; then
	ktap_fail "the plan counts $PLAN checks, $ktap_num ran"
fi
ktap_finish
