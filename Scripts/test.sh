#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit and property tests, in-process server tests,
# end-to-end tests against the real daemon (the terminal client under tmux, a Python client, a
# NATS cluster), tether.js under Node, the dashboard in headless Chromium, the Debian package,
# the hostile-input and RFC 6455 conformance suites against the release and AddressSanitizer
# builds of tetherd, and a bounded fuzzing run.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/setup.sh debug

echo "== unit, property and end-to-end tests"
swift build --build-tests
swift test --skip-build --skip 'EndToEndTests\.|TetherNATSTests\.|TetherTransportTests\.'
# The transport's own tests one at a time: lws keeps OpenSSL's per-connection index in one
# process-wide variable and renews it with each context's global TLS init, so a context made in
# one test while another test's TLS handshake runs makes that handshake fail ("can't get wsi
# from ssl privdata"). tetherd and tether make their contexts before any connection.
swift test --skip-build --no-parallel --filter 'TetherTransportTests\.'
echo "== the in-process server suites again, every TestServer on 3 socket shards"
TETHER_TEST_SHARDS=3 swift test --skip-build --filter 'TetherServerTests\.|TetherClientTests\.|TerminalClientTests\.|TetherDemosTests\.'
# The suites that start daemons and NATS clusters measure latency, kill processes and wait on
# timeouts: one at a time, so two cores shared by dozens of daemons don't turn slow into failed.
# Daemons run with the default socket threads (one per core), then once more with one.
swift test --skip-build --no-parallel --filter 'EndToEndTests\.|TetherNATSTests\.'
echo "== the end-to-end tests again, every tetherd on one socket thread (--io-threads 1)"
TETHERD_IO_THREADS=1 swift test --skip-build --no-parallel --filter 'EndToEndTests\.'
# Debian's nats-server 2.9.10 ran the NATS tests above; Scripts/setup.sh installed a current one.
nats_current="$PWD/.tools/nats-current/bin/nats-server"
echo "== the NATS tests and the cluster end to end again, against nats-server $("$nats_current" --version | sed 's/.*v//') (sync_interval: always)"
TETHER_NATS_SERVER="$nats_current" swift test --skip-build --no-parallel \
    --filter 'TetherNATSTests\.|EndToEndTests\.(ClusterTests|NATSDurabilityCheckTests)'

echo "== fault injection on a 3-node cluster (Tests/Jepsen), Debian's nats-server"
/usr/bin/python3 Tests/Jepsen/jepsen.py --tetherd .build/debug/tetherd --seconds 150
echo "== fault injection again, the current nats-server with sync_interval: always"
/usr/bin/python3 Tests/Jepsen/jepsen.py --tetherd .build/debug/tetherd --seconds 120 --nats-server "$nats_current"

echo "== Examples/hello-tether as a package of its own: its manifest resolves against this checkout's products"
swift package --package-path Examples/hello-tether --scratch-path .build/hello-tether show-dependencies >/dev/null

echo "== tether.js and the dashboard's functions under Node"
node --experimental-websocket --test Tests/Web/

echo "== the dashboard in headless Chromium (Selenium)"
Tests/Browser/run.sh

echo "== Debian package: release build, dpkg-deb, lintian, systemd-analyze; installed, run, removed"
Scripts/package.sh
TETHER_DEB="$PWD/$(ls -t dist/tether_*_amd64.deb | head -1)" swift test --skip-build --filter DebianPackageTests
echo "== RFC 6455 conformance against the release tetherd package.sh built"
TETHERD="$PWD/.build/release/tetherd" swift test --skip-build --filter WebSocketConformanceTests

echo "== Scripts/install.sh into a temporary prefix: tetherd, tether and tether-load installed and running"
# --no-build: package.sh's release build is in the same folder, linked with --static-swift-stdlib;
# install.sh's own build (run.sh's flags, without it) would compile everything again.
(
    prefix="$(mktemp -d)"
    trap 'rm -rf "$prefix"' EXIT
    Scripts/install.sh --no-build --prefix "$prefix"
    for program in tetherd tether tether-load; do
        [ -x "$prefix/bin/$program" ] || { echo "test.sh: install.sh did not install $program" >&2; exit 1; }
    done
    version="$("$prefix/bin/tetherd" --version)"
    [ -n "$version" ] || { echo "test.sh: the installed tetherd printed no version" >&2; exit 1; }
    "$prefix/bin/tether" --help >/dev/null
    "$prefix/bin/tether-load" --help >/dev/null
    echo "installed tetherd $version, tether and tether-load run"
)

echo "== hostile input and RFC 6455 conformance against tetherd built with AddressSanitizer"
swift build --sanitize=address --scratch-path .build-asan --product tetherd
TETHERD="$(swift build --sanitize=address --scratch-path .build-asan --show-bin-path)/tetherd" \
    swift test --skip-build --filter "HostileInputTests|BadInputTests|WebSocketConformanceTests"

echo "== fuzzing the protocol decoder and JSON Patch apply (${FUZZ_SECONDS:-30} s)"
Scripts/fuzz.sh "${FUZZ_SECONDS:-30}" 2>&1 | tail -4
