// Unknown variables of ours: a UCXTLS_* name that no option has (a typo such as UCXTLS_ACCELL)
// is named in one stderr line, with the closest known name when one is close, and ignored, as UCX
// does for its own UCX_* variables (DESIGN §1, Variables). read_inputs finds them in its one pass
// over the environment; the known names are those of kOptions. Pure, like core.h.
#pragma once

#include <stddef.h>

#include "core.h"

namespace ucxtls {

constexpr char kOwnPrefix[] = "UCXTLS_";
constexpr size_t kUnknownLineMax = 224;  // the longest line format_unknown_line writes, with NUL

// The library's own option whose name is closest to name[0..n) (case-insensitive edit distance,
// a swap of two neighbours counting once), or kVarCount when none is close: at most 2 edits, and
// fewer than half the characters after the prefix.
Var closest_option(const char *name, size_t n);

// "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n" for
// in.unknown. Returns its length: 0 (no line) when there is none, in secure execution, and when
// the library is off (UCXTLS_DISABLE: off prints nothing).
size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap);

}  // namespace ucxtls
