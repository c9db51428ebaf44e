// The edit distance behind "did you mean" (options.h closest_option). Pure (see core.h).
#pragma once

#include <stddef.h>

namespace ucxtls {

// Optimal string alignment distance between a[0..na) and b[0..nb): Levenshtein's insertions,
// deletions and substitutions, plus a swap of two neighbours counting once; case-insensitive
// (ASCII). Names longer than kEditCompared bytes are compared by their first kEditCompared.
constexpr size_t kEditCompared = 48;
size_t edit_distance(const char *a, size_t na, const char *b, size_t nb);

}  // namespace ucxtls
