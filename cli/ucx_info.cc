// Asking a UCX from the command (see ucx_info.h).
#include "ucx_info.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bounded_child.h"
#include "ucx_build.h"
#include "util.h"

namespace ucxtls {
namespace cli {

// The environment for a child that asks UCX: the caller's without UCX_TLS (it must not narrow what
// UCX reports) and with the library off. from_process: that process's environment alone instead
// (nothing of the caller's reaches its code), less every LD_* variable but LD_LIBRARY_PATH (which
// decides which libraries and modules it loaded; LD_PRELOAD and LD_AUDIT would load more).
std::vector<char *> child_env(const Environment &env, const std::vector<std::string> *from_process, char *off) {
  std::vector<char *> envp;
  auto ours = [](const char *e) {
    return !strncmp(e, "UCX_TLS=", 8) || !strncmp(e, "UCXTLS_DERIVED=", 15) || !strncmp(e, "UCXTLS_DISABLE=", 15);
  };
  if (!from_process)
    for (char *const *e = env.envp(); *e; e++)
      if (!ours(*e)) envp.push_back(*e);
  if (from_process)
    for (const std::string &e : *from_process)
      if (!ours(e.c_str()) && (e.compare(0, 3, "LD_") || !e.compare(0, 16, "LD_LIBRARY_PATH=")))
        envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(off);
  envp.push_back(nullptr);
  return envp;
}

std::string ucx_info_path(const Environment &env) {
  for (char *const *e = env.envp(); *e; e++) {
    if (strncmp(*e, "PATH=", 5)) continue;
    for (const std::string &dir : split(*e + 5, ":"))
      if (access(((dir.empty() ? "." : dir) + "/ucx_info").c_str(), X_OK) == 0) return (dir.empty() ? "." : dir) + "/ucx_info";
  }
  return "";
}

namespace {

// Runs `ucx_info ARG` as a bounded child (bounded_child.h: a wedged driver costs timeout_ms and a
// named failure, and nothing outlives the command) and gives its stdout. extra: one more variable.
bool run_ucx_info(const Environment &env, const char *arg, int timeout_ms, std::string *out, std::string *err,
                  char *extra = nullptr) {
  std::string path = ucx_info_path(env);
  if (path.empty()) return *err = "cannot run ucx_info (not in PATH? Debian/Ubuntu: apt-get install ucx-utils)", false;
  char off[] = "UCXTLS_DISABLE=1";
  std::vector<char *> envp = child_env(env, nullptr, off);
  if (extra) envp.insert(envp.end() - 1, extra);
  char *argv[] = {&path[0], const_cast<char *>(arg), nullptr};
  ChildRun run;
  run_bounded(argv, envp.data(), timeout_ms, 64 << 20, [](const std::string &) { return false; }, &run, err, 1);
  if (!err->empty()) return false;
  if (run.exec_errno) return *err = "cannot run " + path + " (" + strerror(run.exec_errno) + ")", false;
  if (!run.ended)
    return *err = path + " " + arg + " gave no answer within " + std::to_string(timeout_ms) +
                  " ms (a wedged driver?): killed; --timeout-ms sets the bound", false;
  if (!run.reaped || !WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0)
    return *err = std::string("ucx_info ") + arg + " failed (status " + std::to_string(run.status) + ")", false;
  *out = run.report;
  return true;
}

}  // namespace

// Runs `ucx_info -d` and collects its "Transport:" names.
bool ucx_transports(const Environment &env, int timeout_ms, std::vector<std::string> *tls, std::string *err) {
  std::string out;
  if (!run_ucx_info(env, "-d", timeout_ms, &out, err)) return false;
  for (const std::string &line : split(out.c_str(), "\n")) {
    size_t k = line.find("Transport:");
    if (line.empty() || line[0] != '#' || k == std::string::npos) continue;
    size_t b = line.find_first_not_of(" \t", k + 10), e = line.find_first_of(" \t\r", b);
    if (b == std::string::npos) continue;
    std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool dup = false;
    for (const std::string &t : *tls) dup = dup || t == name;
    if (!dup) tls->push_back(name);
  }
  if (tls->empty()) return *err = "ucx_info -d listed no transport", false;
  return true;
}

namespace {

// The text after `label` on its line of out ("" when absent).
std::string field(const std::string &out, const char *label) {
  const size_t k = out.find(label);
  if (k == std::string::npos) return "";
  const size_t b = k + strlen(label);
  return out.substr(b, out.find('\n', b) - b);
}

}  // namespace

bool ucx_info_libucp(const Environment &env, int timeout_ms, std::string *libucp, std::string *err) {
  char trace[] = "LD_TRACE_LOADED_OBJECTS=1";
  std::string out, path = ucx_info_path(env);
  if (!run_ucx_info(env, "-v", timeout_ms, &out, err, trace)) return false;
  // ld.so's lines: "\tlibucp.so.0 => /lib/x86_64-linux-gnu/libucp.so.0 (0x...)", "=> not found" when missing.
  for (const std::string &line : split(out.c_str(), "\n")) {
    const size_t b = line.find_first_not_of(" \t"), arrow = line.find(" => ");
    if (b == std::string::npos || arrow == std::string::npos || !is_libucp_name(line.substr(b, arrow - b).c_str())) continue;
    const std::string file = line.substr(arrow + 4, line.rfind(" (") - arrow - 4);
    if (file.empty() || file[0] != '/') return *err = "the loader finds no " + line.substr(b, arrow - b) + " for " + path, false;
    return *libucp = file, true;
  }
  // A script in PATH that runs another ucx_info: UCX's own answer, the libucs it loaded (UCX 1.14 and
  // newer print it), whose directory holds its libucp.
  out.clear();
  const std::string libucs = run_ucx_info(env, "-v", timeout_ms, &out, err) ? field(out, "# Library path: ") : "";
  const size_t slash = libucs.rfind('/');
  if (slash != std::string::npos && libucs[0] == '/') return locate_libucp(libucs.substr(0, slash + 1), libucp, err);
  return *err = "cannot tell which libucp " + path + " loads (the loader lists none, and its -v names no library "
                "path): name the build with --ucx PATH", false;
}

// Which UCX `ucx_info` is: its path in PATH and the version it prints (ucx_info -v), also in *version.
std::string ucx_info_identity(const Environment &env, int timeout_ms, std::string *version_out) {
  std::string path = ucx_info_path(env), version, out, err;
  if (run_ucx_info(env, "-v", timeout_ms, &out, &err)) {
    // "# Version 1.13.1" up to UCX 1.1x; "# Library version: 1.22.0" in 1.22.
    version = field(out, "# Version ");
    if (version.empty()) version = field(out, "# Library version: ");
  }
  *version_out = version;
  return "the one " + (path.empty() ? std::string("ucx_info") : path) + " runs" + (version.empty() ? "" : " (version " + version + ")");
}

}  // namespace cli
}  // namespace ucxtls
