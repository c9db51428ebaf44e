// One UCX build, wherever it lives (`ucxtls doctor --ucx PATH | --pid PID`): where its libucp
// is, what the build registers (asked in the helper ucxtls-ucx-query, a bounded child: loading a
// UCX runs its constructors), and the build problems that UCX_TLS cannot fix, in words.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core.h"

namespace ucxtls {
namespace cli {

struct UcxModule {
  std::string path;
  std::string state;  // "loaded", "not-loaded" (it loads, UCX left it out), "error"
  std::string why;    // dlerror, for "error"
};

struct UcxBuild {
  std::string libucp;      // as located (the file the helper was given)
  std::string loaded;      // as ld.so loaded it
  std::string version;     // ucp_get_version_string
  std::string libucs;      // UCX looks for its modules in <dir of this>/ucx
  std::string module_dir;
  std::vector<std::string> components;  // "name:md resources here"
  std::vector<std::string> transports;  // registered transport names, in load order
  std::vector<std::string> objects;     // the file of each transport (same order)
  std::vector<UcxModule> modules;
  bool has(const std::string &tl) const;
};

// libucp.so.0, libucp-nixl.so.0, libucp-5b2e8c1a.so.0.0.0 (auditwheel), libucp.so: UCP itself,
// never libucp_<x> or another library.
bool is_libucp_name(const char *name);

// PATH is a libucp of any name, or a directory holding one (itself, lib, lib64, lib/<multiarch>,
// a wheel's <pkg>.libs or <pkg>/lib beside it). Several different builds there: an error naming them.
bool locate_libucp(const std::string &path, std::string *libucp, std::string *err);

// The UCX a running process has mapped (/proc/PID/maps): each libucp (two UCX copies can share a
// process), as a path this process can open (through /proc/PID/root when the process has another
// root). comm: its name. env: its environment at exec (env_read false when unreadable), which is
// what the library in it decided from; ucxtls: the libucxtls.so it maps ("" when none); secure:
// it runs with secure execution (AT_SECURE in /proc/PID/auxv), so that library read no variable.
// A process that has exited (a zombie) is an error that says so, exit status kUsage.
struct MappedUcx {
  std::string comm;
  std::vector<std::string> libucp;     // openable paths
  std::vector<std::string> as_mapped;  // the same, as doctor's /proc/PID/maps names them
  std::vector<std::string> inside;     // the same, as the process names them from its own root
  std::vector<std::string> env;        // NAME=value
  bool env_read = false;
  std::string ucxtls;
  bool secure = false;
};
bool mapped_ucx(pid_t pid, MappedUcx *m, std::string *err, int *status);

// Runs ucxtls-ucx-query on libucp, bounded by timeout_ms, with envp. False: why (one line: a hang
// or a crash is named with the stage it was in). as_process: the helper takes that process's place
// first (enter_process.h) and loads `inside`, the path from its root.
bool query_ucx_build(const std::string &libucp, char *const envp[], int timeout_ms, UcxBuild *b, std::string *err,
                     pid_t as_process = 0, const std::string &inside = "");

// What this build cannot do whatever UCX_TLS says, for this node (its GPU family and RDMA; on a node
// without GPUs, the families this value's names ask for): a GPU family built without (or whose module does not load here), verbs missing
// where the node's RDMA runs rc, DC missing where the value names it. serious: a problem for this
// node's GPU family or RDMA (doctor fails); the DC line alone is advice.
std::vector<std::string> build_problems(const UcxBuild &b, const std::vector<std::string> &names, Family family,
                                        Rdma rdma, bool *serious);

}  // namespace cli
}  // namespace ucxtls
