#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run a command inside a build root (the Debian 13 root that holds a 7.x
# kernel's headers, made by setup.sh): in a mount namespace of its own,
# with the repository bound at the same path inside, so that every path
# means the same thing in and out, and nothing stays mounted afterwards.
#
#   in-root.sh ROOT COMMAND...
set -euo pipefail
root=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$root/.complete" ] || { echo "in-root: $root is not a finished build root" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "in-root: building in $root needs root" >&2; exit 1; }
exec unshare --mount --propagation private /bin/sh -c '
	set -e
	root=$1 repo=$2
	shift 2
	mkdir -p "$root$repo"
	mount --bind "$repo" "$root$repo"
	mount -t proc proc "$root/proc"
	cd "$repo"
	exec chroot "$root" /usr/bin/env -C "$PWD" PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
' in-root "$root" "$repo" "$@"
