#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ucxtls {

size_t root_length(const char *sysroot) {
  static const char *root;
  static size_t len;
  if (sysroot != root) root = sysroot, len = strlen(sysroot);
  return len;
}

Path::Path(const Path &o) : text(o.text) {
  text.data = buf;
  memcpy(buf, o.buf, text.len + 1);
}

Path &Path::operator=(const Path &o) {
  memmove(buf, o.buf, o.text.len + 1);  // memmove: a self-assignment is harmless
  text = o.text;
  text.data = buf;
  return *this;
}

// Every call goes through syscall(2): one import instead of access, open, read, readlink, close
// and write, each of which the loader would bind in every process (docs/design.md, "Build rules"). The *at forms exist
// on every Linux architecture (aarch64 has no plain open/access/readlink).

// A system call's result as a value or -errno (syscall(2) returns -1 and sets errno).
static long result(long r) { return r < 0 ? -long(errno) : r; }

// "Not there" is the only failure that is an answer: no such path, a path through a file, a
// directory where a file belongs, a symlink loop. Everything else (EMFILE, ENFILE, ENOMEM, EIO,
// EACCES, a path too long for our buffer...) means the probe cannot tell.
bool absent(long err) { return err == -ENOENT || err == -ENOTDIR || err == -EISDIR || err == -ELOOP; }

int path_access(const Path &p, int mode) {
  if (!p.ok()) return -ENAMETOOLONG;
  return int(result(syscall(SYS_faccessat, AT_FDCWD, p.buf, mode)));
}

bool path_exists(const Path &p) { return path_access(p, F_OK) == 0; }

static int open_flags(const Path &p, int flags) {
  if (!p.ok()) return -ENAMETOOLONG;
  return int(result(syscall(SYS_openat, AT_FDCWD, p.buf, flags)));
}

int open_ro(const Path &p) { return open_flags(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY); }

// One read or write, retried when a signal interrupted it.
static ssize_t transfer(long nr, int fd, const char *buf, size_t n) {
  for (;;) {
    ssize_t r = syscall(nr, fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    return result(r);
  }
}

ssize_t read_some(int fd, char *buf, size_t n) { return transfer(SYS_read, fd, buf, n); }

ssize_t write_some(int fd, const char *buf, size_t n) { return transfer(SYS_write, fd, buf, n); }

void close_fd(int fd) {
  if (fd >= 0) syscall(SYS_close, fd);
}

ssize_t read_small(const Path &p, char *buf, size_t cap) {
  int fd = open_ro(p);
  if (fd < 0) return fd;
  // Sysfs and procfs attributes arrive whole in one read; a longer file is cut at cap.
  ssize_t n = read_some(fd, buf, cap);
  close_fd(fd);
  return n;
}

ssize_t read_link(const Path &p, char *buf, size_t cap) {
  if (!p.ok()) return -ENAMETOOLONG;
  if (cap < 2) return -EINVAL;
  ssize_t n = result(syscall(SYS_readlinkat, AT_FDCWD, p.buf, buf, cap - 1));
  if (n < 0) return n;
  buf[n] = '\0';
  return n;
}

const char *errno_name(long err) {
  switch (err < 0 ? -err : err) {
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOMEM: return "ENOMEM";
    case EIO: return "EIO";
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENODEV: return "ENODEV";
    case ENXIO: return "ENXIO";
    case EFAULT: return "EFAULT";
    case ENOSYS: return "ENOSYS";
    case ESTALE: return "ESTALE";
    case EOVERFLOW: return "EOVERFLOW";
    default: return "error";
  }
}

struct linux_dirent64 {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

DirReader::DirReader(const Path &p) {
  fd = open_flags(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) error = fd, fd = -1, done = true;
}

DirReader::~DirReader() { close_fd(fd); }

const char *DirReader::next() {
  if (fd < 0 || done) return nullptr;
  for (;;) {
    if (pos >= nread) {
      nread = result(syscall(SYS_getdents64, fd, buf, sizeof buf));
      pos = 0;
      if (nread <= 0) {
        if (nread < 0) error = int(nread);  // the listing was cut short
        nread = 0;
        done = true;
        return nullptr;
      }
    }
    const linux_dirent64 *e = reinterpret_cast<const linux_dirent64 *>(buf + pos);
    if (e->d_reclen == 0) {  // never from a sane kernel; do not spin
      nread = 0;
      error = -EIO;
      done = true;
      return nullptr;
    }
    pos += e->d_reclen;
    const char *n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    return n;
  }
}

}  // namespace ucxtls

// --- stat through the system call the architecture has, in the kernel's own layout: struct
// stat64 with fstat64 and fstatat64 on 32-bit ABIs, struct stat with fstat and newfstatat on
// 64-bit ones (glibc's types are the kernel's there).


namespace ucxtls {

#if defined(SYS_fstat64)
typedef struct stat64 KernelStat;
static const long kNrFstat = SYS_fstat64, kNrFstatat = SYS_fstatat64;
#else
typedef struct stat KernelStat;
static const long kNrFstat = SYS_fstat, kNrFstatat = SYS_newfstatat;
#endif

static void facts_of(const KernelStat &st, FileFacts *out) {
  out->uid = unsigned(st.st_uid);
  out->mode = unsigned(st.st_mode);
  out->size = (long long)st.st_size;
  out->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

int stat_fd(int fd, FileFacts *out) {
  KernelStat st;
  long r = result(syscall(kNrFstat, fd, &st));
  if (r < 0) return int(r);
  facts_of(st, out);
  return 0;
}

int stat_path(const Path &p, FileFacts *out) {
  if (!p.ok()) return -ENAMETOOLONG;
  KernelStat st;
  long r = result(syscall(kNrFstatat, AT_FDCWD, p.buf, &st, 0));
  if (r < 0) return int(r);
  facts_of(st, out);
  return 0;
}

int open_dir(const Path &p) { return open_flags(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK); }

int open_file_in(int dirfd, const char *name) {
  return int(syscall(SYS_openat, dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
}

unsigned effective_uid() {
#ifdef SYS_geteuid32
  return unsigned(syscall(SYS_geteuid32));  // 32-bit x86/arm: SYS_geteuid is the 16-bit one
#else
  return unsigned(syscall(SYS_geteuid));
#endif
}

}  // namespace ucxtls
