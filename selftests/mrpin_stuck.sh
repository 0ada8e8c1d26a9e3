#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A registration stuck inside the kernel's pin is charged to its owner and
# is in `pins` as a pin in flight (state pinning, its owner, its age
# growing; "(pinning)" in `mrpinctl pin`; an in-flight finding of `mrpinctl
# doctor`, which says when only the global rule bounds who pins), and
# `rmmod mrpin` fails with EBUSY at once instead of waiting for it (in D
# state, a hung task); once the pin can go on, the registration completes,
# is recorded (state pinned) and releases as usual, and mrpin unloads; a
# stuck registration killed fails (cause other, EINTR) and its charge goes
# back.  mrpin is left loaded.  The pin is made to wait as a page of a FUSE file
# whose server does not answer would make it (mrpin_stall): in the first
# page's write fault on a frozen ext4 file system (up to 6.4; later kernels
# refuse a long-term writable pin of such a file at once), else in the
# first page's fault under a userfaultfd that serves nothing until told
# (from 6.3, whose long-term pins may wait for a userfaultfd).
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
here=$(cd "$(dirname "$0")" && pwd)
require_built "$here/mrpin_stall" "$MRPIN_CTL"
mrpin_load
KIB=256
ktap_plan 19

tmp=$(mktemp -d)
kernel_log_mark
mnt=$tmp/mnt
mkdir -p "$mnt"
# An ext4 file system on a loop device, in tmpfs: one the test can freeze.
fs=yes
if ! { modprobe -q loop && modprobe -q ext4 &&
	truncate -s 16M "$tmp/fs.img" && mkfs.ext4 -q "$tmp/fs.img" &&
	mount -o loop "$tmp/fs.img" "$mnt"; } 2>"$tmp/mount"; then
	ktap_diag "no ext4 file system on a loop device to freeze: $(head -c 200 "$tmp/mount")"
	fs=no
fi
cleanup() {
	fsfreeze -u "$mnt" 2>/dev/null
	umount "$mnt" 2>/dev/null
}
trap cleanup EXIT

# rmmod_busy: rmmod fails, within 20 s, and mrpin stays loaded.
rmmod_busy() {
	local status

	timeout 20 rmmod mrpin 2>"$tmp/rmmod"
	status=$?
	ktap_diag "rmmod: status $status: $(cat "$tmp/rmmod")"
	[ "$status" != 0 ] && [ "$status" != 124 ] && mrpin_loaded
}

proc_bytes() {
	awk -v p="$1" '$1 == p { print $6 }' "$MRPIN_DIR/procs"
}

pin_bytes() {
	pin_field "$1" pinned_bytes
}

# pin_field PID COLUMN: that column of PID's rows in `pins`, by its name.
pin_field() {
	awk -v p="$1" -v col="$2" '
		NR == 1 { for (i = 2; i <= NF; i++) if ($i == col) c = i - 1; next }
		c && $2 == p { print $c }' "$MRPIN_DIR/pins"
}

# in_flight_for PID MS: PID's one row is a pin in flight, of KIB KiB,
# older than MS ms.
in_flight_for() {
	local state age

	state=$(pin_field "$1" state)
	age=$(pin_field "$1" age_ms)
	[ "$state" = pinning ] && [ "$(pin_bytes "$1")" = $((KIB * 1024)) ] &&
		[ "${age:-0}" -gt "$2" ] && return 0
	ktap_diag "pins of $1: state '$state', age '$age' ms: $(awk -v p="$1" '$2 == p' "$MRPIN_DIR/pins")"
	return 1
}

# waits_in_d PID: a thread of PID sleeps uninterruptibly.
waits_in_d() {
	grep -q '^State:.D' /proc/"$1"/task/*/status 2>/dev/null
}

charged() {
	test "$(proc_bytes "$1")" = $((KIB * 1024))
}

# stuck: the registration waits in the kernel (freeze: a thread of the
# process in D state; uffd: mrpin_stall said so), or failed at once.
stuck() {
	grep -q '^failed' "$tmp/stall.out" && return 0
	if [ "$mode" = freeze ]; then
		waits_in_d "$pid"
	else
		grep -q '^stalled$' "$tmp/stall.out"
	fi
}

# stall MODE ARGS...: mrpin_stall MODE ARGS, its registration started;
# true once it waits in the kernel.
stall() {
	mode=$1
	mrpin_hold stall "$here/mrpin_stall" "$@" || return 1
	pid=${mrpin_pids[stall]}
	[ "$mode" != freeze ] || fsfreeze -f "$mnt"
	echo go >&"${mrpin_fds[stall]}"
	DEADLINE=30 until_true "the registration of $pid waits ($mode)" stuck &&
		! grep -q '^failed' "$tmp/stall.out"
}

# go_on: let the stuck pin go on.
go_on() {
	if [ "$mode" = freeze ]; then
		fsfreeze -u "$mnt"
	else
		echo go >&"${mrpin_fds[stall]}"
	fi
}

if [ "$fs" = yes ] && stall freeze "$mnt/file" "$KIB"; then
	ktap_diag "the registration waits on the frozen file system"
else
	[ "$fs" = no ] || {
		ktap_diag "frozen file system: $(cat "$tmp/stall.out")"
		fsfreeze -u "$mnt" 2>/dev/null
		mrpin_release stall
		rm -f "$tmp/stall.in" "$tmp/stall.out"
		unset 'mrpin_fds[stall]'
	}
	if ! stall uffd "$KIB"; then
		ktap_diag "userfaultfd: $(cat "$tmp/stall.out")"
		for _ in $(seq 19); do
			ktap_skip "registration_waits_in_the_kernel" "no registration can be made to wait on this kernel: a frozen file system's write fault and a userfaultfd both failed at once"
		done
		ktap_finish
	fi
	ktap_diag "the registration waits on a userfaultfd"
fi
ktap_ok "registration_waits_in_the_kernel_on_its_first_page"
ktap_check "the_stuck_registration_is_charged_to_its_process" charged "$pid"
ktap_check "it_is_in_pins_as_a_pin_in_flight" in_flight_for "$pid" 0
age0=$(pin_field "$pid" age_ms)
sleep 1
ktap_check "whose_age_grows" in_flight_for "$pid" "${age0:-0}"
ktap_check "mrpinctl_pin_says_pinning" \
	eval '"$MRPIN_CTL" pin show pid "$pid" | grep -q "(pinning)"'
# doctor names a registration in flight for 10 s, and, under the default
# policy (no process, uid or cgroup rule), that only the global rule
# bounds who pins.
DEADLINE=30 until_true "in flight for 10 s" \
	eval '[ "$(pin_field "$pid" age_ms)" -ge 10000 ]'
"$MRPIN_CTL" doctor >"$tmp/doctor" 2>&1
ktap_check "doctor_names_the_registration_in_flight" \
	eval 'grep -q "^high  *pid $pid .*charged and in flight for" "$tmp/doctor" ||
		{ ktap_diag "$(head -c 600 "$tmp/doctor")"; false; }'
ktap_check "and_says_only_the_global_rule_bounds_who_pins" \
	grep -q "only the global rule bounds who pins" "$tmp/doctor"
ktap_check "rmmod_fails_at_once_instead_of_waiting" rmmod_busy
go_on
ktap_check "once_let_go_on_the_registration_completes" \
	until_true "registered" grep -q '^registered$' "$tmp/stall.out"
ktap_check "and_is_recorded" test "$(pin_bytes "$pid")" = $((KIB * 1024))
ktap_check "as_pinned" test "$(pin_field "$pid" state)" = pinned
mrpin_release stall
ktap_check "it_exits_cleanly" test $? = 0
ktap_check "its_release_is_seen" test -z "$(proc_bytes "$pid")$(pin_bytes "$pid")"
ktap_check "rmmod_succeeds_once_nothing_is_in_flight" rmmod mrpin
mrpin_load

# Killed while it waits, the registration fails with EINTR once the pin
# can look at its signals (frozen: once thawed; userfaultfd: at once), a
# failure of no cause of its own (other), and its charge goes back.
rm -f "$tmp/stall.in" "$tmp/stall.out"
unset 'mrpin_fds[stall]'
others=$(mrpin_stat failures_other_total)
dd if="$MRPIN_DIR/events" iflag=nonblock status=none of=/dev/null 2>/dev/null
args=("$KIB")
[ "$mode" != freeze ] || args=("$mnt/file" "$KIB")
if stall "$mode" "${args[@]}"; then
	kill -KILL "$pid"
	# A frozen file system holds it until thawed; a userfaultfd lets go
	# at the signal, and its stdin has no reader left to tell.
	[ "$mode" != freeze ] || go_on
	wait "$pid" 2>/dev/null
	ktap_check "a_killed_stuck_registration_dies" eval '! kill -0 "$pid" 2>/dev/null'
else
	ktap_fail "a_killed_stuck_registration_dies"
	ktap_diag "the second registration did not wait: $(cat "$tmp/stall.out")"
fi
dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null >"$tmp/events"
ktap_check "its_failure_is_other_with_eintr" \
	eval 'awk -v p="$pid" "\$3 == \"fail\" && \$4 == p && \$8 == \"other\" && \$12 == 4" "$tmp/events" | grep -q . ||
		{ ktap_diag "events: $(tail -n 3 "$tmp/events")"; false; }'
ktap_check "counted_as_other" \
	test "$(mrpin_stat failures_other_total)" = $((${others:-0} + 1))
ktap_check "and_its_charge_went_back" \
	test -z "$(proc_bytes "$pid")$(pin_bytes "$pid")"
ktap_check_kernel_log "kernel_log_has_no_new_problems"
ktap_finish
