#!/usr/bin/env bash
# The cluster's fault-injection test, long version: Tests/Jepsen/jepsen.py for N minutes (default
# 10) against a debug tetherd ($TETHERD if set; built if missing): 3 nats-server and 3 tetherd on
# loopback, the room's owner killed and paused, NATS servers killed, nodes restarted, then its
# checks (Tests/Jepsen/README.md). Scripts/test.sh runs a short version.
# Usage: Scripts/cluster-chaos.sh [--minutes N] [more jepsen.py options, e.g. --faults pause --seed 7]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
if [ "${1:-}" = "--minutes" ]; then minutes="$2"; shift 2; fi
tetherd="${TETHERD:-.build/debug/tetherd}"
[ -x "$tetherd" ] || swift build --product tetherd
exec /usr/bin/python3 Tests/Jepsen/jepsen.py --tetherd "$tetherd" --minutes "$minutes" "$@"
