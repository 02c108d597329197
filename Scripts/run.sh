#!/usr/bin/env bash
# Sets up (Debian packages if missing, release build) and runs tetherd on 127.0.0.1:8080 with
# its embedded defaults. Extra arguments go to tetherd (see `tetherd --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/setup.sh release
exec "$(swift build -c release --show-bin-path)/tetherd" "$@"
