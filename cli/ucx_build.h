// One UCX build, wherever it lives (`ucxtls doctor`, `--ucx PATH`, `--pid PID`): where its libucp
// is, what the build registers and which modules UCX would load (read from its files, ucx_read.cc:
// nothing of it is loaded or run), and the build problems that UCX_TLS cannot fix, in words.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core.h"
#include "root_fs.h"

namespace ucxtls {
namespace cli {

struct UcxModule {
  std::string path;
  std::string state;  // "loaded" (UCX would load it here), "not-loaded" (UCX_MODULES leaves it out), "error"
  std::string why;    // what ld.so would say ("libcuda.so.1: cannot open shared object file: ..."), or why not read
};

struct UcxBuild {
  std::string libucp;      // as named to the user
  std::string version;     // what ucp_get_version_string returns, read from the file; "" when it could not be told
  std::string libucs;      // UCX looks for its modules in <dir of this>/ucx (inside the root)
  std::string module_dir;  // the directories searched, as UCX searches them
  std::vector<std::string> transports;  // registered transport names, in load order
  std::vector<std::string> objects;     // the file of each transport (same order)
  std::vector<UcxModule> modules;
  std::vector<std::string> unread;      // facts that could not be read ("could not tell ...")
  std::string untold;                   // the one of them the verdict rests on (the version): never "ok"
  std::string bound;                    // the bound of doctor's that stopped its reading ("" when none): no verdict
  // Those of them that could make an "ok" wrong (a version, a setting, what libucp needs); one that
  // can only add transports (a module directory that could not be read) is not among them.
  std::vector<std::string> open;
  void could_not_tell(const std::string &what, bool leaves_open) {
    unread.push_back(what);
    if (leaves_open) open.push_back(what);
  }
  bool has(const std::string &tl) const;
};

// libucp.so.0, libucp-nixl.so.0, libucp-5b2e8c1a.so.0.0.0 (auditwheel), libucp.so: UCP itself,
// never libucp_<x> or another library.
bool is_libucp_name(const char *name);

// PATH is a libucp of any name, or a directory holding one (itself, lib, lib64, lib/<multiarch>,
// a wheel's <pkg>.libs or <pkg>/lib beside it). Several different builds there: an error naming them.
// Copies are compared within timeout_ms and doctor's byte budget; past either: could not tell (false).
bool locate_libucp(const std::string &path, std::string *libucp, std::string *err, int timeout_ms = 20000);

// The UCX a running process has mapped (/proc/PID/maps; two UCX copies can share a process), and
// what its ld.so and UCX read: its root and environment at exec, which the library in it decided
// from. A process that has exited (a zombie) is an error that says so, exit status kUsage.
struct MappedUcx {
  pid_t pid = 0;
  std::string comm;
  std::vector<std::string> as_mapped;  // each libucp, as doctor's /proc/PID/maps names it
  std::vector<std::string> inside;     // the same, as the process names them from its own root
  std::vector<std::string> env;        // NAME=value
  bool env_read = false;               // false: /proc/PID/environ could not be read
  std::string ucxtls;                  // the libucxtls.so it maps ("" when none)
  bool secure = false;                 // AT_SECURE in /proc/PID/auxv: its library read no variable
  std::string root;                    // /proc/PID/root, a directory doctor can open
  std::string shown;                   // what names a path inside that root to the user
  std::string cwd, exe;                // inside its root
  std::vector<std::string> objects;    // every mapped file, as the process names it
};
bool mapped_ucx(pid_t pid, MappedUcx *m, std::string *err, int *status);

// Where a build is read: the root (doctor's own "/", or a process's), the environment UCX and ld.so
// read there (the process's, or doctor's own), the main program, what is mapped already.
struct BuildPlace {
  Root *root = nullptr;
  std::vector<std::string> env;
  bool secure = false;
  std::string exe;                  // inside the root; "" for --ucx (no program)
  std::vector<std::pair<std::string, std::string>> mapped;  // --pid: (name or soname, path) of what is mapped
};

// The names ld.so matches a DT_NEEDED against for these mapped objects (inside root): each file's
// name and its DT_SONAME.
std::vector<std::pair<std::string, std::string>> mapped_names(Root &root, const std::vector<std::string> &objects);

// The build whose libucp is at `libucp` (inside place.root), read as one value from its files
// (ucx_read.cc) and its settings (ucx_settings.cc): its version, its transports, the modules UCX
// would load there and whether each loads. False: *err, one line (not a UCX libucp, not an ELF
// object, not a regular file).
bool read_build(BuildPlace &place, const std::string &libucp, UcxBuild *b, std::string *err);

// The libucp a program loads, as ld.so would find it for it (ucx_info on PATH, read as lddtree
// reads it). False: why, in one line (a script, no libucp among its libraries).
bool program_libucp(BuildPlace &place, const std::string &program, std::string *libucp, std::string *err);

// What this build cannot do whatever UCX_TLS says, for this node (its GPU family and RDMA; on a node
// without GPUs, the families this value's names ask for): a GPU family built without (or whose module does not load here), verbs missing
// where the node's RDMA runs rc, DC missing where the value names it. serious: a problem for this
// node's GPU family or RDMA (doctor fails); the DC line alone is advice.
std::vector<std::string> build_problems(const UcxBuild &b, const std::vector<std::string> &names, Family family,
                                        Rdma rdma, bool *serious);

}  // namespace cli
}  // namespace ucxtls
