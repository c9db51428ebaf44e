// The thin system layer under the probes: the only file-system calls the library makes.
//
// Every call is a raw syscall(2) (GLIBC_2.2.5): faccessat, openat, read, readlinkat, close,
// getdents64, write. One import instead of six, since the loader binds each import in every
// process; never stat/fstatat (GLIBC_2.33 on new glibc), never opendir (it allocates 32 KiB on the
// heap). Files are opened O_NONBLOCK so that a FIFO planted where a file belongs cannot hang
// the host; reads go into the caller's fixed buffers.
#pragma once

#include <stddef.h>
#include <sys/types.h>

namespace ucxtls {

// A path under the optional sysroot, built in a fixed buffer. `ok` turns false (and stays false)
// when the path would not fit; every call on such a path then fails like a missing file.
struct Path {
  char buf[4096];
  size_t len = 0;
  bool ok = true;
  Path(const char *sysroot, const char *abs);  // sysroot may be NULL
  Path(const Path &o);                         // copy the used bytes only, not all 4 KiB
  Path &operator=(const Path &o);
  Path &add(const char *s);
  Path &add(const char *s, size_t n);
  Path &add_num(long v);
};

bool path_exists(const Path &p);                           // access(F_OK)
ssize_t read_small(const Path &p, char *buf, size_t cap);  // one read; -1 on failure
ssize_t read_link(const Path &p, char *buf, size_t cap);   // NUL-terminated; -1 on failure

// Reads a whole file in chunks, at most max_bytes, calling feed(chunk, n). False if it cannot open
// it or it is a stream (pipe, FIFO, socket, tty) whose data belongs to another reader.
template <typename Feed>
bool read_chunks(const Path &p, size_t max_bytes, Feed feed);

// Directory entries through getdents64 into a stack buffer (no heap, no DIR*).
struct DirReader {
  int fd = -1;
  alignas(8) char buf[2048];  // getdents64 records are 8-byte aligned within it (UBSan)
  long nread = 0, pos = 0;
  bool done = false;  // the end was seen: no further getdents64 call
  explicit DirReader(const Path &p);
  ~DirReader();
  bool ok() const { return fd >= 0; }
  // Next entry name other than "." and ".."; NULL at the end or on error.
  const char *next();
};

// --- implementation details of read_chunks
int open_ro(const Path &p);
ssize_t read_some(int fd, char *buf, size_t n);
ssize_t write_some(int fd, const char *buf, size_t n);  // one write, retried on EINTR
bool seekable(int fd);  // lseek works: a file, not a stream whose data another reader expects
void close_fd(int fd);

template <typename Feed>
bool read_chunks(const Path &p, size_t max_bytes, Feed feed) {
  int fd = open_ro(p);
  if (fd < 0) return false;
  if (!seekable(fd)) {  // a pipe, FIFO, socket or tty (./ucx.conf -> /dev/stdin): not ours to drain
    close_fd(fd);
    return false;
  }
  char chunk[2048];
  size_t total = 0;
  while (total < max_bytes) {
    ssize_t n = read_some(fd, chunk, sizeof chunk);
    if (n <= 0) break;
    feed(chunk, size_t(n));
    total += size_t(n);
  }
  close_fd(fd);
  return true;
}

}  // namespace ucxtls

// --- the driver tier's cache (driver_cache.cc): fstat through the raw system call (the library
// must not import stat/fstatat: GLIBC_2.33 on new glibc), and opens that keep a directory fd.
namespace ucxtls {
struct FileFacts;
bool stat_fd(int fd, FileFacts *out);            // false on failure (errno set)
bool stat_path(const Path &p, FileFacts *out);   // follows symlinks; false on failure
int open_dir(const Path &p);                     // O_RDONLY|O_DIRECTORY; -1 on failure (errno set)
int open_file_in(int dirfd, const char *name);   // O_RDONLY|O_NOFOLLOW, never a FIFO's reader
unsigned effective_uid();
}  // namespace ucxtls
