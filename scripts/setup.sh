#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Idempotent setup for building and testing mrpin, from Debian packages only.
#
#   setup.sh kver    print the test kernel release (e.g. 6.1.0-57-amd64)
#   setup.sh build   install what `make` needs (kernel headers, or for 7.x a
#                    Debian 13 root holding them; libibverbs-dev; the
#                    kselftest headers from the test kernel's source package)
#   setup.sh vm      install what the VM test bed needs and unpack the test
#                    kernel's image packages into the cache (never installed)
#   setup.sh paths   print the cache paths the Makefile and VM runner use
#   setup.sh source  print the test kernel's source tarball (linux-source-X)
#   setup.sh pkg     what the packaging and its host-side tests need
#   setup.sh promtool  print the path of promtool (mrpinctl's host tests and
#                    the packaging's check the export and the alert rules
#                    with it), unpacked from Debian's prometheus package
#                    into the cache, never installed
#   setup.sh prometheus  print the path of the Prometheus server, from the
#                    same package (mrpinctl_prometheus.sh runs it in the VM)
#   setup.sh node-exporter  print the path of node_exporter, unpacked the
#                    same way from Debian's prometheus-node-exporter
#   setup.sh slurm   install Slurm's daemons and munge from Debian's packages
#                    (mrpin_slurm.sh runs them in the VM), never started
#                    nor enabled on this machine
#   setup.sh plugin  print the directory of QEMU's qemu-plugin.h, taken from
#                    the installed QEMU's source package (make bench)
#
# Environment:
#   KSERIES   the kernel series: 6.1 (default: Debian 12's own), 6.12 (Debian
#             12's security suite carries it, as Debian 13 and RHEL 10 ship
#             it) or 7 (the newest 7.x, from Debian 13's backports)
#   KVER      a full release instead (e.g. 6.12.117+deb12-amd64); its series
#             follows from it
#   KFLAVOUR  empty for the generic kernel, "rt" for PREEMPT_RT, "debug" for
#             the debug kernel scripts/debug-kernel.sh builds and caches,
#             "ofed" for the generic 6.1 kernel with NVIDIA OFED's RDMA
#             stack in place of the inbox one (scripts/ofed.sh builds and
#             caches it; `paths` then also prints OFA_DIR)
#   MRPIN_CACHE  default ${XDG_CACHE_HOME:-~/.cache}/mrpin
#
# 6.1 and 6.12 come from the suites this machine's apt already has.  7.x
# comes from Debian 13 (trixie) and its backports, read through an apt
# configuration of mrpin's own under $MRPIN_CACHE/apt-trixie (the mirror is
# the one this machine's apt uses), and its headers need Debian 13's
# compiler and C library: they live in a Debian 13 root made with
# mmdebstrap, $MRPIN_CACHE/root-KVER, where the module is built
# (scripts/in-root.sh).  Nothing of it is installed on this machine.
set -euo pipefail

die() { echo "setup: $*" >&2; exit 1; }

: "${MRPIN_CACHE:=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mrpin}"

# One setup at a time: the VMs of one `make check` start together, and two
# apt-gets (or two unpackings of one kernel) must not meet.  A setup.sh run
# from inside one (debug-kernel.sh asks for its source) holds the lock already.
if [ -z "${MRPIN_SETUP_LOCKED:-}" ]; then
	mkdir -p "$MRPIN_CACHE"
	exec 8>"$MRPIN_CACHE/setup.lock"
	flock 8
	export MRPIN_SETUP_LOCKED=1
fi
KFLAVOUR=${KFLAVOUR:-}
case "$KFLAVOUR" in
"" | generic) flavour=amd64 ;;
rt) flavour=rt-amd64 ;;
debug) flavour= ;;
ofed) flavour=amd64 ;;
*) die "KFLAVOUR must be empty (generic), 'rt', 'debug' or 'ofed', not '$KFLAVOUR'" ;;
esac
if [ -n "${KVER:-}" ]; then
	case "$KVER" in
	6.1.*) KSERIES=6.1 ;;
	6.12.*) KSERIES=6.12 ;;
	7.*) KSERIES=7 ;;
	*) KSERIES=${KSERIES:-6.1} ;;
	esac
fi
KSERIES=${KSERIES:-6.1}
# The debug kernel is built from the 6.12 source (scripts/debug-kernel.sh).
[ "$KFLAVOUR" != debug ] || KSERIES=6.12
# The OFED lane runs on Debian 12's own kernel.
[ "$KFLAVOUR" != ofed ] || KSERIES=6.1
case "$KSERIES" in
6.1 | 6.12 | 7) ;;
*) die "KSERIES must be 6.1, 6.12 or 7, not '$KSERIES'" ;;
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

# --- Debian 13, through an apt configuration of mrpin's own ---

trixie_dir=$MRPIN_CACHE/apt-trixie

# The Debian mirror this machine's apt uses for its own release.
debian_mirror() {
	local mirror try
	for try in 1 2; do
		mirror=$(apt-get indextargets --format '$(SITE) $(CODENAME) $(COMPONENT)' \
			'Identifier: Packages' 2>/dev/null |
			awk '$3 == "main" && $2 !~ /-/ { print $1; exit }')
		[ -n "$mirror" ] && break
		[ "$try" = 1 ] && apt_update
	done
	[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources"
	echo "$mirror"
}

# own_apt DIR apt-get|apt-cache ARGS...: through the apt configuration of
# mrpin's own in DIR (its sources.list, lists and cache), apart from this
# machine's apt and its installed packages.
own_apt() {
	local dir=$1 tool=$2
	shift 2
	"$tool" -o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" \
		-o Dir::Cache="$dir/cache" \
		-o Dir::State::status=/dev/null \
		-o APT::Architecture=amd64 -o APT::Sandbox::User=root "$@"
}

# trixie_apt apt-get|apt-cache ARGS...: against trixie and trixie-backports.
trixie_apt() {
	own_apt "$trixie_dir" "$@"
}

trixie_updated=
trixie_update() {
	local mirror
	[ -n "$trixie_updated" ] && return
	mirror=$(debian_mirror)
	mkdir -p "$trixie_dir/lists/partial" "$trixie_dir/cache/archives/partial"
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
		"$mirror" trixie "$mirror" trixie-backports >"$trixie_dir/sources.list"
	echo "setup: apt-get update (Debian 13 and its backports, for 7.x)" >&2
	trixie_apt apt-get update -q >/dev/null
	trixie_updated=1
}

# The newest package named by the extended regex $1, from Debian 13.
trixie_newest() {
	local found
	[ -d "$trixie_dir/lists" ] || trixie_update
	found=$(trixie_apt apt-cache search --names-only "$1" 2>/dev/null |
		awk '{ print $1 }' | sort -V | tail -n1)
	if [ -z "$found" ]; then
		trixie_update
		found=$(trixie_apt apt-cache search --names-only "$1" |
			awk '{ print $1 }' | sort -V | tail -n1)
	fi
	echo "$found"
}

# download DIR PACKAGE...: the .debs, from the apt that has the series.
download() {
	local dir=$1
	shift
	if [ "$KSERIES" = 7 ]; then
		(cd "$dir" && trixie_apt apt-get download -q "$@" >/dev/null 2>&1) ||
			{ trixie_update; (cd "$dir" && trixie_apt apt-get download -q "$@" >/dev/null); }
	else
		(cd "$dir" && apt-get download -q "$@" >/dev/null 2>&1) ||
			{ apt_update; (cd "$dir" && apt-get download -q "$@" >/dev/null); }
	fi
}

# --- Prometheus: promtool, the server and node_exporter ---

# unpacked PACKAGE FILE: the path of FILE (e.g. usr/bin/promtool) in
# Debian's PACKAGE, unpacked into the cache at its candidate version:
# installing prometheus or prometheus-node-exporter would start a server
# on a host that runs systemd, and the tests only want their programs.
unpacked() {
	local pkg=$1 file=$2 ver dir tmp
	ver=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		apt_update
		ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
	fi
	[ -n "$ver" ] && [ "$ver" != "(none)" ] ||
		die "no $pkg package in this machine's apt sources"
	dir=$MRPIN_CACHE/$pkg-${ver//:/_}
	if [ ! -x "$dir/$file" ]; then
		echo "setup: unpacking $pkg $ver into $dir" >&2
		tmp=$(mktemp -d "$MRPIN_CACHE/$pkg.XXXXXX")
		(cd "$tmp" && apt-get download -q "$pkg=$ver" >/dev/null) ||
			{ rm -rf "$tmp"; die "could not download $pkg $ver"; }
		rm -rf "$dir"
		dpkg-deb -x "$tmp/${pkg}_"*.deb "$tmp/root" &&
			mv "$tmp/root" "$dir" ||
			{ rm -rf "$tmp"; die "could not unpack $pkg $ver"; }
		rm -rf "$tmp"
		[ -x "$dir/$file" ] || die "$pkg $ver has no $file"
	fi
	echo "$dir/$file"
}

# --- Slurm: the daemons of mrpin_slurm.sh ---

# Installed, not unpacked as Prometheus is: Slurm's programs load its
# plugins and its libraries from where the packages put them, and munge's
# maintainer scripts make its user and key.  Installed only, never run
# here: during the install a policy-rc.d of this script's own (unless the
# host has one) tells invoke-rc.d and deb-systemd-invoke not to start the
# daemons, and the units the install enabled are disabled again, so that
# they do not start at this host's next boot either.
install_slurm() {
	local pkgs=(slurmctld slurmd slurm-client munge) missing=() p own_policy=

	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\n# setup.sh slurm: install, do not start\nexit 101\n' \
			>/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		own_policy=1
	fi
	need_pkgs "${pkgs[@]}" || {
		[ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
		die "could not install ${missing[*]}"
	}
	[ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
	# The daemons of the packages this run installed (munge's, say, stays
	# as it was where the host had it): disabled as their own maintainer
	# scripts would, so that a later upgrade keeps them disabled.
	for p in "${missing[@]}"; do
		[ -f "/lib/systemd/system/$p.service" ] || continue
		DPKG_MAINTSCRIPT_PACKAGE=$p deb-systemd-helper disable "$p.service" ||
			die "could not disable $p.service"
	done
}

# --- the test kernel ---

# ofed build|paths: NVIDIA OFED's stack for the test kernel (cached), the
# packages its build needs first.
ofed() {
	need_pkgs make gcc bc patch xz-utils kmod "linux-headers-$(resolve_kver)" \
		linux-source-6.1
	KVER=$(resolve_kver) "$here/ofed.sh" "$1"
}

# KFLAVOUR=debug: the debug kernel built from the 6.12 source (cached).
debug_kernel() {
	need_pkgs make gcc bc bison flex libelf-dev libssl-dev openssl cpio kmod \
		linux-source-6.12
	"$here/debug-kernel.sh" paths
}

# Resolve the test kernel: the newest of its series.
resolve_kver() {
	local meta dep
	if [ -n "${KVER:-}" ]; then
		echo "$KVER"
		return
	fi
	if [ "$KFLAVOUR" = debug ]; then
		debug_kernel | sed -n 's/^KVER=//p'
		return
	fi
	if [ "$KSERIES" = 7 ]; then
		dep=$(trixie_newest "^linux-image-7\.[0-9.]+\+deb13-$flavour\$")
		[ -n "$dep" ] || die "Debian 13 has no 7.x kernel ($flavour)"
		echo "${dep#linux-image-}"
		return
	fi
	case "$KSERIES" in
	6.1) meta=linux-image-$flavour ;;
	6.12) meta=linux-image-6.12-$flavour ;;
	esac
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

kernel_dir() { echo "$MRPIN_CACHE/kernel/$1"; }

# The test kernel's image packages, unpacked (vmlinuz, config, modules) and
# laid out as boot/vmlinuz-KVER, boot/config-KVER, lib/modules/KVER.  From
# 7.x linux-image-KVER is empty: the files are in linux-binary-KVER
# (vmlinuz), linux-modules-KVER and linux-base-KVER (config, System.map),
# all under usr/lib/modules/KVER.
unpack_kernel() {
	local kver=$1 dir tmp deb
	dir=$(kernel_dir "$kver")
	[ -f "$dir/.complete" ] && return
	need_pkgs kmod xz-utils
	rm -rf "$dir"
	mkdir -p "$dir"
	tmp=$(mktemp -d)
	echo "setup: downloading linux-image-$kver into $dir" >&2
	download "$tmp" "linux-image-$kver" || die "cannot download linux-image-$kver"
	# (grep reads it all: -q would end dpkg's output early, a failure
	# under pipefail.)
	if ! dpkg -c "$tmp"/linux-image-*.deb | grep '/vmlinuz' >/dev/null; then
		download "$tmp" "linux-binary-$kver" "linux-modules-$kver" \
			"linux-base-$kver" ||
			die "cannot download linux-binary, -modules, -base-$kver"
	fi
	for deb in "$tmp"/*.deb; do
		dpkg -x "$deb" "$dir"
	done
	rm -rf "$tmp"
	if [ ! -d "$dir/lib/modules/$kver" ]; then
		mkdir -p "$dir/lib/modules" "$dir/boot"
		ln -s "../../usr/lib/modules/$kver" "$dir/lib/modules/$kver"
		ln -s "../usr/lib/modules/$kver/vmlinuz" "$dir/boot/vmlinuz-$kver"
		ln -s "../usr/lib/modules/$kver/config" "$dir/boot/config-$kver"
	fi
	[ -f "$dir/boot/vmlinuz-$kver" ] || die "linux-image-$kver has no vmlinuz"
	depmod -b "$dir" "$kver"
	touch "$dir/.complete"
}

# The Debian 13 root that builds mrpin.ko for a 7.x kernel.
build_root() { echo "$MRPIN_CACHE/root-$1"; }

# Its inputs, the packages it holds, are kept in its .complete: a root made
# with other packages is made again.
make_build_root() {
	local kver=$1 root mirror include
	root=$(build_root "$kver")
	include="make,gcc-14,libc6-dev,linux-headers-$kver"
	[ "$(cat "$root/.complete" 2>/dev/null)" = "$include" ] && return
	need_pkgs mmdebstrap
	mirror=$(debian_mirror)
	rm -rf "$root" "$root.tmp"
	echo "setup: making a Debian 13 root with linux-headers-$kver in $root" >&2
	mmdebstrap --quiet --variant=apt --mode=root \
		--include="$include" \
		trixie "$root.tmp" "deb $mirror trixie main" \
		"deb $mirror trixie-backports main" >/dev/null ||
		die "mmdebstrap of the Debian 13 root failed"
	rm -rf "$root.tmp/var/cache/apt/archives"/*.deb
	mv "$root.tmp" "$root"
	echo "$include" >"$root/.complete"
}

# --- the test kernel's source: kselftest headers, checkpatch, debug kernel ---

# linux-source-X.Y of the series: its package name.
source_pkg() {
	case "$KSERIES" in
	6.1 | 6.12) echo "linux-source-$KSERIES" ;;
	7) trixie_newest '^linux-source-7\.[0-9]+$' ;;
	esac
}

# The source tarball, installed (6.x) or unpacked into the cache (7.x).
source_tarball() {
	local pkg dir ver tmp
	pkg=$(source_pkg)
	[ -n "$pkg" ] || die "no linux-source package for $KSERIES"
	if [ "$KSERIES" != 7 ]; then
		need_pkgs "$pkg"
		echo "/usr/src/$pkg.tar.xz"
		return
	fi
	ver=$(trixie_apt apt-cache show "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -n1)
	dir=$MRPIN_CACHE/src/$pkg-$ver
	if [ ! -f "$dir/.complete" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		tmp=$(mktemp -d)
		echo "setup: downloading $pkg $ver" >&2
		download "$tmp" "$pkg=$ver" || die "cannot download $pkg"
		dpkg -x "$tmp"/*.deb "$dir"
		rm -rf "$tmp"
		touch "$dir/.complete"
	fi
	echo "$dir/usr/src/$pkg.tar.xz"
}

# kselftest.h, kselftest_harness.h, lib.mk and checkpatch, from the source.
ksft_dir() {
	local pkg ver
	pkg=$(source_pkg)
	if [ "$KSERIES" = 7 ]; then
		ver=$(trixie_apt apt-cache show "$pkg" 2>/dev/null | sed -n 's/^Version: //p' |
			sort -V | tail -n1)
	else
		ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || ver=none
	fi
	echo "$MRPIN_CACHE/kselftest-${pkg#linux-source-}-${ver:-none}/tools/testing/selftests"
}

unpack_kselftest() {
	local dir top tarball pkg
	tarball=$(source_tarball)
	pkg=$(source_pkg)
	dir=$(ksft_dir)
	[ -f "$dir/.complete" ] && return
	top=${dir%/tools/testing/selftests}
	rm -rf "$top"
	mkdir -p "$top"
	echo "setup: unpacking kselftest headers and checkpatch from $pkg" >&2
	tar -xJf "$tarball" -C "$top" --strip-components=1 \
		--wildcards "$pkg/tools/testing/selftests/kselftest*" \
		"$pkg/tools/testing/selftests/lib.mk" \
		"$pkg/scripts/checkpatch.pl" \
		"$pkg/scripts/spelling.txt" \
		"$pkg/scripts/const_structs.checkpatch"
	touch "$dir/.complete"
}

# --- QEMU's plugin header, for make bench's instruction counts ---

# Debian's QEMU runs TCG plugins (-plugin) but ships no header to build
# one: it comes from the source package of the installed QEMU (its plugin
# API version must match), fetched through an apt configuration of mrpin's
# own whose deb-src lines mirror this machine's deb lines.
src_dir=$MRPIN_CACHE/apt-bookworm-src

# qemu_plugin_header: the directory holding qemu-plugin.h (cached).
qemu_plugin_header() {
	local ver dir tmp orig

	need_pkgs qemu-system-x86 xz-utils patch
	ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86)
	dir=$MRPIN_CACHE/qemu-plugin-${ver#*:}
	if [ ! -f "$dir/.complete" ]; then
		mkdir -p "$src_dir/lists/partial" "$src_dir/cache/archives/partial"
		apt-get indextargets --format '$(SITE) $(CODENAME) $(COMPONENT)' \
			'Identifier: Packages' | awk '$3 == "main" && !seen[$1 " " $2]++ {
				printf "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", $1, $2 }' \
			>"$src_dir/sources.list"
		[ -s "$src_dir/sources.list" ] || die "no Debian mirror in this machine's apt sources"
		echo "setup: apt-get source qemu=$ver (for qemu-plugin.h)" >&2
		own_apt "$src_dir" apt-get update -q >/dev/null
		tmp=$(mktemp -d)
		(cd "$tmp" && own_apt "$src_dir" apt-get source -q --download-only "qemu=$ver" >/dev/null) ||
			{ rm -rf "$tmp"; die "cannot download QEMU's source package $ver"; }
		orig=$(ls "$tmp"/qemu_*.orig.tar.*)
		mkdir -p "$tmp/src"
		tar -C "$tmp/src" --strip-components=1 --wildcards -xf "$orig" \
			'*/include/qemu/qemu-plugin.h' ||
			{ rm -rf "$tmp"; die "no qemu-plugin.h in $orig"; }
		# Debian's patches to it, in their order.
		tar -C "$tmp/src" -xf "$tmp"/qemu_*.debian.tar.*
		while read -r patch; do
			grep -q '^+++ [^ ]*/include/qemu/qemu-plugin.h' \
				"$tmp/src/debian/patches/$patch" || continue
			patch -d "$tmp/src" -p1 -s <"$tmp/src/debian/patches/$patch"
		done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$tmp/src/debian/patches/series")
		mkdir -p "$dir"
		cp "$tmp/src/include/qemu/qemu-plugin.h" "$dir/"
		rm -rf "$tmp"
		touch "$dir/.complete"
	fi
	echo "$dir"
}

cmd=${1:-}
case "$cmd" in
kver)
	resolve_kver
	;;
build)
	kver=$(resolve_kver)
	pkgs=(make gcc libibverbs-dev libncurses-dev libdw-dev pkg-config python3)
	if [ "$KSERIES" = 7 ] && [ "$KFLAVOUR" != debug ]; then
		need_pkgs "${pkgs[@]}"
		make_build_root "$kver"
	else
		# The test kernel's headers, unless the build uses another tree
		# (the running kernel's, or a KDIR of the caller's choosing).
		kdir=${KDIR:-/lib/modules/$kver/build}
		if [ "$kdir" = "/lib/modules/$kver/build" ] && [ ! -d "$kdir" ] &&
			[ "$KFLAVOUR" != debug ]; then
			pkgs+=("linux-headers-$kver")
		fi
		need_pkgs "${pkgs[@]}"
	fi
	[ "$KFLAVOUR" != ofed ] || ofed build
	unpack_kselftest
	;;
vm)
	kver=$(resolve_kver)
	need_pkgs qemu-system-x86 busybox-static kmod rdma-core ibverbs-providers \
		ibverbs-utils libibverbs-dev iproute2 perftest curl uidmap
	if [ "$KFLAVOUR" = debug ]; then
		debug_kernel >/dev/null
	else
		unpack_kernel "$kver"
	fi
	if [ "$KFLAVOUR" = ofed ]; then
		# What OFED's openibd calls, which its utilities' package
		# (mlnx-ofed-kernel-utils) depends on: mrpin_openibd.sh runs it.
		need_pkgs lsof pciutils
		ofed build
	fi
	;;
paths)
	if [ "$KFLAVOUR" = debug ]; then
		debug_kernel
	else
		kver=$(resolve_kver)
		echo "KVER=$kver"
		if [ "$KFLAVOUR" = ofed ]; then
			ofed paths | grep -E '^(KERNEL_DIR|OFA_DIR)='
		else
			echo "KERNEL_DIR=$(kernel_dir "$kver")"
		fi
		echo "KDIR=/lib/modules/$kver/build"
		if [ "$KSERIES" = 7 ]; then
			echo "KBUILD_ROOT=$(build_root "$kver")"
		else
			echo "KBUILD_ROOT="
		fi
	fi
	echo "KSFT_DIR=$(ksft_dir)"
	;;
source)
	source_tarball
	;;
pkg)
	# What the packaging and its host-side tests need (make deb, make
	# dkms-install, scripts/install-test.sh): dkms and the test kernel's
	# headers to build against, debhelper + dh-dkms + dpkg-dev to build the
	# .debs, lintian to check them, systemd for systemd-analyze.
	# The 6.12 series' headers too: dkms builds for every kernel it has.
	kver=$(resolve_kver)
	kver612=$(KSERIES=6.12 KVER= KFLAVOUR= "$here/setup.sh" kver)
	need_pkgs make gcc kmod dkms debhelper dh-dkms dpkg-dev fakeroot lintian \
		libncurses-dev libdw-dev pkg-config \
		systemd "linux-headers-$kver" "linux-headers-$kver612"
	;;
promtool)
	unpacked prometheus usr/bin/promtool
	;;
prometheus)
	unpacked prometheus usr/bin/prometheus
	;;
node-exporter)
	unpacked prometheus-node-exporter usr/bin/prometheus-node-exporter
	;;
slurm)
	install_slurm
	;;
plugin)
	qemu_plugin_header
	;;
*)
	die "usage: setup.sh kver|build|vm|paths|source|pkg|promtool|prometheus|node-exporter|slurm|plugin"
	;;
esac
