// The decision `doctor --pid` shows, made from the process's own view (docs/design.md, "Doctor
// judges the node"): its environment, and every file the library's probe reads (/dev, /sys,
// /proc, ucx.conf in /etc, $UCX_CONFIG_DIR, $HOME and its working directory, under its own
// UCXTLS_SYSROOT when it set one) read inside its root, with its file credentials. Never the
// host's files with the process's variables.
#pragma once

#include <sys/types.h>

#include <string>

#include "evaluation.h"

namespace ucxtls {
namespace cli {

// Decides as the library in process pid did (evaluation.h evaluate_loaded; r->env: its start
// environment) in a child of doctor that takes its root, working directory and file credentials
// first, keeping no descriptor or variable of doctor's. False with *err (one line) when the child
// could not take its place or gave no answer within timeout_ms.
// deadline: monotonic_ms; timeout_ms as the user gave it, for the words.
bool evaluate_as_process(Evaluation *r, pid_t pid, bool secure, const char *tmpl, long long deadline, int timeout_ms,
                         std::string *err);

}  // namespace cli
}  // namespace ucxtls
