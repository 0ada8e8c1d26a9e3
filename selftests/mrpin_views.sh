#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The debugfs views keep their contract: root-only files, a header line,
# white space in comm escaped as in mountinfo, the caller named, and no
# kernel pointer anywhere.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
here=$(cd "$(dirname "$0")" && pwd)
ktap_plan 10

# A program whose comm holds a space: comm is the executable's name.
tmp=$(mktemp -d)
ln -s "$here/mrpin_pinner" "$tmp/pin ner"
mkfifo "$tmp/in"
"$tmp/pin ner" 8K@100 4K <"$tmp/in" >"$tmp/out" &
pid=$!
exec 7>"$tmp/in"
for _ in $(seq 100); do
	grep -q '^ready' "$tmp/out" && break
	sleep 0.1
done

procs_line=$(awk -v p="$pid" '$1 == p' "$MRPIN_DIR/procs")
ktap_check "comm_with_a_space_is_escaped_in_procs" \
	test "$(echo "$procs_line" | awk '{ print $2 }')" = 'pin\040ner'
ktap_check "escaped_procs_line_keeps_its_column_count" \
	test "$(echo "$procs_line" | awk '{ print NF }')" = \
	"$(head -n1 "$MRPIN_DIR/procs" | awk '{ print NF - 1 }')"
pin_lines=$(awk -v p="$pid" '$2 == p' "$MRPIN_DIR/pins")
ktap_check "pins_name_the_caller_in_one_column" \
	test "$(echo "$pin_lines" | awk '{ print $8 }' | sort -u)" = rxe_mr_init_user
ktap_check "unaligned_pin_counts_the_pages_it_spans" \
	bash -c "echo '$pin_lines' | awk '\$6 == 8192 && \$7 == 12288' | grep -q ."

for f in "$MRPIN_DIR"/*; do
	head -n1 "$f" | grep -q '^# ' || [ "$(basename "$f")" = version ] ||
		[ "$(basename "$f")" = stats ] || bad_header="$bad_header $f"
done
ktap_check "every_table_starts_with_a_header" test -z "${bad_header:-}"
# N% limits are shares of this: the machine's RAM, as MemTotal counts it.
ktap_check "stats_ram_bytes_is_memtotal" test \
	"$(awk '$1 == "ram_bytes" { print $2 }' "$MRPIN_DIR/stats")" = \
	"$(($(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo) * 1024))"

modes=$(stat -c '%n %a' "$MRPIN_DIR"/* | awk '
	$1 ~ /\/limits$/ { if ($2 != 600) print $1, $2; next }
	$2 != 400 { print $1, $2 }')
ktap_check "files_are_root_only_and_only_limits_is_writable" test -z "$modes"
# debugfs's root is 0700: open it up, so that the files' own modes are
# what stops an unprivileged reader.
debugfs_mode=$(stat -c '%a' /sys/kernel/debug)
chmod 755 /sys/kernel/debug
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
ktap_check "unprivileged_user_cannot_read_pins" \
	bash -c "! ${nobody[*]} cat $MRPIN_DIR/pins >/dev/null 2>&1"
ktap_check "unprivileged_user_cannot_read_procs" \
	bash -c "! ${nobody[*]} cat $MRPIN_DIR/procs >/dev/null 2>&1"
chmod "$debugfs_mode" /sys/kernel/debug
# Kernel addresses on x86-64 start at 0xffff8...: none, in hex or decimal.
no_kernel_pointer() {
	! mrpin_read_all | grep -Eiq 'ffff[89a-f][0-9a-f]{11}|18446[0-9]{15}'
}
ktap_check "no_kernel_pointer_in_any_file" no_kernel_pointer

exec 7>&-
wait "$pid"
rm -rf "$tmp"
ktap_finish
