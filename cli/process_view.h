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

// r->env holds the process's start environment. Decides as the library in process pid decided
// (evaluation.h evaluate_loaded, library_line) in a child of doctor that first takes the process's
// place (process_view.cc: its root, working directory and file credentials; no descriptor and no
// environment of doctor's); the answer comes back over a pipe. False with *err (one line) when
// the child gave no answer within timeout_ms or could not take the process's place.
bool evaluate_as_process(Evaluation *r, pid_t pid, bool secure, const char *tmpl, int timeout_ms, std::string *err);

}  // namespace cli
}  // namespace ucxtls
