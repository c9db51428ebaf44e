// Reading inside one root, bounded (see root_fs.h).
#include "root_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace ucxtls {
namespace cli {
namespace {

long long now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// The components of a path, in order (empty ones and "." dropped).
void push_parts(const std::string &path, std::vector<std::string> *todo) {
  std::vector<std::string> parts;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('/', b);
    if (e == std::string::npos) e = path.size();
    std::string c = path.substr(b, e - b);
    if (!c.empty() && c != ".") parts.push_back(c);
    b = e + 1;
  }
  // todo is a stack: the first component on top.
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo->push_back(*it);
}

// /proc/self/fd/N of an O_PATH descriptor: opening it reopens that very object, never a path again.
std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

bool Root::open(const std::string &dir, const std::string &cwd_inside, const std::string &shown_as, int timeout) {
  fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  cwd = cwd_inside.empty() ? "/" : cwd_inside;
  shown = shown_as;
  timeout_ms = timeout;
  deadline_ms = timeout > 0 ? now_ms() + timeout : 0;
  return fd >= 0;
}

Root::~Root() {
  if (fd >= 0) close(fd);
}

void Root::note(const std::string &bound) {
  if (reached.empty()) reached = bound;
}

bool Root::out_of_bounds() {
  if (deadline_ms && now_ms() > deadline_ms) note("its deadline of " + std::to_string(timeout_ms) + " ms (--timeout-ms)");
  else if (!bytes_left) note("its budget of 256 MiB read");
  else if (!files_left) note("its budget of 4096 files opened");
  else return false;
  return true;
}

int resolve_in_root(Root &root, const std::string &path, std::string *inside, int *err) {
  *err = 0;
  if (root.fd < 0 || path.empty()) return *err = ENOENT, -1;
  if (root.out_of_bounds()) return *err = ETIMEDOUT, -1;
  std::vector<std::string> todo, done;  // what is left to walk (a stack), what was walked
  std::vector<int> fds;                 // the directory of each walked component
  push_parts(path, &todo);
  if (path[0] != '/') {
    std::vector<std::string> base;
    push_parts(root.cwd, &base);  // the working directory first (it is walked too: it may be a link)
    todo.insert(todo.end(), base.begin(), base.end());
  }
  int cur = dup(root.fd), links = 0;
  auto close_all = [&]() {
    for (int f : fds) close(f);
    fds.clear();
  };
  while (cur >= 0 && !todo.empty()) {
    std::string c = todo.back();
    todo.pop_back();
    if (c == "..") {  // never above the root
      if (!fds.empty()) close(cur), cur = fds.back(), fds.pop_back(), done.pop_back();
      continue;
    }
    if (c.size() > NAME_MAX) return close(cur), close_all(), *err = ENAMETOOLONG, -1;
    int next = openat(cur, c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return *err = errno, close(cur), close_all(), -1;
    struct stat st;
    if (fstat(next, &st) != 0) return *err = errno, close(next), close(cur), close_all(), -1;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlinkat(next, "", target, sizeof target - 1);
      close(next);
      if (n < 0) return *err = errno, close(cur), close_all(), -1;
      if (++links > 40) return *err = ELOOP, close(cur), close_all(), -1;
      target[n] = '\0';
      if (target[0] == '/') {  // absolute: from the root again
        close(cur);
        close_all();
        done.clear();
        cur = dup(root.fd);
      }
      push_parts(target, &todo);
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) return close(next), close(cur), close_all(), *err = ENOTDIR, -1;
    fds.push_back(cur);
    cur = next;
    done.push_back(c);
  }
  close_all();
  if (cur < 0) return *err = EMFILE, -1;
  std::string p;
  for (const std::string &d : done) p += "/" + d;
  *inside = p.empty() ? "/" : p;
  return cur;
}

int open_regular(Root &root, const std::string &path, std::string *inside, int *err, off_t *size) {
  std::string where;
  int o = resolve_in_root(root, path, &where, err);
  if (o < 0) return -1;
  struct stat st;
  if (fstat(o, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    close(o);
    return -1;
  }
  if (root.out_of_bounds()) return close(o), *err = ETIMEDOUT, -1;
  root.files_left--;
  // The object itself, reopened for reading: it was seen to be a regular file.
  int fd = open(fd_path(o).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) *err = errno;
  close(o);
  if (inside) *inside = where;
  if (size) *size = st.st_size;
  return fd;
}

ssize_t read_at(Root &root, int fd, void *buf, size_t n, off_t off) {
  if (root.out_of_bounds() || off < 0) return -1;
  if (n > root.bytes_left) n = root.bytes_left, root.note("its budget of 256 MiB read");
  ssize_t got = pread(fd, buf, n, off);
  if (got > 0) root.bytes_left -= size_t(got);
  return got;
}

bool read_small(Root &root, const std::string &path, size_t max, std::string *out, int *err) {
  int e = 0;
  off_t size = 0;
  int fd = open_regular(root, path, nullptr, &e, &size);
  if (err) *err = e;
  if (fd < 0) return false;
  out->assign(size_t(std::min<off_t>(size, off_t(max))), '\0');
  ssize_t got = out->empty() ? 0 : read_at(root, fd, &(*out)[0], out->size(), 0);
  close(fd);
  if (got < 0) return false;
  out->resize(size_t(got));
  return true;
}

bool list_dir(Root &root, const std::string &path, std::vector<std::string> *names) {
  std::string where;
  int e = 0;
  int o = resolve_in_root(root, path, &where, &e);
  if (o < 0) return false;
  struct stat st;
  int fd = fstat(o, &st) == 0 && S_ISDIR(st.st_mode) ? openat(o, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  close(o);
  DIR *d = fd >= 0 ? fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) close(fd);
    return false;
  }
  while (dirent *ent = readdir(d)) {
    if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
    if (names->size() == kMaxNames) {  // the rest is not listed, and that is said: a dropped name may be a module
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
  std::string where;
  int e = 0;
  const int o = resolve_in_root(root, path, &where, &e);
  struct stat st;
  const bool dir = o >= 0 && fstat(o, &st) == 0 && S_ISDIR(st.st_mode);
  if (o >= 0) close(o);
  return dir;
}

std::string dir_of(const std::string &path) {
  size_t k = path.rfind('/');
  if (k == std::string::npos) return ".";
  return k == 0 ? "/" : path.substr(0, k);
}

}  // namespace cli
}  // namespace ucxtls
