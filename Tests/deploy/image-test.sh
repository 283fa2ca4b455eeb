#!/usr/bin/env bash
# The Raspberry Pi image a user flashes (`make image`, deploy/build-raspi-image.sh), built once
# and booted under qemu-system-aarch64 as two Pis flashed from it, side by side, then as a Pi 3,
# checked from outside:
#   - the image file (uncompressed: `--raw`; xz -6 alone would take minutes): its sha256, /etc/machine-id "uninitialized" (the first boot makes it), no SSH host keys, no password;
#   - set up the way a user does from a PC, by copying files onto the FAT boot partition (mtools):
#     gattway.yaml (a simulated sensor, the broker on the host) and gattway-setup.txt (an SSH key);
#   - each boot: multi-user reached; the root grew to the (enlarged) card; the SSH host keys and
#     the machine id made there; the boot partition's gattway.yaml imported; gattway.service
#     active and degraded without a controller; its sensor's values on a mosquitto on this host,
#     reached through QEMU's user network (10.0.2.2 is the host's loopback);
#   - the two Pis, booted at the same time: two machine ids, two gattway identities (device id, host name, MQTT client
#     id, topics, Home Assistant device), publishing side by side on one broker, which never had
#     to close one client's connection for the other's.
# The machine is `virt` with virtio disk and network and the image's own kernel and initramfs,
# not `raspi3b`: QEMU's raspi3b gives the guest no network device (its USB has no bus QEMU
# attaches usb-net to), and the broker on the host is the point; the image's root, boot
# partition, labels, fstab and units are the same either way. What only a real Pi shows (its
# firmware booting the card, Wi-Fi, the Bluetooth UART, GPIO) is not here.
#
#   Tests/deploy/image-test.sh             # builds the image (deploy/build-raspi-image.sh --raw)
#   GATTWAY_IMAGE=FILE.img.xz Tests/deploy/image-test.sh   # tests that image (or FILE.img, uncompressed)
# Exit 0 pass, 1 fail, 77 skipped (reason printed).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
started=$SECONDS
skip() { echo "SKIP: $*"; exit 77; }
failures=0
check() { # check DESCRIPTION COMMAND...
    local description=$1; shift
    if "$@"; then echo "ok   - $description"; else echo "FAIL - $description"; failures=$((failures + 1)); fi
}

[[ $(id -u) == 0 ]] || skip "needs root (the image build chroots)"
[[ $(dpkg --print-architecture) == amd64 ]] || skip "cross-builds the arm64 image from amd64; this machine is $(dpkg --print-architecture)"
for tool in qemu-system-aarch64 qemu-aarch64-static debootstrap mkfs.vfat mcopy sfdisk mosquitto mosquitto_sub ssh ssh-keygen xz; do
    command -v "$tool" >/dev/null \
        || skip "$tool is not installed (deploy/dev/install-deps.sh --test installs what this stage needs)"
done

work=$(mktemp -d "${TMPDIR:-/var/tmp}/gattway-image-test.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    if ((failures)); then echo "the test's files are kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. The image, built once.
image_xz=${GATTWAY_IMAGE:-}
if [[ -z $image_xz ]]; then
    # make test makes the image's Debian roots in the background (Tests/run-all.sh).
    if [[ -n ${GATTWAY_IMAGE_ROOTS_LOG:-} ]]; then
        echo "== the image's Debian roots, made in the background by make test:"
        waited=$SECONDS
        flock "${GATTWAY_CACHE:-$HOME/.cache/gattway}/arm64/.raspi-lock" true # until they are done
        sed 's/^/     /' "$GATTWAY_IMAGE_ROOTS_LOG"
        echo "   (this stage waited $((SECONDS - waited)) s for them)"
    fi
    echo "== make image (deploy/build-raspi-image.sh --raw)"
    build_started=$SECONDS
    image_xz=$("$repo/deploy/build-raspi-image.sh" --raw --out "$work/out" 2>"$work/build.log" | tail -n 1)
    [[ -f $image_xz ]] || { tail -n 30 "$work/build.log"; echo "FAIL - the image did not build"; failures=1; exit 1; }
    grep -E '^build-raspi-image: .*(making|compressed|not compressed)' "$work/build.log" | sed 's/^/     /'
    echo "     built in $((SECONDS - build_started)) s"
fi
if [[ $image_xz == *.img ]]; then # an uncompressed image, as dd writes it
    [[ -f $image_xz.sha256 ]] && check "the image's sha256 file matches it" \
        bash -c "cd '$(dirname "$image_xz")' && sha256sum --quiet -c '$(basename "$image_xz").sha256'"
    cp --sparse=always "$image_xz" "$work/pristine.img"
else
    check "the image's sha256 file matches it" \
        bash -c "cd '$(dirname "$image_xz")' && sha256sum --quiet -c '$(basename "$image_xz").sha256'"
    xz -dc "$image_xz" >"$work/pristine.img" || { echo "FAIL - cannot decompress $image_xz"; failures=1; exit 1; }
fi
raw_mib=$(($(stat -c %s "$work/pristine.img") / 1048576))

# The partitions, from the image's own table.
read -r boot_start root_start < <(sfdisk --dump "$work/pristine.img" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p' | xargs)
boot="$work/pristine.img@@$((boot_start * 512))"
echo "     ${raw_mib} MiB raw; boot partition at sector $boot_start, root at $root_start"
for file in cmdline.txt config.txt bcm2837-rpi-3-b.dtb bcm2711-rpi-4-b.dtb bcm2712-rpi-5-b.dtb; do
    check "the boot partition holds $file" mcopy -n -i "$boot" "::/$file" "$work/$file"
done
# The kernel and initramfs the Pi's firmware loads: the ones config.txt names.
kernel=$(sed -n 's/^kernel=//p' "$work/config.txt" | tr -d '\r')
initramfs=$(sed -n 's/^initramfs \([^ ]*\).*/\1/p' "$work/config.txt" | tr -d '\r')
check "config.txt names a kernel ($kernel) and an initramfs ($initramfs) on the boot partition" \
    bash -c "[[ -n '$kernel' && -n '$initramfs' ]] && mcopy -n -i '$boot' '::/$kernel' '$work/vmlinuz' && mcopy -n -i '$boot' '::/$initramfs' '$work/initrd.img'"
# What the image holds in its root: debugfs reads the ext4 file without mounting it.
dd if="$work/pristine.img" of="$work/root.ext4" bs=512 skip="$root_start" status=none
in_root() { debugfs -R "$1" "$work/root.ext4" 2>/dev/null; }
check "the image's /etc/machine-id is \"uninitialized\" (a first boot to systemd)" test "$(in_root 'cat /etc/machine-id')" == uninitialized
check "the image has no SSH host keys" bash -c "! debugfs -R 'ls -l /etc/ssh' '$work/root.ext4' 2>/dev/null | grep -q ssh_host_"
in_root 'cat /etc/shadow' >"$work/shadow"
check "no account in the image has a password" bash -c "[[ -s '$work/shadow' ]] && ! awk -F: '\$2 !~ /^[!*]/' '$work/shadow' | grep -q ."
rm -f "$work/root.ext4"

# 2. The broker on this host, and what two Pis get on their boot partitions from "a PC".
port=$(free_port)
cat >"$work/mosquitto.conf" <<EOF
listener $port 127.0.0.1
allow_anonymous true
# Started as root, mosquitto would drop to its own user and could not write its log here, and the
# client id checks below read that log.
user root
log_dest file $work/mosquitto.log
log_type all
EOF
mosquitto -c "$work/mosquitto.conf" >/dev/null 2>&1 &
pids+=($!)
sleep 1
mosquitto_sub -h 127.0.0.1 -p "$port" -v -t 'gattway/#' -t 'homeassistant/#' >"$work/mqtt.log" 2>/dev/null &
pids+=($!)

cat >"$work/gattway.yaml" <<EOF
# Two Pis, one configuration: each is named after its machine id.
device:
  name_add_suffix: true
bluetooth:
  transport: hci0
gpio:
  backend: simulated
  chips:
    - label: gattway-sim0
      lines:
        - name: DOOR
          generator:
            type: steps
            steps:
              - {level: 0, duration: 2s}
              - {level: 1, duration: 2s}
sensors:
  - {id: door, kind: binary, line: DOOR}
services:
  - uuid: 0A7E0001-5C3B-4B6F-9E2D-6A0F7C1B2D01
    name: site
    characteristics:
      - uuid: 0A7E0002-5C3B-4B6F-9E2D-6A0F7C1B2D01
        name: door
        format: bool
        source: {sensor: door}
mqtt:
  url: mqtt://10.0.2.2:$port
EOF
ssh-keygen -q -t ed25519 -N '' -C image-test -f "$work/id_ed25519"
printf 'ssh_authorized_key=%s\r\n' "$(cat "$work/id_ed25519.pub")" >"$work/gattway-setup.txt"
append=$(tr -d '\n' <"$work/cmdline.txt" | sed -E 's/(^| )console=[^ ]*//g')" console=ttyAMA0"

# boot NAME: a fresh copy of the image, set up from "a PC", on a 4 GiB "card", booted (one CPU:
# two of them share this machine's).
boot_pi() {
    local name=$1 disk=$work/$1.img ssh_port
    cp --sparse=always "$work/pristine.img" "$disk"
    mcopy -i "$disk@@$((boot_start * 512))" "$work/gattway.yaml" "$work/gattway-setup.txt" ::/
    truncate -s 4G "$disk"
    ssh_port=$(free_port)
    echo "$ssh_port" >"$work/$name.ssh-port"
    qemu-system-aarch64 -M virt -cpu cortex-a53 -smp 1 -m 1024 -display none -monitor none \
        -kernel "$work/vmlinuz" -initrd "$work/initrd.img" -append "$append" \
        -drive "if=none,file=$disk,format=raw,id=card" -device virtio-blk-pci,drive=card \
        -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$ssh_port-:22" -device virtio-net-pci,netdev=net0 \
        -serial "file:$work/$name.console" </dev/null >"$work/$name.qemu.log" 2>&1 &
    pids+=($!)
    echo "$(date +%s)" >"$work/$name.started"
}
on() { # on NAME COMMAND: runs COMMAND on that Pi through SSH, as root, with the key given above
    timeout "${on_timeout:-120}" ssh -q -i "$work/id_ed25519" -p "$(cat "$work/$1.ssh-port")" -o BatchMode=yes -o ConnectTimeout=20 \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 "$2"
}
export work
export -f on  # the checks run their commands through bash -c
# wait_ready NAME: until SSH answers and systemd is done starting (at most 12 min under TCG).
wait_ready() {
    local name=$1 deadline=$((SECONDS + 720)) state
    while ((SECONDS < deadline)); do
        state=$(on_timeout=600 on "$name" 'systemctl is-system-running --wait' 2>/dev/null) && break
        [[ -n $state ]] && break
        sleep 10
    done
    echo "     $name: system $state after $(($(date +%s) - $(cat "$work/$name.started"))) s"
    [[ $state == running || $state == degraded ]]
}
# check_pi NAME: what one Pi must show.
check_pi() {
    local name=$1 id
    check "$name: multi-user.target reached" bash -c "[[ \$(on $name 'systemctl is-active multi-user.target') == active ]]"
    on "$name" 'systemctl --failed --no-legend' | sed "s/^/     $name failed unit: /"
    check "$name: the root grew to the 4 GiB card (> 3 GiB)" \
        bash -c "(( \$(on $name 'df --output=size -B1M / | tail -n 1') > 3072 ))"
    check "$name: SSH host keys made at first boot" on "$name" 'ls /etc/ssh/ssh_host_ed25519_key'
    check "$name: a machine id made at first boot" bash -c "[[ \$(on $name 'cat /etc/machine-id') =~ ^[0-9a-f]{32}\$ ]]"
    check "$name: the boot partition's gattway.yaml was imported" \
        bash -c "[[ \$(on $name 'sha256sum </etc/gattway/gattway.yaml; ls /boot/firmware/gattway.yaml.imported') == \
            \"\$(sha256sum <'$work/gattway.yaml')\"$'\n'/boot/firmware/gattway.yaml.imported ]]"
    check "$name: gattway-setup.txt was applied (SSH with its key works) and renamed" \
        on "$name" 'test -f /boot/firmware/gattway-setup.txt.applied && ! test -e /boot/firmware/gattway-setup.txt'
    check "$name: gattway.service is active" bash -c "[[ \$(on $name 'systemctl is-active gattway') == active ]]"
    check "$name: gattway is degraded without a controller, as designed" \
        bash -c "on $name 'systemctl show -p StatusText --value gattway' | tee '$work/$name.status' | grep -q 'degraded: Bluetooth controller'"
    sed "s/^/     $name status: /" "$work/$name.status"
    echo "     $name: gattway READY $(($(on "$name" 'systemctl show -p ActiveEnterTimestampMonotonic --value gattway') / 1000000)) s after the kernel started"
    id=$(on "$name" 'gattway check --config /etc/gattway/gattway.yaml --print device-id')
    echo "$id" >"$work/$name.id"
    check "$name: its gattway device id is gattway-<6 hex digits> ($id)" bash -c "[[ '$id' =~ ^gattway-[0-9a-f]{6}\$ ]]"
    check "$name: the host is named after it" bash -c "[[ \$(on $name hostname) == '$id' ]]"
}
# publishes ID: the door's two values and the device's availability and discovery on the broker.
publishes() {
    local id=$1 deadline=$((SECONDS + 180))
    while ((SECONDS < deadline)); do
        if grep -q "^gattway/$id/site/door {\"value\":true" "$work/mqtt.log" \
            && grep -q "^gattway/$id/site/door {\"value\":false" "$work/mqtt.log" \
            && grep -q "^gattway/$id/availability online" "$work/mqtt.log" \
            && grep -q "^homeassistant/device/gattway_$id/config " "$work/mqtt.log"; then
            return 0
        fi
        sleep 5
    done
    return 1
}

echo "== two Pis: two fresh copies of the image, the same gattway.yaml, booted at the same time"
boot_pi pi1
boot_pi pi2
up=()
for name in pi1 pi2; do
    if wait_ready "$name"; then
        check_pi "$name"
        check "$name: its simulated door's values reach the broker on the host" publishes "$(cat "$work/$name.id")"
        up+=("$name")
    else
        echo "FAIL - $name did not come up (console: $work/$name.console)"; failures=$((failures + 1))
        tail -n 40 "$work/$name.console"
    fi
done
if ((${#up[@]} == 2)); then
    id1=$(cat "$work/pi1.id") id2=$(cat "$work/pi2.id")
    check "two Pis, two machine ids" bash -c "[[ \$(on pi1 'cat /etc/machine-id') != \$(on pi2 'cat /etc/machine-id') ]]"
    check "two Pis, two gattway identities ($id1, $id2)" test "$id1" != "$id2"
    mark=$(wc -l <"$work/mqtt.log")
    sleep 10
    check "both publish side by side: new values of each door in the same 10 s" \
        bash -c "tail -n +$((mark + 1)) '$work/mqtt.log' | grep -q '^gattway/$id1/site/door ' \
            && tail -n +$((mark + 1)) '$work/mqtt.log' | grep -q '^gattway/$id2/site/door '"
    check "the broker saw two client ids (gattway-$id1, gattway-$id2: mqtt.client_id's default)" \
        bash -c "grep -q 'as gattway-$id1 ' '$work/mosquitto.log' && grep -q 'as gattway-$id2 ' '$work/mosquitto.log'"
    check "the broker never closed one Pi's connection for the other's" \
        bash -c "[[ -s '$work/mosquitto.log' ]] && ! grep -q 'already connected, closing old connection' '$work/mosquitto.log'"
fi

# 3. A Pi 3 (QEMU's raspi3b) with the image's own kernel, initramfs and device tree. No network
# there, so what runs is given on the kernel command line (systemd-run-generator) and its output
# comes back on the console (journald forwards to it; the Pi 3's console is the mini UART,
# QEMU's second -serial):
#   - which GPIO lines its kernel names, and that GPIO<n> finds them (issue 34);
#   - gattway on the Pi's Bluetooth UART (the PL011, QEMU's first -serial) carrying H4 to a
#     Bumble virtual controller on this host, and a Bumble phone on the same virtual radio that
#     scans, connects, discovers and reads the device name. The device tree's Bluetooth node is
#     removed in the test's copy so the kernel leaves the PL011 a plain ttyAMA0 (on a real Pi the
#     kernel's hci_uart driver attaches the BCM43438 there and gattway opens hci0); gattway runs
#     from the command line as root with --hci serial:/dev/ttyAMA0, gattway.service masked (its
#     unit allows the GPIO devices only).
for pid in "${pids[@]:2}"; do kill "$pid" 2>/dev/null; done # the two virt Pis: their CPU for this one
echo "== a Pi 3 (raspi3b): gattway lines on the image's own kernel and device tree, gattway on its Bluetooth UART"
python=${GATTWAY_PYTHON:-$repo/.venv/bin/python3}
pi3() {
    local disk=$work/pi3.img size card=1 deadline=$((SECONDS + 900)) qemu controller_port line
    if [[ ! -x $python ]] || ! "$python" -c 'import bumble' 2>/dev/null; then
        echo "FAIL - $python has no Bumble (deploy/dev/install-deps.sh --test makes .venv)"; failures=$((failures + 1)); return
    fi
    cp "$work/bcm2837-rpi-3-b.dtb" "$work/pi3.dtb"
    fdtput -r "$work/pi3.dtb" /soc/serial@7e201000/bluetooth || { echo "FAIL - fdtput could not remove the Bluetooth node"; failures=$((failures + 1)); return; }
    # The virtual controller: QEMU's PL011 connects to it, then the phone.
    "$python" "$repo/Tests/harness/virtual_controller.py" --tcp-port 0 >"$work/controller.out" 2>"$work/controller.log" &
    pids+=($!)
    for _ in {1..60}; do grep -q READY "$work/controller.out" && break; sleep 1; done
    [[ $(cat "$work/controller.out") =~ READY\ tcp=([0-9]+) ]] \
        || { echo "FAIL - the virtual controller did not start: $(cat "$work/controller.out" "$work/controller.log")"; failures=$((failures + 1)); return; }
    controller_port=${BASH_REMATCH[1]}
    cp --sparse=always "$work/pristine.img" "$disk"
    size=$(stat -c %s "$disk")
    while ((card < size)); do card=$((card * 2)); done # QEMU's SD card takes a power-of-two size only
    truncate -s "$card" "$disk"
    qemu-system-aarch64 -M raspi3b -display none -monitor none \
        -kernel "$work/vmlinuz" -initrd "$work/initrd.img" -dtb "$work/pi3.dtb" \
        -append "$(tr -d '\n' <"$work/cmdline.txt") systemd.journald.forward_to_console=1 systemd.mask=gattway.service systemd.run=\"gattway lines --chip pinctrl-bcm2835\" systemd.run=\"gattway run --config /etc/gattway/gattway.yaml --hci serial:/dev/ttyAMA0,115200\" systemd.run_success_action=none" \
        -drive "if=sd,file=$disk,format=raw" -serial "tcp:127.0.0.1:$controller_port" -serial "file:$work/pi3.console" \
        </dev/null >"$work/pi3.qemu.log" 2>&1 &
    qemu=$!
    pids+=("$qemu")
    while ((SECONDS < deadline)) && kill -0 "$qemu" 2>/dev/null; do
        grep -q 'GPIO27' "$work/pi3.console" 2>/dev/null && break
        sleep 5
    done
    echo "     pi3: $((SECONDS - deadline + 900)) s to the lines' listing"
    grep -E 'gattway\[[0-9]+\]:' "$work/pi3.console" | grep -E 'GPIO|gpiochip' | sed 's/.*gattway\[[0-9]*\]: */     pi3 lines: /' | head -n 40

    # The phone: scans until the Pi advertises, connects, discovers, reads the GAP device name.
    coproc PHONE { exec "$python" "$repo/Tests/harness/phone.py" "tcp:127.0.0.1:$controller_port" 2>"$work/phone.log"; }
    pids+=("$PHONE_PID")
    read -r -t 60 line <&"${PHONE[0]}"
    [[ $line == *'"ready": true'* ]] || { echo "FAIL - the phone did not start: $line"; failures=$((failures + 1)); return; }
    local name='' address='' gap=''
    while ((SECONDS < deadline)) && kill -0 "$qemu" 2>/dev/null; do
        ask '{"cmd": "scan", "timeout": 20}' 60 && break
    done
    echo "     pi3: $((SECONDS - deadline + 900)) s to its advertisement on the virtual radio"
    if [[ $answer == *'"ok": true'* ]]; then
        name=$(json_field "$answer" name) address=$(json_field "$answer" address)
    fi
    check "pi3: a phone on the host's virtual radio sees gattway advertise through the Pi's UART ($name)" \
        bash -c "[[ '$name' =~ ^gattway-[0-9a-f]{6}\$ ]]"
    [[ -n $address ]] || return
    check "pi3: the phone connects" ask "{\"cmd\": \"connect\", \"address\": \"$address\", \"timeout\": 60}" 90
    ask '{"cmd": "discover"}' 300 && gap=$(python3 -c '
import json, sys
for service in json.loads(sys.argv[1])["services"]:
    for characteristic in service["characteristics"]:
        if characteristic["uuid"].upper().startswith(("2A00", "00002A00")):
            print(characteristic["value_handle"])' "$answer")
    check "pi3: the phone discovers the GAP Device Name characteristic" test -n "$gap"
    [[ -n $gap ]] || return
    check "pi3: the phone reads the device name, the one it advertises ($name)" reads "$gap" "$name"
}
# reads HANDLE TEXT: the phone reads HANDLE and gets TEXT
reads() {
    ask "{\"cmd\": \"read\", \"handle\": $1}" 120 \
        && [[ $(python3 -c 'import json, sys; print(bytes.fromhex(json.loads(sys.argv[1])["value"]).decode())' "$answer") == "$2" ]]
}
# ask JSON TIMEOUT: one command to the phone; its answer in $answer (and phone.answers)
ask() {
    answer=''
    echo "$1" >&"${PHONE[1]}" && read -r -t "$2" answer <&"${PHONE[0]}"
    echo "$1 -> ${answer:-no answer}" >>"$work/phone.answers"
    [[ $answer == *'"ok": true'* ]]
}
json_field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2]) or "")' "$1" "$2"; }
pi3
check "pi3: the kernel's pinctrl-bcm2835 chip is listed" grep -q 'pinctrl-bcm2835' "$work/pi3.console"
check "pi3: GPIO4 found by its BCM number though this kernel names it GPIO_GCLK, header pin 7" \
    grep -qE 'GPIO4 \(named GPIO_GCLK by this kernel\).*header pin 7' "$work/pi3.console"
check "pi3: GPIO2 found by its BCM number though this kernel names it SDA1, header pin 3" \
    grep -qE 'GPIO2 \(named SDA1 by this kernel\).*header pin 3' "$work/pi3.console"
check "pi3: GPIO17 under its own name, header pin 11" grep -qE ' GPIO17 .*header pin 11' "$work/pi3.console"

echo "== image stage: $((SECONDS - started)) s; image ${raw_mib} MiB raw, its file $(($(stat -c %s "$image_xz") / 1048576)) MiB"
((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
exit 0
