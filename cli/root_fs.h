// The one file layer of doctor and the node hook (built without exceptions or RTTI for the hook).
// A Root reads files as readelf and lddtree do, inside one root (`/`, or /proc/PID/root): a path
// resolves below it as openat2's RESOLVE_IN_ROOT resolves it (an absolute link or ".." never
// leaves it); only regular files are opened, so no FIFO, device or socket is waited on; files,
// bytes and time are bounded.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace ucxtls {
namespace files {

long long monotonic_ms();
void close_keeping_errno(int fd);

// dirfd/name opened for reading once fstat of an O_PATH descriptor shows a regular file (no device's
// open runs, no FIFO blocks), reopened through /proc/self/fd (that very object, never a path again);
// -1 with errno ELOOP (a link, with nofollow), EISDIR or EINVAL otherwise.
int open_regular_at(int dirfd, const char *name, bool nofollow, struct stat *st);
bool is_regular(int pfd, struct stat *st);
int reopen(int pfd);
// What fd gives until its end, at most max bytes: false on an error or when there is more (EFBIG).
bool read_all(int fd, std::string *out, size_t max = SIZE_MAX);
// A regular file (links followed) read whole, at most max bytes; false and *out empty, or "".
bool read_file(const std::string &path, std::string *out, size_t max = SIZE_MAX, int dirfd = AT_FDCWD);
std::string file_text(const std::string &path, int dirfd = AT_FDCWD);

// The directory this program's executable is in (/proc/self/exe); false when it cannot be read.
bool own_directory(std::string *dir);

// All n bytes at p written to fd (EINTR retried); inline, as close_from, for ucxtls-probe (no libstdc++).
inline bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= size_t(w);
  }
  return true;
}

// Closes every descriptor from fd up (close_range, Linux 5.9: the same number on every architecture).
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
inline void close_from(int fd) {
  if (syscall(SYS_close_range, unsigned(fd), ~0u, 0u) != 0)
    for (int k = fd; k < 65536; k++) close(k);
}

// A path's components, empty ones dropped ("//a/./b/" -> a . b); components as an absolute path
// (none: "/"); a path's directory ("c" -> "."); its last component ("c" -> "c").
std::vector<std::string> path_parts(const std::string &path);
std::string join_parts(const std::vector<std::string> &parts);
std::string dir_of(const std::string &path);
inline std::string base_name(const std::string &path) { return path.substr(path.rfind('/') + 1); }  // npos + 1: 0

// Whether two stats name one file (a device and an inode).
inline bool same_inode(const struct stat &a, const struct stat &b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// NAME's value in an environment (nullptr: unset); of several, getenv takes the first
// (stdlib/getenv.c), ld.so the last of its LD_* ones (elf/rtld.c process_envvars).
enum class Dup { first, last };
const char *env_lookup(const std::vector<std::string> &env, const char *name, Dup rule);
const char *env_lookup(char *const *envp, const char *name, Dup rule);

// The first executable regular file `name` in a PATH value's directories, as execvp looks; "" if none.
std::string find_in_path(const char *name, const char *path);

struct Root {
  int fd = -1;           // the root directory (O_PATH)
  std::string cwd = "/"; // the working directory, as a path inside the root
  std::string shown;     // what to put in front of an inside path to name it to the user ("" or /proc/PID/root)
  long long deadline_ms = 0;   // CLOCK_MONOTONIC; 0: none (bounds: a hostile build costs bounded work)
  int timeout_ms = 0;
  size_t files_left = 4096, bytes_left = size_t(256) << 20;
  // The first bound that stopped a read or a listing ("" while none did): what was not read may
  // be what decides, so an answer read past it is "could not tell".
  std::string reached;
  bool open(const std::string &dir, const std::string &cwd_inside, const std::string &shown_as, int timeout);
  ~Root();
  bool out_of_bounds();  // the time, file or byte budget is spent (noted in reached)
  void note(const std::string &bound);  // a bound stopped something: the first one is kept
};

// Test seams: false makes resolve_in_root walk where openat2 would do; walks counts the walker's.
extern bool try_openat2;
extern unsigned long walks;

// path (relative: from root.cwd) resolved inside the root, at most 40 links: an O_PATH descriptor,
// or -1 with *err. With inside, its path without links (walker only).
int resolve_in_root(Root &root, const std::string &path, std::string *inside, int *err);

// A regular file inside the root, opened for reading (open_regular_at's errors); a file counted.
int open_regular(Root &root, const std::string &path, std::string *inside, int *err, off_t *size = nullptr);

// pread, counted against the byte budget (short or failed reads give fewer bytes).
ssize_t read_at(Root &root, int fd, void *buf, size_t n, off_t off);

// The whole of a small regular file (at most max bytes): false when it is not one or unreadable.
bool read_small(Root &root, const std::string &path, size_t max, std::string *out, int *err = nullptr);

// The names in a directory inside the root (a link to one counts), sorted, at most kMaxNames (a cut
// noted in root.reached); false when it is not one.
constexpr size_t kMaxNames = 4096;
bool list_dir(Root &root, const std::string &path, std::vector<std::string> *names);

// Whether path is a directory inside the root (a link to one counts); nothing of it is listed.
bool is_dir_in_root(Root &root, const std::string &path);

}  // namespace files

namespace cli {
using namespace files;
}  // namespace cli
}  // namespace ucxtls
