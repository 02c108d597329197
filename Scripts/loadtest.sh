#!/usr/bin/env bash
# Load-tests tetherd with tether-load and writes a report folder:
#   report.md        one table per scenario (medians when --runs > 1)
#   latency.png      latency percentiles against subscribers (fan-out)
#   throughput.png   delivered against offered deliveries/s (fan-out and saturation)
#   results.jsonl    every tether-load --json line, tagged with its scenario
#   logs/            tetherd's and tether-load's output for every run
#
# Usage: Scripts/loadtest.sh [--quick] [--scenario NAME]... [--runs N] [--out DIR]
#   --quick          short runs and a smaller matrix (about a minute, plus the build)
#   --scenario NAME  fanout, rooms, idle, churn, saturation, tls, storm, restart, compression or
#                    viewers (repeatable; default: all)
#   --runs N         run every configuration N times; the report shows medians (default 1)
#   --out DIR        report folder (default: loadtest-report-YYYYmmdd-HHMMSS)
#   --report-only DIR  rebuild DIR's report and plots from its results.jsonl (no runs)
# Environment: SCRATCH_PATH (swift build folder, default .build), TETHERD_ARGS (extra daemon flags,
# e.g. --io-threads 1), LOAD_THREADS (tether-load's service threads in the rate scenarios, default 2),
# STORM_CLIENTS (clients of storm and restart; default: what the descriptor limit allows, at most
# 20,000), STORM_IN_FLIGHT (storm's first connections open at once, default 1000; 0: all),
# STORM_SOURCE_ADDRESSES (loopback source addresses of storm and restart clients, default 8; 0: one).
#
# Every run starts a fresh tetherd (release build, 127.0.0.1, a free port) so runs don't share
# rooms, history or memory; the trap stops it whatever happens. tether-load runs on the same
# machine: its own CPU is in every row, so a reader can see it was not the bottleneck.
# The tls scenario runs fan-out and idle configurations twice, over ws:// and over wss:// (a
# certificate from Scripts/make-cert.sh), and reports the TLS figures beside the plain ones.
# storm connects as many clients as the descriptor limit allows (at most 20,000) all at once and
# reports joins/s and connect times; restart connects them, then stops the daemon (SIGTERM: a
# 1001 close to every client) and starts it again on the same port and data folder, and reports
# the time from "listening again" to the last client resumed.
# compression measures bytes on the wire and server CPU with permessage-deflate: 1,000-item todo
# snapshots (Benchmarks/compression/snapshot_bytes.py) and patches at 1,000 subscribers x 100/s,
# with compression off, on (small frames stay uncompressed) and on for every frame.
# viewers runs 1,000 subscribers x 100 actions/s in a shared room, in rooms with per-viewer values
# (10 distinct views; one per subscriber) and in a room with presence, without and with 50
# members leaving and joining per second.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
runs=1
report_only=""
out=""
scenarios=()
usage_error() { echo "loadtest: $1 (see --help)" >&2; exit 64; }
while (($#)); do
    case "$1" in
        --scenario|--runs|--out|--report-only) (($# >= 2)) || usage_error "$1 needs a value" ;;
    esac
    case "$1" in
        --quick) quick=1 ;;
        --scenario) scenarios+=("$2"); shift ;;
        --runs) runs="$2"; shift ;;
        --out) out="$2"; shift ;;
        --report-only) report_only="$2"; shift ;;
        # The help is the comment block at the top, up to the first line that is not a comment.
        -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
        *) usage_error "unknown argument '$1'" ;;
    esac
    shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || usage_error "--runs takes a whole number of at least 1, not '$runs'"
((${#scenarios[@]})) || scenarios=(fanout rooms idle churn saturation tls storm restart compression viewers)
for s in "${scenarios[@]}"; do
    case "$s" in fanout|rooms|idle|churn|saturation|tls|storm|restart|compression|viewers) ;; *) usage_error "unknown scenario '$s'" ;; esac
done
# Descriptors: the daemon and tether-load (each its own process, each one per connection) inherit
# the hard limit. storm and restart use what it allows, keeping 512 for listeners, the database,
# logs and the publishers.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
storm_clients=$(( $(ulimit -n) - 512 < 20000 ? $(ulimit -n) - 512 : 20000 ))
storm_clients="${STORM_CLIENTS:-$storm_clients}"
# First connections in flight at once in storm (0: every client at once). lws 4.1 keeps each
# pending handshake's timeout in a list sorted by deadline that it walks from the head on every
# insertion, in tether-load and in tetherd alike: with all 19,488 at once no client joined in
# 35 s (docs/PERFORMANCE.md, "Reconnect storms"), so the default caps them at 1,000.
storm_in_flight="${STORM_IN_FLIGHT:-1000}"
# Storm clients come from several loopback addresses: from one, the kernel's search for a free
# ephemeral port among ~20,000 in use took a quarter of tether-load's time.
storm_sources="${STORM_SOURCE_ADDRESSES:-8}"
max_connections=15000  # the daemon's --max-connections: above what each run opens
out="${report_only:-${out:-loadtest-report-$(date +%Y%m%d-%H%M%S)}}"
mkdir -p "$out/logs"
results="$out/results.jsonl"
if [[ -n "$report_only" ]]; then
    [[ -s "$results" ]] || { echo "loadtest: no $results" >&2; exit 2; }
    scenarios=()
else
    : > "$results"
fi

# --- build ---------------------------------------------------------------------------------
if [[ -z "$report_only" ]]; then
    scratch="${SCRATCH_PATH:-.build}"
    echo "loadtest: building release binaries (scratch path $scratch)"
    swift build -c release --scratch-path "$scratch" --product tetherd >/dev/null
    swift build -c release --scratch-path "$scratch" --product tether-load >/dev/null
    bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"
    # The packed-write limit the saturation scenario compares with (plain C, no Tether server code).
    cc -O2 -o "$bin/packed-broadcaster" Benchmarks/packed-broadcaster/main.c -lwebsockets -lev
fi
command -v gnuplot >/dev/null || echo "loadtest: gnuplot not found (Scripts/setup.sh installs gnuplot-nox): no plots" >&2

# --- one daemon per run ----------------------------------------------------------------------
server_pid=""
server_port=""
transport=ws  # ws or wss: how the next runs connect (the tls scenario switches it)
server_args=()  # flags for the next daemons (the compression scenario sets them)
server_program=tetherd  # or packed-broadcaster (the saturation scenario's comparison)
tls_dir=""

stop_server() {
    stop_daemon
    rm -rf "${out:?}/data"  # the runs' databases: not part of the report
}

# stop_daemon: SIGTERM (every client gets a 1001 close), SIGKILL after 5 s; the data stays.
stop_daemon() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

# start_server LOGNAME [PORT]: tetherd on 127.0.0.1, on PORT or one chosen by the OS (read from
# its first line); with TLS when $transport is wss. Sets server_listening_at (Unix seconds).
start_server() {
    local log="$out/logs/$1.tetherd" port="${2:-0}"
    local tls=()
    [[ "$transport" == wss ]] && tls=(--tls-cert "$tls_dir/cert.pem" --tls-key "$tls_dir/key.pem")
    [[ "$port" != 0 ]] && log="$log.again"
    : >"$log.out"  # exists before the daemon writes to it
    if [[ "$server_program" == packed-broadcaster ]]; then
        "$bin/packed-broadcaster" --port "$port" "${tls[@]}" >"$log.out" 2>"$log.err" &
    else
        # shellcheck disable=SC2086  # TETHERD_ARGS is a list of flags
        # Each run gets its own data folder (durable rooms, the default durability) in the report.
        # (The per-address limit is off by default; storm and restart need --max-connections raised.)
        "$bin/tetherd" --host 127.0.0.1 --port "$port" --log-level warning --max-connections "$max_connections" \
            --data "$out/data/$1" "${tls[@]}" "${server_args[@]}" ${TETHERD_ARGS:-} >"$log.out" 2>"$log.err" &
    fi
    server_pid=$!
    for _ in $(seq 1000); do
        server_port="$(sed -n 's/.*listening on wss\{0,1\}:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log.out" || true)"
        if [[ -n "$server_port" ]]; then server_listening_at="$(date +%s.%N)"; return 0; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.01
    done
    echo "loadtest: tetherd did not start (see $log.err)" >&2
    exit 1
}

# run SCENARIO NAME TETHER-LOAD-ARGS...: a fresh daemon, one tether-load run per --runs, JSON
# lines appended to results.jsonl with the scenario, configuration name and transport added.
run() {
    local scenario="$1" name="$2"; shift 2
    local i status line
    local trust=()
    [[ "$transport" == wss ]] && trust=(--ca "$tls_dir/cert.pem")
    for ((i = 1; i <= runs; i++)); do
        local tag="$scenario-$name-$i"
        [[ "$scenario" == tls ]] && tag="$scenario-$name-$transport-$i"
        start_server "$tag"
        status=0
        line="$("$bin/tether-load" --url "$transport://127.0.0.1:$server_port" --server-pid "$server_pid" "${trust[@]}" \
            --json --quiet --label "$name" "$@" 2>"$out/logs/$tag.load")" || status=$?
        stop_server
        if [[ -z "$line" ]]; then
            echo "loadtest: $tag: tether-load printed no result (exit $status, see $out/logs/$tag.load)" >&2
            line='{"ok":false,"exit_code":'"$status"'}'
        fi
        echo "${line%\}},\"scenario\":\"$scenario\",\"config\":\"$name\",\"transport\":\"$transport\",\"run\":$i}" >> "$results"
        summarize "$line" "$tag" "$status"
    done
}

# restart_run NAME TETHER-LOAD-ARGS...: a daemon, tether-load --expect-restart against it; once
# every subscriber joined, the daemon is stopped (SIGTERM) and started again on the same port and
# data folder. The JSON line gains listening_again_unix_s and resumed_after_listening_s.
restart_run() {
    local name="$1"; shift
    local i status line resumed_line
    for ((i = 1; i <= runs; i++)); do
        local tag="restart-$name-$i" result="$out/logs/restart-$name-$i.json"
        start_server "$tag"
        local port="$server_port"
        "$bin/tether-load" --url "ws://127.0.0.1:$port" --expect-restart --json --quiet --label "$name" "$@" \
            >"$result" 2>"$out/logs/$tag.load" &
        local load_pid=$!
        for _ in $(seq 1200); do
            grep -q "ready for a restart" "$out/logs/$tag.load" 2>/dev/null && break
            kill -0 "$load_pid" 2>/dev/null || break
            sleep 0.1
        done
        sleep 1
        stop_daemon
        start_server "$tag" "$port"
        local listening_at="$server_listening_at"
        status=0
        wait "$load_pid" || status=$?
        stop_server
        line="$(cat "$result")"
        if [[ -z "$line" ]]; then
            echo "loadtest: $tag: tether-load printed no result (exit $status, see $out/logs/$tag.load)" >&2
            line='{"ok":false,"exit_code":'"$status"'}'
        fi
        resumed_line="$(python3 -c '
import json, sys
r = json.loads(sys.argv[1]); at = float(sys.argv[2])
r["listening_again_unix_s"] = at
if r.get("last_resume_unix_s") is not None:
    r["resumed_after_listening_s"] = r["last_resume_unix_s"] - at
print(json.dumps(r, separators=(",", ":")))' "$line" "$listening_at")"
        echo "${resumed_line%\}},\"scenario\":\"restart\",\"config\":\"$name\",\"transport\":\"ws\",\"run\":$i}" >> "$results"
        summarize "$resumed_line" "$tag" "$status"
    done
}

# One line per run on the console.
summarize() {
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
r = json.loads(sys.argv[1]); tag = sys.argv[2]; status = sys.argv[3]
def f(key, fmt="{:.0f}"):
    v = r.get(key)
    return "-" if v is None else fmt.format(v)
print(f"  {tag:<34} exit {status}  delivered {f('delivered_per_s')}/s of {f('offered_deliveries_per_s')}/s  "
      f"p50 {f('latency_p50_ms', '{:.2f}')} ms  p99 {f('latency_p99_ms', '{:.2f}')} ms  "
      f"server {f('server_cpu_cores', '{:.2f}')} cores  load {f('load_cpu_cores', '{:.2f}')} cores"
      + (f"  RSS/conn {r['server_rss_per_connection_bytes']/1024:.1f} KiB" if r.get('server_rss_per_connection_bytes') else "")
      + (f"  joins/s {f('joins_per_s')}  connect p99 {f('connect_p99_ms', '{:.0f}')} ms" if r.get('joins_per_s') else "")
      + (f"  resumed {f('resumed_after_listening_s', '{:.2f}')} s after listening" if 'listening_again_unix_s' in r else ""))
EOF
}

# Last p99 (ms) and whether the last run kept up, for the saturation search.
last_result_keeps_up() {
    python3 - "$results" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
ok = r.get("ok") and (r.get("latency_p99_ms") or 1e9) <= 100 and (r.get("delivery_ratio") or 0) >= 0.95 \
     and r.get("skipped_by_snapshot", 0) == 0
sys.exit(0 if ok else 1)
EOF
}

# --- scenarios ----------------------------------------------------------------------------------
if ((quick)); then
    duration=2; warmup=0.5
    fanout_subscribers=(100 1000); fanout_rates=(10 100)
    rooms=100; idle_clients=2000; churn_clients=200; churn_rate=50
    saturation_rates=(50 100 300 600)
    tls_rates=(100)
    storm_clients="${STORM_CLIENTS:-2000}"
    snapshot_joins=100
else
    snapshot_joins=500
    duration=10; warmup=2
    fanout_subscribers=(100 1000 5000); fanout_rates=(10 100 1000)
    rooms=1000; idle_clients=10000; churn_clients=1000; churn_rate=200
    saturation_rates=(25 50 100 200 400 600 800 1000 1500 2000 3000)
    tls_rates=(50 100)
fi
# tether-load on two service threads: tetherd serves its sockets on one thread per core, and a
# load tool receiving on one thread became the limit of a two-core machine (docs/PERFORMANCE.md,
# "Socket shards"). LOAD_THREADS overrides.
common=(--duration "$duration" --warmup "$warmup" --drain-timeout 15 --threads "${LOAD_THREADS:-2}")

# tetherd rate-limits each connection to 1,000 actions/s by default: one publisher per 500/s.
publishers_for() { echo $((($1 + 499) / 500)); }

for scenario in "${scenarios[@]}"; do
    echo "loadtest: scenario $scenario"
    case "$scenario" in
        fanout)
            for n in "${fanout_subscribers[@]}"; do
                for rate in "${fanout_rates[@]}"; do
                    run fanout "${n}x${rate}" --clients "$n" --rate "$rate" --publishers "$(publishers_for "$rate")" "${common[@]}"
                done
            done ;;
        rooms)
            # 10 clients per room, 1 action/s per room.
            run rooms "${rooms}rooms" --clients $((rooms * 10)) --rooms "$rooms" --rate "$rooms" \
                --publishers "$(publishers_for "$rooms")" "${common[@]}" ;;
        idle)
            run idle "${idle_clients}idle" --clients "$idle_clients" --rate 0 --duration "$duration" --warmup 0 ;;
        churn)
            run churn "${churn_rate}perS" --clients "$churn_clients" --rate 100 --churn "$churn_rate" "${common[@]}" ;;
        saturation)
            for rate in "${saturation_rates[@]}"; do
                run saturation "${rate}" --clients 1000 --rate "$rate" --publishers "$(publishers_for "$rate")" "${common[@]}"
                last_result_keeps_up || { echo "  (p99 above 100 ms or delivery behind: stopping the climb)"; break; }
            done
            # The packed-write limit at 500 actions/s, beside tetherd at the same rate.
            run saturation "500-tetherd" --clients 1000 --rate 500 --publishers 1 "${common[@]}"
            server_program=packed-broadcaster
            run saturation "500-packed" --clients 1000 --rate 500 --publishers 1 "${common[@]}"
            server_program=tetherd ;;
        tls)
            # Each configuration over ws:// then wss://, back to back, so both see the same machine.
            if [[ -z "$tls_dir" ]]; then
                tls_dir="$out/tls"
                Scripts/make-cert.sh "$tls_dir" >/dev/null
            fi
            for rate in "${tls_rates[@]}"; do
                for transport in ws wss; do
                    run tls "1000x${rate}" --clients 1000 --rate "$rate" --publishers "$(publishers_for "$rate")" "${common[@]}"
                done
            done
            for transport in ws wss; do
                run tls "${idle_clients}idle" --clients "$idle_clients" --rate 0 --duration "$duration" --warmup 0
            done
            transport=ws ;;
        storm)
            # No ramp: connections open as fast as STORM_IN_FLIGHT allows.
            max_connections=$((storm_clients + 64))
            # Two service threads in tether-load: lws's timer list is per context, so each walks half.
            run storm "${storm_clients}clients" --clients "$storm_clients" --threads 2 --source-addresses "$storm_sources" --rate 0 --duration 1 --warmup 0 \
                --ramp 1e9 --max-in-flight "$storm_in_flight" --connect-timeout 30
            max_connections=15000 ;;
        compression)
            # Snapshots: the same daemon, joins with and without the extension alternating.
            server_args=(--compression on)
            for ((i = 1; i <= runs; i++)); do
                tag="compression-snapshot-$i"
                start_server "$tag"
                /usr/bin/python3 Benchmarks/compression/snapshot_bytes.py "ws://127.0.0.1:$server_port" "$server_pid" \
                    --joins "$snapshot_joins" >"$out/logs/$tag.json" 2>"$out/logs/$tag.err" \
                    || echo "loadtest: $tag failed (see $out/logs/$tag.err)" >&2
                stop_server
                while read -r line; do
                    config="$(sed -n 's/.*"label": "\([^"]*\)".*/\1/p' <<<"$line")"
                    echo "${line%\}},\"scenario\":\"compression\",\"config\":\"$config\",\"transport\":\"ws\",\"run\":$i}" >> "$results"
                    summarize "$line" "$tag-$config" 0
                done <"$out/logs/$tag.json"
            done
            # Patches: small (about 130 bytes) at 100 actions/s and 2 KB at 20 (100/s of 2 KB is
            # 200 MB/s uncompressed, more than tether-load reads on this machine), off / on
            # (1,024-byte threshold) / on for every frame.
            for payload in 0 2000; do
                rate=$((payload > 0 ? 20 : 100))
                server_args=(--compression off)
                run compression "off-${payload}B" --clients 1000 --rate "$rate" --payload-bytes "$payload" "${common[@]}"
                server_args=(--compression on)
                run compression "on-${payload}B" --clients 1000 --rate "$rate" --payload-bytes "$payload" --compression "${common[@]}"
                server_args=(--compression on --compression-min-bytes 0)
                run compression "all-${payload}B" --clients 1000 --rate "$rate" --payload-bytes "$payload" --compression "${common[@]}"
            done
            server_args=() ;;
        viewers)
            # The test kinds: bench-views10, bench-viewers, bench-presence (tetherd --test-kinds).
            server_args=(--test-kinds)
            run viewers "shared" --clients 1000 --rate 100 --kind bench "${common[@]}"
            run viewers "views10" --clients 1000 --rate 100 --kind bench-views10 "${common[@]}"
            run viewers "view-each" --clients 1000 --rate 100 --kind bench-viewers "${common[@]}"
            run viewers "presence" --clients 1000 --rate 100 --kind bench-presence --presence "${common[@]}"
            run viewers "presence-churn50" --clients 1000 --rate 100 --kind bench-presence --presence --churn 50 "${common[@]}"
            server_args=() ;;
        restart)
            max_connections=$((storm_clients + 64))
            restart_run "${storm_clients}clients" --clients "$storm_clients" --threads 2 --source-addresses "$storm_sources" --rate 0 --duration 10 --warmup 0 \
                --ramp 1e9 --max-in-flight "$storm_in_flight" --connect-timeout 30 --drain-timeout 60
            max_connections=15000 ;;
    esac
done
stop_server
rm -rf "$out/tls"  # the certificate and key of the tls scenario: not part of the report

# --- report -------------------------------------------------------------------------------------
python3 - "$out" <<'EOF'
import json, os, platform, shutil, statistics, subprocess, sys, time
out = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
runs = max((r.get("run") or 1 for r in rows), default=1)
quick = all((r.get("duration_s") or 0) <= 3 for r in rows)

def median(group, key):
    values = [r[key] for r in group if r.get(key) is not None]
    return statistics.median(values) if values else None

groups = {}
for r in rows:
    groups.setdefault((r.get("scenario"), r.get("config"), r.get("transport") or "ws"), []).append(r)

def merged(group):
    keys = {k for r in group for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    m = {k: median(group, k) for k in keys}
    m["ok"] = all(r.get("ok") for r in group)
    m["exit_codes"] = ",".join(str(r.get("exit_code")) for r in group)
    m["config"] = group[0].get("config"); m["scenario"] = group[0].get("scenario")
    m["transport"] = group[0].get("transport") or "ws"
    m["compression"] = group[0].get("compression")
    return m

def fmt(v, spec="{:,.0f}"):
    return "–" if v is None else spec.format(v)

def ms(v):
    return "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}")

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip():
    commit += " + uncommitted changes"
lines = [f"# tetherd load test — {time.strftime('%Y-%m-%d %H:%M')}", "",
         f"Commit `{commit or '?'}`, {os.cpu_count()} cores, {platform.platform()}. "
         f"{'Quick mode (short runs, small matrix). ' if quick else ''}"
         f"{'Medians of ' + str(runs) + ' runs. ' if runs > 1 else ''}"
         "tetherd (release) and tether-load share the machine; every run starts a fresh tetherd.", "",
         "Latency is publish-to-receive per delivery (monotonic clock, same machine). *Delivered* counts",
         "operations received; a merged patch frame carries several. CPU figures are cores (CPU seconds per",
         "second) over the measurement window; *µs/delivery* is CPU time per delivered patch.", ""]

perf_header = ("| run | subscribers | rooms | actions/s | offered deliveries/s | delivered/s | ratio | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms "
               "| lost | dup | gaps | server cores | server µs/delivery | server RSS MiB | tether-load cores | exit |")
perf_rule = "|" + "---|" * (perf_header.count("|") - 1)

def perf_row(m):
    return (f"| {m['config']} | {fmt(m.get('clients'))} | {fmt(m.get('rooms'))} | {fmt(m.get('rate'))} | {fmt(m.get('offered_deliveries_per_s'))} "
            f"| {fmt(m.get('delivered_per_s'))} | {fmt(m.get('delivery_ratio'), '{:.3f}')} | {ms(m.get('latency_p50_ms'))} | {ms(m.get('latency_p90_ms'))} "
            f"| {ms(m.get('latency_p99_ms'))} | {ms(m.get('latency_p999_ms'))} | {ms(m.get('latency_max_ms'))} | {fmt(m.get('lost'))} "
            f"| {fmt(m.get('duplicates'))} | {fmt(m.get('gaps'))} | {fmt(m.get('server_cpu_cores'), '{:.2f}')} "
            f"| {fmt(m.get('server_cpu_us_per_delivery'), '{:.2f}')} | {fmt((m.get('server_rss_bytes') or 0) / 1048576, '{:.1f}')} "
            f"| {fmt(m.get('load_cpu_cores'), '{:.2f}')} | {m['exit_codes']} |")

def versus(m, base, key):
    """m[key] / base[key] as "1.23×"; empty for the base row itself or a missing figure."""
    if base is None or base is m or not m.get(key) or not base.get(key):
        return ""
    return f"{m[key] / base[key]:.2f}×"

def tls_section(ms_rows):
    """Each configuration over ws and wss, run back to back, with the wss/ws ratios."""
    def ratio(a, b):
        return f"{a / b:.2f}×" if a is not None and b else "–"
    pairs = {}
    for m in ms_rows:
        pairs.setdefault(m["config"], {})[m["transport"]] = m
    traffic = [c for c, p in pairs.items() if any((m.get("rate") or 0) > 0 for m in p.values())]
    idle = [c for c in pairs if c not in traffic]
    out = []
    if traffic:
        out += ["| run | transport | subscribers | actions/s | delivered/s | ratio | p50 ms | p99 ms | lost | server cores "
                "| server µs/delivery | wss/ws µs/delivery | wss/ws p99 | tether-load cores | exit |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for config in traffic:
            ws = pairs[config].get("ws")
            for transport in ["ws", "wss"]:
                m = pairs[config].get(transport)
                if not m:
                    continue
                versus = transport == "wss" and ws is not None
                out.append(f"| {config} | {transport} | {fmt(m.get('clients'))} | {fmt(m.get('rate'))} | {fmt(m.get('delivered_per_s'))} "
                           f"| {fmt(m.get('delivery_ratio'), '{:.3f}')} | {ms(m.get('latency_p50_ms'))} | {ms(m.get('latency_p99_ms'))} "
                           f"| {fmt(m.get('lost'))} | {fmt(m.get('server_cpu_cores'), '{:.2f}')} | {fmt(m.get('server_cpu_us_per_delivery'), '{:.2f}')} "
                           f"| {ratio(m.get('server_cpu_us_per_delivery'), ws.get('server_cpu_us_per_delivery')) if versus else ''} "
                           f"| {ratio(m.get('latency_p99_ms'), ws.get('latency_p99_ms')) if versus else ''} "
                           f"| {fmt(m.get('load_cpu_cores'), '{:.2f}')} | {m['exit_codes']} |")
        out.append("")
    if idle:
        out += ["| run | transport | connections | RSS before MiB | RSS connected MiB | KiB per connection | wss − ws KiB | exit |",
                "|---|---|---|---|---|---|---|---|"]
        for config in idle:
            ws = pairs[config].get("ws")
            for transport in ["ws", "wss"]:
                m = pairs[config].get(transport)
                if not m:
                    continue
                kib = (m.get("server_rss_per_connection_bytes") or 0) / 1024
                extra = ""
                if transport == "wss" and ws is not None and ws.get("server_rss_per_connection_bytes") is not None:
                    extra = f"{kib - ws['server_rss_per_connection_bytes'] / 1024:+.1f}"
                out.append(f"| {config} | {transport} | {fmt(m.get('connected'))} | {fmt((m.get('server_rss_before_bytes') or 0) / 1048576, '{:.1f}')} "
                           f"| {fmt((m.get('server_rss_connected_bytes') or 0) / 1048576, '{:.1f}')} | {kib:.2f} | {extra} | {m['exit_codes']} |")
        out.append("")
    out.append("wss runs trust the run's self-signed certificate (`--ca`); the server's /metrics is not read over TLS, "
               "so its CPU and memory come from /proc.")
    return out

by_scenario = {}
for (scenario, config, transport), group in groups.items():
    by_scenario.setdefault(scenario, []).append(merged(group))

titles = {"fanout": "1. Fan-out: one room", "rooms": "2. Many rooms: 10 clients per room, 1 action/s per room",
          "idle": "3. Idle connections: memory per connection", "churn": "4. Churn: reconnects with resume while patches flow",
          "saturation": "5. Saturation at 1,000 subscribers", "tls": "6. TLS: wss:// beside plain ws://",
          "storm": "7. Connect storm: every client, no ramp", "restart": "8. Restart storm: the daemon restarts under every client",
          "compression": "9. Compression: permessage-deflate, bytes and CPU",
          "viewers": "10. Per-viewer values and presence: 1,000 subscribers × 100 actions/s"}
for scenario in ["fanout", "rooms", "idle", "churn", "saturation", "tls", "storm", "restart", "compression", "viewers"]:
    ms_rows = by_scenario.get(scenario)
    if not ms_rows:
        continue
    lines += [f"## {titles[scenario]}", ""]
    if scenario == "tls":
        lines += tls_section(ms_rows)
    elif scenario == "storm":
        lines += ["| run | clients | joined | connect+join s | joins/s | connect p50 ms | connect p99 ms | server RSS MiB | exit |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for m in ms_rows:
            lines.append(f"| {m['config']} | {fmt(m.get('clients'))} | {fmt(m.get('connected'))} | {fmt(m.get('connect_s'), '{:.2f}')} "
                         f"| {fmt(m.get('joins_per_s'))} | {ms(m.get('connect_p50_ms'))} | {ms(m.get('connect_p99_ms'))} "
                         f"| {fmt((m.get('server_rss_connected_bytes') or 0) / 1048576, '{:.1f}')} | {m['exit_codes']} |")
        lines += ["", "Target: at least 8,000 joins/s (connect, handshake, join and snapshot, every client at once)."]
    elif scenario == "restart":
        lines += ["| run | clients | joins/s | going-away closes | retries | resumed (history / snapshot) | live at end "
                  "| first reopen → last resume s | listening → last resume s | lost | gaps | exit |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for m in ms_rows:
            lines.append(f"| {m['config']} | {fmt(m.get('clients'))} | {fmt(m.get('joins_per_s'))} | {fmt(m.get('restart_closes'))} "
                         f"| {fmt(m.get('reconnect_retries'))} | {fmt(m.get('resumes_history'))} / {fmt(m.get('resumes_snapshot'))} "
                         f"| {fmt(m.get('live_at_end'))} | {fmt(m.get('resumed_all_after_s'), '{:.2f}')} "
                         f"| {fmt(m.get('resumed_after_listening_s'), '{:.2f}')} | {fmt(m.get('lost'))} | {fmt(m.get('gaps'))} | {m['exit_codes']} |")
        lines += ["", "Target: every client resumed within 5 s of the daemon listening again, nothing lost, no gap."]
    elif scenario == "compression":
        lines += ["| run | client offers deflate | delivered/s | p99 ms | lost | server bytes/delivery | bytes vs off | server µs/delivery | µs vs off | exit |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        def base(m):
            kind, variant = m["config"].split("-", 1)
            wanted = "snapshot-plain" if kind == "snapshot" else "off-" + variant
            return next((o for o in ms_rows if o["config"] == wanted), None)
        def row_order(m):
            kind, variant = m["config"].split("-", 1)
            if kind == "snapshot":
                return (0, variant != "plain")
            return (1, variant, {"off": 0, "on": 1, "all": 2}.get(kind, 3))
        for m in sorted(ms_rows, key=row_order):
            lines.append(f"| {m['config']} | {'yes' if m.get('compression') else 'no'} | {fmt(m.get('delivered_per_s'))} | {ms(m.get('latency_p99_ms'))} "
                         f"| {fmt(m.get('lost'))} | {fmt(m.get('server_bytes_per_delivery'))} | {versus(m, base(m), 'server_bytes_per_delivery')} "
                         f"| {fmt(m.get('server_cpu_us_per_delivery'), '{:.2f}')} | {versus(m, base(m), 'server_cpu_us_per_delivery')} | {m['exit_codes']} |")
        lines += ["", "snapshot-plain/deflate: one daemon with `--compression on`; each join (hello, snapshot of 1,000 items, ack) counted, "
                  "joins with and without the extension alternating. off/on/all-NB: 1,000 subscribers × 100 actions/s with N "
                  "padding bytes per action (2000B runs at 20 actions/s); off = `--compression off`; on = `--compression on` (frames under 1,024 bytes stay "
                  "uncompressed); all = `--compression-min-bytes 0`."]
    elif scenario == "viewers":
        shared = next((m for m in ms_rows if m["config"] == "shared"), None)
        quiet = next((m for m in ms_rows if m["config"] == "presence"), None)
        lines += ["| run | delivered/s | p50 ms | p99 ms | lost | gaps | server µs/delivery | vs shared | p99 vs shared | presence frames | reconnects | exit |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for m in ms_rows:
            lines.append(f"| {m['config']} | {fmt(m.get('delivered_per_s'))} | {ms(m.get('latency_p50_ms'))} | {ms(m.get('latency_p99_ms'))} "
                         f"| {fmt(m.get('lost'))} | {fmt(m.get('gaps'))} | {fmt(m.get('server_cpu_us_per_delivery'), '{:.2f}')} "
                         f"| {versus(m, shared, 'server_cpu_us_per_delivery')} | {versus(m, shared, 'latency_p99_ms')} "
                         f"| {fmt(m.get('presence_frames'))} | {fmt(m.get('reconnects'))} | {m['exit_codes']} |")
        churn = next((m for m in ms_rows if m["config"] == "presence-churn50"), None)
        if churn and quiet and churn.get("latency_p99_ms") and quiet.get("latency_p99_ms"):
            lines += ["", f"Room patches' p99 with 50 members leaving and joining per second: {ms(churn['latency_p99_ms'])} ms, "
                      f"without: {ms(quiet['latency_p99_ms'])} ms (**{churn['latency_p99_ms'] / quiet['latency_p99_ms']:.2f}×**)."]
        lines += ["", "shared: `bench`; views10: a per-viewer value changing every turn, 10 distinct views; view-each: one view per "
                  "subscriber; presence: `bench-presence`, every subscriber a member; presence-churn50: the same while 50 "
                  "subscribers per second disconnect and rejoin (a presence remove and add each, to 1,000 members)."]
    elif scenario == "idle":
        lines += ["| run | connections | connect s | RSS before MiB | RSS connected MiB | KiB per connection | server cores idle | exit |",
                  "|---|---|---|---|---|---|---|---|"]
        for m in ms_rows:
            lines.append(f"| {m['config']} | {fmt(m.get('connected'))} | {fmt(m.get('connect_s'), '{:.2f}')} "
                         f"| {fmt((m.get('server_rss_before_bytes') or 0) / 1048576, '{:.1f}')} | {fmt((m.get('server_rss_connected_bytes') or 0) / 1048576, '{:.1f}')} "
                         f"| {fmt((m.get('server_rss_per_connection_bytes') or 0) / 1024, '{:.2f}')} | {fmt(m.get('server_cpu_cores'), '{:.3f}')} | {m['exit_codes']} |")
    else:
        lines += [perf_header, perf_rule] + [perf_row(m) for m in ms_rows]
    if scenario == "churn":
        lines += ["", "| run | reconnects | resumed from history | resumed with snapshot | seq skipped by snapshots | unplanned disconnects |",
                  "|---|---|---|---|---|---|"]
        for m in ms_rows:
            lines.append(f"| {m['config']} | {fmt(m.get('reconnects'))} | {fmt(m.get('resumes_history'))} | {fmt(m.get('resumes_snapshot'))} "
                         f"| {fmt(m.get('skipped_by_snapshot'))} | {fmt(m.get('disconnects'))} |")
    if scenario == "saturation":
        pair = {m["config"]: m for m in ms_rows if m["config"] in ("500-tetherd", "500-packed")}
        climb = [m for m in ms_rows if m["config"] not in pair]
        sustained = [m for m in climb if m["ok"] and (m.get("latency_p99_ms") or 1e9) <= 100
                     and (m.get("delivery_ratio") or 0) >= 0.95 and not m.get("skipped_by_snapshot")]
        best = max(sustained, key=lambda m: m.get("delivered_per_s") or 0, default=None)
        lines += ["", "**Highest sustained delivered rate** (nothing lost, p99 ≤ 100 ms, delivered ≥ 95 % of offered): "
                  + (f"**{best['delivered_per_s']:,.0f} patches/s** at {best['rate']:,.0f} actions/s (p99 {ms(best.get('latency_p99_ms'))} ms)."
                     if best else "none of the rates tried.")]
        if len(pair) == 2 and pair["500-packed"].get("latency_p99_ms") and pair["500-tetherd"].get("latency_p99_ms"):
            t, p = pair["500-tetherd"], pair["500-packed"]
            lines += ["", f"**Against the packed-write limit** (`Benchmarks/packed-broadcaster`: plain libwebsockets in C, one write "
                      f"per connection per flush, no Tether server code), 1,000 subscribers × 500 actions/s, run back to back: "
                      f"p99 tetherd {ms(t['latency_p99_ms'])} ms, packed {ms(p['latency_p99_ms'])} ms, "
                      f"**{t['latency_p99_ms'] / p['latency_p99_ms']:.2f}×** (target ≤ 2×); server µs/delivery "
                      f"{fmt(t.get('server_cpu_us_per_delivery'), '{:.2f}')} vs {fmt(p.get('server_cpu_us_per_delivery'), '{:.2f}')}."]
    lines.append("")

if shutil.which("gnuplot") and (by_scenario.get("fanout") or by_scenario.get("saturation")):
    lines += ["## Plots", ""]
    if by_scenario.get("fanout"):
        lines += ["![latency percentiles against subscribers](latency.png)", ""]
    lines += ["![delivered against offered deliveries per second](throughput.png)", ""]
lines += ["Raw results: `results.jsonl` (one tether-load `--json` line per run); logs in `logs/`.", ""]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines))

# gnuplot data: latency percentiles against subscribers (one line per rate), delivered vs offered.
fan = [m for m in by_scenario.get("fanout", [])]
with open(os.path.join(out, "latency.dat"), "w") as f:
    for rate in sorted({m["rate"] for m in fan}):
        f.write(f'"{rate:.0f} actions/s"\n')
        for m in sorted((m for m in fan if m["rate"] == rate), key=lambda m: m["clients"]):
            f.write(f"{m['clients']:.0f} {m.get('latency_p50_ms') or 'NaN'} {m.get('latency_p99_ms') or 'NaN'} {m.get('latency_p999_ms') or 'NaN'}\n")
        f.write("\n\n")
with open(os.path.join(out, "throughput.dat"), "w") as f:
    for scenario in ["fanout", "saturation"]:
        f.write(f'"{scenario}"\n')
        for m in sorted(by_scenario.get(scenario, []), key=lambda m: m.get("offered_deliveries_per_s") or 0):
            f.write(f"{m.get('offered_deliveries_per_s') or 0} {m.get('delivered_per_s') or 0}\n")
        f.write("\n\n")
EOF

# gnuplot: each plot only when its data exists.
plot() {
    gnuplot 2>>"$out/logs/gnuplot.err" <<EOF || echo "loadtest: gnuplot failed (see $out/logs/gnuplot.err)" >&2
set terminal pngcairo size 900,560 noenhanced
set datafile missing "NaN"
set grid
set key top left
set logscale xy
$1
EOF
}
if command -v gnuplot >/dev/null; then
    if grep -q '^[0-9]' "$out/latency.dat"; then
        plot "set output '$out/latency.png'
set title 'Fan-out latency, one room: p50 solid, p99 dashed, p99.9 dotted'
set xlabel 'subscribers'
set ylabel 'latency (ms)'
stats '$out/latency.dat' nooutput
plot for [i=0:STATS_blocks-1] '$out/latency.dat' index i using 1:2 with linespoints lw 2 lc i+1 title columnheader(1), \\
     for [i=0:STATS_blocks-1] '$out/latency.dat' index i using 1:3 with linespoints dt 2 lc i+1 notitle, \\
     for [i=0:STATS_blocks-1] '$out/latency.dat' index i using 1:4 with linespoints dt 3 lc i+1 notitle"
    fi
    if grep -q '^[0-9]' "$out/throughput.dat"; then
        plot "set output '$out/throughput.png'
set title 'Delivered against offered deliveries per second'
set xlabel 'offered (deliveries/s)'
set ylabel 'delivered (patches/s)'
set format x '%.0s%c'
set format y '%.0s%c'
plot x title 'delivered = offered' with lines dt 2 lc 'gray', \\
     '$out/throughput.dat' index 0 using 1:2 with points pt 7 ps 1.5 title 'fan-out (1 room)', \\
     '$out/throughput.dat' index 1 using 1:2 with linespoints pt 5 lw 2 title 'saturation (1,000 subscribers)'"
    fi
fi

echo "loadtest: report in $out/report.md"
python3 - "$results" <<'EOF'
import json, sys
bad = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in bad if r.get("scenario") != "saturation" and not r.get("ok")]
for r in bad:
    print(f"loadtest: {r.get('scenario')} {r.get('config')} run {r.get('run')} failed: {r.get('failures') or 'exit ' + str(r.get('exit_code'))}")
sys.exit(1 if bad else 0)
EOF
