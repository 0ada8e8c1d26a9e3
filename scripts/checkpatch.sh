#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make checkpatch`: the newest kernel's checkpatch.pl (from the newest
# linux-source-7.x, as unpacked by setup.sh) on every kernel source file,
# strict (and the selftests' module).  trace.h is laid out as every TRACE_EVENT() in the kernel is,
# which --strict flags; MACRO_ARG_REUSE flags names pasted into identifiers
# (module parameters); compat.h is where version tests belong, the one
# file allowed LINUX_VERSION_CODE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
KSERIES=7 KFLAVOUR= KVER= "$here/setup.sh" build >/dev/null
ksft=$(KSERIES=7 KFLAVOUR= KVER= "$here/setup.sh" paths | sed -n 's/^KSFT_DIR=//p')
cp=${ksft%/tools/testing/selftests}/scripts/checkpatch.pl
opts=(--no-tree --strict --quiet --show-types --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,MACRO_ARG_REUSE)
files=$(ls kmod/*.c kmod/*.h selftests/kmod/*.c | grep -v -e '\.mod\.c$' -e '/trace\.h$' -e '/compat\.h$')
rc=0
perl "$cp" "${opts[@]}" -f $files || rc=1
perl "$cp" "${opts[@]}" --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
	-f kmod/compat.h || rc=1
perl "$cp" "${opts[@]}" --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT \
	-f kmod/trace.h || rc=1
exit $rc
