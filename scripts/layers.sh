#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make layers`: which file of the module calls which, from nm of each
# object (the symbols it defines, the ones it needs), and whether they
# form layers.  A file may use what the files below it define, never what
# one above it does: no two files use each other, directly or round a
# loop.  Prints each file with the files it uses, then the files from the
# bottom layer up (tsort's order, each after all it uses), or the loop,
# and fails on a loop.
#
#   layers.sh [DIR]      default DIR: kmod (after make module)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
dir=${1:-kmod}
shopt -s nullglob
objs=()
for o in "$dir"/*.o; do
	case $o in
	*.mod.o | "$dir"/mrpin.o) ;;
	*) objs+=("$o") ;;
	esac
done
[ ${#objs[@]} -gt 0 ] || { echo "layers: no object in $dir/ (make module first)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	# Global symbols defined here (text, data, bss, read-only, weak).
	nm --defined-only -g "$o" | awk -v f="$f" '{ print $3, f }'
	nm --undefined-only "$o" | awk '{ print $2 }' >"$tmp/need.$f"
done | sort -u >"$tmp/defs"

edges=$tmp/edges
: >"$edges"
for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	[ -f "$tmp/need.$f" ] || continue
	sort -u "$tmp/need.$f" | join - "$tmp/defs" | awk -v f="$f" '$2 != f { print f, $2 }'
done | sort -u >"$edges"

for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	uses=$(awk -v f="$f" '$1 == f { printf " %s", $2 }' "$edges")
	printf '%-12s uses%s\n' "$f" "${uses:- no other file}"
done

# tsort wants "before after": the file used comes first (bottom up).
nodes=$(for o in "${objs[@]}"; do b=$(basename "$o" .o); echo "$b $b"; done)
if ! order=$( { echo "$nodes"; awk '{ print $2, $1 }' "$edges"; } | tsort 2>"$tmp/loop"); then
	echo "layers: the files call each other round a loop:" >&2
	sed -n 's/^tsort: //p' "$tmp/loop" | grep -v 'input contains a loop' |
		sort -u >"$tmp/inloop" || true
	# Every call between files of a loop, so the cycle can be read.
	awk 'NR == FNR { in_[$1] = 1; next } ($1 in in_) && ($2 in in_) { print "  " $1 " -> " $2 }' \
		"$tmp/inloop" "$edges" >&2
	exit 1
fi
echo "layers, bottom up: $(echo $order)"
