// Fuzz target: the driver tier's report (what the helper process writes on its report fd; the
// helper loads vendor libraries, so the text is outside input). Invariants: a report parsed is
// one that format_driver_report writes back identically (round trip), names stay NUL-terminated
// and free of control bytes, and formatting into any buffer size never overruns it.
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

// Names compare without trailing blanks: a name cut at 47 bytes may end in blanks, which the
// written line does not keep (cosmetic: the name is only shown).
static size_t shown(const char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  return n;
}

static bool same(const DriverAnswer &a, const DriverAnswer &b) {
  size_t na = shown(a.name), nb = shown(b.name);
  return a.answered == b.answered && a.count == b.count && a.code == b.code && na == nb &&
         !memcmp(a.name, b.name, na);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t cap = data[0] * 3;  // 0 .. 765, around kDriverReportMax
  const char *text = reinterpret_cast<const char *>(data + 1);
  size_t len = size - 1;
  char *copy = static_cast<char *>(malloc(len ? len : 1));  // exact size: ASan sees overreads
  memcpy(copy, text, len);
  DriverFact f;
  bool ok = parse_driver_report(copy, len, &f);
  free(copy);
  const DriverAnswer *answers[] = {&f.cuda, &f.ze};
  for (const DriverAnswer *a : answers) {
    FUZZ_CHECK(strlen(a->name) < sizeof a->name);
    for (const char *c = a->name; *c; c++) FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
    if (!ok) FUZZ_CHECK(a->answered == Tri::no);
    if (a->answered != Tri::yes) FUZZ_CHECK(a->count == 0);
  }
  if (cap) {
    char *small = static_cast<char *>(malloc(cap));
    size_t n = format_driver_report(f, small, cap);
    FUZZ_CHECK(n < cap);
    free(small);
  }
  if (ok) {
    char out[kDriverReportMax];
    size_t n = format_driver_report(f, out, sizeof out);
    FUZZ_CHECK(n > 0);
    DriverFact back;
    FUZZ_CHECK(parse_driver_report(out, n, &back));
    FUZZ_CHECK(same(back.cuda, f.cuda) && same(back.ze, f.ze));
  }
  return 0;
}
