#!/bin/bash
# Builds gattway_<version>_<arch>.deb: for the machine it runs on (arm64 on a Pi, amd64 on a PC),
# or, with --arch arm64 on an x86_64 Debian machine, for a Raspberry Pi (Debian 13 / Raspberry
# Pi OS, arm64), cross-compiled by deploy/cross/build-arm64.sh from Debian's own Swift packages.
#
#   deploy/build-deb.sh               # → .build/deb/gattway_<version>_<arch>.deb (path printed last)
#   deploy/build-deb.sh --arch arm64  # → .build/deb/gattway_<version>_arm64.deb, from x86_64
#
# Environment:
#   GATTWAY_DEB_OUT         output directory (default: <repo>/.build/deb)
#   GATTWAY_CONFIG_SOURCE   config installed as /etc/gattway/gattway.yaml
#                           (default: deploy/config/gattway.yaml, the commented production example)
#
# Needs: natively, the Swift toolchain, libbluetooth-dev libgpiod-dev libmosquitto-dev libyaml-dev
# pkg-config (to build), dpkg-dev (dpkg-shlibdeps) and binutils (strip); for --arch arm64, root,
# debootstrap and qemu-user-static (see deploy/cross/build-arm64.sh), the rest comes from Debian
# inside its cached roots. The Swift runtime and Foundation are linked into the binary
# (--static-swift-stdlib); libyaml, libgpiod and libmosquitto stay shared and become
# Depends: by soname through dpkg-shlibdeps, so a build against libgpiod 1.6 (Debian 12,
# libgpiod.so.2) depends on libgpiod2 and one against libgpiod 2.x (Debian 13 / Raspberry Pi OS
# trixie, libgpiod.so.3) on libgpiod3.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deploy=$repo/deploy
out=${GATTWAY_DEB_OUT:-$repo/.build/deb}
config_source=${GATTWAY_CONFIG_SOURCE:-$deploy/config/gattway.yaml}

fail() { echo "build-deb: $*" >&2; exit 1; }

arch=$(dpkg --print-architecture)
case ${1:-} in
    "") ;;
    --arch)
        [[ ${2:-} == arm64 || ${2:-} == "$arch" ]] || fail "--arch takes arm64 (cross-built) or $arch (native), not \"${2:-}\""
        arch=$2 ;;
    *) fail "unknown argument \"$1\" (usage: deploy/build-deb.sh [--arch arm64])" ;;
esac
cross=false
[[ $arch != "$(dpkg --print-architecture)" ]] && cross=true
if $cross; then
    [[ $(dpkg --print-architecture) == amd64 ]] || fail "--arch arm64 cross-compiles from an amd64 machine"
    tools=(dpkg-deb)
else
    tools=(swift dpkg-deb dpkg-shlibdeps strip)
fi
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || fail "$tool not found (install: swift toolchain, dpkg-dev, binutils)"
done
[[ -f $config_source ]] || fail "no configuration to package at $config_source"

# 1. The release binary, Swift runtime included. A cross-built one runs (for its version, under
# qemu-user) and is stripped and analysed (dpkg-shlibdeps) inside the Debian 13 arm64 sysroot it
# was linked against, whose dpkg database knows the arm64 libraries' packages.
if $cross; then
    binary=$("$deploy/cross/build-arm64.sh")
    sysroot=$("$deploy/cross/build-arm64.sh" --sysroot)
    run_target() { qemu-aarch64-static -L "$sysroot" "$@"; }
    in_sysroot() { chroot "$sysroot" /usr/bin/env -i PATH=/usr/bin:/bin LC_ALL=C.UTF-8 "$@"; }
else
    swift_flags=(-c release --static-swift-stdlib --package-path "$repo")
    swift build "${swift_flags[@]}" --product gattway >&2  # stdout carries only the result path
    binary=$(swift build "${swift_flags[@]}" --show-bin-path)/gattway
    run_target() { "$@"; }
fi

# 2. Version: the executable is the one place that states it.
version=$(run_target "$binary" --version)
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || fail "gattway --version printed \"$version\", not a Debian version"
package=gattway_${version}_${arch}

# 3. The package tree, every mode set explicitly (the builder's umask must not leak in).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/$package
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/libexec/gattway" \
    "$root/usr/lib/systemd/system" "$root/usr/lib/udev/rules.d" "$root/etc/gattway" \
    "$root/usr/share/doc/gattway"
install -m 0755 "$binary" "$root/usr/bin/gattway"
# As dh_strip does: symbols out, .comment/.note out; the Swift metadata sections stay (allocated).
if $cross; then
    staged=$(mktemp -d "$sysroot/tmp/gattway-deb.XXXXXX")
    cp "$root/usr/bin/gattway" "$staged/gattway"
    in_sysroot strip --remove-section=.comment --remove-section=.note "/tmp/${staged##*/}/gattway"
    install -m 0755 "$staged/gattway" "$root/usr/bin/gattway"
else
    strip --remove-section=.comment --remove-section=.note "$root/usr/bin/gattway"
fi
install -m 0755 "$deploy/libexec/gattway-release-adapter" "$root/usr/libexec/gattway/"
install -m 0644 "$deploy/systemd/gattway.service" "$root/usr/lib/systemd/system/"
install -m 0644 "$repo/udev/60-gattway.rules" "$root/usr/lib/udev/rules.d/"
install -m 0644 "$config_source" "$root/etc/gattway/gattway.yaml"
install -m 0644 "$repo/README.md" "$root/usr/share/doc/gattway/README.md"
install -d -m 0755 "$root/usr/share/doc/gattway/docs"
install -m 0644 "$repo"/docs/*.md "$root/usr/share/doc/gattway/docs/"
install -m 0644 "$deploy/debian/copyright" "$root/usr/share/doc/gattway/copyright"
{
    printf 'gattway (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Release %s, built from %s.\n\n' "$version" \
        "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo 'a source tree')"
    printf ' -- gattway maintainers <maintainers@users.noreply.a-seed-6322cae0.example>  %s\n' \
        "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")"
} | gzip -9n > "$root/usr/share/doc/gattway/changelog.gz"
chmod 0644 "$root/usr/share/doc/gattway/changelog.gz"
for script in postinst prerm postrm; do
    install -m 0755 "$deploy/debian/$script" "$root/DEBIAN/$script"
done
install -m 0644 "$deploy/debian/conffiles" "$root/DEBIAN/conffiles"

# 4. Shared-library dependencies by soname. dpkg-shlibdeps wants a debian/control to read.
if $cross; then
    mkdir -p "$staged/debian" "$staged/usr/bin"
    printf 'Source: gattway\n\nPackage: gattway\nArchitecture: any\n' > "$staged/debian/control"
    cp "$root/usr/bin/gattway" "$staged/usr/bin/gattway"
    shlibs=$(in_sysroot /bin/sh -c 'cd "$1" && dpkg-shlibdeps -O usr/bin/gattway' _ "/tmp/${staged##*/}")
    rm -rf "$staged"
else
    mkdir -p "$work/shlibs/debian"
    printf 'Source: gattway\n\nPackage: gattway\nArchitecture: any\n' > "$work/shlibs/debian/control"
    shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/gattway")
fi
shlibs=${shlibs#shlibs:Depends=}
[[ -n $shlibs ]] || fail "dpkg-shlibdeps found no dependencies for usr/bin/gattway"

# 5. Control file and checksums, then the archive.
installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@INSTALLED_SIZE@|$installed_size|" \
    -e "s|@SHLIBS_DEPENDS@|$shlibs|" "$deploy/debian/control.in" > "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' \
    | LC_ALL=C sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$package.deb" >/dev/null
echo "build-deb: Depends: $shlibs" >&2
echo "$out/$package.deb"
