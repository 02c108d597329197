#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit, property and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/setup.sh debug
swift build --build-tests
swift test --skip-build
