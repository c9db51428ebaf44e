// Unknown UCXTLS_* variables: the suggestion and the line (see unknown.h).
#include "unknown.h"

#include "environ_edit.h"

namespace ucxtls {

namespace {

constexpr size_t kCompared = 48;  // longer names are compared by their first 48 bytes

char upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

// Optimal string alignment distance (Levenshtein plus adjacent swaps), case-insensitive.
size_t distance(const char *a, size_t na, const char *b, size_t nb) {
  if (na > kCompared) na = kCompared;
  if (nb > kCompared) nb = kCompared;
  unsigned char rows[3][kCompared + 1];  // the row before the previous one, the previous, this one
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

}  // namespace

Var closest_option(const char *name, size_t n) {
  const size_t prefix = sizeof kOwnPrefix - 1;
  Var best = kVarCount;
  size_t best_d = 3;  // more than 2 edits is not close
  for (int v = 0; v < kOwnVarCount; v++) {
    const char *known = kOptions[v].name;
    size_t nk = 0;
    while (known[nk]) nk++;
    size_t d = distance(name, n, known, nk);
    size_t tail = nk > prefix ? nk - prefix : 0;
    if (d < best_d && 2 * d < tail) best = Var(v), best_d = d;
  }
  return best;
}

size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap) {
  if (!in.unknown || in.secure || s.disabled || cap < 2) {
    if (cap) out[0] = '\0';
    return 0;
  }
  Text t;
  t.init(out, cap - 1);  // room for the newline
  const size_t n = env_name_len(in.unknown);
  t.add("ucxtls: unknown variable ").add(in.unknown, n > 64 ? 64 : n);
  if (n > 64) t.add("...");
  Var v = closest_option(in.unknown, n);
  if (v != kVarCount) t.add(" (did you mean ").add(kOptions[v].name).add("?)");
  if (in.unknown_count > 1)
    t.add(", and ").add((long long)(in.unknown_count - 1)).add(" more unknown UCXTLS_ variable")
        .add(in.unknown_count > 2 ? "s" : "");
  t.add("; ignored");
  return t.end_line();  // an environment name can hold any byte but '=' and NUL
}

}  // namespace ucxtls
