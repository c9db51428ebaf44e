// The driver tier's report and the cache's rules: pure functions only (see driver_report.h).
#include "driver_report.h"

#include <stdint.h>
#include <string.h>
#include <sys/stat.h>  // the S_IF* and S_IW* constants alone

#include "text.h"

namespace ucxtls {
namespace {

const char kHeader[] = "ucxtls-driver 2";

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

template <size_t N>
bool is(const char *f, size_t n, const char (&word)[N]) {
  return n == N - 1 && !memcmp(f, word, n);
}

// A cursor over the report, parsed in place in one pass. Fields end at a blank or a control byte;
// the NULs that end kept fields are written once past the line's newline, which may be one of them.
struct Cursor {
  char *p, *end;
  char *cut[4];
  int ncut = 0;

  Cursor(char *text, size_t len) : p(text), end(text + len) {}
  void skip_blanks() {
    while (p < end && is_blank(*p)) p++;
  }
  // The next field of this line, or NULL at its end.
  char *field(size_t *n) {
    skip_blanks();
    char *start = p;
    while (p < end && (unsigned char)(*p - 0x21) < 0x5e) p++;  // '!' to '~' continue a field
    *n = size_t(p - start);
    return *n ? start : nullptr;
  }
  // A field kept by the report, NUL-terminated once the line is done; NULL when it ended at a
  // control byte inside it (not at a blank or the line's end).
  char *kept_field(size_t *n) {
    char *f = field(n);
    if (!f || !(p == end || is_blank(*p) || *p == '\n')) return nullptr;
    cut[ncut++] = p;
    return f;
  }
  // The rest of the line, trimmed, control bytes shown as '?', cut to max - 1 bytes; NULL if empty.
  char *rest(size_t max, size_t *n) {
    skip_blanks();
    char *start = p;
    while (p < end && *p != '\n') p++;
    char *e = p;
    while (e > start && is_blank(e[-1])) e--;
    if (e == start) return nullptr;
    if (size_t(e - start) > max - 1) e = start + (max - 1);
    scrub_controls(start, size_t(e - start));
    *n = size_t(e - start);
    cut[ncut++] = e;
    return start;
  }
  bool at_line_end() {
    skip_blanks();
    return p < end && *p == '\n';
  }
  // Past this line's newline (false when it has none: the text was cut short).
  bool next_line() {
    while (p < end && *p != '\n') p++;
    if (p == end) return false;
    p++;
    for (int i = 0; i < ncut; i++) *cut[i] = '\0';
    ncut = 0;
    return true;
  }
};

bool parse_number(const char *f, size_t n, long lo, long hi, long *out) {
  return f && parse_long(f, n, out) && *out >= lo && *out <= hi;
}

// "answer|unknown <count> <code> <name...>" -> a.
bool parse_answer(Cursor &c, DriverAnswer *a) {
  size_t n = 0;
  const char *status = c.field(&n);
  const bool answered = status && is(status, n, "answer");
  if (!answered && !(status && is(status, n, "unknown"))) return false;
  long count = 0, code = 0;
  const char *f = c.field(&n);
  if (!parse_number(f, n, 0, 1000000, &count)) return false;
  f = c.field(&n);
  if (!f || !parse_long(f, n, &code)) return false;
  const char *name = c.rest(sizeof a->name, &n);
  if (!name) return false;
  *a = DriverAnswer();
  a->answered = answered ? Tri::yes : Tri::no;
  a->count = a->present = answered ? int(count) : 0;
  a->code = code;
  memcpy(a->name, name, n);
  a->name[n] = '\0';
  return true;
}

// "<index> <id> [<name...>]" -> the next device of fam.
bool parse_device(Cursor &c, FamilyReport *fam) {
  size_t n = 0;
  long index = 0;
  const char *f = c.field(&n);
  if (fam->ndev >= kDriverDevicesMax || !parse_number(f, n, 0, kDriverDevicesMax, &index) || index != fam->ndev)
    return false;
  const char *id = c.kept_field(&n);
  if (!id || n >= kDeviceIdMax) return false;
  const char *name = c.at_line_end() ? "-" : c.rest(kDeviceNameMax, &n);  // the cache keeps no names
  fam->dev[fam->ndev].id = id;
  fam->dev[fam->ndev].name = name;
  fam->ndev++;
  return true;
}

bool fail(const char **why, const char *what) { return *why = what, false; }

const char kCutShort[] = "incomplete (no end line: cut short)";

// A token (ids, the boot id): blanks and control bytes would split or break the line.
void add_token(Text &t, const char *s, size_t max) {
  if (!s || !s[0]) return void(t.add("-"));
  for (size_t i = 0; s[i] && i < max - 1; i++) {
    char c = is_blank(s[i]) || is_control(s[i]) || s[i] == '\n' ? '?' : s[i];
    t.add(&c, 1);
  }
}

void add_name(Text &t, const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  while (n && is_blank(s[n - 1])) n--;  // the parser trims them: the text must parse back equal
  size_t start = 0;
  while (start < n && is_blank(s[start])) start++;
  if (start == n) return void(t.add("-"));
  t.add_scrubbed(s + start, n - start < max - 1 ? n - start : max - 1);
}

void format_family(Text &t, const char *family, const FamilyReport &f) {
  const DriverAnswer &a = f.answer;
  const bool answered = a.answered == Tri::yes;
  t.add(family).add(answered ? " answer " : " unknown ").add((long long)(answered ? a.present : 0));
  t.add(" ").add((long long)a.code).add(" ");
  add_name(t, a.name, sizeof a.name);
  t.add("\n");
  for (int i = 0; answered && i < f.ndev && i < kDriverDevicesMax; i++) {
    t.add(family).add("-device ").add((long long)i).add(" ");
    add_token(t, f.dev[i].id, kDeviceIdMax);
    if (f.dev[i].name) {  // the cache keeps none: every process reads it, ucxtls probe shows them
      t.add(" ");
      add_name(t, f.dev[i].name, kDeviceNameMax);
    }
    t.add("\n");
  }
}

}  // namespace

size_t format_driver_report(const DriverReport &r, char *out, size_t cap) {
  Text t(out, cap);
  t.add(kHeader).add("\n");
  if (r.boot) {
    t.add("boot ");
    add_token(t, r.boot, kBootIdMax);
    t.add("\n");
  }
  format_family(t, "cuda", r.cuda);
  format_family(t, "ze", r.ze);
  t.add("end\n");
  if (t.truncated) {
    if (cap) out[0] = '\0';
    return 0;
  }
  return t.len;
}

bool parse_driver_report(char *text, size_t len, DriverReport *out, const char **why) {
  *out = DriverReport();
  out->cuda.answer.answered = out->ze.answer.answered = Tri::no;
  if (!len) return fail(why, "empty");
  Cursor c(text, len);
  size_t n = 0;
  const char *f = c.field(&n);
  if (!f || !is(f, n, "ucxtls-driver") || !(f = c.field(&n)) || !is(f, n, "2") || !c.at_line_end())
    return fail(why, c.p == c.end ? kCutShort : "not a driver report (no \"ucxtls-driver 2\" first line)");
  DriverReport &r = *out;
  bool end = false, have_cuda = false, have_ze = false, ok = true;
  FamilyReport *last = nullptr;  // the family whose device lines may follow
  while (ok && c.next_line()) {
    const char *kind = c.field(&n);
    if (!kind) continue;
    if (is(kind, n, "end")) {
      if ((end = c.at_line_end())) break;
    } else if (is(kind, n, "boot")) {
      char *id = c.kept_field(&n);
      ok = !r.boot && id && n < kBootIdMax;
      for (size_t k = 0; ok && k < n; k++)
        ok = (id[k] >= '0' && id[k] <= '9') || (id[k] >= 'a' && id[k] <= 'f') || id[k] == '-';
      if (!ok) fail(why, "a malformed boot line");
      r.boot = id;
    } else if (is(kind, n, "cuda") || is(kind, n, "ze")) {
      bool &have = kind[0] == 'c' ? have_cuda : have_ze;
      last = kind[0] == 'c' ? &r.cuda : &r.ze;
      ok = !have && parse_answer(c, &last->answer);
      if (!ok) fail(why, "a malformed family line");
      have = true;
    } else if (is(kind, n, "cuda-device") || is(kind, n, "ze-device")) {
      FamilyReport *fam = kind[0] == 'c' ? &r.cuda : &r.ze;
      ok = fam == last && fam->answer.answered == Tri::yes && parse_device(c, fam);
      if (!ok) fail(why, "a malformed device line");
    }  // other lines: a later helper's extras, ignored
  }
  // No end line, or a line that failed for want of its own end: cut short.
  if (ok ? !(end && c.next_line()) : !memchr(c.p, '\n', size_t(c.end - c.p))) ok = fail(why, kCutShort);
  if (ok && (!have_cuda || !have_ze)) ok = fail(why, "a family line is missing");
  const FamilyReport *fams[] = {&r.cuda, &r.ze};
  for (const FamilyReport *fam : fams) {
    int want = fam->answer.answered == Tri::yes ? fam->answer.present : 0;
    if (want > kDriverDevicesMax) want = kDriverDevicesMax;
    if (ok && fam->ndev != want) ok = fail(why, "device lines do not match the count");
  }
  if (ok) return true;
  *out = DriverReport();
  out->cuda.answer.answered = out->ze.answer.answered = Tri::no;
  return false;
}

bool cuda_result_answers(long code) { return code == 0 || code == 100 || code == 34; }

bool ze_result_answers(long code) { return code == 0 || code == 0x78000001 || code == 0x70010000; }

bool driver_initialised(const DriverAnswer &a) { return a.answered == Tri::yes && a.code == 0; }

struct CodeName {
  long code;
  const char *name;
};

// The result codes the helper's report may carry, of both APIs: cuda.h's CUresult and ze_api.h's
// ze_result_t (a name says which API it is of: CUDA_ or ZE_; 0 is success in both).
static const CodeName kResults[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
    {0, "ZE_RESULT_SUCCESS"},
    {0x70000001, "ZE_RESULT_ERROR_DEVICE_LOST"},
    {0x70000002, "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"},
    {0x70010000, "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS"},
    {0x70020000, "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE"},
    {0x78000001, "ZE_RESULT_ERROR_UNINITIALIZED"},
    {0x78000002, "ZE_RESULT_ERROR_UNSUPPORTED_VERSION"},
    {0x78000003, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"},
    {0x78000004, "ZE_RESULT_ERROR_INVALID_ARGUMENT"},
    {0x78000007, "ZE_RESULT_ERROR_INVALID_NULL_POINTER"},
    {0x7800000c, "ZE_RESULT_ERROR_INVALID_ENUMERATION"},
    {0x7ffffffe, "ZE_RESULT_ERROR_UNKNOWN"},
};

static const char *result_name(long code, const char *api) {
  const size_t k = strlen(api);
  for (const CodeName &e : kResults)
    if (e.code == code && starts_with(e.name, strlen(e.name), api, k)) return e.name;
  return nullptr;
}

const char *cuda_result_name(long code) { return result_name(code, "CUDA_"); }
const char *ze_result_name(long code) { return result_name(code, "ZE_"); }


// The cache

int cache_dirs(const Inputs &in, CacheDir out[2]) {
  const char *dir = in.get(kCacheDir);
  if (dir && dir[0]) {
    out[0] = {dir, ""};
    return 1;
  }
  int n = 0;
  const char *xdg = in.get(kXdgRuntimeDir);
  if (xdg && xdg[0] == '/') out[n++] = {xdg, "/ucxtls"};  // the XDG spec: relative values are ignored
  out[n++] = {"/run/ucxtls", ""};
  return n;
}

bool cache_trusted(const FileFacts &f, unsigned euid, bool dir, Text &why) {
  const unsigned type = f.mode & S_IFMT, want = dir ? S_IFDIR : S_IFREG;
  if (type != want) {
    why.add(dir ? "is not a directory" : "is not a regular file");
    return false;
  }
  if (f.uid != 0 && f.uid != euid) {
    why.add("is owned by uid ").add((long long)f.uid).add(", neither root nor you (uid ").add((long long)euid).add(")");
    return false;
  }
  if (f.mode & (S_IWGRP | S_IWOTH)) {
    char octal[5] = {'0', char('0' + (f.mode >> 6 & 7)), char('0' + (f.mode >> 3 & 7)), char('0' + (f.mode & 7)), 0};
    why.add("is writable by group or others (mode ").add(octal).add(")");
    return false;
  }
  return true;
}

bool same_boot(const char *boot, const char *boot_id, size_t n) {
  while (n && (boot_id[n - 1] == '\n' || is_blank(boot_id[n - 1]))) n--;
  return boot && n && strlen(boot) == n && !memcmp(boot, boot_id, n);
}

void answer_from_report(const DriverReport &r, const Inputs &in, DriverFact *out) {
  out->cuda = r.cuda.answer;
  out->ze = r.ze.answer;
  if (r.cuda.answer.answered == Tri::yes) {
    const char *ids[kDriverDevicesMax];
    for (int i = 0; i < r.cuda.ndev; i++) {
      const char *id = r.cuda.dev[i].id;
      ids[i] = id[0] == '-' && !id[1] ? nullptr : id;
    }
    DeviceIds devs;
    devs.n = r.cuda.answer.present;
    devs.ids = r.cuda.ndev == devs.n ? ids : nullptr;  // beyond the listed ones, ids are unknown
    out->cuda.count = cuda_visible_count(in.get(kCudaVisible), devs);
  }
  if (r.ze.answer.answered == Tri::yes) out->ze.count = ze_mask_hides_all(in.get(kZeAffinity)) ? 0 : r.ze.answer.present;
}

}  // namespace ucxtls
