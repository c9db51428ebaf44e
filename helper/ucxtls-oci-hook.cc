// ucxtls-oci-hook: an OCI hook for the createRuntime stage (hooks.d of CRI-O and Podman, NRI's
// hook-injector for containerd, a CDI spec's hooks; docs/containers.md, "A node hook").
//
// The runtime starts it with the container's state on stdin, after the container's root file
// system is mounted and before its process starts. For a container given a GPU device node
// (linux.devices of the bundle's config.json) it copies the node's libucxtls.so into the root file
// system and appends that copy to the container's /etc/ld.so.preload, keeping the image's own
// entries. It changes no environment variable, so the image's and the pod's LD_PRELOAD and UCX_TLS
// stay as they were; the library then decides from what the container sees.
//
// It runs nothing from the image and follows no symbolic link inside it: every path in the root
// file system is walked one component at a time with O_NOFOLLOW, and files are replaced by rename,
// so a link planted by the image (say /etc/ld.so.preload -> a host path) cannot redirect a write.
// A failure never stops the container: one line on stderr (the runtime's hook output), exit 0,
// unless --strict.
//
//   ucxtls-oci-hook [--library=PATH] [--log=FILE] [--strict]
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "oci_hook_core.h"

using namespace ucxtls;

namespace {

// Where the copy goes inside the container: a directory of its own, named for who put it there.
const char kTarget[] = "/usr/lib/ucxtls-oci-hook/libucxtls.so";
const size_t kStateMax = 1 << 20, kConfigMax = 64 << 20, kPreloadMax = 1 << 20;

struct Options {
  std::string library, log;
  bool strict = false;
};
Options opts;
std::string container_id = "?";

// The hook's one line: stderr, and the administrator's log file when asked for.
int fail(const std::string &what) {
  std::string line = "ucxtls-oci-hook: container " + container_id.substr(0, 12) + ": " + what +
                     (opts.strict ? " (--strict: the container is stopped)\n" : " (the container starts without the library)\n");
  if (write(2, line.data(), line.size()) < 0) {
  }
  if (!opts.log.empty()) {
    int fd = open(opts.log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd >= 0) {
      if (write(fd, line.data(), line.size()) < 0) {
      }
      close(fd);
    }
  }
  return opts.strict ? 1 : 0;
}

std::string errno_text(const std::string &what) { return what + ": " + strerror(errno); }

// Reads up to `max` bytes of fd; false on an error or when there is more.
bool read_all(int fd, size_t max, std::string *out) {
  out->clear();
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    if (out->size() + (size_t)n > max) {
      errno = EFBIG;
      return false;
    }
    out->append(buf, (size_t)n);
  }
}

bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

// The directory `parts` below dirfd, each component opened with O_NOFOLLOW (made 0755 when
// `create` and absent). -1 with errno set, the path walked so far in *where.
int open_dir_below(int dirfd, const std::vector<std::string> &parts, bool create, std::string *where) {
  int fd = dup(dirfd);
  where->clear();
  for (const std::string &part : parts) {
    if (fd < 0) return -1;
    *where += "/" + part;
    int next = openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create && (mkdirat(fd, part.c_str(), 0755) == 0 || errno == EEXIST))
      next = openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    close(fd);
    errno = saved;
    fd = next;
  }
  return fd;
}

std::string temp_name(const char *base) { return std::string(".") + base + ".ucxtls-oci-hook." + std::to_string(getpid()); }

// Replaces dirfd/name with `data` by a new file renamed over it (never opening what is there).
bool replace_file(int dirfd, const char *name, const std::string &data, mode_t mode, const struct stat *owner) {
  std::string tmp = temp_name(name);
  unlinkat(dirfd, tmp.c_str(), 0);
  int fd = openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return false;
  bool ok = write_all(fd, data.data(), data.size()) && fchmod(fd, mode) == 0 &&
            (!owner || fchown(fd, owner->st_uid, owner->st_gid) == 0);
  int saved = errno;
  ok = close(fd) == 0 && ok;
  if (ok && renameat(dirfd, tmp.c_str(), dirfd, name) == 0) return true;
  saved = errno ? errno : saved;
  unlinkat(dirfd, tmp.c_str(), 0);
  errno = saved;
  return false;
}

// The node's library: --library, else <this program's directory>/<helperdir to libdir>, else the
// one beside this program (a build tree keeps both side by side); the installed path when neither
// exists, for the message.
std::string default_library() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = 0;
  std::string dir(self);
  dir.resize(dir.rfind('/'));
  char libdir[PATH_MAX];  // the libdir named plainly: /opt/ucxtls/lib, not .../libexec/ucxtls/../../lib
  std::string installed = (realpath((dir + "/" UCXTLS_HELPERS_TO_LIB).c_str(), libdir) ? std::string(libdir)
                                                                                         : dir + "/" UCXTLS_HELPERS_TO_LIB) +
                          "/libucxtls.so";
  std::string beside = dir + "/libucxtls.so";
  return access(installed.c_str(), F_OK) != 0 && access(beside.c_str(), F_OK) == 0 ? beside : installed;
}

bool parse_args(int argc, char **argv, std::string *bad) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.compare(0, 10, "--library=") == 0) {
      opts.library = a.substr(10);
    } else if (a.compare(0, 6, "--log=") == 0) {
      opts.log = a.substr(6);
    } else if (a == "--strict") {
      opts.strict = true;
    } else {
      *bad = a;
    }
  }
  return bad->empty();
}

int run(int argc, char **argv) {
  std::string bad, state, config, bundle, where;
  if (!parse_args(argc, argv, &bad)) return fail("unknown argument '" + bad + "' in the hook's JSON (args)");
  if (!read_all(0, kStateMax, &state)) return fail(errno_text("reading the container state on stdin"));
  json_string(json_member(json_document(state.data(), state.size()), "id"), &container_id);
  if (!read_state_bundle(state.data(), state.size(), &bundle)) return fail("no bundle path in the container state on stdin");
  int fd = open((bundle + "/config.json").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || !read_all(fd, kConfigMax, &config)) return fail(errno_text("reading " + bundle + "/config.json"));
  close(fd);
  ContainerSpec spec;
  if (!read_container_spec(config.data(), config.size(), &spec)) return fail(bundle + "/config.json: not JSON with a root.path");
  bool gpu = false;
  for (const std::string &d : spec.devices) gpu = gpu || is_gpu_device_node(d);
  // Not a GPU container, or one whose image or pod preloads the library itself: nothing to do.
  if (!gpu || preload_list_has_ucxtls(env_value(spec.env, "LD_PRELOAD"))) return 0;

  std::string library = opts.library.empty() ? default_library() : opts.library;
  int lib = open(library.c_str(), O_RDONLY | O_CLOEXEC);
  std::string lib_bytes;
  if (lib < 0 || !read_all(lib, 64 << 20, &lib_bytes)) return fail(errno_text("the node's library " + library));
  close(lib);
  std::string root = rootfs_path(bundle, spec.root);
  int rootfd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return fail(errno_text("the root file system " + root));

  int etc = open_dir_below(rootfd, {"etc"}, true, &where);
  if (etc < 0) return fail(errno_text("the image's " + where + " (not followed if a symbolic link)"));
  std::string existing;
  struct stat st;
  bool have_file = false;
  fd = openat(etc, "ld.so.preload", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0) {
    have_file = true;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !read_all(fd, kPreloadMax, &existing))
      return fail("the image's /etc/ld.so.preload is not a regular file of at most 1 MiB; left as it is");
    close(fd);
  } else if (errno != ENOENT) {
    return fail(errno_text("the image's /etc/ld.so.preload (not followed if a symbolic link)"));
  }
  if (preload_list_has_ucxtls(existing)) return 0;

  std::vector<std::string> parts;
  split_container_path(kTarget, &parts);
  std::string name = parts.back();
  parts.pop_back();
  int dir = open_dir_below(rootfd, parts, true, &where);
  if (dir < 0) return fail(errno_text("the image's " + where + " (not followed if a symbolic link)"));
  if (!replace_file(dir, name.c_str(), lib_bytes, 0644, nullptr)) return fail(errno_text(std::string("writing ") + kTarget));
  // The image's file keeps its mode and owner; a new one is root's, 0644, as ldconfig's files are.
  if (!replace_file(etc, "ld.so.preload", preload_file_with(existing, kTarget), have_file ? (st.st_mode & 07777) : 0644,
                    have_file ? &st : nullptr))
    return fail(errno_text("writing /etc/ld.so.preload"));
  return 0;
}

}  // namespace

int main(int argc, char **argv) { return run(argc, argv); }
