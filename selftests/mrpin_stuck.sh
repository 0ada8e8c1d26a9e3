#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A registration stuck inside the kernel's pin (its first page's write
# fault waiting, uninterruptibly, on a frozen file system, as it would on
# a page of a FUSE file whose server does not answer) is charged to its
# owner, and `rmmod mrpin` fails with EBUSY at once instead of waiting for
# it (in D state, a hung task); once the file system is thawed, the
# registration completes, is recorded and releases as usual, and mrpin
# unloads.  mrpin is left loaded.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
here=$(cd "$(dirname "$0")" && pwd)
require_built "$here/mrpin_stall"
mrpin_load
KIB=256
ktap_plan 9

tmp=$(mktemp -d)
kernel_log_mark
mnt=$tmp/mnt
mkdir -p "$mnt"
# An ext4 file system on a loop device, in tmpfs: one the test can freeze.
if ! { modprobe -q loop && modprobe -q ext4 &&
	truncate -s 16M "$tmp/fs.img" && mkfs.ext4 -q "$tmp/fs.img" &&
	mount -o loop "$tmp/fs.img" "$mnt"; } 2>"$tmp/mount"; then
	ktap_diag "$(cat "$tmp/mount")"
	ktap_skip_all "no ext4 file system on a loop device to freeze"
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
	awk -v p="$1" '$2 == p { print $7 }' "$MRPIN_DIR/pins"
}

# waits_in_d PID: a thread of PID sleeps uninterruptibly.
waits_in_d() {
	grep -q '^State:.D' /proc/"$1"/task/*/status 2>/dev/null
}

charged() {
	test "$(proc_bytes "$1")" = $((KIB * 1024))
}

if ! mrpin_hold stall "$here/mrpin_stall" "$mnt/file" "$KIB"; then
	ktap_fail "registration_waits_on_the_frozen_file_system"
	ktap_finish
fi
pid=${mrpin_pids[stall]}
fsfreeze -f "$mnt"
echo go >&"${mrpin_fds[stall]}"
DEADLINE=30 ktap_check "registration_waits_on_the_frozen_file_system" \
	until_true "a thread of $pid in D state" waits_in_d "$pid"
ktap_check "the_stuck_registration_is_charged_to_its_process" charged "$pid"
ktap_check "rmmod_fails_at_once_instead_of_waiting" rmmod_busy
fsfreeze -u "$mnt"
ktap_check "once_thawed_the_registration_completes" \
	until_true "registered" grep -q '^registered$' "$tmp/stall.out"
ktap_check "and_is_recorded" test "$(pin_bytes "$pid")" = $((KIB * 1024))
mrpin_release stall
ktap_check "it_exits_cleanly" test $? = 0
ktap_check "its_release_is_seen" test -z "$(proc_bytes "$pid")$(pin_bytes "$pid")"
ktap_check "rmmod_succeeds_once_nothing_is_in_flight" rmmod mrpin
mrpin_load
ktap_check_kernel_log "kernel_log_has_no_new_problems"
ktap_finish
