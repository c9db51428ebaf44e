// The file layer's Root (root_fs.h): resolving and reading below a root.
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <algorithm>

#include "root_fs.h"

// openat2(2) (Linux 5.6), named here so that older kernel headers build it: its number is the same
// on every architecture (include/uapi/asm-generic/unistd.h), struct open_how and RESOLVE_IN_ROOT
// are include/uapi/linux/openat2.h's.
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
namespace {
struct OpenHow {
  uint64_t flags, mode, resolve;
};
constexpr uint64_t kResolveInRoot = 0x10;
}  // namespace

namespace ucxtls {
namespace files {

bool try_openat2 = true;
unsigned long walks = 0;

bool Root::open(const std::string &dir, const std::string &cwd_inside, const std::string &shown_as, int timeout) {
  fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  cwd = cwd_inside.empty() ? "/" : cwd_inside;
  shown = shown_as;
  timeout_ms = timeout;
  deadline_ms = timeout > 0 ? monotonic_ms() + timeout : 0;
  return fd >= 0;
}

Root::~Root() {
  if (fd >= 0) close(fd);
}

void Root::note(const std::string &bound) {
  if (reached.empty()) reached = bound;
}

bool Root::out_of_bounds() {
  if (deadline_ms && monotonic_ms() > deadline_ms) note("its deadline of " + std::to_string(timeout_ms) + " ms (--timeout-ms)");
  else if (!bytes_left) note("its budget of 256 MiB read");
  else if (!files_left) note("its budget of 4096 files opened");
  else return false;
  return true;
}

namespace {
// The walker: one component at a time, each opened O_PATH | O_NOFOLLOW, a link read and its
// target walked in its place (an absolute one from the root), ".." never above the root.
int walk_in_root(Root &root, const std::string &path, std::string *inside, int *err) {
  walks++;
  std::vector<std::string> todo, done;  // what is left to walk (a stack, next at the back), what was walked
  std::vector<int> fds;                 // the directory of each walked component
  auto push = [&todo](const std::string &p) {
    const std::vector<std::string> parts = path_parts(p);
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  push(path);
  if (path[0] != '/') push(root.cwd);  // the working directory first (walked too: it may be a link)
  int cur = dup(root.fd), links = 0;
  auto fail = [&](int e, int also) {
    if (also >= 0) close(also);
    if (cur >= 0) close(cur);
    for (int f : fds) close(f);
    return *err = e, -1;
  };
  while (cur >= 0 && !todo.empty()) {
    const std::string c = todo.back();
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {  // never above the root
      if (!fds.empty()) close(cur), cur = fds.back(), fds.pop_back(), done.pop_back();
      continue;
    }
    if (c.size() > NAME_MAX) return fail(ENAMETOOLONG, -1);
    const int next = openat(cur, c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (next < 0 || fstat(next, &st) != 0) return fail(errno, next);
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      const ssize_t n = readlinkat(next, "", target, sizeof target - 1);
      if (n < 0) return fail(errno, next);
      close(next);
      if (++links > 40) return fail(ELOOP, -1);
      target[n] = '\0';
      if (target[0] == '/') {  // absolute: from the root again
        for (int f : fds) close(f);
        fds.clear(), done.clear();
        close(cur), cur = dup(root.fd);
      }
      push(target);
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) return fail(ENOTDIR, next);
    fds.push_back(cur);
    cur = next;
    done.push_back(c);
  }
  for (int f : fds) close(f);
  if (cur < 0) return *err = EMFILE, -1;
  if (inside) *inside = join_parts(done);
  return cur;
}
}  // namespace

int resolve_in_root(Root &root, const std::string &path, std::string *inside, int *err) {
  *err = 0;
  if (root.fd < 0 || path.empty()) return *err = ENOENT, -1;
  if (root.out_of_bounds()) return *err = ETIMEDOUT, -1;
  if (!inside && try_openat2) {  // the kernel's walk (Linux 5.6): the same rules, one system call
    const std::string full = path[0] == '/' ? path : root.cwd + "/" + path;
    const OpenHow how = {O_PATH | O_CLOEXEC, 0, kResolveInRoot};
    const int fd = int(syscall(SYS_openat2, root.fd, full.c_str(), &how, sizeof how));
    if (fd >= 0) return fd;
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) return *err = errno, -1;
    // Otherwise the walker decides: ENOSYS (an older kernel), EPERM (a seccomp filter), E2BIG,
    // EXDEV (a magic link such as /proc/N/root, which RESOLVE_IN_ROOT refuses and the walker
    // reads as text), EAGAIN (a rename raced ".."), ENAMETOOLONG (a path over PATH_MAX), ELOOP.
  }
  return walk_in_root(root, path, inside, err);
}

int open_regular(Root &root, const std::string &path, std::string *inside, int *err, off_t *size) {
  const int o = resolve_in_root(root, path, inside, err);
  if (o < 0) return -1;
  struct stat st;
  if (!is_regular(o, &st)) return *err = errno, close(o), -1;
  if (root.out_of_bounds()) return close(o), *err = ETIMEDOUT, -1;
  root.files_left--;
  const int fd = reopen(o);
  if (fd < 0) *err = errno;
  if (size) *size = st.st_size;
  return fd;
}

ssize_t read_at(Root &root, int fd, void *buf, size_t n, off_t off) {
  if (root.out_of_bounds() || off < 0) return -1;
  if (n > root.bytes_left) n = root.bytes_left, root.note("its budget of 256 MiB read");
  const ssize_t got = pread(fd, buf, n, off);
  if (got > 0) root.bytes_left -= size_t(got);
  return got;
}

bool read_small(Root &root, const std::string &path, size_t max, std::string *out, int *err) {
  int e = 0;
  off_t size = 0;
  const int fd = open_regular(root, path, nullptr, &e, &size);
  if (err) *err = e;
  if (fd < 0) return false;
  out->assign(size_t(std::min<off_t>(size, off_t(max))), '\0');
  const ssize_t got = out->empty() ? 0 : read_at(root, fd, &(*out)[0], out->size(), 0);
  close(fd);
  if (got < 0) return false;
  out->resize(size_t(got));
  return true;
}

bool list_dir(Root &root, const std::string &path, std::vector<std::string> *names) {
  int e = 0;
  const int o = resolve_in_root(root, path, nullptr, &e);
  if (o < 0) return false;
  struct stat st;
  const int fd = fstat(o, &st) == 0 && S_ISDIR(st.st_mode) ? openat(o, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  close(o);
  DIR *d = fd >= 0 ? fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) close(fd);
    return false;
  }
  while (dirent *ent = readdir(d)) {
    if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
    if (names->size() == kMaxNames) {  // the rest is not listed, and that is said: a dropped name may be a module
      std::string where;
      const int w = walk_in_root(root, path, &where, &e);
      if (w >= 0) close(w);
      root.note("its limit of " + std::to_string(kMaxNames) + " names listed in " + root.shown + where);
      break;
    }
    names->push_back(ent->d_name);
  }
  closedir(d);
  std::sort(names->begin(), names->end());
  return true;
}

bool is_dir_in_root(Root &root, const std::string &path) {
  int e = 0;
  const int o = resolve_in_root(root, path, nullptr, &e);
  struct stat st;
  const bool dir = o >= 0 && fstat(o, &st) == 0 && S_ISDIR(st.st_mode);
  if (o >= 0) close(o);
  return dir;
}

}  // namespace files
}  // namespace ucxtls
