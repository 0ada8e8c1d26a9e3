#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A device's MR table filled to the end, for real: on rxe0 (max_mr
# 524,287), one process registers the same 4 KiB page, as a worker that
# never calls ibv_dereg_mr() does, until rxe refuses.  mrpin must count
# every MR on the device, warn at the mr_table_warn mark, and record the
# refusal, which happens in the driver before any pin: an `events` line
# (action fail, key device, scope device:rxe0, the bytes asked, the
# device's live pins and max_mr, rxe's errno), failures_device_total, the
# process's failures; doctor must name the device, the process holding
# the table and its oldest MRs, before the table is full and once it is.
# When the process exits, the kernel releases every MR: leaks, all of
# them, and nothing left.
#
# The global rule counts distinct bytes, so the same page registered half
# a million times stays far below its cap, as the kernel's VmPin does not
# (the filler lifts RLIMIT_MEMLOCK).  The figures of time (and the
# kernel's memory) the filling takes are printed, never compared.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
here=$(cd "$(dirname "$0")" && pwd -P)
CTL=$MRPIN_CTL
FILL=$here/mrpin_mr_fill
require_built "$CTL" "$FILL"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
dev=${MRPIN_TEST_DEV:-rxe0}
tmp=$(mktemp -d)
export COLUMNS=200 TZ=UTC

mrpin_unload
mrpin_load
"$CTL" limit reset
max_mr=$(awk -v d="$dev" '$1 == d { print $3 }' "$MRPIN_DIR/devices")
[ "${max_mr:-0}" -gt 0 ] || ktap_skip_all "$dev has no max_mr in devices"
# About 5 KiB of kernel memory per MR (rxe's and mrpin's records, the
# umem), half a million times: more than the debug kernel's VM has.
mrpin_debug_kernel &&
	ktap_skip_all "the debug kernel's VM has too little memory for $max_mr MRs of rxe (about 5 KiB of kernel memory each)"
ktap_plan 13
kernel_log_mark

# The filler's output, line by line, until it prints one matching $1
# (false after $2 seconds, or if it ended).
fill_wait() {
	local i

	for ((i = 0; i < $2 * 10; i++)); do
		grep -q "$1" "$tmp/fill.out" && return 0
		kill -0 "$fill" 2>/dev/null || break
		sleep 0.1
	done
	ktap_diag "the filler did not print '$1': $(tail -c 300 "$tmp/fill.out")"
	return 1
}

kib_free() {
	awk '/^MemAvailable:/ { print $2 }' /proc/meminfo
}

# The mark (mr_table_warn=80%) is crossed on the way to 90%.
part=$(((max_mr * 9 + 9) / 10))
mkfifo "$tmp/fill.in"
"$FILL" --dev "$dev" "$part" full <"$tmp/fill.in" >"$tmp/fill.out" 2>&1 &
fill=$!
exec {fill_fd}>"$tmp/fill.in"
free0=$(kib_free)
t0=$(date +%s.%N)
fill_wait "^mrs $part\$" 1800
t1=$(date +%s.%N)
ktap_diag "$part registrations in $(echo "$t1 - $t0" | bc) s; MemAvailable $(((free0 - $(kib_free)) / 1024)) MiB lower"

pins=$(awk -v d="$dev" '$1 == d { print $4 }' "$MRPIN_DIR/devices")
ktap_check "the device counts every MR: $part" [ "$pins" = "$part" ]
mark=$(dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null |
	awk -v s="device:$dev" '$3 == "warn" && $7 == s && $8 == "mr_table"' | wc -l)
ktap_check "the mr_table_warn mark was crossed once" [ "$mark" = 1 ]

# Before the table is full: doctor names the device and who fills it.
"$CTL" --json doctor >"$tmp/doctor.json" 2>"$tmp/doctor.err"
ktap_check "doctor, before full: the table, its holder and its oldest MR" \
	json_holds "$tmp/doctor.json" \
	"[f for f in d if f['kind'] == 'mr-table' and f['subject'].get('device') == '$dev' and f['evidence'].get('holder_pid') == $fill and f['evidence'].get('holder_pins') == $part and f['evidence'].get('oldest_age_ms', -1) >= 0 and 'full' not in f['message']]"

echo go >&"$fill_fd"
fill_wait '^refused ' 1800
t2=$(date +%s.%N)
read -r _ held err < <(grep '^refused ' "$tmp/fill.out")
ktap_diag "$held MRs held when $dev refused one (errno $err), $(echo "$t2 - $t1" | bc) s more; MemAvailable $(((free0 - $(kib_free)) / 1024)) MiB lower"

ktap_check "rxe refuses past the mark, at most at max_mr ($max_mr)" \
	test "$held" -gt "$part" -a "$held" -le "$max_mr"
ev=$(dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null |
	awk '$3 == "fail"')
ktap_diag "events: $ev"
ktap_check "one fail event, key device, for the filler" \
	[ "$(awk -v p="$fill" -v s="device:$dev" '$4 == p && $7 == s && $8 == "device"' <<<"$ev" | wc -l)" = 1 ]
ktap_check "it says the bytes asked, the live pins, max_mr and the errno" \
	[ "$(awk '{ print $9, $10, $11, $12 }' <<<"$ev")" = "4096 $held $max_mr $err" ]
ktap_check "stats: one failure, of the device" \
	mrpin_stats_are "1 1 0" failures_total failures_device_total denials_total
ktap_check "procs: the filler's failure" \
	[ "$(awk -v p="$fill" 'NR > 1 && $1 == p { print $5, $11 }' "$MRPIN_DIR/procs")" = "$held 1" ]

"$CTL" --json doctor >"$tmp/doctor.json" 2>"$tmp/doctor.err"
ktap_check "doctor, full: the refusal, the holder and its oldest MR" \
	json_holds "$tmp/doctor.json" \
	"[f for f in d if f['kind'] == 'mr-table' and f['subject'].get('device') == '$dev' and f['severity'] == 'high' and f['evidence'].get('holder_pid') == $fill and f['evidence'].get('refused', 0) >= 1 and 'full' in f['message']]"
# Its words, from the same report (a second doctor reads half a million
# pins again: about 20 s).
ktap_diag "doctor: $(json_value "$tmp/doctor.json" \
	"next((f['message'] for f in d if f['kind'] == 'mr-table'), '')")"

# Exit with every MR registered: the kernel releases them all.
exec {fill_fd}>&-
wait "$fill"
t3=$(date +%s.%N)
ktap_diag "exit released $held MRs in $(echo "$t3 - $t2" | bc) s"
ktap_check "nothing is left pinned" mrpin_stats_are "0 0" pins pinned_bytes
ktap_check "every MR was a cleanup release" \
	mrpin_stats_are "$held $held 0" releases_total cleanup_releases_total untracked_releases_total
ktap_check "leaks: the filler's $held MRs" \
	[ "$(awk 'NR > 1 && $1 == "mrpin_mr_fill" { print $3 }' "$MRPIN_DIR/leaks")" = "$held" ]
ktap_check_kernel_log "no kernel problem"
rm -rf "$tmp"
ktap_finish
