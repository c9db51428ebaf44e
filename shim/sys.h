// The only file-system calls the library makes, each a raw system call (raw_syscall.h): an import
// would bind to the executable's definition first (a host's own syscall or malloc). No opendir (32
// KiB of heap); O_NONBLOCK, so that a FIFO planted where a file belongs cannot hang the host.
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "core.h"

// Large static scratch, in .data rather than .bss: zero-filled pages past the file would cost
// every process one more mmap at load (the constructor keeps its stack small: the host's may be).
#define UCXTLS_FILE_BACKED __attribute__((section(".data.ucxtls")))

namespace ucxtls {

// A path under the optional sysroot. One that does not fit is cut, and every call on it fails with
// ENAMETOOLONG ("cannot tell", never "not there"). 512 bytes: kSysrootMax and the longest sysfs path.
size_t root_length(const char *sysroot);  // strlen(sysroot), measured once per process

struct Path {
  char buf[512];
  Text text;  // writes into buf
  bool rooted = false;  // starts with the sysroot
  // sysroot may be NULL. Inline: a literal's length is known at compile time.
  Path(const char *sysroot, const char *abs) {
    text.init(buf, sizeof buf);
    if (sysroot) text.add(sysroot, root_length(sysroot)), rooted = true;
    append(abs, __builtin_strlen(abs));
  }
  Path(const Path &o);                         // copy the used bytes only, not all of buf
  Path &operator=(const Path &o);
  Path &add(const char *s) { return append(s, __builtin_strlen(s)); }
  Path &add(const char *s, size_t n) { return text.add(s, n), *this; }
  Path &add_num(long v) { return text.add((long long)v), *this; }
  bool ok() const { return !text.truncated; }

 private:
  // A literal part (its length known here) is copied in place, without a call.
  Path &append(const char *s, size_t n) {
    if (__builtin_constant_p(n) && n < 64 && text.len + n < sizeof buf) {
      __builtin_memcpy(buf + text.len, s, n);
      text.len += n;
      buf[text.len] = '\0';
      return *this;
    }
    return text.add(s, n), *this;
  }
};

// Failures are -errno: "not there" (absent()) is a negative answer; anything else "cannot tell".
bool absent(long err);                                      // -ENOENT, -ENOTDIR, -EISDIR, -ELOOP
// A call under the sysroot has succeeded: it is a directory, no call needed (probe_loop.cc).
bool sysroot_answered();
int path_access(const Path &p, int mode);                   // 0 or -errno
// One read of a regular file: bytes, or -errno (-ENOENT for anything else: a FIFO, a device).
ssize_t read_small(const Path &p, char *buf, size_t cap);
ssize_t read_link(const Path &p, char *buf, size_t cap);    // cap >= 2; NUL-terminated: length, or -errno
const char *errno_name(long err);                           // "EMFILE" for -EMFILE (or EMFILE)

// stat(2), fstat(2) (libc's are GLIBC_2.33 on new glibc). stat_path follows symlinks. 0, or -errno.
int stat_path(const Path &p, FileFacts *out);
int stat_fd(int fd, FileFacts *out);

// Feeds a regular file of non-zero size to feed(chunk, n), at most max_bytes: 0, or -errno. Anything
// else counts as absent (-ENOENT), never opened: opening /dev/ptmx allocates a pty, and reading a
// stream (/proc/kmsg) takes another reader's data.
template <typename Feed>
int read_chunks(const Path &p, size_t max_bytes, Feed feed);

// Directory entries through getdents64 into a stack buffer (no heap, no DIR*).
struct DirReader {
  int fd = -1;
  int error = 0;  // -errno when the open or a getdents64 failed: the listing is not complete
  alignas(8) char buf[1024];  // getdents64 records are 8-byte aligned within it (UBSan)
  long nread = 0, pos = 0;
  bool done = false;  // the end was seen: no further getdents64 call
  explicit DirReader(const Path &p);
  ~DirReader();
  // Next entry name other than "." and ".."; NULL at the end or on error (then `error` is set).
  const char *next();
};

// AT_SECURE, without getauxval: from the auxiliary vector after stack_envp's NULL (an earlier
// unsetenv leaves NULLs before it), else /proc/self/auxv; true when neither tells (the safe side).
bool secure_execution(char *const *stack_envp);

// /proc/self/task's link count less 2 (one link per thread: fs/proc/base.c proc_task_getattr), else
// field 20 of /proc/self/stat; -1 when neither tells.
long thread_count();

// Fresh pages (mmap), never unmapped; not malloc, which the host may define and not have set up
// yet. NULL when there is no memory.
void *map_pages(size_t bytes);

// The environment edit's block: the first that fits is static (a write of UCX_TLS costs no mmap),
// others map_pages. Never freed; -z nodelete keeps a dlclose from unmapping a published one.
void *allocate_block(size_t bytes);

// --- implementation details of read_chunks
int open_ro(const Path &p);                              // fd, or -errno
ssize_t read_some(int fd, char *buf, size_t n);          // bytes, or -errno; retried on EINTR
ssize_t write_some(int fd, const char *buf, size_t n);  // one write, retried on EINTR
void close_fd(int fd);

// The regular file of non-zero size at p, opened: fd, -ENOENT for anything else, or -errno. Checked
// through O_PATH, so that what is opened is what was checked.
int open_regular(const Path &p);

template <typename Feed>
int read_chunks(const Path &p, size_t max_bytes, Feed feed) {
  int fd = open_regular(p);
  if (fd < 0) return fd;
  char chunk[1024];
  size_t total = 0;
  while (total < max_bytes) {
    ssize_t n = read_some(fd, chunk, sizeof chunk);
    if (n < 0) {
      close_fd(fd);
      return int(n);  // EIO mid-file: the scan cannot finish
    }
    if (n == 0) break;
    feed(chunk, size_t(n));
    total += size_t(n);
  }
  close_fd(fd);
  return 0;
}

}  // namespace ucxtls

// --- the driver tier's cache (driver_cache.cc): opens that keep a directory fd.
namespace ucxtls {
int open_dir(const Path &p);                     // O_RDONLY|O_DIRECTORY: fd, or -errno
// fstatat(AT_SYMLINK_NOFOLLOW): 0, or -errno; checked before an open (a FIFO gets no reader).
int stat_in(int dirfd, const char *name, FileFacts *out);
int open_file_in(int dirfd, const char *name);   // O_RDONLY|O_NOFOLLOW|O_NONBLOCK: fd, or -errno
unsigned effective_uid();
}  // namespace ucxtls
