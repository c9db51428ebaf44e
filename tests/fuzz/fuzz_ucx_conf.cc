// Fuzz target: the ucx.conf scan (ConfScan::feed) fed in random chunks. Invariant: the answer does
// not depend on how the file is cut into reads, and matches a plain line-by-line reading.
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

// Reference: inih's reading, line by line (UCX's ini.c: multi-line values and a BOM allowed). A
// line assigns UCX_TLS when its first word, after leading blanks, is exactly UCX_TLS followed by
// blanks and '=' or ':'; comment lines and [sections] never do, and an indented line after a
// name=value line of the same section is a continuation of that value.
static bool line_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static bool reference(const char *p, size_t n) {
  size_t i = 0;
  if (n >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) i = 3;
  bool prev_name = false;
  while (i < n) {
    size_t e = i;
    while (e < n && p[e] != '\n') e++;
    size_t j = i;
    while (j < e && line_blank(p[j])) j++;
    if (j < e && p[j] != '#' && p[j] != ';' && !(prev_name && j > i)) {
      if (p[j] == '[') {
        prev_name = false;
      } else {
        if (e - j >= 7 && !memcmp(p + j, "UCX_TLS", 7)) {
          size_t k = j + 7;
          while (k < e && (p[k] == ' ' || p[k] == '\t')) k++;
          if (k < e && (p[k] == '=' || p[k] == ':')) return true;
        }
        for (size_t k = j; k < e; k++)
          if (p[k] == '=' || p[k] == ':') {
            prev_name = true;
            break;
          }
      }
    }
    i = e + 1;
  }
  return false;
}

// A section filter answering by the pattern's first byte: matches, does not, cannot be told.
static int some_filter(void *, int, const char *pattern) { return int((unsigned char)pattern[0] % 3) - 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  // The first byte seeds the chunk sizes; the rest is the file.
  unsigned seed = data[0];
  const char *text = reinterpret_cast<const char *>(data + 1);
  size_t n = size - 1;

  ConfScan whole;
  whole.feed(text, n);

  ConfScan chunked;
  size_t pos = 0;
  while (pos < n) {
    seed = seed * 1103515245u + 12345u;
    size_t k = 1 + (seed >> 16) % 17;
    if (k > n - pos) k = n - pos;
    chunked.feed(text + pos, k);
    pos += k;
  }
  chunked.feed(text, 0);  // an empty read changes nothing
  FUZZ_CHECK(whole.found == chunked.found);
  FUZZ_CHECK(whole.found == reference(text, n));

  // Asked for the value too (doctor's UCX_MODULE_DIR): the same answer, whole or in chunks, and a
  // value of one line, cut from the text.
  char vw[64], vc[64];
  ConfScan value_whole, value_chunked;
  value_whole.value = vw, value_whole.value_cap = sizeof vw;
  value_chunked.value = vc, value_chunked.value_cap = sizeof vc;
  // With section filters (doctor's UCX 1.17 reading), in chunks as whole; without, as the library.
  const bool filters = data[0] & 1;
  if (filters) value_whole.filter = value_chunked.filter = some_filter;
  value_whole.feed(text, n);
  value_whole.finish();
  for (pos = 0, seed = data[0]; pos < n;) {
    seed = seed * 1103515245u + 12345u;
    size_t k = 1 + (seed >> 16) % 17;
    if (k > n - pos) k = n - pos;
    value_chunked.feed(text + pos, k);
    pos += k;
  }
  value_chunked.finish();
  FUZZ_CHECK(value_whole.found == value_chunked.found && value_whole.unsure == value_chunked.unsure);
  FUZZ_CHECK(filters ? (!value_whole.found || whole.found) : (value_whole.found == whole.found && !value_whole.unsure));
  if (value_whole.found) {
    FUZZ_CHECK(value_whole.value_len < sizeof vw && vw[value_whole.value_len] == '\0');
    FUZZ_CHECK(value_whole.value_len == value_chunked.value_len && !memcmp(vw, vc, value_whole.value_len));
    FUZZ_CHECK(!memchr(vw, '\n', value_whole.value_len));
  }
  return 0;
}
