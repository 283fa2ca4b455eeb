#!/usr/bin/env bash
# Cross-compiles the gattway release binary for arm64 (Raspberry Pi OS / Debian 13) on an
# x86_64 Debian machine, and prints its path (the only line on stdout).
#
#   deploy/cross/build-arm64.sh            # → .../arm64/build/release/gattway
#   deploy/cross/build-arm64.sh --sysroot  # prints the Debian 13 arm64 root the binary links
#                                          # against (for qemu-aarch64 -L), making it if needed
#   deploy/cross/build-arm64.sh --base     # prints the pristine Debian 13 arm64 root (systemd,
#                                          # udev) that install tests copy, making it if needed
#
# How: Debian's own Swift packages, no toolchain from anywhere else. The compiler is Debian
# unstable's `swiftlang` (amd64), run inside a debootstrapped unstable root because it needs
# unstable's glibc; the target is a Swift SDK made of a debootstrapped Debian 13 arm64 root
# (glibc 2.41, libgpiod 2.x, libmosquitto, libbluetooth, libyaml -dev packages installed with apt
# under qemu-user) plus the arm64 Swift runtime and modules of the same `swiftlang` version
# (extracted from its arm64 package). The binary links the Swift runtime statically, so a Pi
# needs no Swift packages; everything it links dynamically comes from Debian 13.
#
# Everything is cached under ${GATTWAY_CACHE:-$HOME/.cache/gattway}/arm64 and remade when the
# package lists below change. The first run downloads about 1.5 GB and takes a few minutes
# (debootstrap of the two roots, the second under qemu-user); later runs only compile.
#
# Needs root (debootstrap, chroot, mounts), debootstrap, qemu-user-static with binfmt_misc
# (binfmt-support), and the Swift package mirror at /opt/swift-packages (or SWIFT_PACKAGES).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}/arm64
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages_mirror=${SWIFT_PACKAGES:-/opt/swift-packages}
toolchain=$cache/toolchain   # Debian unstable, amd64, with swiftlang
sysroot=$cache/sysroot       # Debian 13, arm64, with the -dev packages and the Swift runtime
base=$cache/base             # Debian 13, arm64, pristine: what a fresh Pi userland starts from
bundle=$cache/sdk/gattway-debian13-arm64.artifactbundle
scratch=$cache/build

say() { echo "build-arm64: $*" >&2; }
fail() { echo "build-arm64: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || fail "needs root (debootstrap, chroot, mounts); run it with sudo"
for tool in debootstrap chroot unshare flock git tar dpkg-deb; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install debootstrap)"
done
[[ -x /usr/bin/qemu-aarch64-static ]] \
    || fail "qemu-user-static is not installed (apt-get install qemu-user-static binfmt-support)"
[[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
if [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] && command -v update-binfmts >/dev/null; then
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
    || fail "arm64 binaries cannot run here: no qemu-aarch64 binfmt_misc entry with the F flag (apt-get install qemu-user-static binfmt-support)"
[[ -d $packages_mirror ]] || fail "no Swift package mirror at $packages_mirror"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

apt_options=(-o Acquire::Check-Valid-Until=false -o Acquire::Retries=3)
# inside ROOT COMMAND...: a command inside ROOT with /proc and /dev, in a private mount namespace.
inside() {
    local root=$1; shift
    unshare --mount --propagation private -- /bin/bash -c '
        root=$1; shift
        mount -t proc proc "$root/proc"; mount --bind /dev "$root/dev"
        exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' _ "$root" "$@"
}
# make_root DIR STAMP_TEXT DEBOOTSTRAP_ARGS...: debootstraps DIR once per STAMP_TEXT.
make_root() {
    local dir=$1 stamp_text=$2; shift 2
    [[ -f $dir/.gattway-complete && $(cat "$dir/.gattway-complete") == "$stamp_text" ]] && return 0
    say "making $dir (debootstrap $*)"
    rm -rf "$dir.partial" "$dir"
    debootstrap --variant=minbase "$@" "$dir.partial" "$mirror" >"$cache/debootstrap.log" 2>&1 \
        || { tail -n 20 "$cache/debootstrap.log" >&2; fail "debootstrap failed (see $cache/debootstrap.log)"; }
    rm -f "$dir.partial"/var/cache/apt/archives/*.deb
    echo "$stamp_text" >"$dir.partial/.gattway-complete"
    mv "$dir.partial" "$dir"
}

# 1. The compiler: Debian unstable's swiftlang in an unstable amd64 root.
toolchain_packages="swiftlang git pkg-config libc6-dev"
make_root "$toolchain" "sid amd64 $toolchain_packages" --arch amd64 --include=ca-certificates sid
if ! inside "$toolchain" swift --version >/dev/null 2>&1; then
    say "installing $toolchain_packages into the toolchain root"
    cp -L /etc/resolv.conf "$toolchain/etc/resolv.conf"
    inside "$toolchain" apt-get "${apt_options[@]}" update -qq >&2
    inside "$toolchain" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends $toolchain_packages >&2 \
        || fail "cannot install swiftlang from Debian unstable into $toolchain"
    rm -f "$toolchain"/var/cache/apt/archives/*.deb
fi
swift_version=$(inside "$toolchain" dpkg-query -W -f='${Version}' swiftlang)

# 2. The target: Debian 13 arm64 (pristine base, and the sysroot made from it).
make_root "$base" "trixie arm64 systemd udev" --arch arm64 --include=ca-certificates,systemd,udev trixie
sysroot_packages="libgpiod-dev libmosquitto-dev libbluetooth-dev libyaml-dev libc6-dev libgcc-14-dev libstdc++-14-dev dpkg-dev"
sysroot_stamp="$sysroot_packages swiftlang $swift_version"
if [[ ! -f $sysroot/.gattway-complete || $(cat "$sysroot/.gattway-complete") != "$sysroot_stamp" ]]; then
    say "making the arm64 sysroot: $sysroot_packages, and the arm64 Swift runtime $swift_version"
    rm -rf "$sysroot.partial" "$sysroot"
    cp -a "$base" "$sysroot.partial"
    cp -L /etc/resolv.conf "$sysroot.partial/etc/resolv.conf"
    cp -L /etc/resolv.conf "$toolchain/etc/resolv.conf"
    inside "$sysroot.partial" apt-get "${apt_options[@]}" update -qq >&2
    inside "$sysroot.partial" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends $sysroot_packages >&2 \
        || fail "cannot install the -dev packages into the arm64 sysroot"
    rm -f "$sysroot.partial"/var/cache/apt/archives/*.deb
    # The arm64 package of the very swiftlang version that compiles: its modules and runtime.
    inside "$toolchain" /bin/sh -c "dpkg --add-architecture arm64 && apt-get ${apt_options[*]} update -qq \
        && cd /tmp && rm -f swiftlang_*_arm64.deb && apt-get ${apt_options[*]} download -qq swiftlang:arm64=$swift_version" >&2 \
        || fail "cannot download swiftlang:arm64 $swift_version from Debian unstable"
    unpacked=$(mktemp -d)
    dpkg-deb --fsys-tarfile "$toolchain"/tmp/swiftlang_*_arm64.deb \
        | tar -x -C "$unpacked" ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang
    rm -f "$toolchain"/tmp/swiftlang_*_arm64.deb
    # The standard layout under the sysroot; what only the compiler host uses stays out.
    for part in swift_static clang; do mv "$unpacked/usr/libexec/swift/lib/$part" "$sysroot.partial/usr/lib/$part"; done
    rm -rf "$unpacked"/usr/libexec/swift/lib/swift/{embedded,host,FrameworkABIBaseline,migrator}
    mv "$unpacked/usr/libexec/swift/lib/swift" "$sysroot.partial/usr/lib/swift"
    rm -rf "$unpacked"
    echo "$sysroot_stamp" >"$sysroot.partial/.gattway-complete"
    mv "$sysroot.partial" "$sysroot"
fi
case ${1:-} in
    --sysroot) echo "$sysroot"; exit 0 ;;
    --base) echo "$base"; exit 0 ;;
    "") ;;
    *) fail "unknown argument \"$1\" (usage: build-arm64.sh [--sysroot | --base])" ;;
esac

# 3. The Swift SDK: the sysroot, its Swift resources, and lld.
mkdir -p "$bundle/sdk/sysroot"
cat >"$bundle/info.json" <<'EOF'
{"schemaVersion": "1.0", "artifacts": {"gattway-debian13-arm64": {"type": "swiftSDK", "version": "1",
 "variants": [{"path": "sdk", "supportedTriples": ["x86_64-unknown-linux-gnu", "x86_64-pc-linux-gnu"]}]}}}
EOF
cat >"$bundle/sdk/swift-sdk.json" <<'EOF'
{"schemaVersion": "4.0", "targetTriples": {"aarch64-unknown-linux-gnu": {"sdkRootPath": "sysroot",
 "swiftResourcesPath": "sysroot/usr/lib/swift", "swiftStaticResourcesPath": "sysroot/usr/lib/swift_static",
 "toolsetPaths": ["toolset.json"]}}}
EOF
cat >"$bundle/sdk/toolset.json" <<'EOF'
{"schemaVersion": "1.0", "swiftCompiler": {"extraCLIOptions": ["-use-ld=lld"]}}
EOF

# 4. The build, inside the toolchain root: the source copied fresh (what git knows), the build
# directory and the package mirror bound in, git resolving github.com to the mirror as here.
: >"$toolchain/etc/gitconfig"
while read -r key value; do
    git config --file "$toolchain/etc/gitconfig" --add "$key" "$value"
done < <(git config --system --get-regexp '^url\..*\.insteadof$' || true)
mkdir -p "$scratch" "$toolchain/sdk" "$toolchain/build" "$toolchain$packages_mirror"
rm -rf "$toolchain/src" && mkdir -p "$toolchain/src/gattway"
git -C "$repo" ls-files -z --cached --others --exclude-standard \
    | (cd "$repo" && tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null) \
    | tar -xf - -C "$toolchain/src/gattway"
say "compiling with Debian's swiftlang $swift_version for aarch64-unknown-linux-gnu (Debian 13)"
started=$SECONDS
unshare --mount --propagation private -- /bin/bash -c '
    set -e
    toolchain=$1 cache_sdk=$2 sysroot=$3 scratch=$4 mirror=$5
    mount -t proc proc "$toolchain/proc"; mount --bind /dev "$toolchain/dev"
    mount --bind "$cache_sdk" "$toolchain/sdk"
    mount --bind "$sysroot" "$toolchain/sdk/gattway-debian13-arm64.artifactbundle/sdk/sysroot"
    mount --bind "$scratch" "$toolchain/build"
    mount --bind "$mirror" "$toolchain$mirror"; mount -o remount,bind,ro "$toolchain$mirror"
    exec chroot "$toolchain" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        PKG_CONFIG_SYSROOT_DIR=/sdk/gattway-debian13-arm64.artifactbundle/sdk/sysroot \
        PKG_CONFIG_PATH=/sdk/gattway-debian13-arm64.artifactbundle/sdk/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sdk/gattway-debian13-arm64.artifactbundle/sdk/sysroot/usr/share/pkgconfig \
        /bin/sh -c "cd /src/gattway && swift build -c release --static-swift-stdlib \
            --swift-sdks-path /sdk --swift-sdk gattway-debian13-arm64 --scratch-path /build --product gattway"
' _ "$toolchain" "$cache/sdk" "$sysroot" "$scratch" "$packages_mirror" >"$cache/build.log" 2>&1 \
    || { tail -n 40 "$cache/build.log" >&2; fail "the arm64 build failed (see $cache/build.log)"; }
say "compiled in $((SECONDS - started)) s"
binary=$scratch/release/gattway
[[ -x $binary ]] || fail "the build reported success but left no $binary"
echo "$binary"
