#!/bin/bash -e
# Installs gattway into the Raspberry Pi OS Lite root: the package (placed in files/ by
# deploy/build-image.sh), which creates the gattway user and enables gattway.service, and the
# first-boot import of /boot/firmware/gattway.yaml.

install -m 0644 files/gattway.deb "${ROOTFS_DIR}/tmp/gattway.deb"
on_chroot << 'CHROOT'
apt-get install -y /tmp/gattway.deb
rm -f /tmp/gattway.deb
CHROOT

install -d -m 0755 "${ROOTFS_DIR}/usr/local/libexec/gattway"
install -m 0755 files/gattway-import-boot-config "${ROOTFS_DIR}/usr/local/libexec/gattway/"
install -m 0644 files/gattway-import-boot-config.service "${ROOTFS_DIR}/etc/systemd/system/"

# A config baked into the image by build-image.sh --boot-config lands where a user would put it.
if [ -f files/gattway.yaml ]; then
	install -m 0644 files/gattway.yaml "${ROOTFS_DIR}/boot/firmware/gattway.yaml"
fi

on_chroot << 'CHROOT'
systemctl enable gattway.service gattway-import-boot-config.service
CHROOT
