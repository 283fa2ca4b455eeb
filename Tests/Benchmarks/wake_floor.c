// The machine's floor for one event: the CPU time a process spends only to wake up, with no work.
// event_cost.py runs it in the same run as gattway and Bumble, so their figures can be read
// against it.
//
//   wake_floor RATE SECONDS
//
// Prints "timer_us=T descriptor_us=D":
//   T  a process woken RATE times a second by its own timer (a periodic timerfd in epoll_wait):
//      what a simulated line's generator, or Bumble's toggling coroutine, pays per change;
//   D  a process woken RATE times a second by another process writing one byte to a pipe it
//      watches with epoll (then read): what an event arriving on a descriptor costs, such as a
//      GPIO edge from the kernel or an HCI packet from the controller.
// Both are process CPU time (getrusage: user + system) divided by the wake-ups. On a virtual
// machine a timer wake-up is far dearer than a descriptor's: leaving the idle vCPU on a timer
// interrupt is charged to the woken process.
#include <signal.h>
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
    pid_t writer = fork();
    if (writer == 0) {
        struct timespec pause = {0, period_ns};
        char byte = 1;
        for (;;) {
            nanosleep(&pause, NULL);
            if (write(pipe_ends[1], &byte, 1) != 1) _exit(0);
        }
    }
    close(pipe_ends[1]);
    double descriptor_us = wakes(epoll, pipe_ends[0], count);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    printf("timer_us=%.2f descriptor_us=%.2f\n", timer_us, descriptor_us);
    return timer_us < 0 || descriptor_us < 0;
}
