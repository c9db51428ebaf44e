// The pure part of ucxtls-oci-hook (docs/containers.md, "A node hook"): reading the OCI state and
// the bundle's config.json, deciding whether a container is one to act on, and the new text of its
// /etc/ld.so.preload. No system calls here; the program around it does the file work.
#pragma once

#include <stddef.h>

#include <string>
#include <vector>

namespace ucxtls {

// Deeper nesting than this is not a runtime's document (config.json nests a few levels).
const int kJsonMaxDepth = 64;

// What the hook reads of the OCI state on its stdin.
struct ContainerState {
  std::string id;      // "" when absent or not a string
  std::string bundle;  // the bundle directory
};
// false when the state is not JSON (RFC 8259, nlohmann-json) or has no bundle path.
bool read_container_state(const char *text, size_t len, ContainerState *out);

// One of config.json's mounts as runc takes it (libcontainer/specconv/spec_linux.go of runc 1.1,
// createLibcontainerMount): a bind when its options hold "bind" or "rbind", whatever its type, its
// source then relative to the bundle; "tmpcopyup" fills a tmpfs with what was there.
struct ContainerMount {
  std::string destination, type, source;  // as written
  bool bind = false, recursive = false, copyup = false;
};

// What the hook reads of the bundle's config.json.
struct ContainerSpec {
  std::string root;                       // root.path, as written (may be relative to the bundle)
  std::vector<std::string> env;           // process.env, "NAME=value"
  std::vector<std::string> devices;       // linux.devices[].path
  std::vector<ContainerMount> mounts;     // mounts[] with a destination, in their order
  std::vector<std::string> masked;        // linux.maskedPaths: runc mounts over each after the mounts
};
// false when config.json is not JSON or has no root.path; strings holding a NUL are left out.
bool read_container_spec(const char *text, size_t len, ContainerSpec *out);

// A device node of a GPU as the library counts them: /dev/nvidia<N>, /dev/kfd, /dev/dri/renderD<N>.
bool is_gpu_device_node(const std::string &path);
// The container's root directory: root.path, relative paths taken from the bundle.
std::string rootfs_path(const std::string &bundle, const std::string &root);
// True when an LD_PRELOAD value, split at spaces and colons alone as glibc's ld.so splits it
// (elf/rtld.c handle_preload_list: tabs and newlines are part of a name), names a libucxtls.so.
bool preload_list_has_ucxtls(const std::string &list);
// The value of `name` in an environment ("" when unset).
std::string env_value(const std::vector<std::string> &env, const char *name);

// The names glibc 2.36's ld.so preloads from an /etc/ld.so.preload holding `file` (elf/rtld.c, step
// by step): '#' to the end of the line blanked by a loop that restarts at the file's start with the
// remaining length (a later comment can survive); names split at ':', ' ', '\t' and '\n' up to a
// NUL byte, yet a last name with no separator after it is loaded whatever comes before.
std::vector<std::string> glibc_preload_names(const std::string &file);

// What the hook does with the image's /etc/ld.so.preload.
struct PreloadPlan {
  enum Kind { kAlreadyListed, kWrite, kRefuse } kind;
  std::string text;  // kWrite: the new file; kRefuse: why, for the hook's line
};
// The image's text kept as it is and `library` appended on a line of its own, checked by reading
// the result as glibc does: `library` the last name, before it only names the image's file gave
// (in their order), else nothing is written. Already listed when glibc loads a libucxtls.so from it.
PreloadPlan plan_preload_file(const std::string &existing, const std::string &library);

// A container path's components; false for a relative path or one with "." or ".." components.
bool split_container_path(const std::string &path, std::vector<std::string> *parts);
// True when a mount at `destination` (a container path whose symbolic links are resolved) hides
// `path`: the same path or a directory above it.
bool mount_hides(const std::string &destination, const std::string &path);

// What a mount shows below its destination to the mounts made after it, as far as files tell.
enum class MountView {
  kSource,     // a bind: the source's files (a host path), read without following their links
  kNoLinks,    // tmpfs (empty; runc makes only directories in it), devpts, mqueue, cgroup: no links
  kLinksInside,  // sysfs: its links stay inside it, so where ".." leads after one is not known
  kProc,       // proc: the same, but in a process's directory (root, cwd, fd/N) a link names any path
  kCopy,       // tmpfs with tmpcopyup: a copy of what was there, links included
  kUnknown,    // anything else (a network or FUSE file system, an overlay)
};
MountView mount_view(const ContainerMount &m);
// A name directly below a proc mount that is a process's directory: a PID, self, thread-self.
bool is_process_dir(const std::string &name);

}  // namespace ucxtls
