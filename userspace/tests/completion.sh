#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The bash completion, driven as bash would drive it (with stand-ins for
# bash-completion's _init_completion and _filedir): "LINE|EXPECTED" cases
# on stdin, where EXPECTED is the words offered, space-separated.  Prints
# the mismatches; exits 1 if any.
_init_completion() {
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	words=("${COMP_WORDS[@]}")
	cword=$COMP_CWORD
}
_filedir() { COMPREPLY=(FILES); }
compopt() { :; }
. "$(dirname "$0")/../mrpinctl.bash-completion"

bad=0
while IFS='|' read -r line want; do
	[ -z "$line" ] && continue
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_mrpinctl
	got="${COMPREPLY[*]}"
	if [ "$got" != "$want" ]; then
		echo "completion of '$line': got '$got', want '$want'"
		bad=1
	fi
done
exit $bad
