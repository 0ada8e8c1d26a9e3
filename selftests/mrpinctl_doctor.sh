#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpinctl doctor against the live module: real programs on rxe0 make each
# mistake on purpose (mrpin_misuse: a stack buffer, 4 KiB pages against
# THP, churn; mrpin_mistakes: MRs left at exit, call sites; mrpin_pinner:
# a misaligned start, oversized pins, a refusal), and doctor must name each
# one, worst first, exit 1, with the right process and numbers in JSON and
# the function that registered (libdwfl, from the -g build) with
# callsites=on.  The churn counts only when the kernel's lifetime
# histogram says its pins lived under 1 ms (the debug kernel under
# emulation is too slow): the doctor must agree with the histogram either
# way.  A fresh module with nothing pinned: exit 0; a failure (a bad
# command line, the module not loaded): exit 2, never 1.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
here=$(cd "$(dirname "$0")" && pwd -P)
CTL=$MRPIN_CTL
MISUSE=$here/mrpin_misuse
MISTAKES=$here/mrpin_mistakes
PINNER=$here/mrpin_pinner
require_built "$CTL" "$MISUSE" "$MISTAKES" "$PINNER"
command -v python3 >/dev/null || ktap_skip_all "python3 is missing"
ktap_plan 31

tmp=$(mktemp -d)
export COLUMNS=200 TZ=UTC

# A fresh module: no counters, no leaks, no events from earlier tests.
mrpin_unload
mrpin_load
"$CTL" limit reset

# doctor [OPTIONS]: mrpinctl doctor into $tmp/out, its status in $rc.
doctor() {
	"$CTL" "$@" doctor >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# has EXPR: EXPR (of d, the findings) holds for the last `doctor -j`.
has() {
	json_holds "$tmp/out" "$1"
}

# 1. Nothing pinned, a fresh module: nothing to say.
doctor
ktap_check "fresh_module_nothing_found_exit_0" \
	bash -c "[ $rc = 0 ] && grep -qx 'no problems found (0 processes, 0 pins, [0-9]* devices\\?)' '$tmp/out'"
doctor -j
ktap_check "fresh_module_json_is_empty" bash -c "[ $rc = 0 ] && [ \"\$(cat '$tmp/out')\" = '[]' ]"

# 2. The mistakes, each on purpose.
"$MISTAKES" leak-exit 100 </dev/null >"$tmp/leak.out" 2>&1
ktap_check "leak_exit_program_ran" grep -q '^ready' "$tmp/leak.out"
mrpin_hold stack "$MISUSE" stack
mrpin_hold churn "$MISUSE" churn 2000
mrpin_hold nohuge "$MISUSE" nohuge 64M
mrpin_hold huge "$MISUSE" huge 64M
"$CTL" limit set process max_pinned=64K
"$PINNER" 1M </dev/null >"$tmp/denied" 2>&1
"$CTL" limit set process max_pinned=unlimited
ktap_check "registration_over_the_limit_refused" grep -q 'Cannot allocate memory' "$tmp/denied"
"$CTL" limit set global oversize=1M callsites=on
mrpin_hold pinner "$PINNER" 8K@100 4M@4096 4M@8192
# The MR table: enough MRs for mr_table_warn=1% of rxe0's max_mr, made by
# two functions of a -g program (the call sites): reg_site_a first, then
# reg_site_b, more of them.
"$CTL" -j dev >"$tmp/dev"
json_holds "$tmp/dev" "[x for x in d if x['device'] == 'rxe0']" ||
	ktap_diag "mrpinctl dev shows no rxe0: $(cat "$tmp/dev")"
max_mr=$(json_value "$tmp/dev" "[x['max_mr'] for x in d if x['device'] == 'rxe0'][0]")
rxe_pins=$(json_value "$tmp/dev" "[x['pins'] for x in d if x['device'] == 'rxe0'][0]")
need=$(((max_mr + 99) / 100 - rxe_pins + 8))
[ "$need" -lt 60 ] && need=60
ktap_diag "rxe0: max_mr $max_mr, $rxe_pins pins; mrpin_mistakes registers 50 + $need"
"$CTL" limit set global mr_table_warn=1%
mrpin_hold sites "$MISTAKES" callsites 50 "$need"
stack=${mrpin_pids[stack]} churn=${mrpin_pids[churn]} nohuge=${mrpin_pids[nohuge]}
huge=${mrpin_pids[huge]} pinner=${mrpin_pids[pinner]} sites=${mrpin_pids[sites]}
site_a=$(sed -n 's/^site a //p' "$tmp/sites.out")
site_b=$(sed -n 's/^site b //p' "$tmp/sites.out")
# The global limit: what is pinned now is about 90% of it.
pinned=$(mrpin_stat pinned_bytes)
"$CTL" limit set global max_pinned=$((pinned * 10 / 9 / 1024 + 1))K

doctor -j
ktap_check "mistakes_exit_1_valid_json" eval "[ $rc = 1 ] && has True"
ktap_diag "exit $rc; kinds: $(json_value "$tmp/out" "' '.join(f['kind'] for f in d)")"
[ "$rc" = 1 ] || ktap_diag "doctor exited $rc: $(cat "$tmp/err")"
ktap_check "stack_buffer_named_with_its_process_and_caller" has \
	"[(f['evidence']['stack_pins'], f['evidence']['live_stack_pins'], f['evidence']['callers']) for f in d if f['kind'] == 'stack' and f['subject'].get('pid') == $stack] == [(1, 1, 'rxe_mr_init_user')] and [f['severity'] for f in d if f['kind'] == 'stack'] == ['high']"
ktap_check "leak_at_exit_named_with_count_and_bytes" has \
	"[(f['evidence']['count'], f['evidence']['bytes'], f['subject']['uid']) for f in d if f['kind'] == 'leak-exit' and f['subject']['comm'] == 'mrpin_mistakes'] == [(100, 409600, 0)]"
# The churn: the doctor names a process when half of its released pins
# lived under 1 ms.  Whether the churn got there is the kernel's to say
# (its lifetime histogram, buckets 0-9 below 1024 us): the debug kernel
# under emulation is too slow for it.  The doctor must agree with the
# histogram either way.
# life_hist by its name: the header's "#" shifts its fields by one.
read -r churn_released churn_fast < <(awk -v p="$churn" '
	NR == 1 { for (i = 2; i <= NF; i++) if ($i == "life_hist") c = i - 1 }
	$1 == p { print $c }' "$MRPIN_DIR/procs" |
	tr , '\n' | awk 'NR <= 10 { f += $1 } { r += $1 } END { print r + 0, f + 0 }')
ktap_diag "churn: $churn_fast of its $churn_released released pins lived under 1 ms"
if [ $((churn_fast * 2)) -ge "$churn_released" ]; then
	churn_want="[($churn_released, $churn_fast)]"
else
	churn_want="[]"
fi
ktap_check "churn_finding_agrees_with_the_lifetime_histogram" has \
	"[(f['evidence']['released'], f['evidence']['under_1ms']) for f in d if f['kind'] == 'churn' and f['subject']['pid'] == $churn] == $churn_want"
if [ "$churn_want" = "[]" ]; then
	churn_skip=" # SKIP the churn's pins lived over 1 ms on this kernel"
	ktap_ok "churn_named$churn_skip"
else
	churn_skip=""
	ktap_check "churn_named" has \
		"[f['evidence']['released'] >= 2000 for f in d if f['kind'] == 'churn' and f['subject']['pid'] == $churn] == [True]"
fi
ktap_check "4k_pages_named_for_the_nohugepage_buffer" has \
	"[f['evidence']['pinned_bytes'] == 64 << 20 and f['evidence']['bytes_4k'] == 64 << 20 for f in d if f['kind'] == '4k-pages' and f['subject']['pid'] == $nohuge] == [True]"
# The column by its name: a column added before it moved it once.
huge_2m=$(awk -v p="$huge" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == "bytes_2m") c = i - 1 }
	$1 == p && c { print $c }' "$MRPIN_DIR/procs")
if [ "${huge_2m:-0}" -ge $((32 << 20)) ]; then
	ktap_check "thp_backed_buffer_not_named" has \
		"not any(f['subject'].get('pid') == $huge for f in d)"
else
	ktap_ok "thp_backed_buffer_not_named # SKIP THP backed ${huge_2m:-0} bytes of 64 MiB"
fi
ktap_check "refusal_named_with_its_limit" has \
	"[(f['evidence']['scope'], f['evidence']['key'], f['evidence']['largest_asked'], f['evidence']['limit_bytes']) for f in d if f['kind'] == 'denied' and f['subject']['comm'] == 'mrpin_pinner'] == [('process', 'max_pinned', 1 << 20, 64 << 10)]"
ktap_check "oversized_pins_named" has \
	"[f['evidence']['count'] for f in d if f['kind'] == 'oversized' and f['subject']['pid'] == $pinner] == [2]"
ktap_check "misaligned_start_named" has \
	"[(f['evidence']['count'], f['evidence']['length_bytes']) for f in d if f['kind'] == 'misaligned' and f['subject']['pid'] == $pinner] == [(1, 8192)]"
ktap_check "large_pin_not_2m_aligned_named" has \
	"[f['evidence']['count'] >= 1 for f in d if f['kind'] == 'misaligned-2m' and f['subject']['pid'] == $pinner] == [True]"
ktap_check "mr_table_past_the_mark_named" has \
	"[(f['severity'], f['evidence']['mr_table_warn_percent']) for f in d if f['kind'] == 'mr-table' and f['subject']['device'] == 'rxe0'] == [('high', 1)]"
ktap_check "global_limit_nearly_used_named" has \
	"[f['evidence']['limit_percent'] >= 80 for f in d if f['kind'] == 'global-limit'] == [True]"
ktap_check "worst_first" has \
	"[f['severity'] for f in d] == sorted((f['severity'] for f in d), key=['high', 'medium', 'low', 'info'].index)"

# 3. The call sites, symbolized from the -g build with libdwfl.
ktap_check "callsite_oldest_pins_from_reg_site_a" has \
	"[(f['evidence']['caller']['function'], f['evidence']['caller']['file'].endswith('/mrpin_mistakes.c'), f['evidence']['caller']['object'].endswith('/mrpin_mistakes'), f['evidence']['pins']) for f in d if f['kind'] == 'leak-suspect' and f['subject']['pid'] == $sites and f['evidence']['which'] == 'oldest'] == [('reg_site_a', True, True, 50)]"
ktap_check "callsite_biggest_pins_from_reg_site_b" has \
	"[(f['evidence']['caller']['function'], f['evidence']['pins']) for f in d if f['kind'] == 'leak-suspect' and f['subject']['pid'] == $sites and f['evidence']['which'] == 'biggest'] == [('reg_site_b', $need)]"
# A function ends 256 bytes on, or where the other one starts.
inside="lambda x, a, b: a < x < (b if a < b < a + 256 else a + 256)"
ktap_check "callsite_addresses_inside_the_functions" has \
	"sorted(($inside)(f['evidence']['caller']['address'], $site_a, $site_b) + 2 * ($inside)(f['evidence']['caller']['address'], $site_b, $site_a) for f in d if f['kind'] == 'leak-suspect' and f['subject']['pid'] == $sites) == [1, 2]"

doctor
cp "$tmp/out" "$tmp/text"
ktap_check "text_exit_1_one_line_each_with_advice" \
	bash -c "[ $rc = 1 ] && tail -n1 '$tmp/text' | grep -Eq '^[0-9]+ findings: [0-9]+ high, [0-9]+ medium, [0-9]+ low(, [0-9]+ info)?$' && [ \"\$(grep -c '; ' '$tmp/text')\" = \"\$(tail -n1 '$tmp/text' | cut -d' ' -f1)\" ]"
ktap_check "text_names_the_stack_buffer" \
	grep -q "^high  *pid $stack (mrpin_misuse) registered 1 buffer on its stack (rxe_mr_init_user); use heap or mmap memory$" "$tmp/text"
ktap_check "text_names_the_leak" \
	grep -q "^medium  *'mrpin_mistakes' left 100 MRs (400 KiB) to be cleaned up at exit or close since mrpin was loaded, the last at .*; deregister on every path$" "$tmp/text"
ktap_check "text_names_the_4k_pages" \
	grep -q "^medium  *pid $nohuge (mrpin_misuse) pins 100% of its 64.0 MiB on 4 KiB pages; back it with 2 MiB huge pages" "$tmp/text"
if [ -n "$churn_skip" ]; then
	ktap_ok "text_names_the_churn$churn_skip"
else
	ktap_check "text_names_the_churn" \
		grep -Eq "^medium  *pid $churn \(mrpin_misuse\): [0-9]+% of pins live under 1 ms .*; use a registration cache$" "$tmp/text"
fi
ktap_check "text_names_the_function_and_line" \
	grep -Eq "^low  *pid $sites \(mrpin_mistakes\): its oldest live pins \(50 pins, 200 KiB, .*\) were registered from reg_site_a at mrpin_mistakes\.c:[0-9]+ \(mrpin_mistakes\+0x[0-9a-f]+\); " "$tmp/text"
ktap_diag "doctor said:"
sed 's/^/#   /' "$tmp/text"

# 4. The holders gone: the stack buffer stays known from the events.
for h in stack churn nohuge huge pinner sites; do
	mrpin_release "$h"
done
"$CTL" limit reset
doctor -j
ktap_check "stack_buffer_still_named_from_the_events" has \
	"[f['evidence']['stack_pins'] for f in d if f['kind'] == 'stack' and f['subject'].get('pid') == $stack] == [1]"

# 5. Errors, told from findings (1): usage 2, module not loaded 2.
"$CTL" doctor extra >/dev/null 2>"$tmp/err"
rc=$?
ktap_check "usage_error_exit_2" bash -c "[ $rc = 2 ] && grep -q \"doctor: unexpected argument 'extra'\" '$tmp/err'"
rmmod mrpin
doctor
ktap_check "not_loaded_exit_2_one_sentence" \
	bash -c "[ $rc = 2 ] && [ ! -s '$tmp/out' ] && grep -qx \"mrpin is not loaded: run 'modprobe mrpin' (or insmod kmod/mrpin.ko); /sys/kernel/debug/mrpin was not found\" '$tmp/err'"

# 6. A fresh module again, nothing pinned, the default policy: exit 0.
insmod "$MRPIN_KO"
"$CTL" limit reset
doctor
ktap_check "fresh_module_again_exit_0" bash -c "[ $rc = 0 ] && grep -q '^no problems found' '$tmp/out'"

rm -rf "$tmp"
ktap_finish
