// A helper program run as a bounded child of the command (`ucxtls probe`): its own session without
// a controlling terminal, /dev/null for stdio, no other descriptor of the caller's, its report on
// fd 3, killed with its group at the deadline. The helper is where a driver is loaded, never the
// command itself: a driver's constructors may hang, crash or print, and that must cost one named
// failure, not the command. And reads that may never answer (doctor --pid), in a child of the command.
#pragma once

#include <sys/types.h>

#include <string>

#include "root_fs.h"

namespace ucxtls {
namespace cli {

constexpr int kReportFd = 3;

struct ChildRun {
  std::string report;      // what it wrote on fd 3 (at most `max` bytes)
  int exec_errno = 0;      // non-zero: the helper could not be executed (its errno)
  bool ended = false;      // it exited (or died) on its own before the deadline
  bool reaped = false;     // ... and was reaped: status holds its wait status
  int status = 0;
  long long ms = 0;        // from fork to reaping
};

// Runs argv[0] (a path) with argv and envp; its report is read until complete(report), its end of
// report_fd (1 for a program that answers on stdout), or timeout_ms; at the deadline its group is
// killed. A failed exec comes back as "!exec <errno>\n". Nothing outlives the command: SIGINT,
// SIGTERM, SIGHUP and SIGQUIT (Ctrl-C, timeout(1), a prolog's limit) kill the child's group first,
// then end the command by the same signal; SIGKILL ends the child too (PR_SET_PDEATHSIG).
void run_bounded(char *const argv[], char *const envp[], int timeout_ms, size_t max,
                 bool (*complete)(const std::string &report), ChildRun *r, std::string *err,
                 int report_fd = kReportFd);

// fork, the child killed when this process ends (PR_SET_PDEATHSIG; it exits 126 at once when this
// one is already gone).
pid_t fork_tied();
// fork_tied, stdio flushed first, with a pipe from the child: *fd its write end in the child, the
// read end here; -1 with *err (nothing left open) when either fails.
pid_t fork_piped(int *fd, std::string *err);
// Appends what fd gives to *out until max bytes, complete(*out) (nullptr: never), or the deadline
// (monotonic_ms): false; or until its end or a failed read: true.
bool read_until(int fd, long long deadline, size_t max, bool (*complete)(const std::string &), std::string *out);
// Whether pid ended (and was reaped: *status) before until (monotonic_ms).
bool reap_by(pid_t pid, long long until, int *status);

// Reads of another process's places (its ucx.conf under UCX_CONFIG_DIR, home and working directory:
// a network or FUSE mount may never answer) happen in a child: true there, which goes on as the
// command and calls reads_done() once they are read. This process waits for that until deadline,
// then for the child's end until a second after it, and ends as the child ends; past either it
// kills the child and returns false with *err (who: "process PID"; timeout_ms as the user gave it).
// The child's own bounded waits end kReadsGraceMs after deadline, so that this process speaks first.
constexpr long long kReadsGraceMs = 1000;
bool reads_in_child(long long deadline, int timeout_ms, const std::string &who, std::string *err);
void reads_done();

}  // namespace cli
}  // namespace ucxtls
