#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A live leak, told apart from a registration cache, on rxe0 with
# callsites=on: three real programs register 4 KiB MRs from one call site
# (mrpin_mistakes' reg_site_a):
#   grow        one MR every 20 ms, never deregistered: the worker that
#               forgot ibv_dereg_mr(), still running;
#   callsites   150 MRs at once, then held: a registration cache;
#   grow-dereg  two MRs every 20 ms, deregistering one: it grows, but it
#               deregisters.
# doctor must call the first a growing leak (high: its call site, its live
# count, its rate of growth and its oldest and newest ages, as the
# `callsites` and `procs` views say), the second a stable set (info), and
# the third neither.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
here=$(cd "$(dirname "$0")" && pwd -P)
CTL=$MRPIN_CTL
MISTAKES=$here/mrpin_mistakes
require_built "$CTL" "$MISTAKES"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
ktap_plan 10

tmp=$(mktemp -d)
export COLUMNS=200 TZ=UTC
mrpin_unload
mrpin_load
"$CTL" limit reset
"$CTL" limit set global callsites=on
kernel_log_mark

mrpin_hold leak "$MISTAKES" grow 20
mrpin_hold cache "$MISTAKES" callsites 150 0
mrpin_hold churn "$MISTAKES" grow-dereg 20
leak=${mrpin_pids[leak]} cache=${mrpin_pids[cache]} churn=${mrpin_pids[churn]}

# site_pins PID: the live pins of PID's call sites, from `callsites`.
site_pins() {
	awk -v p="$1" 'NR > 1 && $1 == p { n += $3 } END { print n + 0 }' \
		"$MRPIN_DIR/callsites"
}

# Until the leak and the growing churn both hold 150 MRs.
for _ in $(seq 600); do
	[ "$(site_pins "$leak")" -ge 150 ] && [ "$(site_pins "$churn")" -ge 150 ] && break
	sleep 0.1
done
ktap_check "the programs registered: 150 MRs and more each" \
	test "$(site_pins "$leak")" -ge 150 -a "$(site_pins "$churn")" -ge 150 \
	-a "$(site_pins "$cache")" = 150

# dereg_of PID: PID's deregistrations, from `procs` (found by its name).
dereg_of() {
	awk -v p="$1" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == "deregistrations") c = i - 1; next }
		c && $1 == p { print $c }' "$MRPIN_DIR/procs"
}
ktap_check "procs: the leak deregistered none, the other one some" \
	test "$(dereg_of "$leak")" = 0 -a "$(dereg_of "$churn")" -gt 0

"$CTL" --json doctor >"$tmp/doctor.json" 2>"$tmp/err"
rc=$?
ktap_check "doctor finds a problem: exit 1" test "$rc" = 1
cp "$MRPIN_DIR/callsites" "$tmp/callsites"
ktap_diag "callsites: $(tr '\n' ';' <"$tmp/callsites")"

has() {
	json_holds "$tmp/doctor.json" "$1"
}
ktap_check "the leak is a growing leak from reg_site_a" has \
	"[f for f in d if f['kind'] == 'growing-leak' and f['severity'] == 'high' and f['subject']['pid'] == $leak and f['evidence']['deregistrations'] == 0 and f['evidence']['pins'] >= 150 and 'reg_site_a' in f['message']]"
# The rate is the live pins over the time between the oldest and the
# newest, as the doctor saw them.
ktap_check "its rate is its live pins over its span" has \
	"[f for f in d if f['kind'] == 'growing-leak' and f['subject']['pid'] == $leak and abs(f['evidence']['rate_per_s'] * (f['evidence']['oldest_age_ms'] - f['evidence']['newest_age_ms']) / 1000 + 1 - f['evidence']['pins']) < 1]"
ktap_check "its newest MR is in the last quarter of its span" has \
	"[f for f in d if f['kind'] == 'growing-leak' and f['subject']['pid'] == $leak and 4 * f['evidence']['newest_age_ms'] <= f['evidence']['oldest_age_ms']]"
ktap_check "the cache is a stable set, not a leak" has \
	"[f['kind'] for f in d if f['subject'].get('pid') == $cache and f['kind'] in ('growing-leak', 'stable-set')] == ['stable-set'] and [f for f in d if f['kind'] == 'stable-set' and f['subject']['pid'] == $cache and f['severity'] == 'info' and f['evidence']['pins'] == 150]"
ktap_check "the process that deregisters is neither" has \
	"not [f for f in d if f['subject'].get('pid') == $churn and f['kind'] in ('growing-leak', 'stable-set')]"
"$CTL" doctor >"$tmp/doctor.txt" 2>&1
ktap_diag "doctor: $(grep -m1 'leaks MRs' "$tmp/doctor.txt")"
ktap_check "the text names the leak and its call site" \
	grep -q "pid $leak (mrpin_mistakes) .*reg_site_a" "$tmp/doctor.txt"

mrpin_release leak
mrpin_release cache
mrpin_release churn
"$CTL" limit reset
ktap_check_kernel_log "no kernel problem"
rm -rf "$tmp"
ktap_finish
