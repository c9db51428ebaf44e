// Taking a process's place before its build is loaded (see enter_process.h).
#include "enter_process.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "bounded_child.h"
#include "confinement.h"
#include "inspect_safety.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// The ids and capabilities of /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs").
struct Credentials {
  unsigned long uid[4] = {}, gid[4] = {};
  std::vector<gid_t> groups;
  unsigned long long cap_prm = 0, cap_eff = 0;
  bool read = false;
};

Credentials credentials_of(const std::string &proc) {
  Credentials c;
  std::string text;
  int fd = open((proc + "/status").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || !read_all(fd, &text)) {
    if (fd >= 0) close(fd);
    return c;
  }
  close(fd);
  int seen = 0;
  for (const std::string &line : split(text.c_str(), "\n")) {
    const char *v = line.c_str() + line.find(':') + 1;
    if (!line.compare(0, 4, "Uid:")) seen += sscanf(v, "%lu %lu %lu %lu", &c.uid[0], &c.uid[1], &c.uid[2], &c.uid[3]) == 4;
    else if (!line.compare(0, 4, "Gid:")) seen += sscanf(v, "%lu %lu %lu %lu", &c.gid[0], &c.gid[1], &c.gid[2], &c.gid[3]) == 4;
    else if (!line.compare(0, 7, "CapPrm:")) seen += sscanf(v, "%llx", &c.cap_prm) == 1;
    else if (!line.compare(0, 7, "CapEff:")) seen += sscanf(v, "%llx", &c.cap_eff) == 1;
    else if (!line.compare(0, 7, "Groups:"))
      for (const std::string &g : split(v, " \t")) c.groups.push_back(gid_t(strtoul(g.c_str(), nullptr, 10)));
  }
  c.read = seen == 4;
  return c;
}

// The id its code runs as, and no more: the real one, or the effective one of a root process that
// gave up root (a set-user-ID program started by a user is that user here, not the file's owner).
unsigned long least(const unsigned long ids[4]) { return ids[0] == 0 && ids[1] != 0 ? ids[1] : ids[0]; }

bool same_ns(const std::string &proc, const char *ns) {
  struct stat a, b;
  return stat((proc + "/ns/" + ns).c_str(), &a) == 0 && stat((std::string("/proc/self/ns/") + ns).c_str(), &b) == 0 &&
         a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

bool no(std::string *why, const std::string &text) {
  *why = text;
  return false;
}

std::string with_errno(const char *what) { return std::string(what) + " (" + strerror(errno) + ")"; }

}  // namespace

bool enter_process(pid_t pid, const std::string &inside, char *const envp[], std::string *why) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const Credentials c = credentials_of(proc);
  if (!c.read) return no(why, "cannot read " + proc + "/status: its user is unknown");
  if (!same_ns(proc, "user"))
    return no(why, "it runs in another user namespace, whose ids doctor cannot take: run doctor inside it");
  // Its cgroups, bounding set and seccomp filters, read from doctor's own /proc and /sys.
  Confinement limits;
  if (!take_confinement(pid, &limits, why)) return false;
  // Its root and working directory, opened before any namespace is entered.
  const int root = open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  const int cwd = open((proc + "/cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return no(why, with_errno(("cannot open " + proc + "/root").c_str()));
  // The namespaces it does not share with doctor (a container): entered, the pid one last (it holds
  // for the children of this process: the helper is one, below).
  const struct {
    const char *name;
    int type;
  } kinds[] = {{"mnt", CLONE_NEWNS}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}, {"net", CLONE_NEWNET},
               {"cgroup", CLONE_NEWCGROUP}, {"pid", CLONE_NEWPID}};
  int fds[sizeof kinds / sizeof kinds[0]];  // all opened first: /proc is another once in its mount namespace
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    fds[i] = same_ns(proc, kinds[i].name) ? -2 : open((proc + "/ns/" + kinds[i].name).c_str(), O_RDONLY | O_CLOEXEC);
  bool new_pid = false;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (fds[i] == -2) continue;
    if (fds[i] < 0 || setns(fds[i], kinds[i].type) != 0)
      return no(why, with_errno((std::string("cannot enter its ") + kinds[i].name + " namespace").c_str()) +
                         ": run doctor as root, or inside it");
    close(fds[i]);
    new_pid = new_pid || kinds[i].type == CLONE_NEWPID;
  }
  // Its root (a chroot, or the container's): where the paths it names are. Where this process may
  // not chroot (not root), only the same root as its own will do.
  struct stat a, b;
  const bool same_root = fstat(root, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  if (!same_root && (fchdir(root) != 0 || chroot(".") != 0))
    return no(why, with_errno("cannot enter its root directory") + ": run doctor as root, or inside it");
  if (cwd < 0 || fchdir(cwd) != 0) chdir("/");  // relative LD_LIBRARY_PATH entries are its cwd's
  close(root);
  if (cwd >= 0) close(cwd);
  const unsigned long uid = least(c.uid), gid = least(c.gid);
  // As root: every file it would load, and every directory above, only root can change.
  if (uid == 0 && !root_may_load(inside, envp, why)) return false;
  if (!apply_bounding(limits, why)) return false;
  // Its groups, then its group and user ids (all three of each), then no capability it lacks.
  if (setgroups(c.groups.size(), c.groups.data()) != 0) {
    std::vector<gid_t> own(size_t(getgroups(0, nullptr) > 0 ? getgroups(0, nullptr) : 0));
    if (!own.empty() && getgroups(int(own.size()), own.data()) < 0) own.assign(1, gid_t(-1));
    for (gid_t g : own) {
      bool theirs = g == gid;
      for (gid_t t : c.groups) theirs = theirs || t == g;
      if (!theirs) return no(why, with_errno("cannot take its supplementary groups"));
    }
  }
  if (setresgid(gid_t(gid), gid_t(gid), gid_t(gid)) != 0) return no(why, with_errno("cannot take its group id"));
  if (setresuid(uid_t(uid), uid_t(uid), uid_t(uid)) != 0) return no(why, with_errno("cannot take its user id"));
  __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (syscall(SYS_capget, &head, caps) != 0) return no(why, with_errno("capget"));
  for (int i = 0; i < 2; i++) {
    caps[i].permitted &= unsigned(c.cap_prm >> (32 * i));
    caps[i].effective &= unsigned(c.cap_eff >> (32 * i)) & caps[i].permitted;
    caps[i].inheritable = 0;
  }
  if (syscall(SYS_capset, &head, caps) != 0) return no(why, with_errno("cannot give up the capabilities it lacks"));
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  // No exec of the helper may give back what was given up (root's exec keeps only these capabilities).
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return no(why, with_errno("cannot set no_new_privs"));
  if (!apply_filters(limits, why)) return false;  // last: what follows must pass them
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0 || ru != uid || eu != uid || su != uid ||
      rg != gid || eg != gid || sg != gid)
    return no(why, "its user and group ids did not hold");
  // In its pid namespace: the helper is a child of this process, which passes its end on.
  if (new_pid) relay_from_child();
  return true;
}

}  // namespace cli
}  // namespace ucxtls
