#!/usr/bin/env bash
# Power cuts, for real: a SIGKILL of a process leaves the page cache to finish its writes, so it
# never shows whether the fsyncs are where they must be. Here the state directory is an ext4 disk
# image attached to a VM (run-in-vm.sh --disk: cache=none, the host's page cache bypassed), and
# the power is cut by killing qemu with SIGKILL at a random moment while the state files are
# written under load: whatever the guest kernel had not written to the disk is gone, as on a Pi
# whose plug is pulled.
#
# Each boot (power-cut-guest.sh) runs fsck -n on the disk and reads every state file strictly
# (power-cut-check.py inspect), then loads it: gattway itself with a counter on a simulated line
# pulsing 200 times a second (report_interval 100 ms), its totals published to a mosquitto in the
# VM, and Tests/StateFileProbe rewriting bonds.json (BondStore), a counter total (as
# CounterEngine) and appending to, acknowledging in and compacting the MQTT outbox (MQTTOutbox).
# What each acknowledges (a total published, a file saved, an outbox event fsynced) goes to the
# host through the console before the cut. After each cut the next boot's findings must show no
# torn file, fsck clean, no counter total below one acknowledged and every durable outbox event
# not acknowledged still there (power-cut-check.py compare). GATTWAY_POWER_CUTS cuts (default 5),
# then one boot more for the last check.
#
# Bonds come from StateFileProbe, not from phones pairing: the VM has no Bluetooth controller.
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -euo pipefail

readonly SKIP=77
skip() { echo "[power-cut] SKIPPED: $*"; exit "$SKIP"; }
fail() { echo "[power-cut] FAILED: $*"; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
cuts=${GATTWAY_POWER_CUTS:-5}
started=$SECONDS

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
[[ $EUID -eq 0 ]] || skip "must run as root (the VM shares this machine's whole root filesystem)"
for tool in mkfs.ext4 e2fsck mosquitto mosquitto_sub /usr/bin/python3; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done

# gattway and the probe, built on this machine, run inside the VM through the shared root.
gattway=$repo/.build/debug/gattway
probe=$repo/.build/debug/StateFileProbe
if [[ ! -x $gattway || ! -x $probe ]]; then
    echo "[power-cut] building gattway and StateFileProbe"
    (cd "$repo" && swift build --product gattway >/dev/null && swift build --product StateFileProbe >/dev/null) \
        || fail "swift build"
fi

work=$cache/power-cut-tests
rm -rf "$work"
mkdir -p "$work"
disk=$work/state.img
truncate -s 64M "$disk"
mkfs.ext4 -q -F "$disk"

failures=0
for boot in $(seq 1 $((cuts + 1))); do
    mode=cut
    [[ $boot -gt $cuts ]] && mode=last
    log=$work/boot-$boot.log
    rm -f "$work/qemu.pid"
    : >"$log"
    "$here/run-in-vm.sh" --disk "$disk" --pidfile "$work/qemu.pid" \
        --module virtio_blk --module crc32c_generic --module ext4 --timeout 300 -- \
        bash "$here/power-cut-guest.sh" "$gattway" "$probe" "$boot" "$mode" >"$log" 2>"$work/boot-$boot.err" &
    vm=$!
    if [[ $mode == cut ]]; then
        while kill -0 "$vm" 2>/dev/null && ! grep -q '^load running$' "$log"; do sleep 0.2; done
        if ! grep -q '^load running$' "$log"; then
            wait "$vm" && status=0 || status=$?
            [[ $status -eq $SKIP ]] && skip "$(grep -h 'SKIPPED' "$work/boot-$boot.err" | head -n 1)"
            cat "$log" "$work/boot-$boot.err"
            fail "boot $boot ended (exit $status) before its load ran"
        fi
        delay_ms=$((200 + RANDOM % 2800))
        sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
        kill -9 "$(cat "$work/qemu.pid")"
        wait "$vm" || true # run-in-vm.sh reports the VM gone without finishing: the cut
        echo "[power-cut] cut $boot of $cuts: power cut $delay_ms ms into the load, after" \
            "$(grep -c '^gattway published' "$log") published totals, $(grep -c '^counter saved' "$log")" \
            "counter and $(grep -c '^bonds saved' "$log") bonds saves, $(grep -c '^outbox durable' "$log") durable outbox events"
    else
        wait "$vm" && status=0 || status=$?
        if [[ $status -ne 0 ]]; then
            cat "$log" "$work/boot-$boot.err"
            fail "the boot after the last cut failed (exit $status)"
        fi
    fi
    if [[ $boot -gt 1 ]]; then
        echo "[power-cut] boot $boot, after cut $((boot - 1)):"
        /usr/bin/python3 "$here/power-cut-check.py" compare "$work/boot-$((boot - 1)).log" "$log" \
            || failures=$((failures + 1))
    fi
done

if [[ $failures -eq 0 ]]; then
    echo "[power-cut] PASSED: $cuts power cuts, every state file whole after each, in $((SECONDS - started)) s"
else
    echo "[power-cut] FAILED: $failures of $cuts power cuts left a torn file, a lost event or a total gone back" \
        "(logs in $work) after $((SECONDS - started)) s"
    exit 1
fi
