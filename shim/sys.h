// The thin system layer under the probes: the only file-system calls the library makes.
//
// Every call is the architecture's system call instruction (raw_syscall.h): faccessat, openat,
// read, readlinkat, close, getdents64, write, stat, mmap. No import at all: the loader would bind
// one to the executable's definition first (a host's own syscall or malloc); never opendir (it
// allocates 32 KiB on the heap). Files are opened O_NONBLOCK so that a FIFO planted where a file belongs cannot hang
// the host; reads go into the caller's fixed buffers.
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "core.h"

// Large static scratch (the constructor keeps its stack small, since the host's may be): placed in
// .data, not .bss. Zero-filled pages past the file would cost every process one more mmap at load.
// The library is linked with --sort-section=name: the sections ".data.ucxtls.<n>..." follow in the
// order of n, and .data ends on the page the loader already writes (it zeroes .bss after .data). So
// the order is: the driver tier's report (cold), the probes' scratch, the first environment block,
// the decision (its head hot), the facts last (on that page): every path writes few pages.
#define UCXTLS_FILE_BACKED_AT(order) __attribute__((section(".data.ucxtls." order)))

namespace ucxtls {

// A path under the optional sysroot, written by a Text into a fixed buffer. When the path would
// not fit, the text is cut (ok() turns false, and stays false); every call on such a path then
// fails with ENAMETOOLONG, which the probes read as "cannot tell", never as "not there". 512
// bytes: the sysroot (at most kSysrootMax) plus the longest sysfs path the probe builds, and the
// constructor's stack stays small.
// strlen(sysroot), remembered: a process has one sysroot, and every path starts with it.
size_t root_length(const char *sysroot);

struct Path {
  char buf[512];
  Text text;  // writes into buf
  bool rooted = false;  // starts with the sysroot
  // sysroot may be NULL. Inline, so that the length of a literal `abs` is known at compile time;
  // the sysroot's is measured once per process (root_length).
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
  // A literal part (its length known here) is copied in place, without a call; anything that
  // might not fit, and every other part, through Text::add, which cuts it.
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

// Every call below returns a negative errno on failure, so that the probes can tell "not there"
// (absent(), a real negative answer) from "cannot tell" (EMFILE, ENOMEM, EIO, EACCES...).
bool absent(long err);                                      // -ENOENT, -ENOTDIR, -EISDIR, -ELOOP
// Whether a call on a path under the sysroot has succeeded in this process: the sysroot is then a
// directory, without a call of its own to say so (probe_loop.cc).
bool sysroot_answered();
bool path_exists(const Path &p);                            // access(F_OK) == 0
int path_access(const Path &p, int mode);                   // 0 or -errno
// One read of a regular file: bytes, or -errno (-ENOENT for anything else: a FIFO, a device).
ssize_t read_small(const Path &p, char *buf, size_t cap);
ssize_t read_link(const Path &p, char *buf, size_t cap);    // NUL-terminated: length, or -errno
const char *errno_name(long err);                           // "EMFILE" for -EMFILE (or EMFILE)

// stat(2) and fstat(2) through the raw system calls (the library must not import stat/fstatat:
// GLIBC_2.33 on new glibc). stat_path follows symlinks. 0, or -errno.
int stat_path(const Path &p, FileFacts *out);
int stat_fd(int fd, FileFacts *out);

// Reads a whole regular file in chunks, at most max_bytes, calling feed(chunk, n). Returns 0, or
// -errno when it cannot: a path that is not a regular file of non-zero size (a device, a FIFO,
// /proc/kmsg, a procfs file) is never opened and counts as absent (-ENOENT), since opening a device
// can change the machine (/dev/ptmx allocates a pty) and reading a stream takes another reader's data.
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

// Secure execution (AT_SECURE), without getauxval (a host may define its own: raw_syscall.h).
// stack_envp is the environment array the kernel built on the stack (the constructor's envp when
// it lies right after argv), or NULL. The auxiliary vector follows its NULL; an unsetenv before
// the library shifted the entries down, leaving NULLs before it, which are skipped. Without it, or
// when the words there are not an auxiliary vector, /proc/self/auxv is read. When neither tells,
// the answer is true: secure execution reads nothing, the safe side.
bool secure_execution(char *const *stack_envp);

// How many threads the process has: /proc/self/task's link count less 2 (procfs adds one link per
// thread: fs/proc/base.c, proc_task_getattr), one stat; where that does not tell (fewer than 3
// links: another kernel, no /proc), field 20 of /proc/self/stat (3 calls). -1 when neither tells.
long thread_count();

// Fresh zero-filled pages (mmap), never unmapped: the library's one allocation, the environment
// strings and array it publishes (environ_edit.cc). Not malloc: a host may define its own, and a
// preloaded constructor runs before the host's constructors set it up. NULL when there is no memory.
void *map_pages(size_t bytes);

// The environment edit's block (environ_edit.cc): the first one that fits is static storage on the
// page the facts share (sys.h UCXTLS_FILE_BACKED_AT), which every path writes already: a write of
// UCX_TLS costs no mmap and no fresh page. A larger or a later one is map_pages. Never freed; the
// library is linked -z nodelete, so a dlclose never unmaps an environment published from it.
void *allocate_block(size_t bytes);

// --- implementation details of read_chunks
int open_ro(const Path &p);                              // fd, or -errno
ssize_t read_some(int fd, char *buf, size_t n);          // bytes, or -errno; retried on EINTR
ssize_t write_some(int fd, const char *buf, size_t n);  // one write, retried on EINTR
void close_fd(int fd);

// The regular file of non-zero size at p, opened for reading: fd; -ENOENT when p is anything else
// (a device, a FIFO, a procfs file); -errno. The check is made on the file itself (O_PATH), and
// what is opened is what was checked, even if p is pointed elsewhere meanwhile.
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
// The entry `name` of dirfd, not followed if a symbolic link (fstatat AT_SYMLINK_NOFOLLOW): 0, or
// -errno. The cache reader checks the file with it before opening it, so that a FIFO named like
// the file gets no reader and a device no open.
int stat_in(int dirfd, const char *name, FileFacts *out);
int open_file_in(int dirfd, const char *name);   // O_RDONLY|O_NOFOLLOW|O_NONBLOCK: fd, or -errno
unsigned effective_uid();
}  // namespace ucxtls
