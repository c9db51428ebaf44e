// The file work of ucxtls-oci-hook beyond the shared layer (cli/root_fs.h): walking a root file
// system one component at a time without following its links, writing files by rename with
// explicit modes. Each call returns -1 or false with errno set.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ucxtls {

// The directory `parts` below dirfd, each component opened with O_DIRECTORY | O_NOFOLLOW (the
// kernel refuses a link or a non-directory before opening anything). With `create`, a missing one
// is made and set to 0755 whatever the umask; with `own_last`, the last one is set to 0755 always
// (the hook's own directory, made by an earlier start). The path walked so far is in *where.
int open_dir_below(int dirfd, const std::vector<std::string> &parts, bool create, bool own_last, std::string *where);

// A file written beside its final name and renamed over it: stage() writes `data` with `mode`
// (set explicitly) and the owner of *owner when given; commit() renames it into place; a Staged
// file that was not committed is removed when it goes.
class Staged {
 public:
  Staged(int dirfd, const std::string &name) : dirfd_(dirfd), name_(name) {}
  ~Staged();
  bool stage(const std::string &data, mode_t mode, const struct stat *owner);
  bool commit();
  Staged(const Staged &) = delete;
  Staged &operator=(const Staged &) = delete;

 private:
  int dirfd_;
  std::string name_, tmp_;
};

// Whether rootfd is a container's own writable layer: the root of an overlay mount (what
// containers-storage, containerd's overlayfs snapshotter and `podman run --rootfs DIR:O` mount)
// that is not the hook's own root. Otherwise *why says what it is.
bool is_own_layer(int rootfd, std::string *why);

// Appends `line` to FILE when it is a regular file (created 0644 when absent); never blocks.
void append_log(const std::string &file, const std::string &line);

}  // namespace ucxtls
