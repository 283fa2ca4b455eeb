#!/usr/bin/env bash
# Installs what building, testing and demonstrating gattway needs on a Debian-family machine
# (Debian 12/13, Raspberry Pi OS): the C libraries' -dev packages, mosquitto, the tools the test
# scripts use, and a Python venv with Bumble (the virtual controller and the test "phone") and
# bthome-ble (Home Assistant's BTHome parser, which decodes gattway's broadcasts in the tests).
# Idempotent: it installs only what is missing. Without root it prints the exact command to run.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv"
bumble_version="0.0.236"
bthome_ble_version="3.25.0"
bleak_version="3.1.0"

apt_packages=(
    pkg-config libbluetooth-dev libgpiod-dev gpiod libmosquitto-dev libyaml-dev
    mosquitto mosquitto-clients openssl python3-venv
)
# What the test command's extra stages use (Debian 13 build, VM kernel tests, .deb tests, the
# arm64 package under qemu-user, BlueZ as the central in the VM, the Pi image booted under
# qemu-system-aarch64).
if [[ "${1:-}" == "--test" ]]; then
    apt_packages+=(debootstrap qemu-system-x86 qemu-user-static binfmt-support file dpkg-dev binutils e2fsprogs gcc make bluez
        qemu-system-arm dosfstools mtools fdisk xz-utils openssh-client device-tree-compiler)
fi

missing=()
for package in "${apt_packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "install-deps: missing Debian packages: ${missing[*]}" >&2
        echo "install-deps: run this, then try again:" >&2
        echo "    sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "install-deps: no Swift toolchain on PATH. Install Swift 6.2 or newer (swift.org or" >&2
    echo "swiftly: https://www.swift.org/install/linux/), then try again." >&2
    exit 1
fi

if ! "$venv/bin/python3" -c "import bumble, cryptography, bthome_ble" 2>/dev/null; then
    echo "install-deps: creating $venv with bumble==$bumble_version and bthome-ble==$bthome_ble_version"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "bumble==$bumble_version" cryptography \
        "bthome-ble==$bthome_ble_version"
fi
# The BlueZ stage's central (Tests/vm/bluez_central.py): bleak, as Home Assistant uses it.
if [[ "${1:-}" == "--test" ]] && ! "$venv/bin/python3" -c "import bleak" 2>/dev/null; then
    echo "install-deps: installing bleak==$bleak_version into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "bleak==$bleak_version"
fi
