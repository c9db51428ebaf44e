/* Local definitions of the plain system-call wrappers the library calls, linked into libucxtls.so
 * alone (the companion of strings.c; issue 5).
 *
 * Why: the loader binds every import of a preloaded library in every process, before main and
 * whether the constructor needs it or not (600 to 800 instructions each here). The driver tier's
 * client (driver.cc) calls about twenty libc functions for a path almost no process takes (and
the hardened read_chunks an lseek); defined
 * here with hidden visibility, the static linker binds those calls to these definitions and the
 * library imports none of them. Each one is the system call glibc's wrapper makes, through the one
 * import they share, syscall(2), which sets errno the same way.
 *
 * Only functions whose glibc wrapper is that plain system call are here. Left to libc on purpose:
 * clock_gettime (the vDSO; a system call per reading would cost more than the import),
 * sigaction (the kernel needs glibc's signal-return trampoline), sigprocmask and sigtimedwait
 * (glibc keeps its internal signals out of the masks), dl_iterate_phdr (the loader's list).
 * The `ucxtls` command and the unit tests link the core without this file and use libc's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOCAL __attribute__((visibility("hidden")))

LOCAL int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE) {  /* glibc's __OPEN_NEEDS_MODE */
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

LOCAL int access(const char *path, int mode) { return (int)syscall(SYS_faccessat, AT_FDCWD, path, mode); }

LOCAL ssize_t read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }

LOCAL ssize_t write(int fd, const void *buf, size_t n) { return syscall(SYS_write, fd, buf, n); }

LOCAL int close(int fd) { return (int)syscall(SYS_close, fd); }

LOCAL off_t lseek(int fd, off_t offset, int whence) { return (off_t)syscall(SYS_lseek, fd, offset, whence); }

LOCAL int pipe2(int fds[2], int flags) { return (int)syscall(SYS_pipe2, fds, flags); }

LOCAL int dup2(int fd, int fd2) {
#ifdef SYS_dup2
  return (int)syscall(SYS_dup2, fd, fd2);
#else
  if (fd == fd2) return syscall(SYS_fcntl, fd, F_GETFD) < 0 ? -1 : fd2;  /* dup3 refuses this */
  return (int)syscall(SYS_dup3, fd, fd2, 0);
#endif
}

LOCAL int poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
#ifdef SYS_poll
  return (int)syscall(SYS_poll, fds, n, timeout_ms);
#else
  struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
  return (int)syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, 8);
#endif
}

LOCAL pid_t waitpid(pid_t pid, int *status, int options) {
  return (pid_t)syscall(SYS_wait4, pid, status, options, NULL);
}

LOCAL int kill(pid_t pid, int sig) { return (int)syscall(SYS_kill, pid, sig); }

LOCAL pid_t getppid(void) { return (pid_t)syscall(SYS_getppid); }

LOCAL int nanosleep(const struct timespec *req, struct timespec *rem) {
  return (int)syscall(SYS_nanosleep, req, rem);
}

LOCAL int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
}

LOCAL int execve(const char *path, char *const argv[], char *const envp[]) {
  return (int)syscall(SYS_execve, path, argv, envp);
}

LOCAL void _exit(int status) {
  for (;;) syscall(SYS_exit_group, status);
}

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
