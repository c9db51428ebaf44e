// Editing the process environment (ladder step 9) without calling any function: glibc's setenv
// frees the array it replaced, which another thread may be reading, and a host may export its own
// setenv (bash's builds its variable table before main and hides every other variable from its
// getenv until then). A present variable is replaced or removed in place, one pointer store per
// entry; missing ones are added by publishing one new array (one store), never freed. glibc calls
// main with the array of that moment. The array is glibc's `__environ`: an old C program may define
// its own `environ` (tests/hardening/test_hosts.py).
#pragma once

#include <stddef.h>

#include "options.h"

extern "C" char **__environ;  // glibc's (unistd.h declares it too)

namespace ucxtls {

// The process environment that getenv reads: glibc's __environ (see above).
inline char **process_environ() { return __environ; }

// --- Pure edits of one NULL-terminated array of "NAME=value" pointers, of at most kEnvEditMax
// names at a time (the library writes UCX_TLS and UCXTLS_DERIVED, or UCXTLS_SAID).
constexpr int kEnvEditMax = 4;
// Removes every entry named name (n bytes) in place, moving later ones down as glibc's unsetenv
// does. Returns how many.
int env_remove(char **arr, const char *name, size_t n);

// The value of the first entry named name, or NULL: getenv's answer for arr.
const char *env_value(char *const *arr, const char *name);

// The entry count (0 for a NULL array), and in *missing how many of names[0..n) are absent.
size_t env_scan(char *const *arr, const char *const *names, int n, int *missing);

// Writes entries[0..n) into *env: in place where present, the rest by publishing `room` (a
// copy of *env with them appended, room_cap pointers) with one release store. If *env grew since
// room was sized (another thread's setenv), nothing is added and -1 is returned. The added entries
// go to added[]. Returns how many were added.
int env_write(char ***env, char *const *entries, int n, char **room, size_t room_cap, char **added);

// --- The process environment (the library's shell). *target is the array the constructor found
// safe to edit; copy: it may be read-only (not the exec's array), so the edit is made in a copy
// published over it (one compare-and-swap), and *target is then the copy.
// Writes NAME=value for (names[i], values[i]), i < n, in one allocation, never freed. NULL
// when the host sees every one, else why not (static text).
const char *process_env_write(char ***target, bool copy, const char *const *names, const char *const *values, int n);
// Removes every entry of each name (with copy: in a copy, allocated only when a name is present).
const char *process_env_remove(char ***target, bool copy, const char *const *names, int n);

}  // namespace ucxtls
