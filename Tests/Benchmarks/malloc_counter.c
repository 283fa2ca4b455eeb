// Counts calls to malloc, calloc, realloc and posix_memalign/aligned_alloc in the process it is
// preloaded into (LD_PRELOAD), and writes the running total to the file named by
// MALLOC_COUNTER_FILE every 200 ms, so a benchmark can read allocations over a window from
// outside. Each allocation costs one relaxed atomic add; the writer thread wakes 5 times a second.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long long allocations;

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return 12; /* ENOMEM */
    *result = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

static void *report(void *path) {
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.tmp", (const char *)path);
    for (;;) {
        FILE *file = fopen(temporary, "w");
        if (file) {
            fprintf(file, "%llu\n", atomic_load_explicit(&allocations, memory_order_relaxed));
            fclose(file);
            rename(temporary, (const char *)path);
        }
        struct timespec delay = {0, 200 * 1000 * 1000};
        nanosleep(&delay, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void start_reporting(void) {
    const char *path = getenv("MALLOC_COUNTER_FILE");
    if (!path || !*path) return;
    // Children (none expected) must not report into the same file.
    unsetenv("LD_PRELOAD");
    pthread_t thread;
    pthread_create(&thread, NULL, report, (void *)path);
    pthread_detach(thread);
}
