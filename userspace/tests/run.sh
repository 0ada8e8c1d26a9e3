#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of mrpinctl, without the module: the parsers and formatters
# against recorded debugfs snapshots (snapshots/), bad command lines
# (bad-args.txt) and bad config files (bad-configs/) that must exit 2 with a
# message naming the problem, truncated and garbled tables, a generated
# corpus (mutate.py: every table cut, bit-flipped, short of a column, with
# numbers out of range..., broken configs, bad command lines) that must
# give output or one message naming the file and line, and never a crash:
# run it on the ASan+UBSan build (make check does).  Also the Slurm Prolog
# (packaging/slurm/mrpin-slurm) outside Slurm: what a job's comment may do
# to its limit.  KTAP on stdout.
#
# A crash is a failure: a program the tests run that is killed by a
# signal or stopped by a sanitizer makes the next result "not ok", the
# unit binary must exit 0 after every check of its own plan, and each
# section must record as many results as it plans (one that ends early is
# a failure of its own).
#
#   run.sh MRPINCTL [UNIT [TARGET [FAKE_RAM]]]
#               UNIT: the unit-test binary (tests/unit.c); TARGET: the live
#               process whose call site doctor symbolizes (callsite-target.c);
#               FAKE_RAM: fake-sysinfo.so, to run the golden tests again as
#               on a machine with other RAM
#   UPDATE=1 run.sh ...         rewrite expected/ from the current output
#   FUZZ_SEED=N run.sh ...      another generated corpus (default 1)
#
# Nothing the output is compared with comes from the machine running the
# tests: the snapshots carry their own RAM, time zone, locale and width
# are set here, and user names come from tests/etc, bound over the host's
# in a mount namespace of the tests' own.
set -u

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${MRPIN_TEST_NS:-}" ]; then
	export MRPIN_TEST_REAL_UID
	MRPIN_TEST_REAL_UID=$(id -u)
	if [ "$MRPIN_TEST_REAL_UID" = 0 ]; then
		ns=(unshare --mount --propagation private)
	else
		ns=(unshare --map-root-user --mount --propagation private)
	fi
	MRPIN_TEST_NS=1 exec "${ns[@]}" "$0" "$@"
	echo "run.sh: cannot make a mount namespace for the tests' user names (${ns[*]})" >&2
	exit 1
fi
for f in passwd group nsswitch.conf; do
	mount --bind "$here/etc/$f" "/etc/$f" ||
		{ echo "run.sh: cannot bind tests/etc/$f over /etc/$f" >&2; exit 1; }
done
# nscd would answer from the host's database.
[ ! -d /run/nscd ] || mount -t tmpfs none /run/nscd

bin=$(realpath "$1")
unit=${2:+$(realpath "$2")}
target=${3:+$(realpath "$3")}
fake_ram=${4:+$(realpath "$4")}
snaps=$here/snapshots
out=$here/out
rm -rf "$out"
mkdir -p "$out"

export TZ=UTC LC_ALL=C COLUMNS=80
export ASAN_OPTIONS=exitcode=86:abort_on_error=0:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:exitcode=87:print_stacktrace=1
unset MRPIN_DEBUGFS

results=$out/results
: >"$results"
# The crashes of the programs run since the last result (crashed): that
# result is a failure, whatever its own check said.
crashes=()
ncrashes=0
ok() {
	[ "$ncrashes" = 0 ] || { not_ok "$@"; return; }
	echo "ok $*" >>"$results"
}
not_ok() {
	echo "not ok $*" >>"$results"
	[ "$ncrashes" = 0 ] && return
	diag "$ncrashes crashed: ${crashes[*]}"
	crashes=()
	ncrashes=0
}
# skip NAME REASON: a test point not run here, and why.
skip() { echo "ok $1 # SKIP $2" >>"$results"; }
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
diag() { echo "# $*" >>"$results"; }

# crashed WHAT [STDERR [STATUS...]]: whether the program the last command
# ran (WHAT), which ended with status $rc, crashed: killed by a signal,
# stopped by ASan (exit 86) or UBSan (87), not run at all (126, 127), or a
# sanitizer's report in STDERR.  A crash is noted for the next result.
# STATUS...: statuses of the command's own above 85 (timeout's 124).
crashed() {
	local what=$1 err=${2:-} s why
	shift
	[ $# = 0 ] || shift
	for s; do
		[ "$rc" = "$s" ] && return 1
	done
	if [ "$rc" -gt 128 ]; then
		why="killed by SIG$(kill -l "$((rc - 128))" 2>/dev/null || echo "$((rc - 128))")"
	elif [ "$rc" -ge 86 ]; then
		case $rc in
		86) why="AddressSanitizer (exit 86)" ;;
		87) why="UBSan (exit 87)" ;;
		*) why="exit $rc" ;;
		esac
	elif [ -n "$err" ] && grep -q -e Sanitizer -e 'runtime error' "$err" 2>/dev/null; then
		why="a sanitizer's report, exit $rc"
	else
		return 1
	fi
	ncrashes=$((ncrashes + 1))
	[ "$ncrashes" -gt 3 ] || crashes+=("$what: $why${err:+ ($(grep -m1 -e Sanitizer -e 'runtime error' "$err" 2>/dev/null | head -c 160))}")
}

# run DIR ARGS...: mrpinctl on snapshot DIR; $rc, $out/stdout, $out/stderr.
# Where leaks_every is N (the fuzz loops, thousands of runs), LeakSanitizer
# looks at one run in N, in turn: its scan at exit costs a run twice what
# ASan's own checks do, and an error path that leaks is met by many of the
# inputs.  Every other check runs on every run.
run_count=0
run() {
	local dir=$1 asan=$ASAN_OPTIONS
	shift
	run_count=$((run_count + 1))
	[ $((run_count % ${leaks_every:-1})) = 0 ] || asan+=:detect_leaks=0
	ASAN_OPTIONS=$asan "$bin" --debugfs "$dir" "$@" >"$out/stdout" 2>"$out/stderr" </dev/null
	rc=$?
	crashed "mrpinctl $(printf '%q ' "$@" | head -c 80)" "$out/stderr"
}

# section FUNCTION CHECKS: the tests of FUNCTION, in a shell of their own,
# which must record CHECKS results: fewer (it returned or exited before its
# end) or more are a failure of their own, and so is a crash after its last
# result.
section() {
	local fn=$1 want=$2 before got
	before=$(grep -c '^\(not \)\?ok ' "$results")
	rm -f "$out/late-crashes"
	(
		"$fn"
		[ "$ncrashes" = 0 ] || echo "$ncrashes: ${crashes[*]}" >"$out/late-crashes"
	)
	got=$(($(grep -c '^\(not \)\?ok ' "$results") - before))
	if [ "$got" != "$want" ]; then
		not_ok "$fn: $got results recorded, $want planned"
		[ "$got" -gt "$want" ] || diag "$fn ended before its last check"
	fi
	if [ -s "$out/late-crashes" ]; then
		not_ok "$fn: no crash after its last check"
		diag "crashed: $(cat "$out/late-crashes")"
	fi
}

# No sanitizer report, no crash.
clean() {
	[ "$rc" -lt 86 ] && ! grep -q -e Sanitizer -e 'runtime error' "$out/stderr"
}

# The failure as expected: status $1, one message, on stderr only, with $2.
fails_with() {
	clean && [ "$rc" = "$1" ] && [ ! -s "$out/stdout" ] &&
		grep -qF -- "$2" "$out/stderr" &&
		[ "$(wc -l <"$out/stderr")" -le 25 ] && return 0
	diag "status $rc; stderr: $(head -c 300 "$out/stderr")"
	return 1
}

# A scratch copy of a snapshot (limits written to it are checked).
scratch() {
	rm -rf "$out/snap"
	cp -r "$snaps/$1" "$out/snap"
}

# --- unit tests: tests/unit.c's own plan, every check of it, exit 0 ---

unit_tests() {
	local line plan='' n=0 bad=''
	if [ -z "$unit" ]; then
		skip "unit: tests/unit.c" "no UNIT given"
		return
	fi
	"$unit" >"$out/unit.out" 2>"$out/unit.err" </dev/null
	rc=$?
	while read -r line; do
		case "$line" in
		1..[0-9]*)
			[ -z "$plan" ] || bad="a second plan line '$line'"
			plan=${line#1..}
			;;
		"ok "* | "not ok "*)
			n=$((n + 1))
			case "${line#not }" in
			"ok $n "*) ;;
			*) bad=${bad:-"result $n numbered otherwise: '$line'"} ;;
			esac
			case "$line" in
			"ok "*) ok "unit: ${line#ok [0-9]* }" ;;
			*) not_ok "unit: ${line#not ok [0-9]* }" ;;
			esac
			;;
		"# "*) echo "$line" >>"$results" ;;
		esac
	done <"$out/unit.out"
	[ -n "$plan" ] || bad="no plan line (1..N)"
	[ -z "$bad" ] && [ "$n" = "$plan" ] || bad="${bad:-$n results of its plan of $plan}"
	crashed "unit ($unit)" "$out/unit.err"
	if [ -z "$bad" ] && [ "$rc" = 0 ]; then
		ok "unit: the plan of $plan checks ran in full, exit 0"
	else
		not_ok "unit: the plan of ${plan:-?} checks ran in full, exit 0"
		diag "exit status $rc; ${bad:-every check of the plan ran}"
		grep -m8 -e 'ERROR: ' -e 'SUMMARY: ' -e 'runtime error' -e '^ *#[0-3] ' "$out/unit.err" |
			sed 's/^ */# /' >>"$results"
	fi
}

# --- golden output of every command, on the recorded snapshots ---

# golden NAME DIR ARGS...: the output as expected/NAME; status 0, or $STATUS.
# DIR: a snapshot's name, or a path (a scratch copy).
golden() {
	local name=$1 dir=$2
	shift 2
	[ "${dir:0:1}" = / ] || dir=$snaps/$dir
	run "$dir" "$@"
	if [ -n "${UPDATE:-}" ]; then
		cp "$out/stdout" "$here/expected/$name"
	fi
	if clean && [ "$rc" = "${STATUS:-0}" ] && cmp -s "$out/stdout" "$here/expected/$name"; then
		ok "golden: $name${GOLDEN_AS:+ ($GOLDEN_AS)}"
	else
		not_ok "golden: $name${GOLDEN_AS:+ ($GOLDEN_AS)}"
		diag "status $rc; diff expected/$name:"
		diff "$here/expected/$name" "$out/stdout" | head -20 | sed 's/^/# /' >>"$results"
	fi
}

golden_tests() {
	mkdir -p "$here/expected"
	golden proc basic proc
	golden proc-wide basic proc show --debugfs "$snaps/basic" # same dir twice: fine
	COLUMNS=200 golden proc-200 basic proc
	COLUMNS=50 golden proc-50 basic proc
	golden proc-sort-pins basic proc sort pins
	golden proc-user-nobody basic proc user nobody
	golden proc-pid basic proc pid 777
	golden pin basic pin
	COLUMNS=200 golden pin-200 basic pin
	golden pin-filters basic pin dev mlx5_0 min-size 12K older-than 1m
	golden pin-pid basic pin pid 153
	golden dev basic dev
	golden cgroup basic cgroup
	golden cgroup-future future cgroup
	COLUMNS=40 golden cgroup-40 future cgroup
	golden cgroup-path future cgroup show /jobs//job43/
	golden json-cgroup basic -j cgroup
	golden json-cgroup-future future -p cgroup
	golden limit basic limit show
	golden events basic events
	COLUMNS=132 golden events-132 basic events
	golden proc-empty empty proc
	golden pin-empty empty pin
	golden limit-empty empty limit
	golden proc-future future proc
	golden pin-future future pin
	golden dev-future future dev
	golden proc-old old proc
	golden limit-future future limit
	golden json-limit-future future -j limit
	golden export basic export prometheus
	golden export-per-process basic export prometheus --per-process
	golden export-empty empty export prometheus
	golden json-proc basic -j proc
	golden json-pin basic -j pin
	golden json-limit basic -p limit
	golden json-events basic -j events
	COLUMNS=200 golden events-failures mistakes events
	golden json-events-failures mistakes -j events
	golden status-failures mistakes status
	COLUMNS=200 golden proc-failures mistakes proc
	golden export-failures mistakes export prometheus
	STATUS=1 golden doctor mistakes doctor
	STATUS=1 golden json-doctor mistakes -p doctor
	golden doctor-clean clean doctor
	golden proc-distinct mistakes proc
	golden limit-count mistakes limit
	golden json-limit-count mistakes -p limit
	golden export-distinct mistakes export prometheus --per-process
	golden pin-odp odp pin
	COLUMNS=200 golden pin-odp-200 odp pin
	golden json-pin-odp odp -j pin
	golden status-odp odp status
	golden export-odp odp export prometheus
	golden status-peer peer status
	golden json-status-peer peer -p status
	golden pin-peer peer pin
	COLUMNS=200 golden pin-peer-200 peer pin
	golden json-pin-peer peer -j pin
	golden proc-peer peer proc
	COLUMNS=200 golden proc-peer-200 peer proc
	golden dev-peer peer dev
	golden export-peer peer export prometheus --per-process
	STATUS=1 golden doctor-mrtable mrtable doctor
	STATUS=1 golden json-doctor-mrtable mrtable -p doctor
	STATUS=1 golden doctor-mrtable-full mrtable-full doctor
	STATUS=1 golden json-doctor-mrtable-full mrtable-full -p doctor
	COLUMNS=200 golden events-device mrtable-full events
	golden json-events-device mrtable-full -j events
	golden export-device mrtable-full export prometheus
	STATUS=1 golden doctor-growth growth doctor
	STATUS=1 golden json-doctor-growth growth -p doctor
	STATUS=1 golden doctor-future-cause future-cause doctor
	STATUS=1 golden json-doctor-future-cause future-cause -p doctor
	COLUMNS=200 golden events-future-cause future-cause events
	golden export-future-cause future-cause export prometheus
}

# --- cgroup: the cgroups table, with and without the peak column ---

cgroup_tests() {
	run "$snaps/future" -j cgroup
	check "cgroup: the peak column read, columns after it ignored, rows by path, removed ones last by id" json_is \
		'[r["id"] for r in d] == [1, 7412, 7421, 7413, 7420, 97, 98, 99] and d[4] == {"id": 7420, "cgroup": "/jobs/job43", "pins": 0, "pinned_bytes": 0, "peak_pinned_bytes": 2147483648} and d[2]["cgroup"] == "/jobs/job with space"'
	run "$snaps/basic" -j cgroup
	check "cgroup: a module without the peak column: rows without it" json_is \
		'len(d) == 5 and all("peak_pinned_bytes" not in r for r in d) and d[0] == {"id": 1, "cgroup": "/", "pins": 10, "pinned_bytes": 34373447680}'
	run "$snaps/future" -j cgroup show "/jobs/job with space"
	check "cgroup show PATH: that row only, the path unescaped" json_is \
		'd == [{"id": 7421, "cgroup": "/jobs/job with space", "pins": 0, "pinned_bytes": 0, "peak_pinned_bytes": 0}]'
	run "$snaps/future" -j cgroup 97
	check "cgroup ID: a removed cgroup's row by its id" json_is \
		'd == [{"id": 97, "cgroup": "-", "pins": 0, "pinned_bytes": 0, "peak_pinned_bytes": 1073741824}]'
	run "$snaps/future" cgroups show /jobs/
	check "cgroups show PATH/: the trailing '/' ignored" eval \
		'clean && [ $rc = 0 ] && [ "$(wc -l <"$out/stdout")" = 2 ] && grep -q "^7412  /jobs " "$out/stdout"'
	run "$snaps/future" cgroup show /jobs/job44
	check "cgroup show PATH: no such row: exit 1, said" fails_with 1 \
		"no cgroup /jobs/job44 in $snaps/future/cgroups: nothing is pinned in its subtree and no cgroup rule names it"
	run "$snaps/future" -j cgroup show 12345
	check "cgroup show ID: no such row: exit 1, said" fails_with 1 \
		"no cgroup with id 12345 in $snaps/future/cgroups"
	run "$snaps/empty" cgroup show /
	check "cgroup show PATH: an empty table: exit 1" fails_with 1 "no cgroup / in"
	run "$snaps/old" cgroup
	check "cgroup: a module without the table: named" fails_with 1 "old/cgroups was not found"
}

# --- RAM: N% of RAM is a share of the snapshot's RAM, not the reader's ---

ram_tests() {
	local host fake
	scratch basic
	sed -i 's/^ram_bytes .*/ram_bytes 1000000000/' "$out/snap/stats"
	run "$out/snap" -j limit
	check "ram: limit: 50% of the snapshot's ram_bytes" json_is \
		'd[0]["max_pinned"] == 500000000 and d[0]["max_pinned_percent"] == 50'
	run "$out/snap" -j status
	check "ram: status: the snapshot's RAM and global limit" json_is \
		'd["ram_bytes"] == 1000000000 and d["global_max_pinned"] == 500000000'
	run "$out/snap" export prometheus
	check "ram: export: the snapshot's RAM and global limit" eval \
		'grep -qx "mrpin_ram_bytes 1000000000" "$out/stdout" &&
		 grep -qx "mrpin_limit_max_pinned_bytes{scope=\"global\"} 500000000" "$out/stdout"'
	sed -i '/^ram_bytes /d' "$out/snap/stats"
	run "$out/snap" -j limit
	check "ram: a snapshot without ram_bytes: limit gives the percentage only" json_is \
		'"max_pinned" not in d[0] and d[0]["max_pinned_percent"] == 50 and d[3]["max_pinned"] == 32 << 30'
	run "$out/snap" status
	check "ram: a snapshot without ram_bytes: status says the RAM is not known" eval \
		'clean && [ $rc = 0 ] && grep -qx "Global limit: *50% of RAM (not known), enforce" "$out/stdout" &&
		 ! grep -q "^RAM:" "$out/stdout"'
	run "$out/snap" export prometheus
	check "ram: a snapshot without ram_bytes: export has no RAM and no global max_pinned" eval \
		'clean && [ $rc = 0 ] && ! grep -q "^mrpin_ram_bytes" "$out/stdout" &&
		 ! grep -q "^mrpin_limit_max_pinned_bytes{scope=\"global\"}" "$out/stdout" &&
		 grep -q "^mrpin_limit_max_pinned_bytes{scope=\"uid\"" "$out/stdout"'
	if [ -z "$fake_ram" ]; then
		skip "ram: the golden output on a machine with other RAM" "no FAKE_RAM given"
		return
	fi
	# The golden output once more, as read on a machine with other RAM.
	host=$(python3 -c 'import os; print(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))')
	fake=$((host / 3 + 4096 * 12345))
	check "ram: the fake RAM is in force" eval \
		'[ "$(LD_PRELOAD=$fake_ram MRPIN_TEST_RAM=$fake python3 -c "
import ctypes
buf = ctypes.create_string_buffer(256)
ctypes.CDLL(None, use_errno=True).sysinfo(buf)
print(int.from_bytes(buf.raw[32:40], \"little\"))")" = "$fake" ]'
	(
		export LD_PRELOAD=$fake_ram MRPIN_TEST_RAM=$fake
		export ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0
		GOLDEN_AS="host RAM $fake" golden_tests
	)
}

# --- Prometheus: the export's text format, the alert rules ---

: "${PROMTOOL:=promtool}"

# promtool ARGS...: Debian's prometheus package has it (`make check` takes
# it from scripts/setup.sh promtool, in $PROMTOOL); its output in
# $out/promtool, told when it fails.
promtool_ok() {
	"$PROMTOOL" "$@" >"$out/promtool" 2>&1 && return 0
	diag "promtool $*:"
	head -n 30 "$out/promtool" | sed 's/^/# /' >>"$results"
	return 1
}

# exposition_lint FILE: promtool's lint of the text format (syntax, HELP
# and TYPE, counters in _total, units), then mrpin's own rules, which it
# does not check: every name starts with mrpin_, sizes are in _bytes,
# values are counts or bytes (integers, never negative), no series twice,
# the samples of a family together, at least one sample.  The problems on
# stdout.
exposition_lint() {
	"$PROMTOOL" check metrics <"$1" 2>&1 || return 1
	awk '/^#/ { next }
	{
		name = $0; sub(/[{ ].*/, "", name)
		series = $0; sub(/ [^ ]*$/, "", series)
		if (name !~ /^mrpin_/) bad = bad "; " name ": no mrpin_ prefix"
		if (name ~ /bytes/ && name !~ /_bytes(_total)?$/) bad = bad "; " name ": a size not in _bytes"
		if ($NF !~ /^[0-9]+$/) bad = bad "; " series ": value " $NF
		if (seen[series]++) bad = bad "; " series ": twice"
		if (name != cur) {
			if (name in done) bad = bad "; " name ": its samples apart"
			done[cur]; cur = name
		}
		n++
	}
	END {
		if (!n) bad = bad "; no samples"
		if (bad != "") { print substr(bad, 3); exit 1 }
	}' "$1"
}

# exposition_ok FILE: no problem, or they are told.
exposition_ok() {
	exposition_lint "$1" >"$out/lint" && return 0
	diag "exposition $1:"
	head -n 10 "$out/lint" | sed 's/^/# /' >>"$results"
	return 1
}

# lint_finds FILE TEXT: the lint refuses FILE, saying TEXT.
lint_finds() {
	! exposition_lint "$1" >"$out/lint" && grep -qF -- "$2" "$out/lint"
}

# The metric names the rules read (not the ones they record, LEVEL:NAME:OP).
rules_metrics() {
	grep -v '^ *#' "$here/../mrpin.rules.yml" |
		grep -oE '(^|[^:_a-zA-Z0-9])mrpin_[a-zA-Z0-9_]+' |
		sed 's/^[^m]//' | sort -u
}

prometheus_tests() {
	command -v "$PROMTOOL" >/dev/null ||
		diag "promtool is missing: scripts/setup.sh promtool unpacks it (Debian's prometheus)"
	check "rules: promtool check rules mrpin.rules.yml" \
		promtool_ok check rules "$here/../mrpin.rules.yml"
	check "rules: promtool test rules tests/mrpin.rules.test.yml" \
		promtool_ok test rules "$here/mrpin.rules.test.yml"
	# Every metric they read is one the export writes (a family in
	# expected/export*), and they read some.
	comm -23 <(rules_metrics) <(sed -n 's/^# TYPE \(mrpin_[a-z0-9_]*\) .*/\1/p' \
		"$here"/expected/export* | sort -u) >"$out/unknown"
	check "rules: read only metrics the export writes ($(rules_metrics | wc -l) of them)" eval \
		'[ ! -s "$out/unknown" ] && [ "$(rules_metrics | wc -l)" -gt 5 ] ||
		 { diag "not in the export: $(paste -sd " " "$out/unknown")"; false; }'
	# The lint itself: what promtool refuses, and what only mrpin's rules do.
	printf '# HELP mrpin_x_bytes X.\n# TYPE mrpin_x_bytes counter\nmrpin_x_bytes 1\n' >"$out/bad.prom"
	check "exposition lint: a counter without _total (promtool)" \
		lint_finds "$out/bad.prom" 'counter metrics should have "_total" suffix'
	printf '# HELP mrpin_x_bytes X.\n# TYPE mrpin_x_bytes gauge\nmrpin_x_bytes{d="a"} 1\nmrpin_x_bytes{d="a"} 2\n' >"$out/bad.prom"
	check "exposition lint: a series twice (mrpin's rules)" \
		lint_finds "$out/bad.prom" 'mrpin_x_bytes{d="a"}: twice'
	printf '# HELP x_bytes X.\n# TYPE x_bytes gauge\nx_bytes 1\n' >"$out/bad.prom"
	check "exposition lint: no mrpin_ prefix (mrpin's rules)" \
		lint_finds "$out/bad.prom" 'x_bytes: no mrpin_ prefix'
	: >"$out/bad.prom"
	check "exposition lint: no samples (mrpin's rules)" \
		lint_finds "$out/bad.prom" 'no samples'
}

# --- JSON: valid, exact, for every command ---

json_valid() { python3 -c 'import json,sys; json.load(sys.stdin)' <"$out/stdout"; }

json_is() { # json_is PYTHON-EXPRESSION-OF-d
	python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)" <"$out/stdout"
}

json_tests() {
	local dir cmd
	for dir in basic empty future; do
		for cmd in status proc pin dev cgroup limit events; do
			run "$snaps/$dir" -j $cmd
			check "json: $dir $cmd is valid JSON" eval 'clean && [ $rc = 0 ] && json_valid'
			run "$snaps/$dir" -p $cmd
			check "json: $dir $cmd pretty is valid JSON" eval 'clean && [ $rc = 0 ] && json_valid'
		done
	done
	run "$snaps/basic" -j proc
	check "json: exact bytes, unlimited is null, comm unescaped" json_is \
		'd[0]["pinned_bytes"] == 34359738368 and d[0]["memlock_bytes"] is None and d[1]["memlock_bytes"] == 8388608 and d[3]["comm"] == "pin ner" and d[1]["cgroup"] == "/system.slice/perftest runs.service"'
	run "$snaps/basic" -j pin
	check "json: pin start and age exact" json_is \
		'd[1]["start"] == 140315941990500 and d[3]["age_ms"] == 7384211 and d[1]["pinned_bytes"] == 12288'
	run "$snaps/basic" -j status
	check "json: status totals and the global limit" json_is \
		'd["pinned_bytes"] == 34373447680 and d["denials_total"] == 5 and d["global_max_pinned_percent"] == 50 and len(d["devices"]) == 2 and len(d["top_procs"]) == 4 and d["top_procs"][0]["pid"] == 4242'
	run "$snaps/basic" -j limit
	check "json: limits by scope, user names, percent" json_is \
		'd[0]["max_pinned_percent"] == 50 and d[2]["user"] == "root" and d[3]["uid"] == 65534 and d[3]["max_pinned"] == 32 << 30 and d[4]["user"] is None and d[6]["cgroup"] == "/system.slice/perftest runs.service" and d[5]["max_pin_size"] == 1 << 20'
	run "$snaps/basic" -j events
	check "json: events in order, lost reported" json_is \
		'[e.get("seq") for e in d] == [0, 1, None, 5, 6] and d[2] == {"lost": 3} and d[3]["scope"] == "cgroup:/system.slice/perftest runs.service"'
	check "json: events of a module without errno: none given" json_is \
		'not any("errno" in e for e in d)'
	run "$snaps/mistakes" -j events
	check "json: failures: cause, VmPin, RLIMIT_MEMLOCK (unlimited is null), errno" json_is \
		'[(e["pid"], e["key"], e["asked"], e["usage"], e["limit"], e["errno"]) for e in d if e.get("action") == "fail"][:3] == [(212, "memlock", 8454144, 8388608, 8388608, 12), (212, "memlock", 8454144, 8388608, 8388608, 12), (77, "unmapped", 2097152, 12884897792, None, 14)] and [e["errno"] for e in d if e.get("action") in ("deny", "warn")][:4] == [0, 0, 0, 12]'
	run "$snaps/future" -j events
	check "json: events with errno and a column after it" json_is \
		'[e.get("errno") for e in d] == [12, 0, None, 12, 12]'
	run "$snaps/mistakes" -j status
	check "json: status: failures where the module counts them" json_is \
		'd["failures_total"] == 13 and d["denials_total"] == 5'
	run "$snaps/basic" -j status
	check "json: status: no failures from a module that does not count them" json_is \
		'"failures_total" not in d and d["denials_total"] == 5'
	run "$snaps/mistakes" -j proc
	check "json: proc: failures per process" json_is \
		'{p["pid"]: p["failures"] for p in d if p["failures"]} == {4242: 1, 77: 1, 9: 1, 31337: 1}'
	run "$snaps/basic" -j proc
	check "json: proc: no failures from a module without the column" json_is \
		'not any("failures" in p for p in d) and d[0]["denials"] == 3'
}

# --- doctor: every kind of finding, worst first; exit 1; nothing: exit 0;
# failed: exit 2 ---

doctor_tests() {
	local kinds='global-limit mr-table stack denied failed leak-exit 4k-pages churn oversized over-limit misaligned misaligned-2m leak-suspect duplicate'
	run "$snaps/mistakes" -j doctor
	check "doctor: mistakes exit 1, valid JSON" eval 'clean && [ $rc = 1 ] && json_valid'
	check "doctor: every kind of finding" json_is \
		"sorted(set(f['kind'] for f in d)) == sorted('$kinds'.split())"
	check "doctor: worst first (high, medium, low, info)" json_is \
		'[f["severity"] for f in d] == sorted((f["severity"] for f in d), key=["high", "medium", "low", "info"].index)'
	check "doctor: the order of the kinds within a severity" json_is \
		'[f["kind"] for f in d if f["severity"] == "high"] == ["global-limit", "mr-table", "stack", "stack", "denied", "denied", "denied"] + ["failed"] * 9'
	check "doctor: every finding has severity, kind, subject, evidence, message, advice" json_is \
		'all(set(f) == {"severity", "kind", "subject", "evidence", "message", "advice"} and f["advice"] and "; " not in f["message"] for f in d)'
	check "doctor: stack buffers, exact" json_is \
		'[f["evidence"]["stack_pins"] for f in d if f["kind"] == "stack" and f["subject"].get("pid") == 4242] == [3] and any(f["subject"] == {"scope": "process", "pid": 8080, "comm": "stackbuf"} and f["evidence"]["refused"] == 1 for f in d) and any(f["kind"] == "stack" and f["subject"] == {"scope": "global"} and f["evidence"]["stack_pins"] == 2 for f in d)'
	check "doctor: leaks by program and user, exact" json_is \
		'[(f["subject"]["comm"], f["subject"]["uid"], f["evidence"]["count"], f["evidence"]["bytes"], f["evidence"]["last_time_ns"]) for f in d if f["kind"] == "leak-exit"][0] == ("worker", 4000000, 5312, 44023414784, 1796006349433497070)'
	check "doctor: 4 KiB pages, exact" json_is \
		'[(f["subject"]["pid"], f["evidence"]["pinned_bytes"], f["evidence"]["bytes_4k"]) for f in d if f["kind"] == "4k-pages"] == [(77, 12884897792, 12371095552)]'
	check "doctor: churn, exact" json_is \
		'[(f["subject"]["pid"], f["evidence"]["released"], f["evidence"]["under_1ms"], f["evidence"]["reg_per_s"]) for f in d if f["kind"] == "churn"] == [(9, 10000, 9120, 250)]'
	check "doctor: MR table now, and a mark crossed before" json_is \
		'[(f["severity"], f["subject"]["device"]) for f in d if f["kind"] == "mr-table"] == [("high", "rxe0"), ("medium", "mlx5_1")] and d[1]["evidence"]["pins"] == 436000 and d[1]["evidence"]["mr_table_warn_percent"] == 80'
	check "doctor: the global limit in warn mode" json_is \
		'd[0]["kind"] == "global-limit" and d[0]["evidence"]["pinned_bytes"] == 50465140736 and d[0]["evidence"]["distinct_bytes"] == 49928269824 and d[0]["evidence"]["count"] == "distinct" and abs(d[0]["evidence"]["limit_percent"] - 100.0 * 49928269824 / (40 << 30)) < 1e-3 and d[0]["evidence"]["global_max_pinned"] == 40 << 30 and d[0]["evidence"]["action"] == "warn"'
	check "doctor: refusals by process and limit; comm and cgroup unescaped" json_is \
		'[(f["subject"]["comm"], f["evidence"]["scope"], f["evidence"]["key"], f["evidence"]["events"]) for f in d if f["kind"] == "denied"] == [("mrpin_pinner", "process", "max_pinned", 2), ("ib_write_bw", "cgroup:/system.slice/perftest runs.service", "max_pins", 1), ("pin ner", "global", "max_pin_size", 1)]'
	check "doctor: failures by process and cause, exact" json_is \
		'[(f["subject"]["pid"], f["evidence"]["cause"], f["evidence"]["errno"], f["evidence"]["events"]) for f in d if f["kind"] == "failed" and f["severity"] == "high"] == [(212, "memlock", 12, 2), (9, "iomem", 14, 1), (77, "unmapped", 14, 1), (4242, "readonly", 14, 1), (6060, "invalid", 22, 1), (6061, "nomem", 12, 1), (6062, "other", 95, 1), (6063, "memlock", 1, 1), (31337, "fault", 14, 1)]'
	check "doctor: a memlock failure: the limit, VmPin and the asked bytes" json_is \
		'[(f["evidence"]["asked_bytes"], f["evidence"]["memlock_bytes"], f["evidence"]["vm_pinned_bytes"], f["evidence"]["last_time_ns"]) for f in d if f["kind"] == "failed" and f["subject"].get("pid") == 212] == [(8454144, 8388608, 8388608, 1796006362433497070)] and [f["evidence"]["memlock_bytes"] for f in d if f["kind"] == "failed" and f["subject"].get("pid") == 77] == [None]'
	check "doctor: the failures the events no longer show, by cause" json_is \
		'[(f["severity"], f["subject"], f["evidence"]) for f in d if f["kind"] == "failed" and f["subject"]["scope"] == "global"] == [("medium", {"scope": "global"}, {"cause": "memlock", "failures": 3, "failures_total": 6})]'
	check "doctor: misaligned starts and large pins" json_is \
		'[(f["kind"], f["subject"]["pid"], f["evidence"]["count"]) for f in d if f["kind"].startswith("misaligned")] == [("misaligned", 153, 1), ("misaligned-2m", 77, 1)]'
	check "doctor: oversized pins; the healthy process has nothing" json_is \
		'[f["subject"]["pid"] for f in d if f["kind"] == "oversized"] == [4242, 77] and not any(f["subject"].get("comm") == "healthy" for f in d)'
	check "doctor: leak suspects, oldest and biggest, raw frames when the process is gone" json_is \
		'sorted(f["evidence"]["which"] for f in d if f["kind"] == "leak-suspect") == ["biggest", "oldest"] and all(f["evidence"]["caller"]["object"] is None and len(f["evidence"]["frames"]) == 4 for f in d if f["kind"] == "leak-suspect")'
	run "$snaps/mistakes" doctor
	check "doctor: text, one line a finding with its advice, then the count" eval \
		'[ $rc = 1 ] && [ "$(grep -c "; " "$out/stdout")" = 32 ] && tail -n1 "$out/stdout" | grep -qx "32 findings: 16 high, 11 medium, 4 low, 1 info"'
	check "doctor: a memlock failure in words: the limit, VmPin, where to raise it" grep -qF \
		"pid 212 (ib_write_bw) could not register 8.1 MiB: RLIMIT_MEMLOCK is 8.0 MiB and VmPin was 8.0 MiB (2 failures, the last at Nov 30 02:39:22); raise RLIMIT_MEMLOCK where the program is started (systemd LimitMEMLOCK=" "$out/stdout"
	run "$snaps/clean" -j doctor
	check "doctor: nothing found: exit 0, []" eval 'clean && [ $rc = 0 ] && json_is "d == []"'
	run "$snaps/clean" doctor
	check "doctor: nothing found: one line" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/stdout")" = "no problems found (2 processes, 3 pins, 2 devices)" ]'
	run "$snaps/old" doctor
	check "doctor: an old module: exit 2, what is missing named" fails_with 2 "old/procs:1: no column 'bytes_4k' in the header"
	scratch mistakes
	sed -i '3s/ [0-9,]* \([0-9]*\)$/ 1,2,x \1/' "$out/snap/procs"
	run "$out/snap" doctor
	check "doctor: a bad life_hist: exit 2, named" fails_with 2 "snap/procs: pid 77: column 'life_hist': expected comma-separated counts, found '1,2,x'"
	scratch mistakes
	rm "$out/snap/callsites"
	run "$out/snap" doctor
	check "doctor: no callsites file: exit 2, named" fails_with 2 "snap/callsites was not found"
	scratch mistakes
	sed -i '1s/ stack / /' "$out/snap/pins"
	run "$out/snap" doctor
	check "doctor: pins without a column it needs: exit 2, named" fails_with 2 "snap/pins:1: no column 'stack' in the header"
	run "$out/none" doctor
	check "doctor: mrpin not loaded: exit 2, one sentence" fails_with 2 "mrpin is not loaded: run 'modprobe mrpin'"
	doctor_callsite_test
}

# A live process with debug info: its call site by function and line.
doctor_callsite_test() {
	local pid frames line i
	if [ -z "$target" ]; then
		for i in "a live call site" "the call site in text" "a live growing leak" \
			"a live growing leak in text" "the same process gone"; do
			skip "doctor: $i" "no TARGET given"
		done
		return
	fi
	scratch clean
	mkfifo "$out/target.in"
	"$target" <"$out/target.in" >"$out/target.out" &
	pid=$!
	exec 8>"$out/target.in"
	for i in $(seq 50); do
		grep -q '^line ' "$out/target.out" && break
		sleep 0.1
	done
	frames=$(sed -n 's/^frames //p' "$out/target.out")
	line=$(sed -n 's/^line //p' "$out/target.out")
	echo "$pid callsite-target 3 12288 5000 $frames" >>"$out/snap/callsites"
	run "$out/snap" -j doctor
	check "doctor: a live call site, symbolized with libdwfl" json_is \
		"[(f['kind'], f['evidence']['caller']['function'], f['evidence']['caller']['file'].endswith('/tests/callsite-target.c'), f['evidence']['caller']['line'], f['evidence']['caller']['object'] == '$target', [x['function'] for x in f['evidence']['frames']][2:]) for f in d] == [('leak-suspect', 'register_buffers', True, $line, True, ['register_buffers', 'main'])]"
	run "$out/snap" doctor
	check "doctor: the call site in text: function, file:line, object+offset" \
		grep -Eq "were registered from register_buffers at callsite-target\.c:$line \(callsite-target\+0x[0-9a-f]+\); " "$out/stdout"
	# The same call site growing, in a process that never deregistered.
	rm -rf "$out/grow"
	cp -r "$snaps/clean" "$out/grow"
	sed -i '1s/$/ newest_age_ms/' "$out/grow/callsites"
	echo "$pid callsite-target 150 614400 60000 $frames 100" >>"$out/grow/callsites"
	echo "$pid callsite-target 1000 / 150 614400 614400 614400 unlimited 0 0 614400 0 0 0 0 150 0 $(printf '0,%.0s' {1..23})0 614400" >>"$out/grow/procs"
	run "$out/grow" -j doctor
	check "doctor: a live growing leak: its call site symbolized as the leak suspect's" json_is \
		"[(f['evidence']['caller']['function'], f['evidence']['caller']['line'], [x['function'] for x in f['evidence']['frames']][2:]) for f in d if f['kind'] == 'growing-leak'] == [('register_buffers', $line, ['register_buffers', 'main'])]"
	run "$out/grow" doctor
	check "doctor: a live growing leak in text: function, file:line, object+offset" \
		grep -Eq "^high  pid $pid \(callsite-target\) leaks MRs from register_buffers at callsite-target\.c:$line \(callsite-target\+0x[0-9a-f]+\): 150 live, none ever deregistered, 2\.5 new a second for 59\.9s; " "$out/stdout"
	exec 8>&-
	wait "$pid"
	rc=$?
	crashed "callsite-target"
	run "$out/snap" doctor
	check "doctor: the same process gone: raw frames" \
		grep -qF "were registered from $frames (not symbolized: the process is gone)" "$out/stdout"
}

# --- distinct bytes: memory registered several times counts once; a
# module without them (basic) shows what it did before ---

distinct_tests() {
	run "$snaps/mistakes" status
	check "distinct: status: registered bytes, registrations, distinct bytes" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *47.0 GiB in 57 registrations, 46.5 GiB distinct" "$out/stdout" &&
		 grep -qx "Global limit: *40.0 GiB, warn, count=distinct" "$out/stdout" &&
		 grep -q "^ *PID .* PINNED  DISTINCT" "$out/stdout"'
	run "$snaps/mistakes" -j status
	check "distinct: status JSON: distinct_bytes; RAM and the global limit by distinct bytes" json_is \
		'd["pinned_bytes"] == 50465140736 and d["distinct_bytes"] == 49928269824 and d["global_count"] == "distinct" and abs(d["global_limit_percent"] - 100.0 * 49928269824 / (40 << 30)) < 1e-3 and abs(d["ram_percent"] - 100.0 * 49928269824 / 68719476736) < 1e-3 and [p["distinct_bytes"] for p in d["top_procs"] if p["pid"] == 7100] == [536870912]'
	run "$snaps/basic" status
	check "distinct: status of a module without them: the bytes alone, no column" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *32.0 GiB" "$out/stdout" &&
		 grep -qx "Global limit: *[0-9.]* GiB (50% of RAM), enforce" "$out/stdout" && ! grep -q DISTINCT "$out/stdout"'
	run "$snaps/basic" -j status
	check "distinct: status JSON of a module without them: none" json_is \
		'"distinct_bytes" not in d and "global_count" not in d and not any("distinct_bytes" in p for p in d["top_procs"])'
	scratch mistakes
	sed -i '/^distinct_bytes /d' "$out/snap/stats"
	run "$out/snap" -j status
	check "distinct: stats without the line, procs with the column" json_is \
		'"distinct_bytes" not in d and d["pinned_bytes"] == 50465140736 and abs(d["global_limit_percent"] - 100.0 * 50465140736 / (40 << 30)) < 1e-3 and all("distinct_bytes" in p for p in d["top_procs"])'
	scratch mistakes
	sed -i 's/^\(7100 .*\) 536870912$/\1 half/' "$out/snap/procs"
	run "$out/snap" proc
	check "distinct: a bad distinct_bytes: exit 1, named" fails_with 1 \
		"snap/procs:9: column 'distinct_bytes': expected a number, found 'half'"
	run "$snaps/mistakes" -j proc
	check "distinct: proc JSON: distinct_bytes of every process" json_is \
		'{p["pid"]: p["distinct_bytes"] for p in d if p["distinct_bytes"] != p["pinned_bytes"]} == {7100: 536870912} and len(d) == 8'
	run "$snaps/basic" -j proc
	check "distinct: proc JSON of a module without them: none" json_is \
		'not any("distinct_bytes" in p for p in d) and len(d) == 4'
	run "$snaps/mistakes" top -n 1
	check "distinct: top: the distinct bytes, and the column" eval \
		'clean && [ $rc = 0 ] && grep -q "Pinned: 47.0 GiB  Distinct: 46.5 GiB  of RAM: 72.7%" "$out/stdout" &&
		 grep -q "^ *PID .* PINNED  DISTINCT" "$out/stdout"'
	run "$snaps/mistakes" -j top -n 1
	check "distinct: top JSON: distinct_bytes, in total and per process" json_is \
		'd["distinct_bytes"] == 49928269824 and [p["distinct_bytes"] for p in d["procs"] if p["pid"] == 7100] == [536870912]'
	run "$snaps/basic" top -n 1
	check "distinct: top of a module without them: neither" eval \
		'clean && [ $rc = 0 ] && ! grep -qi distinct "$out/stdout"'
	run "$snaps/mistakes" export prometheus --per-process
	check "distinct: export: global and per-process gauges, with HELP and TYPE, valid" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" &&
		 grep -qx "# TYPE mrpin_distinct_bytes gauge" "$out/stdout" &&
		 grep -qx "mrpin_distinct_bytes 49928269824" "$out/stdout" &&
		 grep -q "^# HELP mrpin_process_distinct_bytes ." "$out/stdout" &&
		 grep -qx "# TYPE mrpin_process_distinct_bytes gauge" "$out/stdout" &&
		 grep -qx "mrpin_process_distinct_bytes{pid=\"7100\",comm=\"allreduce\"} 536870912" "$out/stdout" &&
		 grep -qx "mrpin_process_pinned_bytes{pid=\"7100\",comm=\"allreduce\"} 1073741824" "$out/stdout" &&
		 [ "$(grep -c "^mrpin_process_distinct_bytes{" "$out/stdout")" = 8 ]'
	run "$snaps/mistakes" export prometheus
	check "distinct: export without --per-process: the global gauge only" eval \
		'[ $rc = 0 ] && grep -qx "mrpin_distinct_bytes 49928269824" "$out/stdout" && ! grep -q "^mrpin_process_" "$out/stdout"'
	run "$snaps/basic" export prometheus --per-process
	check "distinct: export of a module without them: no distinct family" eval \
		'[ $rc = 0 ] && ! grep -q distinct "$out/stdout"'
	distinct_doctor_tests
	count_limit_tests
}

# doctor: registered bytes at least twice the distinct ones, for information.
distinct_doctor_tests() {
	run "$snaps/mistakes" -j doctor
	check "distinct: doctor: memory registered twice, on 2 devices, for information" json_is \
		'[(f["severity"], f["subject"]["pid"], f["evidence"]["pinned_bytes"], f["evidence"]["distinct_bytes"], f["evidence"]["devices"], f["evidence"]["memlock_bytes"]) for f in d if f["kind"] == "duplicate"] == [("info", 7100, 1 << 30, 512 << 20, 2, 1 << 30)] and d[-1]["kind"] == "duplicate"'
	run "$snaps/mistakes" doctor
	check "distinct: doctor: the finding in words, with its advice" grep -qxF \
		"info    pid 7100 (allreduce) registers the same memory several times on 2 devices: VmPin and RLIMIT_MEMLOCK count 1.0 GiB, 512 MiB is pinned; RLIMIT_MEMLOCK (systemd LimitMEMLOCK=, ulimit -l) is charged as VmPin is: it must allow 1.0 GiB, not 512 MiB; a mrpin rule with count=distinct bounds what is really pinned (mrpinctl limit set process count=distinct max_pinned=SIZE)" "$out/stdout"
	scratch mistakes
	sed -i 's/^\(7100 .*\) 536870912$/\1 536870913/' "$out/snap/procs"
	run "$out/snap" -j doctor
	check "distinct: doctor: just under twice: nothing" json_is \
		'not any(f["kind"] == "duplicate" for f in d) and len(d) == 31'
	sed -i 's/^\(7100 .*\) 536870913$/\1 0/' "$out/snap/procs"
	run "$out/snap" -j doctor
	check "distinct: doctor: no distinct bytes: nothing" json_is \
		'not any(f["kind"] == "duplicate" for f in d)'
	scratch mistakes
	sed -i 's/^\(7100 .*\) 536870912$/\1 357913941/' "$out/snap/procs"
	sed -i 's/^57 7100 allreduce mlx5_1 /57 7100 allreduce mlx5_0 /' "$out/snap/pins"
	run "$out/snap" doctor
	check "distinct: doctor: three times, on one device: no device count" eval \
		'[ $rc = 1 ] && grep -q "^info    pid 7100 (allreduce) registers the same memory several times: VmPin and RLIMIT_MEMLOCK count 1.0 GiB, 341 MiB is pinned; " "$out/stdout" &&
		 tail -n1 "$out/stdout" | grep -qx "32 findings: 16 high, 11 medium, 4 low, 1 info"'
	scratch mistakes
	awk '{ $NF = "" } { sub(/ $/, ""); print }' "$snaps/mistakes/procs" >"$out/snap/procs"
	run "$out/snap" -j doctor
	check "distinct: doctor on a module without them: no such finding, the rest" eval \
		'[ $rc = 1 ] && json_is "not any(f[\"kind\"] == \"duplicate\" for f in d) and len(d) == 31"'
	scratch clean
	sed -i 's/^\(2001 .*\) 1071710208$/\1 535855104/' "$out/snap/procs"
	run "$out/snap" doctor
	check "distinct: doctor: only for information: exit 0, said" eval \
		'clean && [ $rc = 0 ] && [ "$(wc -l <"$out/stdout")" = 2 ] &&
		 grep -q "^info  pid 2001 (healthy) registers the same memory several times on 2 devices: " "$out/stdout" &&
		 tail -n1 "$out/stdout" | grep -qx "no problems found (2 processes, 3 pins, 2 devices), 1 informational finding"'
	run "$out/snap" -j doctor
	check "distinct: doctor JSON: only for information: exit 0, the finding" eval \
		'[ $rc = 0 ] && json_is "[(f[\"severity\"], f[\"kind\"], f[\"subject\"][\"pid\"]) for f in d] == [(\"info\", \"duplicate\", 2001)]"'
}

# --- ODP: on-demand-paging registrations, pins of 0 bytes (odp column,
# odp_pins); a module without them (the rest) shows what it did before ---

# odp_strip DIR: a module from before ODP: no odp column, no odp_pins.
odp_strip() {
	sed -i '/^odp_pins /d' "$1/stats"
	awk '{ $NF = "" } { sub(/ $/, ""); print }' "$snaps/odp/pins" >"$1/pins"
}

odp_tests() {
	local cmd
	for cmd in status pin dev proc doctor; do
		run "$snaps/odp" -j $cmd
		check "odp: $cmd is valid JSON" eval 'clean && [ $rc = 0 ] && json_valid'
	done
	run "$snaps/odp" -j pin
	check "odp: pin JSON: odp of every pin, 0 bytes where true" json_is \
		'[(p["id"], p["odp"], p["pinned_bytes"]) for p in d if p["odp"] or not p["pinned_bytes"]] == [(4, True, 0), (5, True, 0)] and all(type(p["odp"]) is bool for p in d)'
	run "$snaps/odp" pin
	check "odp: pin: PINNED says 0 B (odp), for them only" eval \
		'clean && [ $rc = 0 ] && [ "$(grep -c " 0 B (odp) " "$out/stdout")" = 2 ] &&
		 [ "$(grep -c "(odp)" "$out/stdout")" = 2 ]'
	run "$snaps/odp" pin min-size 1
	check "odp: pin min-size: an ODP registration pins nothing" eval \
		'clean && [ $rc = 0 ] && [ "$(wc -l <"$out/stdout")" = 4 ] && ! grep -q odp "$out/stdout"'
	run "$snaps/odp" -j status
	check "odp: status JSON: odp_pins beside pins" json_is \
		'd["pins"] == 5 and d["odp_pins"] == 2 and d["pinned_bytes"] == 1071718400 and list(d).index("odp_pins") == list(d).index("pins") + 1'
	run "$snaps/odp" status
	check "odp: status: the ODP registrations among them" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *1022 MiB in 5 registrations (2 ODP), 1022 MiB distinct" "$out/stdout" &&
		 grep -qx "Pins: *5" "$out/stdout"'
	run "$snaps/odp" export prometheus
	check "odp: export: mrpin_odp_pins, with HELP and TYPE, after mrpin_pins, valid" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" &&
		 grep -q "^# HELP mrpin_odp_pins ." "$out/stdout" &&
		 grep -qx "# TYPE mrpin_odp_pins gauge" "$out/stdout" &&
		 grep -qx "mrpin_odp_pins 2" "$out/stdout" &&
		 [ "$(grep "^mrpin_pins \|^mrpin_odp_pins " "$out/stdout" | paste -sd " ")" = "mrpin_pins 5 mrpin_odp_pins 2" ]'
	run "$snaps/odp" doctor
	check "odp: doctor: a 4 GiB ODP registration is not oversized, nothing found" eval \
		'clean && [ $rc = 0 ] && grep -qx "no problems found (2 processes, 5 pins, 2 devices)" "$out/stdout"'
	for cmd in "60 pin" "80 pin" "80 status"; do
		COLUMNS=${cmd% *} run "$snaps/odp" ${cmd#* }
		check "odp: ${cmd#* } fits ${cmd% *} columns" eval \
			'[ "$(awk "{ if (length(\$0) > m) m = length(\$0) } END { print m + 0 }" "$out/stdout")" -le ${cmd% *} ]'
	done

	# Modules without them: no odp, no odp_pins, the output as before
	# (expected/*-odp-stripped: what mrpinctl printed before it knew ODP).
	scratch odp
	odp_strip "$out/snap"
	golden pin-odp-stripped "$out/snap" pin
	golden json-pin-odp-stripped "$out/snap" -j pin
	golden status-odp-stripped "$out/snap" status
	golden json-status-odp-stripped "$out/snap" -j status
	golden export-odp-stripped "$out/snap" export prometheus
	run "$snaps/mistakes" -j pin
	check "odp: pin JSON of a module without the column: none" json_is \
		'not any("odp" in p for p in d) and len(d) == 57'
	run "$snaps/mistakes" -j status
	check "odp: status JSON of a module without them: none" json_is \
		'"odp_pins" not in d and d["pins"] == 57'
	run "$snaps/mistakes" export prometheus
	check "odp: export of a module without them: no odp family" eval \
		'[ $rc = 0 ] && ! grep -q odp "$out/stdout"'
	scratch odp
	sed -i 's/^odp_pins .*/odp_pins 0/' "$out/snap/stats"
	run "$out/snap" status
	check "odp: status with odp_pins 0: the line as without them" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *1022 MiB in 5 registrations, 1022 MiB distinct" "$out/stdout"'
	run "$out/snap" -j status
	check "odp: status JSON with odp_pins 0: odp_pins 0" json_is 'd["odp_pins"] == 0'
	run "$out/snap" export prometheus
	check "odp: export with odp_pins 0: the gauge, at 0" eval \
		'[ $rc = 0 ] && grep -qx "mrpin_odp_pins 0" "$out/stdout"'
	scratch odp
	sed -i '/^distinct_bytes /d' "$out/snap/stats"
	run "$out/snap" status
	check "odp: status: stats with odp_pins, without distinct_bytes" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *1022 MiB in 5 registrations (2 ODP)" "$out/stdout"'
	scratch odp
	sed -i 's/^\(5 2002 .*\) 1$/\1 yes/' "$out/snap/pins"
	run "$out/snap" pin
	check "odp: a bad odp: exit 1, named" fails_with 1 \
		"snap/pins:6: column 'odp': expected a number, found 'yes'"
	scratch odp
	sed -i 's/^odp_pins .*/odp_pins many/' "$out/snap/stats"
	run "$out/snap" status
	check "odp: a bad odp_pins: exit 1, named" fails_with 1 \
		"snap/stats:2: expected 'odp_pins NUMBER'"
	cut_fuzz odp pins 2 pin
	cut_fuzz odp stats 3 status
}

# --- peer memory: GPU memory registered through a peer memory client
# (nvidia-peermem), which pins no host page (stats peer_pins, peer_bytes;
# devices, procs peer_bytes; pins peer); a module without them shows what
# it did before ---

# peer_strip DIR: a module from before peer memory: no peer_pins or
# peer_bytes line, no peer or peer_bytes column (each table's last).
peer_strip() {
	local t
	sed -i '/^peer_pins /d; /^peer_bytes /d; /^peer_races_total /d' "$1/stats"
	for t in pins procs devices; do
		awk '{ $NF = "" } { sub(/ $/, ""); print }' "$snaps/peer/$t" >"$1/$t"
	done
}

# peer_zero DIR: the same module on a machine without peer memory: every
# peer value 0.
peer_zero() {
	sed -i 's/^\(peer_[a-z_]*\) .*/\1 0/' "$1/stats"
	awk 'NR > 1 { $NF = 0 } { print }' "$snaps/peer/pins" >"$1/pins"
	awk 'NR > 1 { $NF = 0 } { print }' "$snaps/peer/procs" >"$1/procs"
	awk 'NR > 1 { $NF = 0 } { print }' "$snaps/peer/devices" >"$1/devices"
}

peer_tests() {
	local cmd
	for cmd in status pin dev proc top doctor; do
		[ "$cmd" = top ] && cmd="top -n 1"
		# shellcheck disable=SC2086
		run "$snaps/peer" -j $cmd
		check "peer: $cmd is valid JSON" eval 'clean && [ $rc = 0 ] && json_valid'
	done
	run "$snaps/peer" -j pin
	check "peer: pin JSON: peer of every pin, 0 bytes where true, after state" json_is \
		'[(p["id"], p["peer"], p["pinned_bytes"], p["length"]) for p in d if p["peer"]] == [(3, True, 0, 2 << 30), (4, True, 0, 2 << 30), (6, True, 0, 2 << 30), (7, True, 0, 64 << 20)] and all(type(p["peer"]) is bool and list(p)[-2:] == ["state", "peer"] for p in d)'
	run "$snaps/peer" pin
	check "peer: pin: PINNED says 0 B (peer), for them only; 0 B (odp) as before" eval \
		'clean && [ $rc = 0 ] && [ "$(grep -c " 0 B (peer) " "$out/stdout")" = 4 ] &&
		 [ "$(grep -c "(peer)" "$out/stdout")" = 4 ] && [ "$(grep -c " 0 B (odp) " "$out/stdout")" = 1 ]'
	run "$snaps/peer" pin min-size 1
	check "peer: pin min-size: a peer registration pins no host byte" eval \
		'clean && [ $rc = 0 ] && [ "$(wc -l <"$out/stdout")" = 5 ] && ! grep -q "(peer)" "$out/stdout"'
	run "$snaps/peer" -j status
	check "peer: status JSON: peer_pins after odp_pins, peer_bytes apart from the host bytes" json_is \
		'(d["pins"], d["odp_pins"], d["peer_pins"], d["peer_bytes"], d["pinned_bytes"], d["distinct_bytes"]) == (9, 1, 4, 6509559808, 813694976, 813694976) and list(d).index("peer_pins") == list(d).index("odp_pins") + 1 and abs(d["ram_percent"] - 100.0 * 813694976 / 1081862635520) < 1e-4'
	check "peer: status JSON: the devices' and processes' peer bytes sum to the stats'" json_is \
		'sum(x["peer_bytes"] for x in d["devices"]) == d["peer_bytes"] == sum(p["peer_bytes"] for p in d["top_procs"]) and [p["peer_bytes"] for p in d["top_procs"]] == [4 << 30, (2 << 30) + (64 << 20), 0, 0]'
	run "$snaps/peer" status
	check "peer: status: the peer registrations among the pins, the peer memory on its own line" eval \
		'clean && [ $rc = 0 ] && grep -qx "Pinned: *776 MiB in 9 registrations (1 ODP, 4 peer), 776 MiB distinct" "$out/stdout" &&
		 grep -qx "Peer memory: *6.1 GiB in 4 registrations (device memory, no host page)" "$out/stdout" &&
		 grep -qx "Pinned of RAM: *<0.1%" "$out/stdout" && grep -qx "Pins: *9" "$out/stdout"'
	run "$snaps/peer" -j proc
	check "peer: proc JSON: peer_bytes of every process, apart from pinned_bytes" json_is \
		'[(p["pid"], p["pinned_bytes"], p["peer_bytes"]) for p in d] == [(4101, 512 << 20, 4 << 30), (4102, 256 << 20, (2 << 30) + (64 << 20)), (3050, 8 << 20, 0), (3077, 0, 0)]'
	run "$snaps/peer" -j dev
	check "peer: dev JSON: peer_bytes of every device" json_is \
		'[(x["device"], x["pins"], x["pinned_bytes"], x["peer_bytes"]) for x in d] == [("mlx5_0", 3, 276824064, 2 << 30), ("mlx5_1", 6, 512 << 20, 4362076160)]'
	run "$snaps/peer" top -n 1
	check "peer: top: Peer in the totals, the PEER column" eval \
		'clean && [ $rc = 0 ] && grep -q "  of RAM: <0.1%  Peer: 6.1 GiB  Pins: 9  " "$out/stdout" &&
		 grep -q "^ *PID .* PINNED .* PEER$" "$out/stdout"'
	run "$snaps/peer" -j top -n 1
	check "peer: top JSON: peer_bytes, in total and per process" json_is \
		'd["peer_bytes"] == 6509559808 and [p["peer_bytes"] for p in d["procs"]][:2] == [4 << 30, (2 << 30) + (64 << 20)]'
	run "$snaps/peer" export prometheus --per-process
	check "peer: export: the peer gauges after mrpin_odp_pins, with HELP and TYPE, valid" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" &&
		 grep -qx "# TYPE mrpin_peer_pins gauge" "$out/stdout" && grep -qx "# TYPE mrpin_peer_bytes gauge" "$out/stdout" &&
		 [ "$(grep "^mrpin_\(pinned_bytes\|pins\|odp_pins\|peer_pins\|peer_bytes\) " "$out/stdout" | paste -sd " ")" = \
		   "mrpin_pinned_bytes 813694976 mrpin_pins 9 mrpin_odp_pins 1 mrpin_peer_pins 4 mrpin_peer_bytes 6509559808" ]'
	check "peer: export: HELP says peer memory pins no host page and no host-bytes limit bounds it" eval \
		'grep -q "^# HELP mrpin_peer_bytes .*device (GPU) memory, which pins no host page.*bounded by no host-bytes limit" "$out/stdout" &&
		 grep -q "^# HELP mrpin_peer_pins .*pins no host page" "$out/stdout"'
	check "peer: export: per device and per process, the host bytes apart" eval \
		'grep -qx "mrpin_device_peer_bytes{device=\"mlx5_1\"} 4362076160" "$out/stdout" &&
		 grep -qx "mrpin_device_pinned_bytes{device=\"mlx5_1\"} 536870912" "$out/stdout" &&
		 grep -qx "mrpin_process_peer_bytes{pid=\"4101\",comm=\"python3\"} 4294967296" "$out/stdout" &&
		 grep -qx "mrpin_process_pinned_bytes{pid=\"4101\",comm=\"python3\"} 536870912" "$out/stdout" &&
		 [ "$(grep -c "^mrpin_process_peer_bytes{" "$out/stdout")" = 4 ]'
	run "$snaps/peer" export prometheus
	check "peer: export without --per-process: no process family" eval \
		'[ $rc = 0 ] && grep -q "^mrpin_device_peer_bytes{" "$out/stdout" && ! grep -q "^mrpin_process_" "$out/stdout"'
	run "$snaps/peer" doctor
	check "peer: doctor: GPU registrations (0 host bytes, oversized when charged first, 64 KiB-aligned) are no mistake" eval \
		'clean && [ $rc = 0 ] && [ "$(cat "$out/stdout")" = "no problems found (4 processes, 9 pins, 2 devices)" ]'
	for cmd in "60 pin" "80 pin" "60 proc" "80 proc" "60 dev" "80 status"; do
		# shellcheck disable=SC2086
		COLUMNS=${cmd% *} run "$snaps/peer" ${cmd#* }
		check "peer: ${cmd#* } fits ${cmd% *} columns" eval \
			'[ "$(awk "{ if (length(\$0) > m) m = length(\$0) } END { print m + 0 }" "$out/stdout")" -le ${cmd% *} ]'
	done
	COLUMNS=72 run "$snaps/peer" proc
	check "peer: proc at 72 columns: PEER kept, DISTINCT left out first" eval \
		'grep -q "^ *PID .* PINNED  *PEER$" "$out/stdout" && ! grep -q DISTINCT "$out/stdout"'
	peer_doctor_tests

	# Modules without them: no peer column or line, the output as before
	# (expected/*-peer-stripped: what mrpinctl printed before it knew peer
	# memory).
	scratch peer
	peer_strip "$out/snap"
	golden status-peer-stripped "$out/snap" status
	golden json-status-peer-stripped "$out/snap" -j status
	golden pin-peer-stripped "$out/snap" pin
	golden json-pin-peer-stripped "$out/snap" -j pin
	golden proc-peer-stripped "$out/snap" proc
	golden dev-peer-stripped "$out/snap" dev
	golden export-peer-stripped "$out/snap" export prometheus --per-process
	run "$snaps/mistakes" -j pin
	check "peer: pin JSON of a module without the column: none" json_is \
		'not any("peer" in p for p in d) and len(d) == 57'
	run "$snaps/mistakes" -j status
	check "peer: status JSON of a module without them: none" json_is \
		'"peer_pins" not in d and "peer_bytes" not in d and not any("peer_bytes" in x for x in d["devices"] + d["top_procs"])'
	run "$snaps/mistakes" export prometheus --per-process
	check "peer: export of a module without them: no peer family" eval \
		'[ $rc = 0 ] && ! grep -q peer "$out/stdout"'

	# A module with them, on a machine without peer memory: the text as
	# without them; in JSON and the export, zeros.
	scratch peer
	peer_zero "$out/snap"
	for cmd in status pin proc dev; do
		run "$out/snap" $cmd
		check "peer: none registered: $cmd as from a module without them" eval \
			'clean && [ $rc = 0 ] && cmp -s "$out/stdout" "$here/expected/$cmd-peer-stripped"'
	done
	run "$out/snap" -j status
	check "peer: none registered: status JSON, peer_pins and peer_bytes 0" json_is \
		'(d["peer_pins"], d["peer_bytes"]) == (0, 0) and all(x["peer_bytes"] == 0 for x in d["devices"] + d["top_procs"])'
	run "$out/snap" export prometheus
	check "peer: none registered: export, the gauges at 0" eval \
		'[ $rc = 0 ] && grep -qx "mrpin_peer_pins 0" "$out/stdout" && grep -qx "mrpin_peer_bytes 0" "$out/stdout" &&
		 grep -qx "mrpin_device_peer_bytes{device=\"mlx5_0\"} 0" "$out/stdout"'

	# Garbage where a peer value is: the table and line named.
	scratch peer
	sed -i 's/^\(7 4102 .*\) 1$/\1 yes/' "$out/snap/pins"
	run "$out/snap" pin
	check "peer: a bad peer: exit 1, named" fails_with 1 \
		"snap/pins:8: column 'peer': expected a number, found 'yes'"
	scratch peer
	sed -i 's/^\(4102 .*\) 2214592512$/\1 2G/' "$out/snap/procs"
	run "$out/snap" proc
	check "peer: a bad procs peer_bytes: exit 1, named" fails_with 1 \
		"snap/procs:3: column 'peer_bytes': expected a number, found '2G'"
	scratch peer
	sed -i 's/^\(mlx5_0 .*\) 2147483648$/\1 -1/' "$out/snap/devices"
	run "$out/snap" dev
	check "peer: a bad devices peer_bytes: exit 1, named" fails_with 1 \
		"snap/devices:2: column 'peer_bytes': expected a number, found '-1'"
	scratch peer
	sed -i 's/^peer_bytes .*/peer_bytes lots/' "$out/snap/stats"
	run "$out/snap" status
	check "peer: a bad peer_bytes line: exit 1, named" fails_with 1 \
		"snap/stats:4: expected 'peer_bytes NUMBER'"
	cut_fuzz peer pins 3 pin
	cut_fuzz peer stats 3 status
	cut_fuzz peer procs 5 proc
	cut_fuzz peer devices 2 dev
}

# doctor: what it would have said of the same pins as host memory; a peer
# registration in flight; RLIMIT_MEMLOCK with the peer memory VmPin counts.
peer_doctor_tests() {
	scratch peer
	awk 'NR > 1 { $NF = 0 } { print }' "$snaps/peer/pins" >"$out/snap/pins"
	run "$out/snap" -j doctor
	check "peer: doctor: the same pins as host memory would be oversized and misaligned" json_is \
		'sorted((f["kind"], f["subject"]["pid"]) for f in d) == [("misaligned-2m", 4102), ("oversized", 4101), ("oversized", 4102)]'
	scratch peer
	sed -i 's/^\(7 4102 .* mlx5_ib_reg_user_mr\) 120000 \(.*\) pinned 1$/\1 60000 \2 pinning 1/' "$out/snap/pins"
	run "$out/snap" -j doctor
	check "peer: doctor: a peer registration in flight, told by its length" json_is \
		'[(f["kind"], f["subject"]["pid"], f["evidence"]["pin_id"], f["evidence"]["pinned_bytes"], f["evidence"]["length_bytes"], f["message"]) for f in d] == [("in-flight", 4102, 7, 0, 64 << 20, "pid 4102 (python3) has a registration of 64.0 MiB taken for peer memory (no host bytes charged) in flight for 1m00s: its pin waits in the kernel")] and "peer memory client" in d[0]["advice"]'
	run "$out/snap" pin
	check "peer: pin: in flight reads (pinning)" eval \
		'clean && [ $rc = 0 ] && grep -q " 0 B (pinning) " "$out/stdout" && [ "$(grep -c "(peer)" "$out/stdout")" = 3 ]'
	scratch peer
	sed -i 's/^\(4101 .*\) 536870912 608 4294967296$/\1 268435456 608 4294967296/' "$out/snap/procs"
	run "$out/snap" -j doctor
	check "peer: doctor: a duplicate's RLIMIT_MEMLOCK counts the peer memory VmPin does, its bytes apart" json_is \
		'[(f["kind"], f["evidence"]["pinned_bytes"], f["evidence"]["distinct_bytes"], f["evidence"]["peer_bytes"], f["evidence"]["vm_pinned_bytes"]) for f in d] == [("duplicate", 512 << 20, 256 << 20, 4 << 30, 4831838208)] and "it must allow 4.5 GiB (its 4.0 GiB of peer memory included: " in d[0]["advice"] and d[0]["message"].endswith("count 512 MiB and 4.0 GiB of peer memory, 256 MiB is pinned")'
}

# --- the MR table: who holds it, full or not; the device's refusals ---

mr_table_tests() {
	local t
	run "$snaps/mrtable" -j doctor
	check "mr-table: over the mark, not full: the holder, its oldest MRs, no refusal" json_is \
		'[(f["severity"], f["subject"], f["evidence"]["holder_pid"], f["evidence"]["holder_comm"], f["evidence"]["holder_pins"], f["evidence"]["oldest_age_ms"], f["evidence"]["refused"], f["evidence"]["pins"], f["evidence"]["max_mr"]) for f in d if f["kind"] == "mr-table"] == [("high", {"scope": "device", "device": "rxe0"}, 206, "mrpin_mr_fill", 12, 97000, 0, 18, 20)]'
	check "mr-table: the holder's 3 oldest MRs, the older first, then by id" json_is \
		'[f["evidence"]["oldest"] for f in d if f["kind"] == "mr-table"] == [[{"id": 7, "age_ms": 97000, "start": 94558000119808, "length": 4096, "caller": "rxe_mr_init_user"}, {"id": 8, "age_ms": 97000, "start": 94558000128000, "length": 4096, "caller": "rxe_mr_init_user"}, {"id": 9, "age_ms": 96000, "start": 94558000136192, "length": 4096, "caller": "rxe_mr_init_user"}]]'
	check "mr-table: not full: no 'full' in the message" json_is \
		'[f["message"] for f in d if f["kind"] == "mr-table"] == ["rxe0: 90% of max_mr in use (18 of 20, mr_table_warn=80%): pid 206 (mrpin_mr_fill) holds 12, the oldest for 1m37s"]'
	check "odp: ODP pins are neither misaligned nor 2 MiB-misaligned" json_is \
		'not any(f["kind"].startswith("misaligned") for f in d)'
	scratch mrtable
	sed -i 's/ 0 1$/ 0 0/' "$out/snap/pins"
	run "$out/snap" -j doctor
	check "odp: the same pins without odp are misaligned" json_is \
		'sorted((f["kind"], f["subject"]["pid"]) for f in d if f["kind"].startswith("misaligned")) == [("misaligned", 150), ("misaligned-2m", 150), ("misaligned-2m", 207)]'
	run "$snaps/mrtable-full" -j doctor
	check "mr-table: full: a refusal, 'full', the holder; advice: ibv_dereg_mr or a restart" json_is \
		'[(f["severity"], f["evidence"]["refused"], f["evidence"]["holder_pid"], f["evidence"]["holder_pins"], "full" in f["message"], "ibv_dereg_mr" in f["advice"] and "restarted" in f["advice"]) for f in d if f["kind"] == "mr-table"] == [("high", 1, 206, 13, True, True)]'
	check "mr-table: full, in words" json_is \
		'[f["message"] for f in d if f["kind"] == "mr-table"] == ["rxe0: the MR table is full (19 of 20, 1 registration refused): pid 206 (mrpin_mr_fill) holds 13, the oldest for 1m37s"]'
	check "failed: cause device: the device, its live pins and max_mr, errno" json_is \
		'[(f["severity"], f["subject"]["pid"], f["evidence"]["cause"], f["evidence"]["device"], f["evidence"]["device_pins"], f["evidence"]["max_mr"], f["evidence"]["errno"], f["evidence"]["events"], f["evidence"]["process_failures"]) for f in d if f["kind"] == "failed"] == [("high", 206, "device", "rxe0", 19, 20, 22, 1, 1)]'
	check "failed: cause device, in words, pointing at the MR table" json_is \
		'[(f["message"], "mr-table" in f["advice"] and "ibv_dereg_mr" in f["advice"]) for f in d if f["kind"] == "failed"] == [("pid 206 (mrpin_mr_fill): rxe0 refused 1 registration (EINVAL) with 19 of max_mr 20 live, the last at Dec 03 21:21:59", True)]'
	scratch mrtable
	sed -i 's/^\(rxe0 .* 20\) 18 /\1 20 /' "$out/snap/devices"
	run "$out/snap" -j doctor
	check "mr-table: at max_mr, no refusal yet: full" json_is \
		'[(f["evidence"]["refused"], f["message"].startswith("rxe0: the MR table is full (20 of 20): pid 206 ")) for f in d if f["kind"] == "mr-table"] == [(0, True)]'
	scratch mrtable
	sed -i 's/^\([789]\) 206 mrpin_mr_fill /\1 150 ib_send_bw /' "$out/snap/pins"
	run "$out/snap" -j doctor
	check "mr-table: as many pins: the lowest pid holds the table" json_is \
		'[(f["evidence"]["holder_pid"], f["evidence"]["holder_pins"], [o["id"] for o in f["evidence"]["oldest"]]) for f in d if f["kind"] == "mr-table"] == [(150, 9, [1, 2, 3])]'
	scratch mrtable
	head -n1 "$snaps/mrtable/pins" >"$out/snap/pins"
	run "$out/snap" -j doctor
	check "mr-table: no live pin in the pins view: no holder" json_is \
		'[(sorted(f["evidence"]), f["message"]) for f in d if f["kind"] == "mr-table"] == [(sorted(["pins", "max_mr", "mr_use_percent", "mr_table_warn_percent", "pinned_bytes", "refused"]), "rxe0: 90% of max_mr in use (18 of 20, mr_table_warn=80%)")]'
	scratch mrtable-full
	sed -i 's/^\(rxe0 .* 20\) 19 /\1 10 /' "$out/snap/devices"
	run "$out/snap" -j doctor
	check "mr-table: a mark crossed before, and the refusals since" json_is \
		'[(f["severity"], f["evidence"]["refused"], f["message"]) for f in d if f["kind"] == "mr-table"] == [("medium", 1, "rxe0: the MR table crossed its mr_table_warn mark 1 time, the last at Dec 03 21:20:59 with 16 pins, and it refused 1 registration, the last at Dec 03 21:21:59")]'
	scratch mrtable-full
	sed -i '/ fail /d' "$out/snap/events"
	run "$out/snap" -j doctor
	check "failed: device failures the events no longer show" json_is \
		'[(f["severity"], f["evidence"], f["message"]) for f in d if f["kind"] == "failed"] == [("medium", {"cause": "device", "failures": 1, "failures_total": 1}, "1 more registration failed since mrpin was loaded because the device'"'"'s driver refused them (its MR table full, or its own limits) (device), before the events the module keeps")]'
	run "$snaps/mrtable-full" -j events
	check "events: a device refusal: usage and limit are counts" json_is \
		'[(e["scope"], e["key"], e["asked"], e["usage"], e["limit"], e["errno"]) for e in d if e["action"] == "fail"] == [("device:rxe0", "device", 4096, 19, 20, 22)]'
	run "$snaps/mrtable-full" export prometheus
	check "export: failures by cause, device too, from a module that counts it" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" &&
		 [ "$(grep -c "^mrpin_failures_total{cause=\"[a-z]*\"} [0-9]*$" "$out/stdout")" = 9 ] &&
		 grep -qx "mrpin_failures_total{cause=\"device\"} 1" "$out/stdout"'
	run "$snaps/mistakes" export prometheus
	check "export: a module without failures_device_total: no device series" eval \
		'[ $rc = 0 ] && ! grep -q "cause=\"device\"" "$out/stdout"'

	# The bug this fixed: doctor crashed on a device failure (cause
	# device had no words, its advice NULL).
	scratch mistakes
	echo "24 1796332919331281340 fail 205 mrpin_mr_fill 0 device:rxe0 device 4096 524286 524287 12" >>"$out/snap/events"
	echo "failures_device_total 1" >>"$out/snap/stats"
	run "$out/snap" doctor
	check "doctor: a device failure among the others: no crash, said" eval \
		'clean && [ $rc = 1 ] && grep -q "^high    pid 205 (mrpin_mr_fill): rxe0 refused 1 registration (ENOMEM) with 524,286 of max_mr 524,287 live, the last at .*; the device" "$out/stdout"'
	run "$out/snap" -j doctor
	check "doctor JSON: a device failure among the others: no crash, every finding with advice" eval \
		'clean && [ $rc = 1 ] && json_is "all(f[\"advice\"] for f in d) and len(d) == 33"'
	sed -i 's/^failures_device_total 1$/failures_device_total 4/' "$out/snap/stats"
	run "$out/snap" -j doctor
	check "doctor JSON: device failures only counted: no crash, a finding" eval \
		'clean && [ $rc = 1 ] && json_is "[f[\"evidence\"][\"failures\"] for f in d if f[\"kind\"] == \"failed\" and f[\"evidence\"][\"cause\"] == \"device\" and f[\"subject\"][\"scope\"] == \"global\"] == [3]"'

	# Half a million MRs (rxe's max_mr) in pins: read and aggregated in
	# O(n log n); a quadratic doctor would take hours.
	scratch mrtable-full
	python3 - "$out/snap" <<-'PY'
		import sys
		d, n = sys.argv[1], 524286
		with open(d + "/pins", "w") as f:
		    f.write("# id pid comm device start length pinned_bytes caller age_ms stack bytes_4k bytes_2m bytes_1g align oversized odp\n")
		    for i in range(1, n + 1):
		        f.write("%d 206 mrpin_mr_fill rxe0 94558000119808 4096 4096 rxe_mr_init_user %d 0 4096 0 0 8192 0 0\n" % (i, 97000 - i * 97000 // n))
		with open(d + "/devices", "w") as f:
		    f.write("# device node_guid max_mr pins pinned_bytes\nrxe0 f88a:f1ff:fe83:e6b0 524287 %d %d\n" % (n, n * 4096))
	PY
	t=$(date +%s%N)
	run "$out/snap" -j doctor
	t=$((($(date +%s%N) - t) / 1000000))
	diag "doctor on 524,286 pins: $t ms"
	check "mr-table: 524,286 pins: the holder, its oldest, in under 30 s ($t ms)" eval \
		'clean && [ $rc = 1 ] && [ $t -lt 30000 ] && json_is "[(f[\"evidence\"][\"holder_pins\"], [o[\"id\"] for o in f[\"evidence\"][\"oldest\"]], \"full\" in f[\"message\"]) for f in d if f[\"kind\"] == \"mr-table\"] == [(524286, [1, 2, 3], True)]"'
}

# --- growing leaks and stable sets, from callsites' newest_age_ms ---

growth_tests() {
	run "$snaps/growth" -j doctor
	check "growth: a growing leak and a stable set, nothing for the rest" json_is \
		'sorted((f["kind"], f["severity"], f["subject"]["pid"]) for f in d if f["kind"] in ("growing-leak", "stable-set")) == [("growing-leak", "high", 311), ("stable-set", "info", 377)]'
	check "growth: the leak's evidence, exact" json_is \
		'[(f["subject"], f["evidence"]["pins"], f["evidence"]["bytes"], f["evidence"]["oldest_age_ms"], f["evidence"]["newest_age_ms"], f["evidence"]["deregistrations"], abs(f["evidence"]["rate_per_s"] - 12344 * 1000 / 617200) < 1e-6, len(f["evidence"]["frames"]), f["evidence"]["caller"]["address"]) for f in d if f["kind"] == "growing-leak"] == [({"scope": "process", "pid": 311, "comm": "leaky_worker"}, 12345, 12345 * 4096, 617250, 50, 0, True, 3, 0x7f3a1c0f2b3d)]'
	check "growth: the stable set's evidence, exact" json_is \
		'[(f["subject"]["comm"], f["evidence"]["pins"], f["evidence"]["bytes"], f["evidence"]["oldest_age_ms"], f["evidence"]["newest_age_ms"], f["evidence"]["deregistrations"], "rate_per_s" in f["evidence"]) for f in d if f["kind"] == "stable-set"] == [("kv_cache", 2000, 2000 << 20, 540000, 539000, 0, False)]'
	run "$snaps/growth" doctor
	check "growth: the leak in words" grep -qxF \
		"high  pid 311 (leaky_worker) leaks MRs from 0x7f3a1c0f2b3d,0x55d0c0a01234,0x55d0c0a00e99 (not symbolized: the process is gone): 12,345 live, none ever deregistered, 20.0 new a second for 10m17s; deregister each MR with ibv_dereg_mr once it is done with it: until then every one holds an entry of the device's MR table (max_mr) and its pinned memory" "$out/stdout"
	check "growth: the stable set in words" grep -qF \
		"info  pid 377 (kv_cache) holds a stable set of 2,000 MRs from 0x7f3a1c0f2b3d,0x55d0c0a02000,0x55d0c0a00e99 (not symbolized: the process is gone), none new for 8m59s (a registration cache); " "$out/stdout"
	# The thresholds, each side of them.
	scratch growth
	sed -i 's/^\(311 leaky_worker 12345 .*\) 50$/\1 154312/' "$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: newest age exactly a quarter of the oldest's: still growing" json_is \
		'[f["subject"]["pid"] for f in d if f["kind"] == "growing-leak"] == [311]'
	sed -i 's/^\(311 leaky_worker 12345 .*\) 154312$/\1 154313/' "$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: newest age just over a quarter: neither a leak nor stable" json_is \
		'not [f for f in d if f["kind"] in ("growing-leak", "stable-set") and f["subject"]["pid"] == 311]'
	scratch growth
	sed -i 's/^\(377 kv_cache .*\) 539000$/\1 270000/' "$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: newest age exactly half the oldest's: stable" json_is \
		'[f["subject"]["pid"] for f in d if f["kind"] == "stable-set"] == [377]'
	sed -i 's/^\(377 kv_cache .*\) 270000$/\1 269999/' "$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: newest age just under half: not stable" json_is \
		'not [f for f in d if f["kind"] == "stable-set"]'
	scratch growth
	sed -i 's/^600 few_regs 99 /600 few_regs 100 /' "$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: 100 live pins at a site: enough" json_is \
		'sorted(f["subject"]["pid"] for f in d if f["kind"] == "growing-leak") == [311, 600]'
	scratch growth
	sed -i 's/^\(311 leaky_worker .* 0 0 0 \)0 12348 /\10 12349 /' "$out/snap/procs"
	run "$out/snap" -j doctor
	check "growth: a process that deregistered once is no leak" json_is \
		'not [f for f in d if f["kind"] == "growing-leak"] and len([f for f in d if f["kind"] == "stable-set"]) == 1'
	scratch growth
	sed -i 's/^\(311 leaky_worker .* 0 0 0 \)0 12348 /\15 12353 /' "$out/snap/procs"
	run "$out/snap" -j doctor
	check "growth: MRs released by the cleanup are no deregistration" json_is \
		'[f["subject"]["pid"] for f in d if f["kind"] == "growing-leak"] == [311]'
	# Older modules: no newest_age_ms, no cleanup_releases.
	scratch growth
	sed 's/ newest_age_ms$//; s/ [0-9]*$//' "$snaps/growth/callsites" >"$out/snap/callsites"
	run "$out/snap" -j doctor
	check "growth: callsites without newest_age_ms: no such finding, the rest" json_is \
		'not [f for f in d if f["kind"] in ("growing-leak", "stable-set")] and len([f for f in d if f["kind"] == "leak-suspect"]) == 4'
	scratch growth
	awk '{ $(NR == 1 ? 17 : 16) = "" } { gsub(/  +/, " "); print }' "$snaps/growth/procs" >"$out/snap/procs"
	run "$out/snap" -j doctor
	check "growth: procs without cleanup_releases: no leak told, the stable set still" json_is \
		'[(f["kind"], "deregistrations" in f["evidence"]) for f in d if f["kind"] in ("growing-leak", "stable-set")] == [("stable-set", False)]'
	cut_fuzz growth callsites 5 doctor
}

# --- causes and keys of a newer module: generic, never a crash ---

future_cause_tests() {
	local cmd
	for cmd in status proc pin dev events "export prometheus" doctor; do
		# shellcheck disable=SC2086
		run "$snaps/future-cause" $cmd
		check "future cause: $cmd: output, no crash" eval \
			'clean && [ -s "$out/stdout" ] && { [ $rc = 0 ] || { [ "$cmd" = doctor ] && [ $rc = 1 ]; }; }'
		[ "$cmd" = "export prometheus" ] && continue
		# shellcheck disable=SC2086
		run "$snaps/future-cause" -j $cmd
		check "future cause: $cmd JSON: valid, no crash" eval \
			'clean && { [ $rc = 0 ] || { [ "$cmd" = doctor ] && [ $rc = 1 ]; }; } && json_valid'
	done
	run "$snaps/future-cause" -j doctor
	check "future cause: doctor: a failure of an unknown cause, by process, its numbers as they are" json_is \
		'[(f["subject"]["pid"], f["evidence"]["cause"], f["evidence"]["events"], f["evidence"]["usage"], f["evidence"]["limit"], f["evidence"]["errno"], "does not know" in f["message"] and "update mrpinctl" in f["advice"]) for f in d if f["kind"] == "failed" and f["evidence"]["cause"] == "frobnicated"] == [(410, "frobnicated", 2, 4096, None, 95, True), (411, "frobnicated", 1, 19, 20, 5, True)]'
	check "future cause: doctor: an unknown action is no limit crossed" json_is \
		'not [f for f in d if f["subject"].get("pid") == 413] and [f["evidence"]["limit"] for f in d if f["subject"].get("pid") == 412] == [5]'
	run "$snaps/future-cause" export prometheus
	check "future cause: export: the causes it knows, valid" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" && ! grep -q frob "$out/stdout" &&
		 [ "$(grep -c "^mrpin_failures_total{" "$out/stdout")" = 9 ]'
	run "$snaps/future-cause" -j status
	check "future cause: status: failures_total as the module counts it" json_is 'd["failures_total"] == 4'
	cut_fuzz future-cause events 7 doctor
	cut_fuzz future-cause stats 11 export prometheus
}

# count=: the global and process rules only.
count_limit_tests() {
	run "$snaps/mistakes" -j limit
	check "count: limit JSON: the global and process rules' count" json_is \
		'd[0]["count"] == "distinct" and d[1]["count"] == "registered" and "count" not in d[2]'
	run "$snaps/basic" -j limit
	check "count: limit JSON of a module without it: none" json_is \
		'not any("count" in r for r in d)'
	run "$snaps/basic" limit
	check "count: limit of a module without it: none" eval \
		'clean && [ $rc = 0 ] && ! grep -q count= "$out/stdout"'
	scratch mistakes
	run "$out/snap" limit set global count=registered
	check "count: limit set global count=registered" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "global count=registered" ]'
	run "$out/snap" limit set process max_pinned=4G count=distinct
	check "count: limit set process count=distinct, with max_pinned" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "process max_pinned=4G count=distinct" ]'
	scratch mistakes
	run "$out/snap" limit set uid root count=distinct
	check "count: refused on a uid rule, nothing written" eval \
		'fails_with 2 "limit set: '"'"'count'"'"' is a key of the global and process rules only" &&
		 cmp -s "$snaps/mistakes/limits" "$out/snap/limits"'
	run "$out/snap" limit set cgroup / max_pinned=1G count=registered
	check "count: refused on a cgroup rule, nothing written" eval \
		'fails_with 2 "limit set: '"'"'count'"'"' is a key of the global and process rules only" &&
		 cmp -s "$snaps/mistakes/limits" "$out/snap/limits"'
	run "$out/snap" limit set global count=union
	check "count: a bad value: the values named" fails_with 2 \
		"bad value 'union' for count: expected registered or distinct"
	run "$out/snap" limit set uid root frob=1
	check "count: an unknown key on a uid rule: the keys of every rule" fails_with 2 \
		"unknown key 'frob': expected max_pinned, max_pins, max_pin_size or action"
	run "$out/snap" limit set process frob=1
	check "count: an unknown key on the process rule: count named too" fails_with 2 \
		"unknown key 'frob': expected max_pinned, max_pins, max_pin_size or action (process also: count)"
	run "$out/snap" limit help
	check "count: limit help names count" eval \
		'[ $rc = 0 ] && grep -q "^         count  *global and process: what max_pinned counts" "$out/stdout"'
}

# --- bad command lines and bad configs: exit 2, one clear message ---

bad_args_tests() {
	local line n=0 bad=0 args
	while IFS= read -r line; do
		case "$line" in '#'* | '') continue ;; esac
		eval "args=($line)"
		n=$((n + 1))
		run "$snaps/basic" "${args[@]}"
		if ! clean || [ "$rc" != 2 ] || [ -s "$out/stdout" ] ||
			! grep -q '^mrpinctl: .' "$out/stderr" ||
			[ "$(wc -l <"$out/stderr")" != 1 ]; then
			bad=$((bad + 1))
			diag "mrpinctl $line: status $rc: $(head -c 200 "$out/stderr")"
		fi
	done <"$here/bad-args.txt"
	check "bad command lines: all $n exit 2 with one 'mrpinctl: ...' line" test "$bad" = 0
	"$bin" >"$out/stdout" 2>"$out/stderr"
	rc=$?
	crashed "mrpinctl (no arguments)" "$out/stderr"
	check "no arguments: usage on stderr, exit 2" eval \
		'[ $rc = 2 ] && [ ! -s "$out/stdout" ] && grep -q "^Usage: mrpinctl" "$out/stderr"'
}

bad_config_tests() {
	local f name want
	for f in "$here"/bad-configs/*.conf; do
		name=$(basename "$f" .conf)
		want=$f$(sed -n '1s/^# expect: //p' "$f")
		scratch basic
		run "$out/snap" apply "$f"
		check "bad config $name: exit 2 with FILE:LINE:COL" fails_with 2 "mrpinctl: $want"
		check "bad config $name: nothing applied" cmp -s "$snaps/basic/limits" "$out/snap/limits"
		run "$out/snap" apply --check "$f"
		check "bad config $name: --check says the same" fails_with 2 "mrpinctl: $want"
	done
	scratch basic
	run "$out/snap" apply "$here/good-configs/examples.conf" "$here/bad-configs/twice.conf"
	check "bad config after a good one: nothing applied" eval \
		'fails_with 2 "twice.conf:2:22:" && cmp -s "$snaps/basic/limits" "$out/snap/limits"'
	run "$out/snap" apply "$out/no-such-file.conf"
	check "missing config file: exit 2, named" fails_with 2 "no-such-file.conf: No such file or directory"
}

good_config_tests() {
	local f name
	for f in "$here"/good-configs/*.conf; do
		name=$(basename "$f" .conf)
		scratch basic
		run "$out/snap" apply --check "$f"
		check "good config $name: --check OK" eval 'clean && [ $rc = 0 ] && cmp -s "$snaps/basic/limits" "$out/snap/limits"'
		run "$out/snap" apply "$f"
		if [ -s "${f%.conf}.expect" ]; then
			check "good config $name: one normalised transaction written" eval \
				'clean && [ $rc = 0 ] && cmp -s "${f%.conf}.expect" "$out/snap/limits"'
		else
			check "good config $name: nothing to write" eval \
				'clean && [ $rc = 0 ] && cmp -s "$snaps/basic/limits" "$out/snap/limits"'
		fi
	done
	scratch basic
	"$bin" --debugfs "$out/snap" apply - <"$here/good-configs/examples.conf" >/dev/null 2>"$out/stderr"
	rc=$?
	crashed "mrpinctl apply -" "$out/stderr"
	check "apply - reads standard input" cmp -s "$here/good-configs/examples.expect" "$out/snap/limits"
	scratch basic
	run "$out/snap" apply "$here/good-configs/existing-rules.conf" "$here/good-configs/examples.conf"
	check "apply FILE FILE: one write, in order" eval \
		'[ $rc = 0 ] && cat "$here/good-configs/existing-rules.expect" "$here/good-configs/examples.expect" | cmp -s - "$out/snap/limits"'
}

# `limit show` saved is a config that restores the same policy.
roundtrip_tests() {
	local dir
	for dir in basic empty mistakes; do
		scratch $dir
		# Cgroup rules must name cgroups that exist here: only /.
		awk '$1 != "cgroup" || !seen[$2]++' "$snaps/$dir/limits" |
			sed 's|^cgroup /[^ ]*|cgroup /|' >"$out/snap/limits"
		run "$out/snap" limit show
		cp "$out/stdout" "$out/saved.conf"
		run "$out/snap" apply --check "$out/saved.conf"
		check "limit show ($dir) is a valid config" eval 'clean && [ $rc = 0 ]'
		run "$out/snap" apply "$out/saved.conf"
		run "$out/snap" limit show
		check "limit show ($dir) saved and applied restores the policy" cmp -s "$out/saved.conf" "$out/stdout"
	done
}

limit_write_tests() {
	scratch basic
	run "$out/snap" limit set uid root max_pinned=8G action=warn
	check "limit set: names resolved, one line written" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "uid 0 max_pinned=8G action=warn" ]'
	run "$out/snap" lim se cgroup // max_pins=5
	check "limit set: prefixes, cgroup path normalised" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "cgroup / max_pins=5" ]'
	scratch basic
	run "$out/snap" limit delete uid nobody
	check "limit delete: an existing rule" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "uid 65534 delete" ]'
	run "$out/snap" limit reset
	check "limit reset" eval '[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = reset ]'
	scratch future
	run "$out/snap" limit set global stack=deny frobnicate=9 mr_table_warn=90%
	check "limit set: the global keys, and a key learned from the module" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "global stack=deny mr_table_warn=90% frobnicate=9" ]'
	run "$out/snap" limit set process frobnicate=1 2>/dev/null
	check "limit set: a learned key goes to the module to check" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "process frobnicate=1" ]'
	run "$out/snap" limit set global log_failures=on
	check "limit set: log_failures, a key of the global rule" eval \
		'[ $rc = 0 ] && [ "$(cat "$out/snap/limits")" = "global log_failures=on" ]'
	run "$out/snap" limit set uid root log_failures=on
	check "limit set: log_failures on another rule" fails_with 2 "'log_failures' is a key of the global rule only"
	scratch basic
	run "$out/snap" limit set global frobnicate=1
	check "limit set: a key the module does not have" fails_with 2 "unknown key 'frobnicate'"
}

# --- broken tables: exit 1, naming file and line; never a crash ---

garbled_tests() {
	local g=$snaps/garbled t=$snaps/truncated
	run "$g" proc
	check "garbled procs: a negative number named" fails_with 1 "garbled/procs:2: column 'pinned_bytes': expected a number, found '-1126400'"
	run "$g" pin
	check "garbled pins: no header" fails_with 1 "garbled/pins:1: expected a header line starting with '# '"
	run "$g" dev
	check "garbled devices: a short line" fails_with 1 "garbled/devices:2: expected 5 columns, found 4"
	run "$g" events
	check "garbled events: a column missing from the header" fails_with 1 "garbled/events:1: no column 'limit' in the header"
	run "$g" limit
	check "garbled limits: named with line and column" fails_with 1 "garbled/limits:3:19: bad value 'lots' for max_pinned"
	run "$g" cgroup
	check "garbled cgroups: a short line" fails_with 1 "garbled/cgroups:2: expected 4 columns, found 3"
	run "$g" status
	check "garbled version" fails_with 1 "garbled/version: expected 'mrpin VERSION'"
	run "$g" export prometheus
	check "garbled export: nothing written" fails_with 1 "garbled/version"
	run "$t" proc
	check "truncated procs: the cut line named" fails_with 1 "truncated/procs:4: "
	run "$t" pin
	check "truncated pins: the cut line named" fails_with 1 "truncated/pins:4: truncated line (no newline at the end)"
	run "$t" status
	check "truncated stats" fails_with 1 "truncated/stats:"
	run "$t" limit
	check "truncated limits" fails_with 1 "truncated/limits:"
	run "$snaps/old" limit
	check "old module without limits: says so" fails_with 1 "old/limits was not found: this mrpin module has no 'limits'"
	run "$snaps/old" status
	check "old module: status without the policy" eval 'clean && [ $rc = 0 ] && grep -q "^Denials: *0" "$out/stdout"'
}

# survived CMD: the last run gave output, or failed cleanly: status 1 (for
# doctor: 1 with findings on stdout, or 2 with nothing there); no crash.
survived() {
	clean || return 1
	[ "$1" != doctor ] && { [ "$rc" -le 1 ]; return; }
	[ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ -s "$out/stdout" ]; } ||
		{ [ "$rc" = 2 ] && [ ! -s "$out/stdout" ] && [ -s "$out/stderr" ]; }
}

# cut_fuzz SNAP FILE STEP CMD...: FILE of SNAP cut every STEP bytes, CMD
# run on each copy: it must survive each of them.
cut_fuzz() {
	local snap=$1 file=$2 step=$3 size i bad=0 n=0 leaks_every=4
	shift 3
	size=$(wc -c <"$snaps/$snap/$file")
	for ((i = 0; i < size; i += step)); do
		scratch "$snap"
		head -c "$i" "$snaps/$snap/$file" >"$out/snap/$file"
		run "$out/snap" "$@"
		n=$((n + 1))
		if ! survived "$1"; then
			bad=$((bad + 1))
			diag "$* on $file cut at $i: status $rc"
		fi
	done
	check "fuzz: $*, $file cut at $n places: output or a clean failure, no crash" \
		test "$bad" = 0
}

# Every table cut at every third byte: a clean error or output, no crash.
truncation_fuzz() {
	local file cmd i bad size leaks_every=4
	for file in procs:proc pins:pin devices:dev limits:limit events:events stats:status cgroups:"export prometheus" cgroups:cgroup; do
		# shellcheck disable=SC2086
		cut_fuzz basic "${file%%:*}" 3 ${file#*:}
	done
	bad=0
	for i in $(seq 40); do
		scratch basic
		head -c 600 /dev/urandom >"$out/snap/procs"
		cp "$out/snap/procs" "$out/snap/pins"
		cp "$out/snap/procs" "$out/snap/limits"
		cp "$out/snap/procs" "$out/snap/events"
		for cmd in proc pin limit events; do
			run "$out/snap" $cmd
			if ! clean || [ "$rc" != 1 ]; then
				bad=$((bad + 1))
				cp "$out/snap/procs" "$out/random-$i"
				diag "random bytes ($cmd): status $rc, kept in out/random-$i"
			fi
		done
	done
	check "fuzz: random bytes as tables: exit 1, no crash" test "$bad" = 0
	# doctor reads every table: each of them cut at about 60 places.
	for file in stats procs pins devices leaks callsites events limits; do
		size=$(wc -c <"$snaps/mistakes/$file")
		cut_fuzz mistakes "$file" $((size / 60 + 1)) doctor
	done
}

# --- a generated corpus: every table broken in many ways, broken configs
# and command lines (tests/mutate.py; $FUZZ_SEED, default 1, picks them) ---

# judged CMD FILE LINE: the last run printed its output (status 0; doctor
# also 1 with findings), or failed with status 1 (doctor: 2) and one line,
# on stderr only, that names FILE (and LINE, when the change was on one
# line of a table: stats and version are named as a whole); no sanitizer
# report, no crash.
judged() {
	local cmd=$1 file=$2 line=$3 failed=1
	clean || return 1
	[ "$rc" = 0 ] && return 0
	[ "$cmd" = doctor ] && [ "$rc" = 1 ] && [ -s "$out/stdout" ] && return 0
	[ "$cmd" = doctor ] && failed=2
	[ "$rc" = "$failed" ] && [ ! -s "$out/stdout" ] && [ "$(wc -l <"$out/stderr")" = 1 ] &&
		grep -q "^mrpinctl: .*/$file\(:\| \|\$\)" "$out/stderr" || return 1
	case $file in stats | version) return 0 ;; esac
	[ "$line" = 0 ] || grep -q "/$file:$line:" "$out/stderr"
}

generated_basic() {
	generated_tables basic procs pins devices limits events stats version users cgroups
}

generated_mistakes() {
	generated_tables mistakes leaks callsites
}

generated_peer() {
	generated_tables peer procs pins devices stats
}

generated_tables() {
	local snap=$1 cmds n file kind line cmd bad=0 runs=0 leaks_every=4
	shift
	declare -A cmd_of=([procs]=proc [pins]=pin [devices]=dev [limits]=limit
		[events]=events [stats]=status [version]=status [users]="export prometheus"
		[cgroups]="export prometheus" [leaks]=doctor [callsites]=doctor)
	rm -rf "$out/mut"
	mkdir -p "$out/mut"
	python3 "$here/mutate.py" tables "$snaps/$snap" "$out/mut" "${FUZZ_SEED:-1}" "$@" >"$out/mut.list"
	while read -r n file kind line; do
		cmd=${cmd_of[$file]}
		for cmds in "$cmd" "-j $cmd"; do
			[ "$cmds" = "-j export prometheus" ] && continue
			# shellcheck disable=SC2086
			run "$out/mut/$n" $cmds
			runs=$((runs + 1))
			if ! judged "$cmd" "$file" "$line" ||
				{ [ "$rc" = 0 ] && [ "${cmds:0:2}" = -j ] && ! json_valid; }; then
				bad=$((bad + 1))
				cp -r "$out/mut/$n" "$out/failed-$n"
				diag "$file $kind (line $line), mrpinctl $cmds: status $rc: $(head -c 200 "$out/stderr") (kept in out/failed-$n)"
			fi
		done
		rm -rf "${out:?}/mut/$n"
	done <"$out/mut.list"
	check "generated: $(wc -l <"$out/mut.list") broken copies of $snap's $*, $runs runs: output or one line naming file and line" \
		test "$bad" = 0
}

# config_refused FILE: status 2, nothing on stdout, the first problem as
# "mrpinctl: FILE:LINE:COL: ...", every line of stderr mrpinctl's.
config_refused() {
	[ "$rc" = 2 ] && [ ! -s "$out/stdout" ] &&
		head -n1 "$out/stderr" | grep -q "^mrpinctl: $1:[0-9]*:[0-9]*: ." &&
		! grep -qv '^mrpinctl: ' "$out/stderr" &&
		[ "$(wc -l <"$out/stderr")" -le 25 ]
}

generated_configs() {
	local conf n kind bad=0 total=0 leaks_every=4
	for conf in examples existing-rules; do
		rm -rf "$out/conf"
		python3 "$here/mutate.py" config "$here/good-configs/$conf.conf" "$out/conf" \
			"${FUZZ_SEED:-1}" >"$out/conf.list"
		while read -r n kind; do
			scratch basic
			run "$out/snap" apply --check "$out/conf/$n.conf"
			total=$((total + 1))
			if ! clean || ! cmp -s "$snaps/basic/limits" "$out/snap/limits" ||
				{ [ "$rc" != 0 ] && ! config_refused "$out/conf/$n.conf"; }; then
				bad=$((bad + 1))
				cp "$out/conf/$n.conf" "$out/failed-$conf-$n.conf"
				diag "$conf.conf $kind: status $rc: $(head -c 200 "$out/stderr") (kept in out/failed-$conf-$n.conf)"
			fi
		done <"$out/conf.list"
	done
	check "generated: $total broken configs: valid, or exit 2 naming FILE:LINE:COL; nothing written" \
		test "$bad" = 0
}

generated_args() {
	local cmd arg bad=0 n=0 leaks_every=4
	local args=(--bogus -Z '%s%n%s' "$(printf 'x%.0s' {1..3000})" $'\xff\xfe' ''
		frobnicate 99999999999999999999)
	for cmd in status proc pin dev limit events doctor "limit set" "limit delete" \
		"proc sort" "proc pid" "pin min-size" "pin older-than" "pin pid" "events --limit"; do
		for arg in "${args[@]}"; do
			# shellcheck disable=SC2086
			run "$snaps/basic" $cmd "$arg"
			n=$((n + 1))
			if ! clean || [ "$rc" != 2 ] || [ -s "$out/stdout" ] ||
				[ "$(wc -l <"$out/stderr")" != 1 ] || ! grep -q '^mrpinctl: .' "$out/stderr"; then
				bad=$((bad + 1))
				diag "mrpinctl $cmd $(printf %q "$arg" | head -c 40): status $rc: $(head -c 200 "$out/stderr")"
			fi
		done
	done
	check "generated: $n bad command lines: exit 2 with one 'mrpinctl: ...' line" test "$bad" = 0
}

# --- the module not there ---

environment_tests() {
	check "user names: the tests' own (tests/etc), not the host's" eval \
		'[ "$(getent passwd | cut -d: -f1 | paste -sd " ")" = "root nobody" ]'
	run "$out/nonexistent/mrpin" status
	check "not loaded: one sentence that says what to do" eval \
		'[ $rc = 1 ] && [ "$(cat "$out/stderr")" = "mrpin is not loaded: run '"'"'modprobe mrpin'"'"' (or insmod kmod/mrpin.ko); $out/nonexistent/mrpin was not found" ]'
	MRPIN_DEBUGFS=$out/nonexistent "$bin" proc >"$out/stdout" 2>"$out/stderr"
	rc=$?
	crashed "MRPIN_DEBUGFS=... mrpinctl proc" "$out/stderr"
	check "MRPIN_DEBUGFS is the default directory" eval \
		'[ $rc = 1 ] && grep -qF "$out/nonexistent was not found" "$out/stderr"'
	if [ "$MRPIN_TEST_REAL_UID" = 0 ] && command -v setpriv >/dev/null; then
		scratch basic
		chmod 700 "$out/snap"
		setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" --debugfs "$out/snap" proc \
			>"$out/stdout" 2>"$out/stderr" </dev/null
		rc=$?
		crashed "mrpinctl proc, not root" "$out/stderr"
		check "not root: says to run as root" eval \
			'[ $rc = 1 ] && grep -q "run mrpinctl as root" "$out/stderr"'
		chmod 755 "$out/snap"
	else
		skip "not root: says to run as root" "needs root and setpriv"
	fi
}

# --- layout: lines fit the terminal ---

width_tests() {
	local w cmd bad=0 max
	for w in 60 72 80 100 132 200; do
		for cmd in status proc pin dev cgroup events; do
			[ "$cmd" = events ] && [ "$w" -lt 80 ] && continue
			COLUMNS=$w run "$snaps/basic" $cmd
			max=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$out/stdout")
			if [ "$max" -gt "$w" ]; then
				bad=$((bad + 1))
				diag "$cmd at $w columns: a line of $max"
			fi
		done
	done
	check "text fits 60 to 200 columns" test "$bad" = 0
	run "$snaps/basic" pin
	check "columns aligned: every line of pin as wide" eval \
		'[ "$(awk "{ print length(\$0) }" "$out/stdout" | sort -u | wc -l)" -le 2 ]'
}

# --- the Slurm Prolog (packaging/slurm/mrpin-slurm) outside Slurm, with
# scontrol, mrpinctl and logger on its PATH that record what they are asked:
# a job's comment only ever lowers its limit ---

hook=$here/../../packaging/slurm/mrpin-slurm

# prolog COMMENT [SETTING...]: the hook as slurmd runs the prolog of job 42
# (in $out/slurm), which has 64 MiB (its limit: 50% of it, 32 MiB) and
# COMMENT, with the SETTINGs in its defaults file; $rc, the command lines mrpinctl was given
# in $out/slurm/calls, the hook's log in $out/slurm/log.
prolog() {
	local s=$out/slurm
	rm -rf "$s/cg" "$s/state" "$s/calls" "$s/log" "$s/pwned"
	mkdir -p "$s/cg/slurm" "$s/state"
	printf '%s\n' "JobId=42 JobName=job UserId=nobody(65534) Comment=$1 TRES=cpu=1,mem=64M,node=1,billing=1 StdOut=$s/job.out" >"$s/jobinfo"
	{
		printf '%s=%q\n' PATH "$s/bin:/usr/bin:/bin" STATE "$s/state" CGROUP_FS "$s/cg" \
			MRPIN_SLURM_CGROUP /slurm
		shift
		printf '%s\n' "$@"
	} >"$s/defaults"
	(cd "$s" && env -i SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_ID=42 \
		MRPIN_SLURM_DEFAULTS="$s/defaults" "$hook" >"$s/out" 2>"$s/log")
	rc=$?
}

# limit_set BYTES: the prolog exited 0, having set max_pinned=BYTES on the
# job's cgroup (its last mrpinctl command), and nothing ran that the
# comment named.
limit_set() {
	[ "$rc" = 0 ] && [ "$(tail -n1 "$out/slurm/calls" 2>/dev/null)" = \
		"limit set cgroup /slurm/job_42 max_pinned=$1 action=enforce" ] &&
		[ -d "$out/slurm/cg/slurm/job_42" ] && [ ! -e "$out/slurm/pwned" ] && return 0
	diag "exit $rc; mrpinctl: $(paste -sd '|' "$out/slurm/calls" 2>/dev/null); log: $(paste -sd '|' "$out/slurm/log" | head -c 300)"
	return 1
}

# ignored BYTES [SETTING...]: the comment was told in the log and ignored:
# the job has the limit BYTES, as without it, with MRPIN_SLURM_STRICT=no
# and =yes alike (a prolog that fails drains the node).
ignored() {
	local strict bytes=$1
	shift
	for strict in no yes; do
		prolog "$comment" "MRPIN_SLURM_STRICT=$strict" "$@"
		limit_set "$bytes" || return
		grep -q "the job's comment: .*: ignored\$" "$out/slurm/log" ||
			{ diag "strict=$strict: not told: $(paste -sd '|' "$out/slurm/log")"; return 1; }
	done
}

slurm_hook_tests() {
	local s=$out/slurm comment share=$((32 << 20))
	mkdir -p "$s/bin"
	# shellcheck disable=SC2016
	printf '#!/bin/sh\ncat "%s/jobinfo"\n' "$s" >"$s/bin/scontrol"
	# mrpinctl: a max_pinned that is not a number of bytes is refused, as
	# the real one does, and so is any in $s/refuse.
	cat >"$s/bin/mrpinctl" <<-EOF
		#!/bin/bash
		echo "\$*" >>"$s/calls"
		for a; do
			case "\$a" in max_pinned=*[!0-9]* | max_pinned=) exit 2 ;; esac
			! grep -qxF -- "\$a" "$s/refuse" 2>/dev/null || exit 1
		done
		exit 0
	EOF
	printf '#!/bin/sh\nexit 0\n' >"$s/bin/logger"
	chmod +x "$s/bin/"*

	prolog ""
	check "slurm prolog: no comment: 50% of the job's memory" limit_set "$share"
	prolog "mrpin:max_pinned=16M"
	check "slurm prolog: a comment lowers the limit" limit_set $((16 << 20))
	prolog "mrpin:max_pinned=0"
	check "slurm prolog: a comment lowers the limit to 0" limit_set 0
	prolog "mrpin:max_pinned=010M"
	check "slurm prolog: a comment's leading zeros are decimal, not octal" limit_set $((10 << 20))
	prolog "mrpin:max_pinned=1e9 mrpin:max_pinned=8M"
	check "slurm prolog: of two sizes in a comment, the lower" limit_set $((8 << 20))
	for comment in "mrpin:max_pinned=32M" "mrpin:max_pinned=64M" \
		"mrpin:max_pinned=9223372036854775807" "mrpin:max_pinned=8388607T"; do
		check "slurm prolog: ${comment#mrpin:} is not lower: ignored, told" ignored "$share"
	done
	for comment in 8388608T 9223372036854775808 18446744073709551615 18446744073709551616 \
		99999999999999999999999999 -1 1e9 '' 1P 16MiB 0x100 ' 16M' \
		'$(touch${IFS}pwned)' '`touch${IFS}pwned`' '1M;touch${IFS}pwned' \
		'16M$(touch${IFS}pwned)' '16M|touch${IFS}pwned'; do
		comment="mrpin:max_pinned=$comment"
		check "slurm prolog: '$comment': ignored, told; the job's own limit, strict or not" \
			ignored "$share"
	done
	comment=mrpin:max_pinned=8388608T
	check "slurm prolog: '$comment' and MRPIN_SLURM_MAX_PINNED=1G: the share" \
		ignored "$share" MRPIN_SLURM_MAX_PINNED=1G
	check "slurm prolog: '$comment' and MRPIN_SLURM_MAX_PINNED=1M: 1M" \
		ignored $((1 << 20)) MRPIN_SLURM_MAX_PINNED=1M
	prolog "mrpin:max_pinned=8388608T" MRPIN_SLURM_SHARE=0
	check "slurm prolog: no limit to lower: a bad size is no limit, exit 0" eval \
		'[ $rc = 0 ] && [ ! -e "$s/calls" ] && grep -q "ignored\$" "$s/log"'
	prolog "mrpin:max_pinned=1G" MRPIN_SLURM_SHARE=0
	check "slurm prolog: no limit to lower: the comment's" limit_set $((1 << 30))
	echo "max_pinned=$((16 << 20))" >"$s/refuse"
	prolog "mrpin:max_pinned=16M" MRPIN_SLURM_STRICT=yes
	check "slurm prolog: mrpinctl refuses the comment's size: the job's own limit" eval \
		'limit_set "$share" && [ "$(wc -l <"$s/calls")" = 2 ]'
	rm "$s/refuse"
}

# --- the other commands ---

misc_tests() {
	run "$snaps/basic" --version
	check "--version" eval '[ $rc = 0 ] && [ "$(cat "$out/stdout")" = "mrpinctl 0.1.0" ]'
	local args
	for args in "-h" "help" "proc -h" "proc help" "pin --help" "dev help" \
		"cgroup help" "cgroup -h" \
		"limit set -h" "limit help" "apply -h" "events help" "top -h" \
		"export -h" "status help" "doctor help" "doctor -h"; do
		# shellcheck disable=SC2086
		run "$snaps/basic" $args
		check "help: mrpinctl $args" eval '[ $rc = 0 ] && grep -q "^Usage: mrpinctl" "$out/stdout" && [ ! -s "$out/stderr" ]'
	done
	run "$snaps/basic" proc sort peak
	cp "$out/stdout" "$out/full"
	run "$snaps/basic" pr so pe
	check "unique prefixes: pr so pe" cmp -s "$out/full" "$out/stdout"
	run "$snaps/basic" procs sort peak
	check "alias: procs" cmp -s "$out/full" "$out/stdout"
	run "$snaps/basic" proc sort peak -j
	check "options after the command" json_valid

	run "$snaps/basic" export prometheus --per-process
	check "export: exposition format valid" eval '[ $rc = 0 ] && exposition_ok "$out/stdout"'
	run "$snaps/basic" export prometheus
	check "export: no failures family from a module that does not count them" eval \
		'[ $rc = 0 ] && ! grep -q "^mrpin_failures_total" "$out/stdout"'
	run "$snaps/mistakes" export prometheus
	check "export: stack registrations and cleanup releases, counters, from a module that counts them" eval \
		'[ $rc = 0 ] && grep -qx "# TYPE mrpin_stack_pins_total counter" "$out/stdout" &&
		 grep -qx "mrpin_stack_pins_total 6" "$out/stdout" &&
		 grep -qx "# TYPE mrpin_cleanup_releases_total counter" "$out/stdout" &&
		 grep -qx "mrpin_cleanup_releases_total 5412" "$out/stdout"'
	run "$snaps/basic" export prometheus
	check "export: a module without them: no stack or cleanup family" eval \
		'[ $rc = 0 ] && ! grep -q "stack_pins\|cleanup_releases" "$out/stdout"'
	run "$snaps/mistakes" export prometheus --per-process
	check "export: failures by cause, one family, valid" eval \
		'[ $rc = 0 ] && exposition_ok "$out/stdout" &&
		 [ "$(grep -c "^# TYPE mrpin_failures_total counter$" "$out/stdout")" = 1 ] &&
		 [ "$(grep -c "^mrpin_failures_total{cause=\"[a-z]*\"} [0-9]*$" "$out/stdout")" = 8 ] &&
		 grep -qx "mrpin_failures_total{cause=\"memlock\"} 6" "$out/stdout"'
	run "$snaps/empty" export prometheus
	check "export: exposition format valid with nothing pinned" eval '[ $rc = 0 ] && exposition_ok "$out/stdout"'
	mkdir -p "$out/textfile"
	run "$snaps/basic" export prometheus "$out/textfile/mrpin.prom"
	check "export FILE: written atomically, 0644, no temporary left" eval \
		'[ $rc = 0 ] && [ ! -s "$out/stdout" ] && [ "$(stat -c %a "$out/textfile/mrpin.prom")" = 644 ] && [ "$(ls -A "$out/textfile")" = mrpin.prom ] && exposition_ok "$out/textfile/mrpin.prom"'
	run "$snaps/basic" export prometheus "$out/no/such/dir/mrpin.prom"
	check "export FILE: an unwritable directory is an error" fails_with 1 "no/such/dir"

	run "$snaps/basic" top --iterations 2 --delay 0.1
	check "top: plain repeated output when not a terminal" eval \
		'clean && [ $rc = 0 ] && [ "$(grep -c "^Time: " "$out/stdout")" = 2 ] && [ "$(grep -c "^ *PID  COMM" "$out/stdout")" = 2 ]'
	run "$snaps/basic" -j top -n 2 -d 0.1
	check "top --json: one JSON object a refresh" eval \
		'clean && [ $rc = 0 ] && [ "$(wc -l <"$out/stdout")" = 2 ] && python3 -c "import json,sys; [json.loads(l) for l in sys.stdin]" <"$out/stdout"'
	if python3 -c 'import pty' 2>/dev/null; then
		ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 TERM=xterm \
			timeout 20 python3 "$here/pty_top.py" "$bin" --debugfs "$snaps/basic" top >"$out/stdout" 2>&1
		rc=$?
		crashed "mrpinctl top on a terminal" "$out/stdout"
		check "top on a terminal: full screen, q quits" eval \
			'[ $rc = 0 ] && grep -q "mrpinctl top: sorted by pinned" "$out/stdout"'
	else
		skip "top on a terminal: full screen, q quits" "no python3 pty module"
	fi

	check "bash completion: $(grep -c . "$here/completion.txt") cases" \
		bash -c '"$0/completion.sh" <"$0/completion.txt"' "$here"

	timeout 1 "$bin" --debugfs "$snaps/basic" events --follow >"$out/stdout" 2>"$out/stderr"
	rc=$?
	crashed "mrpinctl events --follow" "$out/stderr" 124
	check "events --follow: prints what is there and waits" eval \
		'[ $rc = 124 ] && [ "$(grep -c " deny \| warn " "$out/stdout")" = 4 ]'
	timeout 1 "$bin" --debugfs "$snaps/basic" -j events --follow >"$out/stdout" 2>"$out/stderr"
	rc=$?
	crashed "mrpinctl -j events --follow" "$out/stderr" 124
	check "events --follow --json: JSON Lines" eval \
		'[ "$(wc -l <"$out/stdout")" = 5 ] && python3 -c "import json,sys; [json.loads(l) for l in sys.stdin]" <"$out/stdout"'
	timeout 1 "$bin" --debugfs "$snaps/mistakes" events --follow >"$out/stdout" 2>"$out/stderr"
	rc=$?
	crashed "mrpinctl events --follow (mistakes)" "$out/stderr" 124
	check "events --follow: failures with their errno" eval \
		'[ "$(grep -c " fail .* process .* E[A-Z]*$" "$out/stdout")" = 10 ]'
	run "$snaps/basic" events
	check "events: lost events told on stderr" eval \
		'[ $rc = 0 ] && grep -q "3 events were lost" "$out/stderr"'
}

# Each section and the results it records (a skip is one); unit_tests
# holds unit.c to its own plan.  ram_tests runs the golden tests again
# where it has FAKE_RAM; the configs' tests are three and two a file.
( unit_tests )
golden_n=76
ram_n=7
[ -z "$fake_ram" ] || ram_n=$((ram_n + golden_n))
nfiles() { echo $#; }
section golden_tests $golden_n
section cgroup_tests 9
section prometheus_tests 7
section ram_tests $ram_n
section json_tests 54
section doctor_tests 32
section distinct_tests 33
section odp_tests 31
section peer_tests 56
section mr_table_tests 21
section growth_tests 15
section future_cause_tests 19
section bad_args_tests 2
section bad_config_tests $((3 * $(nfiles "$here"/bad-configs/*.conf) + 2))
section good_config_tests $((2 * $(nfiles "$here"/good-configs/*.conf) + 2))
section roundtrip_tests 6
section limit_write_tests 9
section garbled_tests 14
section environment_tests 4
section width_tests 2
section misc_tests 37
section slurm_hook_tests 31
section truncation_fuzz 17
section generated_basic 1
section generated_mistakes 1
section generated_peer 1
section generated_configs 1
section generated_args 1

# KTAP: the plan, the numbered results, the totals.
total=$(grep -c '^\(not \)\?ok ' "$results")
failed=$(grep -c '^not ok ' "$results")
skipped=$(grep -c '^ok .* # SKIP ' "$results")
echo "TAP version 13"
echo "1..$total"
awk '/^(not )?ok / { n++; sub(/^ok /, "ok " n " "); sub(/^not ok /, "not ok " n " ") } { print }' "$results"
echo "# mrpinctl host tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
