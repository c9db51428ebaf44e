// The library's stderr lines, as text: the debug or error line of a decision, and the line that
// names an unknown UCXTLS_* variable. The constructor writes them (preload.cc report), `ucxtls
// explain` shows them as the library would print them. Pure (see core.h).
#pragma once

#include <stddef.h>

#include "decide.h"
#include "options.h"

namespace ucxtls {

constexpr size_t kLineMax = 1024;         // the longest debug or error line, with "\n" and NUL
constexpr size_t kUnknownLineMax = 224;  // the longest unknown-variable line, with "\n" and NUL

// The single line of a decision (debug or error), "ucxtls: ...\n". Returns its length.
// failed_write: NULL when the decision's write reached the environment (or there was none); else
// why not (environ_edit.h), and now is the UCX_TLS the environment holds after it (NULL: unset):
// the line then says "failed to set", never "set".
size_t format_line(const Inputs &in, const Decision &d, char *out, size_t cap, const char *failed_write = nullptr,
                   const char *now = nullptr);

// "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n" for
// in.unknown. Returns its length: 0 (no line) when there is none, in secure execution, and when
// the library is off (UCXTLS_DISABLE: off prints nothing).
size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap);

}  // namespace ucxtls
