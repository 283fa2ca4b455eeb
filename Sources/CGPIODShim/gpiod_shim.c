// gattway's small GPIO API over libgpiod 1.6 (Debian 12) or 2.x (Debian 13), chosen at compile
// time from the installed <gpiod.h>. Every failing call returns NULL or -1 with the errno of the
// failing libgpiod/system call preserved (cleanup after a failure never overwrites it).
#include "gpiod_shim.h"

#include <errno.h>
#include <gpiod.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libgpiod 1.x defines the bulk-request limit; 2.x removed bulk objects (and this macro) altogether.
#ifdef GPIOD_LINE_BULK_MAX_LINES
#define GW_GPIOD_V1 1
#else
#define GW_GPIOD_V2 1
#endif

int gw_gpiod_api_major(void) {
#ifdef GW_GPIOD_V1
    return 1;
#else
    return 2;
#endif
}

const char *gw_gpiod_version(void) {
#ifdef GW_GPIOD_V1
    return gpiod_version_string();
#else
    return gpiod_api_version();
#endif
}

static void copy_string(char *destination, size_t size, const char *source) {
    if (destination == NULL || size == 0) return;
    snprintf(destination, size, "%s", source ? source : "");
}

// True when `fd` has data to read right now; never blocks.
// Returns 1 readable, 0 nothing pending, -1 error (errno set).
static int fd_readable(int fd) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ready;
    do {
        ready = poll(&pfd, 1, 0);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) return 0;
    if (pfd.revents & (POLLERR | POLLNVAL)) {
        errno = (pfd.revents & POLLNVAL) ? EBADF : EIO;
        return -1;
    }
    return (pfd.revents & POLLIN) ? 1 : 0;
}

static bool config_is_valid(const gw_line_config *config) {
    return config != NULL
        && (config->direction == GW_DIRECTION_INPUT || config->direction == GW_DIRECTION_OUTPUT)
        && config->bias >= GW_BIAS_AS_IS && config->bias <= GW_BIAS_PULL_DOWN
        && config->edge >= GW_EDGE_NONE && config->edge <= GW_EDGE_BOTH
        && (config->direction == GW_DIRECTION_INPUT || config->edge == GW_EDGE_NONE);
}

#ifdef GW_GPIOD_V1
// ----------------------------------------------------------------------------------------------
// libgpiod 1.6: lines belong to their chip object. Each request opens its own chip handle so a
// request's lifetime does not depend on the gw_chip it was made from (as on libgpiod 2).

struct gw_chip {
    struct gpiod_chip *chip;
    char path[PATH_MAX];
};

struct gw_line_request {
    struct gpiod_chip *chip;
    struct gpiod_line *line;
    int event_fd; // -1 when no edge detection was requested
};

gw_chip *gw_chip_open(const char *path) {
    if (path == NULL) { errno = EINVAL; return NULL; }
    gw_chip *chip = calloc(1, sizeof *chip);
    if (chip == NULL) return NULL;
    chip->chip = gpiod_chip_open(path);
    if (chip->chip == NULL) {
        int saved = errno;
        free(chip);
        errno = saved;
        return NULL;
    }
    copy_string(chip->path, sizeof chip->path, path);
    return chip;
}

void gw_chip_close(gw_chip *chip) {
    if (chip == NULL) return;
    gpiod_chip_close(chip->chip);
    free(chip);
}

int gw_chip_info(gw_chip *chip, char *name, size_t name_size, char *label, size_t label_size,
                 unsigned int *num_lines) {
    if (chip == NULL) { errno = EINVAL; return -1; }
    copy_string(name, name_size, gpiod_chip_name(chip->chip));
    copy_string(label, label_size, gpiod_chip_label(chip->chip));
    if (num_lines) *num_lines = gpiod_chip_num_lines(chip->chip);
    return 0;
}

static int bias_from_v1(int bias) {
    switch (bias) {
    case GPIOD_LINE_BIAS_DISABLE: return GW_BIAS_DISABLED;
    case GPIOD_LINE_BIAS_PULL_UP: return GW_BIAS_PULL_UP;
    case GPIOD_LINE_BIAS_PULL_DOWN: return GW_BIAS_PULL_DOWN;
    default: return GW_BIAS_AS_IS;
    }
}

int gw_chip_line_info(gw_chip *chip, unsigned int offset, gw_line_info *info) {
    if (chip == NULL || info == NULL) { errno = EINVAL; return -1; }
    struct gpiod_line *line = gpiod_chip_get_line(chip->chip, offset);
    if (line == NULL || gpiod_line_update(line) < 0) return -1;
    memset(info, 0, sizeof *info);
    copy_string(info->name, sizeof info->name, gpiod_line_name(line));
    copy_string(info->consumer, sizeof info->consumer, gpiod_line_consumer(line));
    info->used = gpiod_line_is_used(line);
    info->direction = gpiod_line_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT
        ? GW_DIRECTION_OUTPUT : GW_DIRECTION_INPUT;
    info->active_low = gpiod_line_active_state(line) == GPIOD_LINE_ACTIVE_STATE_LOW;
    info->bias = bias_from_v1(gpiod_line_bias(line));
    info->edge = GW_EDGE_NONE;
    info->debounce_us = 0;
    return 0;
}

int gw_chip_find_line(gw_chip *chip, const char *name) {
    if (chip == NULL || name == NULL) { errno = EINVAL; return -1; }
    struct gpiod_line *line = gpiod_chip_find_line(chip->chip, name);
    if (line == NULL) {
        if (errno == 0) errno = ENOENT;
        return -1;
    }
    return (int)gpiod_line_offset(line);
}

static int request_type_v1(const gw_line_config *config) {
    if (config->direction == GW_DIRECTION_OUTPUT) return GPIOD_LINE_REQUEST_DIRECTION_OUTPUT;
    switch (config->edge) {
    case GW_EDGE_RISING: return GPIOD_LINE_REQUEST_EVENT_RISING_EDGE;
    case GW_EDGE_FALLING: return GPIOD_LINE_REQUEST_EVENT_FALLING_EDGE;
    case GW_EDGE_BOTH: return GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES;
    default: return GPIOD_LINE_REQUEST_DIRECTION_INPUT;
    }
}

static int request_flags_v1(const gw_line_config *config) {
    int flags = config->active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
    switch (config->bias) {
    case GW_BIAS_DISABLED: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE; break;
    case GW_BIAS_PULL_UP: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; break;
    case GW_BIAS_PULL_DOWN: flags |= GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; break;
    default: break;
    }
    return flags;
}

gw_line_request *gw_line_request_open(gw_chip *chip, unsigned int offset, const char *consumer,
                                      const gw_line_config *config) {
    if (chip == NULL || !config_is_valid(config)) { errno = EINVAL; return NULL; }
    gw_line_request *request = calloc(1, sizeof *request);
    if (request == NULL) return NULL;
    request->event_fd = -1;
    int saved;
    request->chip = gpiod_chip_open(chip->path);
    if (request->chip == NULL) goto failed;
    request->line = gpiod_chip_get_line(request->chip, offset);
    if (request->line == NULL) goto failed;
    struct gpiod_line_request_config request_config = {
        .consumer = consumer ? consumer : "gattway",
        .request_type = request_type_v1(config),
        .flags = request_flags_v1(config),
    };
    if (gpiod_line_request(request->line, &request_config, config->initial_value ? 1 : 0) < 0)
        goto failed;
    if (config->direction == GW_DIRECTION_INPUT && config->edge != GW_EDGE_NONE) {
        request->event_fd = gpiod_line_event_get_fd(request->line);
        if (request->event_fd < 0) goto failed;
    }
    return request;
failed:
    saved = errno;
    if (request->chip) gpiod_chip_close(request->chip); // also releases a requested line
    free(request);
    errno = saved;
    return NULL;
}

void gw_line_request_release(gw_line_request *request) {
    if (request == NULL) return;
    gpiod_line_release(request->line);
    gpiod_chip_close(request->chip);
    free(request);
}

int gw_line_request_fd(gw_line_request *request) {
    if (request == NULL) { errno = EINVAL; return -1; }
    if (request->event_fd < 0) { errno = EPERM; return -1; }
    return request->event_fd;
}

int gw_line_request_get_value(gw_line_request *request) {
    if (request == NULL) { errno = EINVAL; return -1; }
    return gpiod_line_get_value(request->line);
}

int gw_line_request_set_value(gw_line_request *request, int value) {
    if (request == NULL) { errno = EINVAL; return -1; }
    return gpiod_line_set_value(request->line, value ? 1 : 0);
}

int gw_line_request_reconfigure(gw_line_request *request, const gw_line_config *config) {
    if (request == NULL || !config_is_valid(config)) { errno = EINVAL; return -1; }
    // The v1 uAPI's GPIOHANDLE_SET_CONFIG changes direction and flags of a line handle, but edge
    // events come only from a separate line-event request, which needs the line free: there is
    // no way to enable them on a line that stays requested.
    errno = EOPNOTSUPP;
    return -1;
}

int gw_line_request_read_events(gw_line_request *request, gw_edge_event *events, size_t max) {
    if (request == NULL || (events == NULL && max > 0)) { errno = EINVAL; return -1; }
    if (request->event_fd < 0) return 0; // no edge detection: never any events
    // The v1 uAPI has no sequence numbers; the kernel's timestamps are CLOCK_MONOTONIC (≥ 5.7).
    struct gpiod_line_event chunk[16];
    size_t count = 0;
    while (count < max) {
        int readable = fd_readable(request->event_fd);
        if (readable < 0) return count > 0 ? (int)count : -1;
        if (readable == 0) break;
        size_t want = max - count;
        if (want > sizeof chunk / sizeof chunk[0]) want = sizeof chunk / sizeof chunk[0];
        int got = gpiod_line_event_read_fd_multiple(request->event_fd, chunk, (unsigned)want);
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            return count > 0 ? (int)count : -1;
        }
        for (int i = 0; i < got; i++, count++) {
            events[count].edge = chunk[i].event_type == GPIOD_LINE_EVENT_RISING_EDGE
                ? GW_EDGE_RISING : GW_EDGE_FALLING;
            events[count].timestamp_ns =
                (uint64_t)chunk[i].ts.tv_sec * 1000000000ull + (uint64_t)chunk[i].ts.tv_nsec;
            events[count].line_seqno = 0;
            events[count].global_seqno = 0;
        }
        if ((size_t)got < want) break;
    }
    return (int)count;
}

#else
// ----------------------------------------------------------------------------------------------
// libgpiod 2.x: requests are independent of the chip object they were made from.

struct gw_chip {
    struct gpiod_chip *chip;
};

struct gw_line_request {
    struct gpiod_line_request *request;
    unsigned int offset;
    struct gpiod_edge_event_buffer *buffer; // NULL when no edge detection is configured
    size_t buffer_capacity;
    uint32_t event_buffer_size; // the kernel buffer asked for at request time; 0 = default
};

gw_chip *gw_chip_open(const char *path) {
    if (path == NULL) { errno = EINVAL; return NULL; }
    gw_chip *chip = calloc(1, sizeof *chip);
    if (chip == NULL) return NULL;
    chip->chip = gpiod_chip_open(path);
    if (chip->chip == NULL) {
        int saved = errno;
        free(chip);
        errno = saved;
        return NULL;
    }
    return chip;
}

void gw_chip_close(gw_chip *chip) {
    if (chip == NULL) return;
    gpiod_chip_close(chip->chip);
    free(chip);
}

int gw_chip_info(gw_chip *chip, char *name, size_t name_size, char *label, size_t label_size,
                 unsigned int *num_lines) {
    if (chip == NULL) { errno = EINVAL; return -1; }
    struct gpiod_chip_info *info = gpiod_chip_get_info(chip->chip);
    if (info == NULL) return -1;
    copy_string(name, name_size, gpiod_chip_info_get_name(info));
    copy_string(label, label_size, gpiod_chip_info_get_label(info));
    if (num_lines) *num_lines = (unsigned int)gpiod_chip_info_get_num_lines(info);
    gpiod_chip_info_free(info);
    return 0;
}

static int bias_from_v2(enum gpiod_line_bias bias) {
    switch (bias) {
    case GPIOD_LINE_BIAS_DISABLED: return GW_BIAS_DISABLED;
    case GPIOD_LINE_BIAS_PULL_UP: return GW_BIAS_PULL_UP;
    case GPIOD_LINE_BIAS_PULL_DOWN: return GW_BIAS_PULL_DOWN;
    default: return GW_BIAS_AS_IS;
    }
}

static int edge_from_v2(enum gpiod_line_edge edge) {
    switch (edge) {
    case GPIOD_LINE_EDGE_RISING: return GW_EDGE_RISING;
    case GPIOD_LINE_EDGE_FALLING: return GW_EDGE_FALLING;
    case GPIOD_LINE_EDGE_BOTH: return GW_EDGE_BOTH;
    default: return GW_EDGE_NONE;
    }
}

int gw_chip_line_info(gw_chip *chip, unsigned int offset, gw_line_info *info) {
    if (chip == NULL || info == NULL) { errno = EINVAL; return -1; }
    struct gpiod_line_info *line = gpiod_chip_get_line_info(chip->chip, offset);
    if (line == NULL) return -1;
    memset(info, 0, sizeof *info);
    copy_string(info->name, sizeof info->name, gpiod_line_info_get_name(line));
    copy_string(info->consumer, sizeof info->consumer, gpiod_line_info_get_consumer(line));
    info->used = gpiod_line_info_is_used(line);
    info->direction = gpiod_line_info_get_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT
        ? GW_DIRECTION_OUTPUT : GW_DIRECTION_INPUT;
    info->active_low = gpiod_line_info_is_active_low(line);
    info->bias = bias_from_v2(gpiod_line_info_get_bias(line));
    info->edge = edge_from_v2(gpiod_line_info_get_edge_detection(line));
    info->debounce_us = (uint32_t)gpiod_line_info_get_debounce_period_us(line);
    gpiod_line_info_free(line);
    return 0;
}

int gw_chip_find_line(gw_chip *chip, const char *name) {
    if (chip == NULL || name == NULL) { errno = EINVAL; return -1; }
    return gpiod_chip_get_line_offset_from_name(chip->chip, name);
}

static enum gpiod_line_bias bias_to_v2(int bias) {
    switch (bias) {
    case GW_BIAS_DISABLED: return GPIOD_LINE_BIAS_DISABLED;
    case GW_BIAS_PULL_UP: return GPIOD_LINE_BIAS_PULL_UP;
    case GW_BIAS_PULL_DOWN: return GPIOD_LINE_BIAS_PULL_DOWN;
    default: return GPIOD_LINE_BIAS_AS_IS;
    }
}

static enum gpiod_line_edge edge_to_v2(int edge) {
    switch (edge) {
    case GW_EDGE_RISING: return GPIOD_LINE_EDGE_RISING;
    case GW_EDGE_FALLING: return GPIOD_LINE_EDGE_FALLING;
    case GW_EDGE_BOTH: return GPIOD_LINE_EDGE_BOTH;
    default: return GPIOD_LINE_EDGE_NONE;
    }
}

static struct gpiod_line_settings *settings_for(const gw_line_config *config) {
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    if (settings == NULL) return NULL;
    bool output = config->direction == GW_DIRECTION_OUTPUT;
    int failed = gpiod_line_settings_set_direction(
        settings, output ? GPIOD_LINE_DIRECTION_OUTPUT : GPIOD_LINE_DIRECTION_INPUT);
    failed |= gpiod_line_settings_set_bias(settings, bias_to_v2(config->bias));
    gpiod_line_settings_set_active_low(settings, config->active_low);
    if (output) {
        failed |= gpiod_line_settings_set_output_value(
            settings, config->initial_value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
    } else {
        failed |= gpiod_line_settings_set_edge_detection(settings, edge_to_v2(config->edge));
        gpiod_line_settings_set_debounce_period_us(settings, config->debounce_us);
        failed |= gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC);
    }
    if (failed) {
        int saved = errno;
        gpiod_line_settings_free(settings);
        errno = saved ? saved : EINVAL;
        return NULL;
    }
    return settings;
}

static bool wants_events(const gw_line_config *config) {
    return config->direction == GW_DIRECTION_INPUT && config->edge != GW_EDGE_NONE;
}

// Gives the request the buffer edge events are read into, in batches as large as the kernel
// buffer (libgpiod's default is 64 events).
static int attach_event_buffer(gw_line_request *request) {
    size_t capacity = request->event_buffer_size > 0 ? request->event_buffer_size : 64;
    request->buffer = gpiod_edge_event_buffer_new(capacity);
    if (request->buffer == NULL) return -1;
    request->buffer_capacity = gpiod_edge_event_buffer_get_capacity(request->buffer);
    return 0;
}

gw_line_request *gw_line_request_open(gw_chip *chip, unsigned int offset, const char *consumer,
                                      const gw_line_config *config) {
    if (chip == NULL || !config_is_valid(config)) { errno = EINVAL; return NULL; }
    gw_line_request *request = calloc(1, sizeof *request);
    struct gpiod_line_settings *settings = NULL;
    struct gpiod_line_config *line_config = NULL;
    struct gpiod_request_config *request_config = NULL;
    int saved = 0;
    if (request == NULL) return NULL;
    request->offset = offset;
    if ((settings = settings_for(config)) == NULL) goto failed;
    if ((line_config = gpiod_line_config_new()) == NULL) goto failed;
    if (gpiod_line_config_add_line_settings(line_config, &offset, 1, settings) < 0) goto failed;
    if ((request_config = gpiod_request_config_new()) == NULL) goto failed;
    gpiod_request_config_set_consumer(request_config, consumer ? consumer : "gattway");
    if (config->event_buffer_size > 0)
        gpiod_request_config_set_event_buffer_size(request_config, config->event_buffer_size);
    request->request = gpiod_chip_request_lines(chip->chip, request_config, line_config);
    if (request->request == NULL) goto failed;
    request->event_buffer_size = config->event_buffer_size;
    if (wants_events(config) && attach_event_buffer(request) < 0) goto failed;
    gpiod_request_config_free(request_config);
    gpiod_line_config_free(line_config);
    gpiod_line_settings_free(settings);
    return request;
failed:
    saved = errno;
    if (request->request) gpiod_line_request_release(request->request);
    gpiod_request_config_free(request_config);
    gpiod_line_config_free(line_config);
    gpiod_line_settings_free(settings);
    free(request);
    errno = saved;
    return NULL;
}

void gw_line_request_release(gw_line_request *request) {
    if (request == NULL) return;
    gpiod_edge_event_buffer_free(request->buffer);
    gpiod_line_request_release(request->request);
    free(request);
}

int gw_line_request_fd(gw_line_request *request) {
    if (request == NULL) { errno = EINVAL; return -1; }
    return gpiod_line_request_get_fd(request->request);
}

int gw_line_request_reconfigure(gw_line_request *request, const gw_line_config *config) {
    if (request == NULL || !config_is_valid(config)) { errno = EINVAL; return -1; }
    struct gpiod_line_settings *settings = NULL;
    struct gpiod_line_config *line_config = NULL;
    int result = -1, saved = 0;
    // Allocated before the ioctl so that, once edge detection is on, nothing can fail any more.
    struct gpiod_edge_event_buffer *previous = request->buffer;
    if (wants_events(config) && previous == NULL && attach_event_buffer(request) < 0) return -1;
    if ((settings = settings_for(config)) == NULL) goto done;
    if ((line_config = gpiod_line_config_new()) == NULL) goto done;
    if (gpiod_line_config_add_line_settings(line_config, &request->offset, 1, settings) < 0) goto done;
    // One GPIO_V2_LINE_SET_CONFIG ioctl: direction, bias and edge detection change together.
    if (gpiod_line_request_reconfigure_lines(request->request, line_config) < 0) goto done;
    result = 0;
done:
    saved = errno;
    if (result == 0 && !wants_events(config)) {
        gpiod_edge_event_buffer_free(request->buffer);
        request->buffer = NULL;
    } else if (result < 0 && request->buffer != previous) { // failed: back to the old state
        gpiod_edge_event_buffer_free(request->buffer);
        request->buffer = previous;
    }
    gpiod_line_config_free(line_config);
    gpiod_line_settings_free(settings);
    errno = saved;
    return result;
}

int gw_line_request_get_value(gw_line_request *request) {
    if (request == NULL) { errno = EINVAL; return -1; }
    enum gpiod_line_value value = gpiod_line_request_get_value(request->request, request->offset);
    if (value == GPIOD_LINE_VALUE_ERROR) return -1;
    return value == GPIOD_LINE_VALUE_ACTIVE ? 1 : 0;
}

int gw_line_request_set_value(gw_line_request *request, int value) {
    if (request == NULL) { errno = EINVAL; return -1; }
    return gpiod_line_request_set_value(
        request->request, request->offset,
        value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

int gw_line_request_read_events(gw_line_request *request, gw_edge_event *events, size_t max) {
    if (request == NULL || (events == NULL && max > 0)) { errno = EINVAL; return -1; }
    if (request->buffer == NULL) return 0; // no edge detection: never any events
    int fd = gpiod_line_request_get_fd(request->request);
    size_t count = 0;
    while (count < max) {
        int readable = fd_readable(fd);
        if (readable < 0) return count > 0 ? (int)count : -1;
        if (readable == 0) break;
        size_t want = max - count;
        if (want > request->buffer_capacity) want = request->buffer_capacity;
        int got = gpiod_line_request_read_edge_events(request->request, request->buffer, want);
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            return count > 0 ? (int)count : -1;
        }
        for (int i = 0; i < got; i++, count++) {
            struct gpiod_edge_event *event =
                gpiod_edge_event_buffer_get_event(request->buffer, (unsigned long)i);
            events[count].edge = gpiod_edge_event_get_event_type(event)
                    == GPIOD_EDGE_EVENT_RISING_EDGE ? GW_EDGE_RISING : GW_EDGE_FALLING;
            events[count].timestamp_ns = gpiod_edge_event_get_timestamp_ns(event);
            events[count].line_seqno = gpiod_edge_event_get_line_seqno(event);
            events[count].global_seqno = gpiod_edge_event_get_global_seqno(event);
        }
        if ((size_t)got < want) break;
    }
    return (int)count;
}
#endif
