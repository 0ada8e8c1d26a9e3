#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin unloaded and loaded again while RDMA registrations go on.
#
# 50 `rmmod mrpin; insmod mrpin.ko` cycles ($MRPIN_RELOAD_CYCLES; 5 with
# short loops, 3 on the debug kernel, where one takes about 45 s under the
# churn) while 4 threads of
# `mrpin_lifecycle --churn` register and deregister MRs in a loop, each
# holding at least 3 of its 4 slots at any moment: no registration or
# deregistration fails, neither does insmod, nor rmmod but with EBUSY
# while a registration is in flight (it holds the module), tried again
# then as `modprobe -r --wait` does (for 2 s; where the churn leaves no
# moment free, the debug kernel's, it is stopped for the rmmod), and every
# load sees
# tracked registrations, and once the churn is over the last load has no
# live pin left and released every pin it tracked.  Its untracked releases
# are those of the MRs live when it was loaded (at least 12) and of those
# registered while insmod ran, before mrpin records pins (at most 16 plus
# the registrations made meanwhile).  The kernel log has no problem and no
# mrpin line but load and unload messages (none saying a pin was released
# unseen).  mrpin is left loaded.
#
# Every load and unload patches the entry of ib_umem_get() and
# ib_umem_release() while other CPUs run them.  In the test VM this
# program runs on single-threaded TCG (check.sh): QEMU 7.2's multi-threaded
# TCG can keep executing a stale translation of the patched entry.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
LIFECYCLE=$(dirname "$0")/mrpin_lifecycle
DEV=rxe0
THREADS=4
SLOTS=4		# CHURN_SLOTS in mrpin_lifecycle.c
if mrpin_debug_kernel; then
	cycles=${MRPIN_RELOAD_CYCLES:-3}
elif mrpin_short_loops; then
	cycles=${MRPIN_RELOAD_CYCLES:-5}
else
	cycles=${MRPIN_RELOAD_CYCLES:-50}
fi
ktap_plan 10
mrpin_short_loops && mrpin_short_loops_diag "$cycles reloads, not 50"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kernel_log_mark

# churn_regs: the registrations the churn has made so far (SIGUSR1).
churn_regs() {
	local n

	n=$(grep -c '^regs ' "$tmp/churn")
	kill -USR1 "$churn"
	while [ "$(grep -c '^regs ' "$tmp/churn")" = "$n" ] && kill -0 "$churn" 2>/dev/null; do
		sleep 0.01
	done
	sed -n 's/^regs //p' "$tmp/churn" | tail -n1
}

# stopped PID: every thread of PID is stopped, in user space.
stopped() {
	! grep -qv '^[^)]*) T' /proc/"$1"/task/*/stat 2>/dev/null
}

# rmmod_between_registrations: rmmod, tried again while a registration in
# flight holds the module (EBUSY) for up to 2 s; should the churn leave no
# moment without one (the debug kernel's registrations take most of the
# time), the churn is stopped (SIGSTOP lets a registration in the kernel
# finish first) for rmmod, and goes on at once.
rmmod_between_registrations() {
	local end=$((SECONDS + 2)) ok=0

	until rmmod mrpin 2>/dev/null; do
		mrpin_loaded || return 1
		retries=$((retries + 1))
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.05
	done
	mrpin_loaded || return 0
	kill -STOP "$churn"
	DEADLINE=30 until_true "the churn stopped" stopped "$churn" &&
		rmmod mrpin && ok=1
	kill -CONT "$churn"
	stops=$((stops + 1))
	[ "$ok" = 1 ]
}

"$LIFECYCLE" --churn $THREADS >"$tmp/churn" 2>"$tmp/churn_err" &
churn=$!
mrpin_wait_ready "$churn" "$tmp/churn"
failed=0
tracked=0
retries=0
stops=0
started=$SECONDS
for i in $(seq "$cycles"); do
	if ! rmmod_between_registrations; then
		failed=1
		ktap_diag "rmmod failed at cycle $i"
		break
	fi
	regs_before=$(churn_regs)
	if ! insmod "$MRPIN_KO"; then
		failed=1
		ktap_diag "insmod failed at cycle $i"
		break
	fi
	regs_during=$(($(churn_regs) - regs_before))
	# The churn goes on: wait for it to register under this load.
	while [ "$(mrpin_stat pins_total)" = 0 ] && kill -0 "$churn"; do
		sleep 0.01
	done
	[ "$(mrpin_stat pins_total)" = 0 ] || tracked=$((tracked + 1))
done
ktap_diag "$cycles cycles in $((SECONDS - started))s; rmmod found a registration in flight $retries times (EBUSY) and was tried again; the churn was stopped for $stops of them"
ktap_check "survives_${cycles}_rmmod_insmod_cycles_under_churn" test "$failed" = 0
ktap_check "every_load_tracked_registrations" test "$tracked" = "$cycles"
mrpin_load
kill -TERM "$churn"
wait "$churn"
status=$?
read -r _ _ regs _ deregs _ fails < <(grep '^churn ' "$tmp/churn")
ktap_diag "churn: $regs registrations, $deregs deregistrations, $fails failed"
ktap_check "no_registration_or_deregistration_failed" \
	test "$status $fails" = "0 0"
[ "$status" = 0 ] || ktap_diag "churn: $(cat "$tmp/churn_err")"
ktap_check "churn_deregistered_all_it_registered" test "$regs" = "$deregs"
ktap_check "no_live_pin_left" mrpin_stats_are "0 0" pins pinned_bytes
ktap_check "no_pins_procs_users_or_cgroups_line_left" \
	test "$(mrpin_rows pins) $(mrpin_rows procs) $(mrpin_rows users) $(mrpin_rows cgroups)" = "0 0 0 0"
ktap_check "device_back_to_zero" \
	test "$(awk -v d="$DEV" '$1 == d { print $4, $5 }' "$MRPIN_DIR/devices")" = "0 0"
ktap_check "every_tracked_pin_was_released" \
	test "$(mrpin_stat pins_total)" = "$(mrpin_stat releases_total)"
untracked=$(mrpin_stat untracked_releases_total)
ktap_diag "last load: $(mrpin_stat pins_total) tracked pins, $untracked untracked releases, $regs_during registrations during its insmod"
ktap_check "untracked_releases_are_the_mrs_live_or_made_at_the_last_insmod" \
	test "$untracked" -ge $((THREADS * (SLOTS - 1))) -a \
		"$untracked" -le $((THREADS * SLOTS + regs_during))
ktap_check_kernel_log "kernel_log_has_no_new_problem_or_mrpin_line" mrpin-but-loads
ktap_finish
