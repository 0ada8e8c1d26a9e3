#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVIDIA's OFED kernel stack for the test bed's OFED lane, built once per
# kernel and cached: mlnx-ofa_kernel from selftests/ofed (or $MRPIN_OFED_TARBALL)
# configured and built for a Debian kernel's headers, the way OFED's own
# DKMS package builds it on a host; Soft-RoCE (rxe) built from that
# kernel's source against OFED's headers (OFED's own rxe is an empty stub),
# with the test bed's patch scripts/ofed-rxe-SERIES.patch; and a copy of
# the kernel's module tree with both in updates/, where OFED's packages put
# their modules, so that modprobe picks them over the inbox ones, as on an
# OFED host.
#
#   ofed.sh build    build whatever is not cached (progress on stderr)
#   ofed.sh paths    print OFA_DIR= (OFED's development tree, what mrpin
#                    builds against), KERNEL_DIR= (the module tree for the
#                    VM) and OFED_VERSION=
#
# KVER: the kernel (default: the 6.1 series' newest, setup.sh kver).  The
# cache, under $MRPIN_CACHE/ofed/KEY/, is keyed by the tarball, the
# kernel's release and headers package and the configure options; the
# test bed's part of it by the rxe patch and this script too: a change of
# any builds that part anew.
#   ofa/          OFED's tree, configured and built (OFA_DIR)
#   bed-KEY2/rxe/   rdma_rxe built against it
#   bed-KEY2/root/  boot/ and lib/modules/KVER: the kernel's, plus
#                 lib/modules/KVER/updates/ofed (OFED's modules and rxe)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${MRPIN_CACHE:=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mrpin}"
tarball=${MRPIN_OFED_TARBALL:-$here/../selftests/ofed/mlnx-ofa_kernel-25.10.1.7.1.1.tar.xz}
[ -f "$tarball" ] || { echo "ofed: no OFED source at $tarball (MRPIN_OFED_TARBALL)" >&2; exit 1; }
KVER=${KVER:-$(KSERIES=6.1 KFLAVOUR='' "$here/setup.sh" kver)}
case "$KVER" in
6.1.*) series=6.1 ;;
6.12.*) series=6.12 ;;
*) echo "ofed: the OFED lane builds for Debian's 6.1 and 6.12 kernels, not $KVER" >&2; exit 1 ;;
esac
name=$(basename "$tarball" .tar.xz)
version=${name#mlnx-ofa_kernel-}
patch=$here/ofed-rxe-$series.patch
# OFED's configure, for what mrpin and the test bed use: ib_core, the user
# verbs and the connection managers (the rest is mlx5 and ULPs).
options=(--with-core-mod --with-user_access-mod --with-addr_trans-mod)
hdrver=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER" 2>/dev/null || echo none)
key=$({ sha1sum <"$tarball"; echo "$KVER $hdrver ${options[*]}"; } | sha1sum | cut -c1-12)
dir=$MRPIN_CACHE/ofed/$key
bed=$dir/bed-$(cat "$patch" "$0" | sha1sum | cut -c1-12)

paths() {
	echo "OFA_DIR=$dir/ofa"
	echo "KERNEL_DIR=$bed/root"
	echo "OFED_VERSION=$version"
}

# configure and make OFED's tree (configure patches it in place: one tree
# per kernel).
build_ofed() {
	local common jobs
	common=/usr/src/linux-headers-${KVER%-amd64}-common
	[ -d "$common" ] || common=$(readlink -f "/lib/modules/$KVER/source")
	jobs=$(nproc)
	echo "ofed: unpacking $name and configuring it for $KVER (about 15 CPU-minutes)" >&2
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir"
	mv "$dir/$name" "$dir/ofa"
	(cd "$dir/ofa" && ./configure --kernel-version="$KVER" \
		--kernel-sources="/lib/modules/$KVER/build" --with-linux="$common" \
		--with-linux-obj="/lib/modules/$KVER/build" "${options[@]}" -j"$jobs") \
		>"$dir/configure.log" 2>&1 ||
		{ tail -n 30 "$dir/configure.log" >&2; exit 1; }
	echo "ofed: building $name for $KVER" >&2
	make -C "$dir/ofa" -j"$jobs" >"$dir/make.log" 2>&1 ||
		{ tail -n 30 "$dir/make.log" >&2; exit 1; }
	[ -s "$dir/ofa/Module.symvers" ] || { echo "ofed: the build made no Module.symvers" >&2; exit 1; }
	touch "$dir/.complete"
}

# rxe from the kernel's own source, adapted to OFED's ib_core by the patch.
build_rxe() {
	local src pkg=linux-source-$series ofa=$dir/ofa
	src=$(KSERIES=$series KFLAVOUR='' KVER='' "$here/setup.sh" source)
	echo "ofed: building rdma_rxe from $pkg against OFED" >&2
	rm -rf "$bed/rxe"
	mkdir -p "$bed/rxe"
	tar -xJf "$src" -C "$bed/rxe" --strip-components=5 \
		"$pkg/drivers/infiniband/sw/rxe"
	patch -d "$bed/rxe" -p5 -s --batch <"$patch"
	make -C "/lib/modules/$KVER/build" M="$bed/rxe" \
		NOSTDINC_FLAGS="-include $ofa/include/linux/compat-2.6.h -I$ofa/include -I$ofa/include/uapi" \
		KBUILD_EXTRA_SYMBOLS="$ofa/Module.symvers" CONFIG_RDMA_RXE=m \
		-j"$(nproc)" modules >"$bed/rxe.log" 2>&1 ||
		{ tail -n 30 "$bed/rxe.log" >&2; exit 1; }
}

# The kernel's module tree with OFED's modules and rxe in updates/ofed.
build_root() {
	local kdir m
	kdir=$(KVER=$KVER KFLAVOUR='' "$here/setup.sh" paths | sed -n 's/^KERNEL_DIR=//p')
	KVER=$KVER KFLAVOUR='' "$here/setup.sh" vm
	rm -rf "$bed/root"
	mkdir -p "$bed/root/boot" "$bed/root/lib/modules"
	cp -a "$kdir/boot/." "$bed/root/boot/"
	# Linked, not copied (480 MB): depmod's indexes, which it writes
	# anew, are this tree's own.
	cp -al "$(readlink -f "$kdir/lib/modules/$KVER")" "$bed/root/lib/modules/$KVER"
	rm -f "$bed/root/lib/modules/$KVER"/modules.*
	cp "$kdir/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} \
		"$bed/root/lib/modules/$KVER/" 2>/dev/null || true
	mkdir -p "$bed/root/lib/modules/$KVER/updates/ofed"
	while read -r m; do
		cp "$dir/ofa/$m" "$bed/root/lib/modules/$KVER/updates/ofed/"
	done < <(cd "$dir/ofa" && find . -name '*.ko' -printf '%P\n')
	cp "$bed/rxe/rdma_rxe.ko" "$bed/root/lib/modules/$KVER/updates/ofed/"
	depmod -b "$bed/root" "$KVER"
}

build() {
	local start
	[ -f "$bed/.complete" ] && return
	mkdir -p "$MRPIN_CACHE/ofed"
	exec 9>"$MRPIN_CACHE/ofed/$key.lock"
	if ! flock -n 9; then
		echo "ofed: another build of $key is under way: waiting for it" >&2
		flock 9
	fi
	[ -f "$bed/.complete" ] && return
	start=$(date +%s)
	[ -f "$dir/.complete" ] || build_ofed
	# A test bed of an older patch or script is stale.
	rm -rf "$bed" "$dir"/bed-*
	build_rxe
	build_root
	echo "ofed: built OFED $version for $KVER in $(($(date +%s) - start)) s" >&2
	touch "$bed/.complete"
}

case "${1:-}" in
build) build ;;
ofa) [ -f "$dir/.complete" ] || build_ofed ;;
paths) [ -f "$bed/.complete" ] || build; paths ;;
*) echo "usage: ofed.sh build|ofa|paths" >&2; exit 2 ;;
esac
