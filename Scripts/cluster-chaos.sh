#!/usr/bin/env bash
# The cluster's crash test, long version: 3 nats-server and 3 tetherd nodes on loopback; clients
# on every node mirror and act while random tetherd nodes are killed with SIGKILL and started
# again; then it prints kills survived, acknowledged actions checked, lost (must be 0), gaps and
# forks (must be 0). (Scripts/test.sh runs a short version.)
# Usage: Scripts/cluster-chaos.sh [KILLS] [CLIENTS] [SECONDS_BETWEEN_KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
export CLUSTER_CHAOS_KILLS="${1:-10}" CLUSTER_CHAOS_CLIENTS="${2:-12}" CLUSTER_CHAOS_SECONDS_BETWEEN_KILLS="${3:-4}"
Scripts/setup.sh debug >/dev/null
swift build --build-tests
swift test --skip-build --filter ClusterChaosTests 2>&1 | grep -E "cluster chaos:|✔|✘|recorded"
