#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The counter every limit of mrpin rests on (kmod/counter.h) never crosses
# its limit, not even for an instant, while every CPU adds to it: the
# selftests' own module (selftests/kmod/mrpin_counter_test.c) checks its
# edges and races it on every CPU when it loads.  It runs in the VM whose
# vCPUs are host threads of their own (check.sh's racing VM), where two
# adds interleave at the instruction.  A registration takes hundreds of
# microseconds around a compare-and-exchange of a few instructions: only a
# race in the kernel, add against add, can show a try-add that reads and
# adds in two steps.
. "$(dirname "$0")/lib.sh"

require_root
KO=${MRPIN_KO%/kmod/mrpin.ko}/selftests/kmod/mrpin_counter_test.ko
[ -f "$KO" ] || ktap_skip_all "$KO is not built (make selftests)"
ktap_plan 5

kernel_log_mark
rmmod mrpin_counter_test 2>/dev/null
err=$(insmod "$KO" 2>&1)
rc=$?
kernel_log_read
log=$(sed -n 's/^mrpin_counter_test: //p' <<<"$kernel_log")
[ -n "$log" ] && sed 's/^/# /' <<<"$log"
[ "$rc" = 0 ] || ktap_diag "insmod: $err"

ktap_check "the_module_loads_when_every_check_held" \
	eval '[ "$rc" = 0 ] && grep -qx "every check held" <<<"$log"'
# The race's line says the module ran past the edges.
ktap_check "the_edges_hold" \
	eval 'grep -q "^race: " <<<"$log" && ! grep -q "^edge: " <<<"$log"'
# "race: T threads, R rounds each: A adds, F refused, the counter read at
# most P of its limit L".
race=$(sed -nE 's/^race: ([0-9]+) threads.*: ([0-9]+) adds, ([0-9]+) refused, the counter read at most (-?[0-9]+) of its limit ([0-9]+)$/\1 \2 \3 \4 \5/p' <<<"$log")
read -r threads adds refused peak limit <<<"$race"
ktap_check "the_threads_raced_on_every_cpu" \
	eval '[ "${threads:-0}" = "$(getconf _NPROCESSORS_ONLN)" ] && [ "${threads:-0}" -ge 2 ] &&
		[ "${adds:-0}" -gt 0 ] && [ "${refused:-0}" -gt 0 ]'
ktap_check "the_counter_never_crossed_its_limit" \
	eval '[ -n "$race" ] && [ "$peak" -le "$limit" ] && [ "$peak" -gt 0 ] &&
		! grep -q "^race: the counter crossed its limit" <<<"$log"'
rmmod mrpin_counter_test 2>/dev/null
ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
