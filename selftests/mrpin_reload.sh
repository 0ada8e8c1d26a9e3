#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin loaded over live MRs and unloaded under them.
#
# 1. insmod while a process holds 4 MRs: the new module starts at zero,
#    their release is counted as untracked, 4 exactly, no live counter
#    moves (none goes negative), and an MR registered after the insmod is
#    tracked as usual.
# 2. rmmod while tracked MRs are live: the records go with the module
#    (kmemleak finds none of them on the debug kernel, no mrpin slab cache
#    is left), the release after the next insmod is untracked.
# The kernel log has no problem and no mrpin line but load and unload
# messages.  mrpin is left loaded.  mrpin_reload_churn.sh reloads it
# while registrations go on.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
DEV=rxe0
PLAN=18
ktap_plan $PLAN

tmp=$(mktemp -d)
kernel_log_mark

# stop PID: SIGTERM (the pinner deregisters), then its exit status.
stop() {
	kill -TERM "$1"
	wait "$1"
}

dev_counts() {
	awk -v d="$DEV" '$1 == d { print $4, $5 }' "$MRPIN_DIR/devices"
}

# Every number in the tables and `stats` is non-negative.
nothing_negative() {
	! cat "$MRPIN_DIR"/{stats,devices,procs,users,cgroups} | grep -q -- ' -[0-9]'
}

# 1. insmod while a process holds MRs.
rmmod mrpin
mrpin_start_pinner a 4K 64K@100 1M 1@4095 && a=$pid
insmod "$MRPIN_KO"
ktap_check "insmod_with_live_mrs_succeeds" test $? = 0
ktap_check "new_module_starts_at_zero" \
	mrpin_stats_are "0 0 0 0 0" pins pinned_bytes pins_total releases_total untracked_releases_total
ktap_check "earlier_mrs_are_not_listed" test "$(mrpin_rows pins) $(mrpin_rows procs)" = "0 0"
mrpin_start_pinner b 64K && b=$pid
ktap_check "mr_registered_after_insmod_is_tracked" \
	test "$(awk -v p="$b" '$2 == p { print $4, $7 }' "$MRPIN_DIR/pins")" = "$DEV 65536"
ktap_check "its_process_line_matches_its_vmpin" \
	test "$(awk -v p="$b" '$1 == p { print $5, $6, $8 }' "$MRPIN_DIR/procs")" = "1 65536 65536"
stop "$a"
ktap_check "earlier_mrs_deregister" test $? = 0
ktap_check "their_releases_are_counted_untracked" \
	mrpin_stats_are "4 0" untracked_releases_total releases_total
ktap_check "live_counters_do_not_move" mrpin_stats_are "1 65536" pins pinned_bytes
ktap_check "device_counters_do_not_move" test "$(dev_counts)" = "1 65536"
ktap_check "no_counter_is_negative" nothing_negative
stop "$b"
ktap_check "tracked_mr_is_released_as_usual" \
	mrpin_stats_are "0 0 1 1 4" pins pinned_bytes pins_total releases_total untracked_releases_total

# 2. rmmod while tracked MRs are live.
mrpin_start_pinner c --threads 2 4K 2M 1@4095 && c=$pid
ktap_check "mrs_tracked_before_rmmod" mrpin_stats_are "3" pins
ktap_check "rmmod_with_live_tracked_mrs_succeeds" rmmod mrpin
ktap_check "no_debugfs_directory_left" test ! -e "$MRPIN_DIR"
ktap_check "no_mrpin_slab_cache_left" bash -c '! grep -q "^mrpin" /proc/slabinfo'
if [ -w /sys/kernel/debug/kmemleak ]; then
	ktap_check_kmemleak
else
	ktap_ok "kmemleak_finds_no_mrpin_object # SKIP no kmemleak in this kernel"
fi
insmod "$MRPIN_KO"
stop "$c"
ktap_check "release_after_reload_is_untracked" \
	mrpin_stats_are "0 0 3" pins releases_total untracked_releases_total

ktap_check_kernel_log "kernel_log_has_no_new_problem_or_mrpin_line" mrpin-but-loads
rm -rf "$tmp"
mrpin_load
if [ "$ktap_num" != "$PLAN" ]; then
	ktap_fail "the plan counts $PLAN checks, $ktap_num ran"
fi
ktap_finish
