// The file work of ucxtls-oci-hook (oci_hook_fs.h).
#include "oci_hook_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../cli/root_fs.h"

namespace ucxtls {

using files::close_keeping_errno;
using files::write_all;

int open_dir_below(int dirfd, const std::vector<std::string> &parts, bool create, bool own_last, std::string *where) {
  int fd = dup(dirfd);
  where->clear();
  for (size_t i = 0; i < parts.size() && fd >= 0; i++) {
    const char *part = parts[i].c_str();
    *where += "/" + parts[i];
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    bool made = false;
    int next = openat(fd, part, flags);
    if (next < 0 && errno == ENOENT && create) {
      made = mkdirat(fd, part, 0755) == 0;
      if (made || errno == EEXIST) next = openat(fd, part, flags);
    }
    // The runtime's umask must not narrow what every user of the container needs to read.
    if (next >= 0 && (made || (own_last && i + 1 == parts.size())) && fchmod(next, 0755) != 0) {
      close_keeping_errno(next);
      next = -1;
    }
    close_keeping_errno(fd);
    fd = next;
  }
  return fd;
}

Staged::~Staged() {
  if (!tmp_.empty()) {
    int saved = errno;
    unlinkat(dirfd_, tmp_.c_str(), 0);
    errno = saved;
  }
}

bool Staged::stage(const std::string &data, mode_t mode, const struct stat *owner) {
  std::string tmp = "." + name_ + ".ucxtls-oci-hook." + std::to_string(getpid());
  unlinkat(dirfd_, tmp.c_str(), 0);
  int fd = openat(dirfd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  tmp_ = tmp;  // removed by the destructor unless committed
  const bool ok = write_all(fd, data.data(), data.size()) &&
                  (!owner || fchown(fd, owner->st_uid, owner->st_gid) == 0) &&
                  fchmod(fd, mode) == 0;  // after fchown, which may clear mode bits
  if (!ok) return close_keeping_errno(fd), false;
  return close(fd) == 0;
}

bool Staged::commit() {
  if (tmp_.empty() || renameat(dirfd_, tmp_.c_str(), dirfd_, name_.c_str()) != 0) return false;
  tmp_.clear();
  return true;
}

bool is_own_layer(int rootfd, std::string *why) {
  struct statfs fs;
  struct stat st, up, host;
  if (fstatfs(rootfd, &fs) != 0 || fstat(rootfd, &st) != 0 || fstatat(rootfd, "..", &up, 0) != 0) {
    *why = std::string("cannot be examined: ") + strerror(errno);
    return false;
  }
  if (fs.f_type != OVERLAYFS_SUPER_MAGIC) {
    *why = "is not an overlay (a host directory, as podman run --rootfs DIR gives)";
  } else if (up.st_dev == st.st_dev) {
    *why = "is a directory inside an overlay, not the root of one";
  } else if (stat("/", &host) == 0 && host.st_dev == st.st_dev && host.st_ino == st.st_ino) {
    *why = "is the node's own root";
  } else {
    return true;
  }
  return false;
}

void append_log(const std::string &file, const std::string &line) {
  struct stat st;
  const int pfd = open(file.c_str(), O_PATH | O_CLOEXEC);
  const bool regular = pfd < 0 || files::is_regular(pfd, &st);
  if (pfd >= 0) close(pfd);
  if (!regular) return;  // a FIFO would block, a device is not a log
  int fd = open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) write_all(fd, line.data(), line.size());
  close(fd);
}

}  // namespace ucxtls
