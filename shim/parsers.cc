// The small-file parsers: pure functions only (see parsers.h).
#include "parsers.h"

#include <string.h>

#include "text.h"

namespace ucxtls {

// Calls fn(line, len) for each line of text (memchr finds each end a word at a time).
template <typename Fn>
static void each_line(const char *text, size_t len, Fn fn) {
  size_t i = 0;
  while (i < len) {
    const char *nl = static_cast<const char *>(memchr(text + i, '\n', len - i));
    const size_t j = nl ? size_t(nl - text) : len;
    fn(text + i, j - i);
    i = j + 1;
  }
}

// "Key:<blanks>value" -> value (trimmed) when the line starts with key (a literal: its length is
// known at compile time).
template <size_t K>
static bool keyed_value(const char *line, size_t n, const char (&key)[K], const char **v, size_t *vn) {
  constexpr size_t k = K - 1;
  if (n < k || memcmp(line, key, k)) return false;
  *v = line + k;
  *vn = n - k;
  trim(v, vn);
  return true;
}

bool parse_nvidia_information(const char *text, size_t len, NvInfo *out) {
  *out = NvInfo();
  // Runs in every process on an NVIDIA node: only lines that start like a key ('D', 'G') are compared.
  each_line(text, len, [&](const char *line, size_t n) {
    const char *v;
    size_t vn;
    if (!n || (line[0] != 'D' && line[0] != 'G')) return;
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

// Every process on an AMD node reads these 40-odd lines: a value is parsed only for a key that matches.
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

int auxv_secure(const unsigned long *v, size_t words) {
  constexpr unsigned long kAtNull = 0, kAtSecure = 23, kTypeMax = 255;
  int secure = -1;
  for (size_t i = 0; i + 1 < words; i += 2) {
    if (v[i] == kAtNull) return secure;
    if (v[i] > kTypeMax) return -1;
    if (v[i] == kAtSecure) secure = v[i + 1] != 0;
  }
  return -1;  // no AT_NULL: cut short
}

long parse_stat_threads(const char *text, size_t len) {
  size_t i = len;
  while (i && text[i - 1] != ')') i--;  // the last ')': the end of the command name (field 2)
  if (!i) return -1;
  // Fields 3 (state) to 19 lie between; field 20 is the 18th blank-separated one after it.
  for (int field = 2; field < 20; field++) {
    while (i < len && text[i] != ' ') i++;
    while (i < len && text[i] == ' ') i++;
    if (i >= len) return -1;
  }
  long n = 0;
  size_t start = i;
  while (i < len && text[i] >= '0' && text[i] <= '9' && n < 100000000) n = n * 10 + (text[i++] - '0');
  return i > start && (i == len || text[i] == ' ' || text[i] == '\n') ? n : -1;
}

}  // namespace ucxtls
