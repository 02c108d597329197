#!/usr/bin/env bash
# A Tether cluster on this machine, on loopback: 3 nats-server (JetStream, one NATS cluster) and
# 3 tetherd nodes joined to it.
#
#   Scripts/cluster.sh start [DIR]   build (release), start everything, print the URLs
#   Scripts/cluster.sh stop [DIR]    stop exactly what `start` started (pids in DIR/pids)
#   Scripts/cluster.sh status [DIR]  what runs, and each node's GET /cluster
#
# TETHERD=path uses that binary instead of building a release one. The NATS servers are
# TETHER_NATS_SERVER, else .tools/nats-current/bin/nats-server (Scripts/setup.sh installs it),
# else Debian's nats-server; from 2.10 on JetStream fsyncs every write (sync_interval: always).
# DIR defaults to .cluster/ in the repository: configs, JetStream stores, logs and pids.
# Ports, each the first of three (one per node), all movable:
#   TETHER_CLUSTER_NATS_PORT      NATS clients     (default 4222: 4222-4224)
#   TETHER_CLUSTER_ROUTE_PORT     NATS routes      (default 6222: 6222-6224)
#   TETHER_CLUSTER_MONITOR_PORT   NATS monitoring  (default 8222: 8222-8224)
#   TETHER_CLUSTER_BASE_PORT      tetherd nodes listen on BASE+1..BASE+3 (default 8080: 8081-8083)
# A server counts as up only if it is the one started here: a NATS server by the server id in
# its own log, answered on its monitoring port; a tetherd node by its own "listening" line.
# Another server already on a port fails the start, which then stops what it had started.
set -euo pipefail
cd "$(dirname "$0")/.."

command="${1:-}"
dir="${2:-.cluster}"
mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
base="${TETHER_CLUSTER_BASE_PORT:-8080}"
nats_port="${TETHER_CLUSTER_NATS_PORT:-4222}"
route_port="${TETHER_CLUSTER_ROUTE_PORT:-6222}"
monitor_port="${TETHER_CLUSTER_MONITOR_PORT:-8222}"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

wait_for() {  # wait_for DESCRIPTION PID COMMAND...: until COMMAND succeeds, while PID lives (60 s at most)
    local what="$1" pid="$2"; shift 2
    # A node's first start creates the JetStream streams: on a busy machine, well over 10 s.
    for _ in $(seq 1 600); do
        "$@" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "cluster: $what did not come up; see the logs in $dir" >&2
    return 1
}

# Whether the NATS server answering on monitoring port PORT is the one that wrote LOG (the
# server id it logged at start), with JetStream ready.
is_our_nats() {  # is_our_nats LOG PORT
    local id
    id="$(sed -n 's/.*\[INF\] *ID: *\([A-Z0-9]*\).*/\1/p' "$1" | tail -1)"
    [ -n "$id" ] && curl -sf "http://127.0.0.1:$2/varz" | grep -q "\"server_id\": *\"$id\"" \
        && curl -sf "http://127.0.0.1:$2/healthz?js-enabled-only=true" >/dev/null
}

# A start that failed leaves nothing running.
abandon() {
    stop >/dev/null
    echo "cluster: start failed; stopped what it had started" >&2
    exit 1
}

start() {
    if [ -s "$dir/pids" ]; then echo "cluster: already started (see $dir/pids); stop it first" >&2; exit 1; fi
    local nats="${TETHER_NATS_SERVER:-}"
    [ -n "$nats" ] || { [ -x .tools/nats-current/bin/nats-server ] && nats="$PWD/.tools/nats-current/bin/nats-server"; }
    [ -n "$nats" ] || nats="$(command -v nats-server || true)"
    [ -x "$nats" ] || { echo "cluster: nats-server is missing; run Scripts/setup.sh" >&2; exit 1; }
    local version sync=""
    version="$("$nats" --version | sed 's/.*v//')"
    # sync_interval (fsync before each ack) came in nats-server 2.10.
    if [ "$(printf '%s\n2.10\n' "$version" | sort -V | head -1)" = "2.10" ]; then sync=", sync_interval: always"; fi
    local tetherd="${TETHERD:-}"
    if [ -z "$tetherd" ]; then
        swift build -c release --product tetherd >/dev/null
        tetherd="$(swift build -c release --show-bin-path)/tetherd"
    fi
    mkdir -p "$dir"
    : > "$dir/pids"
    local urls="" routes="" pids=()
    for i in 1 2 3; do
        urls="$urls${urls:+,}nats://127.0.0.1:$((nats_port + i - 1))"
        routes="$routes${routes:+, }nats-route://127.0.0.1:$((route_port + i - 1))"
    done
    for i in 1 2 3; do
        cat > "$dir/n$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$((nats_port + i - 1))
http: 127.0.0.1:$((monitor_port + i - 1))
jetstream { store_dir: "$dir/nats-n$i"$sync }
cluster { name: tether, listen: 127.0.0.1:$((route_port + i - 1)), routes: [$routes] }
EOF
        "$nats" -c "$dir/n$i.conf" > "$dir/nats-n$i.log" 2>&1 < /dev/null &
        pids[i]=$!
        echo "nats-server n$i $!" >> "$dir/pids"
    done
    for i in 1 2 3; do
        wait_for "nats-server n$i (ports $((nats_port + i - 1)), $((route_port + i - 1)), $((monitor_port + i - 1)): another server on one of them?)" \
            "${pids[i]}" is_our_nats "$dir/nats-n$i.log" $((monitor_port + i - 1)) || abandon
    done
    local monitors=""
    for i in 1 2 3; do monitors="$monitors${monitors:+,}http://127.0.0.1:$((monitor_port + i - 1))"; done
    for i in 1 2 3; do
        "$tetherd" --nats "$urls" --nats-monitoring "$monitors" --node "node$i" --port $((base + i)) > "$dir/tetherd-node$i.log" 2>&1 < /dev/null &
        pids[i]=$!
        echo "tetherd node$i $!" >> "$dir/pids"
    done
    for i in 1 2 3; do
        wait_for "tetherd node$i (port $((base + i)): another server on it?)" "${pids[i]}" grep -q "listening on" "$dir/tetherd-node$i.log" || abandon
    done
    echo "cluster: 3 nats-server (JetStream) and 3 tetherd nodes"
    for i in 1 2 3; do echo "  node$i  ws://127.0.0.1:$((base + i))   log $dir/tetherd-node$i.log"; done
    echo "  NATS   $urls   (stores and logs in $dir/)"
    if [ -n "$sync" ]; then
        echo "  nats-server $version: JetStream fsyncs every write before its ack (sync_interval: always)"
    else
        echo "  nats-server $version: JetStream fsyncs on a timer, not each write (see docs/CLUSTER.md, \"What an ack promises\")"
    fi
    echo "Try:  tether --url ws://127.0.0.1:$((base + 1)),ws://127.0.0.1:$((base + 2)),ws://127.0.0.1:$((base + 3)) counter"
}

stop() {
    [ -s "$dir/pids" ] || { echo "cluster: nothing started in $dir"; return 0; }
    # tetherd nodes first (they release their rooms), then the NATS servers.
    for kind in tetherd nats-server; do
        while read -r name node pid; do
            [ "$name" = "$kind" ] || continue
            kill "$pid" 2>/dev/null || true
        done < "$dir/pids"
        while read -r name node pid; do
            [ "$name" = "$kind" ] || continue
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        done < "$dir/pids"
    done
    : > "$dir/pids"
    echo "cluster: stopped"
}

status() {
    [ -s "$dir/pids" ] || { echo "cluster: nothing started in $dir"; return 0; }
    while read -r name node pid; do
        if kill -0 "$pid" 2>/dev/null; then state=running; else state=gone; fi
        echo "$name $node (pid $pid): $state"
    done < "$dir/pids"
    for i in 1 2 3; do curl -sf "http://127.0.0.1:$((base + i))/cluster" && echo || true; done
}

case "$command" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    -h|--help|help|"") usage ;;
    *) echo "cluster: unknown command $command" >&2; usage >&2; exit 64 ;;
esac
