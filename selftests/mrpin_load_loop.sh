#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 100 load/unload cycles in a row, with a device added and removed in
# between: no debugfs entry, slab cache or kernel memory is left behind and
# the kernel log stays clean.  What mrpin allocates comes from its own
# caches (one left with objects at unload is reported by the kernel, in
# the log) and from kmalloc's: those are what must not grow.  The kernel's
# own objects of a module's load (tasks, pids, inodes, debugfs inodes,
# kernfs nodes, workqueue pools, ftrace's event fields) are not mrpin's:
# on 7.x they grow by kilobytes with every load and unload of any module,
# one that only makes a workqueue or a debugfs file and frees it again
# included.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
require_built "$MRPIN_KO"
ktap_plan 5

# On the debug kernel a cycle takes seconds, and kmemleak names a leak of
# a single cycle: five are enough there.
cycles=${MRPIN_LOAD_CYCLES:-100}
if mrpin_short_loops; then
	cycles=${MRPIN_LOAD_CYCLES:-25}
	mrpin_debug_kernel && cycles=${MRPIN_LOAD_CYCLES:-5}
	mrpin_short_loops_diag "$cycles load/unload cycles, not 100"
fi
kernel_log_mark
mrpin_unload
ip link add mrpin_d2 type dummy && ip link set mrpin_d2 up

# Slab memory is allocated lazily: one warm-up cycle first, with the
# device added and removed.
insmod "$MRPIN_KO"
rdma link add mrpin_rxe2 type rxe netdev mrpin_d2
mrpin_read_all >/dev/null
rdma link delete mrpin_rxe2
rmmod mrpin
# kB in the caches mrpin allocates from (active objects times their size):
# kmalloc's and its own (merged into others or not).
mrpin_slab_kb() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk 'NR > 2 && $1 ~ /^(kmalloc-|mrpin)/ { b += $2 * $4 } END { print int(b / 1024) }' \
		/proc/slabinfo
}
slab_before=$(mrpin_slab_kb)
total_before=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)

failed=0
for i in $(seq "$cycles"); do
	if ! insmod "$MRPIN_KO"; then
		failed=1
		ktap_diag "insmod failed at cycle $i"
		break
	fi
	if [ $((i % 10)) = 0 ]; then
		rdma link add mrpin_rxe2 type rxe netdev mrpin_d2
		mrpin_read_all >/dev/null
		rdma link delete mrpin_rxe2
	fi
	if ! rmmod mrpin; then
		failed=1
		ktap_diag "rmmod failed at cycle $i"
		break
	fi
done
ktap_check "survives_${cycles}_load_unload_cycles" test "$failed" = 0
ktap_check "no_debugfs_directory_left" test ! -e "$MRPIN_DIR"
ktap_check "no_mrpin_slab_cache_left" bash -c '! grep -q "^mrpin" /proc/slabinfo'

if [ -w /sys/kernel/debug/kmemleak ]; then
	# The debug kernel: KASAN's quarantine holds freed memory, so the slab
	# total says nothing there; kmemleak does, object by object.
	ktap_check_kmemleak
else
	slab_after=$(mrpin_slab_kb)
	growth=$((slab_after - slab_before))
	ktap_diag "kmalloc's and mrpin's caches before ${slab_before} kB, after ${slab_after} kB; all slab memory before ${total_before} kB, after $(awk '/^Slab:/ { print $2 }' /proc/meminfo) kB"
	# A leak of even one small record per cycle is 100 objects; these
	# caches move by a few pages for unrelated reasons.
	ktap_check "slab_memory_did_not_grow_by_more_than_256kB" test "$growth" -lt 256
fi
ktap_check_kernel_log "kernel_log_has_no_new_problems"

ip link del mrpin_d2
mrpin_load
ktap_finish
