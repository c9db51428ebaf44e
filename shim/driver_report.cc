// The driver tier's report and the cache's rules: pure functions only (see driver_report.h).
#include "driver_report.h"

#include <string.h>

namespace ucxtls {
namespace {

const char kHeader[] = "ucxtls-driver 2";

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_control(char c) { return (unsigned char)c < 0x20 || c == 0x7f; }

// Fields of one line [p, end) of the report, which is parsed in place.
struct Line {
  char *p, *end;
  bool is(const char *word) const { return size_t(end - p) == strlen(word) && !memcmp(p, word, size_t(end - p)); }
  // The next blank-separated field, NUL-terminated in place; NULL when the line has no more.
  char *field(size_t *n) {
    while (p < end && is_blank(*p)) p++;
    if (p == end) return nullptr;
    char *start = p;
    while (p < end && !is_blank(*p)) p++;
    *n = size_t(p - start);
    char *stop = p;
    if (p < end) p++;  // past the blank that is about to become the NUL
    *stop = '\0';      // a blank, or the line's own newline
    return start;
  }
  // The rest of the line, trimmed, control bytes shown as '?', cut to max - 1 bytes; NULL if empty.
  char *rest(size_t max) {
    while (p < end && is_blank(*p)) p++;
    char *e = end;
    while (e > p && is_blank(e[-1])) e--;
    if (e == p) return nullptr;
    if (size_t(e - p) > max - 1) e = p + (max - 1);
    for (char *c = p; c < e; c++)
      if (is_control(*c)) *c = '?';
    *e = '\0';
    return p;
  }
};

bool parse_number(const char *f, size_t n, long lo, long hi, long *out) {
  return f && parse_long(f, n, out) && *out >= lo && *out <= hi;
}

// "answer|unknown <count> <code> <name...>" -> a.
bool parse_answer(Line &l, DriverAnswer *a) {
  size_t n = 0;
  const char *status = l.field(&n);
  const bool answered = status && n == 6 && !memcmp(status, "answer", 6);
  if (!answered && !(status && n == 7 && !memcmp(status, "unknown", 7))) return false;
  long count = 0, code = 0;
  const char *f = l.field(&n);
  if (!parse_number(f, n, 0, 1000000, &count)) return false;
  f = l.field(&n);
  if (!f || !parse_long(f, n, &code)) return false;
  const char *name = l.rest(sizeof a->name);
  if (!name) return false;
  *a = DriverAnswer();
  a->answered = answered ? Tri::yes : Tri::no;
  a->count = a->present = answered ? int(count) : 0;
  a->code = code;
  memcpy(a->name, name, strlen(name) + 1);
  return true;
}

// "<index> <id> <name...>" -> the next device of fam.
bool parse_device(Line &l, FamilyReport *fam) {
  size_t n = 0;
  long index = 0;
  const char *f = l.field(&n);
  if (fam->ndev >= kDriverDevicesMax || !parse_number(f, n, 0, kDriverDevicesMax, &index) || index != fam->ndev)
    return false;
  char *id = l.field(&n);
  if (!id || n >= kDeviceIdMax) return false;
  for (size_t i = 0; i < n; i++)
    if (is_control(id[i])) return false;
  const char *name = l.rest(kDeviceNameMax);
  if (!name) return false;
  fam->dev[fam->ndev].id = id;
  fam->dev[fam->ndev].name = name;
  fam->ndev++;
  return true;
}

bool fail(const char **why, const char *what) {
  if (why) *why = what;
  return false;
}

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
  for (size_t i = start; i < n && i - start < max - 1; i++) {
    char c = is_control(s[i]) ? '?' : s[i];
    t.add(&c, 1);
  }
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
    t.add(" ");
    add_name(t, f.dev[i].name, kDeviceNameMax);
    t.add("\n");
  }
}

}  // namespace

size_t format_driver_report(const DriverReport &r, char *out, size_t cap) {
  Text t;
  t.init(out, cap);
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
  DriverReport r;
  bool header = false, end = false, have_cuda = false, have_ze = false;
  FamilyReport *last = nullptr;  // the family whose device lines may follow
  size_t i = 0;
  while (i < len && !end) {
    char *nl = static_cast<char *>(memchr(text + i, '\n', len - i));
    if (!nl) break;  // a line without its newline: cut short
    Line l = {text + i, nl};
    i = size_t(nl - text) + 1;
    if (!header) {
      if (!l.is(kHeader)) return fail(why, "not a driver report (no \"ucxtls-driver 2\" first line)");
      header = true;
      continue;
    }
    if (l.is("end")) {
      end = true;
      continue;
    }
    size_t n = 0;
    char *kind = l.field(&n);
    if (!kind) continue;
    if (!strcmp(kind, "boot")) {
      char *id = l.field(&n);
      if (r.boot || !id || n >= kBootIdMax) return fail(why, "a malformed boot line");
      for (size_t k = 0; k < n; k++)
        if (!((id[k] >= '0' && id[k] <= '9') || (id[k] >= 'a' && id[k] <= 'f') || id[k] == '-'))
          return fail(why, "a malformed boot line");
      r.boot = id;
    } else if (!strcmp(kind, "cuda") || !strcmp(kind, "ze")) {
      const bool cuda = kind[0] == 'c';
      bool &have = cuda ? have_cuda : have_ze;
      last = cuda ? &r.cuda : &r.ze;
      if (have || !parse_answer(l, &last->answer)) return fail(why, "a malformed family line");
      have = true;
    } else if (!strcmp(kind, "cuda-device") || !strcmp(kind, "ze-device")) {
      FamilyReport *fam = kind[0] == 'c' ? &r.cuda : &r.ze;
      if (fam != last || fam->answer.answered != Tri::yes || !parse_device(l, fam))
        return fail(why, "a malformed device line");
    }  // other lines: a later helper's extras, ignored
  }
  if (!header) return fail(why, "empty");
  if (!end) return fail(why, "incomplete (no end line: cut short)");
  if (!have_cuda || !have_ze) return fail(why, "a family line is missing");
  const FamilyReport *fams[] = {&r.cuda, &r.ze};
  for (const FamilyReport *f : fams) {
    int want = f->answer.answered == Tri::yes ? f->answer.present : 0;
    if (want > kDriverDevicesMax) want = kDriverDevicesMax;
    if (f->ndev != want) return fail(why, "device lines do not match the count");
  }
  *out = r;
  return true;
}

bool cuda_result_answers(long code) { return code == 0 || code == 100 || code == 34; }

bool ze_result_answers(long code) { return code == 0 || code == 0x78000001 || code == 0x70010000; }

struct CodeName {
  long code;
  const char *name;
};

template <size_t N>
static const char *lookup(const CodeName (&table)[N], long code) {
  for (const CodeName &e : table)
    if (e.code == code) return e.name;
  return nullptr;
}

const char *cuda_result_name(long code) {
  static const CodeName kCuda[] = {
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
  };
  return lookup(kCuda, code);
}

const char *ze_result_name(long code) {
  static const CodeName kZe[] = {
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
  return lookup(kZe, code);
}


// ---------------------------------------------------------------------------------------------
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
  const unsigned type = f.mode & 0170000, want = dir ? 0040000 : 0100000;
  if (type != want) {
    why.add(dir ? "is not a directory" : "is not a regular file");
    return false;
  }
  if (f.uid != 0 && f.uid != euid) {
    why.add("is owned by uid ").add((long long)f.uid).add(", neither root nor you (uid ").add((long long)euid).add(")");
    return false;
  }
  if (f.mode & 022) {
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
    for (int i = 0; i < r.cuda.ndev; i++) ids[i] = strcmp(r.cuda.dev[i].id, "-") ? r.cuda.dev[i].id : nullptr;
    DeviceIds devs;
    devs.n = r.cuda.answer.present;
    devs.ids = r.cuda.ndev == devs.n ? ids : nullptr;  // beyond the listed ones, ids are unknown
    out->cuda.count = cuda_visible_count(in.get(kCudaVisible), devs);
  }
  if (r.ze.answer.answered == Tri::yes) out->ze.count = ze_mask_hides_all(in.get(kZeAffinity)) ? 0 : r.ze.answer.present;
}

}  // namespace ucxtls
