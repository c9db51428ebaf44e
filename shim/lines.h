// The words, in one place: each reason of a decision and the library's stderr lines, for the
// constructor and `ucxtls explain` alike. Pure (see core.h).
#pragma once

#include <stddef.h>

#include "decide.h"
#include "options.h"

namespace ucxtls {

constexpr size_t kLineMax = 1024;         // the longest debug or error line, with "\n" and NUL
constexpr size_t kUnknownLineMax = 224;  // the longest unknown-variable line, with "\n" and NUL
constexpr size_t kReasonMax = 200;       // one reason's words, with the NUL (a longer one is cut)

struct Decided {
  const Inputs &in;
  const Settings &s;
  const Facts &f;
  const Decision &d;
};

// The words of step i of the decision (at most kReasonMax - 1 bytes, NUL-terminated).
void render_reason(const Decided &x, int i, char *out, size_t cap);

// The debug or error line, "ucxtls: ...\n"; its length. failed_write: why the write did not reach
// the environment (NULL: it did), now: the UCX_TLS there after it; the line then says "failed".
size_t format_line(const Decided &x, char *out, size_t cap, const char *failed_write = nullptr,
                   const char *now = nullptr);

// The debug line when the environment could not be read at all (preload.cc).
constexpr char kUnreadLine[] =
    "ucxtls: skip (UCX_TLS left as it is): a setenv ran before the library and another thread runs, "
    "which may be changing the environment: nothing is read or written\n";

// One line per invalid setting that switches nothing off (UCXTLS_PROBE_TIMEOUT_MS,
// UCXTLS_CACHE_DIR); their length, 0 in secure execution or when the library is off.
constexpr size_t kIgnoredLinesMax = 2 * 224;
size_t format_ignored_lines(const Inputs &in, const Settings &s, char *out, size_t cap);

// One line per process tree: the lines about settings are marked by their hash in UCXTLS_SAID,
// which children inherit; a child whose lines hash the same stays silent. FNV-1a 64 in hex.
constexpr size_t kSaidMax = 17;
void said_mark(const char *a, size_t na, const char *b, size_t nb, char out[kSaidMax]);  // of a, then b

// "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n"; its length, 0
// in secure execution or when the library is off.
size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap);

}  // namespace ucxtls
