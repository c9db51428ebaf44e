// Reading a build's files as readelf and lddtree read them, inside one root (`/`, or a process's
// /proc/PID/root): every path resolves component by component below that root, symbolic links
// included, the way openat2's RESOLVE_IN_ROOT resolves them (an absolute target or ".." never
// leaves it); only regular files are ever opened for reading (O_PATH first, fstat, then reopened
// through /proc/self/fd), so no FIFO, device or socket is waited on; files, bytes and time are
// bounded. Nothing read is ever executed.
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

struct Root {
  int fd = -1;           // the root directory (O_PATH)
  std::string cwd = "/"; // the working directory, as a path inside the root
  std::string shown;     // what to put in front of an inside path to name it to the user ("" or /proc/PID/root)
  // Bounds for one command (a hostile build must cost a bounded amount of work).
  long long deadline_ms = 0;   // CLOCK_MONOTONIC; 0: none
  int timeout_ms = 0;
  size_t files_left = 4096, bytes_left = size_t(256) << 20;
  // The first bound that stopped a read or a listing ("" while none did): what was not read may
  // be what decides, so an answer read past it is "could not tell".
  std::string reached;
  bool open(const std::string &dir, const std::string &cwd_inside, const std::string &shown_as, int timeout);
  ~Root();
  bool out_of_bounds();  // the time, file or byte budget is spent (noted in reached): what is left is "could not tell"
  void note(const std::string &bound);  // a bound stopped something: the first one is kept
};

// Resolves path (absolute: from the root; relative: from root.cwd) inside the root, following at
// most 40 symbolic links. Gives an O_PATH descriptor of the object (or -1 with *err an errno value,
// ELOOP for too many links) and in *inside its path from the root without links.
int resolve_in_root(Root &root, const std::string &path, std::string *inside, int *err);

// A regular file inside the root, opened for reading (O_RDONLY, never a FIFO or device: those give
// -1 and *err = EINVAL). Counts against the file budget.
int open_regular(Root &root, const std::string &path, std::string *inside, int *err, off_t *size = nullptr);

// pread, counted against the byte budget (short or failed reads give fewer bytes).
ssize_t read_at(Root &root, int fd, void *buf, size_t n, off_t off);

// The whole of a small regular file (at most max bytes): false when it is not one or cannot be read.
bool read_small(Root &root, const std::string &path, size_t max, std::string *out, int *err = nullptr);

// The names in a directory inside the root, sorted; false when it is not one (a link to one counts).
// At most kMaxNames: a directory with more is cut there, and root.reached says so.
constexpr size_t kMaxNames = 4096;
bool list_dir(Root &root, const std::string &path, std::vector<std::string> *names);

// Whether path is a directory inside the root (a link to one counts); nothing of it is listed.
bool is_dir_in_root(Root &root, const std::string &path);

// The directory part of an inside path ("/a/b/c" -> "/a/b"; "c" -> ".").
std::string dir_of(const std::string &path);

}  // namespace cli
}  // namespace ucxtls
