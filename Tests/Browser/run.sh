#!/usr/bin/env bash
# The dashboard in headless Chromium (Selenium): against the real tetherd, and against the mock
# web side (support/mock_server.py).
# Needs the Debian packages chromium, chromium-driver, python3-selenium, python3-websockets, tmux
# (Scripts/setup.sh installs them) and, for the real-daemon tests, `swift build` (or set TETHERD
# and TETHER). Screenshots and the load figures land in .build/browser-artifacts/.
#
#   Tests/Browser/run.sh                          # everything
#   Tests/Browser/run.sh test_mock                # one module
#   Tests/Browser/run.sh test_tetherd.DashboardOnTetherd.test_a_page_of_another_origin_cannot_open_a_websocket
set -euo pipefail
cd "$(dirname "$0")"
# Debian's interpreter: the packages above are installed for it, whatever python3 comes first on PATH.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
if (($#)); then
    exec "$python" -m unittest -v "$@"
fi
exec "$python" -m unittest discover -v -s . -p 'test_*.py'
