#!/bin/bash
# Builds gattway_<version>_<arch>.deb for the machine it runs on (arm64 on a Pi, amd64 on a PC).
#
#   deploy/build-deb.sh            # → .build/deb/gattway_<version>_<arch>.deb (path printed last)
#
# Environment:
#   GATTWAY_DEB_OUT         output directory (default: <repo>/.build/deb)
#   GATTWAY_CONFIG_SOURCE   config installed as /etc/gattway/gattway.yaml
#                           (default: deploy/config/gattway.yaml, the commented production example)
#
# Needs: the Swift toolchain, libbluetooth-dev libgpiod-dev libmosquitto-dev pkg-config (to build),
# dpkg-dev (dpkg-shlibdeps) and binutils (strip). The Swift runtime and Foundation are linked into
# the binary (--static-swift-stdlib); libbluetooth, libgpiod and libmosquitto stay shared and become
# Depends: by soname through dpkg-shlibdeps, so a build against libgpiod 1.6 (Debian 12,
# libgpiod.so.2) depends on libgpiod2 and one against libgpiod 2.x (Debian 13 / Raspberry Pi OS
# trixie, libgpiod.so.3) on libgpiod3.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deploy=$repo/deploy
out=${GATTWAY_DEB_OUT:-$repo/.build/deb}
config_source=${GATTWAY_CONFIG_SOURCE:-$deploy/config/gattway.yaml}

fail() { echo "build-deb: $*" >&2; exit 1; }

for tool in swift dpkg-deb dpkg-shlibdeps strip; do
    command -v "$tool" >/dev/null || fail "$tool not found (install: swift toolchain, dpkg-dev, binutils)"
done
[[ -f $config_source ]] || fail "no configuration to package at $config_source"

# 1. The release binary, Swift runtime included.
swift_flags=(-c release --static-swift-stdlib --package-path "$repo")
swift build "${swift_flags[@]}" --product gattway >&2  # stdout carries only the result path
binary=$(swift build "${swift_flags[@]}" --show-bin-path)/gattway

# 2. Version: the executable is the one place that states it.
version=$("$binary" --version)
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || fail "gattway --version printed \"$version\", not a Debian version"
arch=$(dpkg --print-architecture)
package=gattway_${version}_${arch}

# 3. The package tree, every mode set explicitly (the builder's umask must not leak in).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/$package
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/libexec/gattway" \
    "$root/usr/lib/systemd/system" "$root/usr/lib/udev/rules.d" "$root/etc/gattway" \
    "$root/usr/share/doc/gattway" "$root/usr/share/lintian/overrides"
install -m 0755 "$binary" "$root/usr/bin/gattway"
# As dh_strip does: symbols out, .comment/.note out; the Swift metadata sections stay (allocated).
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/gattway"
install -m 0755 "$deploy/libexec/gattway-release-adapter" "$root/usr/libexec/gattway/"
install -m 0644 "$deploy/systemd/gattway.service" "$root/usr/lib/systemd/system/"
install -m 0644 "$repo/udev/60-gattway.rules" "$root/usr/lib/udev/rules.d/"
install -m 0644 "$config_source" "$root/etc/gattway/gattway.yaml"
install -m 0644 "$repo/README.md" "$root/usr/share/doc/gattway/README.md"
install -m 0644 "$deploy/debian/copyright" "$root/usr/share/doc/gattway/copyright"
install -m 0644 "$deploy/debian/lintian-overrides" "$root/usr/share/lintian/overrides/gattway"
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
mkdir -p "$work/shlibs/debian"
printf 'Source: gattway\n\nPackage: gattway\nArchitecture: any\n' > "$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/gattway")
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
