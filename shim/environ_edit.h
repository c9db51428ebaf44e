// Editing the process environment so that every host sees the result and no thread is hurt
// (ladder step 9; docs/design.md, "Editing the environment").
//
// glibc's setenv moves the `environ` array to the heap and frees the one it replaced, which a
// thread started by a linked library's constructor may be reading; and a host may export its own
// setenv/getenv (bash does), which a call from here would bind to: bash's builds its variable
// table before main, and its getenv answers from that table (only our variables) until main. So
// no function is called to edit the environment, the host's or glibc's:
// - a variable that exists is replaced or removed in the array itself, in place (one pointer store
//   per entry; a reader already inside the array sees the change);
// - variables that do not exist are added by publishing one new array that holds them all (one
//   pointer store); the old array is never freed, so a reader never sees freed memory. glibc calls
//   main with the array of that moment, so bash's main, which builds its variables from its envp,
//   sees the pair.
// The array is glibc's `__environ`, the one its getenv, setenv and the main call use: not
// `environ`, which an old C program may define itself (`char **environ;` at file scope), taking
// the name from libc's while glibc keeps `__environ` (measured: tests/hardening/test_hosts.py).
// The strings written must outlive every reader: they are allocated here, and never freed.
#pragma once

#include <stddef.h>

#include "options.h"

extern "C" char **__environ;  // glibc's (unistd.h declares it too)

namespace ucxtls {

// The process environment that getenv reads: glibc's __environ (see above).
inline char **process_environ() { return __environ; }

// --- Pure edits of one NULL-terminated array of "NAME=value" pointers (unit-tested; env_name_len
// is options.h's).
// Every entry named name (n bytes) is removed in place; later entries move down, as with glibc's
// unsetenv. Returns how many.
int env_remove(char **arr, const char *name, size_t n);

// The value of the first entry named name, or NULL: getenv's answer for arr.
const char *env_value(char *const *arr, const char *name);

// One pass over arr: the entry count before the NULL (0 for a NULL array), and in *missing how
// many of names[0..n) (n <= 4) no entry has.
size_t env_scan(char *const *arr, const char *const *names, int n, int *missing);

// Writes entries[0..n) (n <= 4) into the environment *env: replaced in place where their name is present,
// the rest added by publishing one new array, `room` (a copy of *env with them appended), with one
// release store to *env. room holds room_cap pointers (sized from an earlier env_scan); when
// *env has grown since (another thread's setenv), nothing is added and -1 is returned: never a
// write past room. The old array is left as it was, never freed. The added entries are stored in
// added[] (room for n). Returns how many were added.
int env_write(char ***env, char *const *entries, int n, char **room, size_t room_cap, char **added);

// --- The process environment (the library's shell; not for the `ucxtls` command).
// glibc calls main with the `__environ` of that moment, so main's envp (bash's) is whatever array
// it holds when the constructors are done: the edited one, or the one published here. target is
// the array the constructor found safe to edit (the exec's, or any while it is the one thread:
// preload.cc why_environment_shared); edits are made in it, and a new array is published (one
// compare-and-swap) only over it.
// *target is the array the constructor found safe to edit (preload.cc: the process has one
// thread); copy says that it is not known to be writable (not the exec's array: a program may
// point environ at a `static const` one), so the edit is made in a fresh copy of it, published
// over it. After a publish, *target is the new array.
// Writes NAME=value for each (names[i], values[i]), i < n <= 4, in one allocation (the new array
// when a name is missing or in a copy, and the strings; never freed). NULL when the host sees every
// one; else why not (static text): no memory for it (nothing changed), or another thread grew or
// replaced the environment meanwhile (the present names replaced in *target, the missing ones not
// added).
const char *process_env_write(char ***target, bool copy, const char *const *names, const char *const *values, int n);
// Removes every entry of each name, in *target itself (nothing allocated) or, with copy, in a copy
// (one allocation, only when a name is present). NULL, or why the host may not see it (no memory,
// another thread replaced the array meanwhile).
const char *process_env_remove(char ***target, bool copy, const char *const *names, int n);

}  // namespace ucxtls
