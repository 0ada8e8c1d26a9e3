#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mrpin on a kernel booted the way Secure Boot leaves it: locked down
# (lockdown=integrity) and enforcing module signatures
# (module.sig_enforce=1); check.sh boots a VM of its own for this test,
# without mrpin loaded.  An unsigned mrpin.ko is refused with the error the
# README quotes ("Key was rejected by service", and "Loading of unsigned
# module is rejected" in the kernel log).  Where the test bed holds the
# kernel's signing key (the debug kernel, built with a key of its own; a
# distribution keeps its key to itself), the same module signed with
# scripts/sign-file and that key loads untainted by it, and takes a policy
# through securityfs that it enforces.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
CTL=$MRPIN_CTL
PINNER=$MRPIN_PINNER
build=/lib/modules/$(uname -r)/build
require_built "$MRPIN_KO" "$CTL" "$PINNER"
if ! grep -q '\[integrity\]' "$MRPIN_LOCKDOWN" 2>/dev/null ||
	[ "$(cat /sys/module/module/parameters/sig_enforce 2>/dev/null)" != Y ]; then
	ktap_skip_all "boot with lockdown=integrity module.sig_enforce=1 (check.sh does)"
fi
mrpin_loaded && ktap_skip_all "mrpin is loaded: this test boots without it"
ktap_plan 9

tmp=$(mktemp -d)
kernel_log_mark

# 1. Unsigned: refused, as the README says.
insmod "$MRPIN_KO" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
ktap_check "unsigned_module_refused" \
	bash -c "[ $rc != 0 ] && grep -q 'Key was rejected by service' '$tmp/err'"
kernel_log_read
ktap_check "kernel_log_says_unsigned_module_rejected" \
	grep -q 'Loading of unsigned module is rejected' <<<"$kernel_log"
ktap_check "nothing_loaded" bash -c "! grep -q '^mrpin ' /proc/modules"

# 2. Signed with the kernel's own key, where the test bed has it.
key=$build/certs/signing_key.pem
hash=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"$/\1/p' "$build/.config" 2>/dev/null)
if [ ! -r "$key" ] || [ ! -x "$build/scripts/sign-file" ] || [ -z "$hash" ]; then
	for name in signed_module_loads signed_module_not_tainted_unsigned \
		policy_set_through_securityfs policy_enforced signed_module_unloads; do
		ktap_skip "$name" "the kernel's signing key is its distribution's: the signed load runs on the debug kernel, built with a key of the test bed's own"
	done
	ktap_check_kernel_log "kernel_log_has_no_new_problems"
	rm -rf "$tmp"
	ktap_finish
fi
cp "$MRPIN_KO" "$tmp/mrpin.ko"
"$build/scripts/sign-file" "$hash" "$key" "$key" "$tmp/mrpin.ko"
taint_before=$(cat /proc/sys/kernel/tainted)
insmod "$tmp/mrpin.ko" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
ktap_diag "signer: $(modinfo -F signer "$tmp/mrpin.ko")"
ktap_check "signed_module_loads" bash -c "[ $rc = 0 ] && grep -q '^mrpin ' /proc/modules"
# Bit 13 (E): an unsigned module was loaded.
ktap_check "signed_module_not_tainted_unsigned" \
	test $((($(cat /proc/sys/kernel/tainted) & ~taint_before) & (1 << 13))) = 0
"$CTL" limit set process max_pinned=64K
ktap_check "policy_set_through_securityfs" \
	grep -q '^process max_pinned=64K ' "$MRPIN_LIMITS"
"$PINNER" 1M </dev/null >"$tmp/denied" 2>&1
ktap_check "policy_enforced" grep -q 'Cannot allocate memory' "$tmp/denied"
"$CTL" limit reset
ktap_check "signed_module_unloads" rmmod mrpin

ktap_check_kernel_log "kernel_log_has_no_new_problems"
rm -rf "$tmp"
ktap_finish
