// A helper run as a bounded child (see bounded_child.h).
#include "bounded_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

namespace ucxtls {
namespace cli {

namespace {

// The group of the child now running (0: none), for the handler below.
volatile sig_atomic_t g_child_group = 0;
const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The command is being ended: the child's group goes first (it is not in the terminal's
// foreground group, so Ctrl-C would not reach it), then the command ends by the same signal.
void end_with_child(int sig) {
  if (g_child_group > 0) kill(-pid_t(g_child_group), SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Installs the handler for the time a child runs; the caller's own dispositions come back after.
struct Forwarding {
  struct sigaction old[std::size(kForwarded)];
  Forwarding() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = end_with_child;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kForwarded); i++) {
      sigaction(kForwarded[i], nullptr, &old[i]);
      if (old[i].sa_handler != SIG_IGN) sigaction(kForwarded[i], &sa, nullptr);  // nohup's SIGHUP stays ignored
    }
  }
  ~Forwarding() {
    g_child_group = 0;
    for (size_t i = 0; i < std::size(kForwarded); i++) sigaction(kForwarded[i], &old[i], nullptr);
  }
};

}  // namespace

pid_t fork_tied() {
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);  // the parent is already gone
  }
  return pid;
}

pid_t fork_piped(int *fd, std::string *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return *err = std::string("pipe2: ") + strerror(errno), -1;
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork_tied();
  if (pid < 0) return *err = std::string("fork: ") + strerror(errno), close(p[0]), close(p[1]), -1;
  close(p[pid == 0 ? 0 : 1]);
  *fd = p[pid == 0 ? 1 : 0];
  return pid;
}

bool read_until(int fd, long long deadline, size_t max, bool (*complete)(const std::string &), std::string *out) {
  char buf[8192];
  while (out->size() < max && !(complete && complete(*out))) {
    const long long left = deadline - monotonic_ms();
    pollfd pfd = {fd, POLLIN, 0};
    const int k = left > 0 ? poll(&pfd, 1, int(left)) : 0;
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;  // the deadline
    const ssize_t n = read(fd, buf, std::min(sizeof buf, max - out->size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out->append(buf, size_t(n));
  }
  return false;
}

bool reap_by(pid_t pid, long long until, int *status) {
  for (; monotonic_ms() < until; usleep(1000)) {
    const pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) break;
  }
  return false;
}

namespace {
// Ends this process as a child with this wait status ended.
[[noreturn]] void end_with(int status) {
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// In a child: forks, and returns in the new child alone; this process waits for it and ends as it
// ends. Whatever the new child leaves stays in this one's group.
void relay_from_child() {
  const pid_t child = fork_tied();
  if (child < 0) _exit(126);
  int status = 0;
  if (child > 0) {
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    end_with(status);
  }
}
}  // namespace

void run_bounded(char *const argv[], char *const envp[], int timeout_ms, size_t max,
                 bool (*complete)(const std::string &report), ChildRun *r, std::string *err, int report_fd) {
  const long long start = monotonic_ms(), deadline = start + timeout_ms;
  Forwarding forwarding;
  // Blocked across fork, so that the child's group is known to the handler before any of them runs.
  sigset_t block, saved;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &saved);
  int pipe_fd;
  const pid_t pid = fork_piped(&pipe_fd, err);  // it dies with the command (SIGKILL cannot be forwarded)
  if (pid < 0) return (void)sigprocmask(SIG_SETMASK, &saved, nullptr);
  if (pid == 0) {
    // Its own session and group (at the deadline the group goes, with whatever it started), without
    // the caller's terminal: nothing it loads can read the caller's keys or push input (TIOCSTI).
    if (setsid() < 0) setpgid(0, 0);
    // (execve resets the handlers above to the default; an ignored SIGHUP, as under nohup, stays.)
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    // Above 0-3 first, so that no dup2 below overwrites the other (stdio may have been closed).
    int w = fcntl(pipe_fd, F_DUPFD_CLOEXEC, 4), n4 = fcntl(null, F_DUPFD_CLOEXEC, 4);
    if (w < 0 || n4 < 0 || dup2(n4, 0) < 0 || dup2(n4, 1) < 0 || dup2(n4, 2) < 0 || dup2(w, report_fd) < 0)
      _exit(126);
    // Nothing else the caller left open (a terminal, a socket) reaches the helper.
    for (int fd = 3; fd < report_fd; fd++) close(fd);
    close_from(report_fd > 2 ? report_fd + 1 : 3);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // A session leader that opens a terminal takes it as its controlling one: its child cannot.
    relay_from_child();
    execve(argv[0], argv, envp);
    dprintf(report_fd, "!exec %d\n", errno);
    _exit(127);
  }
  g_child_group = pid;  // its session's id, and its group's
  sigprocmask(SIG_SETMASK, &saved, nullptr);
  read_until(pipe_fd, deadline, max, complete, &r->report);
  close(pipe_fd);
  // Let it exit on its own until the deadline (asked without reaping, so its group id stays its
  // own), then kill the group: the helper if it is still there, and anything it left in it.
  while (!r->ended && monotonic_ms() < deadline) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) r->ended = true;
    else usleep(1000);
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  // in case it had not yet made its session
  r->reaped = reap_by(pid, monotonic_ms() + 1000, &r->status);
  r->ms = monotonic_ms() - start;
  if (r->report.size() > 6 && !r->report.compare(0, 6, "!exec ")) r->exec_errno = atoi(r->report.c_str() + 6);
}

namespace {
int g_done_fd = -1;  // in the child of reads_in_child: where it says its reads are over
}  // namespace

bool reads_in_child(long long deadline, int timeout_ms, const std::string &who, std::string *err) {
  int fd;
  const pid_t pid = fork_piped(&fd, err);
  if (pid <= 0) return pid == 0 && (g_done_fd = fd, true);
  std::string byte;
  // Its reads are over (a byte), or it ended before (EOF: an error it printed).
  const bool answered = read_until(fd, deadline, 1, nullptr, &byte) || !byte.empty();
  // It is the command now and stops its own reads at the deadline; one stuck in a read that never
  // answers (a FUSE or hard NFS mount holding the build's files) is killed after the grace.
  int status = 0;
  if (answered && reap_by(pid, deadline + kReadsGraceMs, &status)) end_with(status);
  kill(pid, SIGKILL);  // killable even in a FUSE wait; not waited for
  close(fd);
  *err = "could not tell: reading " + std::string(answered ? "the files of " : "the ucx.conf places of ") + who +
         " gave no answer within " + std::to_string(timeout_ms) + " ms (a mount that does not answer?): stopped; "
         "--timeout-ms sets the bound";
  return false;
}

void reads_done() {
  if (g_done_fd < 0) return;
  write_all(g_done_fd, "", 1);
  close(g_done_fd);
  g_done_fd = -1;
}

}  // namespace cli
}  // namespace ucxtls
