#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Only root reads mrpin's files and only CAP_SYS_ADMIN changes the policy.
# An unprivileged user reads none of the files, with the modes mrpin gives
# them and with debugfs's directories opened up.  Through each of the
# policy's doors (securityfs' limits, debugfs' limits): with it made 0666
# and the directories traversable nobody opens it for writing, yet every
# write fails with EPERM, even a malformed one (the write checks
# CAP_SYS_ADMIN before anything else), also through a descriptor root
# opened, by nobody or by root of a user namespace, and by root through a
# descriptor nobody opened; root without CAP_SYS_ADMIN fails the same way,
# and the policy stays byte-for-byte the same.  No file, parameter or log line of mrpin's
# shows a kernel address, with pins, a refusal, a stack warning, leaks and
# call sites recorded: no 0xffff..., no 16-hex-digit word starting ffff,
# no decimal in the kernel's half of the address space.  A comm and a
# cgroup name full of control characters reach no terminal raw: views,
# events, the raw kernel log, the trace and mrpinctl's text are printable
# ASCII.  The modes and the policy are put back as they were.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
command -v setpriv >/dev/null || ktap_skip_all "setpriv (util-linux) is missing"
here=$(cd "$(dirname "$0")" && pwd)
require_built "$here/mrpin_pinner" "$here/mrpin_mistakes" "$here/mrpin_misuse"
mrpin_load
LIMITS=$MRPIN_LIMITS
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
NO_SYS_ADMIN=(setpriv --inh-caps=-all --bounding-set=-sys_admin)
DEBUGFS=/sys/kernel/debug
ktap_plan $((53 + $(find "$MRPIN_DIR" -mindepth 1 | wc -l)))

tmp=$(mktemp -d)
# The kernel log from here on, for problems and mrpin's lines.
kernel_log_mark
mode_debugfs=$(stat -c %a "$DEBUGFS")
mode_dir=$(stat -c %a "$MRPIN_DIR")
cat "$LIMITS" >"$tmp/found"

# same_as FILE: limits holds exactly the bytes of FILE (through a pipe:
# cmp takes files of different st_size as different, and debugfs files
# have none).
same_as() {
	cat "$LIMITS" | cmp -s - "$1"
}

# unreadable_by_nobody: no mrpin file opens for reading as nobody; the
# ones that do are listed in $tmp/readable.
unreadable_by_nobody() {
	local f
	: >"$tmp/readable"
	for f in "$MRPIN_DIR"/*; do
		# Non-blocking: `events` would wait for new lines.
		if "${NOBODY[@]}" dd if="$f" of=/dev/null iflag=nonblock count=1 \
			status=none 2>"$tmp/err" ||
			! grep -q 'Permission denied' "$tmp/err"; then
			echo "$(basename "$f"): $(head -c 100 "$tmp/err")" >>"$tmp/readable"
		fi
	done
	[ ! -s "$tmp/readable" ]
}

# nobody_write TEXT [AS...]: write TEXT to limits in one write() as nobody
# (or AS...); true if it failed with EPERM and changed nothing.
nobody_write() {
	local text=$1
	shift
	[ $# -gt 0 ] || set -- "${NOBODY[@]}"
	printf '%s' "$text" >"$tmp/text"
	"$@" dd of="$LIMITS" bs=1M iflag=fullblock conv=notrunc status=none \
		<"$tmp/text" 2>"$tmp/err"
	local status=$?
	[ "$status" != 0 ] && grep -q 'Operation not permitted' "$tmp/err" &&
		same_as "$tmp/perm"
}

# 1. Reading, with the modes mrpin gives and with the directories open.
put_perm() {
	printf 'reset\nuid 77 max_pins=7\nprocess max_pinned=3G\n' >"$LIMITS"
	cat "$LIMITS" >"$tmp/perm"
}
put_perm
ktap_check "debugfs_files_are_owned_by_root" \
	test -z "$(stat -c '%n %U' "$MRPIN_DIR"/* | awk '$2 != "root"')"
ktap_check "unprivileged_user_reads_no_file" unreadable_by_nobody
sed 's/^/# readable: /' "$tmp/readable"
ktap_check "unprivileged_user_cannot_read_securityfs_limits" \
	bash -c "! ${NOBODY[*]} cat $MRPIN_LIMITS >/dev/null 2>&1"
ktap_check "unprivileged_user_cannot_list_the_directory" \
	bash -c "! ${NOBODY[*]} ls $MRPIN_DIR >/dev/null 2>&1"
chmod 755 "$DEBUGFS" "$MRPIN_DIR"
ktap_check "directories_opened_up" bash -c "${NOBODY[*]} ls $MRPIN_DIR >/dev/null"
ktap_check "unprivileged_user_reads_no_file_with_the_directories_open" \
	unreadable_by_nobody
sed 's/^/# readable: /' "$tmp/readable"

# 2. Writing, through DOOR's limits FILE: nobody, with it 0666 and every
# directory open; root without CAP_SYS_ADMIN (whatever the mode), and root
# with it.  CAP_SYS_ADMIN is bit 21 of CapEff: uid 0, every capability but
# that.
caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
capeff=$("${NO_SYS_ADMIN[@]}" awk '/^CapEff:/ { print $2 }' /proc/self/status)
ktap_check "root_without_cap_sys_admin_lacks_only_that" \
	test "$("${NO_SYS_ADMIN[@]}" id -u) $((0x$capeff >> 21 & 1)) $((0x$capeff | 1 << 21))" = "0 0 $((0x$caps))"
check_writes() {
	local door=$1 LIMITS=$2 mode status

	mode=$(stat -c %a "$LIMITS")
	put_perm
	ktap_check "${door}_limits_is_mode_0600" test "$mode" = 600
	ktap_check "${door}_unprivileged_user_cannot_open_limits_0600_for_writing" \
		bash -c "! ${NOBODY[*]} bash -c ': >>$LIMITS' 2>/dev/null"
	chmod 666 "$LIMITS"
	ktap_check "${door}_chmod_666_is_taken" test "$(stat -c %a "$LIMITS")" = 666
	ktap_check "${door}_unprivileged_user_opens_limits_0666_for_writing" \
		"${NOBODY[@]}" bash -c "exec 4>>$LIMITS"
	ktap_check "${door}_unprivileged_reset_fails_with_eperm" nobody_write $'reset\n'
	ktap_check "${door}_unprivileged_rule_fails_with_eperm" \
		nobody_write $'uid 65534 max_pinned=unlimited max_pins=unlimited\n'
	ktap_check "${door}_unprivileged_malformed_write_fails_with_eperm_not_einval" \
		nobody_write $'bogus\n'
	ktap_check "${door}_unprivileged_write_of_the_policy_itself_fails_with_eperm" \
		nobody_write "$(cat "$tmp/perm")"
	ktap_check "${door}_unprivileged_write_over_64KiB_fails_with_eperm" \
		nobody_write "$(head -c 70000 /dev/zero | tr '\0' '#')"
	# A descriptor root opened, handed to nobody.
	exec 3<>"$LIMITS"
	"${NOBODY[@]}" bash -c 'printf "reset\n" >&3' 2>"$tmp/err"
	status=$?
	ktap_check "${door}_unprivileged_write_through_a_descriptor_root_opened_fails_with_eperm" \
		bash -c "[ $status != 0 ] && grep -q 'Operation not permitted' $tmp/err && cat $LIMITS | cmp -s - $tmp/perm"
	# The same descriptor, written by root of a user namespace: root
	# there, but without CAP_SYS_ADMIN over the machine.
	if [ ! -e /proc/self/ns/user ]; then
		ktap_skip "${door}_write_by_root_of_a_user_namespace_fails_with_eperm" \
			"this kernel has no user namespaces (CONFIG_USER_NS)"
	else
		unshare --user --map-root-user bash -c 'printf "reset\n" >&3' 2>"$tmp/err"
		status=$?
		ktap_check "${door}_write_by_root_of_a_user_namespace_fails_with_eperm" \
			bash -c "[ $status != 0 ] && grep -q 'Operation not permitted' $tmp/err && cat $LIMITS | cmp -s - $tmp/perm"
	fi
	exec 3>&-
	# A descriptor nobody opened, handed to root, who writes through it:
	# the opener's privilege counts too.
	python3 - "$LIMITS" >"$tmp/err" 2>&1 <<-'EOF'
	import os, socket, sys
	a, b = socket.socketpair()
	pid = os.fork()
	if pid == 0:
	    try:
	        os.setgroups([])
	        os.setgid(65534)
	        os.setuid(65534)
	        socket.send_fds(b, [b"f"], [os.open(sys.argv[1], os.O_WRONLY)])
	    finally:
	        os._exit(0)
	b.close()
	_, fds, _, _ = socket.recv_fds(a, 1, 1)
	os.waitpid(pid, 0)
	if not fds:
	    sys.exit("nobody could not open " + sys.argv[1])
	try:
	    os.write(fds[0], b"reset\n")
	    os.close(fds[0])
	except OSError as e:
	    print(e.strerror)
	EOF
	ktap_check "${door}_write_by_root_through_a_descriptor_nobody_opened_fails_with_eperm" \
		bash -c "grep -q 'Operation not permitted' $tmp/err && cat $LIMITS | cmp -s - $tmp/perm"
	if "${NOBODY[@]}" cat "$LIMITS" >/dev/null 2>&1; then
		ktap_diag "with 0666 nobody reads $door's limits: a mode root chose; writes stay guarded"
	fi
	ktap_check "${door}_root_without_cap_sys_admin_cannot_write_limits_0666" \
		nobody_write $'reset\n' "${NO_SYS_ADMIN[@]}"
	chmod 600 "$LIMITS"
	ktap_check "${door}_root_without_cap_sys_admin_cannot_write_limits_0600" \
		nobody_write $'reset\n' "${NO_SYS_ADMIN[@]}"
	if command -v capsh >/dev/null; then
		ktap_check "${door}_root_after_capsh_drop_cap_sys_admin_cannot_write_limits" \
			nobody_write $'reset\n' capsh --drop=cap_sys_admin -- -c 'exec "$@"' capsh
	else
		ktap_ok "${door}_root_after_capsh_drop_cap_sys_admin_cannot_write_limits # SKIP capsh is missing"
	fi
	printf 'reset\n' >"$LIMITS"
	ktap_check "${door}_root_with_cap_sys_admin_writes_limits" \
		bash -c "! grep -q '^uid 77 ' $LIMITS"
	chmod "$mode" "$LIMITS"
}
check_writes securityfs "$MRPIN_LIMITS"
check_writes debugfs "$MRPIN_DIR/limits"
chmod "$mode_dir" "$MRPIN_DIR"
chmod "$mode_debugfs" "$DEBUGFS"
ktap_check "modes_restored" test "$(stat -c %a "$DEBUGFS" "$MRPIN_DIR" "$MRPIN_DIR/limits" "$MRPIN_LIMITS" | tr '\n' ' ')" = \
	"$mode_debugfs $mode_dir 600 600 "

# 4. No kernel address: every file with something in it first.
"$here/mrpin_mistakes" leak-exit 3 </dev/null >"$tmp/leak.out" 2>&1
printf 'global callsites=on\nprocess max_pinned=64K\n' >"$LIMITS"
"$here/mrpin_pinner" 1M </dev/null >"$tmp/denied" 2>&1
printf 'process max_pinned=unlimited\n' >"$LIMITS"
mrpin_hold pinner "$here/mrpin_pinner" 8K@100 4K
mrpin_hold sites "$here/mrpin_mistakes" callsites 2 3
mrpin_hold stack "$here/mrpin_misuse" stack

rows() { # rows FILE: its lines but the header
	if [ "$1" = events ]; then
		dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null | grep -vc '^#'
	else
		grep -vc '^#' "$MRPIN_DIR/$1"
	fi
}
ktap_check "pins_events_leaks_and_callsites_have_rows" \
	bash -c "[ $(rows pins) -ge 8 ] && [ $(rows events) -ge 2 ] &&
		[ $(rows leaks) -ge 1 ] && [ $(rows callsites) -ge 2 ]"
ktap_diag "rows: pins $(rows pins), events $(rows events), leaks $(rows leaks), callsites $(rows callsites)"

# kernel_addresses: the words of stdin that look like a kernel address:
# hex with ffff and 12 more digits (0xffff..., ffff8880...), or a decimal
# from 0xffff800000000000 up, but U64_MAX.
kernel_addresses() {
	local n
	tr -c '0-9A-Za-z' '\n' | sed -n -E '/^(0[xX])?[fF]{4}[0-9a-fA-F]{12}/p; /^[0-9]{20}$/p' |
		while read -r n; do
			case $n in
			[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9])
				# 20 digits each: the strings' order is the numbers'.
				[[ "$n" > "18446603336221196287" && "$n" != "18446744073709551615" ]] &&
					echo "$n"
				;;
			*) echo "$n" ;;
			esac
		done
}

for f in "$MRPIN_DIR"/*; do
	name=$(basename "$f")
	if [ "$name" = events ]; then
		dd if="$f" iflag=nonblock status=none 2>/dev/null >"$tmp/content"
	else
		cat "$f" >"$tmp/content"
	fi
	found=$(kernel_addresses <"$tmp/content" | head -n 3 | tr '\n' ' ')
	ktap_check "no_kernel_address_in_$name" test -z "$found"
	[ -z "$found" ] || ktap_diag "$name: $found"
done
found=$(cat /sys/module/mrpin/parameters/* | kernel_addresses | head -n 3 | tr '\n' ' ')
ktap_check "no_kernel_address_in_the_parameters" test -z "$found"
kernel_log_read
grep mrpin <<<"$kernel_log" >"$tmp/log"
ktap_diag "$(wc -l <"$tmp/log") lines of mrpin's in the kernel log, e.g.: $(tail -n1 "$tmp/log")"
found=$(kernel_addresses <"$tmp/log" | head -n 3 | tr '\n' ' ')
ktap_check "no_kernel_address_in_mrpin_log_lines" test -z "$found"
[ -z "$found" ] || ktap_diag "log: $found"

for h in pinner sites stack; do
	mrpin_release "$h"
done

# 5. Names their owners choose reach no terminal raw.  A program run by a
# name holding control characters (its comm: ESC, BEL, TAB, a lone C1 byte
# and a C1 control in UTF-8) registers in a cgroup whose name holds them
# too, past that cgroup's limit, holds a pin there with call sites on, and
# leaks at exit.  Every view, the events, mrpin's kernel log lines (read
# raw, as the console prints them), its tracepoints and mrpinctl's text
# show only printable ASCII, the names escaped as \ooo; the pin tracepoint
# names its caller, never its address.
hostile=$'p\e]0;x\a\t\x9b\xc2\x9by'
hostile_esc='p\033]0;x\007\011\233\302\233y'
cg_name=$'mrpin_sec\e[2J\t#x\x7f'
cg_esc='/mrpin_sec\033[2J\011\043x\177'
mkdir -p "$tmp/m"
ln -s "$here/mrpin_pinner" "$tmp/$hostile"
ln -s "$here/mrpin_mistakes" "$tmp/m/$hostile"
cg_dir=/sys/fs/cgroup/$cg_name
mkdir "$cg_dir"
TRACE=/sys/kernel/tracing
echo 1 >"$TRACE/events/mrpin/enable"
: >"$TRACE/trace"
printf 'cgroup %s max_pinned=64K\n' "$cg_esc" >"$LIMITS"
sleep 5	# a new window of the log's rate limit (10 lines per 5 s)
# Where this section's lines start in the kernel's log buffer.
echo "mrpin_security: hostile names" >/dev/kmsg
# in_cg PROGRAM ARGS...: PROGRAM run in the hostile cgroup.
in_cg() {
	echo "$BASHPID" >"$cg_dir/cgroup.procs" && exec "$@"
}
(in_cg "$tmp/$hostile" 1M </dev/null >"$tmp/hostile-denied" 2>&1)
(in_cg "$tmp/m/$hostile" leak-exit 2 </dev/null >"$tmp/hostile-leak" 2>&1)
mrpin_hold hostile bash -c "$(declare -f in_cg); in_cg \"\$@\"" _ \
	"$tmp/$hostile" 8K
echo 0 >"$TRACE/events/mrpin/enable"

hostile_rows() {
	local missing=

	dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null >"$tmp/events"
	grep -qF " $hostile_esc " "$MRPIN_DIR/procs" || missing+=" procs"
	grep -qF "$cg_esc " "$MRPIN_DIR/cgroups" || missing+=" cgroups"
	cut -d' ' -f1 "$MRPIN_DIR/leaks" | grep -qxF "$hostile_esc" || missing+=" leaks"
	grep -qF " $hostile_esc " "$MRPIN_DIR/callsites" || missing+=" callsites"
	grep -F " $hostile_esc " "$tmp/events" | grep -qF " cgroup:$cg_esc " ||
		missing+=" events"
	[ -z "$missing" ] && return
	ktap_diag "no hostile row in:$missing"
	grep -h -m2 -F 'p\033' "$MRPIN_DIR/leaks" "$MRPIN_DIR/callsites" "$tmp/events" |
		sed 's/^/# /'
	return 1
}
ktap_check "hostile_names_show_escaped_in_procs_cgroups_leaks_callsites_events" \
	hostile_rows
# not_ascii: the lines of stdin with a byte outside printable ASCII.
not_ascii() {
	local l

	l=$(LC_ALL=C grep -a -n '[^ -~]' | head -n 3)
	[ -z "$l" ] || printf '%s' "$l" | od -c | head -n 4 | tr -s ' ' | tr '\n' ' '
}
found=
for f in "$MRPIN_DIR"/*; do
	if [ "$(basename "$f")" = events ]; then
		dd if="$f" iflag=nonblock status=none 2>/dev/null >"$tmp/content"
	else
		cat "$f" >"$tmp/content"
	fi
	bad=$(not_ascii <"$tmp/content")
	[ -z "$bad" ] || found+="$(basename "$f"): $bad; "
done
ktap_check "views_show_only_printable_ascii" test -z "$found"
[ -z "$found" ] || ktap_diag "$found"
# The kernel's log buffer as the console has it (syslog(2) READ_ALL):
# /dev/kmsg and dmesg would escape it themselves.
python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(1 << 22)
n = libc.klogctl(3, buf, len(buf))
log = buf.raw[:max(n, 0)]
sys.stdout.buffer.write(log[log.rfind(b"mrpin_security: hostile names"):])' |
	LC_ALL=C grep -a 'mrpin: ' >"$tmp/rawlog"
hostile_logged() {
	grep -qF "($hostile_esc)" "$tmp/rawlog" &&
		grep -qF "cgroup:$cg_esc max_pinned" "$tmp/rawlog"
}
ktap_check "kernel_log_has_the_hostile_names_escaped" hostile_logged
bad=$(not_ascii <"$tmp/rawlog")
ktap_check "kernel_log_lines_of_mrpin_are_printable_ascii" test -z "$bad"
[ -z "$bad" ] || ktap_diag "log: $bad"
grep -a ' mrpin_\(pin\|deny\): ' "$TRACE/trace" | sed 's/.* mrpin_/mrpin_/' >"$tmp/trace"
pin_caller() {
	grep -q 'char caller\[' "$TRACE/events/mrpin/mrpin_pin/format" &&
		! grep -q 'long caller;' "$TRACE/events/mrpin/mrpin_pin/format" &&
		grep -q '^mrpin_pin: .* caller=[A-Za-z_][A-Za-z0-9_.]*$' "$tmp/trace" &&
		! grep -q '^mrpin_pin: .* caller=[^A-Za-z_]' "$tmp/trace"
}
ktap_check "pin_tracepoint_records_the_callers_name_not_its_address" pin_caller
ktap_diag "$(grep -c '' "$tmp/trace") trace lines, e.g. $(grep -m1 '^mrpin_pin' "$tmp/trace")"
traced_ok() {
	grep -qF "scope=cgroup:$cg_esc " "$tmp/trace" && [ -z "$(not_ascii <"$tmp/trace")" ]
}
ktap_check "deny_tracepoint_shows_the_cgroup_escaped" traced_ok
grep -a -m1 '^mrpin_deny' "$tmp/trace" | od -c | head -n 8 | sed 's/^/# /'
found=
for c in proc pin cgroup events; do
	bad=$("$MRPIN_CTL" "$c" </dev/null 2>&1 | not_ascii)
	[ -z "$bad" ] || found+="mrpinctl $c: $bad; "
done
ktap_check "mrpinctl_text_shows_only_printable_ascii" test -z "$found"
[ -z "$found" ] || ktap_diag "$found"
mrpin_release hostile
rmdir "$cg_dir"

# An events line longer than 511 bytes (a cgroup path of 209 bytes, 200 of
# them escaped to four each) is whole: its newline, its 12 fields.
long_name=mrpin_L$(printf '\xe9%.0s' $(seq 200))
long_esc=/mrpin_L$(printf '\\351%.0s' $(seq 200))
cg_dir=/sys/fs/cgroup/$long_name
mkdir "$cg_dir"
printf 'cgroup /%s max_pinned=4K\n' "$long_name" >"$LIMITS" ||
	ktap_diag "the rule of $long_esc was not written"
(in_cg "$here/mrpin_pinner" 1M </dev/null >/dev/null 2>&1) &&
	ktap_diag "1M registered in $long_esc"
long_event() {
	# (dd fails with EAGAIN at the end of a non-blocking read.)
	dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null >"$tmp/events"
	cg="cgroup:$long_esc" awk '$7 == ENVIRON["cg"] && NF == 12 &&
		length($0) > 511 { found = 1 } END { exit !found }' "$tmp/events" &&
		[ "$(tail -c 1 "$tmp/events" | od -An -c | tr -d ' ')" = '\n' ] &&
		return
	ktap_diag "last event: $(tail -n 1 "$tmp/events" | cut -c 1-160)... ($(tail -n 1 "$tmp/events" | wc -c) bytes)"
	return 1
}
ktap_check "an_events_line_over_511_bytes_is_whole" long_event
rmdir "$cg_dir"
cat "$tmp/found" >"$LIMITS"
ktap_check "policy_found_is_restored" same_as "$tmp/found"
ktap_check_kernel_log "kernel_log_has_no_new_problems"
rm -rf "$tmp"
ktap_finish
