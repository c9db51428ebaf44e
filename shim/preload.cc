// libucxtls.so: the constructor. It wires environment -> settings (load.h) -> probes -> decision
// -> apply, and nothing else; every rule lives in the core (core.h lists its files), every
// file-system call in the shell under it (probe.cc, probe_rdma.cc, probe_gpus.cc, probe_loop.cc,
// driver_cache.cc, all through sys.cc), every edit of the environment in environ_edit.cc.
//
// It runs in every process the library is preloaded into, before main: no stdio (diagnostics are
// write(2) lines: the unknown-variable line, the debug or error line), no threads, no heap but
// the one environment array it publishes, and no function of libc or the host: every system call is
// a raw one (raw_syscall.h), so errno is never touched.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "environ_edit.h"
#include "load.h"
#include "parsers.h"
#include "probe.h"
#include "raw_syscall.h"
#include "sys.h"

namespace {

using namespace ucxtls;

// The stderr line(s), written so that they can neither kill nor stop the host. Every signal a
// write(2) can raise, and what is done about it:
// - SIGPIPE: stderr a pipe or socket whose reader has gone (EPIPE; default: death, and the
//   host's stdout is lost). Blocked around the write, and the one the write raised is taken.
// - SIGXFSZ: stderr a regular file at the process's RLIMIT_FSIZE (a job log at its cap: EFBIG;
//   default: death with a core, exit 153 in a shell). The same as SIGPIPE.
// - SIGTTOU: a background job writing to a `stty tostop` terminal (default: stopped). Blocked
//   around the write: the kernel does not raise a blocked SIGTTOU, it lets the write through.
// - Not covered, on purpose: SIGIO/SIGURG go to the owner that F_SETOWN named on an O_ASYNC file
//   (the reader asked for them; any write by anyone raises the same, and blocking them would hide
//   from the host a signal sent to it); SIGSYS from a seccomp filter that forbids write is the
//   host's own policy (a trap is forced, a kill cannot be blocked); a bad buffer is EFAULT, never
//   SIGSEGV, and the buffers are the library's own.
// A signal the write raised stays pending while blocked and is taken here with a zero timeout,
// unless one was pending already (then it is the host's and stays: standard signals do not
// queue). A host that did not block one has none pending: it would have been delivered. Then
// the host's mask is restored; its dispositions are never touched. Costs nothing unless a line
// is printed: this runs only then.
//
// A line is written only when stderr can take it now (poll, zero timeout): a pipe whose reader
// reads late (a launcher collecting the output of hundreds of processes) may be full, and a
// blocking write would hang the host before main. A line is at most 1024 bytes, under PIPE_BUF, so
// a pipe that has room takes it whole.
bool writable_now(int fd) {
  struct pollfd p = {fd, POLLOUT, 0};
  struct timespec zero = {0, 0};
  long r = raw_syscall(SYS_ppoll, long(&p), 1, long(&zero), 0, 0);
  return r == 1 && (p.revents & POLLOUT);
}

// The kernel's signal set (rt_sigprocmask, rt_sigpending, rt_sigtimedwait): _NSIG / 8 = 8 bytes, one
// bit per signal, on every architecture the library builds for. Not glibc's sigset_t, and none of its
// functions: a host may define sigprocmask itself (raw_syscall.h).
typedef unsigned long long KernelSigset;
constexpr long kSigsetBytes = 8;
constexpr KernelSigset signal_bit(int sig) { return 1ULL << (sig - 1); }

// The signals a failed write raised, and the errno that says so.
constexpr int kRaisedBy[][2] = {{SIGPIPE, EPIPE}, {SIGXFSZ, EFBIG}};
constexpr int kRaising = sizeof kRaisedBy / sizeof kRaisedBy[0];

// Writes p[0..n); on a failure that raised a signal, sets its bit in *raised (bit i: kRaisedBy[i]).
// Whether every byte went out.
bool write_all(const char *p, size_t n, unsigned *raised) {
  if (!n) return true;
  if (!writable_now(2)) return false;
  while (n) {
    ssize_t w = write_some(2, p, n);  // -errno on failure
    if (w <= 0) {  // stderr closed, full or gone: the host is not ours to disturb
      for (int i = 0; i < kRaising; i++)
        if (w == -kRaisedBy[i][1]) *raised |= 1u << i;
      return false;
    }
    p += w, n -= size_t(w);
  }
  return true;
}

// Whether the whole text reached stderr (a line that did not is not marked as said).
bool write_stderr(const char *a, size_t na, const char *b = nullptr, size_t nb = 0) {
  KernelSigset guard = signal_bit(SIGTTOU), host_mask = 0;
  for (int i = 0; i < kRaising; i++) guard |= signal_bit(kRaisedBy[i][0]);
  // unguarded, the line is not written
  if (raw_syscall(SYS_rt_sigprocmask, SIG_BLOCK, long(&guard), long(&host_mask), kSigsetBytes) != 0) return false;
  unsigned pending_before = 0;  // bit i: the host's own kRaisedBy[i] was pending (it had it blocked)
  bool host_blocks = false;
  for (int i = 0; i < kRaising; i++) host_blocks |= (host_mask & signal_bit(kRaisedBy[i][0])) != 0;
  if (host_blocks) {
    KernelSigset pending = 0;
    const bool known = raw_syscall(SYS_rt_sigpending, long(&pending), kSigsetBytes) == 0;
    for (int i = 0; i < kRaising; i++) {
      const KernelSigset sig = signal_bit(kRaisedBy[i][0]);
      if ((host_mask & sig) && (!known || (pending & sig))) pending_before |= 1u << i;
    }
  }
  unsigned raised = 0;
  bool whole = write_all(a, na, &raised);
  whole = whole && write_all(b, nb, &raised);
  for (int i = 0; i < kRaising; i++) {
    if (!(raised >> i & 1) || (pending_before >> i & 1)) continue;
    const KernelSigset only = signal_bit(kRaisedBy[i][0]);
    struct timespec zero = {0, 0};
    raw_syscall(SYS_rt_sigtimedwait, long(&only), 0, long(&zero), kSigsetBytes);
  }
  raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, long(&host_mask), 0, kSigsetBytes);
  return whole;
}

// Applies a decision that changes the environment (env_needs_write), in target (environ_edit.h):
// NULL when the host sees it, else why not. The exec's array (envp) is edited in place: a clear
// allocates nothing. Any other array may be read-only (a program or a linked library may point
// environ at a `static const` array): the edit is made in a copy, published over it.
const char *apply(const Inputs &in, const Decision &d, char **target, char **envp) {
  bool copy = target != envp;
  const char *const names[] = {kOptions[kUcxTls].name, kOptions[kDerived].name};
  if (d.action == Action::clear) return process_env_remove(&target, copy, names, 2);
  // A repair rewrites the user's value and marks nothing: a child on another node repairs again.
  // A stale marker goes first, so the repaired value is never taken for ours (decide.h).
  if (repair_drops_marker(in, d)) {
    char **const before = target;
    const char *why = process_env_remove(&target, copy, names + 1, 1);
    if (why) return why;
    copy = copy && target == before;  // a copy published over it is the library's own: writable
  }
  const char *const values[] = {d.value, d.value};
  return process_env_write(&target, copy, names, values, d.action == Action::repair ? 1 : 2);
}

// The environment may be changing under the library: a thread started by a linked or co-preloaded
// library's constructor may be inside setenv, unsetenv or putenv now, which change the array in
// place without changing __environ (unsetenv moves the later entries down, setenv replaces an
// entry) or move it (adding one; glibc before 2.41 frees the array it replaced). glibc's lock is
// not ours to take, and no edit is safe then: one in place races the moving entries (a variable
// lost, duplicated or brought back, a NULL read in the middle), and a new array loses the
// thread's later edit of the old one.
// - Reading: the exec's array (the constructor's envp) is never freed, and each slot is read once
//   (options.cc read_inputs), so it is read whatever runs. Any other array (a setenv ran before
//   the library) may be freed while it is read: it is read only while this is the one thread
//   (one stat of /proc/self/task, only then); else the library does nothing, and says so when
//   the exec's array asks for the debug line.
// - Writing: only while this is the one thread (the same stat, asked once: with one thread no
//   other can appear). The inputs are then read again, since a thread that ran while they were
//   read (a variable missed while the entries moved) may have ended since: a change means nothing
//   is written. Else nothing is written, and the debug line says why.
// docs/design.md, "Editing the environment"; tests/hardening/test_limits.py measures it.
struct Threads {
  long count = 0;  // 0: not asked yet; -1: cannot be told
  long get() { return count ? count : (count = thread_count()); }
};

// Why the library may not write the decision it made from `in` (another thread runs, ...), or
// NULL when it may.
__attribute__((noinline)) const char *why_environment_shared(const Inputs &in, Threads *threads) {
  const long n = threads->get();
  if (n < 0) return "whether another thread runs cannot be told: it may be changing the environment";
  if (n > 1) return "another thread runs: it may be changing the environment";
  Inputs now;
  read_inputs(process_environ(), &now);
  for (int v = 0; v < kVarCount; v++)
    if (now.var[v] != in.var[v]) return "the environment changed while the library read it";
  return nullptr;
}

// The stderr lines: a misspelt variable of ours (UCXTLS_ACCELL) is named, as UCX names its own
// (not when the library is off), then a setting of one command or tier that is invalid (named,
// nothing switched off), then the debug or error line. Their text is only on the stack
// while they are printed.
// A failed write is named as failed, with the UCX_TLS the environment holds afterwards.
// env is the array the inputs were read from (safe to read again: see above).
// Without UCXTLS_DEBUG the lines are about settings, the same in every process of a job: they are
// printed once per process tree (lines.h said_mark). True when they were printed and their mark is
// to be written (in *mark); a process whose inherited UCXTLS_SAID equals it prints nothing.
__attribute__((noinline)) bool report(char *const *env, const Inputs &in, const Settings &s, const Facts &f,
                                      const Decision &d, const char *failed, char *mark) {
  char first[kUnknownLineMax + kIgnoredLinesMax];  // the unknown-variable line, then the ignored settings'
  size_t nu = format_unknown_line(in, s, first, kUnknownLineMax);
  if (!d.error) nu += format_ignored_lines(in, s, first + nu, sizeof first - nu);  // else one line, the first
  char line[kLineMax];
  size_t nl = 0;
  if (s.debug || d.error) {
    const char *now = failed ? env_value(env, kOptions[kUcxTls].name) : nullptr;
    nl = format_line(Decided{in, s, f, d}, line, sizeof line, failed, now);
  }
  if (s.debug || !(nu + nl)) return write_stderr(first, nu, line, nl), false;
  said_mark(first, nu, line, nl, mark);
  const char *said = in.get(kSaid);
  if (said && !strcmp(said, mark)) return false;  // a parent printed these lines
  return write_stderr(first, nu, line, nl);  // marked as said only where it reached stderr
}

// glibc calls constructors with (argc, argv, envp): envp is the exec's environment array.
__attribute__((constructor)) void ucxtls_init(int argc, char **argv, char **envp) {
  // glibc passes the current __environ to a dlopen'd library's constructor: envp is the exec's
  // array only where it lies right after argv's NULL (the stack the kernel built).
  if ((uintptr_t)envp != (uintptr_t)argv + (uintptr_t(argc) + 1) * sizeof(char *)) envp = nullptr;
  // Ladder step 1, secure execution: decided before reading a single variable.
  const bool secure = secure_execution(envp);
  char **const env = process_environ();
  Threads threads;
  Inputs in;
  Settings s;
  if (!secure && env != envp && threads.get() != 1) {  // an array that may be freed meanwhile
    // The exec's array is stable then (the thread edits the one setenv made): it says whether the
    // debug line was asked for.
    load(envp, false, &in, &s);
    if (envp && s.debug && !s.disabled) write_stderr(kUnreadLine, sizeof kUnreadLine - 1);
    return;
  }
  load(env, secure, &in, &s);
  if (!in.secure) {
    // The facts and the decision (about 6 KiB with the value and the evidence) live in static
    // storage: the constructor runs on the host's stack, which may be small (ulimit -s).
    UCXTLS_FILE_BACKED_AT("6facts") static Facts f;
    UCXTLS_FILE_BACKED_AT("5decision") static Decision d;
    ProbeOptions o;
    o.evidence = s.debug;  // the evidence and the reasons are read by the debug line alone
    run_ladder(in, s, o, &f, &d);
    const char *failed = nullptr, *shared = nullptr;
    const bool writes = env_needs_write(in, d);
    if (writes) {
      failed = shared = why_environment_shared(in, &threads);
      if (!failed) failed = apply(in, d, process_environ(), envp);  // the one thread: nobody else edits it
    }
    char mark[kSaidMax];
    if ((s.debug || d.error || in.unknown || s.timeout_why || s.cache_dir_why) &&
        report(env, in, s, f, d, failed, mark) && !(writes ? shared : why_environment_shared(in, &threads))) {
      // Children see that these lines were printed; nothing is reported if this cannot be written.
      char **target = process_environ();
      const char *const name[] = {kOptions[kSaid].name}, *const value[] = {mark};
      process_env_write(&target, target != envp, name, value, 1);
    }
  }
}

}  // namespace
