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
