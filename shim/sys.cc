#include "sys.h"

#include "raw_syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
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

Path::Path(const Path &o) : text(o.text), rooted(o.rooted) {
  text.data = buf;
  memcpy(buf, o.buf, text.len + 1);
}

Path &Path::operator=(const Path &o) {
  memmove(buf, o.buf, o.text.len + 1);  // memmove: a self-assignment is harmless
  text = o.text;
  text.data = buf;
  rooted = o.rooted;
  return *this;
}

// Every call is a raw system call (raw_syscall.h): no import, no errno; the result or -errno. The
// *at forms exist on every Linux architecture (aarch64 has no plain open/access/readlink).
#if defined(UCXTLS_LIBC_SYSCALL)
long raw_syscall(long nr, long a, long b, long c, long d, long e, long f) {
  const int host_errno = errno;  // libc's syscall sets errno; the host's must stay as it was
  const long r = syscall(nr, a, b, c, d, e, f);
  const long result = r == -1 ? -long(errno) : r;
  errno = host_errno;
  return result;
}
#endif

// "Not there" is the only failure that is an answer: no such path, a path through a file, a
// directory where a file belongs, a symlink loop. Everything else (EMFILE, ENFILE, ENOMEM, EIO,
// EACCES, a path too long for our buffer...) means the probe cannot tell.
bool absent(long err) { return err == -ENOENT || err == -ENOTDIR || err == -EISDIR || err == -ELOOP; }

static bool g_sysroot_answered;
bool sysroot_answered() { return g_sysroot_answered; }
// A call's result on p, noted when p is under the sysroot and the call succeeded.
static long noted(const Path &p, long r) {
  if (r >= 0 && p.rooted) g_sysroot_answered = true;
  return r;
}

int path_access(const Path &p, int mode) {
  if (!p.ok()) return -ENAMETOOLONG;
  return int(noted(p, raw_syscall(SYS_faccessat, AT_FDCWD, long(p.buf), mode)));
}

// O_LARGEFILE: a 32-bit process opens a file over 2 GiB (a ucx.conf padded with comments) as a
// 64-bit one does, instead of failing with EOVERFLOW; glibc's open adds it, the raw call must.
// 64-bit kernels force it for 64-bit processes, where the headers define it as 0.
static int open_flags(const Path &p, int flags) {
  if (!p.ok()) return -ENAMETOOLONG;
  return int(noted(p, raw_syscall(SYS_openat, AT_FDCWD, long(p.buf), flags | O_LARGEFILE)));
}

int open_ro(const Path &p) { return open_flags(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY); }

// One read or write, retried when a signal interrupted it.
static ssize_t read_or_write(long nr, int fd, const char *buf, size_t n) {
  for (;;) {
    const long r = raw_syscall(nr, fd, long(buf), long(n));
    if (r == -EINTR) continue;
    return r;
  }
}

ssize_t read_some(int fd, char *buf, size_t n) { return read_or_write(SYS_read, fd, buf, n); }

ssize_t write_some(int fd, const char *buf, size_t n) { return read_or_write(SYS_write, fd, buf, n); }

void close_fd(int fd) {
  if (fd >= 0) raw_syscall(SYS_close, fd);
}

ssize_t read_small(const Path &p, char *buf, size_t cap) {
  // Under a sysroot, only a regular file everyone may read, checked before the open (every sysfs
  // and procfs attribute is one): a device's open alone acts (a watchdog arms), and a link to
  // /proc/kmsg is refused even to root. Without one the paths are the kernel's own attributes.
  if (p.rooted) {
    FileFacts st;
    const int s = stat_path(p, &st);
    if (s < 0) return s;
    if ((st.mode & S_IFMT) != S_IFREG) return -ENOENT;
    if (!(st.mode & S_IROTH)) return -EACCES;
  }
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
  ssize_t n = noted(p, raw_syscall(SYS_readlinkat, AT_FDCWD, long(p.buf), long(buf), long(cap - 1)));
  if (n < 0) return n;
  buf[n] = '\0';
  return n;
}

const char *errno_name(long err) {
#define UCXTLS_ERRNO(e) {e, #e}
  static const struct {
    int code;
    char name[13];  // characters, not pointers: no relocation
  } kNames[] = {UCXTLS_ERRNO(ENOENT), UCXTLS_ERRNO(ENOTDIR), UCXTLS_ERRNO(EISDIR), UCXTLS_ERRNO(ELOOP),
                UCXTLS_ERRNO(EACCES), UCXTLS_ERRNO(EPERM),   UCXTLS_ERRNO(EMFILE), UCXTLS_ERRNO(ENFILE),
                UCXTLS_ERRNO(ENOMEM), UCXTLS_ERRNO(EIO),     UCXTLS_ERRNO(EAGAIN), UCXTLS_ERRNO(EINVAL),
                UCXTLS_ERRNO(ENAMETOOLONG), UCXTLS_ERRNO(ENODEV), UCXTLS_ERRNO(ENXIO), UCXTLS_ERRNO(EFAULT),
                UCXTLS_ERRNO(ENOSYS), UCXTLS_ERRNO(ESTALE), UCXTLS_ERRNO(EOVERFLOW)};
#undef UCXTLS_ERRNO
  for (const auto &e : kNames)
    if (e.code == (err < 0 ? -err : err)) return e.name;
  return "error";
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
  if (done) return nullptr;  // also when the open failed
  for (;;) {
    if (pos >= nread) {
      nread = raw_syscall(SYS_getdents64, fd, long(buf), long(sizeof buf));
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

// --- stat in the kernel's own layout: newfstatat/fstat on 64-bit ABIs (struct stat is the
// kernel's); on 32-bit ones statx, else fstatat64 (a kernel before 4.11, a seccomp profile without
// statx) only without -D_TIME_BITS=64, where glibc's stat64 is the kernel's.

namespace ucxtls {

#if defined(SYS_fstat64)
#define UCXTLS_STAT_32BIT 1
typedef struct stat64 KernelStat;
static const long kNrFstat = SYS_fstat64, kNrFstatat = SYS_fstatat64;
#else
typedef struct stat KernelStat;
static const long kNrFstat = SYS_fstat, kNrFstatat = SYS_newfstatat;
#endif

static void facts_of(const KernelStat &st, FileFacts *out) {
  out->dev = (unsigned long long)st.st_dev;
  out->ino = (unsigned long long)st.st_ino;
  out->nlink = (unsigned long long)st.st_nlink;
  out->uid = unsigned(st.st_uid);
  out->mode = unsigned(st.st_mode);
  out->size = (long long)st.st_size;
  out->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

// stat(2) of dirfd/path (flags: AT_EMPTY_PATH for the fd itself).
static int stat_at(int dirfd, const char *path, int flags, FileFacts *out) {
#if defined(UCXTLS_STAT_32BIT) && defined(SYS_statx)
  struct {  // struct statx (include/uapi/linux/stat.h): the same layout on every architecture
    uint32_t mask, blksize;
    uint64_t attributes;
    uint32_t nlink, uid, gid;
    uint16_t mode, pad0;
    uint64_t ino, size, blocks, attributes_mask;
    struct {
      int64_t sec;
      uint32_t nsec;
      int32_t pad;
    } atime, btime, ctime, mtime;
    uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
    uint64_t spare[14];
  } sx;
  static_assert(sizeof sx == 256, "struct statx is 256 bytes");
  long r = raw_syscall(SYS_statx, dirfd, long(path), flags, 0x7ff /* STATX_BASIC_STATS */, long(&sx));
  if (r == 0) {
    out->dev = (uint64_t(sx.dev_major) << 32) | sx.dev_minor;
    out->ino = sx.ino;
    out->nlink = sx.nlink;
    out->uid = sx.uid;
    out->mode = sx.mode;
    out->size = (long long)sx.size;
    out->mtime_ns = sx.mtime.sec * 1000000000LL + sx.mtime.nsec;
    return 0;
  }
#if defined(__USE_TIME_BITS64)
  return int(r);  // glibc's struct stat64 is not the kernel's here: no fallback
#else
  if (r != -ENOSYS && r != -EPERM) return int(r);
#endif
#endif
  KernelStat st;
  long r2 = (flags & AT_EMPTY_PATH) ? raw_syscall(kNrFstat, dirfd, long(&st))
                                    : raw_syscall(kNrFstatat, dirfd, long(path), long(&st), flags);
  if (r2 < 0) return int(r2);
  facts_of(st, out);
  return 0;
}

int stat_fd(int fd, FileFacts *out) { return stat_at(fd, "", AT_EMPTY_PATH, out); }

int stat_in(int dirfd, const char *name, FileFacts *out) { return stat_at(dirfd, name, AT_SYMLINK_NOFOLLOW, out); }

int stat_path(const Path &p, FileFacts *out) {
  if (!p.ok()) return -ENAMETOOLONG;
  return stat_at(AT_FDCWD, p.buf, 0, out);
}

int open_regular(const Path &p) {
  // The file itself, not opened for reading: no driver's open runs for a device (O_PATH).
  const int pfd = open_flags(p, O_PATH | O_CLOEXEC);
  if (pfd < 0) return pfd;
  FileFacts st;
  int fd = stat_fd(pfd, &st);
  if (fd == 0 && ((st.mode & S_IFMT) != S_IFREG || st.size <= 0)) fd = -ENOENT;
  if (fd == 0) {
    // Open what was checked, through the descriptor's link: the path may point elsewhere now.
    Path self(nullptr, "/proc/self/fd/");
    self.add_num(pfd);
    fd = open_ro(self);
    if (fd == -ENOENT) {  // no /proc: by the path, and then it must still be the same file
      fd = open_ro(p);
      FileFacts again;
      if (fd >= 0 && (stat_fd(fd, &again) != 0 || again.dev != st.dev || again.ino != st.ino)) {
        close_fd(fd);
        fd = -EAGAIN;  // it changed under us: cannot tell
      }
    }
  }
  close_fd(pfd);
  return fd;
}

int open_dir(const Path &p) { return open_flags(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK); }

int open_file_in(int dirfd, const char *name) {
  return int(raw_syscall(SYS_openat, dirfd, long(name), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_LARGEFILE));
}

bool secure_execution(char *const *stack_envp) {
  if (stack_envp) {
    char *const *p = stack_envp;
    while (*p) p++;
    while (!*p) p++;  // an unsetenv's leftovers; the vector's first type is never AT_NULL
    // The vector ends with AT_NULL; 128 pairs is more than any kernel writes (about 25).
    const int secure = auxv_secure(reinterpret_cast<const unsigned long *>(p), 256);
    if (secure >= 0) return secure;
  }
  alignas(8) unsigned long words[128];  // the kernel's auxv is at most AT_VECTOR_SIZE pairs
  const ssize_t n = read_small(Path(nullptr, "/proc/self/auxv"), reinterpret_cast<char *>(words), sizeof words);
  const int secure = n > 0 ? auxv_secure(words, size_t(n) / sizeof(unsigned long)) : -1;
  return secure != 0;
}

long thread_count() {
  FileFacts task;
  if (stat_path(Path(nullptr, "/proc/self/task"), &task) == 0 && task.nlink >= 3) return long(task.nlink - 2);
  char stat[512];
  const ssize_t n = read_small(Path(nullptr, "/proc/self/stat"), stat, sizeof stat);
  return n > 0 ? parse_stat_threads(stat, size_t(n)) : -1;
}

void *map_pages(size_t bytes) {
  const long prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
#if defined(__i386__) || defined(__s390x__)
  // i386's old_mmap, and s390x's mmap, take their six arguments in memory (raw_syscall.h: i386
  // has five registers at most).
  const unsigned long args[6] = {0, bytes, unsigned(prot), unsigned(flags), ~0UL, 0};
  const long r = raw_syscall(SYS_mmap, long(args));
#elif !defined(SYS_mmap)  // 32-bit arm, riscv32: mmap2 alone (its offset in pages; 0 here)
  const long r = raw_syscall(SYS_mmap2, 0, long(bytes), prot, flags, -1, 0);
#else
  const long r = raw_syscall(SYS_mmap, 0, long(bytes), prot, flags, -1, 0);
#endif
  return r < 0 && r > -4096 ? nullptr : reinterpret_cast<void *>(r);
}

UCXTLS_FILE_BACKED static char g_first_block[2048] __attribute__((aligned(16)));
static bool g_first_block_used;

void *allocate_block(size_t bytes) {
  if (g_first_block_used || bytes > sizeof g_first_block) return map_pages(bytes);
  g_first_block_used = true;
  return g_first_block;
}

unsigned effective_uid() {
#ifdef SYS_geteuid32
  return unsigned(raw_syscall(SYS_geteuid32));  // 32-bit x86/arm: SYS_geteuid is the 16-bit one
#else
  return unsigned(raw_syscall(SYS_geteuid));
#endif
}

}  // namespace ucxtls
