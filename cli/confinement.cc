// Taking a process's cgroups, bounding set and seccomp filters (see confinement.h).
#include "confinement.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

const char kFromInside[] = ": ask from inside it (podman exec ID ucxtls doctor, kubectl exec POD -- ucxtls doctor)";

bool read_text(const std::string &path, std::string *out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = read_all(fd, out);
  close(fd);
  return ok;
}

bool no(std::string *why, const std::string &what) {
  *why = what + " (" + strerror(errno) + ")" + kFromInside;
  return false;
}

// The directory where a cgroup line's hierarchy ("4:memory:/path", "0::/path") is mounted here
// (/proc/self/mountinfo: a cgroup mount whose options name its controllers, or the cgroup2 one).
std::string hierarchy_dir(const std::string &mountinfo, const std::string &controllers) {
  for (const std::string &line : split(mountinfo.c_str(), "\n")) {
    const std::vector<std::string> f = split(line.c_str(), " ");
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") dash++;
    if (dash < 5 || dash + 3 >= f.size() || f[3] != "/") continue;
    const std::string &type = f[dash + 1];
    if (controllers.empty()) {
      if (type == "cgroup2") return f[4];
      continue;
    }
    if (type != "cgroup") continue;
    const std::vector<std::string> opts = split(f[dash + 3].c_str(), ",");
    bool all = true;
    for (const std::string &c : split(controllers.c_str(), ","))
      all = all && std::find(opts.begin(), opts.end(), c) != opts.end();
    if (all) return f[4];
  }
  return "";
}

// Joins every cgroup of pid that this process is not in already.
bool join_cgroups(const std::string &proc, std::string *why) {
  std::string theirs, ours, mountinfo;
  if (!read_text(proc + "/cgroup", &theirs) || !read_text("/proc/self/cgroup", &ours) ||
      !read_text("/proc/self/mountinfo", &mountinfo))
    return no(why, "cannot read its cgroups");
  const std::vector<std::string> mine = split(ours.c_str(), "\n");
  for (const std::string &line : split(theirs.c_str(), "\n")) {
    if (line.empty() || std::find(mine.begin(), mine.end(), line) != mine.end()) continue;
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    const std::string dir = hierarchy_dir(mountinfo, controllers);
    if (dir.empty()) continue;  // a hierarchy not mounted here: nothing doctor could join
    const std::string procs = dir + path + "/cgroup.procs", self = std::to_string(getpid()) + "\n";
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    const bool joined = fd >= 0 && write(fd, self.data(), self.size()) == ssize_t(self.size());
    if (fd >= 0) close(fd);
    if (!joined) return no(why, "cannot join its cgroup " + path);
  }
  return true;
}

// Its seccomp filters, read with ptrace (it is stopped meanwhile): index 0 is the last installed.
bool read_filters(pid_t pid, Confinement *c, std::string *why) {
  if (ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0) return no(why, "cannot read its seccomp filter: ptrace");
  int status = 0;
  bool ok = ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr) == 0 && waitpid(pid, &status, __WALL) == pid;
  std::vector<std::vector<sock_filter>> newest_first;
  for (long i = 0; ok && i < 64; i++) {
    const long n = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, reinterpret_cast<void *>(i), nullptr);
    if (n < 0 && errno == ENOENT && i > 0) break;
    std::vector<sock_filter> f(size_t(n > 0 ? n : 0));
    ok = n > 0 && ptrace(PTRACE_SECCOMP_GET_FILTER, pid, reinterpret_cast<void *>(i), f.data()) == n;
    if (ok) newest_first.push_back(f);
  }
  const int saved = errno;
  ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
  errno = saved;
  if (!ok) return no(why, "cannot read its seccomp filter");
  c->filters.assign(newest_first.rbegin(), newest_first.rend());
  return true;
}

}  // namespace

bool take_confinement(pid_t pid, Confinement *c, std::string *why) {
  if (geteuid() != 0) return true;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string status;
  if (!read_text(proc + "/status", &status)) return no(why, "cannot read " + proc + "/status");
  long mode = 0;
  for (const std::string &line : split(status.c_str(), "\n")) {
    if (!line.compare(0, 7, "CapBnd:")) c->bounding = strtoull(line.c_str() + 7, nullptr, 16);
    else if (!line.compare(0, 8, "Seccomp:")) mode = strtol(line.c_str() + 8, nullptr, 10);
  }
  if (!join_cgroups(proc, why)) return false;
  if (mode == SECCOMP_MODE_STRICT) return errno = EPERM, no(why, "it runs in strict seccomp mode");
  return mode != SECCOMP_MODE_FILTER || read_filters(pid, c, why);
}

bool apply_bounding(const Confinement &c, std::string *why) {
  for (int cap = 0; cap < 64; cap++) {
    if ((c.bounding >> cap) & 1) continue;
    const int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in < 0) break;  // past the kernel's last capability
    if (in == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && geteuid() == 0)
      return no(why, "cannot drop capability " + std::to_string(cap) + " from the bounding set");
  }
  return true;
}

bool apply_filters(const Confinement &c, std::string *why) {
  for (const std::vector<sock_filter> &f : c.filters) {
    sock_fprog prog = {static_cast<unsigned short>(f.size()), const_cast<sock_filter *>(f.data())};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) return no(why, "cannot install its seccomp filter");
  }
  return true;
}

}  // namespace cli
}  // namespace ucxtls
