// What a helper that loads a UCX as root may load (see inspect_safety.h).
#include "inspect_safety.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "bounded_child.h"
#include "elf.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

std::string octal(unsigned mode) {
  char buf[16];
  snprintf(buf, sizeof buf, "0%o", mode & 07777);
  return buf;
}

std::string dir_of(const std::string &p) {
  const size_t k = p.rfind('/');
  return k == std::string::npos ? "." : k == 0 ? "/" : p.substr(0, k);
}

std::string absolute(const std::string &p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  return std::string(getcwd(cwd, sizeof cwd) ? cwd : "/") + "/" + p;
}

// Walks path from / one part at a time with lstat, following links (at most 40, as the kernel).
bool walk(const std::string &path, int links, std::string *culprit) {
  struct stat st;
  if (lstat("/", &st) != 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return *culprit = "/ (owner " + std::to_string(st.st_uid) + ", mode " + octal(st.st_mode) + ")", false;
  std::vector<std::string> parts = split(path.c_str(), "/");
  std::string done;  // the real directories walked so far ("" is /)
  for (size_t i = 0; i < parts.size(); i++) {
    const std::string &part = parts[i];
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      done = dir_of(done.empty() ? "/" : done);
      if (done == "/") done.clear();
      continue;
    }
    const std::string next = done + "/" + part;
    if (lstat(next.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR;  // nothing there to load
    if (S_ISLNK(st.st_mode)) {
      if (links >= 40) return *culprit = next + " (too many symbolic links)", false;
      char target[PATH_MAX];
      const ssize_t n = readlink(next.c_str(), target, sizeof target - 1);
      if (n <= 0) return *culprit = next + " (an unreadable symbolic link)", false;
      std::string rest(target, size_t(n));
      if (rest[0] != '/') rest = (done.empty() ? "" : done) + "/" + rest;
      for (size_t k = i + 1; k < parts.size(); k++) rest += "/" + parts[k];
      return walk(rest, links + 1, culprit);
    }
    // Another user's, or writable by others: a sticky directory (/tmp) alone may be, since no one
    // but its owner and root may rename or remove what root put there (checked next).
    const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX));
    if (st.st_uid != 0 || others_write)
      return *culprit = next + " (owner " + std::to_string(st.st_uid) + ", mode " + octal(st.st_mode) + ")", false;
    done = next;
  }
  return true;
}

// An ELF object's DT_NEEDED names and its RPATH and RUNPATH directories ($ORIGIN expanded).
bool dynamic_of(const std::string &path, std::vector<std::string> *needed, std::vector<std::string> *dirs) {
  ElfDynamic e;
  if (!read_elf_dynamic(path, &e)) return false;
  *needed = e.needed;
  const std::string origin = dir_of(path);
  for (const std::string &text : e.search)
    for (std::string dir : split(text.c_str(), ":")) {
      for (const char *o : {"${ORIGIN}", "$ORIGIN"})
        for (size_t k; (k = dir.find(o)) != std::string::npos;) dir.replace(k, strlen(o), origin);
      dirs->push_back(dir.empty() ? "." : dir);
    }
  return true;
}

// The directories /etc/ld.so.conf lists (its include lines followed): where the entries of
// ld.so's cache are, searched before the system's own.
void conf_dirs(const std::string &file, int depth, std::vector<std::string> *out) {
  const int fd = open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  std::string text;
  const bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 20) && read_all(fd, &text);
  if (fd >= 0) close(fd);
  if (!ok) return;
  for (std::string line : split(text.c_str(), "\n")) {
    line = line.substr(0, line.find('#'));
    const std::vector<std::string> words = split(line.c_str(), " \t");
    std::vector<std::string> w;
    for (const std::string &x : words)
      if (!x.empty()) w.push_back(x);
    if (w.size() == 2 && w[0] == "include" && depth < 8) {
      glob_t g;
      const std::string pattern = w[1][0] == '/' ? w[1] : dir_of(file) + "/" + w[1];
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) conf_dirs(g.gl_pathv[i], depth + 1, out);
      globfree(&g);
    } else if (w.size() == 1 && w[0][0] == '/') {
      out->push_back(w[0]);
    }
  }
}

// Where ld.so finds a name without a slash when no listed directory has it: its cache, whose
// entries are in the directories of ld.so.conf and the system's library directories (these).
const char *const kSystemDirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                                   "/usr/lib/aarch64-linux-gnu", "/lib/powerpc64le-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
                                   "/lib64", "/usr/lib64", "/lib", "/usr/lib"};

struct Closure {
  std::vector<std::string> conf;    // ld.so.conf's directories
  std::vector<std::string> search;  // every directory searched (LD_LIBRARY_PATH, RPATH, RUNPATH)
  std::vector<std::string> seen;    // every file mapped, as found
  std::string culprit;

  bool check_dir(const std::string &dir) {
    if (std::find(search.begin(), search.end(), dir) != search.end()) return true;
    if (dir.find('$') != std::string::npos)  // $LIB, $PLATFORM: ld.so's own expansion, not checked here
      return culprit = dir + " (a directory doctor cannot expand)", false;
    search.push_back(dir);
    return walk(absolute(dir), 0, &culprit);
  }
  // The file and what it needs, found as ld.so would (a name with a slash as it is; else the
  // directories searched, then the system's).
  bool add(const std::string &file, int depth) {
    if (std::find(seen.begin(), seen.end(), file) != seen.end()) return true;
    seen.push_back(file);
    if (!walk(absolute(file), 0, &culprit)) return false;
    std::vector<std::string> needed, dirs;
    if (!dynamic_of(file, &needed, &dirs) || depth > 64) return true;  // not an ELF object: ld.so refuses it
    for (const std::string &d : dirs)
      if (!check_dir(d)) return false;
    for (const std::string &n : needed) {
      if (n.find('/') != std::string::npos) {
        if (!add(n, depth + 1)) return false;
        continue;
      }
      std::vector<std::string> where = search;
      where.insert(where.end(), conf.begin(), conf.end());
      where.insert(where.end(), std::begin(kSystemDirs), std::end(kSystemDirs));
      for (const std::string &d : where) {
        const std::string p = (d == "/" ? "" : d) + "/" + n;
        struct stat st;
        if (stat(p.c_str(), &st) != 0) continue;
        if (!add(p, depth + 1)) return false;
        break;
      }
    }
    return true;
  }
};

const char *env_get(char *const envp[], const char *name) {
  const size_t n = strlen(name);
  for (char *const *e = envp; *e; e++)
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

}  // namespace

bool root_only_path(const std::string &path, std::string *culprit) { return walk(absolute(path), 0, culprit); }

bool root_may_load(const std::string &libucp, char *const envp[], std::string *why) {
  Closure c;
  conf_dirs("/etc/ld.so.conf", 0, &c.conf);
  const char *changeable = " can be changed by a user other than root: not loaded as root";
  if (const char *llp = env_get(envp, "LD_LIBRARY_PATH"))
    for (const std::string &d : split(llp, ":;"))
      if (!c.check_dir(d.empty() ? "." : d)) return *why = c.culprit + changeable + " (in its LD_LIBRARY_PATH)", false;
  if (!c.add(libucp, 0)) return *why = c.culprit + changeable, false;
  // UCX's module directories: <dir of libucs>/ucx (the libucp's own where it is its libucs), and
  // UCX_MODULE_DIR; every module there and what it needs.
  std::vector<std::string> module_dirs;
  for (const std::string &f : c.seen) {
    const std::string name = f.substr(f.rfind('/') + 1);
    if (!name.compare(0, 7, "libucs.") || !name.compare(0, 7, "libucs-")) module_dirs.push_back(dir_of(f) + "/ucx");
  }
  if (module_dirs.empty()) module_dirs.push_back(dir_of(absolute(libucp)) + "/ucx");
  if (const char *m = env_get(envp, "UCX_MODULE_DIR")) module_dirs.push_back(m);
  for (const std::string &dir : module_dirs) {
    if (!c.check_dir(dir)) return *why = c.culprit + changeable + " (UCX's module directory)", false;
    DIR *d = opendir(dir.c_str());
    if (!d) continue;
    std::vector<std::string> modules;
    while (dirent *e = readdir(d))
      if (!strncmp(e->d_name, "libuct_", 7) || !strncmp(e->d_name, "libucm_", 7)) modules.push_back(dir + "/" + e->d_name);
    closedir(d);
    std::sort(modules.begin(), modules.end());
    for (const std::string &m : modules)
      if (!c.add(m, 0)) return *why = c.culprit + changeable + " (a UCX module)", false;
  }
  return true;
}

namespace {
int g_done_fd = -1;  // in the child of reads_in_child: where it says its reads are over
}  // namespace

bool reads_in_child(int timeout_ms, const std::string &what, std::string *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return *err = std::string("pipe2: ") + strerror(errno), false;
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid(), pid = fork();
  if (pid < 0) return *err = std::string("fork: ") + strerror(errno), false;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    close(p[0]);
    g_done_fd = p[1];
    return true;
  }
  close(p[1]);
  const long long deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    const long long left = deadline - monotonic_ms();
    pollfd pfd = {p[0], POLLIN, 0};
    const int k = left > 0 ? poll(&pfd, 1, int(left)) : 0;
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;  // the deadline
    // Its reads are over (a byte), or it ended before (EOF: an error it printed): it is the command now.
    end_as(pid);
  }
  kill(pid, SIGKILL);  // killable even in a FUSE wait; not waited for
  close(p[0]);
  *err = what + " gave no answer within " + std::to_string(timeout_ms) + " ms (a mount that does not answer?): "
         "stopped; --timeout-ms sets the bound";
  return false;
}

void reads_done() {
  if (g_done_fd < 0) return;
  if (write(g_done_fd, "", 1) < 0) {
  }
  close(g_done_fd);
  g_done_fd = -1;
}

}  // namespace cli
}  // namespace ucxtls
