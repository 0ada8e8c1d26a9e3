#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Peer memory (GPUDirect's kind) on NVIDIA OFED's RDMA stack: a
# registration that a peer memory client serves holds no host page, so it
# is charged no host bytes and refused by no host-bytes limit, is shown as
# peer memory in stats, pins, procs and devices, and by mrpinctl (status,
# pin, the export), counts as an MR (max_pins bounds it), and goes back to
# nothing when it is deregistered.  Its peer
# client is selftests/kmod/mrpin_peer_test.ko, over pages of its own that
# the test maps (VM_IO | VM_PFNMAP, as a GPU's memory is mapped); rxe, in
# the OFED lane, pins through ib_umem_get_peer() as OFED's mlx5 does.
. "$(dirname "$0")/lib.sh"

require_root
KO=${MRPIN_KO%/kmod/mrpin.ko}/selftests/kmod/mrpin_peer_test.ko
[ -f "$KO" ] ||
	ktap_skip_all "no peer-memory interface in this RDMA stack (the test's peer client builds against NVIDIA OFED's only): the OFED lane runs this test"
CTL=$MRPIN_CTL
require_built "$MRPIN_KO" "$(dirname "$0")/mrpin_pinner" \
	"$(dirname "$0")/mrpin_peer_race" "$CTL"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
mrpin_load
tmp=$(mktemp -d)
# The pinner only: the JSON helper's coprocess (lib.sh) lives until the
# test ends, and a bare wait would wait for it.
cleanup() {
	if [ -n "${pid:-}" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	"$CTL" limit reset >/dev/null 2>&1
	echo 0 >/sys/module/mrpin_peer_test/parameters/hold 2>/dev/null
	rmmod mrpin_peer_test 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ktap_plan 18

kernel_log_mark
insmod "$KO" || ktap_diag "insmod $KO failed"
dev=/dev/mrpin_peer_test
page=$(getconf PAGESIZE)
size=$((16 * page))

host_before=$(mrpin_stat pinned_bytes)
pins_before=$(mrpin_stat pins)
mrpin_start_pinner peer --map "$dev" "$size"
ktap_check "peer_registration_is_made" test -n "$pid"
ktap_check "stats_count_it_as_peer_memory_not_host_bytes" \
	mrpin_stats_are "1 $size $host_before $((pins_before + 1))" \
		peer_pins peer_bytes pinned_bytes pins
# pins: pid (2nd), pinned_bytes (7th), peer (last); procs: pid (1st),
# pinned_bytes (6th), peer_bytes (last); devices: peer_bytes (last).
pin_row=$(awk -v p="$pid" '$2 == p { print $7, $NF }' "$MRPIN_DIR/pins")
ktap_check "pins_shows_it_as_peer_with_no_pinned_bytes" test "$pin_row" = "0 1"
proc_row=$(awk -v p="$pid" '$1 == p { print $6, $NF }' "$MRPIN_DIR/procs")
ktap_check "procs_shows_its_peer_bytes" test "$proc_row" = "0 $size"
dev_peer=$(awk '$1 == "rxe0" { print $NF }' "$MRPIN_DIR/devices")
ktap_check "devices_shows_its_peer_bytes" test "$dev_peer" = "$size"
# mrpinctl: status and pin in JSON, the export's gauges.
"$CTL" -j status >"$tmp/status.json" 2>&1
"$CTL" -j pin pid "$pid" >"$tmp/pin.json" 2>&1
"$CTL" export prometheus >"$tmp/prom" 2>&1
json_holds "$tmp/status.json" True || ktap_diag "status: $(head -c 300 "$tmp/status.json")"
ctl_stats=$(json_value "$tmp/status.json" '"%d %d %d" % (d["peer_pins"], d["peer_bytes"], d["pinned_bytes"])')
ktap_check "mrpinctl_status_shows_it_apart_from_host_bytes" \
	test "$ctl_stats" = "1 $size $host_before"
ctl_pin=$(json_value "$tmp/pin.json" '" ".join("%s %d %d %s" % (p["peer"], p["pinned_bytes"], p["length"], p["device"]) for p in d)')
ktap_check "mrpinctl_pin_shows_it_as_peer" test "$ctl_pin" = "True 0 $size rxe0"
prom=$(grep -E '^mrpin_(peer_pins|peer_bytes|device_peer_bytes\{device="rxe0"\}) ' "$tmp/prom" | paste -sd ' ')
ktap_check "mrpinctl_export_has_its_peer_gauges" \
	test "$prom" = "mrpin_peer_pins 1 mrpin_peer_bytes $size mrpin_device_peer_bytes{device=\"rxe0\"} $size"
kill "$pid"
wait "$pid" 2>/dev/null
pid=
ktap_check "its_release_leaves_nothing" \
	mrpin_stats_are "0 0 $host_before $pins_before" \
		peer_pins peer_bytes pinned_bytes pins

# A host-bytes limit below the registration: the peer one is made, a host
# one of the same size refused.
"$CTL" limit set process max_pinned="$page" >"$tmp/out" 2>&1 || ktap_diag "$(cat "$tmp/out")"
if mrpin_start_pinner peer2 --map "$dev" "$size"; then peer_ok=1; else peer_ok=0; fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
host_ok=0
"$(dirname "$0")/mrpin_pinner" "$size" </dev/null >"$tmp/host" 2>&1 && host_ok=1
ktap_check "a_host_bytes_limit_does_not_refuse_peer_memory" \
	test "$peer_ok $host_ok" = "1 0"

# max_pins bounds MRs, peer ones too.
"$CTL" limit reset >/dev/null 2>&1
"$CTL" limit set process max_pins=1 >"$tmp/out" 2>&1 || ktap_diag "$(cat "$tmp/out")"
two=0
"$(dirname "$0")/mrpin_pinner" --map "$dev" "$page" "$page" </dev/null >"$tmp/two" 2>&1 && two=1
made=$(grep -c '^mr ' "$tmp/two")
ktap_check "max_pins_bounds_peer_registrations" test "$two $((made > 0))" = "0 1"
"$CTL" limit reset >/dev/null 2>&1

# The address space changed under a registration taken for peer memory
# (mrpin_peer_race): ordinary memory mapped over the range while the pin
# waits for its user's turn.  The pin finds host pages: mrpin gives them
# back and pins again, charged, which the host-bytes limit refuses; the
# user's later peer registrations are charged as host memory, another
# user's are not.
"$CTL" limit set process max_pinned="$page" >"$tmp/out" 2>&1 || ktap_diag "$(cat "$tmp/out")"
"$(dirname "$0")/mrpin_peer_race" "$dev" "$size" >"$tmp/race" 2>&1 ||
	ktap_diag "mrpin_peer_race: $(cat "$tmp/race")"
ktap_check "a_peer_registration_raced_by_a_mapping_is_charged_as_host_memory" \
	test "$(tr '\n' ' ' <"$tmp/race")" = "first ok second failed: ENOMEM "
kernel_log_read
ktap_check "the_race_is_counted_and_logged" bash -c \
	"[ \"\$1\" = 1 ] && grep -q 'mapped memory under its registration of peer memory' <<<\"\$2\"" \
	_ "$(mrpin_stat peer_races_total)" "$kernel_log"
ktap_check "nothing_stays_charged_after_it" \
	mrpin_stats_are "0 0 $host_before $pins_before" \
		peer_pins peer_bytes pinned_bytes pins
suspect=0
"$(dirname "$0")/mrpin_pinner" --map "$dev" "$size" </dev/null >"$tmp/suspect" 2>&1 || suspect=1
ktap_check "the_racing_users_peer_registrations_are_charged_from_then_on" \
	test "$suspect" = 1
other=0
prlimit --memlock=unlimited:unlimited \
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$(dirname "$0")/mrpin_pinner" --map "$dev" "$size" </dev/null >"$tmp/other" 2>&1 || other=1
[ "$other" = 0 ] || ktap_diag "as uid 65534: $(cat "$tmp/other")"
ktap_check "another_users_are_not" test "$other" = 0
"$CTL" limit reset >/dev/null 2>&1

# mrpin.ko built against the inbox headers (make selftests, KFLAVOUR=ofed):
# OFED's ib_core refuses it, with the message the README quotes.
inbox=${MRPIN_KO%/kmod/mrpin.ko}/build/inbox/kmod/mrpin.ko
if [ -f "$inbox" ]; then
	mrpin_unload
	kernel_log_read
	seen=$(wc -l <<<"$kernel_log")
	refused=0
	insmod "$inbox" 2>"$tmp/insmod" || refused=1
	kernel_log_read
	mrpin_loaded && [ "$refused" = 0 ] && rmmod mrpin
	mrpin_load
	said=0
	tail -n +"$((seen + 1))" <<<"$kernel_log" |
		grep -q "mrpin: disagrees about version of symbol" && said=1
	ktap_check "an_inbox_built_mrpin_is_refused_by_ofeds_ib_core" \
		test "$refused $said" = "1 1"
else
	ktap_skip "an_inbox_built_mrpin_is_refused_by_ofeds_ib_core" "$inbox is not built (make selftests KFLAVOUR=ofed)"
fi
ktap_check_kernel_log "no_kernel_problem_logged"
ktap_finish
