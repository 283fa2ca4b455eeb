#!/bin/bash
# Builds a Raspberry Pi OS Lite (arm64) image with gattway installed and enabled, using pi-gen and
# the stage in deploy/pi-gen/stage-gattway:
#
#   git clone --branch arm64 https://github.com/RPi-Distro/pi-gen   # then: git checkout <release tag>
#   sudo deploy/build-deb.sh --arch arm64                # on x86_64 (or deploy/build-deb.sh on arm64)
#   sudo deploy/build-image.sh --pi-gen ../pi-gen --deb .build/deb/gattway_<version>_arm64.deb
#
# Options:
#   --pi-gen DIR        a pi-gen checkout (arm64 branch or an *-arm64 release tag)
#   --deb FILE          the arm64 gattway package to install
#   --boot-config FILE  also put FILE on the image's boot partition as gattway.yaml; the first boot
#                       imports it into /etc/gattway (any later gattway.yaml put there, too)
#   --dry-run           check the inputs, prepare the stage and pi-gen config, print the build
#                       command instead of running it
#
# The image's Debian release follows the package: a .deb built against libgpiod 1.6 (libgpiod2)
# goes into a bookworm image, one built against libgpiod 2.x (libgpiod3) into trixie, because the
# package's shared-library dependencies must be satisfiable there. pi-gen's build.sh runs as root
# on a Debian/Ubuntu host with its dependencies (see pi-gen's README; on an x86 host also
# qemu-user-static and binfmt-support); the image lands in pi-gen's deploy/ directory, named after
# IMG_NAME=gattway.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage_source=$repo/deploy/pi-gen/stage-gattway

fail() { echo "build-image: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

pi_gen='' deb='' boot_config='' dry_run=0
while (($#)); do
    case $1 in
        --pi-gen) pi_gen=${2:?--pi-gen needs a directory}; shift 2 ;;
        --deb) deb=${2:?--deb needs a file}; shift 2 ;;
        --boot-config) boot_config=${2:?--boot-config needs a file}; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "build-image: unknown option $1" >&2; usage 2 ;;
    esac
done
[[ -n $pi_gen && -n $deb ]] || { echo "build-image: --pi-gen and --deb are required" >&2; usage 2; }

# pi-gen checkout: the entry points and the stages the image builds on.
pi_gen=$(cd "$pi_gen" 2>/dev/null && pwd) || fail "--pi-gen: no directory $pi_gen"
for needed in build.sh scripts/common stage0 stage1 stage2 export-image; do
    [[ -e $pi_gen/$needed ]] || fail "$pi_gen is not a pi-gen checkout: $needed is missing"
done

# The package: arm64, and its libgpiod names the release.
[[ -f $deb ]] || fail "--deb: no file $deb"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
[[ $(dpkg-deb --field "$deb" Package 2>/dev/null) == gattway ]] || fail "$deb is not a gattway package"
deb_arch=$(dpkg-deb --field "$deb" Architecture)
[[ $deb_arch == arm64 ]] \
    || fail "$deb is built for $deb_arch; the image needs arm64 (build it with deploy/build-deb.sh --arch arm64)"
depends=$(dpkg-deb --field "$deb" Depends)
case $depends in
    *libgpiod3*) release=trixie ;;
    *libgpiod2*) release=bookworm ;;
    *) fail "$deb depends on neither libgpiod2 nor libgpiod3 (Depends: $depends)" ;;
esac

if [[ -n $boot_config ]]; then
    [[ -f $boot_config ]] || fail "--boot-config: no file $boot_config"
fi

# The stage goes into a work copy with the package beside it; the repository stays untouched.
work=$repo/.build/pi-gen
rm -rf "$work"
mkdir -p "$work"
cp -a "$stage_source" "$work/"
stage=$work/stage-gattway
install -m 0644 "$deb" "$stage/00-gattway/files/gattway.deb"
if [[ -n $boot_config ]]; then
    install -m 0644 "$boot_config" "$stage/00-gattway/files/gattway.yaml"
fi

# Only our image: stage2's own Lite export is skipped, stage3 and later are not in the list.
config=$work/config
cat > "$config" <<CONFIG
IMG_NAME=gattway
RELEASE=$release
STAGE_LIST="stage0 stage1 stage2 $stage"
CONFIG
skip_lite=$pi_gen/stage2/SKIP_IMAGES

command=(./build.sh -c "$config")

echo "build-image: $release image, package $(basename "$deb"), stage $stage"
if [[ $dry_run == 1 ]]; then
    echo "build-image: would run: touch $skip_lite && cd $pi_gen && ${command[*]}"
    exit 0
fi
[[ $(id -u) == 0 ]] || fail "pi-gen's build.sh needs root"
touch "$skip_lite"
cd "$pi_gen"
exec "${command[@]}"
