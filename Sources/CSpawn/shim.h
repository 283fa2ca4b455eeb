// posix_spawn's close-from action (glibc 2.34), which glibc declares only under _GNU_SOURCE and
// Glibc's Swift module therefore leaves out. Declared here rather than by defining _GNU_SOURCE,
// which would change the C types this module shares with Glibc's.
#include <spawn.h>

int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
