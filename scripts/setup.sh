#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Idempotent setup for building and testing mrpin, from Debian packages only.
#
#   setup.sh kver    print the test kernel release (e.g. 6.1.0-57-amd64)
#   setup.sh build   install what `make` needs (kernel headers, libibverbs-dev,
#                    the kselftest headers from linux-source-6.1)
#   setup.sh vm      install what the VM test bed needs and unpack the test
#                    kernel's image package into the cache (never installed)
#   setup.sh paths   print the cache paths the Makefile and VM runner use
#
# Environment: KVER (full release, default: what linux-image-amd64 depends
# on), KFLAVOUR (empty for the generic kernel, "rt" for PREEMPT_RT, "debug"
# for the debug kernel scripts/debug-kernel.sh builds and caches),
# MRPIN_CACHE (default: ${XDG_CACHE_HOME:-~/.cache}/mrpin).
set -euo pipefail

die() { echo "setup: $*" >&2; exit 1; }

: "${MRPIN_CACHE:=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mrpin}"
KFLAVOUR=${KFLAVOUR:-}
case "$KFLAVOUR" in
"" | generic) meta=linux-image-amd64 ;;
rt) meta=linux-image-rt-amd64 ;;
debug) meta= ;;
*) die "KFLAVOUR must be empty (generic), 'rt' or 'debug', not '$KFLAVOUR'" ;;
esac
here=$(cd "$(dirname "$0")" && pwd)

apt_updated=
apt_update() {
	[ -n "$apt_updated" ] && return
	command -v apt-get >/dev/null ||
		die "apt-get not found: install the packages listed in README.md by hand"
	[ "$(id -u)" = 0 ] || die "installing packages needs root (run as root or with sudo)"
	echo "setup: apt-get update" >&2
	apt-get update -q >/dev/null
	apt_updated=1
}

# KFLAVOUR=debug: the debug kernel built from linux-source-6.1 (cached).
debug_kernel() {
	need_pkgs make gcc bc bison flex libelf-dev libssl-dev cpio kmod \
		linux-source-6.1
	"$here/debug-kernel.sh" paths
}

# Resolve the test kernel: the one Debian's meta package currently depends on.
resolve_kver() {
	local dep
	if [ -n "${KVER:-}" ]; then
		echo "$KVER"
		return
	fi
	if [ "$KFLAVOUR" = debug ]; then
		debug_kernel | sed -n 's/^KVER=//p'
		return
	fi
	dep=$(apt-cache depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1) || true
	if [ -z "$dep" ]; then
		apt_update
		dep=$(apt-cache depends "$meta" |
			sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
	fi
	[ -n "$dep" ] || die "cannot resolve the kernel $meta depends on"
	echo "$dep"
}

# Install the packages that are not installed yet (one apt-get call).
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	apt_update
	echo "setup: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# kselftest.h, kselftest_harness.h, lib.mk and the runner, from linux-source.
ksft_dir() {
	local ver
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) || ver=none
	echo "$MRPIN_CACHE/kselftest-$ver/tools/testing/selftests"
}

unpack_kselftest() {
	local dir top
	need_pkgs linux-source-6.1
	dir=$(ksft_dir)
	[ -f "$dir/.complete" ] && return
	top=${dir%/tools/testing/selftests}
	rm -rf "$top"
	mkdir -p "$top"
	echo "setup: unpacking kselftest headers from linux-source-6.1" >&2
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$top" --strip-components=1 \
		--wildcards 'linux-source-6.1/tools/testing/selftests/kselftest*' \
		linux-source-6.1/tools/testing/selftests/lib.mk \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	touch "$dir/.complete"
}

kernel_dir() { echo "$MRPIN_CACHE/kernel/$1"; }

# The test kernel's image package, unpacked (vmlinuz, config, modules).
unpack_kernel() {
	local kver=$1 dir tmp
	dir=$(kernel_dir "$kver")
	[ -f "$dir/.complete" ] && return
	need_pkgs kmod
	apt_update
	rm -rf "$dir"
	mkdir -p "$dir"
	tmp=$(mktemp -d)
	echo "setup: downloading linux-image-$kver into $dir" >&2
	(cd "$tmp" && apt-get download -q "linux-image-$kver" >/dev/null 2>&1) ||
		die "apt-get download linux-image-$kver failed"
	dpkg -x "$tmp"/linux-image-*.deb "$dir"
	rm -rf "$tmp"
	depmod -b "$dir" "$kver"
	touch "$dir/.complete"
}

cmd=${1:-}
case "$cmd" in
kver)
	resolve_kver
	;;
build)
	kver=$(resolve_kver)
	pkgs=(make gcc libibverbs-dev libncurses-dev libdw-dev pkg-config python3)
	# The test kernel's headers, unless the build uses another tree (the
	# running kernel's, or a KDIR of the caller's choosing).
	kdir=${KDIR:-/lib/modules/$(uname -r)/build}
	[ -d "$kdir" ] || kdir=/lib/modules/$kver/build
	if [ "$kdir" = "/lib/modules/$kver/build" ] && [ ! -d "$kdir" ]; then
		pkgs+=("linux-headers-$kver")
	fi
	need_pkgs "${pkgs[@]}"
	unpack_kselftest
	;;
vm)
	kver=$(resolve_kver)
	pkgs=(qemu-system-x86 busybox-static kmod rdma-core ibverbs-providers
		ibverbs-utils libibverbs-dev iproute2 perftest linux-source-6.1)
	if [ "$KFLAVOUR" = debug ]; then
		need_pkgs "${pkgs[@]}"
		debug_kernel >/dev/null
	else
		need_pkgs "${pkgs[@]}" "linux-headers-$kver"
		unpack_kernel "$kver"
	fi
	unpack_kselftest
	;;
paths)
	if [ "$KFLAVOUR" = debug ]; then
		debug_kernel
	else
		kver=$(resolve_kver)
		echo "KVER=$kver"
		echo "KERNEL_DIR=$(kernel_dir "$kver")"
		echo "KDIR=/lib/modules/$kver/build"
	fi
	echo "KSFT_DIR=$(ksft_dir)"
	;;
pkg)
	# What the packaging and its host-side tests need (make deb, make
	# dkms-install, scripts/install-test.sh): dkms and the test kernel's
	# headers to build against, debhelper + dh-dkms + dpkg-dev to build the
	# .debs, lintian to check them, systemd for systemd-analyze.
	kver=$(resolve_kver)
	need_pkgs make gcc kmod dkms debhelper dh-dkms dpkg-dev fakeroot lintian \
		libncurses-dev libdw-dev pkg-config \
		systemd "linux-headers-$kver"
	;;
*)
	die "usage: setup.sh kver|build|vm|paths"
	;;
esac
