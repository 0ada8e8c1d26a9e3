#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Stage 2 of the test VM, PID 1 on the overlay root: mount the usual file
# systems, bring up Soft-RoCE (rxe0 on a dummy netdev), load mrpin.ko from
# the build, run the command (or a shell) on the second serial port, then
# unload mrpin, report the exit status and taint to the host, power off.
# The kernel log goes to the first serial port, which the host keeps.
set -u
run=/run/mrpin-host
# shellcheck source=/dev/null
. "$run/env"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM="${VM_TERM:-linux}" MRPIN_REPO="$REPO"

say() { echo "mrpin-vm: $*" >/dev/ttyS0; }

finish() {
	sync
	echo "rc=$1 taint_boot=$taint_boot taint_end=$(cat /proc/sys/kernel/tainted)" \
		>"$run/result"
	sync
	umount "$run" 2>/dev/null
	echo o >/proc/sysrq-trigger
	# Without ACPI power-off, a reboot ends QEMU too (-no-reboot).
	sleep 5
	echo b >/proc/sysrq-trigger
	sleep 30
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
# devtmpfs has no /dev/fd and /dev/std* (udev makes them elsewhere).
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts 2>/dev/null ||
	{ mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }
mount -t debugfs debugfs /sys/kernel/debug
# As systemd does: mrpin's policy node and the lockdown level are there.
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# Enabling a trace event registers probes on the scheduler's tracepoints to
# record every task's comm: patching those hot call sites while the other
# vCPU runs them is where QEMU 7.2's multi-threaded TCG can keep running a
# stale translation and stall that vCPU for good (seen once, as a soft
# lockup in text_poke_bp() under the tracepoint test, now mrpin_events').  The tests
# match trace lines by pid, which the trace keeps without it.
echo 0 >/sys/kernel/tracing/options/record-cmd 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /dev/hugepages /dev/shm /tmp
mount -t hugetlbfs hugetlbfs /dev/hugepages
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
chmod 1777 /tmp
hostname mrpin-vm
taint_boot=$(cat /proc/sys/kernel/tainted)

# Tests run programs as other users (uid 1000, a Slurm job's user), who
# must reach the tree whatever the directories above the clone allow (a
# clone under /root, or in a `mktemp -d` directory: mode 0700).  The
# commands run in it by a path of its own under /run, which everyone may
# enter.
mkdir -p /run/mrpin-repo && mount --bind "$REPO" /run/mrpin-repo ||
	{ say "cannot bind $REPO at /run/mrpin-repo"; finish 125; }
REPO=/run/mrpin-repo MRPIN_REPO=/run/mrpin-repo

# The test kernel's modules live in the host's cache, not in /lib/modules.
mkdir -p "/lib/modules/$KVER"
mount --bind "$MODDIR" "/lib/modules/$KVER"

ip link set lo up
# rxe computes its ICRC with the crypto API's crc32 on 6.1 and 6.12, which a
# module provides and nothing asks modprobe for; on 7.x it uses the crc32
# library, and crc32_generic is gone.
if modprobe -n -q crc32_generic 2>/dev/null; then
	modprobe crc32_generic || say "modprobe crc32_generic failed"
fi
# Without rxe0 every test would skip or fail for want of a device: the run
# fails here, saying why.
for m in rdma_rxe ib_uverbs rdma_ucm; do
	modprobe "$m" || { say "modprobe $m failed"; finish 125; }
done
{ ip link add d0 type dummy && ip link set d0 up; } ||
	{ say "the dummy netdev d0 could not be made"; finish 125; }
rdma link add rxe0 type rxe netdev d0 ||
	{ say "rdma link add rxe0 failed"; finish 125; }

if [ "$LOAD_MRPIN" = 1 ]; then
	if ! insmod "$REPO/kmod/mrpin.ko"; then
		say "insmod $REPO/kmod/mrpin.ko failed"
		finish 125
	fi
fi

tty=/dev/ttyS1
cd "$REPO" || finish 125
if [ "$MODE" = shell ]; then
	stty -F $tty sane rows "${VM_ROWS:-24}" cols "${VM_COLS:-80}" 2>/dev/null
	echo "mrpin test VM: kernel $KVER, rxe0 up, mrpin $([ "$LOAD_MRPIN" = 1 ] &&
		echo loaded || echo not loaded). 'exit' powers off." >$tty
	setsid -c bash -i <$tty >$tty 2>&1
	rc=$?
else
	stty -F $tty raw -echo -onlcr 2>/dev/null
	setsid bash "$run/cmd" </dev/null >$tty 2>&1
	rc=$?
fi

# Loaded at boot, mrpin must be loaded at the end: a test that unloads it
# puts it back, and one that could not has failed, whatever it said.
if [ "$LOAD_MRPIN" = 1 ] && grep -q '^mrpin ' /proc/modules; then
	if ! rmmod mrpin; then
		say "rmmod mrpin failed"
		[ "$rc" = 0 ] && rc=125
	fi
elif [ "$LOAD_MRPIN" = 1 ]; then
	say "mrpin was not loaded at the end: a test unloaded it and did not load it again"
	[ "$rc" = 0 ] && rc=125
fi
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >/dev/ttyS0
fi
finish "$rc"
