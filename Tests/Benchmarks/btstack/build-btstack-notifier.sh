#!/usr/bin/env bash
# Builds the event-cost benchmark's BTstack peer (btstack_notifier.c) against a BTstack source
# tree given in BTSTACK_SRC, which this repository does not contain (BTstack's licence is not the
# project's). The benchmark compares against BTstack v1.8.2, commit $pinned below: a git checkout
# at another commit is refused (BTSTACK_ANY_COMMIT=1 builds it anyway); a tree without git is
# built with a warning, its commit unknown. To get the tree:
#   git clone https://github.com/bluekitchen/btstack && git -C btstack checkout v1.8.2
#
#   build-btstack-notifier.sh OUTPUT_DIR     → OUTPUT_DIR/btstack_notifier
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pinned=075a0780f0fad7ff67d58ac19f46e8953656a752 # v1.8.2
out=${1:?usage: build-btstack-notifier.sh OUTPUT_DIR}
src=${BTSTACK_SRC:-}
if [[ -z $src ]]; then
    echo "build-btstack-notifier: BTSTACK_SRC is not set, so there is no BTstack peer: set it to a" \
        "BTstack source tree at v1.8.2 ($pinned)" >&2
    exit 2
fi
if [[ ! -f $src/src/hci.c || ! -f $src/tool/compile_gatt.py ]]; then
    echo "build-btstack-notifier: BTSTACK_SRC=$src is not a BTstack source tree (no src/hci.c)" >&2
    exit 1
fi
if commit=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
    if [[ $commit != "$pinned" && ${BTSTACK_ANY_COMMIT:-0} != 1 ]]; then
        echo "build-btstack-notifier: BTSTACK_SRC is at $commit, not v1.8.2 ($pinned);" \
            "check that out, or set BTSTACK_ANY_COMMIT=1" >&2
        exit 1
    fi
else
    commit=unknown
    echo "build-btstack-notifier: warning: $src is not a git checkout; its commit is unknown" >&2
fi
mkdir -p "$out"
python3 "$src/tool/compile_gatt.py" "$here/btstack_notifier.gatt" "$out/btstack_notifier.h" >/dev/null
sources=(
    src/btstack_memory.c src/btstack_linked_list.c src/btstack_memory_pool.c src/btstack_run_loop.c
    src/btstack_util.c src/ad_parser.c src/hci.c src/hci_cmd.c src/hci_dump.c src/hci_event.c
    src/l2cap.c src/l2cap_signaling.c src/btstack_crypto.c src/btstack_tlv.c src/hci_transport_h4.c
    src/ble/sm.c src/ble/att_dispatch.c src/ble/att_db.c src/ble/att_server.c
    src/ble/le_device_db_memory.c platform/posix/btstack_run_loop_posix.c
)
"${CC:-cc}" -O2 -w -I"$here" -I"$out" -I"$src/src" -I"$src/src/ble" -I"$src/platform/posix" \
    -o "$out/btstack_notifier" "$here/btstack_notifier.c" "${sources[@]/#/$src/}"
echo "$commit" >"$out/btstack_notifier.commit"
