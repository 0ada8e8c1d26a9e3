#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once, cached) the debug kernel mrpin's suite also runs on: Debian's
# linux-source-6.12 (the series of Debian 13 and RHEL 10), x86_64_defconfig
# + kvm_guest.config + scripts/debug.config (KASAN, lockdep, PROVE_RCU,
# kmemleak, debug objects, failslab; everything the test bed needs built
# in).  The cache key is the source package's version and the fragment's
# contents; the cache lives outside the repository, under
# $MRPIN_CACHE/debug-kernel/KEY/:
#   src/     the kernel source, build/ the build tree (KDIR for mrpin.ko)
#   root/    boot/vmlinuz-KVER and lib/modules/KVER (modules.builtin etc.)
#
#   debug-kernel.sh build     build if not cached (prints progress on stderr)
#   debug-kernel.sh paths     print KVER=, KERNEL_DIR=, KDIR= of the cached build
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${MRPIN_CACHE:=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mrpin}"
fragment=$here/debug.config
series=6.12
pkg=linux-source-$series
tarball=$(KSERIES=$series KFLAVOUR= KVER= "$here/setup.sh" source)
srcver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo none)
key=$(cat "$fragment" <(echo "$srcver") | sha1sum | cut -c1-12)
dir=$MRPIN_CACHE/debug-kernel/$key

paths() {
	local kver
	kver=$(cat "$dir/kernelrelease")
	echo "KVER=$kver"
	echo "KERNEL_DIR=$dir/root"
	echo "KDIR=$dir/build"
}

build() {
	local start jobs missing
	[ -f "$dir/.complete" ] && return
	# One build at a time: another caller (`paths` from a second tree, a
	# Makefile's $(shell)) waits for the one under way instead of wiping it.
	mkdir -p "$MRPIN_CACHE/debug-kernel"
	exec 9>"$MRPIN_CACHE/debug-kernel/$key.lock"
	if ! flock -n 9; then
		echo "debug-kernel: another build of $key is under way: waiting for it" >&2
		flock 9
	fi
	[ -f "$dir/.complete" ] && return
	start=$(date +%s)
	jobs=$(nproc)
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "debug-kernel: unpacking $pkg ($srcver) into $dir" >&2
	tar -xJf "$tarball" -C "$dir"
	mv "$dir/$pkg" "$dir/src"
	mkdir -p "$dir/build"
	make -s -C "$dir/src" O="$dir/build" x86_64_defconfig >/dev/null
	make -s -C "$dir/src" O="$dir/build" kvm_guest.config >/dev/null
	"$dir/src/scripts/kconfig/merge_config.sh" -m -O "$dir/build" \
		"$dir/build/.config" "$fragment" >/dev/null
	make -s -C "$dir/src" O="$dir/build" LOCALVERSION=-mrpin-debug \
		olddefconfig >/dev/null
	# Every option the fragment sets must have stuck (a dependency missing
	# would drop it silently); one it turns off must be off, or gone with
	# what it depends on.  One that did not stick fails the build: a
	# kernel without KASAN or FAILSLAB would pass the tests that need them
	# by skipping.
	missing=$(grep -E '^CONFIG_[A-Z0-9_]+=y' "$fragment" | while read -r line; do
		grep -qxF "$line" "$dir/build/.config" || echo "'$line'"
	done
	sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$fragment" |
	while read -r opt; do
		! grep -qE "^$opt=[ym]" "$dir/build/.config" ||
			echo "'# $opt is not set'"
	done)
	if [ -n "$missing" ]; then
		echo "debug-kernel: these options of $fragment did not stick (a dependency is missing):" $missing >&2
		exit 1
	fi
	echo "debug-kernel: building with $jobs jobs (takes a while)" >&2
	make -s -C "$dir/src" O="$dir/build" LOCALVERSION=-mrpin-debug \
		-j"$jobs" bzImage modules >"$dir/build.log" 2>&1 ||
		{ tail -n 40 "$dir/build.log" >&2; exit 1; }
	make -s -C "$dir/src" O="$dir/build" LOCALVERSION=-mrpin-debug \
		kernelrelease >"$dir/kernelrelease"
	kver=$(cat "$dir/kernelrelease")
	make -s -C "$dir/src" O="$dir/build" LOCALVERSION=-mrpin-debug \
		INSTALL_MOD_PATH="$dir/root" modules_install >/dev/null
	mkdir -p "$dir/root/boot"
	cp "$dir/build/arch/x86/boot/bzImage" "$dir/root/boot/vmlinuz-$kver"
	cp "$dir/build/.config" "$dir/root/boot/config-$kver"
	echo "debug-kernel: built $kver in $(($(date +%s) - start)) s" >&2
	echo "$(($(date +%s) - start))" >"$dir/build-seconds"
	touch "$dir/.complete"
}

case "${1:-}" in
build) build ;;
paths) [ -f "$dir/.complete" ] || build; paths ;;
*) echo "usage: debug-kernel.sh build|paths" >&2; exit 2 ;;
esac
