// The Linux kernel interfaces the event loop is built on, which Glibc's Swift module leaves out.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// Names the calling thread (at most 15 bytes are kept): prctl is variadic, which Swift cannot call.
static inline int gw_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
