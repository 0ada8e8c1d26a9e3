#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A view never lies by omission: when the kernel cannot allocate what
# reading one of mrpin's files needs, the read fails (ENOMEM) or returns
# the whole table, never a part of it, nor a header alone where there are
# rows.  Systematic fault injection (/proc/thread-self/fail-nth) fails the
# first allocation of a read, then the second, and so on until a read
# passes fewer allocations than that, in the reader's own thread only
# (mrpin_failnth_read): every allocation the read makes is failed once,
# and nothing else on the machine fails.  Each file has rows first: a
# process holding MRs with call sites recorded, a program that left its MRs
# to the kernel's cleanup, refusals.
#
# Needs CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB (fail-nth counts the
# allocations failslab looks at: with ignore-gfp-wait=N and cache-filter=N,
# all of them): the debug kernel (make check-debug); elsewhere it skips.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
READER=$here/mrpin_failnth_read
FS=/sys/kernel/debug/failslab
# The files read, each a table with rows once the set-up below ran.
FILES="version devices procs pins stats users cgroups leaks callsites limits"
# More allocations than any read of these makes: the sweep's bound.
MAX_NTH=200

require_root
require_rxe
require_built "$MRPIN_PINNER" "$here/mrpin_mistakes" "$READER"
[ -e /proc/thread-self/fail-nth ] ||
	ktap_skip_all "the kernel has no fault injection (CONFIG_FAULT_INJECTION): make check-debug runs this test"
[ -d $FS ] ||
	ktap_skip_all "the kernel has no failslab (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS): make check-debug runs this test"
mrpin_load
ktap_plan $((2 * $(wc -w <<<"$FILES") + 2))

tmp=$(mktemp -d)
cat "$MRPIN_LIMITS" >"$tmp/policy"
kernel_log_mark
fs_saved=$(for f in verbose ignore-gfp-wait cache-filter; do
	echo "$f $(cat $FS/$f)"
done)
holder_fd=
holder_pid=

cleanup() {
	local f v

	while read -r f v; do
		echo "$v" >$FS/"$f"
	done <<<"$fs_saved"
	if [ -n "$holder_fd" ]; then
		exec {holder_fd}>&-
		wait "$holder_pid"
	fi
	cat "$tmp/policy" >"$MRPIN_LIMITS"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# Rows everywhere: a leak (MRs left to the kernel's cleanup at exit), a
# refusal, and a holder whose MRs have call sites.
"$here/mrpin_mistakes" leak-exit 2 </dev/null >"$tmp/leak.out" 2>&1
printf 'global callsites=on\nprocess max_pinned=64K\n' >"$MRPIN_LIMITS"
"$MRPIN_PINNER" 1M </dev/null >/dev/null 2>&1
printf 'process max_pinned=unlimited\n' >"$MRPIN_LIMITS"
mkfifo "$tmp/holder.in"
"$here/mrpin_mistakes" callsites 2 3 <"$tmp/holder.in" >"$tmp/holder.out" 2>&1 &
holder_pid=$!
exec {holder_fd}>"$tmp/holder.in"
mrpin_wait_ready "$holder_pid" "$tmp/holder.out" ||
	ktap_diag "the holder did not get ready"

# Every allocation that failslab looks at, sleeping ones too, counts for
# fail-nth; no report in the log for the failures made on purpose.
echo 0 >$FS/verbose
echo N >$FS/ignore-gfp-wait
echo N >$FS/cache-filter

# rows FILE: the lines of a table's text but the comments (its header).
rows() {
	text_rows "$1"
}

for name in $FILES; do
	f=$MRPIN_DIR/$name
	out=$tmp/$name
	mkdir "$out"
	cat "$f" >"$out/whole"
	whole=$(rows "$out/whole")
	"$READER" "$f" "$out" $MAX_NTH >"$out/results" 2>"$out/err"
	status=$?
	# Each result: the read failed with ENOMEM, or it read the whole
	# table (as many rows as without a failure; ages and rates may
	# differ).
	bad=
	injected=0
	while read -r n inj result value; do
		[ "$inj" = injected ] && injected=$((injected + 1))
		case $result in
		ok)
			got=$(rows "$out/$n")
			[ "$got" = "$whole" ] ||
				bad+=" allocation $n failed: $got of $whole rows, read without an error;"
			;;
		error)
			[ "$value" = 12 ] ||
				bad+=" allocation $n failed: error $value, not ENOMEM;"
			;;
		esac
	done <"$out/results"
	last=$(tail -n 1 "$out/results")
	ktap_diag "$name: $whole rows; $injected allocations of a read failed in turn; $(grep -c ' error 12$' "$out/results") reads failed with ENOMEM"
	# The sweep ends with a read that passed fewer allocations than N.
	ktap_check "${name}_every_allocation_of_a_read_failed_in_turn" \
		test "$status" = 0 -a "$(cut -d' ' -f2 <<<"$last")" = none
	[ "$status" = 0 ] || ktap_diag "$name: $(head -c 300 "$out/err")"
	ktap_check "${name}_read_failing_is_an_error_or_the_whole_table" \
		test -z "$bad" -a "$whole" -ge 1
	[ -z "$bad" ] || ktap_diag "$name:$bad"
done

ktap_check "tables_have_their_rows_again_after_the_failures" \
	test "$(rows <(cat "$MRPIN_DIR/leaks"))" = "$(rows "$tmp/leaks/whole")"
ktap_check_kernel_log "kernel_log_has_no_new_problems"
ktap_finish
