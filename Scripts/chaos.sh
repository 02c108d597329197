#!/usr/bin/env bash
# The crash test, long version: clients mirror and act while tetherd is killed with SIGKILL and
# restarted again and again; then every acknowledged action must be in the final state, every
# client must have reconnected by itself, every mirror must equal a fresh snapshot, and no
# version may have gone backwards. (Scripts/test.sh runs a short version.)
# Usage: Scripts/chaos.sh [KILLS] [CLIENTS] [PUBLISHERS] [SECONDS_BETWEEN_KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
export CHAOS_KILLS="${1:-10}" CHAOS_CLIENTS="${2:-30}" CHAOS_PUBLISHERS="${3:-5}" CHAOS_SECONDS_BETWEEN_KILLS="${4:-3}"
Scripts/setup.sh debug >/dev/null
swift build --build-tests
swift test --skip-build --filter ChaosTests 2>&1 | grep -E "chaos:|✔|✘|recorded" 
