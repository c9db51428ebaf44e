// Asking a UCX from the command: the environment its child gets, and the local `ucx_info` (the
// plain `ucxtls doctor`), run as a bounded child (bounded_child.h).
#pragma once

#include <string>
#include <vector>

#include "environment.h"

namespace ucxtls {
namespace cli {

// The environment for a child that asks UCX: the caller's without UCX_TLS (it must not narrow what
// UCX reports) and with the library off. from_process: that process's environment alone instead
// of the caller's (its LD_LIBRARY_PATH and UCX_* decide what it loaded; no LD_PRELOAD, LD_AUDIT).
std::vector<char *> child_env(const Environment &env, const std::vector<std::string> *from_process, char *off);

// The ucx_info that PATH (of env) names, as execvp would find it; "" when none.
std::string ucx_info_path(const Environment &env);

// Runs `ucx_info -d` and collects its "Transport:" names.
bool ucx_transports(const Environment &env, int timeout_ms, std::vector<std::string> *tls, std::string *err);

// The libucp that ucx_info loads (the build the plain `doctor` judges, as --ucx judges one): the
// dynamic loader's own answer for it (LD_TRACE_LOADED_OBJECTS=1, what ldd prints: its RUNPATH, the
// LD_LIBRARY_PATH of env, the loader's cache), which runs none of its code; for a script that runs
// another ucx_info, the libucp beside the libucs its `-v` names. False: why, in one line.
bool ucx_info_libucp(const Environment &env, int timeout_ms, std::string *libucp, std::string *err);

// Which UCX `ucx_info` is: its path in PATH and the version it prints (ucx_info -v), also in *version.
std::string ucx_info_identity(const Environment &env, int timeout_ms, std::string *version_out);

}  // namespace cli
}  // namespace ucxtls
