// Which event loop runs on the calling thread: thread-locals that the loop's thread sets once
// when it starts. The isolation checks of the event path read them inline, where comparing
// pthread_self() with the loop's thread took two library calls (and the shared loop's lazy
// global one more), several times per event.
#ifndef GATTWAY_LOOP_THREAD_H
#define GATTWAY_LOOP_THREAD_H

#include <stdbool.h>

extern _Thread_local const void *gw_loop_of_this_thread;
extern _Thread_local bool gw_this_thread_runs_the_shared_loop;

// The loop running on this thread (its object's address), or NULL on any other thread.
static inline const void *gw_current_loop(void) { return gw_loop_of_this_thread; }

// Whether this thread runs the process's shared loop.
static inline bool gw_runs_shared_loop(void) { return gw_this_thread_runs_the_shared_loop; }

// Called once, on the loop's own thread, before it runs anything.
static inline void gw_set_current_loop(const void *loop, bool shared) {
    gw_loop_of_this_thread = loop;
    gw_this_thread_runs_the_shared_loop = shared;
}

#endif
