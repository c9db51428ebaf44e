// A helper run as a bounded child (see bounded_child.h).
#include "bounded_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace ucxtls {
namespace cli {

long long monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void run_bounded(char *const argv[], char *const envp[], int timeout_ms, size_t max,
                 bool (*complete)(const std::string &report), ChildRun *r, std::string *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    *err = std::string("pipe2: ") + strerror(errno);
    return;
  }
  fflush(stdout);
  fflush(stderr);
  const long long start = monotonic_ms(), deadline = start + timeout_ms;
  pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("fork: ") + strerror(errno);
    close(p[0]), close(p[1]);
    return;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group: at the deadline the group goes, with whatever it started
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    // Above 0-3 first, so that no dup2 below overwrites the other (stdio may have been closed).
    int w = fcntl(p[1], F_DUPFD_CLOEXEC, 4), n4 = fcntl(null, F_DUPFD_CLOEXEC, 4);
    if (w < 0 || n4 < 0 || dup2(n4, 0) < 0 || dup2(n4, 1) < 0 || dup2(n4, 2) < 0 || dup2(w, kReportFd) < 0)
      _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv, envp);
    dprintf(kReportFd, "!exec %d\n", errno);
    _exit(127);
  }
  close(p[1]);
  char buf[4096];
  while (r->report.size() < max && !complete(r->report)) {
    long long left = deadline - monotonic_ms();
    if (left <= 0) break;
    pollfd pfd = {p[0], POLLIN, 0};
    int k = poll(&pfd, 1, int(left));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    ssize_t got = read(p[0], buf, sizeof buf < max - r->report.size() ? sizeof buf : max - r->report.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the helper is gone
    r->report.append(buf, size_t(got));
  }
  close(p[0]);
  // Let it exit on its own until the deadline (asked without reaping, so its group id stays its
  // own), then kill the group: the helper if it is still there, and anything it left in it.
  while (!r->ended && monotonic_ms() < deadline) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) r->ended = true;
    else usleep(1000);
  }
  kill(-pid, SIGKILL);
  for (long long until = monotonic_ms() + 1000; !r->reaped && monotonic_ms() < until;) {
    pid_t w = waitpid(pid, &r->status, WNOHANG);
    if (w == pid) r->reaped = true;
    else if (w < 0 && errno != EINTR) break;
    else usleep(1000);
  }
  r->ms = monotonic_ms() - start;
  if (r->report.size() > 6 && !r->report.compare(0, 6, "!exec ")) r->exec_errno = atoi(r->report.c_str() + 6);
}

}  // namespace cli
}  // namespace ucxtls
