// The environment as it was when this process started. If libucxtls.so is preloaded into the
// command itself, its constructor has already changed `environ` (set or cleared UCX_TLS), and
// explaining that would describe the wrong process: a new process started from the caller's
// shell sees the exec-time block, which /proc/self/environ still holds (setenv/unsetenv never
// touch it). Without /proc, `environ` is the best there is.
#pragma once

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

struct Environment {
  std::string raw;
  std::vector<char *> vars;  // NULL-terminated, pointing into raw (or into environ)
  void load();
  // Another process's environment (`doctor --pid`: its /proc/PID/environ, NAME=value each).
  void assign(const std::vector<std::string> &entries);
  char *const *envp() const { return vars.data(); }
};

}  // namespace cli
}  // namespace ucxtls
