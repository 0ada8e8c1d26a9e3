# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The machine's VM slots, shared by every VM that `make check-all` starts
# (sourced by vm-run.sh).  Single-threaded TCG keeps a host CPU busy per
# VM, and the machine has no CPU to spare for one more: with
# MRPIN_VM_SLOTS=DIR (made by `vm_slots_make DIR N`), a VM starts only when
# it holds one of the N slots of DIR, and the VM waiting with the most
# work (MRPIN_VM_COST, seconds, from scripts/check.sh's table) gets the
# next free one, the earliest asker among equals: the longest VMs of every
# kernel start first, whichever kernel's suite asked, and the short ones
# fill the end.
#
# A slot is an flock on DIR/slot.N, held by an open file that vm-run.sh
# and QEMU keep until they end: a VM that dies, or is killed, frees its
# slot with it.  A request is a file DIR/ask.PID ("COST SECONDS"); one
# whose process has ended is dropped by the next asker.

# vm_slots_make DIR N: DIR with N free slots.
vm_slots_make() {
	local i

	mkdir -p "$1"
	rm -f "$1"/ask.* "$1"/slot.*
	for ((i = 0; i < $2; i++)); do
		: >"$1/slot.$i"
	done
	: >"$1/lock"
}

# vm_slot_first DIR: the PID of the request to serve first (the most work,
# then the earliest); requests of processes that ended are removed.
vm_slot_first() {
	local f cost when pid best='' best_cost=-1 best_when=''

	for f in "$1"/ask.*; do
		[ -f "$f" ] || continue
		read -r cost when <"$f" || continue
		pid=${f##*/ask.}
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$f"
			continue
		fi
		if [ "$cost" -gt "$best_cost" ] ||
			{ [ "$cost" = "$best_cost" ] && [[ "$when" < "$best_when" ]]; }; then
			best=$pid best_cost=$cost best_when=$when
		fi
	done
	echo "$best"
}

# vm_slot_take DIR: wait for a slot of DIR, and hold it on an open file
# that this shell and its children keep until they end.
vm_slot_take() {
	local dir=$1 cost=${MRPIN_VM_COST:-0} lock f fd waited=$SECONDS

	case "$cost" in
	'' | *[!0-9]*) echo "vm-run: MRPIN_VM_COST must be a number of seconds, not '$cost'" >&2; return 2 ;;
	esac
	[ -f "$dir/lock" ] ||
		{ echo "vm-run: MRPIN_VM_SLOTS=$dir holds no slots (vm_slots_make)" >&2; return 2; }
	printf '%s %s\n' "$cost" "$EPOCHREALTIME" >"$dir/ask.$BASHPID"
	while :; do
		exec {lock}>"$dir/lock"
		flock "$lock"
		if [ "$(vm_slot_first "$dir")" = "$BASHPID" ]; then
			for f in "$dir"/slot.*; do
				exec {fd}>"$f"
				if flock -n "$fd"; then
					rm -f "$dir/ask.$BASHPID"
					exec {lock}>&-
					[ $((SECONDS - waited)) -lt 2 ] ||
						echo "vm-run: waited $((SECONDS - waited))s for a VM slot (${f##*.})" >&2
					return 0
				fi
				exec {fd}>&-
			done
		fi
		exec {lock}>&-
		sleep 1
	done
}
