#!/usr/bin/env bash
# Compares two release builds of tetherd under the same load, alternating them so that a noisy
# machine hurts both alike: 1,000 subscribers x 100 actions/s (the fanout scenario's row), each
# run on a fresh daemon, then the medians (and ranges) of server CPU per delivery and p99, and
# their ratios.
# BASE_ARGS and NEW_ARGS add arguments to each side's tetherd (e.g. NEW_ARGS="--config
# webhooks.yaml" compares a daemon sending webhooks with one that does not).
#
#   Benchmarks/loadtest-ab/ab.sh BASE_DIR NEW_DIR [--rounds N] [--cluster]
#
# BASE_DIR and NEW_DIR each hold a tetherd and a tether-load (`swift build -c release` of each
# commit, copied out). --cluster runs each daemon as a cluster node against one local
# `nats-server -js` (R1), as CLUSTER.md's single-server setup does. Results: one JSON line per run
# in $OUT (default /tmp/tether-ab-RESULTS.jsonl), then the table on stdout.
set -euo pipefail
base="$1" new="$2"
shift 2
rounds=4 cluster=0
while (($#)); do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --cluster) cluster=1; shift ;;
        *) echo "ab.sh: unknown option $1" >&2; exit 64 ;;
    esac
done
out="${OUT:-/tmp/tether-ab-$$.jsonl}"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

nats_args=()
if ((cluster)); then
    nats_port="$(free_port)"
    "${TETHER_NATS_SERVER:-nats-server}" -a 127.0.0.1 -p "$nats_port" -js -sd "$work/nats" > "$work/nats.log" 2>&1 &
    pids+=($!)
    sleep 1
    nats_args=(--nats "nats://127.0.0.1:$nats_port" --nats-replicas 1 --node n1)
fi

run() {  # run LABEL DIR [EXTRA TETHERD ARGUMENTS]
    local label="$1" dir="$2" data="$work/data-$RANDOM"
    shift 2
    "$dir/tetherd" --port 0 --data "$data" --log-level warning "${nats_args[@]}" "$@" > "$work/out" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -q "listening on" "$work/out" && break; sleep 0.1; done
    local port
    port="$(sed -n 's/.*listening on ws:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/out")"
    "$dir/tether-load" --url "ws://127.0.0.1:$port" --clients 1000 --rate 100 --duration 10 --warmup 2 \
        --server-pid "$pid" --label "$label" --json 2>/dev/null | tail -1 >> "$out"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

: > "$out"
for round in $(seq "$rounds"); do
    # Each side goes first every other round: the second run of a round came out slower (p99 1.33
    # with the same binary on both sides, 8 rounds, 2026-11-29), whichever build it was.
    # shellcheck disable=SC2086 # word splitting wanted: several arguments
    if ((round % 2)); then
        run base "$base" ${BASE_ARGS:-}
        run new "$new" ${NEW_ARGS:-}
    else
        run new "$new" ${NEW_ARGS:-}
        run base "$base" ${BASE_ARGS:-}
    fi
    echo "round $round of $rounds done" >&2
done

python3 - "$out" <<'EOF'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
def column(label, key):
    return [r[key] for r in runs if r.get("label") == label and r.get(key) is not None]
rows = {}
for label in ("base", "new"):
    cpu, p99 = column(label, "server_cpu_us_per_delivery"), column(label, "latency_p99_ms")
    ok = sum(1 for r in runs if r.get("label") == label and r.get("ok"))
    rows[label] = (statistics.median(cpu), min(cpu), max(cpu), statistics.median(p99), min(p99), max(p99), ok, len(cpu))
print("| | server µs/delivery | p99 | runs ok |")
print("| --- | --- | --- | --- |")
for label, (c, cl, ch, p, pl, ph, ok, n) in rows.items():
    print(f"| {label} | {c:.2f} ({cl:.2f}–{ch:.2f}) | {p:.1f} ms ({pl:.1f}–{ph:.1f}) | {ok}/{n} |")
b, n = rows["base"], rows["new"]
print(f"| new / base | **{n[0] / b[0]:.2f}** | **{n[3] / b[3]:.2f}** | |")
EOF
