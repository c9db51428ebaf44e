// One UCX build, wherever it lives (see ucx_build.h).
#include "ucx_build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "elf.h"
#include "exit.h"
#include "proc_refused.h"
#include "ucx_read.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// dir/name, without doubling the slash of "/" (`doctor --ucx /` names /lib/..., not //lib/...).
std::string join(const std::string &dir, const std::string &name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string real_path(const std::string &p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// The same bytes: a wheel cannot hold symbolic links, so pip installs libucp.so, libucp.so.0 and
// libucp.so.0.0.0 of one build as three copies of one file (RAPIDS' libucx wheel). Read through
// host (root_fs.h): regular files alone (a FIFO named libucp.so.0 is never opened for reading),
// within its deadline and byte budget (two sparse 1 TiB copies end there: host.reached says so).
bool same_bytes(Root &host, const std::string &a, const std::string &b) {
  int e = 0;
  off_t sa = 0, sb = 0;
  const int fa = open_regular(host, a, nullptr, &e, &sa), fb = open_regular(host, b, nullptr, &e, &sb);
  bool same = fa >= 0 && fb >= 0 && sa == sb;
  char ba[4096], bb[4096];  // on the stack: a .bss buffer would not load under a tight ulimit -d
  for (off_t at = 0; same && at < sa;) {
    const ssize_t n = read_at(host, fa, ba, sizeof ba, at);
    same = n > 0 && read_at(host, fb, bb, size_t(n), at) == n && !memcmp(ba, bb, size_t(n));
    at += n;
  }
  if (fa >= 0) close(fa);
  if (fb >= 0) close(fb);
  return same;
}

bool is_dir(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool is_libucp_name(const char *name) {
  return !strncmp(name, "libucp", 6) && (name[6] == '.' || name[6] == '-') && strstr(name, ".so");
}

bool locate_libucp(const std::string &path, std::string *libucp, std::string *err, int timeout_ms) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return *err = path + ": " + strerror(errno), false;
  std::string abs = path;
  if (abs[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) abs = std::string(cwd) + "/" + path;
  }
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return *err = path + ": not a regular file", false;
  if (!S_ISDIR(st.st_mode)) return *libucp = abs, true;
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  // A prefix, its lib directories, or a site-packages directory with wheels' library folders.
  std::vector<std::string> dirs = {abs, join(abs, "lib"), join(abs, "lib64")};
  for (const std::string &e : entries(join(abs, "lib")))
    if (e.find("-linux-") != std::string::npos) dirs.push_back(join(abs, "lib/" + e));
  for (const std::string &e : entries(abs)) {
    if (e.size() > 5 && !e.compare(e.size() - 5, 5, ".libs")) dirs.push_back(join(abs, e));
    else if (e != "lib" && is_dir(join(abs, e + "/lib"))) dirs.push_back(join(abs, e + "/lib"));
  }
  std::vector<std::string> real, best;  // one entry per distinct file: its real path, its best name
  Root host;  // the comparisons of copies, bounded together
  host.open("/", "/", "", timeout_ms);
  for (const std::string &d : dirs) {
    for (const std::string &e : entries(d)) {
      if (!is_libucp_name(e.c_str())) continue;
      std::string p = join(d, e), r = real_path(p);
      struct stat f;
      if (stat(p.c_str(), &f) != 0 || !S_ISREG(f.st_mode)) continue;  // a directory, a FIFO: no build
      auto at = std::find_if(real.begin(), real.end(), [&](const std::string &o) {
        return o == r || (o.substr(0, o.rfind('/')) == r.substr(0, r.rfind('/')) && same_bytes(host, o, r));
      });
      // The name the loader uses (libucp.so.0) over the development link and the full version.
      auto rank = [](const std::string &n) { return (n.find(".so.") == std::string::npos ? 1000 : 0) + n.size(); };
      if (at == real.end()) real.push_back(r), best.push_back(p);
      else if (rank(base_name(p)) < rank(base_name(best[at - real.begin()]))) best[at - real.begin()] = p;
    }
  }
  if (!host.reached.empty())  // copies not compared to the end are neither one build nor several
    return *err = "could not tell whether the libucp files in " + abs + " are copies of one build: doctor's bound on "
                  "reading was reached: " + host.reached + "; name one with --ucx FILE", false;
  if (best.size() == 1) return *libucp = best[0], true;
  if (best.empty())
    return *err = "no libucp in " + abs + " (looked in it, its lib, lib64, lib/<multiarch>, *.libs and */lib)", false;
  std::string list;
  for (const std::string &b : best) list += (list.empty() ? "" : ", ") + b;
  *err = abs + " holds several UCX builds (" + list + "): name one with --ucx FILE";
  return false;
}

namespace {

// The process's state letter (/proc/PID/stat, after the name in parentheses): 'Z' or 'X' once it
// has exited; 0 when unreadable.
char process_state(const std::string &proc) {
  std::string stat;
  if (!read_file(proc + "/stat", &stat)) return 0;
  size_t k = stat.rfind(')');
  return k != std::string::npos && k + 2 < stat.size() ? stat[k + 2] : 0;
}

// AT_SECURE (23) in /proc/PID/auxv: pairs of unsigned longs, as the process's own word size.
bool process_secure(const std::string &proc) {
  std::string auxv;
  if (!read_file(proc + "/auxv", &auxv)) return false;
  return ucxtls::auxv_secure(reinterpret_cast<const unsigned long *>(auxv.data()), auxv.size() / sizeof(unsigned long)) == 1;
}

}  // namespace

bool mapped_ucx(pid_t pid, MappedUcx *m, std::string *err, int *status) {
  const std::string proc = "/proc/" + std::to_string(pid);
  m->pid = pid;
  std::string maps;
  if (!read_file(proc + "/maps", &maps)) {
    const int e = errno;
    *status = kUsage;
    if (e == ENOENT || e == ESRCH) return *err = absent_words(refusal_facts(), pid), false;
    return *err = refused_words(refusal_facts(), proc + "/maps", e), false;
  }
  std::string comm;
  if (read_file(proc + "/comm", &comm) && !comm.empty() && comm.back() == '\n') comm.pop_back();
  m->comm = comm;
  const std::string who = "process " + std::to_string(pid) + " (" + comm + ")";
  const char state = process_state(proc);
  if (state == 'Z' || state == 'X') {  // its maps are empty: it has not "not loaded UCX yet"
    *status = kUsage;
    return *err = who + " has exited (its parent has not yet collected its status): there is no UCX left in it to check",
           false;
  }
  std::string environ_text;
  m->env_read = read_file(proc + "/environ", &environ_text);
  if (m->env_read)
    for (size_t i = 0; i < environ_text.size(); i += strlen(&environ_text[i]) + 1)
      if (environ_text[i]) m->env.push_back(&environ_text[i]);
  m->secure = process_secure(proc);
  // Exited while it was read (its environ unreadable or empty then): it says so, not "cannot read".
  const char now = process_state(proc);
  if (now == 0 || now == 'Z' || now == 'X')
    return *status = kUsage, *err = who + " has exited while doctor read it", false;
  // maps names a file from doctor's root: in the same mount namespace a host path (a chrooted
  // process's too), in another one (a container) the path from that namespace's root.
  struct stat ns, own;
  const bool own_ns = !stat((proc + "/ns/mnt").c_str(), &ns) && !stat("/proc/self/ns/mnt", &own) && same_inode(ns, own);
  char link[PATH_MAX] = {};
  const ssize_t n = readlink((proc + "/root").c_str(), link, sizeof link - 1);
  const std::string root = own_ns && n > 1 ? std::string(link, size_t(n)) : "";  // a chroot's directory
  auto inside_of = [&](const std::string &file) {
    return !root.empty() && !file.compare(0, root.size() + 1, root + "/") ? file.substr(root.size()) : file;
  };
  m->root = proc + "/root";
  m->shown = own_ns ? root : m->root;
  for (const char *what : {"cwd", "exe"}) {
    char l[PATH_MAX] = {};
    const ssize_t k = readlink((proc + "/" + what).c_str(), l, sizeof l - 1);
    (what[0] == 'c' ? m->cwd : m->exe) = k > 0 && l[0] == '/' ? inside_of(std::string(l, size_t(k))) : "";
  }
  if (m->cwd.empty()) m->cwd = "/";
  for (const std::string &line : split(maps.c_str(), "\n")) {
    size_t slash = line.find(" /");
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash + 1);
    const char deleted[] = " (deleted)";
    if (file.size() > sizeof deleted - 1 && !file.compare(file.size() - (sizeof deleted - 1), std::string::npos, deleted))
      file.resize(file.size() - (sizeof deleted - 1));
    if (std::find(m->objects.begin(), m->objects.end(), inside_of(file)) == m->objects.end() && m->objects.size() < 512)
      m->objects.push_back(inside_of(file));
    if (!base_name(file).compare(0, 12, "libucxtls.so") && m->ucxtls.empty()) m->ucxtls = file;
    if (!is_libucp_name(base_name(file).c_str())) continue;
    if (std::find(m->as_mapped.begin(), m->as_mapped.end(), file) != m->as_mapped.end()) continue;
    m->as_mapped.push_back(file);
    m->inside.push_back(inside_of(file));
  }
  if (m->inside.empty()) {  // nothing to check is not "missing" (exit 1)
    *status = kUsage;
    *err = who + " has no UCX mapped (no libucp in " + proc + "/maps): it has not loaded UCX yet, or it does not use UCX";
    return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> mapped_names(Root &root, const std::vector<std::string> &objects) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const std::string &o : objects) {
    names.push_back({base_name(o), o});
    ElfObject elf;
    std::string why;
    bool read = false;
    if (!base_name(o).compare(0, 3, "lib"))
      read_with(root, o, [&](const ReadAt &r) { read = read_elf(r, &elf, false, &why); });
    if (read && !elf.soname.empty()) names.push_back({elf.soname, o});
  }
  return names;
}

std::vector<std::string> build_problems(const UcxBuild &b, const std::vector<std::string> &names, Family family,
                                        Rdma rdma, bool *serious) {
  std::vector<std::string> out;
  *serious = false;
  // A module file beside the build, for this family, that does not load on this machine: its words.
  auto broken_module = [&](const char *prefix, const std::string &support) {
    for (const UcxModule &m : b.modules)
      if (m.state != "loaded" && !base_name(m.path).compare(0, strlen(prefix), prefix))
        return "this UCX has " + support + " support (" + base_name(m.path) + "), but the module does not load here" +
               (m.why.empty() ? "" : ": " + m.why);
    return std::string();
  };
  static const char *const kWords[kFamilies][2] = {{}, {"CUDA", "NVIDIA"}, {"ROCm", "AMD"}, {"Level Zero (ze)", "Intel"}};
  for (int i = 1; i < kFamilies; i++) {
    const Family f = Family(i);
    const UcxName *copy = ucx_name(copy_transport(f));
    bool named = false;  // the value names a shipping transport of the family, or its alias
    for (const std::string &n : names)
      if (const UcxName *u = ucx_name(n.c_str())) named = named || (u->family == f && u->ships);
    // The node's family alone where it has GPUs: another family's names in the value are the
    // mismatch doctor warns about, not a build to redo. A node without GPUs (a login node
    // checking a build for the compute nodes): the families the value names.
    if (b.has(copy->name) || (family != f && (family != Family::none || !named))) continue;
    *serious = *serious || family == f;
    const std::string broken = broken_module(copy->module, kWords[i][0]);
    if (!broken.empty()) {
      out.push_back(broken + ": UCX has no " + copy->name + " in any process on this machine");
    } else {
      out.push_back("this UCX was built without " + std::string(kWords[i][0]) + " support: NIXL cannot register " +
                    kWords[i][1] + " GPU memory whatever UCX_TLS says; rebuild UCX with " + copy->flag);
    }
  }
  auto serves = [&](const std::string &n) {  // the build has a transport the name selects
    for (const std::string &t : b.transports)
      if (names_overlap(n.c_str(), n.size(), t.c_str(), t.size())) return true;
    return false;
  };
  const bool rc = serves("rc");  // rc_mlx5 or rc_verbs
  const UcxName *verbs = ucx_name("rc_verbs");
  if (rdma != Rdma::none && !rc) {
    *serious = true;
    const std::string broken = broken_module(verbs->module, "verbs");
    if (!broken.empty())
      out.push_back(broken + ": no rc transport, although this node's RDMA runs rc");
    else
      out.push_back("this UCX was built without verbs: no rc transport, although this node's RDMA runs rc; "
                    "rebuild UCX with " + std::string(verbs->flag) + ", or leave UCX_TLS unset (all) so that UCX uses what it has");
  }
  bool dc = false;  // a name that selects dc_mlx5 and nothing this build has (dc, dc_x; not ib)
  for (const std::string &n : names) dc = dc || (names_overlap(n.c_str(), n.size(), "dc_mlx5", 7) && !serves(n));
  if (dc && rc)
    out.push_back("this UCX was built without DC (no dc_mlx5): dc_x and dc add nothing here, and UCX prints "
                  "\"transport 'dc_x' is not available\" on stdout where no mlx5 device answers; use a template "
                  "without DC: UCXTLS_TEMPLATE=rc_x,rc,{copy}");
  return out;
}

}  // namespace cli
}  // namespace ucxtls
