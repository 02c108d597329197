#!/usr/bin/env bash
# The cost of JetStream's `sync_interval: always` (docs/PERFORMANCE.md): three nats-server (R3,
# file storage) and one release tetherd on loopback, one room, 10 subscribers; each run on fresh
# servers and stores, the default and `always` alternating. One JSON line per run to OUT.
#
#   Benchmarks/cluster-sync/sync-cost.sh OUT [ROUNDS] [NATS-SERVER]
#   RATE (actions/s, default 200) and PUBS (publishers, default 1) set the load.
# NATS-SERVER must be 2.10 or later (default .tools/nats-current/bin/nats-server, which
# Scripts/setup.sh installs); tetherd and tether-load come from `swift build -c release`.
set -u
cd "$(dirname "$0")/../.."
out=$1; rounds=${2:-3}; natsbin=${3:-.tools/nats-current/bin/nats-server}
new="$(swift build -c release --show-bin-path)"
: > $out
ports() {  # ten free ports, every socket held until all are picked
  python3 -c 'import socket
ss=[socket.socket() for _ in range(10)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))'; }
run_one() { # sync(yes/no) rate publishers
  local sync=$1 rate=$2 pubs=$3 d; d=$(mktemp -d)
  read -r c1 c2 c3 r1 r2 r3 m1 m2 m3 x <<< "$(ports)"
  local routes="nats-route://127.0.0.1:$r1, nats-route://127.0.0.1:$r2, nats-route://127.0.0.1:$r3" pids=()
  local cs=($c1 $c2 $c3) rs=($r1 $r2 $r3) ms=($m1 $m2 $m3)
  for i in 0 1 2; do
    local js="store_dir: \"$d/n$i\""; [ $sync = yes ] && js="$js, sync_interval: always"
    printf 'server_name: n%s\nlisten: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\njetstream { %s }\ncluster { name: t, listen: 127.0.0.1:%s, routes: [%s] }\n' $i ${cs[$i]} ${ms[$i]} "$js" ${rs[$i]} "$routes" > $d/n$i.conf
    $natsbin -c $d/n$i.conf > $d/n$i.log 2>&1 & pids+=($!)
  done
  for i in $(seq 100); do curl -sf "http://127.0.0.1:$m1/healthz?js-enabled-only=true" >/dev/null && curl -sf "http://127.0.0.1:$m1/jsz" | grep -q '"leader"' && break; sleep 0.2; done
  $new/tetherd --port 0 --data $d/data --nats nats://127.0.0.1:$c1,nats://127.0.0.1:$c2,nats://127.0.0.1:$c3 --node t1 > $d/out 2> $d/err & local tpid=$!
  local port=""; for i in $(seq 300); do port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' $d/out | head -1); [ -n "$port" ] && break; sleep 0.1; done
  local line; line=$($new/tether-load --url ws://127.0.0.1:$port --server-pid $tpid --clients 10 --rooms 1 --publishers $pubs --rate $rate --duration 10 --warmup 2 --json 2>$d/load.err | tail -1)
  echo "{\"sync\":\"$sync\",\"rate\":$rate,\"result\":${line:-null}}" >> $out
  kill $tpid; wait $tpid 2>/dev/null; kill ${pids[@]}; wait ${pids[@]} 2>/dev/null; rm -rf $d
}
for r in $(seq $rounds); do
  for sync in no yes; do run_one $sync ${RATE:-200} ${PUBS:-1}; done
done
