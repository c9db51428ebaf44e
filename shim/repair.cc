// A kept UCX_TLS of another GPU family, and its repair: pure functions only (see repair.h).
#include "repair.h"

#include <string.h>

namespace ucxtls {
namespace {

// Is [e, e+n) the same entry as one of the first `count` entries of the list `out`?
bool repeats(const char *out, size_t out_len, const char *e, size_t n) {
  const char *p = out, *end = out + out_len;
  while (p < end) {
    const char *c = static_cast<const char *>(memchr(p, ',', size_t(end - p)));
    const size_t k = c ? size_t(c - p) : size_t(end - p);
    if (k == n && !memcmp(p, e, n)) return true;
    p += k + 1;
  }
  return false;
}

}  // namespace

Family gpu_entry_family(const char *entry, size_t n, Role *role) {
  const char *name;
  size_t len;
  entry_name(entry, n, &name, &len);
  const UcxName *u = ucx_name(name, len);
  if (!u) return Family::none;
  *role = u->role;
  return u->family;
}

bool gpu_mismatch(const char *value, Family node) {
  if (node == Family::none || !value || value[0] == '^') return false;
  unsigned named = 0;  // a bit (1 << int(Family)) per family whose GPU transports the list names
  Items items(value);
  const char *e;
  size_t n;
  Role role;
  while (items.next(&e, &n)) {
    Family f = gpu_entry_family(e, n, &role);
    if (f != Family::none) named |= 1u << int(f);
  }
  return named && !(named & (1u << int(node)));
}

void describe_foreign_entries(const char *value, Family node, Text &t) {
  Items items(value);
  const char *e;
  size_t n;
  Role role;
  bool first = true;
  while (items.next(&e, &n)) {
    Family f = gpu_entry_family(e, n, &role);
    if (f == Family::none || f == node) continue;
    t.add(first ? "" : ", ").add(e, n);
    first = false;
  }
}

Copy copy_verdict(const char *value, Family node) {
  if (node == Family::none || !value || !value[0] || !strcmp(value, "^")) return Copy::carries;
  const bool deny = value[0] == '^';
  const char *copy = copy_transport(node), *alias = family_name(node);
  Items items(deny ? value + 1 : value);
  const char *e;
  size_t n;
  bool first = true;
  while (items.next(&e, &n)) {
    const char *name;
    size_t len;
    entry_name(e, n, &name, &len);
    const bool exact = name != e;  // \name: the transport of that name, never an alias
    const bool named = (len == strlen(copy) && !memcmp(name, copy, len)) ||
                       (!exact && len == strlen(alias) && !memcmp(name, alias, len)) ||
                       (!deny && first && n == 3 && !memcmp(e, "all", 3));
    if (named) return deny ? Copy::denied : Copy::carries;
    first = false;
  }
  return deny ? Copy::carries : Copy::lacks;
}

void describe_copy_problem(Copy v, Family node, Text &t) {
  const char *copy = copy_transport(node);
  if (v == Copy::denied) t.add("denies ").add(copy);
  else t.add("names no ").add(copy).add(" (nor ").add(family_name(node)).add(", nor all)");
  t.add(": GPU memory looks like host memory to UCX (NIXL: \"VRAM memory is detected as host by UCX.\")");
}

void describe_copy_fix(Copy v, Family node, Text &t) {
  const char *copy = copy_transport(node);
  if (v == Copy::denied) t.add("take ").add(copy).add(" out of the ^ list or unset UCX_TLS");
  else t.add("add ").add(copy).add(" (UCXTLS_REPAIR=1 appends it) or unset UCX_TLS");
}

bool append_copy(const char *value, Family node, char *out, size_t cap) {
  Text v(out, cap);
  v.add(value).add(",").add(copy_transport(node));
  if (v.truncated) out[0] = '\0';
  return !v.truncated;
}

Repair repair_value(const char *value, Family node, char *out, size_t cap) {
  if (cap) out[0] = '\0';
  if (!gpu_mismatch(value, node)) return Repair::no_mismatch;
  if (!cap) return Repair::too_long;
  Text v(out, cap);
  Items items(value);
  const char *e;
  size_t n;
  Role role;
  while (items.next(&e, &n)) {
    const size_t start = v.len;
    if (start) v.add(",");
    Family f = gpu_entry_family(e, n, &role);
    if (f == Family::none || f == node) {
      v.add(e, n);
    } else {
      const char *to = family_transport(node, role);
      if (!*to) {  // no counterpart: the entry goes, with its comma
        v.len = start;
        out[start] = '\0';
        continue;
      }
      const char *name;
      size_t len;
      entry_name(e, n, &name, &len);
      if (name != e) v.add("\\");
      v.add(to);
      if (name + len != e + n) v.add(":aux");
      const size_t entry_at = start ? start + 1 : 0;
      if (repeats(out, start, out + entry_at, v.len - entry_at)) {
        v.len = start;
        out[start] = '\0';
      }
    }
  }
  if (v.truncated || !v.len) {
    out[0] = '\0';
    return v.truncated ? Repair::too_long : Repair::nothing_remains;
  }
  return Repair::repaired;
}

}  // namespace ucxtls
