// ucxtls-oci-hook: an OCI createRuntime hook (docs/containers.md, "A node hook"), started with the
// container's state on stdin. It runs nothing from the image, opens nothing there before knowing it
// is a regular file or a directory, and follows no link there (each component O_NOFOLLOW; files
// replaced by rename, so a planted /etc/ld.so.preload -> host path redirects nothing). A failure
// never stops the container: one line on stderr (the runtime's hook output), exit 0, unless --strict.
//
//   ucxtls-oci-hook [--library=PATH] [--log=FILE] [--strict]
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../cli/root_fs.h"
#include "oci_hook_core.h"
#include "oci_hook_fs.h"
#include "oci_hook_mounts.h"

using namespace ucxtls;

namespace {

// Where the copy goes inside the container: a directory of its own, named for who put it there.
const char kTarget[] = "/usr/lib/ucxtls-oci-hook/libucxtls.so";
const char kPreload[] = "/etc/ld.so.preload";
const size_t kStateMax = 1 << 20, kConfigMax = 64 << 20, kPreloadMax = 1 << 20, kLibraryMax = 64 << 20;
const long long kPlacingMs = 5000;  // the hook's deadline, from its start

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
  files::write_all(2, line.data(), line.size());
  if (!opts.log.empty()) append_log(opts.log, line);
  return opts.strict ? 1 : 0;
}

std::string errno_text(const std::string &what) {
  if (errno == ELOOP) return what + ": a symbolic link (not followed)";
  if (errno == EINVAL || errno == EISDIR) return what + ": not a regular file";
  return what + ": " + strerror(errno);
}

// The node's library: --library, else <this program's directory>/<helperdir to libdir>, else the
// one beside this program (a build tree keeps both side by side); the installed path when neither
// exists, for the message.
std::string default_library() {
  std::string dir;
  if (!files::own_directory(&dir)) return "";
  const std::string lib = dir + "/" UCXTLS_HELPERS_TO_LIB;
  char libdir[PATH_MAX];  // the libdir named plainly: /opt/ucxtls/lib, not .../libexec/ucxtls/../../lib
  const std::string installed = (realpath(lib.c_str(), libdir) ? libdir : lib) + "/libucxtls.so", beside = dir + "/libucxtls.so";
  return access(installed.c_str(), F_OK) != 0 && access(beside.c_str(), F_OK) == 0 ? beside : installed;
}

bool parse_args(int argc, char **argv, std::string *bad) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.compare(0, 10, "--library=") == 0) opts.library = a.substr(10);
    else if (a.compare(0, 6, "--log=") == 0) opts.log = a.substr(6);
    else if (a == "--strict") opts.strict = true;
    else *bad = a;
  }
  return bad->empty();
}

// The container's root, once it is known to be the container's own writable layer, writable, and
// not hidden by the container's mounts where the hook writes; -1 after the hook's line.
int open_root(const ContainerSpec &spec, const std::string &bundle, const std::string &root, long long deadline_ms, int *rc) {
  const int rootfd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return *rc = fail(errno_text("the root file system " + root)), -1;
  auto refuse = [&](const std::string &what) { return close(rootfd), *rc = fail(what), -1; };
  std::string why;
  struct statvfs vfs;
  if (!is_own_layer(rootfd, &why))
    return refuse("the root file system " + root + " " + why + ": not the container's own layer, left alone");
  if (fstatvfs(rootfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
    return refuse("the root file system " + root + " is read-only: nothing written");
  // The mounts in the runtime's order, then the masked paths it mounts over after them.
  std::vector<ContainerMount> mounts = spec.mounts;
  for (const std::string &p : spec.masked) mounts.push_back(ContainerMount{p, "tmpfs", "", false, false, false});
  MountPlaces places(rootfd, bundle, deadline_ms);
  for (const ContainerMount &m : mounts) {
    std::string at;
    if (!places.add(m, &at, &why))
      return refuse("cannot tell where the container's mount on " + m.destination + " lands (" + why + "): nothing written");
    const char *hidden = mount_hides(at, kPreload) ? kPreload : mount_hides(at, kTarget) ? kTarget : nullptr;
    if (hidden)
      return refuse("the container's mount on " + m.destination + (at != m.destination ? " (" + at + " in the root)" : "") +
                    " would hide " + hidden + ": nothing written");
  }
  return rootfd;
}

int run(int argc, char **argv) {
  // Every container start waits for the hook: placing its mounts ends here (runc mounts thousands
  // in about 2 s), and past it the hook says it cannot tell, writes nothing, and the start goes on.
  const long long deadline_ms = files::monotonic_ms() + kPlacingMs;
  std::string bad, state, config, where;
  if (!parse_args(argc, argv, &bad)) return fail("unknown argument '" + bad + "' in the hook's JSON (args)");
  if (!files::read_all(0, &state, kStateMax)) return fail(errno_text("reading the container state on stdin"));
  ContainerState cs;
  bool have_state = read_container_state(state.data(), state.size(), &cs);
  if (!cs.id.empty()) container_id = cs.id;
  if (!have_state) return fail("no bundle path in the container state on stdin");
  const std::string config_path = cs.bundle + "/config.json";
  // The runtime's and the administrator's paths (links followed), not the image's.
  if (!files::read_file(config_path, &config, kConfigMax)) return fail(errno_text("reading " + config_path));
  ContainerSpec spec;
  if (!read_container_spec(config.data(), config.size(), &spec)) return fail(config_path + ": not JSON with a root.path");
  bool gpu = false;
  for (const std::string &d : spec.devices) gpu = gpu || is_gpu_device_node(d);
  // Not a GPU container, or one whose image or pod preloads the library itself: nothing to do.
  if (!gpu || preload_list_has_ucxtls(env_value(spec.env, "LD_PRELOAD"))) return 0;

  std::string library = opts.library.empty() ? default_library() : opts.library, lib_bytes;
  if (!files::read_file(library, &lib_bytes, kLibraryMax)) return fail(errno_text("the node's library " + library));
  const std::string root = rootfs_path(cs.bundle, spec.root);
  int rc = 0;
  int rootfd = open_root(spec, cs.bundle, root, deadline_ms, &rc);
  if (rootfd < 0) return rc;

  int etc = open_dir_below(rootfd, {"etc"}, true, false, &where);
  if (etc < 0) return fail(errno_text("the image's " + where));
  std::string existing;
  struct stat st;
  int fd = files::open_regular_at(etc, "ld.so.preload", true, &st);
  bool have_file = fd >= 0;
  if (fd < 0 && errno != ENOENT) return fail(errno_text(std::string("the image's ") + kPreload) + "; left as it is");
  if (fd >= 0 && !files::read_all(fd, &existing, kPreloadMax))
    return fail(std::string("the image's ") + kPreload + " is larger than 1 MiB; left as it is");
  if (fd >= 0) close(fd);
  PreloadPlan plan = plan_preload_file(existing, kTarget);
  if (plan.kind == PreloadPlan::kAlreadyListed) return 0;
  if (plan.kind == PreloadPlan::kRefuse) return fail(plan.text + "; left as it is");

  // The new /etc/ld.so.preload is written first and put in place last: a failure on the way
  // leaves neither it nor the copy behind. The image's file keeps its mode and owner; a new one is
  // root's, 0644, as ldconfig's files are.
  Staged preload(etc, "ld.so.preload");
  if (!preload.stage(plan.text, have_file ? (st.st_mode & 07777) : 0644, have_file ? &st : nullptr))
    return fail(errno_text("writing " + root + kPreload));
  const char *name = strrchr(kTarget, '/') + 1;
  int dir = open_dir_below(rootfd, files::path_parts(files::dir_of(kTarget)), true, true, &where);
  if (dir < 0) return fail(errno_text("the image's " + where));
  Staged copy(dir, name);
  if (!copy.stage(lib_bytes, 0644, nullptr) || !copy.commit()) return fail(errno_text("writing " + root + kTarget));
  if (!preload.commit()) {
    int saved = errno;
    unlinkat(dir, name, 0);
    errno = saved;
    return fail(errno_text("writing " + root + kPreload));
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) { return run(argc, argv); }
