#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin's benchmarks: what tracking costs the registration path, in time
# and in instructions the emulator counts, kernel memory per pin, the cost
# of reading the debugfs views, registration latency while `pins` is read,
# the first registration of a new process while `procs` is read, as the
# records of earlier processes pile up, and with 65,536 users and 50,000
# cgroups in mrpin's owner tables.  Runs as root in the test VM
# (`make bench`) with rxe0 up and mrpin loaded; switches mrpin off and on
# (rmmod/insmod) so that loaded (A) and unloaded (B) runs alternate in one
# boot, in pairs whose order alternates too (A B, B A, ...).  A report: no
# pass/fail thresholds.
#
#   bench.sh [-r ROUNDS] [-s SECONDS] [-m ROUNDS] [-n PINS] [-k READS]
#            [-l SECONDS] [-L ROUNDS] [-p PROCS] [-f NEWCOMERS]
#            [-N NEWCOMERS] [-S STEP] [-i PAIRS] [-H HELD] [-U USERS]
#            [-C CGROUPS] [-d DEV] [-v] [SECTION...]
#
#   SECTION: throughput (1), memory (2), reads (3), latency (4), procs (5),
#   newcomers (6), insns (7: only in a VM with QEMU's counting plugin,
#   scripts/vm-run.sh --insns), owners (8); default all of them, in that
#   order.
#
#   -r  A/B rounds of the throughput runs (default 11)
#   -s  seconds per throughput run (default 2)
#   -m  A/B rounds of the memory measurement (default 3)
#   -n  the largest pin count of the read-time and latency runs (default
#       100000; the others are 1/100 and 1/10 of it)
#   -k  reads per file and pin count (default 7)
#   -l  seconds per latency run (default 5)
#   -L  rounds of the latency runs (default 3; also of section 5's)
#   -p  processes holding a pin each in section 5 (default 1000)
#   -f  newcomers per run in section 5 (default 200)
#   -N  newcomers per kind in section 6 (default 2000)
#   -i  4 KiB pairs per count in section 7 (default 2000; a quarter of it
#       at 2 MiB, a tenth at 64 MiB)
#   -S  newcomers per line of section 6 (default 500)
#   -H  MRs a process holds while section 7 counts the union's cost
#       (default 1000, then ten times that)
#   -U  users holding a pin each in section 8 (default 65536)
#   -C  cgroups with a parked record each in section 8 (default 50000)
#   -d  the RDMA device (default rxe0)
#   -v  print every raw result on stderr (and 40 functions, not 12, in 7)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

cmdline="$0${*:+ $*}"
rounds=11
run_s=2
mem_rounds=5
mem_pins=10000
max_pins=100000
reads=7
lat_s=5
lat_rounds=3
procs_n=1000
procs_first=200
newcomers=2000
newcomers_step=500
insns_pairs=2000
insns_held=1000
owner_users=65536
owner_cgroups=50000
dev=rxe0
verbose=0

usage() {
	sed -n '/^#   bench.sh/,/^#   -v/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while getopts "r:s:m:n:k:l:L:p:f:N:S:i:H:U:C:d:vh" opt; do
	case "$opt" in
	r) rounds=$OPTARG ;;
	s) run_s=$OPTARG ;;
	m) mem_rounds=$OPTARG ;;
	n) max_pins=$OPTARG ;;
	k) reads=$OPTARG ;;
	l) lat_s=$OPTARG ;;
	L) lat_rounds=$OPTARG ;;
	p) procs_n=$OPTARG ;;
	f) procs_first=$OPTARG ;;
	N) newcomers=$OPTARG ;;
	S) newcomers_step=$OPTARG ;;
	i) insns_pairs=$OPTARG ;;
	H) insns_held=$OPTARG ;;
	U) owner_users=$OPTARG ;;
	C) owner_cgroups=$OPTARG ;;
	d) dev=$OPTARG ;;
	v) verbose=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
all_sections="throughput memory reads latency procs newcomers insns owners"
# shellcheck disable=SC2086
[ $# -gt 0 ] || set -- $all_sections
declare -A run
for section; do
	[[ " $all_sections " == *" $section "* ]] || usage
	run[$section]=1
done

# want SECTION: the section was asked for.
want() {
	[ -n "${run[$1]:-}" ]
}

bench=$here/mrpin_bench
die() {
	echo "bench.sh: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (in the test VM: make bench)"
[ -x "$bench" ] || die "$bench is not built (run make)"
[ -f "$MRPIN_KO" ] || die "$MRPIN_KO is not built (run make)"
[ -e "/sys/class/infiniband/$dev" ] || die "RDMA device $dev not found"

tmp=$(mktemp -d /tmp/mrpin-bench.XXXXXX)
t_start=$EPOCHREALTIME

# --- helpers -----------------------------------------------------------

# The median of the arguments (the mean of the middle two for an even
# count).
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2];
		      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# (max - min) / median of the arguments, in percent.
spread() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.0f", m ? 100 * (v[NR] - v[1]) / m : 0 }'
}

max() {
	printf '%s\n' "$@" | sort -g | tail -n 1
}

min() {
	printf '%s\n' "$@" | sort -g | head -n 1
}

# Raw results on stderr with -v.
verbose() {
	[ "$verbose" = 1 ] && echo "bench: $*" >&2
	return 0
}

# calc EXPR: awk arithmetic, printed with %.6g unless the expression
# formats itself.
calc() {
	awk "BEGIN { print $1 }"
}

# kv KEY LINE: the value of KEY=... in a line of mrpin_bench output.
kv() {
	sed -n "s/.*\\<$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

human_size() {
	awk -v b="$1" 'BEGIN {
		if (b >= 1048576 && b % 1048576 == 0) printf "%d MiB", b / 1048576;
		else if (b >= 1024 && b % 1024 == 0) printf "%d KiB", b / 1024;
		else printf "%d B", b }'
}

now() {
	echo "$EPOCHREALTIME"
}

set_state() {
	case "$1" in
	loaded) mrpin_load || die "insmod $MRPIN_KO failed" ;;
	unloaded) mrpin_unload || die "rmmod mrpin failed" ;;
	esac
}

# run_bench ARGS...: run mrpin_bench; its output goes to $out.
run_bench() {
	out=$("$bench" -d "$dev" "$@") || die "mrpin_bench $* failed"
}

# Holders: `mrpin_bench hold N` (or `procs N`) processes, each fed by a
# FIFO that this shell keeps open; closing it makes the holder release its
# pins and exit.
holder_pids=()
holder_fds=()
holder_outs=()

# hold_start hold|procs N: one more holder.
hold_start() {
	local i=${#holder_pids[@]} fifo fd

	fifo=$tmp/hold.$i
	mkfifo "$fifo" || die "mkfifo failed"
	"$bench" -d "$dev" "$@" <"$fifo" >"$fifo.out" 2>&1 &
	holder_pids+=($!)
	holder_outs+=("$fifo.out")
	exec {fd}>"$fifo"
	holder_fds+=("$fd")
}

# Wait until every holder has printed "ready".
hold_wait() {
	local i

	for i in "${!holder_pids[@]}"; do
		until grep -q '^ready' "${holder_outs[$i]}"; do
			kill -0 "${holder_pids[$i]}" 2>/dev/null ||
				die "holder $i died: $(cat "${holder_outs[$i]}")"
			sleep 0.1
		done
	done
}

hold_release_all() {
	local i fd status=0

	for fd in "${holder_fds[@]}"; do
		exec {fd}>&-
	done
	for i in "${!holder_pids[@]}"; do
		wait "${holder_pids[$i]}" || status=1
	done
	holder_pids=()
	holder_fds=()
	holder_outs=()
	rm -f "$tmp"/hold.*
	[ "$status" = 0 ] || die "a holder failed"
}

reader_pid=

cleanup() {
	local pid fd

	[ -n "$reader_pid" ] && : >"$tmp/stop"
	for fd in "${holder_fds[@]}"; do
		exec {fd}>&-
	done
	for pid in "${holder_pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	wait
	mrpin_load
	rm -rf "$tmp"
}
trap cleanup EXIT

meminfo() {
	awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo
}

settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1
}

# The /proc/slabinfo line of the cache mrpin_pin objects come from:
# mrpin_pin's own, or the cache SLUB merged it into (whose name is the one
# alias of /sys/kernel/slab/mrpin_pin that /proc/slabinfo lists).
pin_cache_name() {
	local target alias

	if grep -q '^mrpin_pin ' /proc/slabinfo; then
		echo mrpin_pin
		return
	fi
	target=$(readlink /sys/kernel/slab/mrpin_pin 2>/dev/null) || return 1
	for alias in /sys/kernel/slab/*; do
		if [ ! -L "$alias" ] || [ "$(readlink "$alias")" != "$target" ]; then
			continue
		fi
		alias=${alias##*/}
		if grep -q "^$alias " /proc/slabinfo; then
			echo "$alias"
			return
		fi
	done
	return 1
}

# slab_field CACHE N: field N of the cache's /proc/slabinfo line
# (2 active_objs, 3 num_objs, 4 objsize, 5 objperslab, 6 pagesperslab,
# 15 num_slabs).
slab_field() {
	awk -v c="$1" -v f="$2" '$1 == c { print $f }' /proc/slabinfo
}

rule() {
	printf '%.0s-' {1..78}
	echo
}

# --- header --------------------------------------------------------------

echo "mrpin benchmark"
echo "command:  $cmdline   (cwd $PWD)"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "kernel:   $(uname -r), $(nproc) CPUs, $(($(meminfo MemTotal) / 1024)) MiB RAM," \
	"THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
echo "mrpin:    $(cat "$MRPIN_DIR/version" 2>/dev/null || echo '?') ($MRPIN_KO)"
echo "device:   $dev"
echo "counts:   throughput $rounds A/B rounds x ${run_s} s per run;" \
	"memory $mem_rounds A/B rounds x $mem_pins pins;"
echo "          reads: $reads per file at $((max_pins / 100)), $((max_pins / 10))," \
	"$max_pins pins; latency $lat_rounds rounds x ${lat_s} s per variant;"
echo "          first pins: $procs_n processes, $procs_first newcomers x" \
	"$lat_rounds rounds per variant; $newcomers newcomers per kind;"
echo "          instructions: $insns_pairs 4 KiB pairs per count"
echo "sections: $*"
echo "A = mrpin loaded, B = mrpin unloaded, in pairs A B, B A, ... in this boot."
echo

mrpin_load || die "insmod $MRPIN_KO failed"

# --- 1. registration throughput ----------------------------------------

section_throughput() {
	local sizes=(4096 65536 2097152 67108864) controls=(4096 2097152)
	local r threads size state first second
	local -A rate last

	for r in $(seq "$rounds"); do
		# ABBA: odd rounds run loaded first, even rounds unloaded first,
		# so that neither side always has the warmer caches.
		if [ $((r % 2)) = 1 ]; then
			first=loaded second=unloaded
		else
			first=unloaded second=loaded
		fi
		for threads in 1 2; do
			for size in "${sizes[@]}"; do
				for state in "$first" "$second"; do
					set_state "$state"
					run_bench regdereg "$size" "$threads" "$run_s"
					verbose "round $r $state $out"
					rate[$state,$size,$threads]+=" $(kv rate "$out")"
					last[$state]=$(kv rate "$out")
				done
				# Time with over time without: the inverse rates.
				rate[ratio,$size,$threads]+=" $(calc "${last[unloaded]} / ${last[loaded]}")"
			done
		done
		# The control: two unloaded runs back to back, what the same
		# code measures against itself (A/A).
		set_state unloaded
		for size in "${controls[@]}"; do
			run_bench regdereg "$size" 1 "$run_s"
			last[a]=$(kv rate "$out")
			run_bench regdereg "$size" 1 "$run_s"
			verbose "round $r control $size ${last[a]} $(kv rate "$out")"
			rate[control,$size]+=" $(calc "${last[a]} / $(kv rate "$out")")"
		done
	done
	set_state loaded

	rule
	echo "1. ibv_reg_mr + ibv_dereg_mr throughput"
	echo "   mrpin_bench regdereg SIZE THREADS $run_s: registrations/s summed over the"
	echo "   threads; $rounds pairs per row, each pair back to back (rmmod/insmod"
	echo "   between runs), loaded first in odd rounds and unloaded first in even"
	echo "   ones (ABBA).  Medians; spread = (max - min) / median; ratio = time"
	echo "   with mrpin over time without it (unloaded rate / loaded rate), the"
	echo "   median of the $rounds per-pair ratios, with their range.  Control: two"
	echo "   unloaded runs per pair (A/A), the noise of the ratio"
	echo
	printf '   %-7s %3s %12s %7s %12s %7s %9s %14s\n' size thr \
		"loaded /s" spread "unloaded /s" spread "time ratio" "pair range"
	for threads in 1 2; do
		for size in "${sizes[@]}"; do
			# shellcheck disable=SC2086
			printf '   %-7s %3d %12.1f %6s%% %12.1f %6s%% %9.3f %6.2f - %5.2f\n' \
				"$(human_size "$size")" "$threads" \
				"$(median ${rate[loaded,$size,$threads]})" \
				"$(spread ${rate[loaded,$size,$threads]})" \
				"$(median ${rate[unloaded,$size,$threads]})" \
				"$(spread ${rate[unloaded,$size,$threads]})" \
				"$(median ${rate[ratio,$size,$threads]})" \
				"$(min ${rate[ratio,$size,$threads]})" \
				"$(max ${rate[ratio,$size,$threads]})"
		done
	done
	for size in "${controls[@]}"; do
		# shellcheck disable=SC2086
		printf '   %-7s %3d %12s %7s %12s %7s %9.3f %6.2f - %5.2f\n' \
			"$(human_size "$size")" 1 "A/A" "" "control" "" \
			"$(median ${rate[control,$size]})" \
			"$(min ${rate[control,$size]})" "$(max ${rate[control,$size]})"
	done
	echo
}

# --- 2. kernel memory per pin ----------------------------------------------

section_memory() {
	declare -A mem
	local round
	cache=
	# Round 0 is not counted: the first pins of the boot, loaded and not,
	# grow caches that later rounds find ready (about 40 bytes a pin more,
	# in round 0 only).
	for round in $(seq 0 "$mem_rounds"); do
		for state in loaded unloaded; do
			set_state "$state"
			# Before the first snapshot: finding a merged cache reads
			# /sys/kernel/slab, whose dentries and inodes are slab too.
			if [ "$state" = loaded ]; then
				cache=$(pin_cache_name) || die "no slab cache for mrpin_pin"
			fi
			settle
			slab0=$(meminfo Slab)
			sunr0=$(meminfo SUnreclaim)
			if [ "$state" = loaded ]; then
				act0=$(slab_field "$cache" 2)
				nsl0=$(slab_field "$cache" 15)
			fi
			hold_start hold "$mem_pins"
			hold_wait
			settle
			slab1=$(meminfo Slab)
			sunr1=$(meminfo SUnreclaim)
			verbose "round $round $state Slab $slab0 -> $slab1 kB," \
				"SUnreclaim $sunr0 -> $sunr1 kB"
			if [ "$round" = 0 ]; then
				hold_release_all
				continue
			fi
			if [ "$state" = loaded ]; then
				line=$(grep "^$cache " /proc/slabinfo)
				act1=$(slab_field "$cache" 2)
				nsl1=$(slab_field "$cache" 15)
				objsize=$(slab_field "$cache" 4)
				pps=$(slab_field "$cache" 6)
				if [ "$cache" = mrpin_pin ]; then
					# Its own cache: every object is a pin record.
					act0=0
					nsl0=0
				fi
				mem[objs]+=" $(calc "($act1 - $act0) * $objsize / $mem_pins")"
				mem[slabs]+=" $(calc "($nsl1 - $nsl0) * $pps * 4096 / $mem_pins")"
				pins=$(mrpin_stat pins)
				[ "$pins" = "$mem_pins" ] ||
					die "mrpin counts $pins pins, expected $mem_pins"
			fi
			mem[$state,slab]+=" $(calc "($slab1 - $slab0) * 1024 / $mem_pins")"
			mem[$state,sunr]+=" $(calc "($sunr1 - $sunr0) * 1024 / $mem_pins")"
			hold_release_all
		done
	done
	set_state loaded

	rule
	echo "2. Kernel memory per tracked pin"
	echo "   mrpin_bench hold $mem_pins (4 KiB MRs, one process); median of" \
		"$mem_rounds A/B rounds after one not counted"
	echo
	if [ "$cache" = mrpin_pin ]; then
		echo "   /proc/slabinfo with $mem_pins pins held (mrpin loaded):"
	else
		echo "   mrpin_pin has no line of its own in /proc/slabinfo: SLUB merged it into"
		echo "   '$cache' (same object size and flags).  Per-pin figures are"
		echo "   that cache's growth from 0 to $mem_pins pins.  Its line with the pins held:"
	fi
	echo "     $(tr -s ' ' <<<"$line")"
	echo
	# shellcheck disable=SC2086
	{
		objs=$(median ${mem[objs]})
		slabs=$(median ${mem[slabs]})
}
printf '   %-44s %8d B\n' "objsize" "$objsize"
printf '   %-44s %8.1f B\n' "active_objs * objsize / pins" "$objs"
printf '   %-44s %8.1f B\n' "num_slabs * pagesperslab * 4096 / pins" "$slabs"
echo
echo "   /proc/meminfo growth per pin, 0 -> $mem_pins pins (bytes per pin):"
printf '   %-20s %10s %10s %12s\n' "" loaded unloaded "difference"
for k in slab sunr; do
	case "$k" in
	slab) label="Slab" ;;
	sunr) label="SUnreclaim" ;;
	esac
	# shellcheck disable=SC2086
	{
		l=$(median ${mem[loaded,$k]})
		u=$(median ${mem[unloaded,$k]})
	}
	printf '   %-20s %8.1f B %8.1f B %10.1f B\n' "$label" "$l" "$u" \
		"$(calc "$l - $u")"
done
echo "   (difference = loaded - unloaded: mrpin's share.  Slab includes its pin"
echo "   records, the xarray's nodes (radix_tree_node, reclaimable) and the"
echo "   rhashtable's bucket array when kvmalloc() got it from kmalloc; the rest"
echo "   is rxe and ib_core's own cost of an MR.)"
echo

}

# --- 3. read time of pins and procs ------------------------------------------

# read_ms FILE: the wall time of one `cat FILE > /dev/null`, in ms.
read_ms() {
	local t0 t1

	t0=$(now)
	cat "$1" >/dev/null
	t1=$(now)
	calc "($t1 - $t0) * 1000"
}

# hold_up_to N: holders with N pins in all (sections 3 and 4).
held=0
hold_s=0
hold_up_to() {
	local n=$1 add=$(($1 - held)) t0

	[ "$add" -gt 0 ] || return 0
	t0=$(now)
	if [ "$add" -ge 20000 ]; then
		# Both vCPUs: two holders in parallel.
		hold_start hold $((add / 2))
		hold_start hold $((add - add / 2))
	else
		hold_start hold "$add"
	fi
	hold_wait
	hold_s=$(calc "$hold_s + $(now) - $t0")
	held=$n
}

section_reads() {
	levels=($((max_pins / 100)) $((max_pins / 10)) "$max_pins")
	declare -A rd
	for n in "${levels[@]}"; do
		hold_up_to "$n"
		pins=$(mrpin_stat pins)
		[ "$pins" = "$n" ] || die "mrpin counts $pins pins, expected $n"
		p=()
		q=()
		for i in $(seq "$reads"); do
			p+=("$(read_ms "$MRPIN_DIR/pins")")
			q+=("$(read_ms "$MRPIN_DIR/procs")")
		done
		verbose "$n pins: pins ${p[*]} ms; procs ${q[*]} ms"
		rd[$n,pins]=$(median "${p[@]}")
		rd[$n,procs]=$(median "${q[@]}")
		rd[$n,bytes]=$(wc -c <"$MRPIN_DIR/pins")
		rd[$n,lines]=$(wc -l <"$MRPIN_DIR/pins")
		rd[$n,plines]=$(wc -l <"$MRPIN_DIR/procs")
	done

	rule
	echo "3. Time to read the debugfs views (mrpin loaded)"
	echo "   cat FILE > /dev/null, wall time including fork+exec of cat, median of"
	echo "   $reads reads; pins held by ${#holder_pids[@]} mrpin_bench hold processes"
	echo
	printf '   %9s %11s %13s %13s %13s\n' "live pins" "pins lines" \
		"pins size" "pins read" "procs read"
	for n in "${levels[@]}"; do
		printf '   %9d %11d %9.1f KiB %10.1f ms %10.1f ms\n' "$n" \
			"${rd[$n,lines]}" "$(calc "${rd[$n,bytes]} / 1024")" \
			"${rd[$n,pins]}" "${rd[$n,procs]}"
	done
	lo=${levels[1]}
	printf '   pins: %.2f us per line from %d to %d pins; procs has %d lines throughout\n' \
		"$(calc "(${rd[$max_pins,pins]} - ${rd[$lo,pins]}) * 1000 / ($max_pins - $lo)")" \
		"$lo" "$max_pins" "$((${rd[$max_pins,plines]} - 1))"
	echo
	if ! want latency; then
		hold_release_all
		held=0
	fi
}

# --- 4. registration latency while pins is read ------------------------------

# reader_start FILE: a loop of `cat FILE > /dev/null` in the background,
# until reader_stop.
reader_start() {
	rm -f "$tmp/stop" "$tmp/reads"
	(
		n=0
		while [ ! -e "$tmp/stop" ]; do
			cat "$1" >/dev/null
			n=$((n + 1))
		done
		echo "$n" >"$tmp/reads"
	) &
	reader_pid=$!
}

# reader_stop: stop the loop after its current read; the number of reads
# it completed goes to $reader_reads.  (Not in a $(...) subshell: the loop
# is this shell's child.)
reader_stop() {
	: >"$tmp/stop"
	wait "$reader_pid"
	reader_pid=
	reader_reads=$(cat "$tmp/reads")
}

section_latency() {
	variants=(none procs pins)
	declare -A lat
	hold_up_to "$max_pins"
	# And $procs_n processes holding a pin each: procs has that many rows.
	hold_start procs "$procs_n"
	hold_wait
	for _ in $(seq "$lat_rounds"); do
		for v in "${variants[@]}"; do
			[ "$v" = none ] || reader_start "$MRPIN_DIR/$v"
			run_bench latency "$lat_s"
			if [ "$v" != none ]; then
				reader_stop
				lat[$v,reads]+=" $reader_reads"
			fi
			verbose "reader $v: $out${lat[$v,reads]:+ reads${lat[$v,reads]}}"
			lat[$v,med]+=" $(kv median_us "$out")"
			lat[$v,p99]+=" $(kv p99_us "$out")"
			lat[$v,max]+=" $(kv max_us "$out")"
			lat[$v,count]+=" $(kv count "$out")"
		done
	done
	hold_release_all
	held=0

	rule
	echo "4. Registration latency with $max_pins pins held by a few processes and"
	echo "   $procs_n processes holding one pin each (mrpin loaded)"
	echo "   mrpin_bench latency $lat_s: one 4 KiB ibv_reg_mr + ibv_dereg_mr at a time;"
	echo "   $lat_rounds runs per variant, interleaved; a second process loops"
	echo "   cat FILE > /dev/null on the other vCPU.  worst/med: the worst of"
	echo "   all runs over the median of the medians"
	echo
	printf '   %-19s %9s %9s %11s %11s %11s %11s %9s\n' "concurrent reader" \
		"reads/run" "regs/run" "median" "p99" "worst" "worst of" "worst/med"
	printf '   %-19s %9s %9s %11s %11s %11s %11s\n' "" "" "" "(median)" \
		"(median)" "(median)" "all runs"
	for v in "${variants[@]}"; do
		case "$v" in
		none) label="none"; nr="-" ;;
		*)
			label="cat $v loop"
			# shellcheck disable=SC2086
			nr=$(median ${lat[$v,reads]})
			;;
		esac
		# shellcheck disable=SC2086
		printf '   %-19s %9s %9.0f %8.1f us %8.1f us %8.1f us %8.1f us %9.1f\n' \
			"$label" "$nr" "$(median ${lat[$v,count]})" \
			"$(median ${lat[$v,med]})" "$(median ${lat[$v,p99]})" \
			"$(median ${lat[$v,max]})" "$(max ${lat[$v,max]})" \
			"$(calc "$(max ${lat[$v,max]}) / $(median ${lat[$v,med]})")"
	done
	echo
}

# --- 5. a new process's first pin while procs is read ---------------------

section_procs() {
	local v label nr t0 ready procs_ms
	local variants=(none procs pins)
	local -A fp

	# The processes, each holding a pin: one line each in procs.
	t0=$(now)
	hold_start procs "$procs_n"
	hold_wait
	ready=$(calc "$(now) - $t0")
	[ "$(($(wc -l <"$MRPIN_DIR/procs") - 1))" -ge "$procs_n" ] ||
		die "procs has fewer than $procs_n lines"
	procs_ms=$(read_ms "$MRPIN_DIR/procs")

	for _ in $(seq "$lat_rounds"); do
		for v in "${variants[@]}"; do
			[ "$v" = none ] || reader_start "$MRPIN_DIR/$v"
			run_bench first "$procs_first" "$procs_first" exit
			if [ "$v" != none ]; then
				reader_stop
				fp[$v,reads]+=" $reader_reads"
			fi
			verbose "first pins, reader $v: $out"
			fp[$v,med]+=" $(kv median_us "$out")"
			fp[$v,p90]+=" $(kv p90_us "$out")"
			fp[$v,max]+=" $(kv max_us "$out")"
		done
	done
	hold_release_all

	rule
	echo "5. First registration of a new process, $procs_n processes holding a pin each"
	echo "   mrpin_bench procs $procs_n (ready in $(printf '%.1f' "$ready") s; one cat procs:" \
		"$(printf '%.1f' "$procs_ms") ms);"
	echo "   mrpin_bench first $procs_first $procs_first exit: $procs_first new processes one"
	echo "   after another, each timing its first 4 KiB ibv_reg_mr (a new owner"
	echo "   record); $lat_rounds runs per variant, interleaved; a second process loops"
	echo "   cat FILE > /dev/null (pins: a control for the CPU load of the loop)"
	echo
	printf '   %-19s %9s %11s %11s %11s %11s\n' "concurrent reader" \
		"reads/run" "median" "p90" "worst" "worst of"
	printf '   %-19s %9s %11s %11s %11s %11s\n' "" "" "(median)" \
		"(median)" "(median)" "all runs"
	for v in "${variants[@]}"; do
		case "$v" in
		none) label="none"; nr="-" ;;
		*)
			label="cat $v loop"
			# shellcheck disable=SC2086
			nr=$(median ${fp[$v,reads]})
			;;
		esac
		# shellcheck disable=SC2086
		printf '   %-19s %9s %8.1f us %8.1f us %8.1f us %8.1f us\n' \
			"$label" "$nr" "$(median ${fp[$v,med]})" \
			"$(median ${fp[$v,p90]})" "$(median ${fp[$v,max]})" \
			"$(max ${fp[$v,max]})"
	done
	echo
}

# --- 6. a new process's first pin as earlier ones pile up ----------------

section_newcomers() {
	local kind line n i
	local kinds=(exit park cgroup)
	local -A nc
	local -a counts

	for kind in "${kinds[@]}"; do
		run_bench first "$newcomers" "$newcomers_step" "$kind"
		verbose "newcomers $kind: $out"
		i=0
		while read -r line; do
			n=$(kv procs "$line")
			counts[i]=$n
			nc[$kind,$i,med]=$(kv median_us "$line")
			nc[$kind,$i,max]=$(kv max_us "$line")
			i=$((i + 1))
		done <<<"$out"
	done

	rule
	echo "6. First registration of a new process as earlier ones pile up"
	echo "   mrpin_bench first $newcomers $newcomers_step KIND: $newcomers new processes one after"
	echo "   another, each timing its first 4 KiB ibv_reg_mr; median and worst of"
	echo "   each $newcomers_step.  exit: each exits before the next comes.  park: each"
	echo "   stays alive without pins (its record stays, parked).  cgroup: each in"
	echo "   a new cgroup of its own, kept until the end, and exits (its cgroup's"
	echo "   record stays, parked)"
	echo
	printf '   %10s' "processes"
	for kind in "${kinds[@]}"; do
		printf ' %23s' "$kind: median / worst"
	done
	echo
	for i in "${!counts[@]}"; do
		printf '   %10s' "<= ${counts[i]}"
		for kind in "${kinds[@]}"; do
			printf ' %11.1f /%8.1f us' "${nc[$kind,$i,med]}" \
				"${nc[$kind,$i,max]}"
		done
		echo
	done
	echo
}

# --- 7. instructions per registration, counted ---------------------------

# What qemu_insns.c (the QEMU plugin of vm-run.sh --insns) writes as the
# guest's marked windows end.
insns_file=/run/mrpin-host/insns

# insns_window WINDOW: wait until the plugin has written WINDOW's end.
insns_window() {
	local i

	for i in $(seq 100); do
		grep -q "^end $1 " "$insns_file" && return
		sleep 0.1
	done
	die "no count for window $1 in $insns_file"
}

section_insns() {
	local size state pairs window=0 run order
	local -A size_pairs=([4096]=$insns_pairs [2097152]=$((insns_pairs / 4))
		[67108864]=$((insns_pairs / 10 > 0 ? insns_pairs / 10 : 1)))

	rule
	echo "7. Instructions per ibv_reg_mr + ibv_dereg_mr, counted by the emulator"
	if [ ! -f "$insns_file" ]; then
		echo "   not counted: QEMU runs without the counting plugin (make bench runs"
		echo "   this section in a VM of its own: scripts/vm-run.sh --insns)"
		echo
		return
	fi
	echo "   mrpin_bench insns SIZE PAIRS WINDOW: one thread, PAIRS pairs (4K $insns_pairs,"
	echo "   2M ${size_pairs[2097152]}, 64M ${size_pairs[67108864]}) between two marks, after a warm-up;"
	echo "   every instruction QEMU runs in the window on CPU 0, where the program"
	echo "   runs, counted per translated block (selftests/qemu_insns.c); mrpin's own are"
	echo "   those of blocks in its text (/proc/kallsyms).  Two runs of each (A B B"
	echo "   A: with, without, without, with), each a process of its own.  Then"
	echo "   4K with the process holding $insns_held and $((insns_held * 10)) MRs on other pages"
	echo "   (disjoint) or $((insns_held * 10)) on the pair's own page (same): what the"
	echo "   union of pinned ranges (distinct.c) costs as a process's pins grow"
	echo
	: >"$tmp/insns.manifest"
	for size in 4096 2097152 67108864; do
		pairs=${size_pairs[$size]}
		for order in "loaded 1" "unloaded 1" "unloaded 2" "loaded 2"; do
			read -r state run <<<"$order"
			set_state "$state"
			window=$((window + 1))
			run_bench insns "$size" "$pairs" "$window"
			verbose "insns $state $out"
			insns_window "$window"
			cp /proc/kallsyms "$tmp/kallsyms.$window"
			echo "$window $size $run $([ "$state" = loaded ] && echo 1 || echo 0)" \
				"$pairs $tmp/kallsyms.$window" >>"$tmp/insns.manifest"
			[ "$size" -lt 2097152 ] || [ "$(kv anon_huge_kb "$out")" -gt 0 ] ||
				echo "   (no huge page backed the $(human_size "$size") buffer of window $window)"
		done
	done
	# The union of pinned ranges as the process holds more pins.
	set_state loaded
	for held in "$insns_held disjoint" "$((insns_held * 10)) disjoint" \
		"$((insns_held * 10)) same"; do
		read -r n kind <<<"$held"
		window=$((window + 1))
		run_bench insns 4096 "$insns_pairs" "$window" "$n" "$kind"
		verbose "insns held $n $kind $out"
		insns_window "$window"
		cp /proc/kallsyms "$tmp/kallsyms.$window"
		echo "$window 4096 1 1 $insns_pairs $tmp/kallsyms.$window $n $kind" \
			>>"$tmp/insns.manifest"
	done
	python3 "$here/insns_report.py" "$insns_file" "$tmp/insns.manifest" \
		"$([ "$verbose" = 1 ] && echo 40 || echo 12)" |
		sed 's/^/   /' || die "insns_report.py failed"
	echo
}

# --- 8. registration with many owners -----------------------------------

section_owners() {
	local none full counts

	set_state loaded
	run_bench owners "$owner_users" "$owner_cgroups" "$lat_s"
	verbose "owners: $out"
	none=$(grep 'state=none' <<<"$out")
	full=$(grep 'state=full' <<<"$out")
	counts=$(grep 'users=' <<<"$out")

	rule
	echo "8. Registration with many owners in mrpin's tables"
	echo "   mrpin_bench owners $owner_users $owner_cgroups $lat_s: 4 KiB reg + dereg for ${lat_s} s,"
	echo "   before, then with $owner_users users holding a pin each (one process,"
	echo "   setresuid to each uid) and $owner_cgroups live cgroups whose records are"
	echo "   parked (a registration in each, then left)"
	echo
	printf '   %-34s %10s %10s %10s\n' "" "median" "p99" "worst"
	printf '   %-34s %7.1f us %7.1f us %7.1f us\n' "no other owner" \
		"$(kv median_us "$none")" "$(kv p99_us "$none")" "$(kv max_us "$none")"
	printf '   %-34s %7.1f us %7.1f us %7.1f us\n' \
		"$owner_users users, $owner_cgroups cgroups" \
		"$(kv median_us "$full")" "$(kv p99_us "$full")" "$(kv max_us "$full")"
	echo
	echo "   making them: $(kv users_s "$counts") s for the users' pins," \
		"$(kv cgroups_s "$counts") s for the cgroups' records"
	echo
}

for section; do
	"section_$section"
done

rule
printf 'total: %.0f s in the VM\n' "$(calc "$(now) - $t_start")"
echo
