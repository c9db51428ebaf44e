#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ucxtls {

Path::Path(const char *sysroot, const char *abs) {
  buf[0] = '\0';
  if (sysroot) add(sysroot);
  add(abs);
}

Path &Path::add(const char *s, size_t n) {
  if (!ok || len + n + 1 > sizeof buf) {
    ok = false;
    return *this;
  }
  memcpy(buf + len, s, n);
  len += n;
  buf[len] = '\0';
  return *this;
}

Path &Path::add(const char *s) { return add(s, strlen(s)); }

Path &Path::add_num(long v) {
  char tmp[24];
  int i = sizeof tmp;
  unsigned long u = v < 0 ? 0 : (unsigned long)v;
  do {
    tmp[--i] = char('0' + u % 10);
    u /= 10;
  } while (u);
  return add(tmp + i, sizeof tmp - i);
}

bool path_exists(const Path &p) { return p.ok && access(p.buf, F_OK) == 0; }

int open_ro(const Path &p) {
  if (!p.ok) return -1;
  return open(p.buf, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

ssize_t read_some(int fd, char *buf, size_t n) {
  for (;;) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

bool seekable(int fd) { return lseek(fd, 0, SEEK_CUR) >= 0; }

void close_fd(int fd) {
  if (fd >= 0) close(fd);
}

ssize_t read_small(const Path &p, char *buf, size_t cap) {
  int fd = open_ro(p);
  if (fd < 0) return -1;
  // Sysfs and procfs attributes arrive whole in one read; a longer file is cut at cap.
  ssize_t n = read_some(fd, buf, cap);
  close_fd(fd);
  return n;
}

ssize_t read_link(const Path &p, char *buf, size_t cap) {
  if (!p.ok || cap < 2) return -1;
  ssize_t n = readlink(p.buf, buf, cap - 1);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

struct linux_dirent64 {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

DirReader::DirReader(const Path &p) {
  if (p.ok) fd = open(p.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
}

DirReader::~DirReader() { close_fd(fd); }

const char *DirReader::next() {
  if (fd < 0 || done) return nullptr;
  for (;;) {
    if (pos >= nread) {
      nread = syscall(SYS_getdents64, fd, buf, sizeof buf);
      pos = 0;
      if (nread <= 0) {
        nread = 0;
        done = true;
        return nullptr;
      }
    }
    const linux_dirent64 *e = reinterpret_cast<const linux_dirent64 *>(buf + pos);
    if (e->d_reclen == 0) {  // never from a sane kernel; do not spin
      nread = 0;
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
