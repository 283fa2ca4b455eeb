// The BTstack peer of the event-cost benchmark: an LE peripheral built on BTstack (BlueKitchen's
// embedded C host) that serves one bool characteristic (read, notify) and notifies each change,
// as gattway and bumble_notifier.py do in the same run. BTstack itself is not part of this
// repository (its licence is not the project's): build-btstack-notifier.sh compiles this file
// against a BTstack source tree it is given (BTSTACK_SRC).
//
//   btstack_notifier tcp:HOST:PORT|unix:PATH NAME RATE [SOCKET]
//
// The host is BTstack's as its posix ports run it: the posix run loop (select) and the H4
// transport reading each packet in blocks (type, header, payload). Only the UART driver under
// H4 is this file's: it reaches the harness's virtual controller over a stream socket (TCP or
// Unix, as gattway does) where BTstack's posix UART driver opens a serial device, and does what
// that driver does (a read per block asked for, each write when the run loop finds the socket
// writable). A change is notified at once when ATT can send, as gattway does; otherwise it asks
// for a "can send now" event, which sends the value then (gatt_counter's pattern, BTstack's
// example). With that event alone, BTstack sends only on the host's next HCI event (the
// controller's completion of the previous packet, 1 ms later here), so at 1,000 changes a second
// it notified about every other change and each notification carried two wake-ups.
//
// With SOCKET the levels come from outside, as they do for gattway's socket-driven line: a Unix
// datagram socket bound there, each datagram's "0"/"1" bytes applied (a descriptor wakes it);
// without, a run-loop timer toggles the value every 1/RATE s (milliseconds, as BTstack's timers
// count). Prints "ready" once the controller is up; logs nothing else.

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "btstack.h"
#include "btstack_run_loop_posix.h"
#include "hci_transport_h4.h"

#include "btstack_notifier.h"  // the GATT database, made from btstack_notifier.gatt by compile_gatt.py

#define VALUE_HANDLE ATT_CHARACTERISTIC_6E400002_B5A3_F393_E0A9_E50E24DC0001_01_VALUE_HANDLE
#define CONFIGURATION_HANDLE ATT_CHARACTERISTIC_6E400002_B5A3_F393_E0A9_E50E24DC0001_01_CLIENT_CONFIGURATION_HANDLE

// MARK: - A UART driver over a stream socket

static const btstack_uart_config_t *uart_config;
static btstack_data_source_t controller_source;
static const uint8_t *pending_write;
static uint16_t pending_write_length;
static uint8_t *pending_read;
static uint16_t pending_read_length;
static void (*block_sent)(void);
static void (*block_received)(void);

static void fail(const char *what) {
    fprintf(stderr, "btstack_notifier: %s: %s\n", what, errno ? strerror(errno) : "connection closed");
    exit(EXIT_FAILURE);
}

static int connect_controller(const char *spec) {
    int fd = -1;
    if (strncmp(spec, "unix:", 5) == 0) {
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        if (strlen(spec + 5) >= sizeof(address.sun_path)) {
            fprintf(stderr, "btstack_notifier: socket path too long: %s\n", spec + 5);
            exit(EXIT_FAILURE);
        }
        strcpy(address.sun_path, spec + 5);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof(address)) < 0) fail(spec);
    } else if (strncmp(spec, "tcp:", 4) == 0) {
        char host[64];
        const char *colon = strrchr(spec + 4, ':');
        size_t host_length = colon ? (size_t)(colon - (spec + 4)) : 0;
        struct sockaddr_in address = {.sin_family = AF_INET};
        if (!colon || host_length >= sizeof(host)) {
            fprintf(stderr, "btstack_notifier: not tcp:HOST:PORT: %s\n", spec);
            exit(EXIT_FAILURE);
        }
        memcpy(host, spec + 4, host_length);
        host[host_length] = 0;
        address.sin_port = htons((uint16_t)atoi(colon + 1));
        if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
            fprintf(stderr, "btstack_notifier: not an IPv4 address: %s\n", host);
            exit(EXIT_FAILURE);
        }
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof(address)) < 0) fail(spec);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    } else {
        fprintf(stderr, "btstack_notifier: not tcp:HOST:PORT or unix:PATH: %s\n", spec);
        exit(EXIT_FAILURE);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void controller_ready(btstack_data_source_t *source, btstack_data_source_callback_type_t type) {
    if (type == DATA_SOURCE_CALLBACK_READ) {
        if (pending_read_length == 0) {
            btstack_run_loop_disable_data_source_callbacks(source, DATA_SOURCE_CALLBACK_READ);
            return;
        }
        errno = 0;
        ssize_t count = read(source->source.fd, pending_read, pending_read_length);
        if (count <= 0) fail("read");
        pending_read += count;
        pending_read_length -= (uint16_t)count;
        if (pending_read_length > 0) return;
        btstack_run_loop_disable_data_source_callbacks(source, DATA_SOURCE_CALLBACK_READ);
        if (block_received) block_received();
    } else if (type == DATA_SOURCE_CALLBACK_WRITE) {
        if (pending_write_length == 0) return;
        errno = 0;
        ssize_t count = write(source->source.fd, pending_write, pending_write_length);
        if (count <= 0) fail("write");
        pending_write += count;
        pending_write_length -= (uint16_t)count;
        if (pending_write_length > 0) return;
        btstack_run_loop_disable_data_source_callbacks(source, DATA_SOURCE_CALLBACK_WRITE);
        if (block_sent) block_sent();
    }
}

static int uart_init(const btstack_uart_config_t *config) {
    uart_config = config;
    return 0;
}

static int uart_open(void) {
    btstack_run_loop_set_data_source_fd(&controller_source, connect_controller(uart_config->device_name));
    btstack_run_loop_set_data_source_handler(&controller_source, &controller_ready);
    btstack_run_loop_add_data_source(&controller_source);
    return 0;
}

static int uart_close(void) {
    btstack_run_loop_remove_data_source(&controller_source);
    close(controller_source.source.fd);
    return 0;
}

static void uart_set_block_received(void (*handler)(void)) {
    pending_read_length = 0;
    block_received = handler;
}

static void uart_set_block_sent(void (*handler)(void)) {
    pending_write_length = 0;
    block_sent = handler;
}

// A socket has no line settings.
static int uart_set_baudrate(uint32_t baudrate) {
    (void)baudrate;
    return 0;
}

static int uart_set_parity(int parity) {
    (void)parity;
    return 0;
}

static int uart_set_flowcontrol(int flowcontrol) {
    (void)flowcontrol;
    return 0;
}

static void uart_receive_block(uint8_t *buffer, uint16_t length) {
    pending_read = buffer;
    pending_read_length = length;
    btstack_run_loop_enable_data_source_callbacks(&controller_source, DATA_SOURCE_CALLBACK_READ);
}

static void uart_send_block(const uint8_t *data, uint16_t length) {
    pending_write = data;
    pending_write_length = length;
    btstack_run_loop_enable_data_source_callbacks(&controller_source, DATA_SOURCE_CALLBACK_WRITE);
}

static const btstack_uart_t socket_uart = {
    .init = &uart_init,
    .open = &uart_open,
    .close = &uart_close,
    .set_block_received = &uart_set_block_received,
    .set_block_sent = &uart_set_block_sent,
    .set_baudrate = &uart_set_baudrate,
    .set_parity = &uart_set_parity,
    .set_flowcontrol = &uart_set_flowcontrol,
    .receive_block = &uart_receive_block,
    .send_block = &uart_send_block,
};

// MARK: - The peripheral

static uint8_t value;
static bool subscribed;
static hci_con_handle_t subscriber;
static btstack_timer_source_t toggle_timer;
static uint32_t toggle_period_ms;
static btstack_data_source_t line_source;
static btstack_packet_callback_registration_t hci_registration;

static void set_value(uint8_t level) {
    if (level == value) return;
    value = level;
    if (!subscribed) return;
    if (att_server_can_send_packet_now(subscriber)) {
        att_server_notify(subscriber, VALUE_HANDLE, &value, 1);
    } else {
        att_server_request_can_send_now_event(subscriber);
    }
}

static void toggle(btstack_timer_source_t *timer) {
    set_value(value ^ 1);
    btstack_run_loop_set_timer(timer, toggle_period_ms);
    btstack_run_loop_add_timer(timer);
}

static void line_readable(btstack_data_source_t *source, btstack_data_source_callback_type_t type) {
    (void)type;
    uint8_t datagram[256];
    ssize_t count = recv(source->source.fd, datagram, sizeof(datagram), 0);
    for (ssize_t i = 0; i < count; i++) {
        if (datagram[i] == '0' || datagram[i] == '1') set_value(datagram[i] - '0');
    }
}

static void bind_line(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(address.sun_path)) {
        fprintf(stderr, "btstack_notifier: socket path too long: %s\n", path);
        exit(EXIT_FAILURE);
    }
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) fail(path);
    btstack_run_loop_set_data_source_fd(&line_source, fd);
    btstack_run_loop_set_data_source_handler(&line_source, &line_readable);
    btstack_run_loop_enable_data_source_callbacks(&line_source, DATA_SOURCE_CALLBACK_READ);
    btstack_run_loop_add_data_source(&line_source);
}

static void packet_handler(uint8_t packet_type, uint16_t channel, uint8_t *packet, uint16_t size) {
    (void)channel;
    (void)size;
    if (packet_type != HCI_EVENT_PACKET) return;
    switch (hci_event_packet_get_type(packet)) {
        case BTSTACK_EVENT_STATE:
            if (btstack_event_state_get_state(packet) == HCI_STATE_WORKING) {
                printf("ready\n");
                fflush(stdout);
            }
            break;
        case HCI_EVENT_DISCONNECTION_COMPLETE:
            subscribed = false;
            break;
        case ATT_EVENT_CAN_SEND_NOW:
            att_server_notify(subscriber, VALUE_HANDLE, &value, 1);
            break;
        default:
            break;
    }
}

static uint16_t read_value(hci_con_handle_t connection, uint16_t handle, uint16_t offset, uint8_t *buffer,
                           uint16_t buffer_size) {
    (void)connection;
    if (handle != VALUE_HANDLE) return 0;
    return att_read_callback_handle_blob(&value, 1, offset, buffer, buffer_size);
}

static int write_value(hci_con_handle_t connection, uint16_t handle, uint16_t mode, uint16_t offset,
                       uint8_t *buffer, uint16_t buffer_size) {
    (void)mode;
    (void)offset;
    if (handle == CONFIGURATION_HANDLE && buffer_size >= 2) {
        subscribed = little_endian_read_16(buffer, 0) == GATT_CLIENT_CHARACTERISTICS_CONFIGURATION_NOTIFICATION;
        subscriber = connection;
    }
    return 0;
}

int main(int argc, const char *argv[]) {
    if ((argc != 4 && argc != 5) || (strncmp(argv[1], "tcp:", 4) != 0 && strncmp(argv[1], "unix:", 5) != 0)) {
        fprintf(stderr, "usage: btstack_notifier tcp:HOST:PORT|unix:PATH NAME RATE [SOCKET]\n");
        return EXIT_FAILURE;
    }
    const char *name = argv[2];
    int rate = atoi(argv[3]);
    if (rate < 1 || rate > 1000 || strlen(name) > 29) {
        fprintf(stderr, "btstack_notifier: RATE must be 1 to 1000 (a timer counts milliseconds), NAME at most 29 bytes\n");
        return EXIT_FAILURE;
    }

    static hci_transport_config_uart_t transport_config = {.type = HCI_TRANSPORT_CONFIG_UART, .baudrate_init = 115200};
    transport_config.device_name = argv[1];
    btstack_memory_init();
    btstack_run_loop_init(btstack_run_loop_posix_get_instance());
    hci_init(hci_transport_h4_instance_for_uart(&socket_uart), &transport_config);
    hci_registration.callback = &packet_handler;
    hci_add_event_handler(&hci_registration);

    l2cap_init();
    sm_init();
    sm_set_io_capabilities(IO_CAPABILITY_NO_INPUT_NO_OUTPUT);
    sm_set_authentication_requirements(0);
    att_server_init(profile_data, &read_value, &write_value);
    att_server_register_packet_handler(&packet_handler);

    // As the benchmark's other peripherals advertise (bench_support.advertise): the service UUID
    // every 20 ms, the name in the scan response.
    static uint8_t advertising[3 + 18] = {0x02, BLUETOOTH_DATA_TYPE_FLAGS, 0x06, 17,
                                          BLUETOOTH_DATA_TYPE_COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS};
    static const uint8_t service_uuid[16] = {0x6E, 0x40, 0x00, 0x01, 0xB5, 0xA3, 0xF3, 0x93,
                                             0xE0, 0xA9, 0xE5, 0x0E, 0x24, 0xDC, 0x00, 0x01};
    reverse_128(service_uuid, &advertising[5]);
    static uint8_t scan_response[31];
    scan_response[0] = (uint8_t)(strlen(name) + 1);
    scan_response[1] = BLUETOOTH_DATA_TYPE_COMPLETE_LOCAL_NAME;
    memcpy(&scan_response[2], name, strlen(name));
    bd_addr_t no_address = {0};
    gap_advertisements_set_params(32, 32, 0, 0, no_address, 0x07, 0x00);
    gap_advertisements_set_data(sizeof(advertising), advertising);
    gap_scan_response_set_data((uint8_t)(strlen(name) + 2), scan_response);
    gap_advertisements_enable(1);

    if (argc == 5) {
        bind_line(argv[4]);
    } else {
        toggle_period_ms = (uint32_t)(1000 / rate);
        btstack_run_loop_set_timer_handler(&toggle_timer, &toggle);
        btstack_run_loop_set_timer(&toggle_timer, toggle_period_ms);
        btstack_run_loop_add_timer(&toggle_timer);
    }

    hci_power_control(HCI_POWER_ON);
    btstack_run_loop_execute();
    return EXIT_SUCCESS;
}
