#include "gpiod_shim.h"
#include <gpiod.h>

// libgpiod 1.x defines the bulk-request limit; 2.x removed bulk objects altogether.
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
