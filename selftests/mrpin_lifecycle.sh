#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `rdma link delete rxe0` while processes hold MRs on it, then `rdma link
# add` of it again on the same netdev.  mrpin (a client registered after
# ib_uverbs, removed before it) drops rxe0's line from `devices` as soon as
# the delete starts.  Then it depends on the driver:
# - rxe up to 6.12 cannot disassociate its user contexts, so ib_uverbs
#   makes the delete wait until the holders close the device: the pins
#   stay listed and charged, under rxe0, until they are released: one
#   holder deregisters while the delete waits, the other is killed (its
#   pins are cleanup releases).
# - rxe on 7.x disassociates them (rxe_disassociate_ucontext()): ib_uverbs
#   releases every MR at once, in the deleting task, while the holders
#   live on: every pin is uncharged and counted as a cleanup release then,
#   the holders' VmPin drops to zero, and their own deregistration later
#   releases nothing more.
# Either way the delete completes, every counter is back to zero, no pin is
# left untracked, no kernel warning (mrpin_dev_free() warns when a device
# record goes with pins), and a registration on the re-added rxe0 is
# accounted to its new line.  rxe0 is left as it was found.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
DEV=rxe0
netdev=$(rdma link show "$DEV/1" 2>/dev/null |
	awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
[ -n "$netdev" ] || ktap_skip_all "$DEV is missing or has no netdev"
PLAN=22
ktap_plan $PLAN

tmp=$(mktemp -d)
kernel_log_mark

# dev_line NAME: the line of device NAME in `devices`.
dev_line() {
	awk -v d="$1" '$1 == d' "$MRPIN_DIR/devices"
}

# proc_line PID: pins, pinned_bytes and vm_pinned_bytes of PID in `procs`.
proc_line() {
	awk -v p="$1" '$1 == p { print $5, $6, $8 }' "$MRPIN_DIR/procs"
}

# pins_of PID DEVICE: the number of PID's `pins` lines on DEVICE.
pins_of() {
	awk -v p="$1" -v d="$2" '$2 == p && $4 == d' "$MRPIN_DIR/pins" | wc -l
}

read_all_quietly() {
	mrpin_read_all >/dev/null
}

# vmpin_of PID: the kernel's VmPin of PID, in bytes.
vmpin_of() {
	echo $(($(awk '$1 == "VmPin:" { print $2 }' "/proc/$1/status") * 1024))
}

# bytes_of NAME: the bytes pinner NAME's MRs pin (the pages they span).
bytes_of() {
	awk '$1 == "mr" {
		first = int($2 / 4096); last = int(($2 + $3 - 1) / 4096)
		sum += (last - first + 1) * 4096
	} END { print sum + 0 }' "$tmp/$1"
}

guid=$(dev_line "$DEV" | awk '{ print $2 }')
before_releases=$(mrpin_stat releases_total)
before_untracked=$(mrpin_stat untracked_releases_total)
before_cleanup=$(mrpin_stat cleanup_releases_total)

# 1. Two holders: one to deregister, one to be killed.
mrpin_start_pinner a 64K 1M@100 && a=$pid
mrpin_start_pinner b --threads 2 4K 2M 1@4095 && b=$pid
a_bytes=$(bytes_of a)
b_bytes=$(bytes_of b)
total=$((a_bytes + b_bytes))
ktap_check "holders_registered_on_${DEV}" \
	test "$(dev_line "$DEV" | awk '{ print $4, $5 }')" = "5 $total"

# 2. The delete waits for them, or disassociates them where rxe can (the
# kernel has rxe_disassociate_ucontext()); mrpin drops the device's line at
# once.
rdma link delete "$DEV" 2>"$tmp/delete_err" &
del=$!
if grep -qw rxe_disassociate_ucontext /proc/kallsyms; then
	waits=0
	wait "$del"
	status=$?
	ktap_diag "rdma link delete disassociated the processes holding $DEV"
else
	waits=1
	until [ -z "$(dev_line "$DEV")" ] || ! kill -0 "$del" 2>/dev/null; do
		sleep 0.1
	done
	if kill -0 "$del" 2>/dev/null; then
		ktap_diag "rdma link delete waits for the processes holding $DEV"
	else
		ktap_diag "rdma link delete did not wait for the holders"
	fi
fi
ktap_check "device_line_goes_when_the_delete_starts" test -z "$(dev_line "$DEV")"
if [ "$waits" = 1 ]; then
	ktap_check "pins_stay_listed_under_${DEV}" \
		test "$(pins_of "$a" "$DEV") $(pins_of "$b" "$DEV")" = "2 3"
	ktap_check "pins_stay_charged_in_stats" \
		test "$(mrpin_stat pins) $(mrpin_stat pinned_bytes)" = "5 $total"
	ktap_check "holders_lines_still_match_their_vmpin" \
		test "$(proc_line "$a")/$(proc_line "$b")" = "2 $a_bytes $a_bytes/3 $b_bytes $b_bytes"
else
	ktap_check "disassociated_pins_leave_the_list" \
		test "$(pins_of "$a" "$DEV") $(pins_of "$b" "$DEV")" = "0 0"
	ktap_check "disassociated_pins_are_uncharged" \
		test "$(mrpin_stat pins) $(mrpin_stat pinned_bytes)" = "0 0"
	ktap_check "disassociated_holders_vmpin_is_zero" \
		test "$(vmpin_of "$a") $(vmpin_of "$b")" = "0 0"
fi
ktap_check "every_view_reads_during_the_delete" read_all_quietly

# 3. One deregisters, the other is killed; then the delete completes.
releases=$(mrpin_stat releases_total)
kill -TERM "$a"
wait "$a"
ktap_check "deregistration_during_the_delete_succeeds" test $? = 0
if [ "$waits" = 1 ]; then
	ktap_check "deregistered_pins_are_uncharged" \
		test "$(mrpin_stat pins) $(mrpin_stat pinned_bytes) $(pins_of "$a" "$DEV")" = "3 $b_bytes 0"
	cleanup=3
else
	ktap_check "deregistration_after_disassociation_releases_nothing_more" \
		test "$(mrpin_stat releases_total) $(mrpin_stat pins)" = "$releases 0"
	cleanup=5
fi
kill -KILL "$b"
wait "$b" 2>/dev/null	# bash's "Killed" notice
if [ "$waits" = 1 ]; then
	wait "$del"
	status=$?
fi
ktap_check "delete_completes_once_the_holders_are_gone" test "$status" = 0
[ "$status" = 0 ] || ktap_diag "rdma link delete: $(cat "$tmp/delete_err")"
ktap_check "no_device_line_after_the_delete" test -z "$(dev_line "$DEV")"
ktap_check "live_counters_back_to_zero" \
	test "$(mrpin_stat pins) $(mrpin_stat pinned_bytes)" = "0 0"
ktap_check "no_pins_or_procs_line_left" \
	test "$(tail -n +2 "$MRPIN_DIR/pins" | wc -l) $(tail -n +2 "$MRPIN_DIR/procs" | wc -l)" = "0 0"
ktap_check "every_pin_released_and_tracked" \
	test "$(($(mrpin_stat releases_total) - before_releases)) $(mrpin_stat untracked_releases_total)" = "5 $before_untracked"
ktap_check "pins_the_kernel_released_are_cleanup_releases" \
	test "$(($(mrpin_stat cleanup_releases_total) - before_cleanup))" = "$cleanup"
ktap_check_kernel_log "no_warning_when_the_device_record_goes"

# 4. The device again, on the same netdev: a fresh line, pins accounted.
rdma link add "$DEV" type rxe netdev "$netdev"
ktap_check "rdma_link_add_of_${DEV}_succeeds" test $? = 0
line=$(dev_line "$DEV")
ktap_check "readded_device_is_listed_idle" \
	test "$(echo "$line" | awk '{ print $4, $5 }')" = "0 0"
ktap_check "readded_device_has_the_same_node_guid" \
	test "$(echo "$line" | awk '{ print $2 }')" = "$guid"
mrpin_start_pinner c 64K@100 && c=$pid
ktap_check "new_registration_is_accounted_on_the_readded_device" \
	test "$(dev_line "$DEV" | awk '{ print $4, $5 }') $(pins_of "$c" "$DEV")" = "1 69632 1"
ktap_check "new_registration_is_in_stats" \
	test "$(mrpin_stat pins) $(mrpin_stat pinned_bytes)" = "1 69632"
kill -TERM "$c"
wait "$c"
ktap_check "all_released_at_the_end" \
	test "$(mrpin_stat pins) $(dev_line "$DEV" | awk '{ print $4, $5 }')" = "0 0 0"
ktap_check_kernel_log "kernel_log_has_no_new_problem_or_mrpin_line" mrpin

rm -rf "$tmp"
if [ "$ktap_num" != "$PLAN" ]; then
	ktap_fail "the plan counts $PLAN checks, $ktap_num ran"
fi
ktap_finish
