/* Local definitions of the signal-set helpers the constructor's guarded stderr line uses
 * (shim/preload.cc), linked into libucxtls.so alone beside strings.c: the loader binds every
 * import in every process, so these small functions are defined here, hidden, instead of imported.
 * sigprocmask stays libc's (glibc keeps its internal signals out of the masks); rt_sigtimedwait
 * is a raw system call in preload.cc.
 * The `ucxtls` command and the unit tests link the core without this file and use libc's. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOCAL __attribute__((visibility("hidden")))

/* Not system calls at all: bits in a sigset_t, with glibc's refusal of its own internal signals
 * (32 and 33, SIGCANCEL and SIGSETXID). */
LOCAL int sigemptyset(sigset_t *set) {
  for (size_t i = 0; i < sizeof set->__val / sizeof set->__val[0]; i++) set->__val[i] = 0;
  return 0;
}

LOCAL int sigaddset(sigset_t *set, int sig) {
  const int bits = 8 * (int)sizeof set->__val[0];
  if (sig <= 0 || sig >= NSIG || sig == 32 || sig == 33) {
    errno = EINVAL;
    return -1;
  }
  set->__val[(sig - 1) / bits] |= 1UL << ((sig - 1) % bits);
  return 0;
}

LOCAL int sigismember(const sigset_t *set, int sig) {
  const int bits = 8 * (int)sizeof set->__val[0];
  if (sig <= 0 || sig >= NSIG) {
    errno = EINVAL;
    return -1;
  }
  return (int)(set->__val[(sig - 1) / bits] >> ((sig - 1) % bits) & 1);
}

/* The kernel's pending set (the first 8 bytes are every signal Linux has: _NSIG / 8). */
LOCAL int sigpending(sigset_t *set) {
  sigemptyset(set);
  return (int)syscall(SYS_rt_sigpending, set, 8);
}
