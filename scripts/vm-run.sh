#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the test kernel under QEMU (TCG) with the host's root shared read-only
# and a tmpfs overlay on top, bring up rxe0, load kmod/mrpin.ko and run a
# command as root in the guest; exit with the command's status.
#
#   vm-run.sh [options] [--] COMMAND...     one-shot
#   vm-run.sh --shell                        interactive root shell
#
# Options: --shell, --no-mrpin (do not insmod mrpin.ko), --append ARGS (more
# kernel command line), --timeout SECONDS
# (default $MRPIN_VM_TIMEOUT or 1200), --mem SIZE (default $MRPIN_VM_MEM or 4G),
# --insns PLUGIN: count the guest's instructions with QEMU plugin PLUGIN
# (selftests/qemu_insns.c, built by make bench), which writes each window
# the guest marks to a file the guest reads as /run/mrpin-host/insns
# (single-threaded TCG only),
# MRPIN_VM_SLOTS=DIR: start only on a free slot of DIR, the VMs with the
# most work (MRPIN_VM_COST seconds) first (scripts/vm-slots.sh; make
# check-all shares the machine's CPUs out so among all its kernels).
# --tcg single|multi: one host thread for both vCPUs (the default), or one
# each.  The guest has two CPUs either way (on multi, the second comes
# online once the guest has booted).  Single-threaded TCG is as fast
# for the suite, and two VMs side by side each keep their speed; on
# multi-threaded TCG a vCPU spinning on a lock whose holder the host has
# descheduled burns a CPU, so two VMs side by side took twice the CPU time
# and about twice as long each (README, "The test bed").  QEMU 7.2's
# multi-threaded TCG can also keep running a stale translation of kernel
# text another vCPU has just patched (README, "Reloading under traffic").
#
# The run fails (non-zero) when the guest's kernel log shows an Oops, BUG,
# WARNING, lockup, KASAN/lockdep/kmemleak/UBSAN report or panic, when the
# kernel picks up a taint other than out-of-tree (O) or unsigned (E), when
# `rmmod mrpin` fails at the end, or when the guest dies or hangs.  The
# console log is kept in build/vm/console.log (or $MRPIN_VM_LOG); on failure
# its lines that report a problem and its tail are printed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mode=run
load=1
append=
timeout=${MRPIN_VM_TIMEOUT:-1200}
mem=${MRPIN_VM_MEM:-4G}
tcg=single
insns=

while [ $# -gt 0 ]; do
	case "$1" in
	--shell) mode=shell ;;
	--no-mrpin) load=0 ;;
	--append) append=$2; shift ;;
	--timeout) timeout=$2; shift ;;
	--mem) mem=$2; shift ;;
	--insns) insns=$2; shift ;;
	--tcg)
		case "$2" in
		single | multi) tcg=$2 ;;
		*) echo "vm-run: --tcg takes single or multi, not '$2'" >&2; exit 2 ;;
		esac
		shift
		;;
	--) shift; break ;;
	-*) echo "vm-run: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
if [ -n "$insns" ]; then
	[ -f "$insns" ] || { echo "vm-run: no plugin $insns" >&2; exit 2; }
	[ "$tcg" = single ] ||
		{ echo "vm-run: --insns counts on single-threaded TCG only" >&2; exit 2; }
	insns=$(readlink -f "$insns")
fi
if [ "$mode" = run ] && [ $# -eq 0 ]; then
	echo "usage: vm-run.sh [--no-mrpin] [--append ARGS] [--timeout S] [--mem SIZE] [--insns PLUGIN] [--tcg single|multi] -- COMMAND..." >&2
	echo "       vm-run.sh --shell" >&2
	exit 2
fi
case "$repo" in
*[[:space:]]*) echo "vm-run: the repository path must not contain white space" >&2; exit 2 ;;
esac

"$here/setup.sh" vm
eval "$("$here/setup.sh" paths)"
kdir=$KERNEL_DIR
vmlinuz=$kdir/boot/vmlinuz-$KVER
[ -f "$vmlinuz" ] || { echo "vm-run: $vmlinuz missing" >&2; exit 1; }
if [ "$load" = 1 ] && [ ! -f "$repo/kmod/mrpin.ko" ]; then
	echo "vm-run: $repo/kmod/mrpin.ko is not built (run make)" >&2
	exit 1
fi

# The initramfs: busybox plus the modules that reach 9p and overlayfs, in
# dependency order.  Rebuilt when the stage-1 script or the applets it
# uses change.
apps="sh mount umount insmod mkdir ln chmod switch_root sleep echo cat"
initrd=$kdir/initramfs-$({ cat "$here/initramfs-init"; echo "$apps"; } |
	sha1sum | cut -c1-12).cpio.gz
if [ ! -f "$initrd" ]; then
	t=$(mktemp -d)
	mkdir -p "$t/bin" "$t/modules" "$t/proc" "$t/sys" "$t/dev"
	cp /bin/busybox "$t/bin/"
	for app in $apps; do
		ln -s busybox "$t/bin/$app"
	done
	install -m 0755 "$here/initramfs-init" "$t/init"
	# Built-in drivers (the debug kernel) need no module at all.
	: >"$t/modules/order"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$kdir" -S "$KVER" --show-depends "$m" |
			sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | awk '!seen[$0]++' | while read -r ko; do
		# busybox's insmod takes no compressed module (6.12 and 7.x: .ko.xz).
		name=$(basename "$ko")
		case "$ko" in
		*.xz) name=${name%.xz}; xz -dc "$ko" >"$t/modules/$name" ;;
		*.zst) name=${name%.zst}; zstd -qdc "$ko" >"$t/modules/$name" ;;
		*) cp "$ko" "$t/modules/" ;;
		esac
		echo "$name" >>"$t/modules/order"
	done
	# A temporary file of this run's own, renamed into place whole: VMs
	# that start together build it side by side.
	tmp_initrd=$(mktemp "$initrd.XXXXXX")
	(cd "$t" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$tmp_initrd"
	chmod 0644 "$tmp_initrd"
	mv -f "$tmp_initrd" "$initrd"
	rm -rf "$t"
fi

log=${MRPIN_VM_LOG:-$repo/build/vm/console.log}
mkdir -p "$(dirname "$log")"
: >"$log"
rundir=$(mktemp -d /tmp/mrpin-vm.XXXXXX)
trap 'rm -rf "$rundir"' EXIT
install -m 0755 "$here/vm-guest.sh" "$rundir/guest.sh"
rows=24 cols=80
if [ -t 0 ]; then
	read -r rows cols < <(stty size 2>/dev/null || echo 24 80)
fi
cat >"$rundir/env" <<ENV
REPO=$repo
KVER=$KVER
MODDIR=$kdir/lib/modules/$KVER
MODE=$mode
LOAD_MRPIN=$load
VM_TERM=${TERM:-linux}
VM_ROWS=$rows
VM_COLS=$cols
ONLINE_CPUS=$([ "$tcg" = multi ] && echo 1 || echo 0)
ENV
{
	# The guest's path of the tree (vm-guest.sh).
	echo 'cd "$MRPIN_REPO"'
	# Pass the caller's make-level settings that tests look at, and, on
	# the OFED lane, OFED's tree (setup.sh paths), whose openibd script
	# mrpin_openibd.sh installs in the guest.
	for v in KSFT_VERBOSE MRPIN_TEST_FILTER MRPIN_RELOAD_CYCLES MRPIN_LOOPS \
		PROMTOOL PROMETHEUS NODE_EXPORTER OFA_DIR; do
		[ -n "${!v:-}" ] && echo "export $v=$(printf %q "${!v}")"
	done
	printf '%q ' "$@"
	echo
} >"$rundir/cmd"

# The kernel log holds a whole run (the default 128 or 256 KiB wrapped on
# the debug kernel), so a test reads every message logged since its start.
cmdline_extra='log_buf_len=16M'
# PCI from the host bridge's configuration space and every virtio device on
# MSI-X, not from ACPI's namespace: ACPI still gives the CPUs and the power
# off.  The debug kernel spent 11 s of its boot walking that namespace for
# the bridge and its routing (rxe0 up 45 s after the kernel's start, 56 s
# with it); the generic kernels less than a second.
cmdline_extra+=' acpi=noirq pci=noacpi'
# No randomised user address space (norandmaps): TCG finds a translated
# block by its virtual address, so a program whose libraries land
# somewhere new at each exec is translated anew each time.  A dynamically
# linked /bin/true took 31 ms per exec on 6.1, 13 ms without (a static
# one 8 ms either way), and the suite is mostly shell.  mrpin reads the
# address space by its VMAs, never by where they are.
cmdline_extra+=' norandmaps'
# Multi-threaded TCG: the second vCPU comes online only once the guest has
# booted and loaded its modules (scripts/vm-guest.sh).  QEMU 7.2 lets a vCPU
# keep running a stale translation of kernel text that the other vCPU has
# just patched: with both running from the start, the boot's own patching
# (the static key that marks sched_clock stable, at 2 s) left the other
# vCPU on the int3 that text_poke_bp() had already replaced, a panic in
# 1 boot of 11 on 6.12 ("Oops: int3" in sched_clock_cpu()), in none of 24
# since.  What is patched at boot and by each module's load is then
# patched with one vCPU running.
if [ "$tcg" = multi ]; then
	cmdline_extra+=' maxcpus=1'
fi
[ -z "$append" ] || cmdline_extra+=" $append"
# On a kernel with failslab, mark mrpin's slab caches for it (only the
# boot command line can since 5.9): mrpin_failslab.sh aims failures there.
if grep -qx 'CONFIG_FAILSLAB=y' "$kdir/boot/config-$KVER" 2>/dev/null; then
	cmdline_extra+=' slub_debug=A,mrpin_*'
fi

# q35, not pc: pc's ACPI tables route PCI interrupts with an AML loop
# (_PRT) that the debug kernel cannot finish within ACPICA's 30 s loop
# timeout on TCG, once per virtio device: 101 s to a finished `true`
# there, 40 s on q35, whose routing table is a constant package.  No
# 5-level paging (la57=off): on 6.12 an interrupt that comes while
# identify_cpu() has cleared the boot CPU's feature bits makes
# pgtable_l5_enabled() false for a moment, and KASAN, whose shadow bounds
# follow it, reports the interrupt's lock in the 5-level direct map as a
# wild access (seen on the debug kernel in about 1 boot of 8).
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	-machine q35 -accel "tcg,thread=$tcg" -cpu max,la57=off -smp 2 -m "$mem"
	-kernel "$vmlinuz" -initrd "$initrd"
	-append "console=ttyS0 ignore_loglevel panic=-1 $cmdline_extra"
	-serial "file:$log"
	-chardev stdio,id=tty1,signal=off -serial chardev:tty1
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
	-fsdev "local,id=mrpinrun,path=$rundir,security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=mrpinrun,mount_tag=mrpinrun)
[ -z "$insns" ] || qemu+=(-plugin "file=$insns,out=$rundir/insns")

# Under make check-all, a slot of the machine's (scripts/vm-slots.sh).
if [ -n "${MRPIN_VM_SLOTS:-}" ] && [ "$mode" = run ]; then
	# shellcheck source=scripts/vm-slots.sh
	. "$here/vm-slots.sh"
	vm_slot_take "$MRPIN_VM_SLOTS" || exit 2
fi

# children_cpu FILE: the CPU seconds (user and system) of the children of
# this shell that ended so far, to FILE: QEMU's, once it has.  `times`
# runs here, not in a command substitution's subshell, whose children
# are its own.
children_cpu() {
	local line u s

	times >"$1"
	{ read -r _; read -r line; } <"$1"
	read -r u s <<<"$line"
	awk -v u="$u" -v s="$s" 'function sec(t) { split(t, a, /[ms]/); return a[1] * 60 + a[2] }
		BEGIN { printf "%d\n", sec(u) + sec(s) + 0.5 }' >"$1"
}

children_cpu "$rundir/cpu.start"
start=$(date +%s)
status=0
if [ "$mode" = shell ]; then
	"${qemu[@]}" || status=$?
else
	timeout --foreground -k 10 "$timeout" "${qemu[@]}" </dev/null | sed -u "s/\r$//" ||
		status=$?
fi
elapsed=$(($(date +%s) - start))
children_cpu "$rundir/cpu.end"
cpu=$(($(cat "$rundir/cpu.end") - $(cat "$rundir/cpu.start")))

# The console lines that report a problem (selftests/kernel_problems).
bad=$(grep -v -e '^#' -e '^$' "$repo/selftests/kernel_problems" | paste -sd '|')
bad+='|mrpin-vm: (insmod|rmmod|stage)'

# fail WHY: the console's first lines that report a problem (a guest that
# died or hung usually says why there), WHY, and the console's last lines.
fail() {
	grep -En "$bad" "$log" | head -n 5 | sed 's/^/    /' >&2 || true
	echo "vm-run: FAIL: $*" >&2
	echo "vm-run: last lines of $log:" >&2
	tail -n 40 "$log" | sed 's/^/    /' >&2
	exit 1
}

[ "$status" = 124 ] && fail "the guest did not finish within ${timeout}s (hung?)"
[ -f "$rundir/result" ] || fail "the guest died before reporting a result (qemu status $status)"
# shellcheck source=/dev/null
. "$rundir/result"

# Out-of-tree (O, bit 12) and unsigned (E, bit 13) module taints are expected.
new_taint=$(((taint_end & ~taint_boot) & ~(1 << 12 | 1 << 13)))
[ "$new_taint" = 0 ] || fail "the kernel was tainted ($taint_end, new bits $new_taint)"

grep -Eq "$bad" "$log" && fail "the guest kernel log reports a problem"
echo "vm-run: guest exited with status $rc after ${elapsed}s (${cpu} CPU-s), kernel log clean" >&2
exit "$rc"
