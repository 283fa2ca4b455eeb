// The machine's floor for one event: the CPU time a process spends only to wake up, with no work.
// event_cost.py runs it in the same run as gattway and Bumble, so their figures can be read
// against it.
//
//   wake_floor RATE SECONDS
//
// Prints "timer_us=T descriptor_us=D datagram_us=G notification_us=N":
//   T  a process woken RATE times a second by its own timer (a periodic timerfd in epoll_wait):
//      what a simulated line's generator, or Bumble's toggling coroutine, pays per change;
//   D  a process woken RATE times a second by another process writing one byte to a pipe it
//      watches with epoll (then read): what an event arriving on a descriptor costs, such as a
//      GPIO edge from the kernel or an HCI packet from the controller.
//   G  the same with a datagram on a Unix socket instead of a pipe: what a simulated line driven
//      through its socket (event_cost.py's default) costs gattway before any work, a little more
//      than a pipe's or a GPIO line's descriptor (a socket buffer to allocate and free per event).
//   N  the system calls of one notification and nothing else, RATE times a second: woken by a
//      datagram (the edge), it reads it and writes a 13-byte packet (an ATT notification of one
//      byte, as H4) to a stream socket whose peer process, a stand-in for the virtual
//      controller, is waiting for it; the peer answers with 8 bytes (H4 Number Of Completed
//      Packets) 200 µs later, as late as Bumble's controller does, which wakes the process again
//      to be read. Two wake-ups, one write that wakes another process, two reads: the least any
//      host pays per notification on this link.
// All are process CPU time (getrusage: user + system) divided by the wake-ups. On a virtual
// machine a timer wake-up is far dearer than a descriptor's: leaving the idle vCPU on a timer
// interrupt is charged to the woken process.
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
}

static double wakes(int epoll, int descriptor, long count) {
    struct epoll_event event = {.events = EPOLLIN}, ready[4];
    char buffer[64];
    epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event);
    double start = cpu_us();
    for (long i = 0; i < count; i++) {
        epoll_wait(epoll, ready, 4, -1);
        if (read(descriptor, buffer, sizeof buffer) < 0) return -1;
    }
    double cost = (cpu_us() - start) / count;
    epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, &event);
    return cost;
}

// Sends one byte to `descriptor` every `period_ns` until the write fails (the reader is gone).
static pid_t start_writer(int descriptor, long period_ns) {
    pid_t writer = fork();
    if (writer == 0) {
        struct timespec pause = {0, period_ns};
        char byte = 1;
        for (;;) {
            nanosleep(&pause, NULL);
            if (write(descriptor, &byte, 1) != 1) _exit(0);
        }
    }
    return writer;
}

static double notifications(int epoll, long period_ns, long count) {
    int edges[2], link[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, edges) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, link) != 0) return -1;
    pid_t controller = fork();
    if (controller == 0) {
        static const unsigned char completed[8] = {0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00};
        // Answers late, so the process has gone back to sleep before the answer comes, as a host
        // on Bumble's controller has.
        struct timespec answer_after = {0, 200000};
        unsigned char packet[64];
        close(link[0]);
        while (read(link[1], packet, sizeof packet) > 0 && nanosleep(&answer_after, NULL) == 0)
            if (write(link[1], completed, sizeof completed) != sizeof completed) break;
        _exit(0);
    }
    close(link[1]);
    pid_t driver = start_writer(edges[1], period_ns);
    close(edges[1]);

    static const unsigned char notification[13] = {0x02, 0x40, 0x00, 0x08, 0x00, 0x04, 0x00, 0x04, 0x00, 0x1b, 0x03, 0x00, 0x01};
    struct epoll_event edge = {.events = EPOLLIN, .data.fd = edges[0]}, reply = {.events = EPOLLIN, .data.fd = link[0]};
    struct epoll_event ready[4];
    unsigned char buffer[64];
    epoll_ctl(epoll, EPOLL_CTL_ADD, edges[0], &edge);
    epoll_ctl(epoll, EPOLL_CTL_ADD, link[0], &reply);
    double start = cpu_us();
    long completed = 0;
    while (completed < count) {
        int n = epoll_wait(epoll, ready, 4, -1);
        for (int i = 0; i < n; i++) {
            if (ready[i].data.fd == edges[0]) {
                if (recv(edges[0], buffer, sizeof buffer, 0) < 0) return -1;
                if (write(link[0], notification, sizeof notification) != sizeof notification) return -1;
            } else {
                ssize_t got = read(link[0], buffer, sizeof buffer);
                if (got <= 0) return -1;
                completed += got / 8;
            }
        }
    }
    double cost = (cpu_us() - start) / completed;
    kill(driver, SIGKILL);
    waitpid(driver, NULL, 0);
    close(link[0]);
    waitpid(controller, NULL, 0);
    close(edges[0]);
    return cost;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: wake_floor RATE SECONDS\n");
        return 2;
    }
    long rate = atol(argv[1]), count = (long)(atof(argv[2]) * rate);
    long period_ns = 1000000000L / rate;
    int epoll = epoll_create1(0);

    int timer = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec every = {{0, period_ns}, {0, period_ns}};
    timerfd_settime(timer, 0, &every, NULL);
    double timer_us = wakes(epoll, timer, count);

    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return 1;
    pid_t writer = start_writer(pipe_ends[1], period_ns);
    close(pipe_ends[1]);
    double descriptor_us = wakes(epoll, pipe_ends[0], count);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);

    int datagram_ends[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, datagram_ends) != 0) return 1;
    writer = start_writer(datagram_ends[1], period_ns);
    close(datagram_ends[1]);
    double datagram_us = wakes(epoll, datagram_ends[0], count);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);

    double notification_us = notifications(epoll, period_ns, count);
    printf("timer_us=%.2f descriptor_us=%.2f datagram_us=%.2f notification_us=%.2f\n", timer_us, descriptor_us,
           datagram_us, notification_us);
    return timer_us < 0 || descriptor_us < 0 || datagram_us < 0 || notification_us < 0;
}
