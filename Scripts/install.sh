#!/usr/bin/env bash
# Puts tetherd, tether and tether-load on your PATH: builds them in release mode (the build
# Scripts/run.sh makes, so after it nothing is compiled again) and copies them into PREFIX/bin.
#
# Usage: Scripts/install.sh [--prefix DIR] [--no-build]
#   --prefix DIR   install into DIR/bin (default: $HOME/.local, i.e. ~/.local/bin)
#   --no-build     install the release build as it is (after Scripts/package.sh, whose build is
#                  linked with --static-swift-stdlib: building here would compile everything again)
#
# The programs use the Swift toolchain's runtime libraries; for a machine without the toolchain,
# use the Debian package instead (Scripts/package.sh, docs/OPERATIONS.md).
set -euo pipefail
cd "$(dirname "$0")/.."

usage_error() { echo "install.sh: $1 (see --help)" >&2; exit 64; }

prefix="${HOME:?install.sh: HOME is not set; give --prefix DIR}/.local"
build=1
while (($#)); do
    case "$1" in
        --prefix)
            (($# >= 2)) || usage_error "--prefix needs a directory"
            [ -n "$2" ] || usage_error "--prefix needs a directory"
            prefix="$2"; shift ;;
        --prefix=*)
            prefix="${1#--prefix=}"
            [ -n "$prefix" ] || usage_error "--prefix needs a directory" ;;
        --no-build) build=0 ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage_error "unknown argument $1" ;;
    esac
    shift
done

products=(tetherd tether tether-load)
if ((build)); then
    for product in "${products[@]}"; do
        echo "install: building $product (release)"
        swift build -c release --product "$product"
    done
fi
bin="$(swift build -c release --show-bin-path)"
for product in "${products[@]}"; do
    [ -x "$bin/$product" ] || { echo "install.sh: $bin/$product is missing; run without --no-build" >&2; exit 1; }
done

destination="$prefix/bin"
mkdir -p "$destination"
for product in "${products[@]}"; do
    # Copy to a temporary name, then rename: a running tetherd keeps its old file.
    install -m 0755 "$bin/$product" "$destination/.$product.installing"
    mv -f "$destination/.$product.installing" "$destination/$product"
    echo "installed $destination/$product"
done

destination="$(cd "$destination" && pwd -P)"
on_path=0
IFS=: read -r -a path_entries <<< "${PATH:-}"
for entry in "${path_entries[@]}"; do
    [ -n "$entry" ] && [ -d "$entry" ] || continue
    if [ "$(cd "$entry" && pwd -P)" = "$destination" ]; then on_path=1; break; fi
done
if ((on_path)); then
    echo "tetherd, tether and tether-load are on your PATH: try tetherd --help"
else
    echo "install.sh: warning: $destination is not on your PATH; add it, e.g. in ~/.profile:" >&2
    echo "  export PATH=\"$destination:\$PATH\"" >&2
fi
