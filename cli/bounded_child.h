// A helper program run as a bounded child of the command (`ucxtls probe`, `ucxtls doctor --ucx`):
// its own process group, /dev/null for stdio, its report on fd 3, killed with its group at the
// deadline. The helper is where a driver or a UCX is loaded, never the command itself: a library's
// constructors may hang, crash or print, and that must cost one named failure, not the command.
#pragma once

#include <string>

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

// Runs argv[0] (a path) with argv and envp. The report is read until complete(report) is true, the
// helper closes fd 3, or timeout_ms passes; then the helper has until the deadline to exit, and its
// group is killed. The helper's own exec failure is reported by the child as "!exec <errno>\n".
void run_bounded(char *const argv[], char *const envp[], int timeout_ms, size_t max,
                 bool (*complete)(const std::string &report), ChildRun *r, std::string *err);

long long monotonic_ms();

}  // namespace cli
}  // namespace ucxtls
