// Text: the bounded writer and the shared readers (see text.h).
#include "text.h"

#include <limits.h>
#include <string.h>

namespace ucxtls {

void Text::init(char *buf, size_t size) {
  data = buf;
  cap = size;
  len = 0;
  truncated = false;
  if (cap) data[0] = '\0';
}

Text &Text::add(const char *s, size_t n) {
  if (!cap) return *this;
  size_t room = cap - 1 - len;
  if (n > room) {
    n = room;
    truncated = true;
  }
  memcpy(data + len, s, n);
  len += n;
  data[len] = '\0';
  return *this;
}

// A Text of no capacity takes nothing: callers that do not want the text pass no buffer.
Text &Text::add(long long v) {
  if (!cap) return *this;
  char tmp[24];
  int i = sizeof tmp;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do {
    tmp[--i] = char('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[--i] = '-';
  return add(tmp + i, sizeof tmp - i);
}

void scrub_controls(char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (is_control(s[i])) s[i] = '?';
}

Text &Text::add_scrubbed(const char *s, size_t n) {
  if (!cap) return *this;
  size_t from = len;
  add(s, n);
  scrub_controls(data + from, len - from);
  return *this;
}

Text &Text::add_quoted(const char *s, size_t max_shown) {
  if (!cap) return *this;
  add("\"");
  size_t n = strlen(s);
  // Control bytes would break the one-line promise: show them as '?'.
  add_scrubbed(s, n < max_shown ? n : max_shown);
  if (n > max_shown) add("...");
  return add("\"");
}

size_t Text::end_line() {
  if (!data) return 0;
  scrub_controls(data, len);
  data[len++] = '\n';
  data[len] = '\0';
  return len;
}

bool parse_long(const char *s, size_t n, long *out) {
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i] == '-', i++;
  if (i == n) return false;
  unsigned long v = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (v > ((unsigned long)LONG_MAX - 9) / 10) return false;  // would overflow (LP64 and ILP32)
    v = v * 10 + unsigned(s[i] - '0');
  }
  *out = neg ? -long(v) : long(v);
  return true;
}

}  // namespace ucxtls
