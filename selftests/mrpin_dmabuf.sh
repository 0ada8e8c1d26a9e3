#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dma-buf registrations (ibv_reg_dmabuf_mr's kind: a GPU's memory,
# mostly): ib_core imports the dma-buf, and no host page of the user's is
# pinned.  mrpin counts such a registration as peer memory: charged no
# host bytes and refused by no host-bytes limit, shown in stats, pins,
# procs and devices, an MR for max_pins, gone when it is released.  rxe
# has no dma-buf registration of its own: selftests/kmod/mrpin_dmabuf_test.ko
# makes them on rxe0, as a driver's reg_user_mr_dmabuf() would, from a
# dma-buf it exports (mrpin_dmabuf).
. "$(dirname "$0")/lib.sh"

require_root
KO=${MRPIN_KO%/kmod/mrpin.ko}/selftests/kmod/mrpin_dmabuf_test.ko
PROG=$(dirname "$0")/mrpin_dmabuf
require_built "$MRPIN_KO" "$PROG"
[ -f "$KO" ] || ktap_skip_all "$KO is not built (make selftests)"
CTL=$MRPIN_CTL
mrpin_load
tmp=$(mktemp -d)
cleanup() {
	local name

	for name in "${!mrpin_pids[@]}"; do
		mrpin_release "$name" 2>/dev/null
	done
	"$CTL" limit reset >/dev/null 2>&1
	rmmod mrpin_dmabuf_test 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

kernel_log_mark
insmod "$KO" || ktap_skip_all "insmod $KO failed"
page=$(getconf PAGESIZE)
size=$((16 * page))

# The kernel's ib_core may have no import the test module can use.
rc=0
"$PROG" "$page" </dev/null >"$tmp/probe" 2>&1 || rc=$?
[ "$rc" = 3 ] &&
	ktap_skip_all "this kernel's ib_core has no ib_umem_dmabuf_get_pinned_with_dma_device(), the one dma-buf import that needs no DMA device of the IB device's (rxe has none)"
ktap_plan 8
ktap_check "a_dma_buf_registration_is_made" test "$rc $(head -1 "$tmp/probe")" = "0 reg ok"

host_before=$(mrpin_stat pinned_bytes)
pins_before=$(mrpin_stat pins)
mrpin_hold one "$PROG" "$size"
pid=${mrpin_pids[one]}
ktap_check "stats_count_it_as_peer_memory_not_host_bytes" \
	mrpin_stats_are "1 $size $host_before $((pins_before + 1))" \
		peer_pins peer_bytes pinned_bytes pins
# pins: pid (2nd), length (6th), pinned_bytes (7th), caller (8th), peer
# (last); procs: pid (1st), pinned_bytes (6th), peer_bytes (last).
pin_row=$(awk -v p="$pid" '$2 == p { print $6, $7, $8, $NF }' "$MRPIN_DIR/pins")
# The importer, maybe a clone the compiler made of it (.constprop.0).
want="^$size 0 mrpin_dmabuf_reg(\\.[a-z]+\\.[0-9]+)? 1\$"
[[ $pin_row =~ $want ]] || ktap_diag "pins: $pin_row"
ktap_check "pins_shows_it_as_peer_with_its_importer" \
	bash -c '[[ $1 =~ $2 ]]' _ "$pin_row" "$want"
proc_row=$(awk -v p="$pid" '$1 == p { print $6, $NF }' "$MRPIN_DIR/procs")
ktap_check "procs_shows_its_peer_bytes" test "$proc_row" = "0 $size"
mrpin_release one
ktap_check "its_release_leaves_nothing" \
	mrpin_stats_are "0 0 $host_before $pins_before" \
		peer_pins peer_bytes pinned_bytes pins

# A host-bytes limit far below it does not refuse it; max_pins bounds it.
"$CTL" limit set process max_pinned="$page" max_pin_size="$page" >"$tmp/out" 2>&1 ||
	ktap_diag "$(cat "$tmp/out")"
rc=0
"$PROG" "$size" </dev/null >"$tmp/big" 2>&1 || rc=$?
ktap_check "a_host_bytes_limit_does_not_refuse_it" test "$rc" = 0
"$CTL" limit reset >/dev/null 2>&1
"$CTL" limit set process max_pins=1 >"$tmp/out" 2>&1 || ktap_diag "$(cat "$tmp/out")"
"$PROG" "$page" 2 </dev/null >"$tmp/two" 2>&1
ktap_check "max_pins_bounds_dma_buf_registrations" \
	test "$(grep '^reg' "$tmp/two" | tr '\n' ' ')" = "reg ok reg failed: ENOMEM "
"$CTL" limit reset >/dev/null 2>&1
ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
