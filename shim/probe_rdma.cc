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

// Is there a device UCX's rc transport runs on? Checked from the device nodes this process has (a
// container may be given one HCA of eight): the node readable and writable, and the facts
// device_rules.h judges (the PCI driver, the ports' states, node_type).

struct RdmaDevice {
  Rdma kind = Rdma::none;  // what it runs; none: not usable, with `why`
  int error = 0;           // -errno: could not tell
  char name[64] = {};      // the IB device name (ibdev)
  char driver[32] = {};    // the PCI driver, "" for a virtual device (rxe, siw)
  long port = 0;           // the ACTIVE port
  char why[160] = {};      // why it is not usable, in a user's words
  bool unopenable = false;  // a RoCE port UCX lists but cannot open (RocePort::no_ndev_here)
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

// The ports after port 1, until one is ACTIVE: out->port, or the reason none is. A CA's ports are
// numbered 1 to its port count (the kernel's rdma_end_port), so the first missing state file ends
// them: on the usual one-port function that is one failed open, not a listing.
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

// Is the node readable and writable, as UCX's uct_ib_device_is_accessible checks it? False (with
// out->missing, out->why or out->error) when not.
bool node_accessible(const Settings &s, const char *node, RdmaDevice *out, Text &why) {
  Path p(s.sysroot, "/dev/infiniband/");
  p.add(node);
  int r = path_access(p, R_OK | W_OK);
  if (absent(r)) return out->missing = true, false;
  if (r == -EACCES || r == -EPERM) return why.add(node).add(" is not readable and writable here (UCX skips it)"), false;
  if (r < 0) return out->error = r, false;
  return true;
}

// A RoCE port (link_layer Ethernet), as UCX picks its GID (openucx/ucx v1.22.0,
// src/uct/ib/base/): the port check that lists a port queries GID 0 (ib_device.c:774-781 with
// UCX_IB_GID_INDEX=auto, :840-850), and a GID whose interface id is zero is invalid
// (:913-923, :1412-1415), so the port is not listed and UCX runs without it. A listed port's
// interface selects its GID (ib_iface.c:1428-1452, ib_device.c:1130-1209): every valid GID of
// the table, by RoCE v2 then v1 and IPv4 then IPv6 (roce_prio, :1138-1145: every type and family
// the kernel shows has a row, so neither rules a GID out), whose address handle can be created
// (uct_ib_device_test_roce_gid_index, :954-980). With none, it returns the last entry's status
// (:1170-1172, :1200-1209): an empty entry ends every real table, so UCS_ERR_INVALID_ADDR, and
// uct_iface_open fails "Address not valid", which fails the whole worker (src/ucp/core/
// ucp_worker.c:1190-1194). An address handle needs the GID's net device in the caller's network
// namespace under MLNX_OFED's ib_core (ib_resolve_eth_dmac: rdma_check_gid_user_access); a
// container given the host's mlx5_bond_0 without its bond is that case. So: GID 0 first (zero or
// missing: not listed, out->port = 0), then each valid GID's gid_attrs/ndevs/N until one names
// a device of /sys/class/net (sysfs shows the namespace's own). An empty entry's ndevs read fails
// (ENODATA; a fixture leaves the file out); the gids files end the table.
void check_roce(const Settings &s, RdmaDevice *out, Text &why) {
  RocePort verdict = RocePort::no_ndev_here;
  char ndev[16] = {};  // the first net device a GID names, for the evidence
  for (long k = 0; k < kGidMax; k++) {
    Path p(s.sysroot, "/sys/class/infiniband/");
    p.add(out->name).add("/ports/").add_num(out->port).add("/gids/").add_num(k);
    ssize_t n = read_file(p);
    if (n < 0 && !absent(n)) return void(out->error = int(n));
    if (n < 0 || parse_gid(g_file, size_t(n)) != Gid::valid) {
      if (k == 0) verdict = RocePort::no_gid0;
      if (k == 0 || n < 0) break;
      continue;
    }
    p = Path(s.sysroot, "/sys/class/infiniband/");
    p.add(out->name).add("/ports/").add_num(out->port).add("/gid_attrs/ndevs/").add_num(k);
    n = read_file(p);
    if (n < 0 && !absent(n) && n != -ENODATA && n != -EINVAL && n != -ENODEV) return void(out->error = int(n));
    const size_t len = n > 0 ? net_device_name(g_file, size_t(n)) : 0;
    if (!len) continue;
    if (!ndev[0]) memcpy(ndev, g_file, len);
    Path net(s.sysroot, "/sys/class/net/");
    net.add(g_file, len);
    const int r = path_access(net, F_OK);
    if (r == 0) return;  // usable
    if (!absent(r)) return void(out->error = r);
  }
  why.add("RoCE port ").add((long long)out->port).add(": ");
  if (verdict == RocePort::no_ndev_here) why.add(ndev[0] ? "its GIDs' net device " : "no GID names a net device ").add(ndev).add(ndev[0] ? " is " : ", ");
  why.add(roce_port_problem(verdict));
  out->unopenable = verdict == RocePort::no_ndev_here;
  out->port = 0;
}

// One path buffer, rebuilt for each file: the constructor runs on the host's stack. The reads go
// cheapest disqualifier first, so that a node of many devices pays little for each one that does
// not qualify: the driver link alone rules out EFA (1 system call) and, once an rc device was
// found (found_rc), every device but a ConnectX, which alone could change the answer; the ports
// before node_type (a port DOWN is the common "no", and a ConnectX is always a CA); the node's own
// access last, except where its presence is not yet known (uverbs0, tried before any listing:
// on a node without RDMA that one failed call is the whole probe).
void check_uverbs(const Settings &s, const char *node, bool listed, bool found_rc, const ProbeOptions &o,
                  RdmaDevice *out) {
  Text why;
  why.init(out->why, sizeof out->why);
  if (!listed && !node_accessible(s, node, out, why)) return;
  // The driver: it alone may rule the device out (device_rules.h rdma_driver).
  Path p(s.sysroot, "/sys/class/infiniband_verbs/");
  p.add(node).add("/device/driver");
  ssize_t n = read_link(p, g_file, sizeof g_file);
  if (n < 0 && !absent(n)) return void(out->error = int(n));
  Text drv;
  drv.init(out->driver, sizeof out->driver);
  drv.add(n > 0 ? basename_of(g_file) : "");
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
  // A port in state ACTIVE: port 1 first (most devices have one port), then the others.
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
    check_roce(s, out, why);
    if (!out->port || out->error) return;
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

UCXTLS_OWN_FRAME void probe_rdma(const Settings &s, const ProbeOptions &o, Facts *f) {
  Text ev;
  ev.init(f->rdma.evidence, o.evidence ? sizeof f->rdma.evidence : 0);
  Rdma best = Rdma::none;
  int usable = 0, unusable = 0;
  Failure fail;
  char first_usable[96] = {}, first_unusable[kEvidenceMax] = {};
  bool unopenable = false;  // a RoCE port UCX lists but cannot open
  auto check = [&](const char *node, bool listed) {  // false: the node is not there
    RdmaDevice dev;
    check_uverbs(s, node, listed, best != Rdma::none, o, &dev);
    if (dev.missing) return false;
    if (dev.passed) return true;
    if (dev.error) {
      fail.note("read the RDMA device of", Path(nullptr, node), dev.error, o.evidence);
      return true;
    }
    // The evidence names the device that decides {rdma}: the first of the best kind (a ConnectX
    // after a Broadcom function), and the first unusable one when none is usable.
    char *slot = dev.kind != Rdma::none ? (usable++, dev.kind > best ? first_usable : nullptr)
                                        : (unusable++ ? nullptr : first_unusable);
    if (slot && o.evidence) {
      Text t;
      t.init(slot, slot == first_usable ? sizeof first_usable : sizeof first_unusable);
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
