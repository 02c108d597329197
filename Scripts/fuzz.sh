#!/usr/bin/env bash
# Fuzzes the protocol decoder and JSON Patch apply with libFuzzer (and AddressSanitizer) for a
# bounded time, starting from the committed seed corpus in Fuzz/corpus.
# Usage: Scripts/fuzz.sh [SECONDS]   (default 60; crashes are written to .build-fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out/corpus"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -I "$out")

# Build the modules under test with coverage instrumentation, one module at a time.
build_module() {
    local name="$1"; shift
    swiftc "${flags[@]}" -wmo -module-name "$name" -emit-module -emit-module-path "$out/$name.swiftmodule" \
        -c "$@" -o "$out/$name.o"
}
build_module TetherJSON Sources/TetherJSON/*.swift
build_module TetherProtocol Sources/TetherProtocol/*.swift
swiftc "${flags[@]}" Fuzz/FuzzTarget.swift "$out"/TetherJSON.o "$out"/TetherProtocol.o -o "$out/fuzz-protocol"

# New inputs go to the scratch corpus; the committed seeds are read only.
"$out/fuzz-protocol" -max_total_time="$seconds" -max_len=4096 -timeout=10 -artifact_prefix="$out/" \
    -print_final_stats=1 "$out/corpus" Fuzz/corpus
