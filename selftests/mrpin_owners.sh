#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Owner records do not pile up: `stats` counts the records mrpin keeps
# (proc_records, user_records, cgroup_records); after short-lived processes,
# each of a user of its own, register and exit, the records of the
# processes and of the users are freed within seconds, with no new
# registration to reap them, also for a process that lives on after its
# last deregistration and exits later.  What mrpin allocates for a registration is
# charged to the memory cgroup of the process that registers.  Real registrations (mrpin_pinner on rxe0) as
# real uids (setpriv); the counts come from what ran here.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
require_built "$MRPIN_PINNER"
command -v setpriv >/dev/null || ktap_skip_all "setpriv (util-linux) is missing"
N=40
UID0=2000000
ktap_plan 8

tmp=$(mktemp -d)
kernel_log_mark
CG=/sys/fs/cgroup/mrpin_owners_memcg
trap 'rmdir "$CG" 2>/dev/null; rm -rf "$tmp"' EXIT

# records_at_most KIND N: KIND_records is N or fewer.
records_at_most() {
	local got

	got=$(mrpin_stat "$1_records")
	[ -n "$got" ] && [ "$got" -le "$2" ] && return 0
	ktap_diag "$1_records: '$got', expected at most $2"
	return 1
}

ktap_check "stats_count_the_records" \
	eval '[ -n "$(mrpin_stat proc_records)" ] && [ -n "$(mrpin_stat user_records)" ] &&
		[ -n "$(mrpin_stat cgroup_records)" ]'

# Whatever earlier processes left goes first: the baseline is what lives.
sleep 2
procs0=$(mrpin_stat proc_records)
users0=$(mrpin_stat user_records)
ktap_diag "before: ${procs0:-?} process and ${users0:-?} user records"

# N processes, each of a uid of its own, register a page and exit.
failed=0
for ((i = 0; i < N; i++)); do
	setpriv --reuid=$((UID0 + i)) --regid=$((UID0 + i)) --clear-groups \
		"$MRPIN_PINNER" 4096 </dev/null >"$tmp/pin.out" 2>&1 ||
		failed=$((failed + 1))
done
[ "$failed" = 0 ] || ktap_diag "$failed registrations failed: $(cat "$tmp/pin.out")"
ktap_check "every_registration_was_counted" \
	test "$(mrpin_stat pins_total)" -ge "$N" -a "$failed" = 0
# Within 10 s: the reaper's worker runs a second after a last put.
ktap_check "the_exited_processes_records_are_freed" \
	eval 'DEADLINE=10 until_true "process records back to $procs0" records_at_most proc "${procs0:-0}"'
ktap_check "the_users_records_are_freed" \
	eval 'DEADLINE=10 until_true "user records back to $users0" records_at_most user "${users0:-0}"'
# A process that deregisters its MRs and lives on: nothing of mrpin's runs
# when it exits later, yet its record goes within seconds of that too.
"$MRPIN_PINNER" --linger 3 4096 </dev/null >"$tmp/linger.out" 2>&1 ||
	ktap_diag "the lingering registration failed: $(cat "$tmp/linger.out")"
ktap_check "the_record_of_a_process_that_exited_after_its_last_deregistration_is_freed" \
	eval 'grep -q "^deregistered$" "$tmp/linger.out" &&
		DEADLINE=10 until_true "process records back to $procs0" records_at_most proc "${procs0:-0}"'

# What mrpin allocates for a registration is charged to the memory cgroup
# of the process that registers: a process in a cgroup of its own holds
# 1 then 1 + N MRs, and the cgroup's slab grows by N pin records more with
# mrpin loaded than without (each measure in a new cgroup).
N=1000
page=$(getconf PAGESIZE)
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
pin_size=$(cat /sys/kernel/slab/mrpin_pin/object_size 2>/dev/null)

# slab_with MRS: the slab bytes of a new cgroup whose one process holds
# MRS MRs of a page each.
slab_with() {
	local slab

	rmdir "$CG" 2>/dev/null
	mkdir "$CG" || return 1
	# shellcheck disable=SC2046
	mrpin_hold memcg bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
		_ "$CG" "$MRPIN_PINNER" $(printf "$page %.0s" $(seq "$1")) || return 1
	slab=$(awk '$1 == "slab" { print $2 }' "$CG/memory.stat")
	mrpin_release memcg
	rm -f "$tmp/memcg.in" "$tmp/memcg.out"
	unset 'mrpin_fds[memcg]'
	for _ in $(seq 50); do
		rmdir "$CG" 2>/dev/null && break
		sleep 0.1
	done
	echo "$slab"
}
# per_mrs: the slab of N MRs more than of one.
per_mrs() {
	local one many

	one=$(slab_with 1) && many=$(slab_with $((N + 1))) &&
		[ -n "$one" ] && [ -n "$many" ] && echo $((many - one))
}
with=$(per_mrs)
mrpin_unload
without=$(per_mrs)
mrpin_load
ktap_diag "a cgroup's slab for $N MRs: ${with:-?} bytes with mrpin, ${without:-?} without; a pin record is ${pin_size:-?} bytes"
ktap_check "mrpins_pin_records_are_charged_to_the_registering_cgroup" \
	eval '[ -n "$with" ] && [ -n "$without" ] && [ -n "$pin_size" ] &&
		[ $((with - without)) -ge $((N * pin_size * 9 / 10)) ]'
ktap_check "mrpin_reloaded" mrpin_loaded

ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
