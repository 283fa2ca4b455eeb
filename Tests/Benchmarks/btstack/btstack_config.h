// BTstack's configuration for the benchmark's BTstack peripheral (btstack_notifier.c): an LE
// peripheral with the posix run loop, no logging, no Classic, no secure connections.
#ifndef BTSTACK_CONFIG_H
#define BTSTACK_CONFIG_H

#define HAVE_MALLOC
#define HAVE_POSIX_TIME

#define ENABLE_BLE
#define ENABLE_LE_PERIPHERAL

#define HCI_ACL_PAYLOAD_SIZE (251 + 4)
#define MAX_NR_LE_DEVICE_DB_ENTRIES 4

#endif
