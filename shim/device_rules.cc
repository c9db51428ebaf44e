// The device rules: pure functions only (see device_rules.h).
#include "device_rules.h"

#include <string.h>

namespace ucxtls {

RdmaDriver rdma_driver(const char *d) {
  if (!strcmp(d, "efa")) return RdmaDriver::efa;
  if (!strcmp(d, "mlx5_core")) return RdmaDriver::mlx5;
  return RdmaDriver::other;
}

const char *rdma_driver_problem(RdmaDriver d) {
  return d == RdmaDriver::efa ? "EFA has no RC transport (UCX runs srd/ud there)" : nullptr;
}

Rdma rdma_runs(RdmaDriver d) { return d == RdmaDriver::mlx5 ? Rdma::mlx5 : d == RdmaDriver::other ? Rdma::rc : Rdma::none; }

const char *rdma_node_type_problem(long t) {
  switch (t) {
    case kNodeTypeCa: return nullptr;
    case kNodeTypeRnic: return "iWARP (node_type 4: RNIC): UCX does not run on iWARP";
    case kNodeTypeUnspecified: return "node_type 7: unspecified (as EFA): no RC transport";
    default: return "node_type is not 1: CA";
  }
}

const char *rdma_ports_problem(const long states[kPortStates], long seen) {
  if (seen > 0 && states[kPortDown] == seen) return "every port is DOWN (no link)";
  if (states[kPortInit]) return "no port is ACTIVE: a port is INIT (no subnet manager?)";
  return "no port is ACTIVE";
}

bool link_layer_ethernet(const char *b, size_t n) {
  static const char kEthernet[] = "Ethernet";
  const size_t k = sizeof kEthernet - 1;
  return n >= k && !memcmp(b, kEthernet, k) && (n == k || b[k] == '\n');
}

Gid parse_gid(const char *b, size_t n) {
  int digits = 0;
  bool interface_id = false;  // a nonzero digit among the last 16 of 32
  for (size_t i = 0; i < n; i++) {
    const char c = b[i];
    if (c == ':') continue;
    if (c == '\n' && i == n - 1) break;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex || digits == 32) return Gid::malformed;
    if (digits++ >= 16 && c != '0') interface_id = true;
  }
  if (digits != 32) return Gid::malformed;
  return interface_id ? Gid::valid : Gid::zero;
}

size_t net_device_name(const char *b, size_t n) {
  constexpr size_t kIfNameMax = 15;  // IFNAMSIZ - 1
  while (n && (b[n - 1] == '\n' || b[n - 1] == ' ')) n--;
  if (!n || n > kIfNameMax || memchr(b, '/', n) || memchr(b, '\0', n)) return 0;
  if ((n == 1 && b[0] == '.') || (n == 2 && b[0] == '.' && b[1] == '.')) return 0;
  return n;
}

namespace {

// strcasecmp for ASCII words (the library imports no libc function).
bool same_word(const char *a, const char *b) {
  for (;; a++, b++) {
    const char x = *a >= 'A' && *a <= 'Z' ? char(*a + 32) : *a, y = *b >= 'A' && *b <= 'Z' ? char(*b + 32) : *b;
    if (x != y) return false;
    if (!x) return true;
  }
}

}  // namespace

long parse_gid_index(const char *v) {
  if (same_word(v, "auto")) return kGidAuto;
  if (same_word(v, "inf")) return kGidMax;
  while (*v == ' ' || (*v >= '\t' && *v <= '\r')) v++;  // what sscanf skips
  if (*v == '+') v++;
  if (*v < '0' || *v > '9') return kGidUnknown;  // no number, or "-N": UCX wraps it
  long n = 0;
  for (; *v >= '0' && *v <= '9'; v++) n = n < kGidMax ? n * 10 + (*v - '0') : kGidMax;
  return n < kGidMax ? n : kGidMax;  // what follows the digits, sscanf ignores
}

const char *roce_port_problem(RocePort p) {
  switch (p) {
    case RocePort::no_gid0: return "is zero: UCX does not list the port";
    case RocePort::no_gid:
      return "is zero and no GID is usable: UCX does not list the port, and rc_gda (UCX 1.21+, in all and ib) fails the worker";
    case RocePort::no_ndev_here: return "not in this network namespace: UCX lists the port and cannot open it";
    default: return nullptr;
  }
}

bool intel_gpu_driver(const char *d) { return !strcmp(d, "i915") || !strcmp(d, "xe"); }

bool intel_gpu(const PciUevent &pci) {
  constexpr unsigned long kIntel = 0x8086, kDisplayClass = 0x03;
  return intel_gpu_driver(pci.driver) && pci.has_id && pci.vendor == kIntel && pci.has_class &&
         (pci.pci_class >> 16) == kDisplayClass;
}

bool lists_name_ids(const char *a, const char *b, const char *c) {
  const char *lists[] = {a, b, c};
  for (const char *l : lists)
    if (l && strstr(l, "GPU-")) return true;
  return false;
}

bool yes_despite_failure(int visible_n, const char *a, const char *b, const char *c) {
  return visible_n > 0 && !lists_name_ids(a, b, c);
}

void rocr_gpu_id(unsigned long long unique_id, char out[21]) {
  static const char hex[] = "0123456789abcdef";
  memcpy(out, "GPU-", 4);
  for (int i = 0; i < 16; i++) out[4 + i] = hex[(unique_id >> (60 - 4 * i)) & 0xf];
  out[20] = '\0';
}

}  // namespace ucxtls
