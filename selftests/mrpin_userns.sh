#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What binds a user who registers from a user namespace of subordinate
# uids (a rootless container, `unshare --map-users` through Debian's
# newuidmap and /etc/subuid), as the README says ("Users, namespaces and
# containers"): the pins are the subordinate uid's, in the initial
# namespace, so a uid rule on the user does not bind them, and the user's
# cgroup rule does.  uid 1000 is refused 2 MiB under `uid 1000
# max_pinned=1M`, and registers them from its namespace, where `users`
# shows them as uid 100000's; under a rule on the cgroup it runs in, the
# same 2 MiB from the namespace are refused, a deny event naming the
# cgroup, and 512 KiB are charged to that cgroup.  /etc/passwd, subuid,
# subgid and the policy are put back as they were.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
require_built "$MRPIN_PINNER"
[ -e /proc/self/ns/user ] ||
	ktap_skip_all "this kernel has no user namespaces (CONFIG_USER_NS)"
command -v newuidmap >/dev/null ||
	ktap_skip_all "newuidmap (Debian's uidmap) is missing"
unshare --help | grep -q -- --map-users ||
	ktap_skip_all "unshare (util-linux) has no --map-users"
mrpin_load
ktap_plan 7

tmp=$(mktemp -d)
OUTER=1000 SUB=100000 COUNT=65536
CG=/mrpin_userns
for f in passwd subuid subgid; do
	cp -a "/etc/$f" "$tmp/$f" 2>/dev/null || : >"$tmp/$f.none"
done
cat "$MRPIN_LIMITS" >"$tmp/limits"
cleanup() {
	local f

	for f in passwd subuid subgid; do
		if [ -e "$tmp/$f.none" ]; then
			rm -f "/etc/$f"
		else
			cp -a "$tmp/$f" "/etc/$f"
		fi
	done
	cat "$tmp/limits" >"$MRPIN_LIMITS"
	rmdir "/sys/fs/cgroup$CG" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# newuidmap and newgidmap allow the ranges /etc/subuid and /etc/subgid
# give the caller's user name.
name=$(getent passwd "$OUTER" | cut -d: -f1)
if [ -z "$name" ]; then
	name=mrpin-sub
	echo "$name:x:$OUTER:$OUTER::/nonexistent:/usr/sbin/nologin" >>/etc/passwd
fi
echo "$name:$SUB:$COUNT" >>/etc/subuid
echo "$name:$SUB:$COUNT" >>/etc/subgid
ulimit -l unlimited

# $tmp/as WHERE HOW SIZE: mrpin_pinner registering SIZE (and holding it
# until its stdin ends), in cgroup WHERE (- for where it is), as uid 1000
# (HOW user) or as root of a user namespace uid 1000 makes, mapped to its
# subordinate uids (HOW ns: uid 100000 outside), through newuidmap and
# newgidmap.
cat >"$tmp/as" <<EOF
#!/bin/bash
[ "\$1" = - ] || echo \$\$ >"/sys/fs/cgroup\$1/cgroup.procs" || exit 125
if [ "\$2" = user ]; then
	exec setpriv --reuid=$OUTER --regid=$OUTER --clear-groups $MRPIN_PINNER "\$3"
fi
exec setpriv --reuid=$OUTER --regid=$OUTER --clear-groups \\
	unshare --user --map-users=$SUB,0,$COUNT --map-groups=$SUB,0,$COUNT \\
	--setuid 0 --setgid 0 -- $MRPIN_PINNER "\$3"
EOF
chmod 755 "$tmp/as"
ktap_diag "uid $OUTER ($name), subordinate uids $SUB-$((SUB + COUNT - 1))"

# users_bytes UID, cgroup_bytes PATH: what `users` and `cgroups` say is
# pinned.
users_bytes() {
	awk -v u="$1" '$1 == u { print $3 }' "$MRPIN_DIR/users"
}
cgroup_bytes() {
	awk -v c="$1" '$2 == c { print $4 }' "$MRPIN_DIR/cgroups"
}

# 1. A uid rule binds the uid, not its subordinate uids.
printf 'uid %s max_pinned=1M\n' "$OUTER" >"$MRPIN_LIMITS"
ktap_check "uid_rule_refuses_the_user" \
	bash -c "! '$tmp/as' - user 2M </dev/null >'$tmp/user.out' 2>&1"
mrpin_hold ns "$tmp/as" - ns 2M
ktap_check "uid_rule_does_not_bind_its_subordinate_uids" \
	test "$(users_bytes "$SUB")" = 2097152
ktap_diag "users: $(grep -v '^#' "$MRPIN_DIR/users" | tr '\n' ';')"
mrpin_release ns

# 2. A rule on the cgroup the user runs in binds its namespaces too.
mkdir "/sys/fs/cgroup$CG"
printf 'cgroup %s max_pinned=1M\n' "$CG" >"$MRPIN_LIMITS"
ktap_check "cgroup_rule_refuses_the_users_namespace" \
	bash -c "! '$tmp/as' $CG ns 2M </dev/null >'$tmp/cg.out' 2>&1"
dd if="$MRPIN_DIR/events" iflag=nonblock status=none 2>/dev/null >"$tmp/events"
denied_in_cg() {
	awk -v u="$SUB" -v s="cgroup:$CG" '$3 == "deny" && $6 == u && $7 == s' \
		"$tmp/events" | grep -q .
}
ktap_check "deny_event_names_the_cgroup_and_the_subordinate_uid" denied_in_cg
ktap_diag "the last event: $(tail -n 1 "$tmp/events")"
mrpin_hold cgns "$tmp/as" "$CG" ns 512K
charged() {
	[ "$(cgroup_bytes "$CG")" = 524288 ] && [ "$(users_bytes "$SUB")" = 524288 ]
}
ktap_check "the_namespaces_pins_are_charged_to_the_cgroup" charged
mrpin_release cgns
ktap_check "nothing_left_pinned" test "$(mrpin_stat pins)" = 0
cat "$tmp/limits" >"$MRPIN_LIMITS"
ktap_check "policy_restored" cmp -s "$tmp/limits" <(cat "$MRPIN_LIMITS")
ktap_finish
