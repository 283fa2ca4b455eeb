#include "loop_thread.h"

_Thread_local const void *gw_loop_of_this_thread = 0;
_Thread_local bool gw_this_thread_runs_the_shared_loop = false;
