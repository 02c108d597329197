#!/usr/bin/env bash
# A Tether cluster on this machine, on loopback: 3 nats-server (JetStream, one NATS cluster) and
# 3 tetherd nodes joined to it.
#
#   Scripts/cluster.sh start [DIR]   build (release), start everything, print the URLs
#   Scripts/cluster.sh stop [DIR]    stop exactly what `start` started (pids in DIR/pids)
#   Scripts/cluster.sh status [DIR]  what runs, and each node's GET /cluster
#
# TETHERD=path uses that binary instead of building a release one.
# DIR defaults to .cluster/ in the repository: configs, JetStream stores, logs and pids.
# Ports: NATS clients 4222-4224, NATS routes 6222-6224, NATS monitoring 8222-8224, tetherd
# 8081-8083 (override with TETHER_CLUSTER_BASE_PORT=9000 for 9001-9003).
set -euo pipefail
cd "$(dirname "$0")/.."

command="${1:-}"
dir="${2:-.cluster}"
mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
base="${TETHER_CLUSTER_BASE_PORT:-8080}"

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

wait_for() {  # wait_for DESCRIPTION COMMAND...
    local what="$1"; shift
    for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "cluster: $what did not come up; see the logs in $dir" >&2
    return 1
}

start() {
    if [ -s "$dir/pids" ]; then echo "cluster: already started (see $dir/pids); stop it first" >&2; exit 1; fi
    command -v nats-server >/dev/null || { echo "cluster: nats-server is missing; run Scripts/setup.sh" >&2; exit 1; }
    local tetherd="${TETHERD:-}"
    if [ -z "$tetherd" ]; then
        swift build -c release --product tetherd >/dev/null
        tetherd="$(swift build -c release --show-bin-path)/tetherd"
    fi
    mkdir -p "$dir"
    : > "$dir/pids"
    local urls=""
    for i in 1 2 3; do
        cat > "$dir/n$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$((4221 + i))
http: 127.0.0.1:$((8221 + i))
jetstream { store_dir: "$dir/nats-n$i" }
cluster { name: tether, listen: 127.0.0.1:$((6221 + i)),
  routes: [nats-route://127.0.0.1:6222, nats-route://127.0.0.1:6223, nats-route://127.0.0.1:6224] }
EOF
        nats-server -c "$dir/n$i.conf" > "$dir/nats-n$i.log" 2>&1 &
        echo "nats-server n$i $!" >> "$dir/pids"
        urls="$urls${urls:+,}nats://127.0.0.1:$((4221 + i))"
    done
    for i in 1 2 3; do wait_for "nats-server n$i" curl -sf "http://127.0.0.1:$((8221 + i))/healthz?js-enabled-only=true"; done
    for i in 1 2 3; do
        "$tetherd" --nats "$urls" --node "node$i" --port $((base + i)) > "$dir/tetherd-node$i.log" 2>&1 &
        echo "tetherd node$i $!" >> "$dir/pids"
    done
    for i in 1 2 3; do wait_for "tetherd node$i" grep -q "listening on" "$dir/tetherd-node$i.log"; done
    echo "cluster: 3 nats-server (JetStream) and 3 tetherd nodes"
    for i in 1 2 3; do echo "  node$i  ws://127.0.0.1:$((base + i))   log $dir/tetherd-node$i.log"; done
    echo "  NATS   $urls   (stores and logs in $dir/)"
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
