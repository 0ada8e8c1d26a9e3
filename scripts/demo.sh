#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`, inside the test VM: a real RDMA workload over Soft-RoCE
# (perftest's ib_write_bw, server and client on rxe0) with mrpin loaded,
# and what mrpin sees while it runs and after; then a limit refusing the
# same workload, and why; the same workload refused by the kernel, as an
# unprivileged user under an 8 MiB RLIMIT_MEMLOCK, and why; one buffer
# registered on two devices, counted twice by VmPin and once by mrpin's
# distinct bytes; last, mrpinctl doctor on what all this left.
set -u
cd "$(dirname "$0")/.."
ctl=userspace/mrpinctl
dir=/sys/kernel/debug/mrpin

title() { printf '\n=== %s\n' "$*"; }

title "mrpin $(cut -d' ' -f2 $dir/version) is loaded; RDMA devices it follows"
$ctl dev

title "starting ib_write_bw (server and client on rxe0, 64 KiB messages, 8 s)"
ib_write_bw -d rxe0 -x 0 -s 65536 -D 8 >/tmp/ib_write_bw.server 2>&1 &
server=$!
sleep 1
ib_write_bw -d rxe0 -x 0 -s 65536 -D 8 localhost >/tmp/ib_write_bw.client 2>&1 &
client=$!
for _ in $(seq 50); do
	[ "$(awk '$1 == "pins" { print $2 }' $dir/stats)" -ge 2 ] && break
	sleep 0.1
done
sleep 1

title "processes holding pinned memory (pinned_bytes is exact: compare VmPin)"
$ctl proc
for pid in $server $client; do
	echo "pid $pid: $(grep VmPin /proc/$pid/status)"
done

title "live pins (caller: the kernel function that asked for the pin)"
$ctl pin

title "devices while the workload runs"
$ctl dev

wait $server $client
title "ib_write_bw result"
grep -A2 '#bytes' /tmp/ib_write_bw.client

title "after the workload exited: everything released"
$ctl status

title "a limit: no process may pin more than 64 KiB (mrpinctl limit set process max_pinned=64K)"
$ctl limit set process max_pinned=64K
$ctl limit show | grep -E '^(scope|process)'
# The same workload: its 128 KiB buffers no longer fit.  The server stops
# at its registration; the client then finds no server.
timeout 30 ib_write_bw -d rxe0 -x 0 -s 65536 -D 2 >/tmp/ib_write_bw.refused 2>&1 &
refused=$!
sleep 2
timeout 20 ib_write_bw -d rxe0 -x 0 -s 65536 -D 2 localhost >/dev/null 2>&1
wait $refused
echo "ib_write_bw (server) exited with status $?:"
grep -iE 'couldn.t|fail|error' /tmp/ib_write_bw.refused | head -n 3 | sed 's/^/    /'

title "why: the events file, and the kernel log"
$ctl events
dmesg | grep 'mrpin: pid' | tail -n 1
$ctl limit reset

title "the kernel refuses: ib_write_bw as uid 1000 under ulimit -l 8192 (8 MiB, containerd's default), 16 MiB messages"
# Without CAP_IPC_LOCK, ib_umem_get() refuses what VmPin plus the MR would
# take over RLIMIT_MEMLOCK: ibv_reg_mr fails with a bare ENOMEM.
as_user=(setpriv --reuid=1000 --regid=1000 --clear-groups
	bash -c 'ulimit -l 8192 && exec "$@"' -)
timeout 30 "${as_user[@]}" ib_write_bw -d rxe0 -x 0 -s 16777216 -D 2 \
	>/tmp/ib_write_bw.memlock 2>&1 &
refused=$!
sleep 2
timeout 20 "${as_user[@]}" ib_write_bw -d rxe0 -x 0 -s 16777216 -D 2 localhost >/dev/null 2>&1
wait $refused
echo "ib_write_bw (server) exited with status $?:"
grep -iE 'couldn.t|fail|error' /tmp/ib_write_bw.memlock | head -n 3 | sed 's/^/    /'
echo "what mrpin saw (action fail, cause memlock, VmPin and the limit):"
$ctl events

title "one 64 MiB buffer registered on two devices (rxe0 and a second rxe, as on a node with two rails)"
ip link add mrpin_demo0 type dummy && ip link set mrpin_demo0 up &&
	rdma link add mrpin_rxd0 type rxe netdev mrpin_demo0
mkfifo /tmp/pinner.in
selftests/mrpin_pinner --dev rxe0 --also mrpin_rxd0 64M </tmp/pinner.in >/tmp/pinner.out 2>&1 &
pinner=$!
exec {hold}>/tmp/pinner.in
for _ in $(seq 100); do
	grep -q '^ready' /tmp/pinner.out && break
	sleep 0.1
done
$ctl proc
echo "pid $pinner: $(grep VmPin /proc/$pinner/status)  (the kernel counts each registration)"
$ctl status
rc=0
$ctl doctor >/tmp/doctor.rails || rc=$?
grep -i -A3 'same memory' /tmp/doctor.rails
exec {hold}>&-
wait $pinner
rdma link delete mrpin_rxd0
ip link delete mrpin_demo0
rm -f /tmp/pinner.in

title "mrpinctl doctor: the refused ib_write_bw, and two mistakes made on purpose (a buffer on the stack, 100 MRs left at exit)"
selftests/mrpin_misuse stack </dev/null >/dev/null
selftests/mrpin_mistakes leak-exit 100 </dev/null >/dev/null
# doctor exits 1 when it finds something (here it must), 2 when it fails.
rc=0
$ctl doctor || rc=$?
case $rc in
1) echo "(mrpinctl doctor exited with status 1: it found something)" ;;
*) echo "(mrpinctl doctor exited with status $rc: it should have found the failure and two mistakes)" ;;
esac
