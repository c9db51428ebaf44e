// The driver tier's client (DESIGN §1 "Driver probe"): runs the helper executable installed beside
// the library and reads its report. The host never maps a driver library: initialising CUDA in a
// process that later forks breaks its children, and it freezes the visibility variables.
//
// The helper must not disturb the host. Two processes do the work:
//   host --clone(exit signal 0)--> supervisor --fork--> helper (execve ucxtls-probe)
// The supervisor never calls execve, so it keeps exit signal 0: no SIGCHLD reaches the host (its
// handler, or SIG_IGN's autoreap, never sees it) and only waitpid(__WCLONE) finds it, so the host's
// own wait() does not either. (A process that execs gets SIGCHLD back as its exit signal, see
// de_thread() in the kernel's fs/exec.c: that is why the helper cannot be the host's direct child.)
// The supervisor first puts the host's caught signals back to their default action (the host
// blocks every signal across the clone, so no host handler can run in the copy), becomes a child
// subreaper, and starts the helper in its own process group. It waits for the helper with
// rt_sigtimedwait until the deadline, then kills the helper's group, reaps the helper and every
// orphan that came to it (so none ever reaches a host that is PID 1 or a subreaper), and exits
// with a code that says how the helper ended. The helper dies with the supervisor
// (PR_SET_PDEATHSIG).
//
// No fork handler runs, nothing is allocated, no disposition or stdio buffer of the host is touched,
// and our fds are O_CLOEXEC and closed before returning. Every failure is "no answer" (ran = no):
// the kernel answer stands.
//
// libc symbols used here all bind to GLIBC_2.17 or older (dl_iterate_phdr, pipe2, poll, waitpid,
// sigaction, sigprocmask, prctl, clock_gettime, execve, syscall); dlopen is the helper's business.
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "sys.h"

namespace ucxtls {
namespace {

const char kHelperName[] = "ucxtls-probe";
const int kReportFd = 3;                  // where the helper writes its report
const int kKillGraceMs = 200;             // after SIGKILL: a task stuck in the kernel is left behind
char kDisableEntry[] = "UCXTLS_DISABLE=1";  // the helper's own copy of the library does nothing

long long now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// --- where is the helper? Beside the object that holds this code: the library, or the program
// that links the core statically (then also in libdir relative to it, where it is installed).
struct SelfSearch {
  uintptr_t addr;
  const char *name = nullptr;
};

int find_self(struct dl_phdr_info *info, size_t, void *data) {
  SelfSearch *s = static_cast<SelfSearch *>(data);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && s->addr >= start && s->addr < start + ph.p_memsz) {
      s->name = info->dlpi_name;
      return 1;
    }
  }
  return 0;
}

bool helper_path(Path *out) {
  SelfSearch s;
  s.addr = reinterpret_cast<uintptr_t>(&find_self);
  dl_iterate_phdr(find_self, &s);
  char self[kPathMax];
  const bool in_program = !s.name || !s.name[0];  // the main program's dlpi_name is empty
  if (!in_program) {
    size_t n = strlen(s.name);
    if (n >= sizeof self) return false;
    memcpy(self, s.name, n + 1);
  } else if (read_link(Path(nullptr, "/proc/self/exe"), self, sizeof self) < 0) {
    return false;
  }
  const char *slash = strrchr(self, '/');
  if (!slash) return false;
  const size_t dir_len = size_t(slash - self) + 1;
  out->add(self, dir_len).add(kHelperName);
#ifdef UCXTLS_BIN_TO_LIB
  // A program installed in bindir (the `ucxtls` command): the helper is in libdir.
  if (in_program && out->ok && access(out->buf, X_OK) != 0) {
    *out = Path(nullptr, "");
    out->add(self, dir_len).add(UCXTLS_BIN_TO_LIB "/").add(kHelperName);
  }
#endif
  return out->ok;
}

// --- the two child processes: raw system calls and plain libc wrappers only (the host's locks
// may be held in their copy of its memory).

// How the helper ended, as the supervisor reports it in one byte on the `done` pipe: the
// helper's exit code (0-127), 128 + its signal, or one of these.
const int kExitForkFailed = 250, kExitLeftBehind = 253, kExitTimedOut = 254;

// Writes "!exec <errno>\n" on the report fd: why the helper could not start.
void report_exec_error(int err) {
  char msg[24] = "!exec ";
  int len = 6;
  char digits[12];
  int k = 0;
  do digits[k++] = char('0' + err % 10), err /= 10;
  while (err && k < 11);
  while (k) msg[len++] = digits[--k];
  msg[len++] = '\n';
  ssize_t ignored = write(kReportFd, msg, size_t(len));
  (void)ignored;
}

[[noreturn]] void exec_helper(int report_w, int devnull, char *const argv[], const sigset_t *mask,
                              pid_t supervisor) {
  // Die with the supervisor: a host that gives up kills the supervisor, never a pid it cannot own.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != supervisor) _exit(126);
  // Its own process group: at the deadline the supervisor kills the group, so nothing the
  // helper started outlives it.
  syscall(SYS_setpgid, 0, 0);
  // Move both fds above the ones they go to (0-3) first, so no dup2 below overwrites the other.
  // (4, not more: a host may run with an fd limit of a few.)
  int w = int(syscall(SYS_fcntl, report_w, F_DUPFD_CLOEXEC, 4));
  int null = int(syscall(SYS_fcntl, devnull, F_DUPFD_CLOEXEC, 4));
  if (w < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
      dup2(w, kReportFd) < 0)
    _exit(126);
  // The helper inherits LD_PRELOAD: its copy of the library must not run the driver probe again.
  // This is a private copy of environ: swap pointers, allocate nothing.
  bool swapped = false;
  for (char **e = environ; e && *e; e++) {
    if (!strncmp(*e, "UCXTLS_DISABLE=", 15)) *e = kDisableEntry;
    else if (!swapped && !strncmp(*e, "UCXTLS_PROBE=", 13)) *e = kDisableEntry, swapped = true;
  }
  sigprocmask(SIG_SETMASK, mask, nullptr);  // the host's mask, as a plain fork would give
  execve(argv[0], argv, environ);
  report_exec_error(errno);
  _exit(127);
}

// Reaps pid (the supervisor: __WCLONE), waiting until `until` (monotonic ms) at most. True once
// reaped; false if it is still running then, or was not ours to reap.
bool reap(pid_t pid, int flags, long long until, int *status) {
  for (int round = 0;; round++) {
    pid_t r = waitpid(pid, status, WNOHANG | flags);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    if (now_ms() >= until) return false;
    // The process usually exits right away: poll finely first, then every ms.
    timespec ts = {0, round < 40 ? 50000L : 1000000L};
    nanosleep(&ts, nullptr);
  }
}

// Has the helper ended? Asked without reaping it (WNOWAIT), so that its pid, and so its process
// group id, cannot be reused before the group is killed.
bool helper_ended(pid_t helper) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  long r = syscall(SYS_waitid, P_PID, helper, &si, WEXITED | WNOHANG | WNOWAIT, nullptr);
  return r < 0 ? errno != EINTR : si.si_pid == helper;  // an error (ECHILD) means it is gone
}

// Closes every fd but the three in keep[], through close_range where the kernel has it (5.9),
// else through the /proc/self/fd listing.
void close_all_but(const int keep[3]) {
  int k[3] = {keep[0], keep[1], keep[2]};
  for (int i = 0; i < 3; i++)  // sort the three
    for (int j = i + 1; j < 3; j++)
      if (k[j] < k[i]) {
        int t = k[i];
        k[i] = k[j], k[j] = t;
      }
  bool done = false;
#ifdef SYS_close_range
  done = true;
  unsigned lo = 0;
  for (int i = 0; i < 3 && done; i++) {
    if (unsigned(k[i]) > lo && syscall(SYS_close_range, lo, unsigned(k[i]) - 1, 0) != 0) done = false;
    lo = unsigned(k[i]) + 1;
  }
  if (done && syscall(SYS_close_range, lo, ~0U, 0) != 0) done = false;
#endif
  if (done) return;
  DirReader d(Path(nullptr, "/proc/self/fd"));
  while (const char *name = d.next()) {
    long fd = 0;
    if (!parse_long(name, strlen(name), &fd) || fd == d.fd || fd == k[0] || fd == k[1] || fd == k[2]) continue;
    close(int(fd));
  }
}

// The supervisor: a copy of the host that never calls execve. It holds none of the host's fds
// (so a launcher waiting for EOF on the host's stdout never waits for it), keeps every signal
// blocked but SIGCHLD (so no host handler can ever run here, and a signal to the host's process
// group cannot stop or kill it before it has cleaned up), starts the helper, and reports how the
// helper ended in one byte on `done` as soon as it knows; then it reaps whatever the helper left.
[[noreturn]] void supervise(int report_r, int report_w, int done_r, int done_w, int devnull,
                            char *const argv[], long long deadline, const sigset_t *host_mask) {
  // Everything the host had open is closed here but our three fds (the helper moves its two to
  // 0-3 itself); the supervisor never uses stdio.
  (void)report_r, (void)done_r;
  const int keep[3] = {report_w, done_w, devnull};
  close_all_but(keep);
  const unsigned char fork_failed = kExitForkFailed;

  // Every signal arrived blocked (the host blocks them around the clone) and stays blocked.
  // SIGCHLD must be default, not ignored (a host that ignores SIGCHLD would have the helper
  // autoreaped, and no SIGCHLD would ever come), and without SA_NOCLDWAIT.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &dfl, nullptr);
  // The helper's orphans come here, not to the host (which may be PID 1 or a subreaper).
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  pid_t self = pid_t(syscall(SYS_getpid));
  long helper = syscall(SYS_clone, long(SIGCHLD), 0L, 0L, 0L, 0L);  // a plain fork, no handlers
  if (helper == 0) exec_helper(report_w, devnull, argv, host_mask, self);
  close(report_w);  // the helper's exit alone must close the host's pipe
  if (helper < 0) {
    ssize_t ignored = write(done_w, &fork_failed, 1);
    (void)ignored;
    _exit(kExitForkFailed);
  }

  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  bool ended = false;
  for (;;) {
    if ((ended = helper_ended(pid_t(helper)))) break;
    long long left = deadline - now_ms();
    if (left <= 0) break;
    timespec ts = {time_t(left / 1000), long(left % 1000) * 1000000L};
    // The raw call: glibc's sigtimedwait is a cancellation point, and a cancel pending on the
    // host's thread must not unwind the host's cleanup handlers in this copy.
    syscall(SYS_rt_sigtimedwait, &chld, nullptr, &ts, 8);  // the helper ended, or the deadline
  }
  // The helper is not reaped yet, so its group id is still its own: what it left in its group
  // goes now, and the helper too at the deadline.
  kill(-pid_t(helper), SIGKILL);
  if (!ended) kill(pid_t(helper), SIGKILL);
  int st = 0, code = kExitLeftBehind;
  if (reap(pid_t(helper), 0, now_ms() + (ended ? 1000 : kKillGraceMs), &st))
    code = !ended ? kExitTimedOut : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st) & 127;
  const unsigned char byte = (unsigned char)code;
  ssize_t ignored = write(done_w, &byte, 1);  // the host stops waiting here
  (void)ignored;
  close(done_w);
  // Stay until every orphan that came here is reaped, holding nothing of the host's: a process
  // stuck in the kernel past SIGKILL then stays our child and never becomes the host's. (This
  // process has no exit signal, so the host never notices it.)
  for (;;) {
    pid_t r = waitpid(-1, &st, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;  // ECHILD: none left
  }
  _exit(code);
}

bool report_complete(const char *buf, size_t len) {
  return len >= 4 && !memcmp(buf + len - 4, "end\n", 4);
}

}  // namespace

void probe_driver(const Inputs &, const Settings &s, DriverFact *out) {
  *out = DriverFact();
  out->ran = Tri::no;
  out->cuda.answered = out->ze.answered = Tri::no;
  Text ev;
  ev.init(out->evidence, sizeof out->evidence);

  Path helper(nullptr, "");
  if (!helper_path(&helper)) {
    ev.add("cannot find the library's own path to locate ").add(kHelperName);
    return;
  }
  if (access(helper.buf, X_OK) != 0) {
    ev.add("no executable helper at ").add(helper.buf);
    return;
  }
  int p[2], done[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    ev.add("pipe2 failed (errno ").add((long long)errno).add(")");
    return;
  }
  if (pipe2(done, O_CLOEXEC) != 0) {
    close(p[0]), close(p[1]);
    ev.add("pipe2 failed (errno ").add((long long)errno).add(")");
    return;
  }
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    close(p[0]), close(p[1]), close(done[0]), close(done[1]);
    ev.add("cannot open /dev/null (errno ").add((long long)errno).add(")");
    return;
  }
  char arg1[] = "--report-fd=3";
  char *argv[] = {helper.buf, arg1, nullptr};
  const long long start = now_ms();
  const long long deadline = start + s.probe_timeout_ms;

  // fork semantics (no CLONE_VM: the supervisor has its own copy of memory), exit signal 0.
  // Every signal is blocked across the clone, so none can run a host handler in the copy before
  // the supervisor has reset them (glibc keeps its own internal signals out of the set).
  sigset_t all, host_mask;
  memset(&all, 0xff, sizeof all);
  sigprocmask(SIG_SETMASK, &all, &host_mask);
  long pid = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
  if (pid == 0) supervise(p[0], p[1], done[0], done[1], devnull, argv, deadline, &host_mask);
  int clone_errno = errno;
  sigprocmask(SIG_SETMASK, &host_mask, nullptr);
  close(p[1]);
  close(done[1]);
  close(devnull);
  if (pid < 0) {
    close(p[0]);
    close(done[0]);
    ev.add("clone failed (errno ").add((long long)clone_errno).add(")");
    return;
  }

  char buf[kDriverReportMax];
  size_t len = 0;
  while (len < sizeof buf && !report_complete(buf, len)) {
    long long left = deadline - now_ms();
    if (left <= 0) break;
    pollfd pfd = {p[0], POLLIN, 0};
    int k = poll(&pfd, 1, int(left));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    ssize_t n = read(p[0], buf + len, sizeof buf - len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // EOF: the helper is gone
    len += size_t(n);
  }
  close(p[0]);

  // The supervisor writes one byte, how the helper ended, as soon as it knows: right after the
  // helper exits, or just after the deadline. Sleep until it comes (or the pipe closes), then reap
  // the supervisor if it is done. One that stays to reap the helper's orphans, or is stuck, is left
  // to finish on its own: it holds none of our fds, has no exit signal and never reaches our
  // wait(); it is never killed from here (that could hand a stuck helper to us, and a pid we
  // failed to reap may not be ours any more).
  const long long supervisor_deadline = deadline + 2 * kKillGraceMs;
  int code = -1;
  for (;;) {
    long long left = supervisor_deadline - now_ms();
    pollfd pfd = {done[0], POLLIN, 0};
    int k = left > 0 ? poll(&pfd, 1, int(left)) : 0;
    if (k < 0 && errno == EINTR) continue;
    unsigned char byte;
    ssize_t r = k > 0 ? read(done[0], &byte, 1) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r == 1) code = byte;
    break;
  }
  close(done[0]);
  int status = 0;
  bool reaped = reap(pid_t(pid), __WCLONE, now_ms() + (code >= 0 ? 20 : kKillGraceMs), &status);
  if (code < 0 && reaped && WIFEXITED(status)) code = WEXITSTATUS(status);
  const long long took = now_ms() - start;

  if (report_complete(buf, len) && parse_driver_report(buf, len, out)) {
    out->ran = Tri::yes;
    ev.add(kHelperName).add(" answered in ").add(took).add(" ms");
    if (code != 0) ev.add(" (then it did not exit cleanly)");
    return;
  }
  out->cuda.answered = out->ze.answered = Tri::no;
  if (code == kExitTimedOut || code == kExitLeftBehind) {
    ev.add(kHelperName).add(" gave no answer within UCXTLS_PROBE_TIMEOUT_MS=").add((long long)s.probe_timeout_ms);
    ev.add(code == kExitTimedOut ? " ms: killed" : " ms: killed, and it did not exit in time");
  } else if (code < 0) {
    ev.add("the supervisor of ").add(kHelperName).add(reaped ? " ended without a report" : " did not answer in time");
  } else if (len > 6 && !memcmp(buf, "!exec ", 6)) {
    long e = 0;
    for (size_t n = 6; n < len && buf[n] >= '0' && buf[n] <= '9'; n++) e = e * 10 + (buf[n] - '0');
    ev.add("cannot execute ").add(helper.buf).add(" (errno ").add((long long)e).add(")");
  } else if (code > 128 && code < 128 + 65) {
    ev.add(kHelperName).add(" died of signal ").add((long long)(code - 128)).add(" before answering");
  } else if (code == kExitForkFailed) {
    ev.add("fork failed: ").add(kHelperName).add(" not started");
  } else if (code != 0) {
    ev.add(kHelperName).add(" exited with status ").add((long long)code).add(" without a report");
  } else {
    ev.add(kHelperName).add(len ? " wrote a malformed report" : " wrote no report");
  }
}

}  // namespace ucxtls
