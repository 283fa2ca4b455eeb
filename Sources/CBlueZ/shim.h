// libbluetooth's socket API: AF_BLUETOOTH, struct sockaddr_hci, HCI_CHANNEL_USER, HCI ioctls.
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
