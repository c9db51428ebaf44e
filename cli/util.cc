// Small helpers the commands share (see util.h).
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "text.h"

#ifndef UCXTLS_BIN_TO_LIB
#define UCXTLS_BIN_TO_LIB "../lib"
#endif
#ifndef UCXTLS_BIN_TO_HELPERS
#define UCXTLS_BIN_TO_HELPERS "../libexec/ucxtls"
#endif

namespace ucxtls {
namespace cli {

std::string shell_quote(const char *s) {
  std::string o = "'";
  for (; *s; s++) {
    if (*s == '\'') o += "'\\''";
    else o += *s;
  }
  return o + "'";
}

std::vector<std::string> split(const char *list, const char *seps) {
  std::vector<std::string> out;
  Items items(list, seps);
  const char *item;
  size_t n;
  while (items.next(&item, &n)) out.emplace_back(item, n);
  return out;
}

std::vector<std::string> words(const std::string &text, const char *blanks) {
  std::vector<std::string> out = split(text.c_str(), blanks);
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

std::vector<std::string> status_words(const std::string &status, const char *name) {
  const std::string key = std::string("\n") + name + ":";
  const size_t at = ("\n" + status).find(key);
  if (at == std::string::npos) return {};
  const size_t from = at + key.size() - 1, end = status.find('\n', from);
  return words(status.substr(from, end == std::string::npos ? std::string::npos : end - from), " \t");
}

void install_candidates(const std::string &dir, const char *name, std::string out[2]) {
  out[0] = dir + "/" + name;
  out[1] = dir + "/" UCXTLS_BIN_TO_LIB "/" + name;
}

void helper_candidates(const std::string &dir, const char *name, std::string out[2]) {
  out[0] = dir + "/" + name;
  out[1] = dir + "/" UCXTLS_BIN_TO_HELPERS "/" + name;
}

namespace {
// The length of the UTF-8 sequence at p (at most n bytes): 1 to 4, or 0 when it is not UTF-8
// (a stray continuation byte, a cut sequence, an overlong form, a surrogate, above U+10FFFF).
size_t utf8_length(const unsigned char *p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))) return 0;
  if (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))) return 0;
  return len;
}

// U+0080..U+009F, the C1 controls (a terminal takes U+009B as CSI, as ESC [).
bool is_c1(const unsigned char *p, size_t len) { return len == 2 && p[0] == 0xc2 && p[1] < 0xa0; }
}  // namespace

void scrub_line(std::string *s) {
  const size_t n = s->size() - (!s->empty() && s->back() == '\n');
  const unsigned char *p = reinterpret_cast<const unsigned char *>(s->data());
  std::string out;
  out.reserve(s->size());
  for (size_t i = 0; i < n;) {
    const size_t len = utf8_length(p + i, n - i);
    if (!len || is_c1(p + i, len) || (len == 1 && is_control(char(p[i])))) out += '?', i += len ? len : 1;
    else out.append(s->data() + i, len), i += len;
  }
  if (n < s->size()) out += '\n';
  s->swap(out);
}

namespace {
std::vector<std::string> *captured = nullptr;
size_t printed = 0;
}  // namespace

size_t lines_printed() { return printed; }

void capture_lines(std::vector<std::string> *lines) { captured = lines; }

void print_line(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = nullptr;
  const int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  std::string s(text, size_t(n));
  free(text);
  scrub_line(&s);
  printed++;
  if (captured) captured->push_back(s);
  else fputs(s.c_str(), stdout);
}

std::string json_str(const char *s) {
  if (!s) return "null";
  std::string o = "\"";
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    const size_t len = utf8_length(p, strnlen((const char *)p, 4));
    char u[8] = "";
    if (*p == '"' || *p == '\\') o += '\\', o += char(*p);
    else if (*p < 0x20 || *p == 0x7f) snprintf(u, sizeof u, "\\u%04x", unsigned(*p));
    else if (len && !is_c1(p, len)) o.append((const char *)p, len);
    else snprintf(u, sizeof u, "\\u%04x", len ? unsigned(p[1]) : 0xfffd);  // C1 escaped; not UTF-8: U+FFFD
    o += u;
    p += len ? len : 1;
  }
  return o + "\"";
}

}  // namespace cli
}  // namespace ucxtls
