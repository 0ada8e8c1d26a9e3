#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin's module parameters take only what the `limits` grammar takes.
# For every parameter, generated bad values (every value of a type it does
# not take, numbers past U64_MAX with and without a K/M/G/T suffix,
# negative numbers, percentages over 100, random bytes, no value, an empty
# or blank value, values longer than a parameter holds) and good-then-bad
# pairs: each insmod fails with EINVAL, leaves no module and no debugfs
# directory behind, and logs the loader's one line naming the parameter
# plus mrpin's one reason (when the value reached mrpin) and nothing else.
# Good values of every parameter, some with blanks around them, load and
# show in `limits` and under /sys/module/mrpin/parameters, whose files are
# 0444 and refuse a write even from root.  mrpin is left loaded if it
# was.  The random values are seeded by $MRPIN_PARAMS_SEED (printed).
. "$(dirname "$0")/lib.sh"

require_root
require_built "$MRPIN_KO"
PARAMS=/sys/module/mrpin/parameters
LIMITS=$MRPIN_LIMITS

# Every parameter and the types of value it takes.
declare -A takes=(
	[global_max_pinned]="num size pct unl"
	[global_max_pins]="num unl"
	[global_max_pin_size]="num size unl"
	[global_action]="action"
	[global_stack]="stack"
	[global_oversize]="num size unl"
	[global_mr_table_warn]="pct"
	[callsites]="switch"
	[log_failures]="switch"
	[process_max_pinned]="num size pct unl"
	[process_max_pins]="num unl"
	[process_max_pin_size]="num size unl"
	[process_action]="action"
)
names=$(printf '%s\n' "${!takes[@]}" | sort)
# A good value of each.
declare -A good=(
	[global_max_pinned]=40% [global_max_pins]=1000 [global_max_pin_size]=1G
	[global_action]=warn [global_stack]=deny [global_oversize]=512M
	[global_mr_table_warn]=90% [callsites]=on [log_failures]=on
	[process_max_pinned]=1G
	[process_max_pins]=100 [process_max_pin_size]=64M [process_action]=warn
)
# One value of each type, and the types it is.
samples=("0:num" "4096:num" "1K:size" "3g:size" "50%:pct" "100%:pct"
	"unlimited:unl" "enforce:action" "warn:action stack" "allow:stack"
	"deny:stack" "on:switch" "off:switch")
# What no parameter takes.
junk=("abc" "1.5" "0x10" "+5" "1KB" "ON" "Unlimited" "1P" "50%%" "%" "1e3"
	"true" "1G1" "0.5G" "1_000" "Enforce")
# Bad values the first version of this check had.
seeds=(global_max_pinned=101% global_max_pinned=abc global_max_pinned=
	global_max_pinned=-5% global_max_pinned=1P global_action=maybe
	process_max_pinned=200% process_max_pins=lots process_max_pins=-1
	process_max_pin_size=50%)

seed=${MRPIN_PARAMS_SEED:-$(date +%s)}
RANDOM=$seed

was_loaded=0
mrpin_loaded && was_loaded=1
kernel_log_mark
tmp=$(mktemp -d)
# The refused loads use a copy without debug information, when strip is
# there: the loader parses the parameters before any of mrpin's code runs,
# and a copy 25 times smaller is read and laid out faster (the debug
# kernel).  The good values load $MRPIN_KO itself.
bad_ko=$MRPIN_KO
if command -v strip >/dev/null && strip --strip-debug -o "$tmp/mrpin.ko" "$MRPIN_KO"; then
	bad_ko=$tmp/mrpin.ko
fi
nparams=$(wc -w <<<"$names")
ktap_plan $((nparams + 13))
ktap_diag "seed $seed (MRPIN_PARAMS_SEED)"

# The kernel log, read by kmsg_read.
exec {kmsg}</dev/kmsg
# big: a decimal number over U64_MAX.
big() {
	case $((RANDOM % 4)) in
	0) echo "1844674407370955161$((6 + RANDOM % 4))" ;;
	1) echo "18446744073709551615$((RANDOM % 10))" ;;
	2) printf '%d%05d%05d%05d%04d\n' $((2 + RANDOM % 8)) $((RANDOM % 100000)) \
		$((RANDOM % 100000)) $((RANDOM % 100000)) $((RANDOM % 10000)) ;;
	*) printf '%d%05d%05d%05d%05d%05d\n' $((1 + RANDOM % 9)) "$RANDOM" "$RANDOM" \
		"$RANDOM" "$RANDOM" "$RANDOM" ;;
	esac
}

# over_suffix: a number that its K, M, G or T suffix takes past U64_MAX.
over_suffix() {
	local s=$((RANDOM % 4)) sfx=KMGTkmgt
	# (U64_MAX >> 10, 20, 30, 40) + 1
	local min=(18014398509481984 17592186044416 17179869184 16777216)

	case $((RANDOM % 3)) in
	0) echo "${min[s]}${sfx:s + 4 * (RANDOM % 2):1}" ;;
	1) echo "$((min[s] + RANDOM * RANDOM))${sfx:s:1}" ;;
	*) echo "18446744073709551615${sfx:s:1}" ;;
	esac
}

# random_bad: random bytes that start with one no value starts with.
random_bad() {
	local first='!#$&()*,./:;<>?@[]^_`{|}~' high=($'\xff' $'\x80' $'\xc3\xa9'
		$'\xe2\x88\x92' $'\xef\xbc\x91' $'\xfe\xfe') s n i
	local chars='abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789%+-.=:_/'

	if ((RANDOM % 2)); then
		s=${first:RANDOM % ${#first}:1}
	else
		s=${high[RANDOM % ${#high[@]}]}
	fi
	n=$((RANDOM % 20))
	for ((i = 0; i < n; i++)); do
		s+=${chars:RANDOM % ${#chars}:1}
	done
	printf '%s\n' "$s"
}

# bad_values NAME: the bad values of parameter NAME, one a line.
bad_values() {
	local name=$1 s v t ok i
	local types=" ${takes[$name]} "

	# Every value of a type it does not take.
	for s in "${samples[@]}"; do
		v=${s%%:*}
		ok=0
		for t in ${s#*:}; do
			[[ $types == *" $t "* ]] && ok=1
		done
		[ $ok = 0 ] && printf '%s\n' "$v"
	done
	# Some of what no parameter takes.
	for i in 1 2; do
		printf '%s\n' "${junk[RANDOM % ${#junk[@]}]}"
	done
	# Past U64_MAX, with and without a suffix; negative; over 100%.
	big
	case $types in
	*" size "*) over_suffix ;;
	*" pct "*) echo "$((101 + RANDOM * RANDOM))%" ;;
	*) echo "$(big)K" ;;
	esac
	case $types in
	*" pct "*) echo "$(big)%" ;;
	esac
	case $((RANDOM % 3)) in
	0) echo "-$((1 + RANDOM))" ;;
	1) echo "-$((RANDOM % 1024))M" ;;
	*) echo "-$((RANDOM % 101))%" ;;
	esac
	random_bad
	# Empty, and longer than the 31 bytes a value may have: a number
	# with leading zeros, and one of 300 digits.
	echo ""
	echo "$(printf '0%.0s' {1..40})1"
	printf '9%.0s' {1..300}
	echo
}

# Starting a program is slow in the test VM: an attempt runs insmod and
# nothing else, and its log is checked with the others' (check_log).
attempt=0
declare -A expect
bad_n=0

# refused ARG...: insmod with ARG fails with EINVAL and leaves no module
# and no debugfs directory.  $bad: the parameter it must name, $reason: 1
# if mrpin sees the value and logs why (0 or 1).
refused() {
	local out status arg

	attempt=$((attempt + 1))
	printf -v arg '%q' "$*"
	expect[$attempt]="$bad $reason ${arg:0:80}"
	echo "mrpin_params_fuzz: attempt $attempt" >/dev/kmsg
	out=$(insmod "$bad_ko" "$@" 2>&1)
	status=$?
	if [ -d /sys/module/mrpin ]; then
		rmmod mrpin
		why="loaded"
	elif [ -e "$MRPIN_DIR" ]; then
		why="$MRPIN_DIR left behind"
	elif [ "$status" = 0 ] || [[ $out != *"Invalid parameters"* ]]; then
		why="insmod: status $status: $out"
	else
		return 0
	fi
	bad_n=$((bad_n + 1))
	ktap_diag "${arg:0:80}: $why"
	return 1
}

# finish_attempt: judge attempt $k from what check_log counted.
finish_attempt() {
	local name reason arg

	[ "$k" != 0 ] || return 0
	read -r name reason arg <<<"${expect[$k]}"
	if [ "$loader" != 1 ] || [ "$ours" != "$reason" ] ||
		[ "$lines" != $((1 + reason)) ] || [ -n "$problem" ]; then
		bad_n=$((bad_n + 1))
		ktap_diag "$arg: log: $log"
	fi
}

# check_log: each attempt since the last call logged the loader's line
# for its parameter, mrpin's reason as expected, no other line of
# mrpin's and no problem.  Counts the attempts that did not in $bad_n.
check_log() {
	local msg k=0 name reason arg lines loader ours problem log

	while IFS= read -r msg; do
		if [[ $msg == "mrpin_params_fuzz: attempt "* ]]; then
			finish_attempt
			k=${msg##* }
			lines=0 loader=0 ours=0 problem="" log=""
			read -r name reason arg <<<"${expect[$k]}"
			continue
		fi
		[ "$k" != 0 ] || continue
		log+="$msg|"
		[[ $msg =~ $MRPIN_KERNEL_PROBLEMS ]] && problem=$msg
		[[ $msg == mrpin* ]] || continue
		lines=$((lines + 1))
		[[ $msg == *" invalid for parameter \`$name'" ]] && loader=$((loader + 1))
		[[ $msg == "mrpin: $name="*": "* ]] && ours=$((ours + 1))
	done < <(kmsg_read "$kmsg")
	finish_attempt
}

mrpin_unload
ktap_check "mrpin_unloads" test ! -e "$MRPIN_DIR"
kmsg_read "$kmsg" >/dev/null

# Short loops: every third bad value of each parameter; on the debug
# kernel, where each load costs seconds, every sixth.
every=1
mrpin_short_loops && every=3
mrpin_debug_kernel && every=6
[ "$every" = 1 ] ||
	mrpin_short_loops_diag "one bad value in $every of each parameter"
# 1. Every parameter's bad values.
for name in $names; do
	bad_n=0
	first=$attempt
	mapfile -t values < <(bad_values "$name")
	bad=$name
	for i in "${!values[@]}"; do
		[ $((i % every)) = 0 ] || continue
		reason=1
		refused "$name=${values[$i]}"
	done
	# No value at all: the loader refuses it before mrpin sees it.
	reason=0
	refused "$name"
	# A blank value, quoted: mrpin trims it to nothing.
	reason=1
	refused "$name=\"   \""
	check_log
	ktap_check "${name}_$((attempt - first))_bad_values_refused_with_einval_leaving_nothing" \
		test "$bad_n" = 0
done

# 2. A good value of another parameter first, or of the same one; and
# the cases of an earlier version of this check.
bad_n=0
first=$attempt
prev=process_action
for name in $names; do
	v=${junk[RANDOM % ${#junk[@]}]}
	bad=$name reason=1
	if ((RANDOM % 2)); then
		refused "$prev=${good[$prev]}" "$name=$v"
	else
		refused "$name=${good[$name]}" "$name=$v"
	fi
	prev=$name
done
for p in "${seeds[@]}"; do
	bad=${p%%=*} reason=1
	refused "$p"
done
check_log
ktap_check "good_then_bad_and_earlier_cases_refused_leaving_nothing" test "$bad_n" = 0
ktap_diag "$attempt insmods refused"

# 3. Good values: loaded, in `limits` and in the parameter files.
# good_set NAME GLOBAL_LINE PROCESS_LINE PARAM=VALUE...
good_set() {
	local set=$1 global=$2 process=$3 p wrong=""
	shift 3
	if ! insmod "$MRPIN_KO" "$@"; then
		ktap_fail "good_values_${set}_load_and_show_in_limits"
		ktap_fail "good_values_${set}_show_in_the_parameter_files"
		return
	fi
	ktap_check "good_values_${set}_load_and_show_in_limits" \
		bash -c "grep -qxF -- '$global' $LIMITS && grep -qxF -- '$process' $LIMITS"
	if ! grep -qxF -- "$global" "$LIMITS" || ! grep -qxF -- "$process" "$LIMITS"; then
		grep -E '^(global|process) ' "$LIMITS" | sed 's/^/# limits: /'
	fi
	for p in "$@"; do
		p=${p//\"/}
		v=${p#*=}
		v=${v#"${v%%[! ]*}"}
		v=${v%"${v##*[! ]}"}
		[ "$(cat "$PARAMS/${p%%=*}")" = "$v" ] || wrong+=" ${p%%=*}"
	done
	ktap_check "good_values_${set}_show_in_the_parameter_files" test -z "$wrong"
	[ -z "$wrong" ] || ktap_diag "parameter files that differ:$wrong"
}

good_set a \
	'global max_pinned=40% max_pins=1000 max_pin_size=1G action=warn count=distinct stack=deny oversize=512M mr_table_warn=90% callsites=on log_failures=on' \
	'process max_pinned=1G max_pins=100 max_pin_size=64M action=warn count=registered' \
	global_max_pinned=40% global_max_pins=1000 global_max_pin_size=1G \
	global_action=warn global_stack=deny global_oversize=512M \
	global_mr_table_warn=90% callsites=on log_failures=on \
	process_max_pinned=1G \
	process_max_pins=100 process_max_pin_size=64M process_action=warn

# 0444, and not even root writes them while mrpin is loaded.
modes=$(stat -c '%n %a' "$PARAMS"/* | awk '$2 != 444')
ktap_check "parameter_files_are_0444" test -z "$modes"
[ -z "$modes" ] || ktap_diag "modes: $modes"
cat "$LIMITS" >"$tmp/limits"
written=""
for name in $names; do
	before=$(cat "$PARAMS/$name")
	if { echo "${good[$name]}" >"$PARAMS/$name"; } 2>/dev/null ||
		[ "$(cat "$PARAMS/$name")" != "$before" ]; then
		written+=" $name"
	fi
done
ktap_check "root_cannot_write_a_parameter_at_runtime" \
	bash -c "[ -z '$written' ] && cat $LIMITS | cmp -s - $tmp/limits"
[ -z "$written" ] || ktap_diag "written:$written"
ktap_check "parameter_files_are_every_parameter" \
	test "$(cd "$PARAMS" && printf "%s\n" * | sort)" = "$names"
rmmod mrpin

good_set b \
	'global max_pinned=unlimited max_pins=0 max_pin_size=4097 action=enforce count=distinct stack=allow oversize=unlimited mr_table_warn=0% callsites=off log_failures=off' \
	'process max_pinned=100% max_pins=unlimited max_pin_size=1536K action=enforce count=registered' \
	global_max_pinned=unlimited global_max_pins=0 global_max_pin_size=4097 \
	global_action=enforce global_stack=allow global_oversize=unlimited \
	global_mr_table_warn=0% callsites=off log_failures=off \
	process_max_pinned=100% \
	process_max_pins=unlimited process_max_pin_size=1536k \
	process_action=enforce
rmmod mrpin

# Edges: 0, U64_MAX - 1, the largest size a suffix takes, leading zeros,
# white space after a quoted value.
good_set c \
	'global max_pinned=0 max_pins=18446744073709551614 max_pin_size=16777215T action=warn count=distinct stack=warn oversize=0 mr_table_warn=7% callsites=off log_failures=off' \
	'process max_pinned=2G max_pins=1 max_pin_size=0 action=enforce count=registered' \
	global_max_pinned=0 global_max_pins=18446744073709551614 \
	global_max_pin_size=16777215T 'global_action="warn  "' \
	'global_stack=" warn"' global_oversize=0 global_mr_table_warn=007% \
	process_max_pinned=2048M 'process_max_pins=" 1 "' process_max_pin_size=0
rmmod mrpin

ktap_check_kernel_log "kernel_log_has_no_new_problems"
exec {kmsg}<&-
[ "$was_loaded" = 1 ] && mrpin_load
ktap_check "mrpin_left_as_found" test "$(mrpin_loaded && echo 1 || echo 0)" = "$was_loaded"
rm -rf "$tmp"
ktap_finish
