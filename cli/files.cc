// The file layer's plain part (root_fs.h): no Root, no system call beyond the named ones, so
// that the node hook, which imports no syscall(), links it alone.
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include <algorithm>

#include "root_fs.h"

namespace ucxtls {
namespace files {

long long monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void close_keeping_errno(int fd) {
  const int saved = errno;
  close(fd);
  errno = saved;
}

bool is_regular(int pfd, struct stat *st) {
  if (fstat(pfd, st) != 0) return false;
  if (!S_ISREG(st->st_mode)) errno = S_ISLNK(st->st_mode) ? ELOOP : S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
  return S_ISREG(st->st_mode);
}

int reopen(int pfd) {
  const std::string self = "/proc/self/fd/" + std::to_string(pfd);
  const int fd = open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  close_keeping_errno(pfd);
  return fd;
}

int open_regular_at(int dirfd, const char *name, bool nofollow, struct stat *st) {
  const int pfd = openat(dirfd, name, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (pfd < 0) return -1;
  if (!is_regular(pfd, st)) return close_keeping_errno(pfd), -1;
  return reopen(pfd);
}

bool read_all(int fd, std::string *out, size_t max) {
  out->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    if (out->size() + size_t(n) > max) return errno = EFBIG, false;
    out->append(buf, size_t(n));
  }
}

bool read_file(const std::string &path, std::string *out, size_t max, int dirfd) {
  struct stat st;
  const int fd = open_regular_at(dirfd, path.c_str(), false, &st);
  const bool ok = fd >= 0 && read_all(fd, out, max);
  if (fd >= 0) close_keeping_errno(fd);
  if (!ok) out->clear();
  return ok;
}

std::string file_text(const std::string &path, int dirfd) {
  std::string out;
  read_file(path, &out, SIZE_MAX, dirfd);
  return out;
}

bool own_directory(std::string *dir) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  const char *slash = strrchr(exe, '/');
  *dir = !slash ? "." : slash == exe ? "/" : std::string(exe, size_t(slash - exe));
  return true;
}

std::vector<std::string> path_parts(const std::string &path) {
  std::vector<std::string> parts;
  for (size_t b = 0, e; b <= path.size(); b = e + 1) {
    e = std::min(path.find('/', b), path.size());
    if (e > b) parts.push_back(path.substr(b, e - b));
  }
  return parts;
}

std::string join_parts(const std::vector<std::string> &parts) {
  std::string out;
  for (const std::string &p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string dir_of(const std::string &path) {
  const size_t k = path.rfind('/');
  return k == std::string::npos ? "." : k == 0 ? "/" : path.substr(0, k);
}

namespace {
template <class It>
const char *lookup(It b, It e, const char *name, Dup rule) {
  const size_t n = strlen(name);
  const char *found = nullptr;
  for (; b != e && (!found || rule == Dup::last); ++b) {
    const char *s = &(*b)[0];
    if (!strncmp(s, name, n) && s[n] == '=') found = s + n + 1;
  }
  return found;
}
}  // namespace

const char *env_lookup(const std::vector<std::string> &env, const char *name, Dup rule) {
  return lookup(env.begin(), env.end(), name, rule);
}
const char *env_lookup(char *const *envp, const char *name, Dup rule) {
  size_t k = 0;
  while (envp && envp[k]) k++;
  return lookup(envp, envp + k, name, rule);
}

std::string find_in_path(const char *name, const char *path) {
  const std::string list = path;
  for (size_t b = 0, e; b <= list.size(); b = e + 1) {
    e = std::min(list.find(':', b), list.size());
    const std::string p = (e > b ? list.substr(b, e - b) : ".") + "/" + name;
    struct stat st;  // execve runs a regular file only: a FIFO or directory there is passed over
    if (access(p.c_str(), X_OK) == 0 && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return p;
  }
  return "";
}

}  // namespace files
}  // namespace ucxtls
