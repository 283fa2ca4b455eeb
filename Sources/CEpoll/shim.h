// The Linux kernel interfaces the event loop is built on, which Glibc's Swift module leaves out.
#include <sys/epoll.h>
#include <sys/eventfd.h>
