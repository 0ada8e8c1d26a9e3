#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin loads, creates its debugfs files with the promised headers, and
# unloads without leaving anything behind.  Function tracing cannot be
# switched off under it (`sysctl kernel.ftrace_enabled=0` would let every
# pin through unseen and lose releases): the sysctl fails while mrpin is
# loaded, and mrpin refuses to load, saying why, while it is off.  (From
# 7.x the sysctl no longer switches it off at all.)
. "$(dirname "$0")/lib.sh"

require_root
require_built "$MRPIN_KO"
[ -e /proc/sys/kernel/ftrace_enabled ] ||
	ktap_skip_all "this kernel has no kernel.ftrace_enabled (no CONFIG_FUNCTION_TRACER), which mrpin needs"
ktap_plan 13

# ftrace_off: try to switch function tracing off; true if it went off.
ftrace_off() {
	echo 0 >/proc/sys/kernel/ftrace_enabled 2>/dev/null
	[ "$(cat /proc/sys/kernel/ftrace_enabled)" = 0 ]
}
ftrace_stays_on() { ! ftrace_off; }
insmod_fails() { ! insmod "$MRPIN_KO" 2>/dev/null; }
nothing_loaded() { ! mrpin_loaded && [ ! -e "$MRPIN_DIR" ]; }

kernel_log_mark
mrpin_unload
ktap_check "unloads_while_loaded_by_the_test_bed" bash -c '! grep -q "^mrpin " /proc/modules'
ktap_check "loads_with_insmod" insmod "$MRPIN_KO"
ktap_check "version_file_names_the_module" \
	grep -Eq '^mrpin [0-9]+\.[0-9]+\.[0-9]+$' "$MRPIN_DIR/version"
ktap_check "devices_file_starts_with_its_header" \
	bash -c "head -n1 $MRPIN_DIR/devices | grep -qx '# device node_guid max_mr pins pinned_bytes peer_bytes'"
ktap_check "ftrace_is_on_to_start_with" \
	test "$(cat /proc/sys/kernel/ftrace_enabled)" = 1
ktap_check "ftrace_cannot_be_switched_off_while_loaded" ftrace_stays_on
rmmod mrpin
ktap_check "unload_removes_the_debugfs_directory" test ! -e "$MRPIN_DIR"
if ftrace_off; then
	ktap_ok "ftrace_can_be_switched_off_once_unloaded"
	ktap_check "insmod_fails_while_ftrace_is_off" insmod_fails
	ktap_check "nothing_is_left_loaded" nothing_loaded
	kernel_log_read
	ktap_check "the_log_says_why" grep -q 'mrpin: cannot redirect the umem functions: function tracing is off (sysctl kernel.ftrace_enabled=0)' <<<"$kernel_log"
	echo 1 >/proc/sys/kernel/ftrace_enabled
else
	# 7.x: "The ftrace_enabled file is deprecated and no longer disables
	# ftrace" (EOPNOTSUPP): there is nothing to refuse.
	for t in ftrace_can_be_switched_off_once_unloaded \
		insmod_fails_while_ftrace_is_off nothing_is_left_loaded \
		the_log_says_why; do
		ktap_skip "$t" "kernel.ftrace_enabled no longer switches function tracing off on this kernel"
	done
fi
ktap_check "loads_once_ftrace_is_back_on" insmod "$MRPIN_KO"
ktap_check_kernel_log "kernel_log_has_no_new_problems"
mrpin_load
ktap_finish
