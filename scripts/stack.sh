#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make stack`: the stack frame of every function of the module, from the
# .su files gcc writes with -fstack-usage (the Makefile builds with it).
# Prints the functions at or over half the limit, largest first, and fails
# when one is over it: a module runs on the registering task's kernel
# stack, under ib_uverbs and the driver, and CONFIG_FRAME_WARN is the
# kernel's own mark (2048 on Debian's amd64 configs, 1024 upstream).
#
#   stack.sh [LIMIT]     default LIMIT: 512 bytes
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../kmod"
limit=${1:-512}
shopt -s nullglob
su=(*.su)
[ ${#su[@]} -gt 0 ] || { echo "stack: no .su file in kmod/ (make stack builds them)" >&2; exit 1; }
# file:line:col:function<TAB>bytes<TAB>static|dynamic[,bounded]
sort -t$'\t' -k2,2nr "${su[@]}" | awk -F'\t' -v limit="$limit" '
	{ n = split($1, f, ":"); fn = f[n]; file = f[1]; sub(".*/", "", file) }
	NR == 1 { printf "stack: largest frame %d bytes (%s, %s)\n", $2, fn, file }
	$2 >= limit / 2 { printf "%6d  %-9s %s  %s\n", $2, $3, fn, file }
	$3 ~ /dynamic/ && $3 !~ /bounded/ { printf "stack: %s has a frame of unbounded size\n", fn; bad = 1 }
	$2 > limit { over++ }
	END {
		if (over) { printf "stack: %d function(s) over %d bytes\n", over, limit; bad = 1 }
		else printf "stack: every function within %d bytes\n", limit
		exit bad
	}'
