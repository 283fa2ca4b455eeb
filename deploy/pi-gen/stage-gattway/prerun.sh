#!/bin/bash -e
# Start from the previous stage's root filesystem (stage2: Raspberry Pi OS Lite), as pi-gen's own
# stages do.
if [ ! -d "${ROOTFS_DIR}" ]; then
	copy_previous
fi
