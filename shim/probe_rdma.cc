// The RDMA probe (docs/design.md, "RDMA as UCX sees it"): the facts of the /dev/infiniband/uverbs*
// nodes this process has, read cheapest disqualifier first; device_rules.h judges them.
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "device_rules.h"
#include "probe_shared.h"

namespace ucxtls {
namespace probes {
namespace {

// One uverbs node's verdict: a container may be given one HCA of eight.

struct RdmaDevice {
  Rdma kind = Rdma::none;  // what it runs; none: not usable, with `why`
  int error = 0;           // -errno: could not tell
  char name[64] = {};      // the IB device name (ibdev)
  char driver[32] = {};    // the PCI driver, "" for a virtual device (rxe, siw)
  long port = 0;           // the ACTIVE port
  char why[160] = {};      // why it is not usable, in a user's words
  bool unopenable = false;  // a RoCE port UCX lists but cannot open (RocePort::no_ndev_here)
  bool gda_fails = false;   // a ConnectX RoCE port with no usable GID (RocePort::no_gid)
  bool missing = false;    // the node is not there (gone since the listing)
  bool passed = false;     // not examined further: it cannot change the answer (see check_uverbs)
};

// Reads a port's state: the enum value, 0 when the port is not there, or -errno.
long port_state(const Settings &s, const char *dev, long port) {
  Path p(s.sysroot, "/sys/class/infiniband/");
  p.add(dev).add("/ports/").add_num(port).add("/state");
  ssize_t n = read_file(p);
  if (n < 0) return absent(n) ? 0 : n;
  long v = parse_sysfs_enum(g_file, size_t(n));
  return v < 0 ? 0 : v;
}

// The ports after port 1, until one is ACTIVE. Ports are 1 to the count (the kernel's
// rdma_end_port): the first missing state file ends them, no listing.
constexpr long kPortMax = 64;
void find_active_port(const Settings &s, long port1, RdmaDevice *out, Text &why) {
  long states[kPortStates] = {};  // how many ports are in each state (index 0: an unknown state)
  states[port1 >= 0 && port1 < kPortStates ? port1 : 0]++;
  long seen = 1;
  for (long port = 2; port1 && port <= kPortMax; port++) {
    long v = port_state(s, out->name, port);
    if (v < 0) return void(out->error = int(v));
    if (v == 0) break;  // no such port: the last one was the device's last
    if (v == kPortActive) return void(out->port = port);
    states[v < kPortStates ? v : 0]++;
    seen++;
  }
  why.add(rdma_ports_problem(states, seen));
}

// Readable and writable, as UCX's uct_ib_device_is_accessible checks.
bool node_accessible(const Settings &s, const char *node, RdmaDevice *out, Text &why) {
  Path p(s.sysroot, "/dev/infiniband/");
  p.add(node);
  int r = path_access(p, R_OK | W_OK);
  if (absent(r)) return out->missing = true, false;
  if (r == -EACCES || r == -EPERM) return why.add(node).add(" is not readable and writable here (UCX skips it)"), false;
  if (r < 0) return out->error = r, false;
  return true;
}

// A RoCE port as UCX v1.22.0 judges it (src/uct/ib/base/). uct_ib_device_port_check lists it for
// rc and ud when the GID UCX_IB_GID_INDEX names (0 for auto: uct_ib_device_get_ib_gid_index) is
// valid: interface id not zero (uct_ib_device_is_gid_valid), inside the table. The interface
// (ib_iface.c uct_ib_iface_init_roce_gid_info) needs, for auto, any valid GID whose address handle
// can be created (uct_ib_device_select_gid, uct_ib_device_test_roce_gid_index; none: uct_iface_open
// fails "Address not valid" and the worker with it), for a number that GID (ibv_create_ah fails
// "Invalid argument"). An address handle needs the GID's net device in the caller's network
// namespace under MLNX_OFED's ib_core (ib_resolve_eth_dmac: rdma_check_gid_user_access): a
// container given mlx5_bond_0 without its bond. rc_gda (UCX 1.21+) opens a ConnectX's first port
// with no port check (src/uct/ib/mlx5/gdaki/gdaki.c uct_gdaki_query_tl_devices), so its table is
// searched even when the port is not listed. An empty entry's ndevs read fails (ENODATA).

// The port's GID k: valid (1), zero (0), past the table (kGidPast), or -errno.
constexpr long kGidPast = 2;
long gid_valid(const Settings &s, const RdmaDevice &d, long k) {
  Path p(s.sysroot, "/sys/class/infiniband/");
  p.add(d.name).add("/ports/").add_num(d.port).add("/gids/").add_num(k);
  ssize_t n = read_file(p);
  if (n < 0) return absent(n) ? kGidPast : n;
  return parse_gid(g_file, size_t(n)) == Gid::valid ? 1 : 0;
}

// GID k's net device is in this namespace (1; /sys/class/net shows the namespace's own), is not or
// it has none (0), or -errno; the first one named goes to ndev (16 bytes), for the evidence.
long gid_ndev_here(const Settings &s, const RdmaDevice &d, long k, char *ndev) {
  Path p(s.sysroot, "/sys/class/infiniband/");
  p.add(d.name).add("/ports/").add_num(d.port).add("/gid_attrs/ndevs/").add_num(k);
  ssize_t n = read_file(p);
  if (n < 0 && !absent(n) && n != -ENODATA && n != -EINVAL && n != -ENODEV) return n;
  const size_t len = n > 0 ? net_device_name(g_file, size_t(n)) : 0;
  if (!len) return 0;
  if (!ndev[0]) memcpy(ndev, g_file, len);
  Path net(s.sysroot, "/sys/class/net/");
  net.add(g_file, len);
  const int r = path_access(net, F_OK);
  return r == 0 ? 1 : absent(r) ? 0 : r;
}

// The verdict on out's port; false (out->error) when a read failed or the GID UCX tests cannot be
// told (out->why says which).
bool check_roce(const Settings &s, const GidSetting &g, bool mlx5, RdmaDevice *out, Text &why) {
  if (g.index == kGidUnknown) {
    why.add("could not tell which GID UCX tests: ").add(g.shown);
    return out->error = g.error ? g.error : -EINVAL, false;
  }
  const long tested = g.index == kGidAuto ? 0 : g.index;
  long v = gid_valid(s, *out, tested);
  if (v < 0) return out->error = int(v), false;
  const bool listed = v == 1;
  char ndev[16] = {};
  bool usable = false;
  if (g.index != kGidAuto) {  // that GID alone
    v = listed ? gid_ndev_here(s, *out, tested, ndev) : 0;
    if (v < 0) return out->error = int(v), false;
    usable = v == 1;
  } else if (listed || mlx5) {  // any valid GID; a port neither listed nor a ConnectX's is used by nothing
    for (long k = 0; k < kGidMax && !usable; k++) {
      v = k == tested && listed ? 1 : gid_valid(s, *out, k);
      if (v == kGidPast) break;  // the gids files end the table
      if (v == 1) v = gid_ndev_here(s, *out, k, ndev);
      if (v < 0) return out->error = int(v), false;
      usable = v == 1;
    }
  }
  if (listed && usable) return true;
  const RocePort verdict = !listed ? (usable ? RocePort::no_gid0 : RocePort::no_gid) : RocePort::no_ndev_here;
  why.add("RoCE port ").add((long long)out->port).add(": ");
  if (verdict == RocePort::no_ndev_here) {
    why.add(ndev[0] ? "its GIDs' net device " : "no GID names a net device ").add(ndev).add(ndev[0] ? " is " : ", ");
  } else {
    why.add("GID ").add((long long)tested);
    if (g.index != kGidAuto) why.add(" (").add(g.shown).add(")");  // cut where the evidence ends
    why.add(" ");
  }
  why.add(roce_port_problem(verdict));
  out->unopenable = verdict == RocePort::no_ndev_here;
  out->gda_fails = verdict == RocePort::no_gid && mlx5 && out->port == 1;  // rc_gda opens first_port
  out->port = 0;
  return true;
}

// Cheapest disqualifier first: the driver link rules out EFA and, once an rc device was found,
// every device but a ConnectX; the ports before node_type (DOWN is the common "no"); the node's
// access last, except for uverbs0, tried before any listing (without RDMA that is the whole probe).
void check_uverbs(const Inputs &in, const Settings &s, const char *node, bool listed, bool found_rc,
                  const ProbeOptions &o, Facts *f, RdmaDevice *out) {
  Text why(out->why, sizeof out->why);
  if (!listed && !node_accessible(s, node, out, why)) return;
  Path p(s.sysroot, "/sys/class/infiniband_verbs/");
  p.add(node).add("/device/driver");
  ssize_t n = read_link(p, g_file, sizeof g_file);
  if (n < 0 && !absent(n)) return void(out->error = int(n));
  Text(out->driver, sizeof out->driver).add(n > 0 ? basename_of(g_file) : "");
  const RdmaDriver kind = rdma_driver(out->driver);
  if (const char *problem = rdma_driver_problem(kind)) return void(why.add(problem));
  const bool mlx5 = kind == RdmaDriver::mlx5;  // always a CA: no node_type to read
  if (found_rc && !mlx5 && !o.exhaustive) return void(out->passed = true);
  // Its IB device name (persistent names such as ibp12s0 say nothing of the driver).
  p = Path(s.sysroot, "/sys/class/infiniband_verbs/");
  p.add(node).add("/ibdev");
  n = read_file(p);
  if (n < 0 && !absent(n)) return void(out->error = int(n));
  while (n > 0 && (g_file[n - 1] == '\n' || g_file[n - 1] == ' ')) n--;
  if (n <= 0 || size_t(n) >= sizeof out->name || memchr(g_file, '/', size_t(n))) {
    why.add(node).add(": no IB device name in sysfs");
    return;
  }
  memcpy(out->name, g_file, size_t(n));
  out->name[n] = '\0';
  long st = port_state(s, out->name, 1);
  if (st < 0) return void(out->error = int(st));
  if (st == kPortActive) out->port = 1;
  else find_active_port(s, st, out, why);
  if (!out->port || out->error) return;
  if (!mlx5) {
    p = Path(s.sysroot, "/sys/class/infiniband/");
    p.add(out->name).add("/node_type");
    n = read_file(p);
    if (n < 0 && !absent(n)) return void(out->error = int(n));
    const char *not_ca = rdma_node_type_problem(n > 0 ? parse_sysfs_enum(g_file, size_t(n)) : -1);
    if (not_ca) return void((out->port = 0, why.add(not_ca)));
  }
  // The link layer: an InfiniBand port needs nothing more; a RoCE port needs a GID UCX can use.
  p = Path(s.sysroot, "/sys/class/infiniband/");
  p.add(out->name).add("/ports/").add_num(out->port).add("/link_layer");
  n = read_file(p);
  if (n < 0 && !absent(n)) return void(out->error = int(n));
  if (n > 0 && link_layer_ethernet(g_file, size_t(n))) {
    if (!f->gid.read) scan_ucx_conf(in, s, o.evidence, true, f);  // not yet read with UCX_TLS
    if (!check_roce(s, f->gid, mlx5, out, why) || !out->port) return;
  }
  if (listed && !node_accessible(s, node, out, why)) return void(out->port = 0);
  out->kind = rdma_runs(kind);
}

void describe_device(Text &t, const RdmaDevice &d, const char *node) {
  t.add(d.name[0] ? d.name : node);
  if (d.driver[0]) t.add(" (").add(d.driver).add(")");
  if (d.kind != Rdma::none) t.add(": port ").add((long long)d.port).add(" ACTIVE, ").add(node);
  else t.add(": ").add(d.why);
}

}  // namespace

UCXTLS_OWN_FRAME void probe_rdma(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  Text ev(f->rdma.evidence, o.evidence ? sizeof f->rdma.evidence : 0);
  Rdma best = Rdma::none;
  int usable = 0, unusable = 0;
  Failure fail;
  char first_usable[96] = {}, first_unusable[kEvidenceMax] = {};
  bool unopenable = false;  // a RoCE port UCX lists but cannot open
  auto check = [&](const char *node, bool listed) {  // false: the node is not there
    RdmaDevice dev;
    check_uverbs(in, s, node, listed, best != Rdma::none, o, f, &dev);
    if (dev.missing) return false;
    if (dev.passed) return true;
    if (dev.error && dev.why[0] && !fail.error) {  // a setting, not a read, could not be told
      fail.error = dev.error;
      Text(fail.text, o.evidence ? sizeof fail.text : 0).add(dev.name).add(": ").add(dev.why);
    }
    if (dev.error) {
      fail.note("read the RDMA device of", Path(nullptr, node), dev.error, o.evidence);
      return true;
    }
    if (dev.gda_fails && !f->rdma_gda_fails) {
      f->rdma_gda_fails = true;
      Text(f->rdma_gda_port, sizeof f->rdma_gda_port).add(dev.name).add(":1");
    }
    // The evidence names the device that decides {rdma}: the first of the best kind (a ConnectX
    // after a Broadcom function), and the first unusable one when none is usable.
    char *slot = dev.kind != Rdma::none ? (usable++, dev.kind > best ? first_usable : nullptr)
                                        : (unusable++ ? nullptr : first_unusable);
    if (slot && o.evidence) {
      Text t(slot, slot == first_usable ? sizeof first_usable : sizeof first_unusable);
      describe_device(t, dev, node);
    }
    if (dev.kind > best) best = dev.kind;
    unopenable |= dev.unopenable;
    return true;
  };
  // The usual node first: on a ConnectX node it answers alone. Then the rest, in the order the
  // directory lists them (a container may have been given uverbs3 alone).
  bool have0 = check("uverbs0", false);
  if (best != Rdma::mlx5 || o.exhaustive) {
    Path dir(s.sysroot, "/dev/infiniband");
    DirReader d(dir);
    while (const char *name = d.next()) {
      const char *num;
      if (!name_has_prefix(name, "uverbs", &num) || all_digits(num) < 0 || (have0 && !strcmp(num, "0"))) continue;
      check(name, true);
      if (best == Rdma::mlx5 && !o.exhaustive) break;
    }
    if (d.error && !absent(d.error)) fail.note("list", dir, d.error, o.evidence);
  }
  if (best == Rdma::none && fail.error) {
    f->rdma.error = fail.error;
    ev.add(fail.text);
    return;
  }
  if (best == Rdma::rc && fail.error) {  // a device we could not read may be a ConnectX
    f->rdma.error = fail.error;
    ev.add(first_usable).add("; ").add(fail.text);
    return;
  }
  f->rdma.value = best != Rdma::none ? Tri::yes : Tri::no;
  f->rdma_mlx5 = best == Rdma::mlx5;
  f->rdma_unopenable = best == Rdma::none && unopenable;
  if (best != Rdma::none) {
    ev.add(first_usable);
    if (usable > 1) ev.add(" and ").add((long long)(usable - 1)).add(" more");
  } else if (unusable) {
    ev.add(first_unusable);
    if (unusable > 1) ev.add("; ").add((long long)(unusable - 1)).add(" more device(s) not usable");
  } else {
    ev.add("no /dev/infiniband/uverbs* node");
  }
}


}  // namespace probes
}  // namespace ucxtls
