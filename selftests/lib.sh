# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers for mrpin's shell selftests: KTAP output (the format
# kselftest.h prints), the paths of mrpin's files, and RDMA device set-up.
# Source it; every test runs as root in the test VM.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

MRPIN_DIR=/sys/kernel/debug/mrpin
# The policy's door lockdown leaves open (debugfs' $MRPIN_DIR/limits is the
# other, refused on a locked-down kernel).
MRPIN_LIMITS=/sys/kernel/security/mrpin/limits
MRPIN_KO=${MRPIN_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/kmod/mrpin.ko
MRPIN_CTL=${MRPIN_KO%/kmod/mrpin.ko}/userspace/mrpinctl
# The test programs, built beside the tests.
MRPIN_PINNER=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/mrpin_pinner
MRPIN_LOCKDOWN=/sys/kernel/security/lockdown

ktap_num=0
ktap_failed=0
ktap_failed_names=()
ktap_skipped=0

ktap_plan() {
	ktap_planned=$1
	echo "TAP version 13"
	echo "1..$1"
}

ktap_ok() {
	ktap_num=$((ktap_num + 1))
	echo "ok $ktap_num $*"
}

# ktap_skip NAME REASON: a test point that cannot run here, and why.
ktap_skip() {
	ktap_num=$((ktap_num + 1))
	ktap_skipped=$((ktap_skipped + 1))
	echo "ok $ktap_num $1 # SKIP $2"
}

ktap_fail() {
	ktap_num=$((ktap_num + 1))
	ktap_failed=$((ktap_failed + 1))
	ktap_failed_names+=("$ktap_num ${1%% *}")
	echo "not ok $ktap_num $*"
}

# ktap_check NAME COMMAND...: one test point from a command's status.
ktap_check() {
	local name=$1
	shift
	if "$@"; then
		ktap_ok "$name"
	else
		ktap_fail "$name"
	fi
}

ktap_diag() {
	echo "# $*"
}

# Skip the whole program (KSFT_SKIP) with a reason.
ktap_skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $*"
	exit $KSFT_SKIP
}

# ktap_finish: the totals; a failure when a point failed, or when the
# points run are not the plan (a test that stopped early, or miscounted).
ktap_finish() {
	# Again at the end, where a log's tail shows them.
	[ "$ktap_failed" = 0 ] || echo "# failed: $(IFS=,; echo "${ktap_failed_names[*]}")"
	echo "# Totals: pass:$((ktap_num - ktap_failed - ktap_skipped)) fail:$ktap_failed xfail:0 xpass:0 skip:$ktap_skipped error:0"
	if [ "$ktap_num" != "${ktap_planned:-}" ]; then
		echo "# planned ${ktap_planned:-no} test points, ran $ktap_num"
		exit $KSFT_FAIL
	fi
	[ "$ktap_failed" = 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

# json_holds FILE EXPR: the Python expression EXPR, of d (FILE's JSON),
# holds.  jsonl_holds FILE EXPR: the same with d the list of FILE's lines,
# each a JSON value.  json_value FILE EXPR: print EXPR's value (call one
# of them in the test's own shell first: a $(json_value) alone starts an
# interpreter that ends with its subshell).  One python3 answers
# every call of a test, started at the first (on the debug kernel under
# emulation an interpreter's start-up takes seconds); an error in FILE or
# EXPR is a false answer, and its reason goes to stderr.
json_query() {
	local mode=$1 file=$2 expr=$3 answer

	case "$file$expr" in
	*$'\n'* | *$'\t'*) echo "# json_query: a tab or newline in '$file' '$expr'" >&2; return 2 ;;
	esac
	if [ -z "${JSON_PY_PID:-}" ]; then
		coproc JSON_PY {
			exec python3 -c '
import json, os, sys
# Hold no descriptor of the test but the pipes: a FIFO left open
# here would keep its reader from ever seeing its end.
os.closerange(3, os.sysconf("SC_OPEN_MAX"))
for line in sys.stdin:
    mode, path, expr = line.rstrip("\n").split("\t", 2)
    try:
        with open(path) as f:
            if mode == "lines":
                d = [json.loads(x) for x in f]
            else:
                d = json.load(f)
        value = eval(expr, {"d": d})
        answer = str(value) if mode == "value" else "1" if value else "0"
    except Exception as e:
        print(f"# {path}: {expr}: {type(e).__name__}: {e}", file=sys.stderr)
        answer = "" if mode == "value" else "0"
    print(answer.replace("\n", " "), flush=True)
'
		}
	fi
	printf '%s\t%s\t%s\n' "$mode" "$file" "$expr" >&"${JSON_PY[1]}" &&
		IFS= read -r answer <&"${JSON_PY[0]}" || return 2
	if [ "$mode" = value ]; then
		printf '%s\n' "$answer"
	else
		[ "$answer" = 1 ]
	fi
}

json_holds() {
	json_query holds "$@"
}

jsonl_holds() {
	json_query lines "$@"
}

json_value() {
	json_query value "$@"
}

require_root() {
	[ "$(id -u)" = 0 ] || ktap_skip_all "needs root"
}

# require_built FILE...: skip the test unless each FILE is built.
require_built() {
	local f

	for f in "$@"; do
		# mrpin.ko is not executable; the programs must be.
		if [ "$f" = "$MRPIN_KO" ]; then
			[ -f "$f" ] || ktap_skip_all "$f is not built"
		else
			[ -x "$f" ] || ktap_skip_all "$f is not built"
		fi
	done
}

require_rxe() {
	command -v rdma >/dev/null || ktap_skip_all "the rdma tool (iproute2) is missing"
	modprobe -q rdma_rxe 2>/dev/null ||
		ktap_skip_all "rdma_rxe is not available in this kernel"
}

mrpin_loaded() {
	local name _

	while read -r name _; do
		[ "$name" != mrpin ] || return 0
	done </proc/modules
	return 1
}

# mrpin_load: load mrpin.ko unless it is loaded; skip the test where it is
# not built (the tests that reload it need it either way).
mrpin_load() {
	require_built "$MRPIN_KO"
	mrpin_loaded || insmod "$MRPIN_KO"
}

mrpin_unload() {
	! mrpin_loaded || rmmod mrpin
}

# Print every mrpin file; `events` without waiting for new lines.
mrpin_read_all() {
	local f

	for f in "$MRPIN_DIR"/*; do
		if [ "$(basename "$f")" = events ]; then
			dd if="$f" iflag=nonblock status=none 2>/dev/null
		else
			cat "$f"
		fi
	done
}

# The helpers that tests call over and over read with the shell's own
# read, starting no program: on the debug kernel a program's start and
# exit (awk, grep) costs about a second, a `$(...)` of the shell alone a
# quarter of that.

# mrpin_stat KEY: one value from the `stats` file.
mrpin_stat() {
	local k v _

	while read -r k v _; do
		[ "$k" != "$1" ] || { echo "$v"; return 0; }
	done <"$MRPIN_DIR/stats"
}

# mrpin_stats_are "VALUE..." KEY...: the `stats` values of KEY... are
# VALUE..., in that order; if not, a diagnostic line with what they are.
mrpin_stats_are() {
	local want=$1 got="" key

	shift
	for key; do
		got+="$(mrpin_stat "$key") "
	done
	[ "$got" = "$want " ] || { ktap_diag "$*: $got"; return 1; }
}

# mrpin_rows FILE: the number of rows of an mrpin table (not its header).
mrpin_rows() {
	local n=-1 _

	while IFS= read -r _; do
		n=$((n + 1))
	done <"$MRPIN_DIR/$1"
	echo $((n < 0 ? 0 : n))
}

# text_rows FILE: the number of lines of FILE but its comments (lines
# that begin with #: a table's header).
text_rows() {
	local n=0 line

	while IFS= read -r line || [ -n "$line" ]; do
		[[ "$line" == '#'* ]] || n=$((n + 1))
	done <"$1"
	echo "$n"
}

# until_true WHAT COMMAND...: COMMAND, every half second until it
# succeeds; false, with a diagnostic, after $DEADLINE seconds (default 90).
until_true() {
	local what=$1 deadline=${DEADLINE:-90} end

	shift
	end=$((SECONDS + deadline))
	until "$@"; do
		if [ "$SECONDS" -ge "$end" ]; then
			ktap_diag "$what: not after ${deadline}s"
			return 1
		fi
		sleep 0.5
	done
}

# mrpin_wait_ready PID FILE: wait until FILE has a line "ready"; false,
# with FILE as a diagnostic, if process PID ended first.
mrpin_wait_ready() {
	until grep -q '^ready$' "$2"; do
		if ! kill -0 "$1" 2>/dev/null; then
			ktap_diag "process $1 ended: $(cat "$2")"
			return 1
		fi
		sleep 0.1
	done
}

# mrpin_start_pinner NAME ARGS...: `mrpin_pinner --hold ARGS` in the
# background, its output in $tmp/NAME; its pid in $pid once it is ready.
mrpin_start_pinner() {
	local name=$1

	shift
	: >"$tmp/$name"
	"$(dirname "${BASH_SOURCE[0]}")/mrpin_pinner" --hold "$@" >"$tmp/$name" 2>&1 &
	pid=$!
	mrpin_wait_ready "$pid" "$tmp/$name"
}

# mrpin_hold NAME PROGRAM ARGS...: PROGRAM in the background, holding its
# MRs until mrpin_release NAME closes its stdin (a fifo, $tmp/NAME.in); its
# output in $tmp/NAME.out, its pid in ${mrpin_pids[NAME]} once it said
# "ready" (false, with its output as a diagnostic, if it did not in 30 s).
declare -A mrpin_pids mrpin_fds
mrpin_hold() {
	local name=$1 fd

	shift
	mkfifo "$tmp/$name.in"
	# Without the other holders' fifos, so that each gets its EOF.
	(
		for fd in "${mrpin_fds[@]}"; do
			exec {fd}>&-
		done
		exec "$@" <"$tmp/$name.in" >"$tmp/$name.out" 2>&1
	) &
	mrpin_pids[$name]=$!
	exec {fd}>"$tmp/$name.in"
	mrpin_fds[$name]=$fd
	for _ in $(seq 300); do
		grep -q '^ready' "$tmp/$name.out" && return 0
		sleep 0.1
	done
	ktap_diag "$name did not get ready: $(head -c 300 "$tmp/$name.out")"
	return 1
}

# mrpin_release NAME: let NAME finish (EOF on its stdin) and wait for it.
mrpin_release() {
	local fd=${mrpin_fds[$1]}

	exec {fd}>&-
	wait "${mrpin_pids[$1]}"
}

# ktap_check_kmemleak: kmemleak (the debug kernel's) finds no object that
# mrpin allocated and lost.
ktap_check_kmemleak() {
	local leaks

	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(grep -c 'mrpin' /sys/kernel/debug/kmemleak)
	ktap_diag "kmemleak: $leaks unreferenced objects allocated by mrpin"
	ktap_check "kmemleak_finds_no_mrpin_object" test "$leaks" = 0
}

# The debug kernel (KASAN, lockdep, kmemleak).
mrpin_debug_kernel() {
	[ -e /sys/kernel/debug/kmemleak ]
}

# Short loops: loops that only repeat what they already checked run fewer
# times, on the debug kernel (where every registration costs tens of times
# more) and where MRPIN_LOOPS=short asks for it (`make check`, and all but
# the first kernel of `make check-all`).  A test that shortens its loops
# says so (mrpin_short_loops_diag).
mrpin_short_loops() {
	mrpin_debug_kernel || [ "${MRPIN_LOOPS:-}" = short ]
}

# mrpin_short_loops_diag WHAT: "short loops: WHAT" and why, in the KTAP.
mrpin_short_loops_diag() {
	if mrpin_debug_kernel; then
		ktap_diag "short loops (the debug kernel): $*"
	else
		ktap_diag "short loops (MRPIN_LOOPS=short): $*"
	fi
}

# What a kernel log line reporting a problem matches (an extended regular
# expression, from the list in kernel_problems).
MRPIN_KERNEL_PROBLEMS=$(grep -v -e '^#' -e '^$' "$(dirname "${BASH_SOURCE[0]}")/kernel_problems" |
	paste -sd '|')

# kmsg_read FD: the text of each kernel message logged since the last read
# of the /dev/kmsg open on FD, one a line, and a "kmsg_read:" line where
# the log overwrote messages before they were read.  Unlike counting the
# lines of `dmesg`, this does not change when old lines leave the log.
kmsg_read() {
	local err

	while :; do
		# Each read is one record; dd stops at EAGAIN (all read) or
		# at EPIPE (records lost; the next read goes on from the
		# oldest record left).
		err=$(dd bs=8192 iflag=nonblock status=none <&"$1" 2>&1 >&3) && break
		[[ $err == *'Broken pipe'* ]] || break
		echo "kmsg_read: the kernel log overwrote messages before they were read"
	done 3>&1 | sed -e '/^kmsg_read: /b' -e 's/^[0-9]*,[0-9]*,[0-9]*,[^;]*;//' -e t -e d
}

# kernel_log_mark: from here on, kernel_log_read gathers the kernel's
# messages in $kernel_log.
kernel_log_mark() {
	exec {kernel_log_fd}</dev/kmsg
	kmsg_read "$kernel_log_fd" >/dev/null
	kernel_log=
}

# kernel_log_read: adds the messages logged since its last call to
# $kernel_log (so not in a subshell).
kernel_log_read() {
	kernel_log+=$(kmsg_read "$kernel_log_fd")$'\n'
}

# ktap_check_kernel_log NAME [mrpin|mrpin-but-loads]: a test point that
# passes when no kernel message since kernel_log_mark reports a problem,
# nor (mrpin) names mrpin, nor (mrpin-but-loads) names mrpin other than
# in its load and unload lines; a diagnostic line for each that does.
ktap_check_kernel_log() {
	local found

	kernel_log_read
	found=$(awk -v problems="$MRPIN_KERNEL_PROBLEMS" -v mode="${2:-}" '
		$0 ~ problems { print; next }
		mode == "" || !/mrpin/ { next }
		mode == "mrpin-but-loads" &&
			(/^mrpin [^ ]*: (tracking RDMA memory pins|unloaded)$/ ||
			 /^mrpin: (loading out-of-tree module taints kernel|module verification failed)/) { next }
		{ print }' <<<"$kernel_log" | head -n 10)
	[ -z "$found" ] || sed 's/^/# kernel log: /' <<<"$found"
	ktap_check "$1" test -z "$found"
}

# mrpin_moddir_writable DIR: an overlay on the guest's module tree DIR
# (read-only, the cache's), upper on a tmpfs under $tmp/m; overlay=1 once
# it is mounted.  False, with a diagnostic, if it cannot be made.
mrpin_moddir_writable() {
	if mkdir -p "$tmp/m" && mount -t tmpfs tmpfs "$tmp/m" &&
		mkdir -p "$tmp/m/upper" "$tmp/m/work" &&
		mount -t overlay overlay \
			-o "lowerdir=$1,upperdir=$tmp/m/upper,workdir=$tmp/m/work" "$1"; then
		overlay=1
		return 0
	fi
	ktap_diag "cannot make $1 writable"
	return 1
}

# mrpin_moddir_restore DIR: undo mrpin_moddir_writable DIR, if it was done.
mrpin_moddir_restore() {
	if [ -n "${overlay:-}" ]; then
		umount "$1"
		umount "$tmp/m"
		overlay=
	fi
}
