// One way in: the environment block turned into Inputs and Settings, for the library, the command
// and the tests alike.
#pragma once

#include "options.h"

namespace ucxtls {

// secure (AT_SECURE, decided by the caller): no variable is read, the settings are the defaults.
// tmpl, when not NULL, replaces UCXTLS_TEMPLATE, with UCX_TLS and UCXTLS_DERIVED unset (`ucxtls
// doctor --template`).
void load(char *const *envp, bool secure, Inputs *in, Settings *s, const char *tmpl = nullptr);

}  // namespace ucxtls
