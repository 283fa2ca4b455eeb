// Behavioural test of the libgpiod C shim (Sources/CGPIODShim) against a gpio-sim chip, run
// inside the VM by gpio-sim-tests.sh. Built twice: against libgpiod 1.6 (this machine) and, when
// the Debian 13 root exists, against libgpiod 2.x. Expects run-in-vm.sh --gpio-sim's environment:
// GATTWAY_GPIOSIM_CHIP (/dev/gpiochipN, label gattway-sim, lines SIM0..SIM7) and
// GATTWAY_GPIOSIM_SYSFS (.../gpiochipN, with sim_gpio<k>/pull and sim_gpio<k>/value).
#include "gpiod_shim.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
static const char *chip_path;
static const char *sysfs;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (cond) {                                                                               \
            printf("  ok   ");                                                                    \
        } else {                                                                                  \
            printf("  FAIL ");                                                                    \
            failures++;                                                                           \
        }                                                                                         \
        printf(__VA_ARGS__);                                                                      \
        printf("\n");                                                                             \
    } while (0)

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

// Drives input line k from outside, as a wire would: gpio-sim's pull = the level seen by the chip.
static void drive(int k, int level) {
    char path[512];
    snprintf(path, sizeof path, "%s/sim_gpio%d/pull", sysfs, k);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(level ? "pull-up" : "pull-down", f) < 0 || fclose(f) != 0) {
        printf("  FAIL cannot write %s: %s\n", path, strerror(errno));
        failures++;
    }
}

// The physical level the chip outputs on line k.
static int physical(int k) {
    char path[512];
    snprintf(path, sizeof path, "%s/sim_gpio%d/value", sysfs, k);
    FILE *f = fopen(path, "r");
    int value = -1;
    if (f == NULL || fscanf(f, "%d", &value) != 1) value = -1;
    if (f) fclose(f);
    return value;
}

// Waits up to `ms` for the request's fd to become readable, then reads without blocking.
static int wait_events(gw_line_request *request, gw_edge_event *events, size_t max, int ms) {
    struct pollfd pfd = {.fd = gw_line_request_fd(request), .events = POLLIN};
    if (poll(&pfd, 1, ms) < 0) return -1;
    return gw_line_request_read_events(request, events, max);
}

// ": <errno text>" after a failed open, nothing after a successful one.
static const char *why(const void *result) {
    static char text[128];
    if (result != NULL) return "";
    snprintf(text, sizeof text, ": %s", strerror(errno));
    return text;
}

static gw_line_config input(int bias, bool active_low, int edge) {
    return (gw_line_config){.direction = GW_DIRECTION_INPUT, .bias = bias,
                            .active_low = active_low, .edge = edge};
}

static void test_chip_and_lookup(gw_chip *chip) {
    printf("chip and lookup by name\n");
    char name[64], label[64];
    unsigned lines = 0;
    CHECK(gw_chip_info(chip, name, sizeof name, label, sizeof label, &lines) == 0, "chip info");
    CHECK(strcmp(label, "gattway-sim") == 0, "label is gattway-sim (got %s)", label);
    CHECK(strncmp(name, "gpiochip", 8) == 0 && strstr(chip_path, name), "name %s matches %s",
          name, chip_path);
    CHECK(lines == 8, "8 lines (got %u)", lines);
    for (int k = 0; k < 8; k++) {
        char line[8];
        snprintf(line, sizeof line, "SIM%d", k);
        int offset = gw_chip_find_line(chip, line);
        if (offset != k) CHECK(false, "%s at offset %d (got %d)", line, k, offset);
    }
    CHECK(gw_chip_find_line(chip, "SIM5") == 5, "SIM0..SIM7 found at offsets 0..7");
    errno = 0;
    CHECK(gw_chip_find_line(chip, "GPIO17") == -1 && errno == ENOENT,
          "a missing line: -1 with ENOENT (errno %d)", errno);
    gw_line_info info;
    CHECK(gw_chip_line_info(chip, 2, &info) == 0 && strcmp(info.name, "SIM2") == 0 && !info.used,
          "line info of SIM2: named, free");
    errno = 0;
    CHECK(gw_chip_open("/dev/gpiochip-nonexistent") == NULL && errno == ENOENT,
          "opening a missing chip: NULL with ENOENT (errno %d)", errno);
}

static void test_bias(gw_chip *chip) {
    printf("bias and active-low\n");
    gw_line_config config = input(GW_BIAS_PULL_UP, false, GW_EDGE_NONE);
    gw_line_request *request = gw_line_request_open(chip, 0, "shim-test", &config);
    CHECK(request != NULL, "request SIM0 with pull-up%s", why(request));
    if (!request) return;
    CHECK(gw_line_request_get_value(request) == 1, "pull-up reads 1");
    gw_line_info info;
    CHECK(gw_chip_line_info(chip, 0, &info) == 0 && info.used
              && strcmp(info.consumer, "shim-test") == 0 && info.bias == GW_BIAS_PULL_UP
              && info.direction == GW_DIRECTION_INPUT,
          "line info: used by shim-test, input, pull-up (consumer '%s', bias %d)", info.consumer,
          info.bias);
    config = input(GW_BIAS_PULL_UP, false, GW_EDGE_NONE);
    errno = 0;
    gw_line_request *again = gw_line_request_open(chip, 0, "other", &config);
    CHECK(again == NULL && errno == EBUSY, "a second request of SIM0: NULL with EBUSY (errno %d)",
          errno);
    gw_line_request_release(request);

    config = input(GW_BIAS_PULL_DOWN, false, GW_EDGE_NONE);
    request = gw_line_request_open(chip, 0, "shim-test", &config);
    CHECK(request && gw_line_request_get_value(request) == 0, "pull-down reads 0");
    gw_line_request_release(request);

    config = input(GW_BIAS_PULL_UP, true, GW_EDGE_NONE);
    request = gw_line_request_open(chip, 0, "shim-test", &config);
    CHECK(request && gw_line_request_get_value(request) == 0, "pull-up with active-low reads 0");
    CHECK(gw_chip_line_info(chip, 0, &info) == 0 && info.active_low, "line info: active-low");
    gw_line_request_release(request);
}

static void test_edges(gw_chip *chip) {
    printf("edge events\n");
    drive(1, 0);
    gw_line_config config = input(GW_BIAS_AS_IS, false, GW_EDGE_BOTH);
    gw_line_request *request = gw_line_request_open(chip, 1, "shim-test", &config);
    CHECK(request != NULL, "request SIM1 for both edges%s", why(request));
    if (!request) return;
    gw_edge_event events[8];
    CHECK(gw_line_request_read_events(request, events, 8) == 0,
          "nothing pending: read returns 0 without blocking");
    // One edge at a time: gpio-sim's interrupt is masked while the kernel's threaded handler
    // runs, so a second change within that window would be merged into the first.
    uint64_t before = monotonic_ns();
    int count = 0;
    for (int level = 1, i = 0; i < 3; i++, level = !level) {
        drive(1, level);
        int got = wait_events(request, events + count, 8 - (size_t)count, 2000);
        if (got > 0) count += got;
    }
    uint64_t after = monotonic_ns();
    CHECK(count == 3, "three edges read (got %d)", count);
    if (count == 3) {
        CHECK(events[0].edge == GW_EDGE_RISING && events[1].edge == GW_EDGE_FALLING
                  && events[2].edge == GW_EDGE_RISING,
              "rising, falling, rising");
        CHECK(events[0].timestamp_ns >= before && events[2].timestamp_ns <= after
                  && events[0].timestamp_ns <= events[1].timestamp_ns
                  && events[1].timestamp_ns <= events[2].timestamp_ns,
              "CLOCK_MONOTONIC timestamps, in order, within the test's window");
        if (gw_gpiod_api_major() == 2) {
            CHECK(events[0].line_seqno == 1 && events[1].line_seqno == 2
                      && events[2].line_seqno == 3,
                  "line sequence numbers 1, 2, 3 (got %llu %llu %llu)",
                  (unsigned long long)events[0].line_seqno,
                  (unsigned long long)events[1].line_seqno,
                  (unsigned long long)events[2].line_seqno);
        } else {
            CHECK(events[0].line_seqno == 0 && events[2].global_seqno == 0,
                  "libgpiod 1.6: no sequence numbers (0)");
        }
    }
    CHECK(gw_line_request_get_value(request) == 1, "value of an edge-requested line reads 1");
    gw_line_request_release(request);

    config = input(GW_BIAS_AS_IS, false, GW_EDGE_FALLING);
    request = gw_line_request_open(chip, 1, "shim-test", &config);
    drive(1, 0);
    count = wait_events(request, events, 8, 2000);
    drive(1, 1);
    sleep_ms(200);
    if (count >= 0) count += gw_line_request_read_events(request, events + count, 8 - (size_t)count);
    CHECK(count == 1 && events[0].edge == GW_EDGE_FALLING, "falling-only: one falling edge (got %d)",
          count);
    gw_line_request_release(request);
}

// libgpiod 2 only: the kernel's debounce and its bounded event buffer, where sequence numbers
// reveal lost events.
static void test_v2_kernel_features(gw_chip *chip) {
    printf("debounce and lost events (libgpiod 2)\n");
    drive(2, 0);
    gw_line_config config = input(GW_BIAS_AS_IS, false, GW_EDGE_BOTH);
    config.debounce_us = 300000;
    gw_line_request *request = gw_line_request_open(chip, 2, "shim-test", &config);
    CHECK(request != NULL, "request SIM2 with a 300 ms debounce%s", why(request));
    if (!request) return;
    gw_line_info info;
    CHECK(gw_chip_line_info(chip, 2, &info) == 0 && info.debounce_us == 300000
              && info.edge == GW_EDGE_BOTH,
          "line info: debounce 300000 us, both edges (got %u, %d)", info.debounce_us, info.edge);
    gw_edge_event events[8];
    drive(2, 1); // a bounce: back before the debounce period ends
    drive(2, 0);
    sleep_ms(700);
    int count = gw_line_request_read_events(request, events, 8);
    CHECK(count == 0, "a bounce shorter than the debounce period: no event (got %d)", count);
    drive(2, 1);
    sleep_ms(700);
    count = gw_line_request_read_events(request, events, 8);
    CHECK(count == 1 && events[0].edge == GW_EDGE_RISING,
          "a level held longer than the period: one rising edge (got %d)", count);
    gw_line_request_release(request);

    drive(3, 0);
    config = input(GW_BIAS_AS_IS, false, GW_EDGE_BOTH);
    config.event_buffer_size = 2;
    request = gw_line_request_open(chip, 3, "shim-test", &config);
    CHECK(request != NULL, "request SIM3 with a 2-event kernel buffer%s", why(request));
    if (!request) return;
    for (int i = 0; i < 3; i++) { // spaced out, so that no change is merged (see test_edges)
        drive(3, 1);
        sleep_ms(100);
        drive(3, 0);
        sleep_ms(100);
    }
    count = gw_line_request_read_events(request, events, 8);
    CHECK(count == 2 && events[1].line_seqno == 6 && events[0].line_seqno == 5,
          "6 edges into a 2-event buffer: the last two kept, seqnos 5 and 6 show 4 lost (got %d, "
          "last seqno %llu)",
          count, count > 0 ? (unsigned long long)events[count - 1].line_seqno : 0ull);
    gw_line_request_release(request);
}

static void test_outputs(gw_chip *chip) {
    printf("outputs\n");
    gw_line_config config = {.direction = GW_DIRECTION_OUTPUT, .initial_value = 1};
    gw_line_request *request = gw_line_request_open(chip, 4, "shim-test", &config);
    CHECK(request != NULL, "request SIM4 as output, initially 1%s", why(request));
    if (!request) return;
    CHECK(physical(4) == 1, "SIM4 drives 1");
    CHECK(gw_line_request_set_value(request, 0) == 0 && physical(4) == 0, "set 0: SIM4 drives 0");
    CHECK(gw_line_request_set_value(request, 1) == 0 && physical(4) == 1, "set 1: SIM4 drives 1");
    CHECK(gw_line_request_get_value(request) == 1, "an output reads back its value");
    gw_line_info info;
    CHECK(gw_chip_line_info(chip, 4, &info) == 0 && info.direction == GW_DIRECTION_OUTPUT,
          "line info: output");
    gw_line_request_release(request);

    config = (gw_line_config){.direction = GW_DIRECTION_OUTPUT, .active_low = true,
                              .initial_value = 1};
    request = gw_line_request_open(chip, 5, "shim-test", &config);
    CHECK(request && physical(5) == 0, "active-low output, logical 1: SIM5 drives 0");
    CHECK(request && gw_line_request_set_value(request, 0) == 0 && physical(5) == 1,
          "active-low output, logical 0: SIM5 drives 1");
    gw_line_request_release(request);

    config = (gw_line_config){.direction = GW_DIRECTION_OUTPUT, .edge = GW_EDGE_BOTH};
    errno = 0;
    CHECK(gw_line_request_open(chip, 6, "shim-test", &config) == NULL && errno == EINVAL,
          "edge detection on an output is refused with EINVAL");
}

// An output turned into an edge-detecting input without giving the line back (what a DHT's
// start signal needs): in place on libgpiod 2, refused cleanly on libgpiod 1.6.
static void test_reconfigure(gw_chip *chip) {
    printf("output switched to input in place\n");
    drive(6, 0);
    gw_line_config config = {.direction = GW_DIRECTION_OUTPUT, .initial_value = 0,
                             .event_buffer_size = 16};
    gw_line_request *request = gw_line_request_open(chip, 6, "shim-test", &config);
    CHECK(request != NULL, "request SIM6 as output with a 16-event buffer for later%s", why(request));
    if (!request) return;
    gw_line_config to_input = input(GW_BIAS_AS_IS, false, GW_EDGE_BOTH);
    errno = 0;
    int result = gw_line_request_reconfigure(request, &to_input);
    int error = errno;
    if (gw_gpiod_api_major() == 1) {
        CHECK(result == -1 && error == EOPNOTSUPP,
              "libgpiod 1.6: reconfigure is refused with EOPNOTSUPP (got %d, errno %d)", result, error);
        CHECK(gw_line_request_set_value(request, 1) == 0 && physical(6) == 1,
              "and the request is still the output: set 1 drives 1");
        gw_line_request_release(request);
        return;
    }
    CHECK(result == 0, "reconfigured to an input with both edges (errno %d)", result ? error : 0);
    gw_line_info info;
    CHECK(gw_chip_line_info(chip, 6, &info) == 0 && info.used && strcmp(info.consumer, "shim-test") == 0
              && info.direction == GW_DIRECTION_INPUT && info.edge == GW_EDGE_BOTH,
          "line info: still held by shim-test, now an input with both edges");
    gw_edge_event events[4];
    CHECK(gw_line_request_read_events(request, events, 4) == 0, "no event yet");
    int count = 0;
    for (int level = 1; level >= 0; level--) { // one edge at a time (see test_edges)
        drive(6, level);
        int got = wait_events(request, events + count, 4 - (size_t)count, 2000);
        if (got > 0) count += got;
    }
    CHECK(count == 2 && events[0].edge == GW_EDGE_RISING && events[1].edge == GW_EDGE_FALLING
              && events[0].line_seqno == 1 && events[1].line_seqno == 2,
          "edges on the same request: rising then falling, seqnos 1 and 2 (got %d)", count);
    gw_line_config to_output = {.direction = GW_DIRECTION_OUTPUT, .initial_value = 1};
    CHECK(gw_line_request_reconfigure(request, &to_output) == 0 && physical(6) == 1,
          "reconfigured back to an output driving 1");
    drive(6, 0);
    CHECK(gw_line_request_read_events(request, events, 4) == 0, "an output reads no events");
    gw_line_config invalid = {.direction = GW_DIRECTION_OUTPUT, .edge = GW_EDGE_BOTH};
    errno = 0;
    CHECK(gw_line_request_reconfigure(request, &invalid) == -1 && errno == EINVAL
              && physical(6) == 1,
          "edge detection on an output is refused with EINVAL, the output unchanged");
    gw_line_request_release(request);
}

int main(void) {
    chip_path = getenv("GATTWAY_GPIOSIM_CHIP");
    sysfs = getenv("GATTWAY_GPIOSIM_SYSFS");
    if (chip_path == NULL || sysfs == NULL) {
        fprintf(stderr, "GATTWAY_GPIOSIM_CHIP and GATTWAY_GPIOSIM_SYSFS are not set "
                        "(run through Tests/vm/run-in-vm.sh --gpio-sim)\n");
        return 2;
    }
    printf("gpiod shim on libgpiod %s (API %d), chip %s\n", gw_gpiod_version(),
           gw_gpiod_api_major(), chip_path);
    gw_chip *chip = gw_chip_open(chip_path);
    if (chip == NULL) {
        printf("  FAIL cannot open %s: %s\n", chip_path, strerror(errno));
        return 1;
    }
    test_chip_and_lookup(chip);
    test_bias(chip);
    test_edges(chip);
    if (gw_gpiod_api_major() == 2) test_v2_kernel_features(chip);
    test_outputs(chip);
    test_reconfigure(chip);
    gw_chip_close(chip);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
