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
  char why[96] = {};       // why it is not usable, in a user's words
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
  char first_usable[96] = {}, first_unusable[96] = {};
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
      t.init(slot, sizeof first_usable);
      describe_device(t, dev, node);
    }
    if (dev.kind > best) best = dev.kind;
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
