#!/usr/bin/env python3
"""Holds adapter hciN's HCI user channel until killed: the "other program" of
UserChannelHeldElsewhereTests, whose hold makes the kernel refuse gattway the adapter.

    hold_user_channel.py N      # prints "holding hciN" once the channel is bound

Python's socket module cannot bind an HCI socket to a channel (its address is the device alone),
so bind goes through libc with the kernel's struct sockaddr_hci: family, device, channel, each a
native-endian u16 (include/net/bluetooth/hci_sock.h).
"""
import ctypes
import fcntl
import os
import socket
import struct
import sys
import time

AF_BLUETOOTH = 31
BTPROTO_HCI = 1
HCI_CHANNEL_USER = 1
# _IOW('H', 202, int): the kernel grants the user channel only while the adapter is down.
HCIDEVDOWN = (1 << 30) | (4 << 16) | (ord("H") << 8) | 202


def main() -> None:
    adapter = int(sys.argv[1])
    hci = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW, BTPROTO_HCI)
    fcntl.ioctl(hci.fileno(), HCIDEVDOWN, adapter)
    libc = ctypes.CDLL(None, use_errno=True)
    address = struct.pack("=HHH", AF_BLUETOOTH, adapter, HCI_CHANNEL_USER)
    if libc.bind(hci.fileno(), address, len(address)) != 0:
        code = ctypes.get_errno()
        sys.exit(f"bind hci{adapter} HCI_CHANNEL_USER: {os.strerror(code)}")
    print(f"holding hci{adapter}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
