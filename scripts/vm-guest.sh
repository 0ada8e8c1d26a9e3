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

# Stage 1 (scripts/initramfs-init) mounted /proc, /sys, debugfs,
# securityfs, tracefs, cgroup2, /dev/pts, /dev/shm and hugetlbfs, and put
# the tree at /run/mrpin-repo.  What follows avoids starting processes
# where the shell can do the same: each costs about a second on the
# debug kernel.
REPO=/run/mrpin-repo MRPIN_REPO=/run/mrpin-repo
# Enabling a trace event registers probes on the scheduler's tracepoints to
# record every task's comm: patching those hot call sites while the other
# vCPU runs them is where QEMU 7.2's multi-threaded TCG can keep running a
# stale translation and stall that vCPU for good (seen once, as a soft
# lockup in text_poke_bp() under the tracepoint test, now mrpin_events').  The tests
# match trace lines by pid, which the trace keeps without it.
echo 0 2>/dev/null >/sys/kernel/tracing/options/record-cmd
echo mrpin-vm >/proc/sys/kernel/hostname
# kmemleak scans the debug kernel's memory by itself a minute after boot
# and every ten minutes after: about 20 s of the VM's one host thread each
# time.  The scans that count are asked for: by the tests that check for
# leaks, and after the command (below).
echo scan=off 2>/dev/null >/sys/kernel/debug/kmemleak
read -r taint_boot </proc/sys/kernel/tainted

# built_in MODULE: the test kernel has MODULE built in (the debug kernel:
# all the test bed's drivers), so modprobe has nothing to load.
mapfile -t builtin <"/lib/modules/$KVER/modules.builtin" 2>/dev/null
built_in() {
	[[ " ${builtin[*]} " == *"/$1.ko "* ]]
}

ip link set lo up
# rxe computes its ICRC with the crypto API's crc32 on 6.1 and 6.12, which a
# module provides and nothing asks modprobe for; on 7.x it uses the crc32
# library, and crc32_generic is gone.
if ! built_in crc32_generic && modprobe -n -q crc32_generic 2>/dev/null; then
	modprobe crc32_generic || say "modprobe crc32_generic failed"
fi
# Without rxe0 every test would skip or fail for want of a device: the run
# fails here, saying why.
for m in rdma_rxe ib_uverbs rdma_ucm; do
	built_in "$m" || modprobe "$m" || { say "modprobe $m failed"; finish 125; }
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

# Booted with one CPU (maxcpus=1, multi-threaded TCG: scripts/vm-run.sh):
# the others come online now, before the command, which must find them all.
if [ "${ONLINE_CPUS:-0}" = 1 ]; then
	for cpu in /sys/devices/system/cpu/cpu[0-9]*/online; do
		read -r on <"$cpu"
		[ "$on" = 1 ] || echo 1 >"$cpu" || say "${cpu%/online} did not come online"
	done
	read -r online </sys/devices/system/cpu/online
	read -r possible </sys/devices/system/cpu/possible
	[ "$online" = "$possible" ] ||
		{ say "CPUs $online of $possible online: the command needs them all"; finish 125; }
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
