#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failure inside mrpin, with failslab aimed at mrpin's own slab
# caches: the record of the pin, of its process, of its user and of its
# cgroup, and the record of a device.  The test VM boots a failslab kernel
# with slub_debug=A,mrpin_*, which marks those caches for failslab's
# cache-filter; failslab's `space` (bytes allocated before failures start)
# aims at one of them, as a pin allocates its records in that order.  When
# one of them cannot be allocated, a registration is refused with ENOMEM
# under the global action=enforce (nomem_denials_total counts it) and is
# made untracked under action=warn (unrecorded_pins_total counts it, its
# release is an untracked release).  Nothing is charged in either case: the
# live counters stay exact, through a run of random failures too, and the
# kernel log stays clean (and the test VM's kmemleak scan after the last
# rmmod finds nothing).  A device whose record cannot be made is logged, has
# no row, and its pins go untracked; its removal leaves its driver watched
# for the other devices.
#
# Needs CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS: the debug
# kernel (make check-debug).
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
FS=/sys/kernel/debug/failslab
CACHES="mrpin_pin mrpin_proc mrpin_user mrpin_cgroup"
[ -d $FS ] || ktap_skip_all "the kernel has no failslab (CONFIG_FAILSLAB): make check-debug runs this test"
for c in $CACHES mrpin_dev; do
	[ "$(cat /sys/kernel/slab/$c/failslab 2>/dev/null)" = 1 ] ||
		ktap_skip_all "the $c cache is not marked for failslab: boot with slub_debug=A,mrpin_*"
done
ktap_plan 51

here=$(cd "$(dirname "$0")" && pwd)
PINNER=$here/mrpin_pinner
LIMITS=$MRPIN_LIMITS
CG=/sys/fs/cgroup
tmp=$(mktemp -d)
saved_policy=$tmp/policy
cat $LIMITS >"$saved_policy"
kernel_log_mark
fs_saved=$(for f in verbose ignore-gfp-wait cache-filter probability interval times space; do
	echo "$f $(cat $FS/$f)"
done)

cleanup() {
	local f v

	while read -r f v; do
		echo "$v" >$FS/"$f"
	done <<<"$fs_saved"
	[ -f "$saved_policy" ] && cat "$saved_policy" >$LIMITS
	rmdir $CG/mrpin_fs_* 2>/dev/null
	rdma link delete mrpin_fs_rxe 2>/dev/null
	ip link del mrpin_fs_d 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# failslab fails allocations from mrpin's caches only (cache-filter), with
# no log (verbose 0), sleeping ones too.
echo 0 >$FS/probability
echo 0 >$FS/verbose
echo N >$FS/ignore-gfp-wait
echo Y >$FS/cache-filter
echo 1 >$FS/interval
echo -1 >$FS/times

size() {
	local v

	read -r v </sys/kernel/slab/"$1"/object_size
	echo "$v"
}

# failslab_on PERCENT [CACHE]: fail allocations from mrpin's caches, or
# from CACHE on: a pin allocates from mrpin_pin, then from mrpin_proc (a
# new process), then mrpin_user (a new uid) or mrpin_cgroup (a new cgroup).
failslab_on() {
	local space=0

	case ${2:-} in
	mrpin_proc) space=$(($(size mrpin_pin) + 1)) ;;
	mrpin_user | mrpin_cgroup)
		space=$(($(size mrpin_pin) + $(size mrpin_proc) + 1)) ;;
	esac
	echo $space >$FS/space
	echo "$1" >$FS/probability
}

failslab_off() {
	echo 0 >$FS/probability
}

set_action() {
	printf 'global action=%s\n' "$1" >$LIMITS
}

# A fresh uid for each test: user records live as long as mrpin.
next_uid=42000

# run_pinner CACHE ARGS...: mrpin_pinner in what makes CACHE allocate: a
# new process (mrpin_proc), a new uid (mrpin_user), a new cgroup
# (mrpin_cgroup); every pin allocates from mrpin_pin.
run_pinner() {
	local cache=$1 cg=

	shift
	next_uid=$((next_uid + 1))
	case $cache in
	mrpin_cgroup)
		cg=$CG/mrpin_fs_$next_uid
		mkdir $cg
		;;
	esac
	(
		[ -n "$cg" ] && echo $BASHPID >$cg/cgroup.procs
		ulimit -l unlimited
		if [ "$cache" = mrpin_user ]; then
			exec setpriv --reuid=$next_uid --regid=$next_uid \
				--clear-groups "$PINNER" "$@"
		fi
		exec "$PINNER" "$@"
	)
}

live_is_zero() {
	[ "$(mrpin_stat pins)" = 0 ] && [ "$(mrpin_stat pinned_bytes)" = 0 ] &&
		[ "$(text_rows $MRPIN_DIR/pins)" = 0 ]
}

# The records of root and of this cgroup exist from now on.
run_pinner mrpin_pin 4K </dev/null >/dev/null

# One registration of 1 MiB while CACHE fails, under action=enforce: it is
# refused with ENOMEM and counted, and nothing is charged.
for c in $CACHES; do
	set_action enforce
	denials=$(mrpin_stat nomem_denials_total)
	made=$(mrpin_stat pins_total)
	failslab_on 100 $c
	run_pinner $c 1M </dev/null >/dev/null 2>$tmp/err
	status=$?
	failslab_off
	ktap_diag "$c: $(cat $tmp/err)"
	ktap_check "enforce_${c}_failure_refuses_the_registration" \
		test $status = 1
	ktap_check "enforce_${c}_failure_is_ENOMEM" \
		grep -q 'Cannot allocate memory' $tmp/err
	ktap_check "enforce_${c}_failure_counted_in_nomem_denials_total" \
		test "$(mrpin_stat nomem_denials_total)" = $((denials + 1))
	ktap_check "enforce_${c}_failure_charges_nothing" \
		eval 'live_is_zero && test "$(mrpin_stat pins_total)" = $made'
done

# The same under action=warn: the registration is made, untracked, and its
# release is counted as untracked.
for c in $CACHES; do
	set_action warn
	unrecorded=$(mrpin_stat unrecorded_pins_total)
	untracked=$(mrpin_stat untracked_releases_total)
	made=$(mrpin_stat pins_total)
	failslab_on 100 $c
	coproc PINNER_PROC { run_pinner $c 1M 2>&1; }
	next_uid=$((next_uid + 1))
	read -r line <&"${PINNER_PROC[0]}"
	read -r ready <&"${PINNER_PROC[0]}"
	failslab_off
	ktap_check "warn_${c}_failure_allows_the_registration" \
		test "$ready" = ready
	ktap_check "warn_${c}_failure_counted_in_unrecorded_pins_total" \
		test "$(mrpin_stat unrecorded_pins_total)" = $((unrecorded + 1))
	ktap_check "warn_${c}_failure_charges_nothing" \
		eval 'live_is_zero && test "$(mrpin_stat pins_total)" = $made'
	exec {PINNER_PROC[1]}>&-
	wait "$PINNER_PROC_PID"
	status=$?
	ktap_check "warn_${c}_release_is_untracked" \
		eval 'test $status = 0 &&
		      test "$(mrpin_stat untracked_releases_total)" = $((untracked + 1))'
done
set_action enforce

runs=20
mrpin_debug_kernel && runs=10
# Random failures in every cache at once, $MRPIN_FAILSLAB_RUNS (default 20)
# registrations, each in a process of its own, in each mode: every registration either was refused
# and counted, or was made and counted, tracked or not; all that was
# tracked is released.
for action in enforce warn; do
	set_action $action
	denials=$(mrpin_stat nomem_denials_total)
	unrecorded=$(mrpin_stat unrecorded_pins_total)
	made=$(mrpin_stat pins_total)
	released=$(mrpin_stat releases_total)
	ok=0 refused=0 other=0
	failslab_on 25
	for i in $(seq "${MRPIN_FAILSLAB_RUNS:-$runs}"); do
		c=mrpin_pin
		case $((i % 4)) in
		1) c=mrpin_user ;;
		2) c=mrpin_cgroup ;;
		esac
		run_pinner $c 64K@$((i * 8)) </dev/null >/dev/null 2>$tmp/err
		case $? in
		0) ok=$((ok + 1)) ;;
		1) if grep -q 'Cannot allocate memory' $tmp/err; then
			refused=$((refused + 1))
		   else
			other=$((other + 1))
			ktap_diag "$(cat $tmp/err)"
		   fi ;;
		*) other=$((other + 1)) ;;
		esac
	done
	failslab_off
	tracked=$(($(mrpin_stat pins_total) - made))
	unrec=$(($(mrpin_stat unrecorded_pins_total) - unrecorded))
	denied=$(($(mrpin_stat nomem_denials_total) - denials))
	ktap_diag "$action: $ok registrations made, $refused refused; pins tracked $tracked, unrecorded $unrec, refused $denied"
	ktap_check "random_${action}_no_other_failure" test $other = 0
	ktap_check "random_${action}_every_tracked_pin_was_released" \
		test $(($(mrpin_stat releases_total) - released)) = $tracked
	ktap_check "random_${action}_live_counters_back_to_zero" live_is_zero
	if [ $action = enforce ]; then
		ktap_check "random_enforce_refusals_counted" \
			test "$denied" = "$refused" -a "$refused" -gt 0
		ktap_check "random_enforce_made_pins_all_tracked" \
			test "$tracked" = "$ok" -a "$unrec" = 0
	else
		ktap_check "random_warn_nothing_refused" \
			test "$refused" = 0 -a "$denied" = 0
		ktap_check "random_warn_every_pin_tracked_or_unrecorded" \
			test $((tracked + unrec)) = "$ok" -a "$unrec" -gt 0
	fi
done
set_action enforce

# A device added while mrpin_dev fails: ib_core adds it without mrpin
# (it calls no remove() of a client whose add() failed), which says so in
# the log; its pins go untracked, and its removal leaves rxe's
# rxe_reg_user_mr() watched for rxe0.
TRACE=/sys/kernel/tracing	# mounted by the test VM (vm-guest.sh)
watched() {
	grep -q '^rxe_reg_user_mr\b' $TRACE/enabled_functions
}
ip link add mrpin_fs_d type dummy
ip link set mrpin_fs_d up
ktap_check "rxe_driver_is_watched" watched
failslab_on 100
rdma link add mrpin_fs_rxe type rxe netdev mrpin_fs_d
status=$?
failslab_off
kernel_log_read
ktap_check "failed_device_add_leaves_the_device_to_ib_core" test $status = 0
ktap_check "failed_device_add_is_logged" \
	grep -q 'mrpin: mrpin_fs_rxe: cannot track this device (-12)' \
	<<<"$kernel_log"
ktap_check "failed_device_has_no_row" \
	eval '! grep -q "^mrpin_fs_rxe " $MRPIN_DIR/devices'
made=$(mrpin_stat pins_total)
untracked=$(mrpin_stat untracked_releases_total)
MRPIN_TEST_DEV=mrpin_fs_rxe run_pinner mrpin_pin 1M </dev/null >/dev/null 2>$tmp/err
status=$?
ktap_check "failed_device_pins_go_untracked" \
	eval 'test $status = 0 && test "$(mrpin_stat pins_total)" = $made &&
	      test "$(mrpin_stat untracked_releases_total)" = $((untracked + 1))'
rdma link delete mrpin_fs_rxe
ktap_check "failed_device_removal_keeps_its_driver_watched" watched
rdma link add mrpin_fs_rxe type rxe netdev mrpin_fs_d
ktap_check "device_added_again_is_tracked" \
	eval 'grep -q "^mrpin_fs_rxe " $MRPIN_DIR/devices'
rdma link delete mrpin_fs_rxe
ip link del mrpin_fs_d

# With failslab off again, pins are tracked as before.
made=$(mrpin_stat pins_total)
run_pinner mrpin_pin 1M </dev/null >/dev/null 2>&1
ktap_check "tracking_resumes_without_failures" \
	test "$(mrpin_stat pins_total)" = $((made + 1))

ktap_check_kernel_log "kernel_log_has_no_new_problems"
ktap_finish
