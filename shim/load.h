// One way in: the environment block turned into Inputs and Settings, the same for the library's
// constructor, `ucxtls` (explain, env, doctor, probe) and the test driver. Shell (it asks the
// process whether it runs with secure execution); the rules are options.h's.
#pragma once

#include "options.h"

namespace ucxtls {

// Secure execution (AT_SECURE: setuid, setgid, file capabilities) is decided by the caller before
// a single variable is read (the library from the auxiliary vector: sys.h secure_execution; the
// command with getauxval); such a process reads none, and its settings are the defaults. Otherwise
// read_inputs(envp) and parse_settings. tmpl, when not NULL, is decided with instead of the
// environment's UCXTLS_TEMPLATE, and UCX_TLS and UCXTLS_DERIVED are taken as unset (`ucxtls doctor
// --template`: what the template composes to on this node).
void load(char *const *envp, bool secure, Inputs *in, Settings *s, const char *tmpl = nullptr);

}  // namespace ucxtls
