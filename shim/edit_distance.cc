// The edit distance: a pure function (see edit_distance.h).
#include "edit_distance.h"

namespace ucxtls {

namespace {

char upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

}  // namespace

size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
  if (na > kEditCompared) na = kEditCompared;
  if (nb > kEditCompared) nb = kEditCompared;
  unsigned char rows[3][kEditCompared + 1];  // the row before the previous one, the previous, this one
  unsigned char *pp = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= nb; j++) prev[j] = (unsigned char)j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = (unsigned char)i;
    for (size_t j = 1; j <= nb; j++) {
      const bool same = upper(a[i - 1]) == upper(b[j - 1]);
      unsigned d = prev[j - 1] + (same ? 0u : 1u);
      if (prev[j] + 1u < d) d = prev[j] + 1u;
      if (cur[j - 1] + 1u < d) d = cur[j - 1] + 1u;
      if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) && upper(a[i - 2]) == upper(b[j - 1]) &&
          pp[j - 2] + 1u < d)
        d = pp[j - 2] + 1u;
      cur[j] = (unsigned char)d;
    }
    unsigned char *t = pp;
    pp = prev, prev = cur, cur = t;
  }
  return prev[nb];
}

}  // namespace ucxtls
