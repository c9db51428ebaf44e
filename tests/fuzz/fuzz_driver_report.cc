// Fuzz target: the driver tier's report (what the helper process writes, and the per-node cache
// file every process reads: outside input). Invariants: a report parsed is one that
// format_driver_report writes back identically (round trip), ids and names stay NUL-terminated,
// within their sizes and free of control bytes, and formatting into any buffer size never
// overruns it.
#include <string.h>

#include "driver_report.h"
#include "fuzz_input.h"

using namespace ucxtls;

// Names compare without trailing blanks: a name cut to fit may end in blanks, which the written
// line does not keep (cosmetic: the name is only shown).
static size_t shown(const char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  return n;
}

static bool same_text(const char *a, const char *b) {
  size_t na = shown(a), nb = shown(b);
  return na == nb && !memcmp(a, b, na);
}

static bool same(const FamilyReport &a, const FamilyReport &b) {
  if (a.answer.answered != b.answer.answered || a.answer.present != b.answer.present || a.answer.code != b.answer.code ||
      !same_text(a.answer.name, b.answer.name) || a.ndev != b.ndev)
    return false;
  for (int i = 0; i < a.ndev; i++)
    if (strcmp(a.dev[i].id, b.dev[i].id) || !same_text(a.dev[i].name, b.dev[i].name)) return false;
  return true;
}

static void check_text(const char *s, size_t max) {
  FUZZ_CHECK(s && strlen(s) < max);
  for (const char *c = s; *c; c++) FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t cap = size_t(data[0]) * 40;  // 0 .. 10200, around kDriverReportMax
  size_t len = size - 1;
  char *copy = static_cast<char *>(malloc(len ? len : 1));  // exact size: ASan sees overreads
  memcpy(copy, data + 1, len);
  DriverReport r;
  const char *why = nullptr;
  bool ok = parse_driver_report(copy, len, &r, &why);
  FUZZ_CHECK(ok || why);
  const FamilyReport *fams[] = {&r.cuda, &r.ze};
  for (const FamilyReport *f : fams) {
    check_text(f->answer.name, sizeof f->answer.name);
    if (!ok) FUZZ_CHECK(f->answer.answered == Tri::no && f->ndev == 0);
    if (f->answer.answered != Tri::yes) FUZZ_CHECK(f->answer.present == 0 && f->ndev == 0);
    FUZZ_CHECK(f->ndev >= 0 && f->ndev <= kDriverDevicesMax && f->ndev <= f->answer.present);
    for (int i = 0; i < f->ndev; i++) {
      check_text(f->dev[i].id, kDeviceIdMax);
      check_text(f->dev[i].name, kDeviceNameMax);
    }
  }
  if (cap) {
    char *small = static_cast<char *>(malloc(cap));
    size_t n = format_driver_report(r, small, cap);
    FUZZ_CHECK(n < cap);
    free(small);
  }
  if (ok) {
    static char out[kDriverReportMax * 2];
    size_t n = format_driver_report(r, out, sizeof out);
    FUZZ_CHECK(n > 0);
    DriverReport back;
    FUZZ_CHECK(parse_driver_report(out, n, &back, &why));
    FUZZ_CHECK(same(back.cuda, r.cuda) && same(back.ze, r.ze));
    FUZZ_CHECK((!back.boot && !r.boot) || (back.boot && r.boot && !strcmp(back.boot, r.boot)));
  }
  free(copy);
  return 0;
}
