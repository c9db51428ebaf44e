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

// Runs `ucx_info -d` and collects its "Transport:" names.
bool ucx_transports(const Environment &env, int timeout_ms, std::vector<std::string> *tls, std::string *err);

// Which UCX `ucx_info` is: its path in PATH and the version it prints (ucx_info -v), also in *version.
std::string ucx_info_identity(const Environment &env, int timeout_ms, std::string *version_out);

}  // namespace cli
}  // namespace ucxtls
