#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin loads, creates its debugfs files with the promised headers, and
# unloads without leaving anything behind.
. "$(dirname "$0")/lib.sh"

require_root
require_built "$MRPIN_KO"
ktap_plan 6

kernel_log_mark
mrpin_unload
ktap_check "unloads_while_loaded_by_the_test_bed" bash -c '! grep -q "^mrpin " /proc/modules'
ktap_check "loads_with_insmod" insmod "$MRPIN_KO"
ktap_check "version_file_names_the_module" \
	grep -Eq '^mrpin [0-9]+\.[0-9]+\.[0-9]+$' "$MRPIN_DIR/version"
ktap_check "devices_file_starts_with_its_header" \
	bash -c "head -n1 $MRPIN_DIR/devices | grep -qx '# device node_guid max_mr pins pinned_bytes'"
rmmod mrpin
ktap_check "unload_removes_the_debugfs_directory" test ! -e "$MRPIN_DIR"
ktap_check_kernel_log "kernel_log_has_no_new_problems"
mrpin_load
ktap_finish
