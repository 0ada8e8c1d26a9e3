#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Prometheus export end to end, with the real daemons: the command
# mrpin-export.service runs (read from the unit) writes the textfile into a
# directory that a real node_exporter's textfile collector reads, a real
# Prometheus scrapes that node_exporter every second, and PromQL queries
# over its HTTP API see what mrpin counts: the bytes a running ib_write_bw
# pair (server and client on rxe0, in a cgroup of the test's) pins, and
# the denials counter going up when a limit refuses a second ib_write_bw.
# Both daemons listen on 127.0.0.1 only, on ports the test picks; every
# wait has a deadline, and the daemons and ib_write_bw are stopped at the
# end, whatever happened (the test checks that they are gone).
. "$(dirname "$0")/lib.sh"

require_root
require_rxe
mrpin_load
CTL=$MRPIN_CTL
UNIT=${MRPIN_CTL%/userspace/mrpinctl}/packaging/systemd/mrpin-export.service
# scripts/check.sh passes them (setup.sh prometheus, setup.sh node-exporter
# unpack them from Debian's packages into the cache).
PROMETHEUS=${PROMETHEUS:-prometheus}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
LIMITS=$MRPIN_LIMITS
require_built "$CTL"
for prog in "$PROMETHEUS" "$NODE_EXPORTER" ib_write_bw curl python3; do
	command -v "$prog" >/dev/null || ktap_skip_all "$prog is missing"
done
ktap_plan 9

# Each wait gives up after this many seconds.
DEADLINE=90
# ib_write_bw's message size: it registers a buffer of at least this much.
SIZE=$((256 << 10))
CGROUP=/mrpin_prometheus

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p

	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	echo reset >"$LIMITS"
	rmdir "/sys/fs/cgroup$CGROUP" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip link set lo up

# The unit's command, mrpinctl the one built here and the file the test's.
textfile=$tmp/textfile/mrpin.prom
mkdir -p "$tmp/textfile"
read -ra export_cmd < <(sed -n 's/^ExecStart=//p' "$UNIT")
for i in "${!export_cmd[@]}"; do
	# shellcheck disable=SC2016
	case "${export_cmd[i]}" in
	*/mrpinctl) export_cmd[i]=$CTL ;;
	'${MRPIN_TEXTFILE}') export_cmd[i]=$textfile ;;
	esac
done
ktap_diag "the unit's command: ${export_cmd[*]}"

# Four free ports on 127.0.0.1: node_exporter's, Prometheus's and the two
# ib_write_bw servers'.
read -r ne_port prom_port bw_port refused_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

# query EXPR: EXPR's value now (the first series'), from Prometheus's HTTP
# API, in $value; false when the query fails or has no result.
query() {
	value=
	curl -sf --max-time 10 --data-urlencode "query=$1" \
		"http://127.0.0.1:$prom_port/api/v1/query" >"$tmp/query.json" 2>/dev/null &&
		json_holds "$tmp/query.json" "d['status'] == 'success' and len(d['data']['result']) >= 1" &&
		value=$(json_value "$tmp/query.json" "d['data']['result'][0]['value'][1]")
}

# query_is EXPR VALUE: EXPR's value is VALUE now.
query_is() {
	query "$1" && [ "$value" = "$2" ]
}

# 1. The daemons, on the unit's textfile.
"${export_cmd[@]}"
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$ne_port" \
	--collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$tmp/textfile" >"$tmp/node_exporter.log" 2>&1 &
ne_pid=$!
pids+=("$ne_pid")
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: mrpin
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
EOF
"$PROMETHEUS" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
pids+=("$prom_pid")

# node_exporter serves the file's samples (each with its value: it writes
# them in its own order and notation), the textfile read without error.
served() {
	curl -sf --max-time 10 "http://127.0.0.1:$ne_port/metrics" >"$tmp/metrics" 2>/dev/null &&
		grep -qx 'node_textfile_scrape_error 0' "$tmp/metrics" &&
		grep -qx "node_textfile_mtime_seconds{file=\"$textfile\"} .*" "$tmp/metrics" &&
		python3 - "$textfile" "$tmp/metrics" <<'PY'
import sys
def samples(path):
    with open(path) as f:
        return {k: float(v) for k, v in
                (l.rsplit(" ", 1) for l in f if l.startswith("mrpin_"))}
want, got = samples(sys.argv[1]), samples(sys.argv[2])
sys.exit(not (want and want == got))
PY
}
ktap_check "node_exporter_serves_the_units_textfile" \
	until_true "node_exporter on 127.0.0.1:$ne_port serving $textfile" served
ktap_check "prometheus_scrapes_node_exporter" \
	until_true "Prometheus on 127.0.0.1:$prom_port: up{job=\"mrpin\"} 1" \
	query_is 'up{job="mrpin"}' 1

# listeners PID: the addresses process PID listens on, one a line.
listeners() {
	ss -Hltnp | awk -v pid="pid=$1," 'index($0, pid) { print $4 }' | sort -u
}
ktap_check "daemons_listen_on_localhost_only" \
	test "$(listeners "$ne_pid") $(listeners "$prom_pid")" = "127.0.0.1:$ne_port 127.0.0.1:$prom_port"

# 2. A running ib_write_bw pair, in a cgroup of its own: the bytes mrpin
# counts for it, the export's cgroup series, in Prometheus.
mkdir -p "/sys/fs/cgroup$CGROUP"
# shellcheck disable=SC2016
in_cgroup=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "/sys/fs/cgroup$CGROUP")

# listening PORT: a server listens on 127.0.0.1:PORT (or on any address).
listening() {
	[ -n "$(ss -Hltn "sport = :$1")" ]
}

# ib_write_bw_pair NAME PORT WRAPPER...: an ib_write_bw server, and once it
# listens its client, both under WRAPPER (a command that runs the rest),
# output (line-buffered) in $tmp/NAME.server and $tmp/NAME.client, pids
# in $server and $client (and in $pids).  perftest's server registers its
# buffer once a client has connected.
ib_write_bw_pair() {
	local name=$1 port=$2

	shift 2
	"$@" stdbuf -oL ib_write_bw -d rxe0 -x 0 -s "$SIZE" -p "$port" -D 600 \
		>"$tmp/$name.server" 2>&1 &
	server=$!
	pids+=("$server")
	until_true "ib_write_bw's server ($name) listening on $port" listening "$port" ||
		return 1
	"$@" stdbuf -oL ib_write_bw -d rxe0 -x 0 -s "$SIZE" -p "$port" -D 600 127.0.0.1 \
		>"$tmp/$name.client" 2>&1 &
	client=$!
	pids+=("$client")
}

# Both registered their buffers and the traffic runs: each printed its
# results' header.
running() {
	grep -q '#bytes' "$tmp/bw.server" && grep -q '#bytes' "$tmp/bw.client"
}
ib_write_bw_pair bw "$bw_port" "${in_cgroup[@]}" && until_true "ib_write_bw running" running
bw_server=$server bw_client=$client
"$CTL" -j proc >"$tmp/procs.json"
bw_bytes=$(json_value "$tmp/procs.json" "sum(p['pinned_bytes'] for p in d if p['pid'] in ($bw_server, $bw_client))")
vmpin=$(awk '/^VmPin:/ { n += $2 * 1024 } END { printf "%d", n }' \
	"/proc/$bw_server/status" "/proc/$bw_client/status")
cg_bytes=$(awk -v cg="$CGROUP" '$2 == cg { print $4 }' "$MRPIN_DIR/cgroups")
ktap_diag "ib_write_bw pins $bw_bytes bytes (VmPin $vmpin, mrpin's cgroup $CGROUP $cg_bytes)"

# mrpin counts each side's buffer (at least -s bytes) in the test's
# cgroup, as the kernel's VmPin does, and Prometheus gets the same from the
# export's cgroup series.
prometheus_sees_ib_write_bw() {
	json_holds "$tmp/procs.json" "sorted(p['pid'] for p in d if p['comm'] == 'ib_write_bw' and p['cgroup'] == '$CGROUP' and p['pinned_bytes'] >= $SIZE) == sorted([$bw_server, $bw_client])" &&
		[ "$bw_bytes" = "$vmpin" ] && [ "$bw_bytes" = "$cg_bytes" ] &&
		until_true "mrpin_cgroup_pinned_bytes{cgroup=\"$CGROUP\"} $bw_bytes" \
			query_is "mrpin_cgroup_pinned_bytes{job=\"mrpin\",cgroup=\"$CGROUP\"}" "$bw_bytes"
}
"${export_cmd[@]}"
ktap_check "prometheus_has_ib_write_bws_pinned_bytes" prometheus_sees_ib_write_bw
ktap_diag "Prometheus: mrpin_cgroup_pinned_bytes{cgroup=\"$CGROUP\"} $value"

# 3. A limit below ib_write_bw's buffer refuses a second pair: the denials
# counter's increase, in Prometheus and by mrpin.
query 'mrpin_denials_total{job="mrpin"}'
prom_denials0=$value
denials0=$(mrpin_stat denials_total)
limit=$((SIZE / 2))
"$CTL" limit set process max_pinned=$((limit / 1024))K
ib_write_bw_pair refused "$refused_port" timeout "$DEADLINE"
refused_server=$server refused_client=$client
wait "$refused_server"
rc_server=$?
wait "$refused_client"
rc_client=$?
"$CTL" limit reset
denials1=$(mrpin_stat denials_total)
"$CTL" -j events >"$tmp/events.json"
ktap_diag "refused ib_write_bw: exit status $rc_server (server), $rc_client (client); denials_total $denials0 -> $denials1"

# Both sides failed (not timed out), and mrpin's events say why: its
# buffer over the process limit.
refused() {
	[ "$rc_server" != 0 ] && [ "$rc_server" != 124 ] &&
		[ "$rc_client" != 0 ] && [ "$rc_client" != 124 ] &&
		[ "$denials1" -gt "$denials0" ] &&
		json_holds "$tmp/events.json" "[(e['action'], e['scope'], e['key'], e['limit'], e['asked'] >= $SIZE) for e in d[-($denials1 - $denials0):] if e['comm'] == 'ib_write_bw'] == [('deny', 'process', 'max_pinned', $limit, True)] * ($denials1 - $denials0)"
}
ktap_check "limit_refuses_a_second_ib_write_bw" refused
# Prometheus had mrpin's count before, and gets the new one.
prometheus_counts_the_denials() {
	[ "$prom_denials0" = "$denials0" ] &&
		until_true "mrpin_denials_total $denials1" \
			query_is 'mrpin_denials_total{job="mrpin"}' "$denials1"
}
"${export_cmd[@]}"
ktap_check "prometheus_counts_the_denials" prometheus_counts_the_denials
# Over the whole run: the counter rose by what mrpin counted, and
# increase() sees it.
increase_seen() {
	query_is 'max_over_time(mrpin_denials_total{job="mrpin"}[10m]) - min_over_time(mrpin_denials_total{job="mrpin"}[10m])' \
		"$((denials1 - denials0))" &&
		query 'increase(mrpin_denials_total{job="mrpin"}[10m])' &&
		ktap_diag "increase(mrpin_denials_total[10m]) = $value; mrpin counted $((denials1 - denials0))" &&
		awk -v v="$value" -v n="$((denials1 - denials0))" 'BEGIN { exit !(v >= n && n > 0) }'
}
ktap_check "promql_increase_of_the_denials_is_mrpins" increase_seen

# 4. Everything stopped: SIGTERM, and each gone (reaped) within the
# deadline; the cgroup's pins released.
# running_pid PID: PID runs (not a zombie, waiting to be reaped).
running_pid() {
	local state

	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ "$state" != Z ]
}
gone() {
	local p

	for p in "${pids[@]}"; do
		! running_pid "$p" || return 1
	done
}
stopped() {
	local p

	[ -z "$ignored" ] || return 1
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && return 1
	done
	! listening "$ne_port" && ! listening "$prom_port" && ! listening "$bw_port"
}
for p in "${pids[@]}"; do
	kill "$p" 2>/dev/null
done
until_true "the daemons and ib_write_bw gone" gone
ignored=
for p in "${pids[@]}"; do
	# What ignored SIGTERM fails the test point below; killed anyway.
	if running_pid "$p"; then
		ktap_diag "pid $p ($(cat "/proc/$p/comm")) ignored SIGTERM"
		ignored+=" $p"
		kill -9 "$p"
	fi
	wait "$p" 2>/dev/null
done
ktap_check "daemons_and_ib_write_bw_stopped" stopped
pids=()
no_pins_left() {
	awk -v cg="$CGROUP" '$2 == cg && $3 != 0 { exit 1 }' "$MRPIN_DIR/cgroups"
}
ktap_check "ib_write_bws_pins_released" until_true "$CGROUP's pins released" no_pins_left
ktap_finish
