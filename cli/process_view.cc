// The decision doctor --pid shows, made in the process's place (see process_view.h).
#include "process_view.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "bounded_child.h"
#include "load.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// What the kernel checks when a process opens a file (credentials(7)): its filesystem ids, its
// supplementary groups, and of its effective capabilities the two that bypass file permissions.
struct FileCreds {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  unsigned long long caps = 0;  // CapEff & (CAP_DAC_OVERRIDE | CAP_DAC_READ_SEARCH)
};
constexpr unsigned long long kFileCaps = (1ull << CAP_DAC_OVERRIDE) | (1ull << CAP_DAC_READ_SEARCH);

// Whether the process is in doctor's own namespace of this kind ("ns/user", "ns/mnt").
bool same_ns(int proc, const char *ns) {
  struct stat mine, theirs;
  return stat(("/proc/self/" + std::string(ns)).c_str(), &mine) == 0 && fstatat(proc, ns, &theirs, 0) == 0 &&
         mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

bool file_creds(int proc, FileCreds *c) {
  const std::string status = file_text("status", proc);
  const std::vector<std::string> uid = status_words(status, "Uid"), gid = status_words(status, "Gid"),
                                 cap = status_words(status, "CapEff");
  if (uid.size() != 4 || gid.size() != 4 || cap.size() != 1) return false;
  c->uid = uid_t(strtoul(uid[3].c_str(), nullptr, 10));  // the fourth: the filesystem id
  c->gid = gid_t(strtoul(gid[3].c_str(), nullptr, 10));
  for (const std::string &g : status_words(status, "Groups")) c->groups.push_back(gid_t(strtoul(g.c_str(), nullptr, 10)));
  // Its capabilities count only in doctor's own user namespace: a container's root has them over its
  // namespace's files alone (user_namespaces(7)), in doctor's they would reach every file.
  c->caps = same_ns(proc, "ns/user") ? strtoull(cap[0].c_str(), nullptr, 16) & kFileCaps : 0;
  return true;
}

// What comes back over the pipe. Copied as bytes: the child is a fork of this process, so the one
// kind of pointer in it (Decision::invalid_why, static text) names the same bytes here.
struct Answer {
  Facts f, shown;
  Decision d;
  Family family;
  bool family_decided;
};
static_assert(std::is_trivially_copyable<Answer>::value, "the answer crosses the pipe as bytes");

// In the child: says why it could not take the process's place, and ends.
[[noreturn]] void give_up(int out, const std::string &why) {
  const std::string msg = "E" + why + ": " + strerror(errno);
  write_all(out, msg.data(), msg.size());
  _exit(1);
}

// Doctor's own environment, wiped from this child's memory (proc(5) /proc/self/stat fields 50 and
// 51): a process may always read its /proc/self/environ, so a user's link to it (where a sysfs
// attribute belongs) would read root's variables.
void wipe_own_environment() {
  const std::string stat = file_text("/proc/self/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return;
  const std::vector<std::string> f = words(stat.substr(paren + 1), " \n");  // f[0] is field 3
  if (f.size() < 49) return;
  const unsigned long start = strtoul(f[47].c_str(), nullptr, 10), end = strtoul(f[48].c_str(), nullptr, 10);
  if (start && end > start) memset(reinterpret_cast<void *>(start), 0, end - start);
}

// 0-2 /dev/null, 3 the answer's pipe, 4 the process's root, 5 its working directory (when it has
// one): nothing else of doctor's stays open (a link to /proc/self/fd/N would reach it).
void keep_only(int null, int out, int root, int cwd) {
  const int moved[] = {fcntl(null, F_DUPFD_CLOEXEC, 6), fcntl(out, F_DUPFD_CLOEXEC, 6), fcntl(root, F_DUPFD_CLOEXEC, 6),
                       cwd >= 0 ? fcntl(cwd, F_DUPFD_CLOEXEC, 6) : -1};
  if (moved[0] < 0 || moved[1] < 0 || moved[2] < 0 || dup2(moved[0], 0) < 0 || dup2(moved[0], 1) < 0 ||
      dup2(moved[0], 2) < 0 || dup3(moved[1], 3, O_CLOEXEC) < 0 || dup3(moved[2], 4, O_CLOEXEC) < 0 ||
      (moved[3] >= 0 && dup3(moved[3], 5, O_CLOEXEC) < 0))
    give_up(out, "cannot arrange its descriptors");
  if (moved[3] < 0) close(5);
  close_from(6);
}

// Whether doctor's root is already the process's (the same directory, the same mount namespace):
// then a doctor without CAP_SYS_CHROOT reads its own process's files in place.
bool same_root(int proc, int root) {
  struct stat mine, theirs;
  return fstat(root, &theirs) == 0 && stat("/", &mine) == 0 && mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino &&
         same_ns(proc, "ns/mnt");
}

bool same_ids(const FileCreds &c) {
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0) return false;
  std::vector<gid_t> mine(size_t(std::max(getgroups(0, nullptr), 0)));
  if (getgroups(int(mine.size()), mine.data()) != int(mine.size())) return false;
  std::vector<gid_t> theirs = c.groups;
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  return ru == c.uid && eu == c.uid && su == c.uid && rg == c.gid && eg == c.gid && sg == c.gid && mine == theirs;
}

// Its file credentials become this child's, all of them (real, effective, saved, filesystem), and
// of the capabilities only those it has to open files; nothing can be regained (no_new_privs,
// nothing executed) and the process's user cannot ptrace the child (not dumpable).
void take_credentials(int out, const FileCreds &c) {
  if (!same_ids(c)) {
    if (prctl(PR_SET_KEEPCAPS, 1) != 0) give_up(out, "cannot keep its capabilities across the change of ids");
    if (setgroups(c.groups.size(), c.groups.data()) != 0) give_up(out, "cannot take its supplementary groups");
    if (setresgid(c.gid, c.gid, c.gid) != 0) give_up(out, "cannot take its group id " + std::to_string(c.gid));
    if (setresuid(c.uid, c.uid, c.uid) != 0) give_up(out, "cannot take its user id " + std::to_string(c.uid));
    prctl(PR_SET_KEEPCAPS, 0);
  }
  __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (syscall(SYS_capget, &head, caps) != 0) give_up(out, "cannot read its own capabilities");
  const unsigned long long have = caps[0].permitted | (unsigned long long)caps[1].permitted << 32, keep = have & c.caps;
  caps[0].effective = caps[0].permitted = uint32_t(keep), caps[1].effective = caps[1].permitted = uint32_t(keep >> 32);
  caps[0].inheritable = caps[1].inheritable = 0;
  if (syscall(SYS_capset, &head, caps) != 0) give_up(out, "cannot drop its capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) give_up(out, "cannot set no_new_privs");
  prctl(PR_SET_DUMPABLE, 0);
}

// The child: takes the process's place, decides there, writes the answer on fd 3, ends. proc_fd:
// /proc/PID opened once, so that every read is of the same process (a reused id makes opens fail).
[[noreturn]] void decide_there(Evaluation *r, pid_t pid, int proc_fd, const FileCreds &c, bool secure, const char *tmpl, int out) {
  const pid_t parent = getppid();  // fork_tied: still doctor
  const std::string proc = "/proc/" + std::to_string(pid);
  wipe_own_environment();
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) give_up(out, "cannot open /dev/null");
  const int root = openat(proc_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) give_up(out, "cannot open " + proc + "/root");
  const int cwd = openat(proc_fd, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);  // none: a process that is exiting
  const bool in_place = same_root(proc_fd, root);
  keep_only(null, out, root, cwd);
  out = 3;
  // Its root: absolute links and ".." resolve inside it, below it each mount of its namespace (its
  // /dev, its network namespace's sysfs). Without CAP_SYS_CHROOT only where it is doctor's own.
  if (fchdir(4) != 0) give_up(out, "cannot enter " + proc + "/root");
  if (chroot(".") != 0 && !(errno == EPERM && in_place))
    give_up(out, "cannot take the root of process " + std::to_string(pid) + " (chroot; doctor --pid runs as root)");
  // Its working directory (./ucx.conf): the process's, even where that is outside its root.
  if (fchdir(cwd >= 0 ? 5 : 4) != 0) give_up(out, "cannot enter its working directory");
  close(4), close(5);
  take_credentials(out, c);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a change of credentials clears it
  if (getppid() != parent) _exit(126);
  evaluate_loaded(r, secure, tmpl);
  // Then two texts, each ended by a NUL (none holds one: both are printed with %s).
  std::string msg = "A";
  Answer a{r->f, r->shown, r->d, r->family, r->family_decided};
  msg.append(reinterpret_cast<const char *>(&a), sizeof a).append(r->listing_differs + '\0' + library_line(*r) + '\0');
  _exit(write_all(out, msg.data(), msg.size()) ? 0 : 1);
}

}  // namespace

bool evaluate_as_process(Evaluation *r, pid_t pid, bool secure, const char *tmpl, long long deadline, int timeout_ms,
                         std::string *err) {
  const std::string who = "process " + std::to_string(pid), proc = "/proc/" + std::to_string(pid);
  FileCreds creds;
  const int proc_fd = open(proc.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd < 0 || !file_creds(proc_fd, &creds)) {
    if (proc_fd >= 0) close(proc_fd);
    return *err = "cannot read the credentials of " + who + " (" + proc + "/status)", false;
  }
  int fd;
  const pid_t child = fork_piped(&fd, err);
  if (child == 0) decide_there(r, pid, proc_fd, creds, secure, tmpl, fd);
  close(proc_fd);
  if (child < 0) return false;
  std::string got;
  const bool eof = read_until(fd, deadline, SIZE_MAX, nullptr, &got);
  close(fd);
  // Reaped when it has ended; otherwise killed (killable even in a FUSE wait) and left.
  int status = 0;
  if (!eof || !reap_by(child, std::min(deadline, monotonic_ms() + 1000), &status)) kill(child, SIGKILL), waitpid(child, &status, WNOHANG);
  if (!eof)
    return *err = "reading the devices, sysfs and ucx.conf places of " + who + " gave no answer within " +
                  std::to_string(timeout_ms) + " ms (a mount that does not answer?): stopped; --timeout-ms sets the bound",
           false;
  if (!got.empty() && got[0] == 'E') return *err = "cannot read the files of " + who + " in its place: " + got.substr(1), false;
  Answer a;
  const size_t at = 1 + sizeof a, mid = got.find('\0', at);
  if (got.size() < at || got[0] != 'A' || mid == std::string::npos || got.find('\0', mid + 1) != got.size() - 1)
    return *err = "the decision made in the place of " + who + " did not come back whole", false;
  memcpy(&a, got.data() + 1, sizeof a);
  r->listing_differs = got.substr(at, mid - at), r->decided_line = got.substr(mid + 1, got.size() - mid - 2);
  load_inputs(r, secure, tmpl);  // pure: the inputs and settings, as the child had them
  r->f = a.f, r->shown = a.shown, r->d = a.d, r->family = a.family, r->family_decided = a.family_decided;
  return true;
}

}  // namespace cli
}  // namespace ucxtls
