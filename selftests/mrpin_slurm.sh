#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Per-job limits on Slurm, with the real daemons: munged, slurmctld and
# slurmd on this one node (cgroup v2, IgnoreSystemd=yes: no systemd here),
# with packaging/slurm/mrpin-slurm as their Prolog and Epilog
# (PrologFlags=Contain), as the README's slurm.conf lines say.  Batch jobs
# of an unprivileged user (RLIMIT_MEMLOCK unlimited, as RDMA guides set it)
# ask for --mem=$JOB_MEM and register memory with mrpin_pinner:
#   - the prolog gave the job's cgroup max_pinned = the share of its memory,
#     and the job's registrations are charged there;
#   - a job that registers within its share runs; one beyond it is
#     refused, and `mrpinctl events` names the job's cgroup;
#   - "mrpin:max_pinned=SIZE" in a job's comment lowers its limit, and
#     cannot raise it;
#   - a comment with no size in it, one too large for the shell's
#     arithmetic, or shell code, is ignored: the job runs under its own
#     limit, the prolog runs nothing of it, and the node is not drained;
#   - the epilog writes the job's peak pinned bytes to its output file, as
#     the job's user, and deletes the rule: none is left after the jobs.
# Every wait has a deadline; the daemons are stopped at the end, whatever
# happened.
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
CTL=$MRPIN_CTL
HOOK=${MRPIN_CTL%/userspace/mrpinctl}/packaging/slurm/mrpin-slurm
PINNER=$MRPIN_PINNER
require_built "$CTL" "$PINNER"
# scripts/check.sh installs them on the host (setup.sh slurm), whose root
# the VM's is.
for prog in munged slurmctld slurmd sbatch scontrol sinfo setpriv; do
	command -v "$prog" >/dev/null || ktap_skip_all "$prog is missing (setup.sh slurm)"
done
USER_NAME=nobody
id "$USER_NAME" >/dev/null 2>&1 || ktap_skip_all "no user $USER_NAME"
ktap_plan 12

# Each wait gives up after this many seconds.
DEADLINE=90
# Every job asks for this much memory, and may pin SHARE percent of it.
JOB_MEM_MIB=64
SHARE=25
SHARE_BYTES=$((JOB_MEM_MIB * SHARE / 100 << 20))
SLURMD_CG=/system.slice/slurmd.service

tmp=$(mktemp -d)
chmod 0755 "$tmp"
pids=()
cleanup() {
	local p cg

	scancel --quiet --full --signal=KILL --user="$USER_NAME" 2>/dev/null
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	pkill -x slurmstepd 2>/dev/null
	echo reset >"$MRPIN_LIMITS"
	ip link del "$LINK" 2>/dev/null
	# Slurm's cgroups, deepest first.
	for cg in $(find /sys/fs/cgroup/system.slice -mindepth 1 -type d 2>/dev/null | sort -r); do
		rmdir "$cg" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
ip link set lo up

# Two free ports on 127.0.0.1, slurmctld's and slurmd's.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
node=$(hostname -s)
# Slurm resolves even 127.0.0.1 with AI_ADDRCONFIG, which finds no IPv4
# address on a machine that has only loopback's: a dummy link gets one
# (TEST-NET-1, never routed).
LINK=mrpin_slurm0
{ ip link add "$LINK" type dummy && ip addr add 192.0.2.1/24 dev "$LINK" &&
	ip link set "$LINK" up; } || ktap_skip_all "cannot make a dummy link with an IPv4 address"

# 1. The daemons.  The VM's root is a throwaway overlay: the
# configuration goes where Slurm and munge look for it by default, as on
# a node, and munge gets a key of this run's own.
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge /etc/slurm
dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
chmod 0400 /etc/munge/munge.key
mkdir -p "$tmp/ctld" "$tmp/slurmd"
cat >/etc/slurm/slurm.conf <<CONF
ClusterName=mrpin
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$tmp/ctld
SlurmdSpoolDir=$tmp/slurmd
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmdDebug=debug
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
Prolog=$HOOK
Epilog=$HOOK
PrologFlags=Contain
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 State=UNKNOWN
PartitionName=mrpin Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
cat >/etc/slurm/cgroup.conf <<CONF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
CgroupAutomount=yes
ConstrainCores=no
ConstrainRAMSpace=no
CONF
# The hook's settings, and the mrpinctl built here (a node's is on PATH).
cat >/etc/default/mrpin-slurm <<CONF
MRPIN_SLURM_SHARE=$SHARE
MRPINCTL=$CTL
CONF

munged --force >"$tmp/munged.log" 2>&1
munged_pid=$(cat /run/munge/munged.pid 2>/dev/null)
[ -z "$munged_pid" ] || pids+=("$munged_pid")
# RDMA guides' "ulimit -l unlimited": what the jobs inherit.
ulimit -l unlimited
slurmctld -D -i >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
# slurmd in a cgroup of its own, as systemd would start it.
mkdir -p "/sys/fs/cgroup$SLURMD_CG"
# shellcheck disable=SC2016
bash -c 'echo $$ >"$0/cgroup.procs" && exec slurmd -D' "/sys/fs/cgroup$SLURMD_CG" \
	>"$tmp/slurmd.out" 2>&1 &
pids+=($!)

node_idle() {
	[ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ]
}
# node_drained: the node is drained, draining, down or failed (a prolog
# that fails drains it).  "idle*" is not: slurmd answered a ping late, as
# it may in a busy VM, and the node stays in service.
node_drained() {
	case "$(sinfo -h -n "$node" -o %t 2>/dev/null)" in
	drain* | drng* | down* | fail*) return 0 ;;
	esac
	return 1
}
# node_settled: idle, or drained (no use waiting for idle then).
node_settled() {
	node_idle || node_drained
}
daemons_up() {
	[ -n "$munged_pid" ] && until_true "$node idle in sinfo" node_idle
}
ktap_check "munged_slurmctld_slurmd_up" daemons_up
# The cgroup slurmd made for its slurmstepds, where they make job_N.
SCOPE=$(find /sys/fs/cgroup/system.slice -maxdepth 1 -name '*slurmstepd.scope' 2>/dev/null |
	head -n1)
SCOPE=${SCOPE#/sys/fs/cgroup}
SCOPE=${SCOPE:-/system.slice/slurmstepd.scope}
ktap_diag "slurmd's scope: $SCOPE"
# Without them, the rest fails without waiting.
# shellcheck disable=SC2034 # until_true (lib.sh) reads it
node_idle || DEADLINE=5

# job NAME PIN_SIZE [SBATCH_OPTION...]: a batch job of $USER_NAME's, asking
# for the test's memory, that registers PIN_SIZE with mrpin_pinner and
# holds it until `release NAME` (with JOB_HOLDS=0, does not hold it); its
# id in $jobid, its output in $tmp/job/NAME.out.  The pinner holds until
# its stdin ends: a FIFO whose one writer is this shell (opened read and
# write, so that neither side waits for the other), closed by release.
mkdir -p "$tmp/job"
chown "$USER_NAME" "$tmp/job"
declare -A hold_fd=()
job() {
	local name=$1 size=$2 hold=/dev/null fd

	shift 2
	if [ "${JOB_HOLDS:-1}" = 1 ]; then
		hold=$tmp/$name.hold
		mkfifo -m 0644 "$hold"
		exec {fd}<>"$hold"
		hold_fd[$name]=$fd
	fi
	jobid=$(setpriv --reuid="$USER_NAME" --regid=nogroup --clear-groups \
		sbatch --parsable --mem="${JOB_MEM_MIB}M" --chdir="$tmp/job" \
		--output="$tmp/job/$name.out" --job-name="$name" "$@" <<JOB
#!/bin/bash
echo "cgroup \$(cut -d: -f3 /proc/self/cgroup)"
exec $PINNER $size <$hold
JOB
	)
}
# release NAME...: the jobs' pinners deregister and end.
release() {
	local name

	for name; do
		[ -n "${hold_fd[$name]:-}" ] || continue
		exec {hold_fd[$name]}>&-
		unset "hold_fd[$name]"
	done
}

# state_in RECORD: the JobState of scontrol's one-line RECORD of a job, in
# $state (empty if it has none).
state_in() {
	state=
	[[ "$1" =~ \ JobState=([A-Z_]+) ]] && state=${BASH_REMATCH[1]}
}
# job_state ID: the job's state, as scontrol shows it.
job_state() {
	local state

	state_in "$(scontrol show job -o "$1" 2>/dev/null)"
	echo "$state"
}
# job_done ID...: each job ended (and is no longer completing: its epilog
# has run).  One scontrol for all of them, as it is polled.
job_done() {
	local jobs id line state

	jobs=$(scontrol show job -o 2>/dev/null)
	for id; do
		state=
		while IFS= read -r line; do
			[[ "$line" == "JobId=$id "* ]] || continue
			[[ "$line" != *COMPLETING* ]] || return 1
			state_in "$line"
		done <<<"$jobs"
		case "$state" in
		'' | PENDING | CONFIGURING | RUNNING) return 1 ;;
		esac
	done
}
ready() {
	grep -q '^ready$' "$tmp/job/$1.out" 2>/dev/null
}
# rule_max_pinned PATH: the max_pinned of the rule on cgroup PATH, as the
# module's policy file writes it (in the largest binary unit that divides
# it); empty when there is no such rule.
rule_max_pinned() {
	awk -v cg="$1" '$1 == "cgroup" && $2 == cg {
		for (i = 3; i <= NF; i++) if ($i ~ /^max_pinned=/) print substr($i, 12) }' \
		"$MRPIN_LIMITS"
}

# 2. A job within its share: registered, in its cgroup, under the rule.
PIN_OK=$((SHARE_BYTES / 2))
job ok "$PIN_OK"
ok_id=$jobid
ktap_diag "job $ok_id registers $PIN_OK bytes, its share being $SHARE_BYTES"
until_true "job $ok_id registered" ready ok
ok_cg=$SCOPE/job_$ok_id
ok_pid=$(pgrep -u "$USER_NAME" -x mrpin_pinner | head -n1)
ktap_diag "job $ok_id's cgroup: $(sed -n 's/^cgroup //p' "$tmp/job/ok.out"); rule: max_pinned=$(rule_max_pinned "$ok_cg")"
ktap_check "prolog_limits_the_jobs_cgroup_to_its_share" \
	test "$(rule_max_pinned "$ok_cg")" = "$((SHARE_BYTES >> 20))M"
in_job_cgroup() {
	local cg

	cg=$(sed -n 's/^0:://p' "/proc/$ok_pid/cgroup")
	[[ "$cg" == "$ok_cg"/* ]] &&
		[ "$(awk -v cg="$ok_cg" '$2 == cg { print $4 }' "$MRPIN_DIR/cgroups")" = "$PIN_OK" ]
}
ktap_check "jobs_registration_charged_to_its_cgroup" in_job_cgroup
release ok
until_true "job $ok_id done" job_done "$ok_id"
ktap_check "job_within_its_share_completes" test "$(job_state "$ok_id")" = COMPLETED

# 3. A job beyond its share: refused, and the events name its cgroup.
denials0=$(mrpin_stat denials_total)
# (Not held: a job that is not refused ends too.)
JOB_HOLDS=0 job over $((SHARE_BYTES + (4 << 20)))
over_id=$jobid
until_true "job $over_id done" job_done "$over_id"
ktap_diag "job $over_id: $(job_state "$over_id")"
[ "$(job_state "$over_id")" = FAILED ]
over_failed=$?
denials1=$(mrpin_stat denials_total)
"$CTL" -j events >"$tmp/events.json"
ktap_diag "job $over_id: $(grep -v '^cgroup' "$tmp/job/over.out" | tail -n 2 | tr '\n' ' ')"
refused_in_job() {
	[ "$over_failed" = 0 ] && [ "$denials1" -gt "$denials0" ] &&
		json_holds "$tmp/events.json" "[(e['action'], e['scope'], e['key'], e['limit']) for e in d[-($denials1 - $denials0):]] == [('deny', 'cgroup:$SCOPE/job_$over_id', 'max_pinned', $SHARE_BYTES)] * ($denials1 - $denials0)"
}
if refused_in_job; then
	ktap_ok "job_beyond_its_share_refused_and_named_in_events"
else
	ktap_fail "job_beyond_its_share_refused_and_named_in_events"
	ktap_diag "denials_total $denials0 -> $denials1; the last events:"
	"$CTL" events 2>&1 | tail -n 6 | sed 's/^/# /'
fi

# 4. The job's comment lowers its limit (a quarter of the share refuses
# half of it), and cannot raise it (twice the share: still the share).
low=$((SHARE_BYTES / 4))
JOB_HOLDS=0 job low $((SHARE_BYTES / 2)) --comment="mrpin:max_pinned=$((low >> 10))K"
low_id=$jobid
JOB_HOLDS=0 job high $((SHARE_BYTES + (4 << 20))) --comment="mrpin:max_pinned=$((SHARE_BYTES >> 19))M"
high_id=$jobid
until_true "jobs $low_id and $high_id done" job_done "$low_id" "$high_id"
"$CTL" -j events >"$tmp/events.json"
comment_limits() {
	[ "$(job_state "$low_id") $(job_state "$high_id")" = "FAILED FAILED" ] &&
	json_holds "$tmp/events.json" "any(e['scope'] == 'cgroup:$SCOPE/job_$low_id' and e['limit'] == $low for e in d)" &&
		json_holds "$tmp/events.json" "any(e['scope'] == 'cgroup:$SCOPE/job_$high_id' and e['limit'] == $SHARE_BYTES for e in d)"
}
ktap_check "jobs_comment_lowers_its_limit_never_raises_it" comment_limits

# 4b. Comments that are no size to lower the limit by, and shell code:
# each job runs under the rule of its share, as without them, and nothing
# drains the node, with MRPIN_SLURM_STRICT=yes (where a prolog that fails
# would).  Each job registers half its share and holds it while the rule
# on its cgroup is read.
echo MRPIN_SLURM_STRICT=yes >>/etc/default/mrpin-slurm
# shellcheck disable=SC2016 # the comment is the code, unexpanded
bad_comments=(8388608T 9223372036854775808 18446744073709551616 -1 1e9 ''
	'$(id)' "1M;touch\${IFS}$tmp/pwned" "\$(touch\${IFS}$tmp/pwned)")
bad_ids=()
for i in "${!bad_comments[@]}"; do
	job "bad$i" "$PIN_OK" --comment="mrpin:max_pinned=${bad_comments[$i]}"
	bad_ids+=("$jobid")
done
bad_rules=()
for i in "${!bad_comments[@]}"; do
	until_true "job ${bad_ids[$i]} registered" ready "bad$i" || break
	bad_rules+=("$(rule_max_pinned "$SCOPE/job_${bad_ids[$i]}")")
	ktap_diag "job ${bad_ids[$i]}, mrpin:max_pinned=${bad_comments[$i]}: rule max_pinned=${bad_rules[$i]:-(none)}"
	release "bad$i"
done
for i in "${!bad_comments[@]}"; do
	release "bad$i"
done
until_true "jobs ${bad_ids[*]} done" job_done "${bad_ids[@]}"
sed -i '/^MRPIN_SLURM_STRICT=/d' /etc/default/mrpin-slurm
bad_comments_ignored() {
	local i

	for i in "${!bad_comments[@]}"; do
		[ "${bad_rules[$i]:-}" = "$((SHARE_BYTES >> 20))M" ] || return 1
	done
}
ktap_check "bad_comments_leave_the_jobs_own_limit" bad_comments_ignored
bad_jobs_completed() {
	local id

	for id in "${bad_ids[@]}"; do
		[ "$(job_state "$id")" = COMPLETED ] ||
			{ ktap_diag "job $id: $(job_state "$id")"; return 1; }
	done
	until_true "$node idle or drained" node_settled
	ktap_diag "node $node: $(sinfo -h -n "$node" -o '%t %E' 2>/dev/null)"
	! node_drained && node_idle
}
ktap_check "bad_comments_jobs_complete_node_not_drained" bad_jobs_completed
ktap_check "bad_comments_code_not_run" test ! -e "$tmp/pwned"

# 5. After the jobs: the epilog wrote the peak to the job's output (as
# the job's user), and no rule of theirs is left.
peak_line="mrpin: job $ok_id pinned at most $PIN_OK bytes for RDMA"
peak_reported() {
	grep -q "^$peak_line " "$tmp/job/ok.out"
}
ktap_check "epilog_reports_the_jobs_peak_in_its_output" \
	until_true "'$peak_line' in job $ok_id's output" peak_reported
grep '^mrpin:' "$tmp/job/ok.out" | sed 's/^/# /'
no_job_rules() {
	! grep -q "^cgroup $SCOPE/" "$MRPIN_LIMITS"
}
ktap_check "epilog_deletes_the_jobs_rules" until_true "no rule on $SCOPE/job_*" no_job_rules

# 6. Everything stopped.
for p in "${pids[@]}"; do
	kill "$p" 2>/dev/null
done
stopped() {
	local p

	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && return 1
	done
	for p in slurmctld slurmd slurmstepd munged; do
		! pgrep -x "$p" >/dev/null || return 1
	done
}
ktap_check "daemons_stopped" until_true "Slurm's and munge's daemons gone" stopped
if [ "$ktap_failed" != 0 ]; then
	for f in slurmctld.log slurmd.log munged.log; do
		ktap_diag "--- the end of $f"
		tail -n 25 "$tmp/$f" 2>/dev/null | sed 's/^/# /'
	done
fi
pids=()
ktap_finish
