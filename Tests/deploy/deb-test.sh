#!/bin/bash
# Deployment test: builds the .deb, installs it into a fresh root of the Debian release it is for
# and checks what the package promises there; checks the systemd unit, the udev rules and the
# pi-gen stage. Exit 0 pass, 1 fail, 77 skipped (reason printed).
#
#   Tests/deploy/deb-test.sh               # this machine's architecture, in a Debian 12 root
#   Tests/deploy/deb-test.sh --arch arm64  # the cross-built arm64 package, in a Debian 13 arm64
#                                          # root under qemu-user, installed by the pi-gen stage's
#                                          # own install step (00-run.sh)
#
# Needs root (debootstrap, chroot, mounts) and network access to a Debian mirror the first time
# (the Debian 12 root is cached in ${GATTWAY_CACHE:-$HOME/.cache/gattway}/debian12-root, the
# Debian 13 arm64 one by deploy/cross/build-arm64.sh, and copied fresh for every run; downloaded
# packages are cached beside them).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
base_root=$cache/debian12-root
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
max_exposure=4.0

failures=0
started=$SECONDS
phase_started=$SECONDS
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok   - $*"; }
not_ok() { echo "FAIL - $*"; failures=$((failures + 1)); }
note() { echo "note - $*"; }
check() { # check DESCRIPTION COMMAND...: one assertion
    local description=$1; shift
    if "$@"; then ok "$description"; else not_ok "$description"; fi
}
phase() { # phase NAME: times the previous phase, announces the next
    echo "     ($((SECONDS - phase_started)) s)"
    phase_started=$SECONDS
    echo "== $*"
}

native_arch=$(dpkg --print-architecture)
arch=$native_arch
if [[ ${1:-} == --arch ]]; then arch=${2:?--arch needs arm64}; fi
cross=false
[[ $arch != "$native_arch" ]] && cross=true

[[ $(id -u) == 0 ]] || skip "needs root for debootstrap, chroot and mounts"
if $cross; then
    tools=(debootstrap chroot mount dpkg-deb objdump file qemu-aarch64-static)
else
    tools=(debootstrap chroot mount swift dpkg-deb dpkg-shlibdeps objdump file)
fi
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gattway-deb-test.XXXXXX")
root=$work/root
mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
    done
    # Never delete through a mount that is still attached (it would reach into the host's /dev).
    if findmnt -rn -o TARGET | grep -q "^$work/"; then
        echo "cleanup: mounts remain under $work; not deleting it" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }

echo "== static checks: shell syntax, unit and stage structure"
for script in "$repo"/deploy/*.sh "$repo"/deploy/pi-gen/stage-gattway/prerun.sh \
    "$repo"/deploy/pi-gen/stage-gattway/*/[0-9][0-9]-run.sh "$repo/Tests/deploy/deb-test.sh"; do
    check "bash -n ${script#$repo/}" bash -n "$script"
done
for script in "$repo"/deploy/debian/{postinst,prerm,postrm} "$repo/deploy/libexec/gattway-release-adapter" \
    "$repo/deploy/pi-gen/stage-gattway/00-gattway/files/gattway-import-boot-config"; do
    check "sh -n ${script#$repo/}" sh -n "$script"
done

# The pi-gen stage: what pi-gen needs to find, executable where pi-gen runs it, and every file
# 00-run.sh installs present in files/ (gattway.deb and gattway.yaml come from build-image.sh).
stage=$repo/deploy/pi-gen/stage-gattway
check "pi-gen stage: prerun.sh is executable and copies the previous stage" \
    bash -c '[[ -x $0/prerun.sh ]] && grep -q "^[[:space:]]*copy_previous" "$0/prerun.sh"' "$stage"
check "pi-gen stage: EXPORT_IMAGE sets IMG_SUFFIX" \
    bash -c 'IMG_SUFFIX=; USE_QEMU=0; source "$0/EXPORT_IMAGE" && [[ -n $IMG_SUFFIX ]]' "$stage"
check "pi-gen stage: 00-gattway/00-run.sh is executable" test -x "$stage/00-gattway/00-run.sh"
missing_files=$(grep -o 'files/[A-Za-z0-9._-]*' "$stage/00-gattway/00-run.sh" | sort -u | while read -r f; do
    case $f in files/gattway.deb|files/gattway.yaml) ;; *) [[ -e $stage/00-gattway/$f ]] || echo "$f" ;; esac
done)
check "pi-gen stage: files named by 00-run.sh exist${missing_files:+ (missing: $missing_files)}" test -z "$missing_files"
check "pi-gen stage: 00-run.sh installs the package and enables the service" \
    bash -c 'grep -q "apt-get install -y /tmp/gattway.deb" "$0" && grep -q "systemctl enable gattway.service" "$0"' \
    "$stage/00-gattway/00-run.sh"

# build-image.sh against a pi-gen skeleton: refuses what cannot work, prepares what can.
fake_pi_gen=$work/pi-gen
mkdir -p "$fake_pi_gen"/{scripts,stage0,stage1,stage2,export-image}
touch "$fake_pi_gen/build.sh" "$fake_pi_gen/scripts/common"
fake_deb_root=$work/fake-deb
mkdir -p "$fake_deb_root/DEBIAN"
printf 'Package: gattway\nVersion: 0.0.0\nArchitecture: arm64\nMaintainer: test <t@example.org>\nDepends: libgpiod3 (>= 2.1)\nDescription: stand-in arm64 package\n' \
    > "$fake_deb_root/DEBIAN/control"
dpkg-deb --root-owner-group --build "$fake_deb_root" "$work/gattway_0.0.0_arm64.deb" >/dev/null
image_out=$("$repo/deploy/build-image.sh" --pi-gen "$fake_pi_gen" --deb "$work/gattway_0.0.0_arm64.deb" --dry-run 2>&1)
check "build-image.sh --dry-run: a libgpiod3 arm64 package makes a trixie image with our stage" \
    bash -c '[[ $0 == *"trixie image"* && $0 == *"would run:"*"./build.sh -c"* ]] && grep -q "^STAGE_LIST=.*stage2 .*stage-gattway\"$" "$1"' \
    "$image_out" "$repo/.build/pi-gen/config"
check "build-image.sh: the package lands in the stage's work copy, not in the repository" \
    bash -c '[[ -f $0/.build/pi-gen/stage-gattway/00-gattway/files/gattway.deb && ! -e $0/deploy/pi-gen/stage-gattway/00-gattway/files/gattway.deb ]]' "$repo"
rm -rf "$fake_pi_gen/stage2"
check "build-image.sh: refuses a directory that is not a pi-gen checkout" \
    bash -c '! "$0/deploy/build-image.sh" --pi-gen "$1" --deb "$2" --dry-run 2>&1 | grep -q "would run"' \
    "$repo" "$fake_pi_gen" "$work/gattway_0.0.0_arm64.deb"
mkdir -p "$fake_pi_gen/stage2"

# udev rules: every match/assignment pair separated by a comma (udev 252 silently accepts
# `KEY=="a" KEY2=="b"` and mis-parses it); the full parse runs inside the Debian root below.
check "udev rules: pairs separated by commas" \
    bash -c '! grep -vE "^[[:space:]]*(#|$)" "$0" | grep -qE "\"[[:space:]]+[A-Z]"' "$repo/udev/60-gattway.rules"

if $cross; then
    phase "build the package (cross-compiled for $arch, release build, static Swift runtime)"
    deb=$(GATTWAY_DEB_OUT=$work/out "$repo/deploy/build-deb.sh" --arch "$arch") \
        || { not_ok "deploy/build-deb.sh --arch $arch failed"; exit 1; }
    gpiod_package=libgpiod3  # Debian 13's libgpiod 2.x
else
    phase "build the package (release build, static Swift runtime)"
    deb=$(GATTWAY_DEB_OUT=$work/out "$repo/deploy/build-deb.sh") \
        || { not_ok "deploy/build-deb.sh failed"; exit 1; }
    gpiod_package='libgpiod[23]'
fi
[[ -f $deb ]] || { not_ok "deploy/build-deb.sh printed \"$deb\", not a package file"; exit 1; }
ok "built $(basename "$deb") ($(du -k "$deb" | cut -f1) kB)"
[[ -n ${GATTWAY_DEB_KEEP:-} ]] && cp "$deb" "$GATTWAY_DEB_KEEP"
version=$(dpkg-deb --field "$deb" Version)
depends=$(dpkg-deb --field "$deb" Depends)
echo "     Depends: $depends"
check "Architecture: $arch" bash -c '[[ $(dpkg-deb --field "$0" Architecture) == "$1" ]]' "$deb" "$arch"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/gattway > "$work/gattway.bin"
file_out=$(file -b "$work/gattway.bin")
echo "     file: ${file_out%%, BuildID*}"
case $arch in
    arm64) machine="ELF 64-bit LSB pie executable, ARM aarch64" ;;
    amd64) machine="ELF 64-bit LSB pie executable, x86-64" ;;
    *) machine="ELF" ;;
esac
check "file says $machine" bash -c '[[ $0 == "$1"* ]]' "$file_out" "$machine"
for library in "$gpiod_package" libmosquitto1 libc6 adduser; do
    check "Depends names $library" bash -c '[[ $0 =~ (^|, )$1( |,|$) ]]' "$depends" "$library"
done
# Of BlueZ gattway uses the headers only (the user channel's socket address and ioctls).
check "Depends names no libbluetooth (nothing of it is linked)" bash -c '[[ $0 != *libbluetooth* ]]' "$depends"
check "Depends names no Swift runtime package (linked statically)" bash -c '[[ $0 != *swift* ]]' "$depends"
check "DEBIAN/conffiles lists /etc/gattway/gattway.yaml" \
    bash -c 'dpkg-deb --ctrl-tarfile "$0" | tar -xOf - ./conffiles | grep -qx /etc/gattway/gattway.yaml' "$deb"
if [[ $arch == arm64 ]]; then
    check "build-image.sh --dry-run takes this package for a trixie image" \
        bash -c '"$0/deploy/build-image.sh" --pi-gen "$1" --deb "$2" --dry-run 2>&1 | grep -q "trixie image"' \
        "$repo" "$fake_pi_gen" "$deb"
else
    check "build-image.sh refuses the $arch package for an arm64 image" \
        bash -c '! "$0/deploy/build-image.sh" --pi-gen "$1" --deb "$2" --dry-run >/dev/null 2>&1' "$repo" "$fake_pi_gen" "$deb"
fi
if command -v lintian >/dev/null; then
    lintian_out=$(lintian --tag-display-limit 0 "$deb" 2>&1)
    lintian_rc=$?
    [[ -n $lintian_out ]] && sed 's/^/     lintian: /' <<<"$lintian_out"
    check "lintian reports no errors (exit status $lintian_rc)" test "$lintian_rc" = 0
else
    note "lintian not installed: package not linted"
fi

if $cross; then
    phase "a fresh Debian 13 $arch root (qemu-user)"
    base_root=$("$repo/deploy/cross/build-arm64.sh" --base) || { not_ok "no Debian 13 $arch root"; exit 1; }
    release="Debian 13"
    archives=$cache/apt-archives-debian13-$arch
else
    phase "a fresh Debian 12 root"
    release="Debian 12"
    archives=$cache/apt-archives
    if [[ ! -d $base_root ]]; then
        mkdir -p "$cache"
        rm -rf "$base_root.partial"
        debootstrap --variant=minbase --include=systemd,udev bookworm "$base_root.partial" "$mirror" \
            > "$cache/debootstrap.log" 2>&1 \
            || skip "debootstrap of Debian 12 failed (network?), see $cache/debootstrap.log"
        mv "$base_root.partial" "$base_root"
    fi
fi
cp -a "$base_root" "$root"
mkdir -p "$archives/partial"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")
mount --bind "$archives" "$root/var/cache/apt/archives" && mounted+=("$root/var/cache/apt/archives")
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# Never start services inside the root (postinst would otherwise try).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
ok "$release root at $root"

# bluez creates this group on a Pi; postinst must put the service user in it.
in_root addgroup --quiet --system bluetooth 2>/dev/null || in_root groupadd --system bluetooth
if $cross; then
    # What pi-gen does with our stage: its install step (00-run.sh) runs for real, with
    # ROOTFS_DIR and on_chroot as pi-gen defines them, and files/ as build-image.sh fills it.
    phase "install with the pi-gen stage's 00-run.sh (apt, from Debian 13)"
    in_root apt-get update > "$work/apt-update.log" 2>&1 || skip "apt-get update in the $release root failed (network?)"
    cp -a "$stage/00-gattway" "$work/stage-step"
    cp "$deb" "$work/stage-step/files/gattway.deb"
    on_chroot() { chroot "$ROOTFS_DIR" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/bash -e "$@"; }
    export -f on_chroot
    if (cd "$work/stage-step" && ROOTFS_DIR=$root ./00-run.sh) > "$work/apt.log" 2>&1; then
        ok "pi-gen stage-gattway/00-gattway/00-run.sh installed $(basename "$deb") and enabled the units"
    else
        sed 's/^/     00-run.sh: /' "$work/apt.log"; not_ok "pi-gen stage-gattway/00-gattway/00-run.sh"; exit 1
    fi
else
    phase "install with apt"
    cp "$deb" "$root/tmp/"
    apt_install() { in_root apt-get install -y --no-install-recommends "/tmp/$(basename "$deb")" > "$work/apt.log" 2>&1; }
    if ! apt_install; then
        in_root apt-get update > "$work/apt-update.log" 2>&1 || skip "apt-get update in the $release root failed (network?)"
        apt_install || { sed 's/^/     apt: /' "$work/apt.log"; not_ok "apt-get install ./$(basename "$deb")"; exit 1; }
    fi
    ok "apt-get install ./$(basename "$deb") (dependencies resolved from $release)"
fi

phase "the installed package"
check "gattway --version prints $version" bash -c '[[ $(chroot "$0" gattway --version) == "$1" ]]' "$root" "$version"
glibc_needed=$(objdump -T "$work/gattway.bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
glibc_there=$(in_root dpkg-query -W -f='${Version}' libc6 | sed 's/-.*//')
check "the binary asks for glibc symbols up to $glibc_needed, $release has $glibc_there" \
    bash -c '[[ -n $0 && -n $1 && $(printf "%s\n%s\n" "$0" "$1" | sort -V | tail -n 1) == "$1" ]]' "$glibc_needed" "$glibc_there"
if [[ $gpiod_package == libgpiod3 ]]; then
    check "gattway links libgpiod 2.x (libgpiod.so.3)" bash -c 'chroot "$0" ldd /usr/bin/gattway | grep -q "libgpiod\.so\.3 "' "$root"
fi
check "the binary needs no Swift runtime library" \
    bash -c '! chroot "$0" ldd /usr/bin/gattway | grep -qiE "swift|Foundation|not found"' "$root"

# As the service user: proves the installed mode and group let the service read its config.
check "gattway check --config /etc/gattway/gattway.yaml passes (as user gattway)" \
    in_root setpriv --reuid=gattway --regid=gattway --init-groups \
    gattway check --config /etc/gattway/gattway.yaml

passwd_entry=$(in_root getent passwd gattway)
IFS=: read -r _ _ uid gid _ home shell <<<"$passwd_entry"
check "user gattway exists, system uid ($uid), home /var/lib/gattway, no login shell" \
    bash -c '[[ -n $0 && $0 -lt 1000 && $1 == /var/lib/gattway && $2 == /usr/sbin/nologin ]]' "${uid:-}" "${home:-}" "${shell:-}"
check "group gattway is the user's primary group" \
    bash -c '[[ $(chroot "$0" getent group "$1" | cut -d: -f1) == gattway ]]' "$root" "${gid:-x}"
check "user gattway is in group gpio (created by postinst)" \
    bash -c 'chroot "$0" id -nG gattway | tr " " "\n" | grep -qx gpio' "$root"
check "user gattway is in group bluetooth (it exists, as bluez makes it)" \
    bash -c 'chroot "$0" id -nG gattway | tr " " "\n" | grep -qx bluetooth' "$root"
stat_is() { [[ $(in_root stat -c '%U:%G %a %F' "$1") == "$2" ]]; }
check "/var/lib/gattway is gattway:gattway 0750" stat_is /var/lib/gattway "gattway:gattway 750 directory"
check "/etc/gattway/gattway.yaml is root:gattway 0640" stat_is /etc/gattway/gattway.yaml "root:gattway 640 regular file"
check "/usr/bin/gattway is root:root 0755" stat_is /usr/bin/gattway "root:root 755 regular file"
# The bond store the service writes, written by the same code as the service user: the keys file
# is the service user's and nobody else can read it.
check "gattway bonds clear (as user gattway) writes /var/lib/gattway/bonds.json" \
    in_root setpriv --reuid=gattway --regid=gattway --init-groups \
    gattway bonds clear --config /etc/gattway/gattway.yaml
check "/var/lib/gattway/bonds.json is gattway:gattway 0600" \
    stat_is /var/lib/gattway/bonds.json "gattway:gattway 600 regular file"
# As root with the service stopped (`sudo gattway bonds clear`): the file stays the service's.
check "gattway bonds clear (as root) writes /var/lib/gattway/bonds.json" \
    in_root gattway bonds clear --config /etc/gattway/gattway.yaml
check "/var/lib/gattway/bonds.json is still gattway:gattway 0600" \
    stat_is /var/lib/gattway/bonds.json "gattway:gattway 600 regular file"
check "dpkg records /etc/gattway/gattway.yaml as a conffile" \
    bash -c 'chroot "$0" dpkg-query -W -f="\${Conffiles}" gattway | grep -q "^ /etc/gattway/gattway.yaml "' "$root"
check "gattway.service is enabled (multi-user.target.wants)" \
    test -L "$root/etc/systemd/system/multi-user.target.wants/gattway.service"

phase "systemd unit"
verify_out=$(in_root systemd-analyze verify /usr/lib/systemd/system/gattway.service 2>&1)
verify_rc=$?
[[ -n $verify_out ]] && sed 's/^/     verify: /' <<<"$verify_out"
check "systemd-analyze verify gattway.service: no errors, no warnings" \
    bash -c '[[ $0 == 0 && -z $1 ]]' "$verify_rc" "$verify_out"
security_out=$(in_root systemd-analyze security --offline=true --no-pager /usr/lib/systemd/system/gattway.service 2>&1)
exposure=$(sed -n 's/.*Overall exposure level for gattway.service: \([0-9.]*\) .*/\1/p' <<<"$security_out")
echo "     systemd-analyze security: ${exposure:-?} ($(grep -o 'Overall exposure level.*' <<<"$security_out"))"
check "systemd-analyze security exposure ${exposure:-?} ≤ $max_exposure" \
    bash -c '[[ -n $0 ]] && awk -v e="$0" -v m="$1" "BEGIN { exit !(e <= m) }"' "${exposure:-}" "$max_exposure"
check "gattway.service: only CAP_NET_ADMIN, ambient and bounding" \
    bash -c 'grep -qx "AmbientCapabilities=CAP_NET_ADMIN" "$0" && grep -qx "CapabilityBoundingSet=CAP_NET_ADMIN" "$0"' \
    "$root/usr/lib/systemd/system/gattway.service"
check "gattway.service: watchdog, control socket directory, reload, ordered after the Pi's adapter set-up" \
    bash -c 'grep -qx "WatchdogSec=30s" "$0" && grep -qx "RuntimeDirectory=gattway" "$0" \
        && grep -qx "ExecReload=/usr/bin/gattway reload --config /etc/gattway/gattway.yaml" "$0" \
        && grep -qx "RuntimeDirectoryMode=0700" "$0" \
        && grep -qE "^After=.* hciuart\.service bthelper@hci0\.service( |$)" "$0" && ! grep -qE "^(Wants|Requires)=.*bthelper" "$0"' \
    "$root/usr/lib/systemd/system/gattway.service"
firstboot_unit=$stage/00-gattway/files/gattway-import-boot-config.service
install -m 0644 "$firstboot_unit" "$root/etc/systemd/system/"
install -d "$root/usr/local/libexec/gattway"
install -m 0755 "$stage/00-gattway/files/gattway-import-boot-config" "$root/usr/local/libexec/gattway/"
firstboot_out=$(in_root systemd-analyze verify /etc/systemd/system/gattway-import-boot-config.service 2>&1)
firstboot_rc=$?
[[ -n $firstboot_out ]] && sed 's/^/     verify: /' <<<"$firstboot_out"
check "systemd-analyze verify gattway-import-boot-config.service (pi-gen stage)" \
    bash -c '[[ $0 == 0 && -z $1 ]]' "$firstboot_rc" "$firstboot_out"

# ExecStartPre: powers down the adapter the config names, through btmgmt (a stub recording its
# arguments here), and nothing for socket transports. /sys is not mounted yet: the adapter is a
# directory made for the purpose.
mkdir -p "$root/sys/class/bluetooth/hci0" "$root/sys/class/bluetooth/hci1"
printf '#!/bin/sh\necho "$*" >> /tmp/btmgmt.calls\n' > "$root/usr/local/bin/btmgmt"
chmod 0755 "$root/usr/local/bin/btmgmt"
printf 'bluetooth:\n  advertising: {local_name: hci7}\n  transport: "hci1"  # the dongle\n' > "$root/tmp/hci1.yaml"
printf 'bluetooth: {transport: "tcp:127.0.0.1:9000"}  # flow style\n' > "$root/tmp/tcp.yaml"
printf 'bluetooth: {transport: hci1, nonsense: 1}\n' > "$root/tmp/invalid.yaml"
for config in hci1 tcp invalid; do in_root /usr/libexec/gattway/gattway-release-adapter "/tmp/$config.yaml"; done
check "gattway-release-adapter: powers down hci1 (bluetooth.transport), nothing for a flow-style tcp: or an invalid file" \
    bash -c '[[ $(cat "$0") == "--index 1 power off" ]]' "$root/tmp/btmgmt.calls"
rm -rf "$root/sys/class" "$root/usr/local/bin/btmgmt"

phase "udev rules"
mount --bind /sys "$root/sys" && mounted+=("$root/sys")
# Debian 12's udev (252) has no `udevadm verify` (254+); `udevadm test` loads every rules file and
# reports each line it cannot parse, on a device that exists everywhere (lo), changing nothing
# outside the root's /run.
udev_out=$(in_root udevadm test --action=add /sys/class/net/lo 2>&1)
check "udevadm test read 60-gattway.rules" grep -q "Reading rules file: /usr/lib/udev/rules.d/60-gattway.rules" <<<"$udev_out"
gattway_rule_messages=$(grep "60-gattway.rules:" <<<"$udev_out")
[[ -n $gattway_rule_messages ]] && sed 's/^/     udev: /' <<<"$gattway_rule_messages"
check "udevadm reports nothing about 60-gattway.rules (parse errors, unknown group)" test -z "$gattway_rule_messages"
printf 'SUBSYSTEM=="gpio", KERNEL=="gpiochip*", GROPU="gpio"\n' > "$root/usr/lib/udev/rules.d/61-broken.rules"
check "udevadm test does report a broken rule (the check above can fail)" \
    bash -c 'chroot "$0" udevadm test --action=add /sys/class/net/lo 2>&1 | grep -q "61-broken.rules:1"' "$root"
rm -f "$root/usr/lib/udev/rules.d/61-broken.rules"

phase "upgrade, remove, purge"
# The same package as a newer version, to go through prerm upgrade / postinst configure OLD.
dpkg-deb --raw-extract "$deb" "$work/next"
sed -i "s/^Version: .*/Version: $version+next1/" "$work/next/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip -z1 --build "$work/next" "$root/tmp/gattway-next.deb" >/dev/null
echo "# changed by the admin" >> "$root/etc/gattway/gattway.yaml"
echo bond > "$root/var/lib/gattway/bond-test"
in_root systemctl disable --quiet gattway.service
in_root dpkg -i /tmp/gattway-next.deb > "$work/upgrade.log" 2>&1 \
    || { sed 's/^/     dpkg: /' "$work/upgrade.log"; not_ok "upgrading the package"; }
check "upgrade installed $version+next1" \
    bash -c '[[ $(chroot "$0" dpkg-query -W -f="\${Version}" gattway) == "$1+next1" ]]' "$root" "$version"
check "upgrade keeps the admin's config change" grep -q "changed by the admin" "$root/etc/gattway/gattway.yaml"
check "upgrade keeps the config's mode" stat_is /etc/gattway/gattway.yaml "root:gattway 640 regular file"
check "upgrade keeps the state directory" test -f "$root/var/lib/gattway/bond-test"
check "upgrade keeps the admin's systemctl disable" \
    test ! -L "$root/etc/systemd/system/multi-user.target.wants/gattway.service"
in_root systemctl enable --quiet gattway.service
in_root dpkg --remove gattway > "$work/remove.log" 2>&1 || not_ok "dpkg --remove gattway"
check "remove: binary gone" test ! -e "$root/usr/bin/gattway"
check "remove: config and state kept" \
    bash -c '[[ -f $0/etc/gattway/gattway.yaml && -f $0/var/lib/gattway/bond-test ]]' "$root"
in_root dpkg --purge gattway > "$work/purge.log" 2>&1 || not_ok "dpkg --purge gattway"
check "purge: config, state directory and stat override gone" \
    bash -c '[[ ! -e $0/etc/gattway && ! -e $0/var/lib/gattway ]] && ! chroot "$0" dpkg-statoverride --list /etc/gattway/gattway.yaml' "$root"
check "purge: enable symlink and remove's mask gone" bash -c \
    '[[ ! -L $0/etc/systemd/system/multi-user.target.wants/gattway.service && ! -L $0/etc/systemd/system/gattway.service ]]' "$root"

echo "     ($((SECONDS - phase_started)) s)"
echo "== total $((SECONDS - started)) s, $failures failure(s)"
((failures == 0))
