#!/usr/bin/env bash
# Proves the second userland: gattway builds and passes its unit tests on Debian 13 (trixie,
# libgpiod 2.x, what current Raspberry Pi OS ships) as well as on this Debian 12 machine.
#
# A trixie root is made once with debootstrap from deb.debian.org and kept in the cache
# (${GATTWAY_CACHE:-$HOME/.cache/gattway}/debian13-root); it is rebuilt when incomplete or when the
# package list below changes. This machine's Swift toolchain (/opt/swift) and Swift package mirror
# (/opt/swift-packages, reached through git's url.insteadOf) are bind-mounted into it, the source
# tree is copied in, and `swift build` + `swift test` run inside with GATTWAY_UNIT_ONLY=1 (tests
# needing Bumble or mosquitto skip themselves).
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
# Environment: GATTWAY_CACHE (cache directory), GATTWAY_DEBIAN_MIRROR (default deb.debian.org),
# GATTWAY_D13_CLEAN=1 (wipe the cached build directory first), SWIFT_TOOLCHAIN (default /opt/swift),
# SWIFT_PACKAGES (default /opt/swift-packages).
set -euo pipefail

readonly PASS=0 FAIL=1 SKIP=77
readonly SUITE=debian13
say() { echo "[$SUITE] $*"; }
skip() { echo "[$SUITE] SKIPPED: $*"; exit "$SKIP"; }
fail() { echo "[$SUITE] FAILED: $*"; exit "$FAIL"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
toolchain=${SWIFT_TOOLCHAIN:-/opt/swift}
packages_mirror=${SWIFT_PACKAGES:-/opt/swift-packages}
root=$cache/debian13-root
build_cache=$cache/debian13-build

# What the build needs inside: the three C libraries' -dev packages (libgpiod-dev is 2.x on
# trixie), pkg-config, git for package resolution, a C/C++ runtime and headers for clang
# (build-essential), and the shared libraries the toolchain's own binaries link
# (swift-package: libcurl, libxml2, libsqlite3, libncurses; lld: libxml2).
packages=(
    libgpiod-dev libbluetooth-dev libmosquitto-dev libyaml-dev pkg-config git build-essential
    libcurl4t64 libxml2 libsqlite3-0 libncurses6 libuuid1 zlib1g-dev ca-certificates
)
stamp_text="trixie ${packages[*]}"

# --- Preconditions -------------------------------------------------------------------------
if [[ $EUID -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        exec sudo -n GATTWAY_CACHE="$cache" GATTWAY_DEBIAN_MIRROR="$mirror" \
            GATTWAY_D13_CLEAN="${GATTWAY_D13_CLEAN:-}" SWIFT_TOOLCHAIN="$toolchain" \
            SWIFT_PACKAGES="$packages_mirror" "$0" "$@"
    fi
    skip "needs root (debootstrap, chroot, mount) and passwordless sudo is not available"
fi
for tool in debootstrap chroot unshare mount flock git tar; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed (apt-get install debootstrap)"
done
[[ -x $toolchain/usr/bin/swift ]] || skip "no Swift toolchain at $toolchain"
[[ -d $packages_mirror ]] || skip "no Swift package mirror at $packages_mirror"

# All mounts live in a private mount namespace: they vanish when this script ends however it
# ends. The EXIT trap below still unmounts them explicitly, in reverse order.
if [[ ${GATTWAY_D13_IN_NAMESPACE:-} != 1 ]]; then
    GATTWAY_D13_IN_NAMESPACE=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

mounted=()
cleanup() {
    local status=$?
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bind() { # bind SOURCE TARGET [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    mounted+=("$2")
    if [[ ${3:-} == ro ]]; then mount -o remount,bind,ro "$2"; fi
}

started=$SECONDS

# --- The cached trixie root -----------------------------------------------------------------
# One run at a time per cache: a second one waits here instead of rebuilding the root under it.
mkdir -p "$cache"
exec 9>"$cache/debian13.lock"
flock 9
stamp=$root/.gattway-root-complete
if [[ ! -f $stamp || $(cat "$stamp") != "$stamp_text" ]]; then
    say "making the Debian 13 root in $root (debootstrap from $mirror; a few minutes, once)"
    mkdir -p "$cache"
    rm -rf "$root.partial" "$root"
    include=$(IFS=,; echo "${packages[*]}")
    if ! debootstrap --variant=minbase --include="$include" trixie "$root.partial" "$mirror" \
        >"$cache/debian13-debootstrap.log" 2>&1; then
        tail -n 20 "$cache/debian13-debootstrap.log"
        if ! getent hosts "$(echo "$mirror" | sed -E 's#^[a-z]+://([^/]+).*#\1#')" >/dev/null; then
            skip "cannot reach $mirror to make the Debian 13 root (see $cache/debian13-debootstrap.log)"
        fi
        fail "debootstrap failed (see $cache/debian13-debootstrap.log)"
    fi
    rm -rf "$root.partial/var/cache/apt/archives/"*.deb
    echo "$stamp_text" >"$root.partial/.gattway-root-complete"
    mv "$root.partial" "$root"
    say "root ready after $((SECONDS - started)) s"
fi

# git inside resolves https://github.com/... to the local mirror, exactly as on this machine.
: >"$root/etc/gitconfig"
while read -r key value; do
    git config --file "$root/etc/gitconfig" --add "$key" "$value"
done < <(git config --system --get-regexp '^url\..*\.insteadof$' || true)

# --- Mounts ---------------------------------------------------------------------------------
# The build directory is kept in the cache so a second run is incremental; the source is copied
# fresh (only files git knows about) so nothing from this machine's .build leaks in.
[[ ${GATTWAY_D13_CLEAN:-} == 1 ]] && rm -rf "$build_cache"
mkdir -p "$build_cache"
mount -t proc proc "$root/proc"; mounted+=("$root/proc")
bind /dev "$root/dev"
# A bind of /dev does not carry the mounts below it; the serial transport's tests need ptys.
mountpoint -q /dev/pts && bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o size=1g tmpfs "$root/tmp"; mounted+=("$root/tmp")
bind "$toolchain" "$root/opt/swift" ro
bind "$packages_mirror" "$root$packages_mirror" ro
bind "$build_cache" "$root/tmp/build-d13"
mkdir -p "$root/tmp/src/gattway"
git -C "$repo" ls-files -z --cached --others --exclude-standard -x .venv -x .build \
    | (cd "$repo" && tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null) \
    | tar -xf - -C "$root/tmp/src/gattway"

# --- Build and test inside ------------------------------------------------------------------
say "building and testing inside Debian $(cat "$root/etc/debian_version")"
set +e
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GATTWAY_UNIT_ONLY=1 /bin/bash -c '
    set -euo pipefail
    cd /tmp/src/gattway
    gpiod_version=$(pkg-config --modversion libgpiod)
    echo "[debian13] libgpiod (pkg-config --modversion libgpiod): $gpiod_version"
    echo "[debian13] $(swift --version 2>&1 | head -n 1)"
    case $gpiod_version in 2.*) ;; *) echo "[debian13] expected libgpiod 2.x"; exit 1 ;; esac
    # The compiler output goes to a log; its tail is shown when a build fails.
    build() {
        local what=$1
        shift
        local t0=$SECONDS
        if ! swift build --scratch-path /tmp/build-d13 "$@" >/tmp/build-d13/build.log 2>&1; then
            tail -n 60 /tmp/build-d13/build.log
            echo "[debian13] building $what failed"
            exit 1
        fi
        echo "[debian13] $what built in $((SECONDS - t0)) s"
    }
    build gattway --product gattway
    echo "[debian13] gattway links: $(ldd /tmp/build-d13/debug/gattway | grep -o "libgpiod[^ ]*" | sort -u | tr "\n" " ")"
    build "the tests" --build-tests
    t0=$SECONDS
    swift test --scratch-path /tmp/build-d13 --skip-build
    echo "[debian13] unit tests ran in $((SECONDS - t0)) s"
'
status=$?
set -e
if [[ $status -ne 0 ]]; then
    fail "the build or the unit tests failed inside Debian 13 (exit $status) after $((SECONDS - started)) s"
fi
say "PASSED in $((SECONDS - started)) s"
exit "$PASS"
