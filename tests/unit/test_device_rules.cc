// Unit tests of the device rules (shim/device_rules.h): table rows, one per fact the probes read.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core.h"
#include "probe.h"
#include "temp_tree.h"

using namespace ucxtls;

namespace {

std::string text(const char *s) { return s ? s : "<null>"; }

}  // namespace

TEST_CASE("RDMA: the PCI driver alone") {
  struct Row {
    const char *driver;
    RdmaDriver kind;
    Rdma runs;       // once a port is ACTIVE and the device is a CA
    bool ruled_out;  // no further read
  };
  const Row rows[] = {
      {"efa", RdmaDriver::efa, Rdma::none, true},         // AWS EFA: srd/ud, never rc
      {"mlx5_core", RdmaDriver::mlx5, Rdma::mlx5, false},  // ConnectX: rc_x, dc_x as well
      {"bnxt_en", RdmaDriver::other, Rdma::rc, false},     // Broadcom RoCE: rc_verbs
      {"ice", RdmaDriver::other, Rdma::rc, false},         // Intel E810 (RoCE or iWARP: node_type says)
      {"cxgb4", RdmaDriver::other, Rdma::rc, false},       // Chelsio: node_type 4 rules it out
      {"hfi1", RdmaDriver::other, Rdma::rc, false},        // Omni-Path
      {"", RdmaDriver::other, Rdma::rc, false},            // rxe, siw: no parent device
      {"mlx4_core", RdmaDriver::other, Rdma::rc, false},   // not mlx5: rc_verbs only
      {"EFA", RdmaDriver::other, Rdma::rc, false},         // names are exact
  };
  for (const Row &r : rows) {
    CAPTURE(r.driver);
    CHECK(rdma_driver(r.driver) == r.kind);
    CHECK(rdma_runs(r.kind) == r.runs);
    CHECK((rdma_driver_problem(r.kind) != nullptr) == r.ruled_out);
  }
  CHECK(text(rdma_driver_problem(RdmaDriver::efa)) == "EFA has no RC transport (UCX runs srd/ud there)");
}

TEST_CASE("RDMA: a RoCE port's link layer, GIDs and net device names, as sysfs prints them") {
  // ports/N/link_layer (drivers/infiniband/core/sysfs.c show_port_link_layer)
  struct LinkRow {
    const char *file;
    bool ethernet;
  } links[] = {{"Ethernet\n", true}, {"Ethernet", true}, {"InfiniBand\n", false}, {"Unknown\n", false},
               {"Ethernetx\n", false}, {"ethernet\n", false}, {"", false}};
  for (const LinkRow &r : links) {
    CAPTURE(r.file);
    CHECK(link_layer_ethernet(r.file, strlen(r.file)) == r.ethernet);
  }
  // ports/N/gids/K ("%pI6"): UCX's uct_ib_device_is_gid_valid wants a nonzero interface id (the
  // last 8 bytes); an empty entry reads as zeros.
  struct GidRow {
    const char *file;
    Gid gid;
  } gids[] = {
      {"fe80:0000:0000:0000:0e42:a1ff:fe12:3456\n", Gid::valid},         // a default GID (the MAC's EUI-64)
      {"0000:0000:0000:0000:0000:ffff:0a00:0101\n", Gid::valid},         // IPv4 10.0.1.1, mapped
      {"0000:0000:0000:0000:0000:0000:0000:0000\n", Gid::zero},          // an empty entry
      {"fe80:0000:0000:0000:0000:0000:0000:0000\n", Gid::zero},          // a prefix, no interface id
      // the interface id's edges: its first digit, its first half alone, the prefix's last digit
      {"0000:0000:0000:0000:1000:0000:0000:0000\n", Gid::valid},
      {"fe80:0000:0000:0000:0e42:a1ff:0000:0000\n", Gid::valid},
      {"0000:0000:0000:0001:0000:0000:0000:0000\n", Gid::zero},
      {"0000:0000:0000:0000:0000:0000:0000:0001", Gid::valid},           // no newline
      {"fe80:0000:0000:0000:0e42:a1ff:fe12:345\n", Gid::malformed},      // 31 digits
      {"fe80:0000:0000:0000:0e42:a1ff:fe12:34567\n", Gid::malformed},    // 33
      {"fe80::0e42:a1ff:fe12:3456\n", Gid::malformed},                   // compressed: not what sysfs prints
      {"zz80:0000:0000:0000:0e42:a1ff:fe12:3456\n", Gid::malformed},
      {"", Gid::malformed},
  };
  for (const GidRow &r : gids) {
    CAPTURE(std::string(r.file));
    CHECK(parse_gid(r.file, strlen(r.file)) == r.gid);
  }
  // gid_attrs/ndevs/K: a net device's name (IFNAMSIZ), looked up in /sys/class/net
  struct NameRow {
    const char *file;
    size_t len;
  } names[] = {{"bond0\n", 5}, {"ens1f0np0\n", 9}, {"eth0", 4}, {"\n", 0}, {"", 0}, {"a/b\n", 0},
               {".\n", 0}, {"..\n", 0}, {"abcdefghijklmnop\n", 0}, {"abcdefghijklmno\n", 15}};
  for (const NameRow &r : names) {
    CAPTURE(r.file);
    CHECK(net_device_name(r.file, strlen(r.file)) == r.len);
  }
  CHECK(roce_port_problem(RocePort::usable) == nullptr);
  CHECK(text(roce_port_problem(RocePort::no_gid0)) == "is zero: UCX does not list the port");
  CHECK(text(roce_port_problem(RocePort::no_gid)).find("rc_gda (UCX 1.21+, in all and ib) fails the worker") !=
        std::string::npos);
  CHECK(text(roce_port_problem(RocePort::no_ndev_here)) ==
        "not in this network namespace: UCX lists the port and cannot open it");
}

TEST_CASE("RDMA: UCX_IB_GID_INDEX as UCX's ulunits parser reads it") {
  struct Row {
    const char *value;
    long index;
  } rows[] = {
      {"auto", kGidAuto}, {"AUTO", kGidAuto}, {"Auto", kGidAuto},  // strcasecmp
      {"0", 0}, {"3", 3}, {"+3", 3}, {" 3", 3}, {"3 ", 3}, {"3x", 3},  // sscanf "%lu": blanks, sign, a tail
      {"255", 255}, {"1023", 1023}, {"1024", kGidMax}, {"99999999999999999999", kGidMax},
      {"inf", kGidMax}, {"INF", kGidMax},  // past any table: no entry answers
      {"", kGidUnknown}, {"x", kGidUnknown}, {"-1", kGidUnknown}, {" auto", kGidUnknown}, {"0x3", 0},
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    CHECK(parse_gid_index(r.value) == r.index);
  }
}

TEST_CASE("RDMA: node_type") {
  struct Row {
    long node_type;
    const char *problem;
  };
  const Row rows[] = {
      {kNodeTypeCa, nullptr},
      {kNodeTypeRnic, "iWARP (node_type 4: RNIC): UCX does not run on iWARP"},
      {kNodeTypeUnspecified, "node_type 7: unspecified (as EFA): no RC transport"},
      {2, "node_type is not 1: CA"},  // a switch
      {-1, "node_type is not 1: CA"},  // unreadable
  };
  for (const Row &r : rows) {
    CAPTURE(r.node_type);
    CHECK(text(rdma_node_type_problem(r.node_type)) == text(r.problem));
  }
  CHECK(kNodeTypeCa == 1);  // the kernel's enum as sysfs prints it (rdma_node_type + 1)
  CHECK(kPortActive == 4);
}

TEST_CASE("RDMA: why no port is usable") {
  struct Row {
    long states[kPortStates];
    long seen;
    const char *why;
  };
  const Row rows[] = {
      {{0, 1, 0, 0, 0, 0}, 1, "every port is DOWN (no link)"},
      {{0, 2, 0, 0, 0, 0}, 2, "every port is DOWN (no link)"},
      {{0, 0, 2, 0, 0, 0}, 2, "no port is ACTIVE: a port is INIT (no subnet manager?)"},
      {{0, 1, 1, 0, 0, 0}, 2, "no port is ACTIVE: a port is INIT (no subnet manager?)"},
      {{0, 0, 0, 1, 0, 0}, 1, "no port is ACTIVE"},  // ARMED
      {{1, 0, 0, 0, 0, 0}, 1, "no port is ACTIVE"},  // port 1 has no state file
      {{0, 1, 0, 1, 0, 0}, 2, "no port is ACTIVE"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.why);
    CHECK(text(rdma_ports_problem(r.states, r.seen)) == r.why);
  }
}

TEST_CASE("Intel GPUs for Level Zero: driver, vendor and display class") {
  struct Row {
    const char *name;
    PciUevent pci;
    bool gpu;
  };
  auto pci = [](const char *driver, bool has_id, unsigned long vendor, bool has_class, unsigned long cls) {
    PciUevent p;
    strncpy(p.driver, driver, sizeof p.driver - 1);
    p.has_id = has_id, p.vendor = vendor, p.has_class = has_class, p.pci_class = cls;
    return p;
  };
  const Row rows[] = {
      {"Max 1550 on i915 (display class 0x0380)", pci("i915", true, 0x8086, true, 0x038000), true},
      {"Arc B580 on xe (VGA class 0x0300)", pci("xe", true, 0x8086, true, 0x030000), true},
      {"Gaudi (habanalabs, processing accelerator)", pci("habanalabs", true, 0x1da3, true, 0x120000), false},
      {"the NPU (intel_vpu)", pci("intel_vpu", true, 0x8086, true, 0x048000), false},
      {"i915 bound to a device that is not Intel's", pci("i915", true, 0x10de, true, 0x030000), false},
      {"i915 on a non-display class", pci("i915", true, 0x8086, true, 0x040300), false},
      {"no PCI_ID line", pci("xe", false, 0, true, 0x030000), false},
      {"no PCI_CLASS line", pci("xe", true, 0x8086, false, 0), false},
      {"no driver bound", pci("", true, 0x8086, true, 0x030000), false},
      {"the NVIDIA driver", pci("nvidia", true, 0x10de, true, 0x030200), false},
  };
  for (const Row &r : rows) {
    CAPTURE(r.name);
    CHECK(intel_gpu(r.pci) == r.gpu);
  }
  CHECK(intel_gpu_driver("i915"));
  CHECK(intel_gpu_driver("xe"));
  CHECK_FALSE(intel_gpu_driver("xen"));
}

TEST_CASE("a probe that failed part-way: yes only when the missed part cannot change it") {
  struct Row {
    int visible;
    const char *a, *b, *c;
    bool yes;
  };
  const Row rows[] = {
      {1, nullptr, nullptr, nullptr, true},  // unset lists: all visible
      {2, "0,1", nullptr, nullptr, true},    // ordinals: more devices only make more valid
      {1, "GPU-5c3f", nullptr, nullptr, false},  // a prefix could become ambiguous
      {1, nullptr, nullptr, "0,GPU-aa", false},
      {0, nullptr, nullptr, nullptr, false},  // nothing visible: the missed part might be one
  };
  for (const Row &r : rows) {
    CHECK(yes_despite_failure(r.visible, r.a, r.b, r.c) == r.yes);
    CHECK(lists_name_ids(r.a, r.b, r.c) == (!r.yes && r.visible > 0));
  }
}

TEST_CASE("ROCr's GPU name from a KFD unique_id") {
  char id[21];
  rocr_gpu_id(5791614238470542636ULL, id);
  CHECK(std::string(id) == "GPU-505ff276f021952c");  // the mi300x fixture's first GPU
  rocr_gpu_id(1, id);
  CHECK(std::string(id) == "GPU-0000000000000001");
}

namespace {

// A replayed node (UCXTLS_SYSROOT) is written as tests/fixtures/machines.py writes one: plain files
// for device nodes and sysfs attributes, relative links for sysfs's.
using Sysroot = TempTree;

// How a RoCE port's GID table is filled.
enum class Gids { here, elsewhere, zero, zero_then_here };

// One ConnectX (mlx5_core) on uverbs0, its port 1 ACTIVE with this link layer and GID table.
void connectx(Sysroot &m, const char *link_layer, Gids gids) {
  const std::string port = "/sys/class/infiniband/mlx5_0/ports/1";
  m.file("/dev/infiniband/uverbs0", "");
  m.link("/sys/class/infiniband_verbs/uverbs0/device/driver", "../../../../bus/pci/drivers/mlx5_core");
  m.file("/sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
  m.file(port + "/state", "4: ACTIVE\n");
  m.file(port + "/link_layer", std::string(link_layer) + "\n");
  const char *const zero = "0000:0000:0000:0000:0000:0000:0000:0000\n";
  const char *const valid[] = {"fe80:0000:0000:0000:0e42:a1ff:fe12:3456\n", "fe80:0000:0000:0000:0e42:a1ff:fe12:3456\n",
                               "0000:0000:0000:0000:0000:ffff:0a00:0101\n", "0000:0000:0000:0000:0000:ffff:0a00:0101\n"};
  for (int k = 0; k < 8; k++) {
    const std::string n = std::to_string(k);
    const bool filled = gids == Gids::here || gids == Gids::elsewhere ? k < 4 : gids == Gids::zero_then_here && k >= 1 && k < 5;
    m.file(port + "/gids/" + n, filled ? valid[k % 4] : zero);
    if (filled) m.file(port + "/gid_attrs/ndevs/" + n, "bond0\n");  // an empty entry's read fails: no file
  }
  if (gids != Gids::elsewhere) m.file("/sys/class/net/bond0/operstate", "up\n");  // bond0 in this namespace
}

// The decision the library makes on that node for an NVIDIA GPU (UCXTLS_ACCEL=cuda: the family
// is given, the network probed): its action and value.
std::pair<Action, std::string> decided_on(Sysroot &m) {
  Inputs in;
  in.var[kSysroot] = m.root.c_str();
  in.var[kAccel] = "cuda";
  Settings s;
  parse_settings(in, &s);
  REQUIRE(s.sysroot != nullptr);
  Facts f;
  Decision d;
  ProbeOptions o;
  run_ladder(in, s, o, &f, &d);
  CAPTURE(std::string(f.rdma.evidence));
  return {d.action, d.value};
}

}  // namespace

// Decision rows for the RoCE GID rule (shim/probe_rdma.cc check_roce: a RoCE port counts only
// with a GID UCX can select, GID 0 valid and a valid GID on a net device of this namespace), on
// the default template for an NVIDIA node: a usable rc device leaves UCX_TLS unset; none gives
// `all`; a ConnectX port UCX lists but cannot open, or one with no usable GID at all (rc_gda opens
// it without UCX's port check), gives `^ib`. An InfiniBand port needs no GID.
TEST_CASE("decide on a replayed node: a RoCE port whose GIDs are all zero, or whose net device is not here, does not count") {
  struct Row {
    const char *name, *link_layer;
    Gids gids;
    Action action;
    const char *value;
  } rows[] = {
      {"RoCE, GIDs on bond0, bond0 here: rc runs, unset", "Ethernet", Gids::here, Action::skip, ""},
      {"RoCE, every GID zero: UCX does not list the port, and rc_gda (in all since 1.21) fails on it: ^ib", "Ethernet",
       Gids::zero, Action::set, "^ib"},
      {"RoCE, GID 0 zero, GIDs 1-4 on bond0 here: UCX's port check reads GID 0, not listed, all", "Ethernet",
       Gids::zero_then_here, Action::set, "all"},
      {"RoCE, GIDs on bond0, bond0 not in this namespace: listed, cannot open, ^ib", "Ethernet", Gids::elsewhere,
       Action::set, "^ib"},
      {"InfiniBand, every GID zero: no GID needed, unset", "InfiniBand", Gids::zero, Action::skip, ""},
      {"InfiniBand, no net device here: none needed, unset", "InfiniBand", Gids::elsewhere, Action::skip, ""},
  };
  for (const Row &r : rows) {
    CAPTURE(std::string(r.name));
    Sysroot m;
    connectx(m, r.link_layer, r.gids);
    const auto got = decided_on(m);
    CHECK(std::string(action_name(got.first)) == std::string(action_name(r.action)));
    CHECK(got.second == std::string(r.value));
  }
}
