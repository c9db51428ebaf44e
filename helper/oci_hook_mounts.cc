// Where a container's mounts land (oci_hook_mounts.h). runc mounts them in order, each on its
// destination resolved inside the root at that moment (libcontainer/rootfs_linux.go mountToRootfs:
// securejoin.SecureJoin in runc 1.1, pathrs.OpenInRoot in 1.3): ".." never above the root, a link's
// target walked in its place (an absolute one from the root), a missing component kept as written,
// more than 255 links fail. So a bind of a host directory holding `l -> /etc`, then a tmpfs on its
// `l`, puts the tmpfs on the container's /etc. The hook, outside the container's mounts, reads each
// link itself from the image or an earlier bind's source, following none (O_PATH | O_NOFOLLOW).
#include "oci_hook_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "../cli/root_fs.h"

namespace ucxtls {

namespace {

const int kMaxLinks = 255;  // SecureJoin's limit (ELOOP beyond it: the runtime fails the start)

enum class Link { kYes, kNo, kUnknown };

// Whether base/parts names a symbolic link (its target in *target), walking every directory before
// the last component O_PATH | O_NOFOLLOW. One that is absent or not a directory ends the walk
// ("kept as written"). one_fs: the walk may not leave base's file system (a bind without "rbind"
// carries none of the mounts below its source), else the answer is unknown.
// last: the walk before, below any base; it goes on from there when it was below this one and its
// components begin these, and is this walk after (LastWalk).
Link read_link_below(int base, const std::vector<std::string> &parts, bool one_fs, std::string *target,
                     LastWalk *last) {
  struct stat top, st;
  if (fstat(base, &top) != 0) return Link::kUnknown;
  size_t i = 0;
  const bool same_base = last->fd >= 0 && last->dev == top.st_dev && last->ino == top.st_ino && last->one_fs == one_fs;
  if (same_base && last->parts.size() < parts.size() && std::equal(last->parts.begin(), last->parts.end(), parts.begin()))
    i = last->parts.size();
  int fd = fcntl(i ? last->fd : base, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Link::kUnknown;
  Link answer = Link::kNo;
  for (; i + 1 < parts.size() && answer == Link::kNo; i++) {
    int next = openat(fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno != ENOENT && errno != ENOTDIR) answer = Link::kUnknown;
    if (next < 0) break;
    if (one_fs && (fstat(next, &st) != 0 || st.st_dev != top.st_dev)) answer = Link::kUnknown;
    close(fd);
    fd = next;
  }
  if (answer == Link::kNo) {  // parts[0, i) were opened, each a directory: the next walk may go on from fd
    if (last->fd >= 0) close(last->fd);
    last->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    last->dev = top.st_dev, last->ino = top.st_ino, last->one_fs = one_fs;
    last->parts.assign(parts.begin(), parts.begin() + long(i));
  }
  // The walk stopped at parts[i], absent or no directory: SecureJoinVFS (filepath-securejoin join.go)
  // keeps the rest as written, so the last name is no link, whatever fd holds under that name.
  if (answer == Link::kNo && i + 1 < parts.size()) {
    close(fd);
    return Link::kNo;
  }
  if (answer == Link::kNo && one_fs && fstatat(fd, parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      st.st_dev != top.st_dev)
    answer = Link::kUnknown;  // a mount point of the host: the bind shows what lies under it
  if (answer == Link::kNo) {
    char buf[PATH_MAX];
    ssize_t n = readlinkat(fd, parts.back().c_str(), buf, sizeof buf);
    if (n > 0 && size_t(n) < sizeof buf) {
      target->assign(buf, size_t(n));
      answer = Link::kYes;
    } else if (n >= 0 || (errno != EINVAL && errno != ENOENT && errno != ENOTDIR)) {
      answer = Link::kUnknown;  // a target longer than a path, or a failed read: not a "no"
    }
  }
  close(fd);
  return answer;
}

}  // namespace

LastWalk::~LastWalk() {
  if (fd >= 0) close(fd);
}

std::vector<int> MountPlaces::covering(const std::string &path) const {
  // What mount_hides (oci_hook_core.h) says of each mount: those landed on the path or on a
  // directory above it, component by component.
  std::vector<int> found = landed_[0].mounts;
  size_t node = 0;
  for (const std::string &part : files::path_parts(path)) {
    auto it = landed_[node].below.find(part);
    if (it == landed_[node].below.end()) break;
    node = it->second;
    found.insert(found.end(), landed_[node].mounts.begin(), landed_[node].mounts.end());
  }
  std::sort(found.rbegin(), found.rend());
  return found;
}

MountPlaces::Found MountPlaces::look_up(const std::string &path, bool *inside_pseudo, std::string *target,
                                        std::string *why) const {
  for (int i : covering(path)) {
    const ContainerMount &m = mounts_[size_t(i)];
    if (at_[size_t(i)] == path) return Found::kOther;  // the root of a mount is no link
    std::vector<std::string> rel = files::path_parts(path.substr(at_[size_t(i)] == "/" ? 0 : at_[size_t(i)].size()));
    switch (mount_view(m)) {
      case MountView::kCopy:
        continue;  // what was there before it
      case MountView::kNoLinks:
        return Found::kOther;
      case MountView::kProc:
        if (is_process_dir(rel[0])) {
          *why = "a process's directory in the proc mount on " + m.destination + ", whose links name any path";
          return Found::kUnknown;
        }
        [[fallthrough]];  // elsewhere proc's links (self, mounts, net) stay inside it
      case MountView::kLinksInside:
        *inside_pseudo = true;
        return Found::kOther;
      case MountView::kUnknown:
        *why = "the files of the " + (m.type.empty() ? std::string("untyped") : m.type) + " mount on " + m.destination +
               " are not known";
        return Found::kUnknown;
      case MountView::kSource: {
        // The runtime's path, opened as the runtime opens it (a link of the host's is followed).
        std::string src = m.source.empty() || m.source[0] == '/' ? m.source : bundle_ + "/" + m.source;
        int fd = open(src.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) return Found::kOther;  // the runtime fails that mount
        Link l = fd < 0 ? Link::kUnknown : read_link_below(fd, rel, !m.recursive, target, &walk_);
        if (fd >= 0) close(fd);
        if (l == Link::kUnknown)
          *why = "the bind mount on " + m.destination + " from " + src + " cannot be read through" +
                 (m.recursive ? "" : " (a mount below its source, which a bind without rbind does not carry)");
        return l == Link::kYes ? Found::kLink : l == Link::kNo ? Found::kOther : Found::kUnknown;
      }
    }
  }
  Link l = read_link_below(rootfd_, files::path_parts(path), false, target, &walk_);
  if (l == Link::kUnknown) *why = "the image's " + path + " cannot be read";
  return l == Link::kYes ? Found::kLink : l == Link::kNo ? Found::kOther : Found::kUnknown;
}

bool MountPlaces::add(const ContainerMount &m, std::string *at, std::string *why) {
  std::vector<std::string> done, parts = files::path_parts(m.destination);
  std::vector<std::string> stack(parts.rbegin(), parts.rend());  // what is left, next at the back
  int links = 0;
  bool inside_pseudo = false;  // a component was taken as written inside sysfs or proc (links unread)
  at->clear();
  while (!stack.empty()) {
    if (deadline_ms_ && files::monotonic_ms() > deadline_ms_) {  // deep paths through many links cost a walk each
      *why = "the hook's bound on placing the mounts was reached";
      return false;
    }
    std::string part = stack.back();
    stack.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (inside_pseudo) {
        *why = "\"..\" after a path inside a sysfs or proc mount, whose links are not read";
        return false;
      }
      if (!done.empty()) done.pop_back();
      continue;
    }
    done.push_back(part);
    std::string target;
    Found f = look_up(files::join_parts(done), &inside_pseudo, &target, why);
    if (f == Found::kUnknown) return false;
    if (f == Found::kOther) continue;
    if (++links > kMaxLinks) {
      *why = "more than 255 symbolic links";
      return false;
    }
    done.pop_back();
    if (target[0] == '/') done.clear();
    parts = files::path_parts(target);
    stack.insert(stack.end(), parts.rbegin(), parts.rend());
  }
  *at = files::join_parts(done);
  size_t node = 0;
  for (const std::string &part : done) {
    auto it = landed_[node].below.find(part);
    if (it == landed_[node].below.end()) {
      it = landed_[node].below.emplace(part, landed_.size()).first;
      landed_.emplace_back();
    }
    node = it->second;
  }
  landed_[node].mounts.push_back(int(mounts_.size()));
  mounts_.push_back(m);
  at_.push_back(*at);
  return true;
}

}  // namespace ucxtls
