#!/usr/bin/env bash
# Runs inside bluez-central-tests.sh's VM (root, hci_vhci loaded): a system D-Bus, the virtual
# controller with two controllers attached to the kernel through /dev/vhci (the kernel's hci0 and
# hci1, BlueZ's adapters: a first and a second phone) and a Unix socket for gattway's, bluetoothd
# on both, btmon recording each one's traffic, and then bluez_central.py (bleak) driving the
# `gattway` executable given as $1.
# Exit 0 only when every step of bluez_central.py passed.
set -uo pipefail
gattway=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=$GATTWAY_PYTHON

ip link set lo up 2>/dev/null || busybox ifconfig lo up
# A private directory: the VM's /tmp shows the host's files beneath its overlay.
work=$(mktemp -d /tmp/bluez-central.XXXXXX)
pids=()
cleanup() { local pid; for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; }
trap cleanup EXIT

mkdir -p /run/dbus /var/lib/bluetooth
chmod 700 /var/lib/bluetooth
dbus-daemon --system --fork --nopidfile || { echo "[bluez-central] FAILED: dbus-daemon --system"; exit 1; }

# Two kernel adapters: hci0 is the first phone, hci1 a second, new phone (another identity).
"$python" "$here/../harness/virtual_controller.py" --vhci /dev/vhci --vhci /dev/vhci --unix "$work/controller.sock" \
    --host-address F0:5A:00:00:00:E0 \
    >"$work/controller.out" 2>"$work/controller.log" &
pids+=($!)
for _ in $(seq 100); do grep -q READY "$work/controller.out" && break; sleep 0.2; done
adapters=$(sed -n 's/.*hci=\([0-9]*,[0-9]*\).*/\1/p' "$work/controller.out")
[[ -n $adapters ]] || { echo "[bluez-central] FAILED: the virtual controller did not attach two adapters"; cat "$work/controller.log"; exit 1; }
first=${adapters%,*} second=${adapters#*,}

for adapter in "$first" "$second"; do
    btmon -i "hci$adapter" -w "$work/hci$adapter.btsnoop" >/dev/null 2>&1 &
    pids+=($!)
done
/usr/libexec/bluetooth/bluetoothd -n -d >"$work/bluetoothd.log" 2>&1 &
pids+=($!)
for adapter in "$first" "$second"; do
    for _ in $(seq 100); do
        grep -q "adapter_register() Adapter /org/bluez/hci$adapter registered" "$work/bluetoothd.log" && break
        sleep 0.2
    done
    grep -q "adapter_register() Adapter /org/bluez/hci$adapter registered" "$work/bluetoothd.log" || {
        echo "[bluez-central] FAILED: bluetoothd did not register hci$adapter within 20 s"
        tail -n 40 "$work/bluetoothd.log"
        exit 1
    }
done

status=0
"$python" "$here/bluez_central.py" --gattway "$gattway" --hci "unix:$work/controller.sock" \
    --workdir "$work" \
    --adapter "hci$first" --btmon "$work/hci$first.btsnoop" \
    --second-adapter "hci$second" --second-btmon "$work/hci$second.btsnoop" || status=1
if [[ $status -ne 0 ]]; then
    for file in "$work"/gattway-*.log "$work/controller.log"; do
        [[ -f $file ]] && { echo "== $file"; tail -n 60 "$file"; }
    done
    echo "== bluetoothd (connections, pairing, GATT client)"
    grep -E "device\.c|adapter\.c:(dev_|bonding|pair|connected)|gatt-client|att\.c" "$work/bluetoothd.log" | tail -n 100
    echo "== kernel log (Bluetooth)"
    dmesg | grep "Bluetooth:" | tail -n 30
    for adapter in "$first" "$second"; do
        echo "== btmon hci$adapter: management commands and HCI commands and events other than advertising reports"
        btmon -r "$work/hci$adapter.btsnoop" 2>/dev/null | grep -E "^(@|<|>) " \
            | grep -v -E "Advertising Report|Number of Completed|ACL Data" | tail -n 60
    done
fi
exit "$status"
