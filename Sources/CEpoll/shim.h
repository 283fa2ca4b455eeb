// The Linux kernel interfaces the event loop is built on, which Glibc's Swift module leaves out.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// Names the calling thread (at most 15 bytes are kept): prctl is variadic, which Swift cannot call.
static inline int gw_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

// The event path's system calls through syscall(), which glibc does not make a cancellation
// point: its read, write, writev, recv and epoll_wait switch asynchronous cancellation on and off
// around every call (about thirty instructions, two atomic operations), for a thread gattway never
// cancels. epoll_pwait with no signal mask is epoll_wait, and the only form arm64 has.
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static inline long gw_read(int descriptor, void *buffer, size_t count) {
    return syscall(SYS_read, descriptor, buffer, count);
}

static inline long gw_write(int descriptor, const void *bytes, size_t count) {
    return syscall(SYS_write, descriptor, bytes, count);
}

static inline long gw_writev(int descriptor, const struct iovec *parts, int count) {
    return syscall(SYS_writev, descriptor, parts, count);
}

static inline long gw_recv(int descriptor, void *buffer, size_t count, int flags) {
    return syscall(SYS_recvfrom, descriptor, buffer, count, flags, NULL, NULL);
}

static inline int gw_epoll_wait(int epoll, struct epoll_event *events, int count, int timeout) {
    return (int)syscall(SYS_epoll_pwait, epoll, events, count, timeout, NULL, 0);
}
