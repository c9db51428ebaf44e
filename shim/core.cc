// The functional core: pure functions only (see core.h).
#include "core.h"

#include "unknown.h"

#include <limits.h>

#include <string.h>

namespace ucxtls {

// ---------------------------------------------------------------------------------------------
// Text

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
Text &Text::add(const char *s) {
  if (!cap) return *this;
  return s ? add(s, strlen(s)) : add("(null)", 6);
}

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

Text &Text::add_quoted(const char *s, size_t max_shown) {
  if (!cap) return *this;
  add("\"");
  size_t n = strlen(s);
  // Control bytes would break the one-line promise: show them as '?'.
  for (size_t i = 0; i < n && i < max_shown; i++) {
    char c = s[i];
    if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
    add(&c, 1);
  }
  if (n > max_shown) add("...");
  return add("\"");
}

size_t Text::end_line() {
  if (!data) return 0;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)data[i] < 0x20 || data[i] == 0x7f) data[i] = '?';
  data[len++] = '\n';
  data[len] = '\0';
  return len;
}

// ---------------------------------------------------------------------------------------------
// Families

const char *family_name(Family f) {
  switch (f) {
    case Family::cuda: return "cuda";
    case Family::rocm: return "rocm";
    case Family::ze: return "ze";
    default: return "none";
  }
}

const char *copy_transport(Family f) {
  switch (f) {
    case Family::cuda: return "cuda_copy";
    case Family::rocm: return "rocm_copy";
    case Family::ze: return "ze_copy";
    default: return "";
  }
}

const char *ipc_transport(Family f) {
  switch (f) {
    case Family::cuda: return "cuda_ipc";
    case Family::rocm: return "rocm_ipc";
    default: return "";
  }
}

const char *rdma_transports(Rdma r) {
  switch (r) {
    case Rdma::mlx5: return "rc_x,rc,dc_x,dc";
    case Rdma::rc: return "rc";
    default: return "";
  }
}

// ---------------------------------------------------------------------------------------------
// Options: the one table behind parsing, `ucxtls --help` and the README.

const char kDefaultTemplate[] = "{rdma},{copy}";

const Option kOptions[kVarCount] = {
    {"UCXTLS_DISABLE", "unset", "turn the library off: any value but empty or 0"},
    {"UCXTLS_ACCEL", "auto", "accelerator family: auto (probe), cuda, rocm, ze or none"},
    {"UCXTLS_TEMPLATE", kDefaultTemplate,
     "UCX_TLS pattern: {copy} the copy transport, {ipc} cuda_ipc/rocm_ipc, {rdma} the RDMA transports; an empty one goes with one comma"},
    {"UCXTLS_PROBE", "kernel",
     "kernel (device files only) or driver (the CUDA/Level Zero answer `ucxtls probe --save` stored)"},
    {"UCXTLS_PROBE_TIMEOUT_MS", "5000", "bound on `ucxtls probe` (the driver APIs' helper), 1 to 600000 ms"},
    {"UCXTLS_CACHE_DIR", "unset",
     "where `ucxtls probe --save` stores the driver's answer; unset: $XDG_RUNTIME_DIR/ucxtls, /run/ucxtls"},
    {"UCXTLS_DEBUG", "unset", "1: one line on stderr saying what was decided and why"},
    {"UCXTLS_SYSROOT", "unset",
     "directory put in front of every /dev, /sys, /proc, /etc path the probe reads"},
    {"UCXTLS_DERIVED", "-",
     "written by the library with UCX_TLS: marks the value as derived, so it is derived again"},
    {"UCX_TLS", "-", "UCX's transport list: left alone whenever it is set, even empty"},
    {"UCX_CONFIG_DIR", "-", "UCX's extra ucx.conf directory, checked for a UCX_TLS line"},
    {"HOME", "-", "$HOME/ucx.conf is checked for a UCX_TLS line"},
    {"CUDA_VISIBLE_DEVICES", "-", "NVIDIA GPUs the process may use (CUDA's rules)"},
    {"ROCR_VISIBLE_DEVICES", "-", "AMD GPUs the process may use (ROCr's rules)"},
    {"HIP_VISIBLE_DEVICES", "-", "AMD GPUs, applied after ROCR_VISIBLE_DEVICES"},
    {"ZE_AFFINITY_MASK", "-", "Intel GPUs the process may use (empty = all)"},
    {"XDG_RUNTIME_DIR", "-", "$XDG_RUNTIME_DIR/ucxtls holds the driver's answer when UCXTLS_CACHE_DIR is unset"},
};

// It runs in every process, over environments of hundreds of entries: one test of the first
// letter rejects almost every entry, and a match is compared in place (no strlen, no strncmp).
// An entry that starts like ours ("UCXTLS_") but matched no name is an unknown variable.
void read_inputs(char *const *envp, Inputs *in) {
  for (int v = 0; v < kVarCount; v++) in->var[v] = nullptr;
  in->unknown = nullptr;
  in->unknown_count = 0;
  if (!envp) return;
  unsigned long long first = 0;  // first letters of the names (all ASCII upper case or digits)
  for (int v = 0; v < kVarCount; v++) first |= 1ULL << (kOptions[v].name[0] & 63);
  for (char *const *e = envp; *e; e++) {
    const char *entry = *e;
    if (!(first >> (entry[0] & 63) & 1)) continue;
    bool known = false;
    for (int v = 0; v < kVarCount; v++) {
      const char *name = kOptions[v].name;
      if (entry[0] != name[0]) continue;
      size_t i = 1;
      while (name[i] && entry[i] == name[i]) i++;
      if (!name[i] && entry[i] == '=') {
        if (!in->var[v]) in->var[v] = entry + i + 1;  // a later duplicate is known, not read
        known = true;
        break;
      }
    }
    if (known) continue;
    size_t i = 0;
    while (kOwnPrefix[i] && entry[i] == kOwnPrefix[i]) i++;
    if (kOwnPrefix[i]) continue;
    if (!in->unknown) in->unknown = entry;
    in->unknown_count++;
  }
}

bool switch_on(const char *v) { return v && v[0] && !(v[0] == '0' && v[1] == '\0'); }

static bool set_nonempty(const char *v) { return v && v[0]; }

void mark_invalid(Settings *s, Var v, const char *why) {
  if (s->invalid) return;  // the first one is reported
  s->invalid = true;
  s->invalid_var = v;
  s->invalid_why = why;
}

void parse_switches(const Inputs &in, Settings *s) {
  s->disabled = switch_on(in.get(kDisable));
  s->debug = switch_on(in.get(kDebug));
}

void parse_settings(const Inputs &in, Settings *s) {
  parse_switches(in, s);

  const char *a = in.get(kAccel);
  s->accel_forced = false;
  if (!set_nonempty(a) || !strcmp(a, "auto")) {
  } else if (!strcmp(a, "cuda")) {
    s->accel_forced = true, s->accel = Family::cuda;
  } else if (!strcmp(a, "rocm")) {
    s->accel_forced = true, s->accel = Family::rocm;
  } else if (!strcmp(a, "ze")) {
    s->accel_forced = true, s->accel = Family::ze;
  } else if (!strcmp(a, "none")) {
    s->accel_forced = true, s->accel = Family::none;
  } else {
    mark_invalid(s, kAccel, "is not one of auto, cuda, rocm, ze, none");
  }

  const char *t = in.get(kTemplate);
  s->template_from_user = set_nonempty(t);
  s->tmpl = s->template_from_user ? t : kDefaultTemplate;
  const char *why = nullptr;
  if (s->template_from_user && !template_valid(t, &why)) mark_invalid(s, kTemplate, why);

  const char *p = in.get(kProbe);
  if (!set_nonempty(p) || !strcmp(p, "kernel")) {
    s->tier = ProbeTier::kernel;
  } else if (!strcmp(p, "driver")) {
    s->tier = ProbeTier::driver;
  } else {
    mark_invalid(s, kProbe, "is not one of kernel, driver");
  }

  const char *ms = in.get(kProbeTimeoutMs);
  s->probe_timeout_ms = 5000;
  if (set_nonempty(ms)) {
    long v = 0;
    if (!parse_long(ms, strlen(ms), &v) || v < 1 || v > 600000)
      mark_invalid(s, kProbeTimeoutMs, "is not a whole number of milliseconds from 1 to 600000");
    else
      s->probe_timeout_ms = int(v);
  }

  const char *r = in.get(kSysroot);
  s->sysroot = set_nonempty(r) ? r : nullptr;
  if (s->sysroot && strlen(s->sysroot) > kSysrootMax) mark_invalid(s, kSysroot, "is longer than 256 bytes");
  if (s->sysroot && s->sysroot[0] != '/') mark_invalid(s, kSysroot, "is not an absolute path");
  const char *cache = in.get(kCacheDir);
  if (set_nonempty(cache) && cache[0] != '/') mark_invalid(s, kCacheDir, "is not an absolute path");
}

// ---------------------------------------------------------------------------------------------
// Template

// The placeholders, in the order of their meaning: the family's copy and IPC transports, the
// node's RDMA transports.
enum Placeholder { kPhCopy, kPhIpc, kPhRdma, kPhCount, kPhNone = kPhCount };
static const char *const kPlaceholders[kPhCount] = {"{copy}", "{ipc}", "{rdma}"};

static int placeholder_at(const char *p, size_t n) {
  for (int i = 0; i < kPhCount; i++)
    if (strlen(kPlaceholders[i]) == n && !memcmp(p, kPlaceholders[i], n)) return i;
  return kPhNone;
}

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// One UCX_TLS entry: a placeholder, or [\]name[:aux] (UCX's allow-list item syntax).
static bool entry_valid(const char *p, size_t n) {
  if (placeholder_at(p, n) != kPhNone) return true;
  size_t i = 0;
  if (i < n && p[i] == '\\') i++;
  size_t start = i;
  while (i < n && is_name_char(p[i])) i++;
  if (i == start) return false;
  if (i == n) return true;
  return n - i == 4 && !memcmp(p + i, ":aux", 4);
}

bool template_valid(const char *t, const char **why) {
  size_t len = strlen(t);
  if (len > kValueMax - 512) {
    *why = "is longer than 3584 bytes";
    return false;
  }
  for (size_t i = 0; i < len; i++) {
    if (t[i] == ' ' || t[i] == '\t') {
      *why = "contains a space (UCX does not trim entries: \" cuda_copy\" matches nothing)";
      return false;
    }
  }
  const char *p = t;
  if (*p == '^') p++;
  if (!*p) {
    *why = "names no transport";
    return false;
  }
  int entries = 0;
  bool has_all = false;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? size_t(comma - p) : strlen(p);
    if (n == 0) {
      *why = "has an empty entry (two commas, or a comma at an end)";
      return false;
    }
    if (!entry_valid(p, n)) {
      *why = "has an entry that is not a transport name (letters, digits, _), name:aux, {copy}, {ipc} or {rdma}";
      return false;
    }
    if (n == 3 && !memcmp(p, "all", 3)) has_all = true;
    entries++;
    if (!comma) break;
    p = comma + 1;
  }
  if (has_all && entries > 1) {
    *why = "mixes all with other transports (UCX rejects that)";
    return false;
  }
  return true;
}

bool template_uses_copy(const char *t) {
  return strstr(t, kPlaceholders[kPhCopy]) != nullptr || strstr(t, kPlaceholders[kPhIpc]) != nullptr;
}

bool template_uses_rdma(const char *t) { return strstr(t, kPlaceholders[kPhRdma]) != nullptr; }

bool compose(const char *t, Family f, Rdma r, char *out, size_t cap) {
  Text v;
  v.init(out, cap);
  const char *text[kPhCount] = {copy_transport(f), ipc_transport(f), rdma_transports(r)};
  const char *p = t;
  if (*p == '^') v.add("^"), p++;
  bool first = true;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? size_t(comma - p) : strlen(p);
    int ph = placeholder_at(p, n);
    const char *entry = ph == kPhNone ? nullptr : text[ph];
    if (!(entry && !*entry)) {  // an empty placeholder disappears with its comma
      if (!first) v.add(",");
      if (entry)
        v.add(entry);
      else
        v.add(p, n);
      first = false;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return !v.truncated;
}

// ---------------------------------------------------------------------------------------------
// Numbers

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

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static void trim(const char **p, size_t *n) {
  while (*n && is_blank(**p)) (*p)++, (*n)--;
  while (*n && is_blank((*p)[*n - 1])) (*n)--;
}

// ---------------------------------------------------------------------------------------------
// Visibility lists

static bool starts_with(const char *p, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && !memcmp(p, prefix, k);
}

// Leading decimal digits of a token, as strtoul would read them ("1gpu2" -> 1). -1 when the token
// does not start with a digit (a sign, a word); -2 when the number is absurdly large.
static long leading_index(const char *p, size_t n) {
  if (!n || p[0] < '0' || p[0] > '9') return -1;
  long v = 0;
  for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
    if (v > 100000000) return -2;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

// The devices of `devs` named by `list` up to its first invalid entry (CUDA's and ROCr's shared
// rule). Ordinals index devs; "GPU-" entries are unique prefixes of ids (optimistic when the ids
// are unknown); "MIG-" entries (CUDA only) count as one visible device and end the list, since
// CUDA enumerates a single MIG instance.
static int visible_in_list(const char *list, const DeviceIds &devs, bool mig_ok) {
  if (!list) return devs.n;
  // Which devices are already chosen: a repeat ends the list. Device counts are small; beyond
  // the bitmap's reach the repeat check is skipped (no allocation).
  unsigned char chosen[128] = {};
  int count = 0;
  const char *p = list;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? size_t(comma - p) : strlen(p);
    const char *tok = p;
    trim(&tok, &n);
    long index = -1;
    if (mig_ok && starts_with(tok, n, "MIG-")) {
      return count + 1;
    } else if (starts_with(tok, n, "GPU-")) {
      if (devs.ids) {
        int match = -1, matches = 0;
        for (int i = 0; i < devs.n; i++) {
          const char *id = devs.ids[i];
          if (id && strlen(id) >= n && !memcmp(id, tok, n)) match = i, matches++;
        }
        if (matches != 1) break;  // unknown or ambiguous prefix
        index = match;
      } else {
        if (count >= devs.n) break;  // optimistic: a distinct unknown device
        index = -1;
        count++;
        if (!comma) break;
        p = comma + 1;
        continue;
      }
    } else {
      index = leading_index(tok, n);
      if (index < 0 || index >= devs.n) break;
    }
    if (index < long(sizeof chosen * 8)) {
      unsigned char bit = (unsigned char)(1u << (index & 7));
      if (chosen[index >> 3] & bit) break;
      chosen[index >> 3] |= bit;
    }
    // Optimistic GPU- entries (ids unknown) took devices whose index is not known: never count
    // more devices than there are (found by fuzz_visibility: "GPU-x,1,0" of 2 gave 3).
    if (count >= devs.n) break;
    count++;
    if (!comma) break;
    p = comma + 1;
  }
  return count;
}

static int first_token_bound(const char *list, bool mig_ok) {
  if (!list) return 1;
  const char *comma = strchr(list, ',');
  size_t n = comma ? size_t(comma - list) : strlen(list);
  const char *tok = list;
  trim(&tok, &n);
  if (mig_ok && starts_with(tok, n, "MIG-")) return 0;
  if (starts_with(tok, n, "GPU-")) return kAllDevices;
  long index = leading_index(tok, n);
  if (index < 0) return 0;
  return int(index) + 1;
}

int cuda_visible_count(const char *cvd, const DeviceIds &devs) {
  return visible_in_list(cvd, devs, true);
}

int cuda_enumeration_bound(const char *cvd) { return first_token_bound(cvd, true); }

int rocm_visible_count(const char *rocr, const char *hip, const char *cvd, const DeviceIds &devs) {
  int after_rocr = visible_in_list(rocr, devs, false);
  const char *second = hip ? hip : cvd;
  if (!second) return after_rocr;
  DeviceIds left;
  left.n = after_rocr;  // HIP's ordinals index the devices ROCr left; their ids are not tracked
  return visible_in_list(second, left, false);
}

int rocm_enumeration_bound(const char *rocr, const char *hip, const char *cvd) {
  const char *second = hip ? hip : cvd;
  if (!rocr) return first_token_bound(second, false);
  if (!second) return first_token_bound(rocr, false);
  return kAllDevices;  // two lists: exact only with every device
}

bool ze_mask_hides_all(const char *mask) {
  if (!mask || !mask[0] || !strcmp(mask, "default")) return false;
  const char *p = mask;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? size_t(comma - p) : strlen(p);
    const char *tok = p;
    trim(&tok, &n);
    // N or N.M
    size_t i = 0, d1 = 0, d2 = 0;
    while (i < n && tok[i] >= '0' && tok[i] <= '9') i++, d1++;
    bool ok = d1 > 0;
    if (ok && i < n) {
      if (tok[i] != '.') ok = false;
      i++;
      while (i < n && tok[i] >= '0' && tok[i] <= '9') i++, d2++;
      if (d2 == 0 || i != n) ok = false;
    }
    if (ok) return false;
    if (!comma) break;
    p = comma + 1;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Small-file parsers

// Calls fn(line, len) for each line of text.
template <typename Fn>
static void each_line(const char *text, size_t len, Fn fn) {
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    fn(text + i, j - i);
    i = j + 1;
  }
}

// "Key:<blanks>value" -> value (trimmed) when the line starts with key.
static bool keyed_value(const char *line, size_t n, const char *key, const char **v, size_t *vn) {
  size_t k = strlen(key);
  if (n < k || memcmp(line, key, k)) return false;
  *v = line + k;
  *vn = n - k;
  trim(v, vn);
  return true;
}

bool parse_nvidia_information(const char *text, size_t len, NvInfo *out) {
  *out = NvInfo();
  each_line(text, len, [&](const char *line, size_t n) {
    const char *v;
    size_t vn;
    if (keyed_value(line, n, "Device Minor:", &v, &vn)) {
      long m;
      if (parse_long(v, vn, &m) && m >= 0 && m < 1000000) out->has_minor = true, out->minor = m;
    } else if (keyed_value(line, n, "GPU UUID:", &v, &vn)) {
      if (vn >= sizeof out->uuid) vn = sizeof out->uuid - 1;
      memcpy(out->uuid, v, vn);
      out->uuid[vn] = '\0';
    } else if (keyed_value(line, n, "GPU Excluded:", &v, &vn)) {
      out->excluded = vn >= 3 && !memcmp(v, "Yes", 3);
    }
  });
  return out->has_minor;
}

// Runs in the constructor of every process on an AMD node, over files of 40-odd lines: a line is
// looked at only when its first byte can start one of the four keys, and a value is parsed only
// for a key that matches.
bool parse_kfd_properties(const char *text, size_t len, KfdNode *out, bool want_id) {
  *out = KfdNode();
  bool any = false;
  unsigned seen = 0;  // bit k: key k was read
  const unsigned done = want_id ? 0xf : 0x7;
  size_t i = 0;
  while (i < len && (seen & done) != done) {
    const char *line = text + i;
    const char *nl = (const char *)memchr(line, '\n', len - i);
    size_t n = nl ? size_t(nl - line) : len - i;
    i += n + 1;
    const char c = line[0];
    if (c != 's' && c != 'g' && c != 'd' && c != 'u') continue;
    const char *sp = (const char *)memchr(line, ' ', n);
    if (!sp) continue;
    size_t kn = size_t(sp - line);
    int key = kn == 10 && !memcmp(line, "simd_count", 10)           ? 0
              : kn == 18 && !memcmp(line, "gfx_target_version", 18) ? 1
              : kn == 16 && !memcmp(line, "drm_render_minor", 16)   ? 2
              : kn == 9 && !memcmp(line, "unique_id", 9)            ? 3
                                                                    : -1;
    if (key < 0) continue;
    const char *v = sp + 1;
    size_t vn = n - kn - 1;
    trim(&v, &vn);
    long val;
    if (key == 3) {  // unique_id is an unsigned 64-bit number
      unsigned long long u = 0;
      size_t d = 0;
      for (; d < vn && v[d] >= '0' && v[d] <= '9'; d++) u = u * 10 + unsigned(v[d] - '0');
      if (d == vn && vn) out->unique_id = u, any = true, seen |= 8;
      continue;
    }
    if (!parse_long(v, vn, &val)) continue;
    any = true;
    seen |= 1u << key;
    if (key == 0 && val <= 0) {  // a CPU node (simd_count 0, the second line): nothing else matters
      out->simd_count = val;
      return true;
    }
    if (key == 0) out->simd_count = val;
    else if (key == 1) out->gfx_target_version = val;
    else out->drm_render_minor = val;
  }
  return any;
}

bool parse_sysfs_hex(const char *text, size_t len, unsigned long *out) {
  const char *p = text;
  size_t n = len;
  trim(&p, &n);
  if (n < 3 || n > 18 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X')) return false;
  unsigned long v = 0;
  for (size_t i = 2; i < n; i++) {
    char c = p[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + unsigned(d);
  }
  *out = v;
  return true;
}

bool parse_pci_uevent(const char *text, size_t len, PciUevent *out) {
  *out = PciUevent();
  bool any = false;
  each_line(text, len, [&](const char *line, size_t n) {
    const char *v;
    size_t vn;
    char hex[16] = "0x";
    if (keyed_value(line, n, "DRIVER=", &v, &vn)) {
      if (vn >= sizeof out->driver) vn = sizeof out->driver - 1;
      memcpy(out->driver, v, vn);
      out->driver[vn] = '\0';
      any = true;
    } else if (keyed_value(line, n, "PCI_CLASS=", &v, &vn)) {  // "%04X": "38000", "30000"
      if (vn && vn <= 8) {
        memcpy(hex + 2, v, vn);
        out->has_class = parse_sysfs_hex(hex, vn + 2, &out->pci_class);
        any |= out->has_class;
      }
    } else if (keyed_value(line, n, "PCI_ID=", &v, &vn)) {  // "%04X:%04X": "8086:0BD5"
      const char *colon = (const char *)memchr(v, ':', vn);
      size_t a = colon ? size_t(colon - v) : 0, b = colon ? vn - a - 1 : 0;
      if (colon && a && a <= 8 && b && b <= 8) {
        memcpy(hex + 2, v, a);
        bool ok = parse_sysfs_hex(hex, a + 2, &out->vendor);
        memcpy(hex + 2, colon + 1, b);
        out->has_id = ok && parse_sysfs_hex(hex, b + 2, &out->device);
        any |= out->has_id;
      }
    }
  });
  return any;
}

long parse_sysfs_enum(const char *text, size_t len) {
  size_t n = 0;
  while (n < len && text[n] >= '0' && text[n] <= '9') n++;
  long v;
  if (!n || n > 6 || n >= len || text[n] != ':' || !parse_long(text, n, &v)) return -1;
  return v;
}

// ucx.conf as UCX's INI reader (inih, with multi-line values and a UTF-8 BOM allowed) reads it:
// a line is an assignment of UCX_TLS when its key, after leading blanks, is exactly UCX_TLS
// followed by blanks and '=' (or ':'). Comment lines ('#', ';') and [section] lines never are, and
// neither is an indented line that follows a name=value line of the same section: inih takes it
// as the continuation of that value.
void ConfScan::feed(const char *p, size_t n) {
  static const char key[] = "UCX_TLS";
  const uint8_t kLineStart = 0, kKey = 1, kAfterKey = 2, kSkip = 3, kName = 4, kBom = 5;
  for (size_t i = 0; i < n && !found; i++, offset++) {
    const char c = p[i];
    const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
    if (offset == 0 && (unsigned char)c == 0xEF) {  // a byte-order mark may open the file
      state = kBom;
      continue;
    }
    if (state == kBom) {
      if ((offset == 1 && (unsigned char)c == 0xBB)) continue;
      if (offset == 2 && (unsigned char)c == 0xBF) {
        state = kLineStart;
        continue;
      }
      state = kName;  // not a BOM: the line starts with a byte no key starts with
    }
    switch (state) {
      case kLineStart:
        if (c == '\n') indented = false;
        else if (blank) indented = true;
        else if (c == '#' || c == ';') state = kSkip;
        else if (indented && prev_name) state = kSkip;  // a continuation of the previous value
        else if (c == '[') prev_name = false, state = kSkip;
        else if (c == key[0]) state = kKey, matched = 1;
        else state = kName, i--, offset--;  // read this byte again as part of another name
        break;
      case kKey:
        if (matched == 7) {
          if (c == '=' || c == ':') found = true;
          else if (c == ' ' || c == '\t') state = kAfterKey;
          else state = kName, i--, offset--;
        } else if (c == key[matched]) {
          matched++;
        } else {
          state = kName, i--, offset--;
        }
        break;
      case kAfterKey:
        if (c == '=' || c == ':') found = true;
        else if (c != ' ' && c != '\t') state = kName, i--, offset--;
        break;
      case kName:  // some other name: a '=' or ':' on this line makes it a name=value line
        if (c == '=' || c == ':') prev_name = true, state = kSkip;
        break;
      default:
        break;
    }
    if (c == '\n' && !found) state = kLineStart, indented = false;
  }
}

// ---------------------------------------------------------------------------------------------
// The decision

const char *action_name(Action a) {
  switch (a) {
    case Action::set: return "set";
    case Action::keep: return "keep";
    case Action::skip: return "skip";
    case Action::clear: return "clear";
    default: return "need";
  }
}

const char *need_name(Need n) {
  switch (n) {
    case Need::rdma: return "rdma";
    case Need::ucx_conf: return "ucx_conf";
    case Need::driver: return "driver";
    case Need::cuda: return "cuda";
    case Need::rocm: return "rocm";
    case Need::ze: return "ze";
    default: return "nothing";
  }
}

Text Decision::reason(bool always) {
  Text t;
  if (quiet && !always) {
    t.init(nullptr, 0);  // every add() returns at once
  } else if (nreasons < kReasonsMax) {
    t.init(reasons[nreasons++], kReasonMax);
  } else {
    t.init(reasons[kReasonsMax - 1], kReasonMax);  // the last line absorbs the rest
    t.len = strlen(t.data);
    t.add("; ");
  }
  return t;
}

static Need family_need(Family f) {
  return f == Family::cuda ? Need::cuda : f == Family::rocm ? Need::rocm : Need::ze;
}

// A fact the decision needs could not be probed: do nothing (an inherited value stays, since
// removing it would be a guess as well), and say which fact and why.
static void cannot_tell(Decision *d, const char *fact, const char *evidence) {
  d->action = Action::skip;
  d->unknown_fact = true;
  d->reason().add(fact).add(": cannot tell (").add(evidence).add("): nothing is written on a guess");
}

// Is family f visible, by the driver tier when it answered for f, else by the kernel tier?
// Adds the evidence as a reason. Returns unknown when a probe is still needed.
static Tri family_visible(const Settings &s, const Facts &f, Family fam, Decision *d, bool explain) {
  const DriverAnswer *drv = nullptr;
  if (s.tier == ProbeTier::driver && fam != Family::rocm)
    drv = fam == Family::cuda ? &f.driver.cuda : &f.driver.ze;
  if (drv && drv->answered == Tri::yes) {
    if (explain) {
      Text r = d->reason();
      r.add(family_name(fam)).add(": driver API: ").add((long long)drv->present).add(" device(s)");
      if (drv->count != drv->present) r.add(", ").add((long long)drv->count).add(" visible");
      if (drv->name[0]) r.add(" (").add(drv->name).add(")");
    }
    return drv->count > 0 ? Tri::yes : Tri::no;
  }
  const FamilyFact &k = f.family[int(fam)];
  if (k.visible == Tri::unknown) return Tri::unknown;
  if (explain) {
    Text r = d->reason();
    r.add(family_name(fam)).add(": ");
    if (drv) {
      r.add("driver API gave no answer");
      if (drv->name[0]) r.add(" (").add(drv->name).add(")");
      r.add(", kernel: ");
    }
    r.add(k.evidence);
  }
  return k.visible;
}

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d) {
  d->action = Action::need;
  d->need = Need::nothing;
  d->family = Family::none;
  d->family_known = false;
  d->rederived = false;
  d->error = false;
  d->unknown_fact = false;
  d->value[0] = '\0';
  d->nreasons = 0;

  // 1. Secure execution: nothing is read.
  if (in.secure) {
    d->action = Action::skip;
    d->reason().add("secure execution (AT_SECURE): the library does nothing");
    return;
  }
  // 2. Turned off.
  if (s.disabled) {
    d->action = Action::skip;
    d->reason().add("UCXTLS_DISABLE is set");
    return;
  }
  // 3. UCX_TLS present, even empty: the user's, unless it is our own inherited value.
  const char *tls = in.get(kUcxTls);
  if (tls) {
    const char *derived = in.get(kDerived);
    // The library never writes an empty value: an empty marker marks nothing.
    if (!derived || !derived[0] || strcmp(tls, derived) != 0) {
      d->action = Action::keep;
      Text r = d->reason();
      r.add("UCX_TLS is already set (").add_quoted(tls).add(")");
      if (!tls[0]) r.add("; empty: UCX will fail with \"The TLs list is empty\"");
      return;
    }
    d->rederived = true;
    d->reason().add("UCX_TLS equals UCXTLS_DERIVED: derived by ucxtls, maybe on another node; deriving again");
  }
  // An invalid setting: one error line, nothing else; but an inherited value of ours, maybe
  // derived for another node's GPUs, is removed rather than kept on a guess (UCX's default works).
  if (s.invalid) {
    d->action = d->rederived ? Action::clear : Action::skip;
    d->error = true;
    d->nreasons = 0;
    const char *v = in.get(s.invalid_var);
    d->reason(true)
        .add(kOptions[s.invalid_var].name)
        .add("=")
        .add_quoted(v ? v : "")
        .add(" ")
        .add(s.invalid_why)
        .add(d->rederived ? "; the inherited UCX_TLS derived by ucxtls is removed" : "; UCX_TLS left unchanged");
    return;
  }
  if (s.sysroot) d->reason().add("UCXTLS_SYSROOT=").add_quoted(s.sysroot).add(" (a replayed machine)");
  const Action leave_unset = d->rederived ? Action::clear : Action::skip;

  // 4 (cheapest first). Network: the default template needs a device UCX's rc transport runs on,
  // or UCX would fail with "no usable transports/devices"; UCX's default (all) covers the copy
  // transport. A user's template is applied as written; its {rdma} needs the same fact.
  if (!s.template_from_user || template_uses_rdma(s.tmpl)) {
    if (f.rdma == Tri::unknown) {
      if (f.rdma_error) return cannot_tell(d, "rdma", f.rdma_evidence);
      return void(d->need = Need::rdma);
    }
    if (f.rdma == Tri::no && !s.template_from_user) {
      d->action = leave_unset;
      d->reason().add("no RDMA device UCX's rc transport runs on (").add(f.rdma_evidence).add("): UCX's default (all) already includes the copy transport");
      return;
    }
  }
  // 5. A ucx.conf that UCX reads assigns UCX_TLS: an environment value would override it.
  if (f.ucx_conf == Tri::unknown) {
    if (f.ucx_conf_error) return cannot_tell(d, "ucx.conf", f.ucx_conf_evidence);
    return void(d->need = Need::ucx_conf);
  }
  if (f.ucx_conf == Tri::yes) {
    d->action = d->rederived ? Action::clear : Action::keep;
    d->reason().add("a ucx.conf assigns UCX_TLS (").add(f.ucx_conf_evidence).add("): UCX reads it from there");
    return;
  }
  if (s.template_from_user) d->reason().add("UCXTLS_TEMPLATE=").add_quoted(s.tmpl).add(" (a user template is applied as written)");
  if (f.rdma != Tri::unknown) d->reason().add("rdma: ").add(f.rdma_evidence);

  // 6. Family: forced, not needed (no {copy} or {ipc}), or probed in priority order CUDA, ROCm, ze.
  if (!template_uses_copy(s.tmpl)) {
    d->family = Family::none;
    d->reason().add("the template has no {copy} or {ipc}: no GPU probe");
  } else if (s.accel_forced) {
    d->family = s.accel;
    d->reason().add("UCXTLS_ACCEL=").add(family_name(s.accel));
  } else {
    if (s.tier == ProbeTier::driver) {
      if (f.driver.ran == Tri::unknown) return void(d->need = Need::driver);
      Text r = d->reason();
      r.add("driver tier: ").add(f.driver.evidence);
    }
    const Family order[] = {Family::cuda, Family::rocm, Family::ze};
    d->family = Family::none;
    for (Family fam : order) {
      Tri v = family_visible(s, f, fam, d, false);
      if (v == Tri::unknown) {
        const FamilyFact &k = f.family[int(fam)];
        if (k.error) return cannot_tell(d, family_name(fam), k.evidence);
        return void(d->need = family_need(fam));
      }
      if (v == Tri::yes) {
        d->family = fam;
        break;
      }
    }
    // All facts are in: explain each family that was looked at.
    for (Family fam : order) {
      family_visible(s, f, fam, d, true);
      if (fam == d->family) break;
    }
  }
  d->family_known = true;

  // 7. Compose. An empty result is never written.
  Rdma rdma = f.rdma != Tri::yes ? Rdma::none : f.rdma_mlx5 ? Rdma::mlx5 : Rdma::rc;
  if (!compose(s.tmpl, d->family, rdma, d->value, sizeof d->value)) {
    d->action = Action::skip;
    d->error = true;
    d->nreasons = 0;
    d->value[0] = '\0';
    d->reason(true).add("UCXTLS_TEMPLATE gives a value longer than 4095 bytes; UCX_TLS left unchanged");
    return;
  }
  if (!d->value[0] || !strcmp(d->value, "^")) {
    d->action = leave_unset;
    d->value[0] = '\0';
    d->reason().add("the template gives an empty value for family ").add(family_name(d->family)).add(": nothing to write");
    return;
  }
  // 8. Write.
  d->action = Action::set;
}

const char *effective_value(const Inputs &in, const Decision &d) {
  switch (d.action) {
    case Action::set: return d.value;
    case Action::clear: return nullptr;
    default: return in.get(kUcxTls);
  }
}

size_t format_line(const Inputs &in, const Decision &d, char *out, size_t cap) {
  if (cap < 2) {  // no room for a line: writing the newline would overflow (found by fuzz_decide)
    if (cap) out[0] = '\0';
    return 0;
  }
  Text t;
  t.init(out, cap - 1);  // room for the newline
  t.add("ucxtls: ");
  if (d.error) {
    t.add(d.reasons[0]);
  } else {
    t.add(action_name(d.action));
    const char *v = effective_value(in, d);
    if (d.action == Action::set) t.add(" UCX_TLS=").add(v);
    else if (d.action == Action::clear) t.add(" UCX_TLS and UCXTLS_DERIVED");
    else if (v) t.add(" UCX_TLS=").add_quoted(v, 200);
    else t.add(" (UCX_TLS stays unset)");
    for (int i = 0; i < d.nreasons; i++) t.add(i ? "; " : ": ").add(d.reasons[i]);
  }
  // Evidence carries names read from the file system (directory entries, link targets): a control
  // byte there would break the one-line promise, so the whole line gets the add_quoted rule.
  return t.end_line();
}

}  // namespace ucxtls
