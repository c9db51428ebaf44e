// libucxtls.so: the constructor. It wires environment -> settings -> probes -> decision -> apply,
// and nothing else; every rule lives in the core (core.h lists its files), every file-system call
// in probe.cc and sys.cc, every edit of the environment in environ_edit.cc.
//
// It runs in every process the library is preloaded into, before main: no stdio (diagnostics are
// write(2) lines: the unknown-variable line, the debug or error line), no threads, no heap but
// the one environment array it publishes, errno left as it was found.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "environ_edit.h"
#include "probe.h"
#include "sys.h"

namespace {

using namespace ucxtls;

// The stderr line(s), written so that they can neither kill nor stop the host: with stderr a pipe
// whose reader has gone, write raises SIGPIPE (default: death, and the host's stdout is lost); a
// background job writing to a `stty tostop` terminal gets SIGTTOU (default: stopped). Both are
// blocked around the write: a blocked SIGTTOU is never raised (the kernel lets the write through),
// a SIGPIPE that the write raised stays pending and is taken here with a zero timeout, unless one
// was pending already (then it is the host's and stays). A host that did not block SIGPIPE has
// none pending: it would have been delivered. Then the host's mask is restored. Costs nothing
// unless a line is printed: this runs only then.
//
// A line is written only when stderr can take it now (poll, zero timeout): a pipe whose reader
// reads late (a launcher collecting the output of hundreds of processes) may be full, and a
// blocking write would hang the host before main. A line is at most 1024 bytes, under PIPE_BUF, so
// a pipe that has room takes it whole.
bool writable_now(int fd) {
  struct pollfd p = {fd, POLLOUT, 0};
  struct timespec zero = {0, 0};
  long r = syscall(SYS_ppoll, &p, 1UL, &zero, nullptr, 0UL);  // the raw call: no poll import
  return r == 1 && (p.revents & POLLOUT);
}

void write_all(const char *p, size_t n, bool *broken_pipe) {
  if (!n || !writable_now(2)) return;
  while (n) {
    ssize_t w = write_some(2, p, n);
    if (w <= 0) {  // stderr closed, full or gone: the host is not ours to disturb
      if (w < 0 && errno == EPIPE) *broken_pipe = true;
      return;
    }
    p += w, n -= size_t(w);
  }
}

void write_stderr(const char *a, size_t na, const char *b = nullptr, size_t nb = 0) {
  sigset_t guard, host_mask;
  sigemptyset(&guard);
  sigaddset(&guard, SIGPIPE);
  sigaddset(&guard, SIGTTOU);
  if (sigprocmask(SIG_BLOCK, &guard, &host_mask) != 0) return;  // unguarded, the line is not written
  bool pipe_pending_before = false;
  if (sigismember(&host_mask, SIGPIPE)) {
    sigset_t pending;
    pipe_pending_before = sigpending(&pending) != 0 || sigismember(&pending, SIGPIPE);
  }
  bool broken_pipe = false;
  write_all(a, na, &broken_pipe);
  if (!broken_pipe) write_all(b, nb, &broken_pipe);
  if (broken_pipe && !pipe_pending_before) {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    struct timespec zero = {0, 0};
    // The raw call: glibc's sigtimedwait would be one more import.
    syscall(SYS_rt_sigtimedwait, &pipe_only, nullptr, &zero, 8);  // the kernel's sigset: _NSIG / 8
  }
  sigprocmask(SIG_SETMASK, &host_mask, nullptr);
}

void apply(const Inputs &in, const Decision &d) {
  if (!env_needs_write(in, d)) return;  // nothing to do, or re-derived to the value already there
  const char *const names[] = {kOptions[kUcxTls].name, kOptions[kDerived].name};
  if (d.action == Action::clear) {
    process_env_remove(names, 2);
  } else {
    // A repair rewrites the user's value and marks nothing: a child on another node repairs again.
    const char *const values[] = {d.value, d.value};
    process_env_write(names, values, d.action == Action::repair ? 1 : 2);
  }
}

// The stderr lines: a misspelt variable of ours (UCXTLS_ACCELL) is named, as UCX names its own
// (not when the library is off), then the debug or error line. Their text is only on the stack
// while they are printed.
__attribute__((noinline)) void report(const Inputs &in, const Settings &s, const Decision &d) {
  char unknown[kUnknownLineMax];
  size_t nu = format_unknown_line(in, s, unknown, sizeof unknown);
  if (s.debug || d.error) {
    char line[kLineMax];
    write_stderr(unknown, nu, line, format_line(in, d, line, sizeof line));
  } else if (nu) {
    write_stderr(unknown, nu);
  }
}

__attribute__((constructor)) void ucxtls_init() {
  const int saved_errno = errno;
  Inputs in;
  // Ladder step 1, secure execution: decided before reading a single variable.
  in.secure = getauxval(AT_SECURE) != 0;
  if (!in.secure) {
    read_inputs(environ, &in);
    Settings s;
    parse_settings(in, &s);
    // The facts and the decision (about 7 KiB with the value and the reasons) live in static
    // storage: the constructor runs on the host's stack, which may be small (ulimit -s).
    UCXTLS_FILE_BACKED static Facts f;
    UCXTLS_FILE_BACKED static Decision d;
    ProbeOptions o;
    o.evidence = s.debug;  // the evidence and the reasons are read by the debug line alone
    run_ladder(in, s, o, &f, &d);
    apply(in, d);
    if (s.debug || d.error || in.unknown) report(in, s, d);
  }
  errno = saved_errno;
}

}  // namespace
