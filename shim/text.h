// Text, the one way the core writes and reads strings: a bounded writer (Text) and the small
// readers every parser shares (list items, blanks, control bytes, numbers). No allocation.
#pragma once

#include <stddef.h>

namespace ucxtls {

// A fixed-capacity buffer: appends are cut, never overflow, always NUL-terminated.
struct Text {
  char *data;
  size_t cap;  // including the terminating NUL
  size_t len;
  bool truncated;
  Text() = default;
  Text(char *buf, size_t size) { init(buf, size); }
  void init(char *buf, size_t size);
  // Inline: a literal's length is known at compile time. NULL adds "(null)".
  Text &add(const char *s) {
    if (!cap) return *this;  // a Text of no capacity takes nothing: not even a strlen
    return s ? add(s, __builtin_strlen(s)) : add("(null)", 6);
  }
  __attribute__((noinline)) Text &add(const char *s, size_t n);  // one copy of the appending code
  Text &add(long long v);
  // Control bytes shown as '?': text read from outside stays one printable line.
  Text &add_scrubbed(const char *s, size_t n);
  Text &add_quoted(const char *s, size_t max_shown = 60);  // "value" shortened with "...", scrubbed
  // Scrubs, then "\n" (init() was given one byte less than the buffer). Returns the length.
  size_t end_line();
};

inline bool is_control(char c) { return (unsigned char)c < 0x20 || c == 0x7f; }
void scrub_controls(char *s, size_t n);

// The items of a list separated by any byte of `seps`, empty ones included ("" has one).
struct Items {
  const char *p;
  const char *seps;
  bool done = false;
  explicit Items(const char *list, const char *separators = ",") : p(list), seps(separators) {}
  bool next(const char **item, size_t *n) {
    if (done) return false;
    const char *e = p;
    for (; *e; e++) {
      const char *s = seps;
      while (*s && *s != *e) s++;
      if (*s) break;  // a separator
    }
    *item = p;
    *n = size_t(e - p);
    if (*e) p = e + 1;
    else done = true;
    return true;
  }
};

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline void trim(const char **p, size_t *n) {
  while (*n && is_space(**p)) (*p)++, (*n)--;
  while (*n && is_space((*p)[*n - 1])) (*n)--;
}
inline bool starts_with(const char *p, size_t n, const char *prefix, size_t k) {
  if (n < k) return false;
  for (size_t i = 0; i < k; i++)
    if (p[i] != prefix[i]) return false;
  return true;
}

// Parses a decimal integer that spans the whole string (optional sign). No overflow.
bool parse_long(const char *s, size_t n, long *out);

}  // namespace ucxtls
