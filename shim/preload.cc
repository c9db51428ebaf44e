// libucxtls.so's constructor: environment -> settings -> probes -> decision -> apply, nothing else.
// It runs before main in every process: no stdio, no threads, no heap but the environment array it
// publishes, no function of libc or the host (raw system calls: errno is never touched).
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

// The stderr lines can neither kill nor stop the host. SIGPIPE (a reader gone: EPIPE) and SIGXFSZ
// (a log at RLIMIT_FSIZE: EFBIG) kill by default, SIGTTOU (`stty tostop`) stops: all three are
// blocked around the write (the kernel lets a write through with SIGTTOU blocked), and one the
// write raised is taken with a zero timeout, unless the host had one pending already (standard
// signals do not queue). SIGIO/SIGURG (O_ASYNC, asked for by the reader) and seccomp's SIGSYS are
// the host's own. A line is written only when stderr can take it now (poll): a full pipe would
// hang the host before main; at most 1024 bytes, under PIPE_BUF, so it goes whole.
bool writable_now(int fd) {
  struct pollfd p = {fd, POLLOUT, 0};
  struct timespec zero = {0, 0};
  long r = raw_syscall(SYS_ppoll, long(&p), 1, long(&zero), 0, 0);
  return r == 1 && (p.revents & POLLOUT);
}

// The kernel's signal set: _NSIG / 8 = 8 bytes on every architecture built for (not glibc's sigset_t).
typedef unsigned long long KernelSigset;
constexpr long kSigsetBytes = 8;
constexpr KernelSigset signal_bit(int sig) { return 1ULL << (sig - 1); }

// The signals a failed write raised, and the errno that says so.
constexpr int kRaisedBy[][2] = {{SIGPIPE, EPIPE}, {SIGXFSZ, EFBIG}};
constexpr int kRaising = sizeof kRaisedBy / sizeof kRaisedBy[0];

// Whether all of p[0..n) went out; a failure that raised kRaisedBy[i] sets bit i of *raised.
bool write_raw_stderr(const char *p, size_t n, unsigned *raised) {
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
  bool whole = write_raw_stderr(a, na, &raised);
  whole = whole && write_raw_stderr(b, nb, &raised);
  for (int i = 0; i < kRaising; i++) {
    if (!(raised >> i & 1) || (pending_before >> i & 1)) continue;
    const KernelSigset only = signal_bit(kRaisedBy[i][0]);
    struct timespec zero = {0, 0};
    raw_syscall(SYS_rt_sigtimedwait, long(&only), 0, long(&zero), kSigsetBytes);
  }
  raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, long(&host_mask), 0, kSigsetBytes);
  return whole;
}

// NULL when the host sees the decision, else why not. The exec's array (envp) is edited in place;
// any other may be a program's `static const` one: the edit is made in a copy, published over it.
const char *apply(const Inputs &in, const Decision &d, char **target, char **envp) {
  bool copy = target != envp;
  const char *const names[] = {kOptions[kUcxTls].name, kOptions[kDerived].name};
  if (d.action == Action::clear) return process_env_remove(&target, copy, names, 2);
  // A repair marks nothing, and a stale marker goes first (decide.h repair_drops_marker).
  if (repair_drops_marker(in, d)) {
    char **const before = target;
    const char *why = process_env_remove(&target, copy, names + 1, 1);
    if (why) return why;
    copy = copy && target == before;  // a copy published over it is the library's own: writable
  }
  const char *const values[] = {d.value, d.value};
  return process_env_write(&target, copy, names, values, d.action == Action::repair ? 1 : 2);
}

// A thread started by another library's constructor may be inside setenv/unsetenv now (glibc's
// lock is not ours; glibc before 2.41 frees the array setenv replaced). The exec's array is never
// freed and each slot is read once, so it is always read; any other array, and every write, only
// while this is the one thread (one stat of /proc/self/task). Before a write the inputs are read
// again: a thread may have moved entries and ended meanwhile (docs/design.md, "Editing the
// environment").
struct Threads {
  long count = 0;  // 0: not asked yet; -1: cannot be told
  long get() { return count ? count : (count = thread_count()); }
};

// Why the library may not write the decision it made from `in`, or NULL.
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

// The stderr lines: an unknown variable, the ignored settings, then the debug or error line.
// Without UCXTLS_DEBUG they are about settings, the same in a whole job: printed once per process
// tree (lines.h said_mark). True when printed and *mark is to be written.
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
  // A dlopen'd library gets the current __environ: the exec's lies right after argv's NULL.
  if ((uintptr_t)envp != (uintptr_t)argv + (uintptr_t(argc) + 1) * sizeof(char *)) envp = nullptr;
  // Ladder step 1, secure execution: decided before reading a single variable.
  const bool secure = secure_execution(envp);
  char **const env = process_environ();
  Threads threads;
  Inputs in;
  Settings s;
  if (!secure && env != envp && threads.get() != 1) {  // an array that may be freed meanwhile
    // The exec's array is stable: it says whether the debug line was asked for.
    load(envp, false, &in, &s);
    if (envp && s.debug && !s.disabled) write_stderr(kUnreadLine, sizeof kUnreadLine - 1);
    return;
  }
  load(env, secure, &in, &s);
  if (!in.secure) {
    // About 6 KiB, static: the host's stack may be small (ulimit -s).
    UCXTLS_FILE_BACKED static Facts f;
    UCXTLS_FILE_BACKED static Decision d;
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
      char **target = process_environ();
      const char *const name[] = {kOptions[kSaid].name}, *const value[] = {mark};
      process_env_write(&target, target != envp, name, value, 1);
    }
  }
}

}  // namespace
