#!/usr/bin/env bash
# Builds the Debian package dist/tether_VERSION_amd64.deb from the release build: tetherd as a
# systemd service (user tether, data in /var/lib/tether, settings in /etc/tether/tetherd.yaml),
# the terminal client tether and the load generator tether-load. The Swift runtime is linked
# statically (--static-swift-stdlib), so the package needs no Swift toolchain; its Depends are
# computed by dpkg-shlibdeps. Then lintian (no errors allowed) and systemd-analyze verify.
#
# Usage: Scripts/package.sh [--no-build]    (--no-build packages the existing release build)
# Sources of the package: Packaging/debian/. Decisions: docs/OPERATIONS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
for argument in "$@"; do
    case "$argument" in
        --no-build) build=0 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument $argument (see --help)" >&2; exit 64 ;;
    esac
done

for tool in dpkg-deb dpkg-shlibdeps fakeroot strip gzip; do
    command -v "$tool" >/dev/null || { echo "package.sh: $tool is missing; run Scripts/setup.sh" >&2; exit 69; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

products=(tetherd tether tether-load)
swift_flags=(-c release --static-swift-stdlib)
if ((build)); then
    for product in "${products[@]}"; do
        echo "package: building $product (release, static Swift runtime)"
        if ! swift build "${swift_flags[@]}" --product "$product" > "$work/build.log" 2>&1; then
            grep -E "error:" -A3 "$work/build.log" | head -40 >&2
            echo "package.sh: the release build of $product failed" >&2
            exit 1
        fi
        tail -1 "$work/build.log"
    done
fi
bin="$(swift build "${swift_flags[@]}" --show-bin-path)"
for product in "${products[@]}"; do
    [ -x "$bin/$product" ] || { echo "package.sh: $bin/$product is missing (build failed?)" >&2; exit 1; }
done

version="$("$bin/tetherd" --version)"
changelog_version="$(sed -n '1s/^tether (\([^)]*\)).*/\1/p' Packaging/debian/changelog)"
if [ "$version" != "$changelog_version" ]; then
    echo "package.sh: tetherd is version $version but Packaging/debian/changelog starts with $changelog_version; add an entry" >&2
    exit 1
fi

stage="$work/tether"
mkdir -p "$stage/DEBIAN"

# Programs, stripped.
for product in "${products[@]}"; do
    install -D -m 0755 "$bin/$product" "$stage/usr/bin/$product"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/$product"
done

# Settings: generated from the option table (tetherd sample-config), so every setting and
# default shown is the code's; the packaged data directory is set.
install -d -m 0755 "$stage/etc/tether"
"$bin/tetherd" sample-config --data /var/lib/tether > "$stage/etc/tether/tetherd.yaml"
chmod 0644 "$stage/etc/tether/tetherd.yaml"

install -D -m 0644 Packaging/debian/tetherd.service "$stage/lib/systemd/system/tetherd.service"

# Documentation: the README, the operations guide, the protocol; the Debian changelog and
# copyright; manual pages made from each program's --help.
doc="$stage/usr/share/doc/tether"
install -d -m 0755 "$doc"
for file in README.md docs/OPERATIONS.md docs/PROTOCOL.md; do
    gzip -9n < "$file" > "$doc/$(basename "$file").gz"
done
gzip -9n < Packaging/debian/changelog > "$doc/changelog.gz"
install -m 0644 Packaging/debian/copyright "$doc/copyright"
chmod 0644 "$doc"/*

# Manual pages made from each program's --help (Scripts/manpage.sh).
install -d -m 0755 "$stage/usr/share/man/man1" "$stage/usr/share/man/man8"
manpage() { # name section summary
    Scripts/manpage.sh "$bin/$1" "$2" "$3" "$version" | gzip -9n > "$stage/usr/share/man/man$2/$1.$2.gz"
}
manpage tetherd 8 "Tether server daemon: MVVM ViewModels over WebSockets"
manpage tether 1 "Tether terminal client"
manpage tether-load 1 "Tether load generator"
chmod 0644 "$stage"/usr/share/man/man*/*

# The lintian tag that stays, with the reason (Packaging/debian/lintian-overrides).
install -D -m 0644 Packaging/debian/lintian-overrides "$stage/usr/share/lintian/overrides/tether"

# Maintainer scripts and conffiles.
install -m 0755 Packaging/debian/postinst Packaging/debian/prerm Packaging/debian/postrm "$stage/DEBIAN/"
install -m 0644 Packaging/debian/conffiles "$stage/DEBIAN/conffiles"

# Depends: what the programs link against, as dpkg-shlibdeps finds it (it wants a
# debian/control beside it).
mkdir -p "$work/shlibs/debian"
printf 'Source: tether\n\nPackage: tether\nArchitecture: amd64\n' > "$work/shlibs/debian/control"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O "${products[@]/#/-e$stage/usr/bin/}" 2>"$work/shlibdeps.err" \
    | sed -n 's/^shlibs:Depends=//p')" || { cat "$work/shlibdeps.err" >&2; exit 1; }
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; cat "$work/shlibdeps.err" >&2; exit 1; }
if grep -q "/opt/swift\|libswift" <<<"$depends"; then
    echo "package.sh: the programs depend on the Swift toolchain's libraries: $depends" >&2
    exit 1
fi

(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/md5sums"
installed_size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@INSTALLED_SIZE@/$installed_size/" -e "s/@DEPENDS@/$depends/" \
    Packaging/debian/control.in > "$stage/DEBIAN/control"

mkdir -p dist
deb="dist/tether_${version}_amd64.deb"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "package: $deb ($(du -h "$deb" | cut -f1)); Depends: $depends, adduser"

if command -v lintian >/dev/null; then
    # Every tag is printed (overridden ones as O:, with the reason in the override file); any
    # error fails the build. dist/lintian.txt keeps the list.
    echo "package: lintian"
    status=0
    lintian --fail-on none --show-overrides "$deb" > dist/lintian.txt 2>&1 || status=$?
    grep -v "^running with root privileges" dist/lintian.txt | sed 's/^/  /' || true
    if ((status)) || grep -q "^E:" dist/lintian.txt; then echo "package.sh: lintian reports errors" >&2; exit 1; fi
else
    echo "package: lintian is not installed (Scripts/setup.sh installs it); not checked" >&2
fi

if command -v systemd-analyze >/dev/null; then
    # The unit names /usr/bin/tetherd, which exists only once installed: check the unit with the
    # staged program in its place here (the package test verifies the installed unit as is).
    echo "package: systemd-analyze verify"
    sed "s|/usr/bin/tetherd|$stage/usr/bin/tetherd|g" "$stage/lib/systemd/system/tetherd.service" > "$work/tetherd.service"
    systemd-analyze verify --man=no "$work/tetherd.service"
fi
