// A kept UCX_TLS of another GPU family, and its repair: pure functions only (see repair.h).
#include "repair.h"

#include <string.h>

namespace ucxtls {
namespace {

struct GpuName {
  const char *name;
  Family family;
  GpuRole role;
};

// Every GPU transport name UCX_TLS can hold, transports and family aliases alike (UCX's
// ucp_tl_aliases: cuda = cuda_copy,cuda_ipc,gdr_copy; rocm = rocm_copy,rocm_ipc,rocm_gdr; ze =
// ze_copy,ze_ipc,ze_gdr). rocm_gdr (removed in UCX 1.14) and ze_gdr, ze_ipc (in no released UCX)
// are named all the same: a kept value may hold them.
const GpuName kGpuNames[] = {
    {"cuda_copy", Family::cuda, GpuRole::copy}, {"cuda_ipc", Family::cuda, GpuRole::ipc},
    {"gdr_copy", Family::cuda, GpuRole::gdr},   {"cuda", Family::cuda, GpuRole::alias},
    {"rocm_copy", Family::rocm, GpuRole::copy}, {"rocm_ipc", Family::rocm, GpuRole::ipc},
    {"rocm_gdr", Family::rocm, GpuRole::gdr},   {"rocm", Family::rocm, GpuRole::alias},
    {"ze_copy", Family::ze, GpuRole::copy},     {"ze_ipc", Family::ze, GpuRole::ipc},
    {"ze_gdr", Family::ze, GpuRole::gdr},       {"ze", Family::ze, GpuRole::alias},
};

// This node's transport for a role: "" when the family has none that a released UCX ships
// (ze's ipc and gdr, rocm's gdr).
const char *counterpart(Family node, GpuRole role) {
  switch (role) {
    case GpuRole::copy: return copy_transport(node);
    case GpuRole::ipc: return ipc_transport(node);
    case GpuRole::gdr: return node == Family::cuda ? "gdr_copy" : "";
    default: return family_name(node);
  }
}

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

Family gpu_entry_family(const char *entry, size_t n, GpuRole *role) {
  const char *name;
  size_t len;
  entry_name(entry, n, &name, &len);
  for (const GpuName &g : kGpuNames) {
    if (strlen(g.name) == len && !memcmp(g.name, name, len)) {
      *role = g.role;
      return g.family;
    }
  }
  return Family::none;
}

unsigned gpu_families_named(const char *value) {
  if (!value || value[0] == '^') return 0;
  unsigned named = 0;
  Items items(value);
  const char *e;
  size_t n;
  GpuRole role;
  while (items.next(&e, &n)) {
    Family f = gpu_entry_family(e, n, &role);
    if (f != Family::none) named |= 1u << int(f);
  }
  return named;
}

bool gpu_mismatch(const char *value, Family node) {
  if (node == Family::none) return false;
  const unsigned named = gpu_families_named(value);
  const unsigned mine = 1u << int(node);
  return named && !(named & mine);
}

void describe_foreign_entries(const char *value, Family node, Text &t) {
  Items items(value);
  const char *e;
  size_t n;
  GpuRole role;
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
  Text v;
  v.init(out, cap);
  v.add(value).add(",").add(copy_transport(node));
  if (v.truncated) out[0] = '\0';
  return !v.truncated;
}

Repair repair_value(const char *value, Family node, char *out, size_t cap) {
  if (cap) out[0] = '\0';
  if (!gpu_mismatch(value, node)) return Repair::no_mismatch;
  if (!cap) return Repair::too_long;
  Text v;
  v.init(out, cap);
  Items items(value);
  const char *e;
  size_t n;
  GpuRole role;
  while (items.next(&e, &n)) {
    const size_t start = v.len;
    if (start) v.add(",");
    Family f = gpu_entry_family(e, n, &role);
    if (f == Family::none || f == node) {
      v.add(e, n);
    } else {
      const char *to = counterpart(node, role);
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
