// The words, in one place: each reason of a decision (decide.h Reason) rendered from the facts it
// names, the library's stderr lines (the debug or error line of a decision, the line that names
// an unknown UCXTLS_* variable). The constructor writes the lines (preload.cc report); `ucxtls
// explain` prints the same reasons and lines, as text and JSON. Pure (see core.h).
#pragma once

#include <stddef.h>

#include "decide.h"
#include "options.h"

namespace ucxtls {

constexpr size_t kLineMax = 1024;         // the longest debug or error line, with "\n" and NUL
constexpr size_t kUnknownLineMax = 224;  // the longest unknown-variable line, with "\n" and NUL
constexpr size_t kReasonMax = 200;       // one reason's words, with the NUL (a longer one is cut)

// What a decision was made from: the words of its reasons need all four.
struct Decided {
  const Inputs &in;
  const Settings &s;
  const Facts &f;
  const Decision &d;
};

// The words of step i of the decision (at most kReasonMax - 1 bytes, NUL-terminated).
void render_reason(const Decided &x, int i, char *out, size_t cap);

// The single line of a decision (debug or error), "ucxtls: ...\n". Returns its length.
// failed_write: NULL when the decision's write reached the environment (or there was none); else
// why not (environ_edit.h), and now is the UCX_TLS the environment holds after it (NULL: unset):
// the line then says "failed to set", never "set".
size_t format_line(const Decided &x, char *out, size_t cap, const char *failed_write = nullptr,
                   const char *now = nullptr);

// The debug line when the environment could not be read at all (preload.cc: a setenv ran before
// the library and another thread runs); the settings came from the exec's environment.
constexpr char kUnreadLine[] =
    "ucxtls: skip (UCX_TLS left as it is): a setenv ran before the library and another thread runs, "
    "which may be changing the environment: nothing is read or written\n";

// One line per setting of ours that is invalid but switches nothing off (its Scope is one command
// or one tier: UCXTLS_PROBE_TIMEOUT_MS, UCXTLS_CACHE_DIR), named as every invalid setting is:
// "ucxtls: UCXTLS_PROBE_TIMEOUT_MS="abc" is not ...; ignored here (read by `ucxtls probe`)\n".
// Returns their length: 0 when there is none, in secure execution, and when the library is off.
// Not printed beside the error line of an invalid setting: that one line names the first.
// At most kIgnoredLinesMax bytes with the NUL.
constexpr size_t kIgnoredLinesMax = 2 * 224;
size_t format_ignored_lines(const Inputs &in, const Settings &s, char *out, size_t cap);

// One line per process tree: the lines a process prints about its settings (unknown variable,
// ignored or invalid setting; not the debug line, asked for per process) are marked in the
// environment by their hash, UCXTLS_SAID, which children inherit; a child whose lines hash the
// same stays silent. 16 hex digits of FNV-1a 64 and a NUL.
constexpr size_t kSaidMax = 17;
void said_mark(const char *a, size_t na, const char *b, size_t nb, char out[kSaidMax]);  // of a, then b

// "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n" for
// in.unknown. Returns its length: 0 (no line) when there is none, in secure execution, and when
// the library is off (UCXTLS_DISABLE: off prints nothing).
size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap);

}  // namespace ucxtls
