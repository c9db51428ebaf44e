// The device rules: which RDMA device UCX's rc runs on, which PCI device is an Intel GPU for Level
// Zero, and when a probe that failed part-way still has an answer. Pure (see core.h).
#pragma once

#include <stddef.h>

#include "parsers.h"
#include "template.h"

namespace ucxtls {

// RDMA, as UCX judges a device (uct/ib/base/ib_md.c, ib_device.c): an InfiniBand-transport device
// (node_type 1: CA: InfiniBand and RoCE) with a port in state 4: ACTIVE. The kernel's enums
// (include/rdma/ib_verbs.h: rdma_node_type + 1 as sysfs prints it, ib_port_state):
constexpr long kNodeTypeCa = 1, kNodeTypeRnic = 4, kNodeTypeUnspecified = 7;
constexpr long kPortDown = 1, kPortInit = 2, kPortArmed = 3, kPortActive = 4, kPortActiveDefer = 5;
constexpr long kPortStates = 6;  // 0 (no or an unknown state) to kPortActiveDefer

// EFA has no rc; a ConnectX (mlx5_core) is a CA and runs rc_x and dc_x too; anything else
// (Broadcom, Intel RoCE or iWARP, rxe, siw, Omni-Path) needs its node_type.
enum class RdmaDriver : unsigned char { efa, mlx5, other };
RdmaDriver rdma_driver(const char *pci_driver);  // "" for a virtual device: other
const char *rdma_driver_problem(RdmaDriver d);  // why it runs no rc (EFA), or NULL
Rdma rdma_runs(RdmaDriver d);                  // once a port is ACTIVE and it is a CA
const char *rdma_node_type_problem(long node_type);  // NULL for 1: CA (-1: unreadable)
// Why no port is usable, from the count seen in each state (states[0]: unknown), none ACTIVE.
const char *rdma_ports_problem(const long states[kPortStates], long ports_seen);

// RoCE ports (link_layer Ethernet): a GID is usable when its interface id (the last 8 bytes) is
// not zero and its net device is in the process's network namespace (probe_rdma.cc check_roce).
bool link_layer_ethernet(const char *buf, size_t n);
// One GID as sysfs prints it ("%pI6"): zero is uct_ib_device_is_gid_valid's "no".
enum class Gid : unsigned char { valid, zero, malformed };
Gid parse_gid(const char *buf, size_t n);
// The length of the net device name in gid_attrs/ndevs/N (IFNAMSIZ, no '/'), or 0.
size_t net_device_name(const char *buf, size_t n);
constexpr long kGidMax = 1024;  // the largest GID table in the kernel (rxe); mlx5 has 255
// UCX_IB_GID_INDEX as UCX reads it (src/ucs/config/parser.c ucs_config_sscanf_ulunits: "auto" in
// any case, "inf", else sscanf "%lu"): kGidAuto, an index (one past any table, kGidMax, for "inf"
// and larger numbers: no entry answers), or kGidUnknown for a value UCX refuses or wraps ("-1",
// "x"): which GID UCX tests cannot be told.
constexpr long kGidAuto = -1, kGidUnknown = -2;
long parse_gid_index(const char *value);
// A RoCE port as src/uct/ib/base/ib_device.c judges it: uct_ib_device_port_check lists it when the
// GID UCX_IB_GID_INDEX names (0 for auto) is valid; the interface (ib_iface.c
// uct_ib_iface_init_roce_gid_info) needs a GID whose net device is here (auto: any valid one).
enum class RocePort : unsigned char {
  usable,        // listed, and a GID the interface can use
  no_gid0,       // the tested GID is zero or absent, another GID is usable: not listed for rc
                 // and ud, and rc_gda (which skips the port check) opens it
  no_gid,        // no GID the interface can use, and not listed: rc_gda (UCX >= 1.21, in all and
                 // ib) opens a ConnectX's first port anyway and fails the whole worker
  no_ndev_here   // listed, but no valid GID's net device is here: uct_iface_open (auto) or
                 // ibv_create_ah (a number) fails "Address not valid"
};
// Why such a port runs no rc, or NULL when it is usable.
const char *roce_port_problem(RocePort p);

// Intel GPUs for Level Zero: bound to i915 or xe, vendor 0x8086, display class 0x03xxxx (the
// compute runtime's rule; Gaudi's habanalabs and the NPU's intel_vpu are not ze).
bool intel_gpu_driver(const char *pci_driver);
bool intel_gpu(const PciUevent &pci);  // its driver, vendor and class

// A listing that failed part-way still answers "yes" when some device is visible and no visibility
// list names a device by id ("GPU-<prefix>": more devices could make a prefix ambiguous; ordinals
// only become more valid). NULL lists are unset.
bool lists_name_ids(const char *a, const char *b, const char *c);
bool yes_despite_failure(int visible_n, const char *a, const char *b, const char *c);

// ROCr's name for a GPU, "GPU-" and the 16 hex digits of its KFD unique_id (out: 21 bytes).
void rocr_gpu_id(unsigned long long unique_id, char out[21]);

}  // namespace ucxtls
