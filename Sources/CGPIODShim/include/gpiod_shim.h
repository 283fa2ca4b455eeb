// gattway's one small API over libgpiod. The implementation compiles against libgpiod 1.6
// (Debian 12) or 2.x (Debian 13, current Raspberry Pi OS), chosen at compile time from the
// installed <gpiod.h>. Every call that can fail returns NULL or -1 with errno set.
#ifndef GATTWAY_GPIOD_SHIM_H
#define GATTWAY_GPIOD_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gw_chip gw_chip;
typedef struct gw_line_request gw_line_request;

enum gw_direction { GW_DIRECTION_INPUT = 0, GW_DIRECTION_OUTPUT = 1 };
enum gw_bias { GW_BIAS_AS_IS = 0, GW_BIAS_DISABLED = 1, GW_BIAS_PULL_UP = 2, GW_BIAS_PULL_DOWN = 3 };
enum gw_edge { GW_EDGE_NONE = 0, GW_EDGE_RISING = 1, GW_EDGE_FALLING = 2, GW_EDGE_BOTH = 3 };

/// 1 or 2: the libgpiod API this shim was compiled against.
int gw_gpiod_api_major(void);
/// The library's own version string, e.g. "1.6.3" or "2.2.1".
const char *gw_gpiod_version(void);

/// Opens a chip by path (/dev/gpiochipN).
gw_chip *gw_chip_open(const char *path);
void gw_chip_close(gw_chip *chip);
/// Copies the chip's name (gpiochipN) and label (e.g. pinctrl-rp1) into the buffers.
int gw_chip_info(gw_chip *chip, char *name, size_t name_size, char *label, size_t label_size,
                 unsigned int *num_lines);

typedef struct gw_line_info {
    char name[64];       // empty when the line is unnamed
    char consumer[64];   // empty when the line is free
    bool used;
    int direction;       // enum gw_direction
    bool active_low;
    int bias;            // enum gw_bias
    int edge;            // enum gw_edge (libgpiod 2 only; GW_EDGE_NONE on 1.6)
    uint32_t debounce_us; // kernel debounce period (libgpiod 2 only)
} gw_line_info;

int gw_chip_line_info(gw_chip *chip, unsigned int offset, gw_line_info *info);
/// The offset of the line with this name on this chip, or -1 (errno ENOENT) when there is none.
int gw_chip_find_line(gw_chip *chip, const char *name);

typedef struct gw_line_config {
    int direction;          // enum gw_direction
    int bias;               // enum gw_bias
    bool active_low;
    int edge;               // enum gw_edge; inputs only
    uint32_t debounce_us;   // kernel debounce on libgpiod 2; ignored on 1.6 (done in software above)
    int initial_value;      // outputs only: 0 or 1 (logical, after active_low)
    uint32_t event_buffer_size; // libgpiod 2: kernel edge-event buffer in events; 0 = default.
                                // Also for an output later reconfigured into an edge-detecting
                                // input (gw_line_request_reconfigure): only set at request time.
} gw_line_config;

/// Requests one line. The request owns a file descriptor that becomes readable when edge events
/// are pending (gw_line_request_fd); it is released with gw_line_request_release.
gw_line_request *gw_line_request_open(gw_chip *chip, unsigned int offset, const char *consumer,
                                      const gw_line_config *config);
void gw_line_request_release(gw_line_request *request);
int gw_line_request_fd(gw_line_request *request);

/// Changes the settings of a request in place, e.g. from output to input with edge detection,
/// without giving the line back: on libgpiod 2 one GPIO_V2_LINE_SET_CONFIG ioctl, after which edge
/// detection is on at once, so a device answering the instant the line stops being driven (a
/// DHT22's reply ~20 µs later) loses no edge. The request's fd stays the same. The kernel's
/// event buffer is sized once, when the request is made: request an output that will become an
/// input with the `event_buffer_size` the input needs (config->event_buffer_size is ignored here).
/// libgpiod 1.6 (the v1 uAPI) cannot enable edge events on an existing request: there this
/// returns -1 with errno EOPNOTSUPP and leaves the request unchanged; the caller releases it and
/// requests the line again. On any failure the request keeps its previous settings.
int gw_line_request_reconfigure(gw_line_request *request, const gw_line_config *config);

/// Logical value (after active_low): 0 or 1, or -1 on error.
int gw_line_request_get_value(gw_line_request *request);
int gw_line_request_set_value(gw_line_request *request, int value);

typedef struct gw_edge_event {
    int edge;               // GW_EDGE_RISING or GW_EDGE_FALLING
    uint64_t timestamp_ns;  // kernel CLOCK_MONOTONIC timestamp
    uint64_t line_seqno;    // kernel sequence number on libgpiod 2; 0 on 1.6 (not provided)
    uint64_t global_seqno;
} gw_edge_event;

/// Reads up to `max` pending edge events without blocking (returns 0 when none are pending).
/// Returns the count read, or -1 on error.
int gw_line_request_read_events(gw_line_request *request, gw_edge_event *events, size_t max);

#ifdef __cplusplus
}
#endif
#endif
