#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin follows RDMA devices: one line per device in `devices` with the
# values ib_core reports, appearing on `rdma link add` and disappearing on
# `rdma link delete`, whether the device existed before mrpin was loaded or
# was added after.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
ktap_plan 8

# dev_line NAME: the line of device NAME in `devices`.
dev_line() {
	awk -v d="$1" '$1 == d' "$MRPIN_DIR/devices"
}

# The node GUID as ibv_devinfo prints it (xxxx:xxxx:xxxx:xxxx).
ibv_guid() {
	ibv_devinfo -d "$1" | awk '$1 == "node_guid:" { print $2 }'
}

ibv_max_mr() {
	ibv_devinfo -v -d "$1" | awk '$1 == "max_mr:" { print $2 }'
}

ip link add mrpin_d1 type dummy 2>/dev/null
ip link set mrpin_d1 up

line=$(dev_line rxe0)
read -r _ guid max_mr pins bytes _ <<<"$line"
ktap_check "device_present_at_load_is_listed" test -n "$line"
ktap_check "node_guid_matches_ibv_devinfo" test "$guid" = "$(ibv_guid rxe0)"
ktap_check "max_mr_matches_ibv_devinfo" test "$max_mr" = "$(ibv_max_mr rxe0)"
ktap_check "idle_device_has_no_pins" test "$pins $bytes" = "0 0"

rdma link add mrpin_rxe1 type rxe netdev mrpin_d1
line=$(dev_line mrpin_rxe1)
ktap_check "device_added_later_appears" test -n "$line"
ktap_check "added_device_guid_matches_ibv_devinfo" \
	test "$(echo "$line" | awk '{ print $2 }')" = "$(ibv_guid mrpin_rxe1)"
rdma link delete mrpin_rxe1
ktap_check "deleted_device_disappears" test -z "$(dev_line mrpin_rxe1)"
ktap_check "other_devices_stay" test -n "$(dev_line rxe0)"

ip link del mrpin_d1
ktap_finish
