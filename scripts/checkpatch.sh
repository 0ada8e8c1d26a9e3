#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make checkpatch`: the kernel's checkpatch.pl (from linux-source-6.1, as
# unpacked by setup.sh) on every kernel source file, strict.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
ksft=$("$here/setup.sh" paths | sed -n 's/^KSFT_DIR=//p')
cp=${ksft%/tools/testing/selftests}/scripts/checkpatch.pl
exec perl "$cp" --no-tree --strict --quiet --show-types \
	--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f $(ls kmod/*.c kmod/*.h | grep -v "\.mod\.c$")
