// The kernel probe (docs/design.md, "Kernel probe"). Each function answers one fact, stopping as
// soon as the answer is known unless ProbeOptions::exhaustive asks for the whole picture.
//
// A failed probe is not a "no": only "not there" (sys.h absent()) is a negative answer. Any other
// failure (EMFILE with a full fd table, ENOMEM, EIO, EACCES, a listing cut short) leaves the fact
// unknown with its error, unless the answer is already certain without the part that failed.
//
// Stack: the constructor runs on the host's stack before main, so file contents go into one
// static buffer and the device table is static (no threads run the probe).
#include "probe.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "sys.h"

namespace ucxtls {
namespace {

constexpr int kMaxDevices = 64;  // ids kept per family; more devices are counted without ids
constexpr size_t kIdMax = 48;

struct DeviceTable {
  int n = 0;
  char id[kMaxDevices][kIdMax] = {};
  const char *ids[kMaxDevices] = {};
  bool ids_unknown = false;  // all-zero: the static table needs no constructor
  void reset() {
    n = 0;
    ids_unknown = false;
  }
  void add(const char *s) {
    if (n < kMaxDevices) {
      size_t k = s ? strlen(s) : 0;
      if (k >= kIdMax) k = kIdMax - 1;
      if (k) memcpy(id[n], s, k);
      id[n][k] = '\0';
      ids[n] = k ? id[n] : nullptr;
    } else {
      ids_unknown = true;  // beyond the table: ids of the rest are unknown
    }
    n++;
  }
  DeviceIds view() const {
    DeviceIds d;
    d.n = n;
    d.ids = ids_unknown ? nullptr : ids;
    return d;
  }
};

// Each probe keeps its own stack frame (its directory buffer, its paths), entered only when its
// fact is needed: inlined into the probe loop (link-time optimisation would), every path of the
// constructor, the ones that probe nothing included, would carry the largest frame of them all.
#define UCXTLS_OWN_FRAME __attribute__((noinline))

// Static scratch in a file-backed section (sys.h UCXTLS_FILE_BACKED): no constructor runs, and the
// loader maps it with the library's data instead of one more mmap for a large .bss.
UCXTLS_FILE_BACKED DeviceTable g_devices;
UCXTLS_FILE_BACKED char g_file[4096];  // the contents of the one small file being parsed

// Reads a small file into g_file: its length, or -errno.
ssize_t read_file(const Path &p) { return read_small(p, g_file, sizeof g_file); }

bool name_has_prefix(const char *name, const char *prefix, const char **rest) {
  size_t k = strlen(prefix);
  if (strncmp(name, prefix, k)) return false;
  *rest = name + k;
  return true;
}

// "123" -> 123; anything else -> -1.
long all_digits(const char *s) {
  long v;
  size_t n = strlen(s);
  if (!n || n > 9) return -1;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return -1;
  return parse_long(s, n, &v) ? v : -1;
}

const char *basename_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void describe_variable(Text &t, const char *name, const char *value) {
  t.add(name);
  if (value) t.add("=").add_quoted(value, 40);
  else t.add(" unset");
}

// Why a probe could not finish, for the evidence: "EMFILE: could not read PATH" (the error
// first: a long sysroot may cut the path short).
void describe_failure(Text &t, const char *what, const Path &p, long err) {
  t.add(errno_name(err)).add(": could not ").add(what).add(" ").add(p.buf);
}

void finish(FamilyFact *ff, int visible_n) {
  ff->visible_n = visible_n;
  ff->visible = visible_n > 0 ? Tri::yes : Tri::no;
}

// A probe that failed part-way still answers when the answer cannot depend on what it missed: some
// device visible, and the visibility list made of ordinals only (a longer device list can only
// make more of them valid; a GPU- prefix could become ambiguous).
// Does a visibility list name a device by id ("GPU-<uuid or unique_id prefix>")?
bool names_ids(const char *a, const char *b, const char *c) {
  const char *lists[] = {a, b, c};
  for (const char *l : lists)
    if (l && strstr(l, "GPU-")) return true;
  return false;
}

bool yes_despite_failure(int visible_n, const char *a, const char *b, const char *c) {
  return visible_n > 0 && !names_ids(a, b, c);
}

// Records a failure: the first error is kept, with its evidence.
struct Failure {
  int error = 0;
  char text[kEvidenceMax] = {};
  void note(const char *what, const Path &p, long err, bool evidence) {
    if (error) return;
    error = int(err);
    if (evidence) {
      Text t;
      t.init(text, sizeof text);
      describe_failure(t, what, p, err);
    }
  }
};

// The end of a listing probe (CUDA, ROCm): the devices found and how many are visible, or, when a
// part failed and the answer could depend on it, "cannot tell" with the failure as the evidence.
// True when the fact is settled (the caller adds the variables to the evidence, after "; ").
bool settle(FamilyFact *ff, int present, int visible_n, const Failure &fail, const char *a, const char *b,
            const char *c, const ProbeOptions &o, Text &ev) {
  ff->present = present;
  if (fail.error && !yes_despite_failure(visible_n, a, b, c)) {
    ff->error = fail.error;
    ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
    ev.add(fail.text);
    return false;
  }
  finish(ff, visible_n);
  ev.add("; ");
  return true;
}

// ---------------------------------------------------------------------------------------------
// RDMA: is there a device UCX's rc transport runs on? Checked from the device nodes this process
// has (a container may be given one HCA of eight), as UCX checks them (uct/ib/base/ib_md.c,
// ib_device.c): the node readable and writable, an InfiniBand-transport device (node_type 1: CA;
// iWARP is 4: RNIC, EFA 7: unspecified), a port in state 4: ACTIVE. A ConnectX (mlx5_core) runs
// rc_x, dc_x and dc as well; other devices (Broadcom, Intel RoCE, rxe, Omni-Path) rc_verbs alone.

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
  long states[6] = {};  // how many ports are in each state (index 0: an unknown state)
  states[port1 >= 0 && port1 <= 5 ? port1 : 0]++;
  long seen = 1;
  for (long port = 2; port1 && port <= kPortMax; port++) {
    long v = port_state(s, out->name, port);
    if (v < 0) return void(out->error = int(v));
    if (v == 0) break;  // no such port: the last one was the device's last
    if (v == 4) return void(out->port = port);
    states[v <= 5 ? v : 0]++;
    seen++;
  }
  if (states[1] == seen) why.add("every port is DOWN (no link)");
  else if (states[2]) why.add("no port is ACTIVE: a port is INIT (no subnet manager?)");
  else why.add("no port is ACTIVE");
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
// before node_type (a port DOWN is the common "no", and mlx5_core is always a CA); the node's own
// access last, except where its presence is not yet known (uverbs0, tried before any listing:
// on a node without RDMA that one failed call is the whole probe).
void check_uverbs(const Settings &s, const char *node, bool listed, bool found_rc, const ProbeOptions &o,
                  RdmaDevice *out) {
  Text why;
  why.init(out->why, sizeof out->why);
  if (!listed && !node_accessible(s, node, out, why)) return;
  // The driver: EFA is ruled out without another read; mlx5_core is always an InfiniBand CA.
  Path p(s.sysroot, "/sys/class/infiniband_verbs/");
  p.add(node).add("/device/driver");
  ssize_t n = read_link(p, g_file, sizeof g_file);
  if (n < 0 && !absent(n)) return void(out->error = int(n));
  Text drv;
  drv.init(out->driver, sizeof out->driver);
  drv.add(n > 0 ? basename_of(g_file) : "");
  if (!strcmp(out->driver, "efa")) return void(why.add("EFA has no RC transport (UCX runs srd/ud there)"));
  const bool mlx5 = !strcmp(out->driver, "mlx5_core");
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
  if (st == 4) out->port = 1;
  else find_active_port(s, st, out, why);
  if (!out->port || out->error) return;
  if (!mlx5) {
    p = Path(s.sysroot, "/sys/class/infiniband/");
    p.add(out->name).add("/node_type");
    n = read_file(p);
    if (n < 0 && !absent(n)) return void(out->error = int(n));
    long type = n > 0 ? parse_sysfs_enum(g_file, size_t(n)) : -1;
    const char *not_ca = type == 4   ? "iWARP (node_type 4: RNIC): UCX does not run on iWARP"
                         : type == 7 ? "node_type 7: unspecified (as EFA): no RC transport"
                         : type != 1 ? "node_type is not 1: CA"
                                     : nullptr;
    if (not_ca) return void((out->port = 0, why.add(not_ca)));
  }
  if (listed && !node_accessible(s, node, out, why)) return void(out->port = 0);
  out->kind = mlx5 ? Rdma::mlx5 : Rdma::rc;
}

void describe_device(Text &t, const RdmaDevice &d, const char *node) {
  t.add(d.name[0] ? d.name : node);
  if (d.driver[0]) t.add(" (").add(d.driver).add(")");
  if (d.kind != Rdma::none) t.add(": port ").add((long long)d.port).add(" ACTIVE, ").add(node);
  else t.add(": ").add(d.why);
}

UCXTLS_OWN_FRAME void probe_rdma(const Settings &s, const ProbeOptions &o, Facts *f) {
  Text ev;
  ev.init(f->rdma_evidence, o.evidence ? sizeof f->rdma_evidence : 0);
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
    char *slot = dev.kind != Rdma::none ? (usable++ ? nullptr : first_usable) : (unusable++ ? nullptr : first_unusable);
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
    f->rdma_error = fail.error;
    ev.add(fail.text);
    return;
  }
  if (best == Rdma::rc && fail.error) {  // a device we could not read may be a ConnectX
    f->rdma_error = fail.error;
    ev.add(first_usable).add("; ").add(fail.text);
    return;
  }
  f->rdma = best != Rdma::none ? Tri::yes : Tri::no;
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

// ---------------------------------------------------------------------------------------------
// UCX reads these in this order (UCX's src/ucs/config/parser.c; docs/design.md, "Facts and
// sources"); the library-relative file cannot be known before UCX is loaded. 1 MiB is far beyond any real ucx.conf: a bigger file is read that far only.
UCXTLS_OWN_FRAME void probe_ucx_conf(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  Text ev;
  ev.init(f->ucx_conf_evidence, o.evidence ? sizeof f->ucx_conf_evidence : 0);
  const char *home = in.get(kHome), *dir = in.get(kUcxConfigDir);
  for (int i = 0; i < 4; i++) {
    Path p(i == 0 ? s.sysroot : nullptr, i == 0 ? "/etc/ucx/ucx.conf" : i == 3 ? "./ucx.conf" : "");
    const char *base = i == 1 ? home : i == 2 ? dir : nullptr;
    if (i == 1 || i == 2) {
      if (!base || !base[0]) continue;
      p.add(base).add("/ucx.conf");
    }
    ConfScan scan;
    int r = read_chunks(p, 1 << 20, [&](const char *c, size_t n) { scan.feed(c, n); });
    // A file UCX cannot read either (EACCES) is as good as absent; anything else is "cannot tell".
    if (r < 0 && !absent(r) && r != -EACCES) {
      f->ucx_conf_error = r;
      describe_failure(ev, "read", p, r);
      return;
    }
    if (scan.found) {
      f->ucx_conf = Tri::yes;
      ev.add(p.buf);
      return;
    }
  }
  f->ucx_conf = Tri::no;
  ev.add("no UCX_TLS line in any ucx.conf");
}

// ---------------------------------------------------------------------------------------------
UCXTLS_OWN_FRAME void probe_cuda(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::cuda)];
  Text ev;
  ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *cvd = in.get(kCudaVisible);
  Path ctl(s.sysroot, "/dev/nvidiactl");
  int r = path_access(ctl, F_OK);
  if (absent(r)) {
    ff->visible = Tri::no;
    ev.add("no /dev/nvidiactl");
    return;
  }
  Failure fail;
  if (r < 0) fail.note("check", ctl, r, o.evidence);
  int bound = o.exhaustive ? kAllDevices : cuda_enumeration_bound(cvd);
  DeviceTable &t = g_devices;
  t.reset();
  char first[96] = {};
  if (bound > 0 && !fail.error) {
    Path dir(s.sysroot, "/proc/driver/nvidia/gpus");
    DirReader d(dir);
    if (!absent(d.error)) {
      while (t.n < bound) {
        const char *bus = d.next();
        if (!bus) break;
        Path info = dir;
        info.add("/").add(bus).add("/information");
        ssize_t n = read_file(info);
        if (n < 0 && !absent(n)) fail.note("read", info, n, o.evidence);
        NvInfo gpu;
        if (n <= 0 || !parse_nvidia_information(g_file, size_t(n), &gpu) || gpu.excluded) continue;
        Path node(s.sysroot, "/dev/nvidia");
        node.add_num(gpu.minor);
        int a = path_access(node, F_OK);
        if (a < 0 && !absent(a)) fail.note("check", node, a, o.evidence);
        if (a < 0) continue;  // a GPU this container was not given
        if (!t.n && o.evidence) {
          Text fi;
          fi.init(first, sizeof first);
          fi.add(bus).add(" /dev/nvidia").add((long long)gpu.minor);
        }
        t.add(gpu.uuid);
      }
      if (d.error) fail.note("list", dir, d.error, o.evidence);
      ff->partial = t.n >= bound && !o.exhaustive;
      ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" GPU(s) in /proc/driver/nvidia/gpus with a device node");
    } else {
      // No procfs view (masked /proc): the device nodes themselves.
      Path devdir(s.sysroot, "/dev");
      DirReader dev(devdir);
      while (t.n < bound) {
        const char *name = dev.next();
        if (!name) break;
        const char *rest;
        if (!name_has_prefix(name, "nvidia", &rest) || all_digits(rest) < 0) continue;
        if (!t.n && o.evidence) strncpy(first, name, 32);
        t.ids_unknown = true;
        t.add(nullptr);
      }
      if (dev.error) fail.note("list", devdir, dev.error, o.evidence);
      ff->partial = t.n >= bound && !o.exhaustive;
      ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" /dev/nvidia<N> node(s) (no /proc/driver/nvidia/gpus)");
    }
    if (first[0]) ev.add(", first ").add(first);
  } else if (!fail.error) {
    ev.add("/dev/nvidiactl");
  }
  if (!settle(ff, t.n, cuda_visible_count(cvd, t.view()), fail, cvd, nullptr, nullptr, o, ev)) return;
  describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

// ---------------------------------------------------------------------------------------------
UCXTLS_OWN_FRAME void probe_rocm(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::rocm)];
  Text ev;
  ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *rocr = in.get(kRocrVisible), *hip = in.get(kHipVisible), *cvd = in.get(kCudaVisible);
  Path kfd(s.sysroot, "/dev/kfd");
  int r = path_access(kfd, F_OK);
  if (absent(r)) {
    ff->visible = Tri::no;
    ev.add("no /dev/kfd");
    return;
  }
  Failure fail;
  if (r < 0) fail.note("check", kfd, r, o.evidence);
  int bound = o.exhaustive ? kAllDevices : rocm_enumeration_bound(rocr, hip, cvd);
  DeviceTable &t = g_devices;
  t.reset();
  // ROCr's GPU-<unique_id> names matter only to a list that has one.
  const bool want_id = o.exhaustive || names_ids(rocr, hip, cvd);
  if (bound > 0 && !fail.error) {
    Path dir(s.sysroot, "/sys/class/kfd/kfd/topology/nodes");
    DirReader d(dir);
    while (t.n < bound) {
      const char *node = d.next();
      if (!node) break;
      if (all_digits(node) < 0) continue;
      Path props = dir;
      props.add("/").add(node).add("/properties");
      ssize_t n = read_file(props);
      if (n < 0 && !absent(n)) fail.note("read", props, n, o.evidence);
      KfdNode k;
      if (n <= 0 || !parse_kfd_properties(g_file, size_t(n), &k, want_id) || !k.is_gpu()) continue;
      Path render(s.sysroot, "/dev/dri/renderD");
      render.add_num(long(k.drm_render_minor));
      int a = path_access(render, F_OK);
      if (a < 0 && !absent(a)) fail.note("check", render, a, o.evidence);
      if (a < 0) continue;  // a GPU this container was not given
      char id[24] = {};
      if (k.unique_id) {  // ROCr names a GPU "GPU-" + 16 hex digits of its unique_id
        static const char hex[] = "0123456789abcdef";
        memcpy(id, "GPU-", 4);
        for (int i = 0; i < 16; i++) id[4 + i] = hex[(k.unique_id >> (60 - 4 * i)) & 0xf];
      }
      t.add(id);
    }
    // No topology at all: ROCr cannot enumerate a GPU either (a real "not there").
    if (d.error && !absent(d.error)) fail.note("list", dir, d.error, o.evidence);
    ff->partial = t.n >= bound && !o.exhaustive;
    ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" KFD GPU node(s) with a render node");
  } else if (!fail.error) {
    ev.add("/dev/kfd");
  }
  if (!settle(ff, t.n, rocm_visible_count(rocr, hip, cvd, t.view()), fail, rocr, hip, cvd, o, ev)) return;
  describe_variable(ev, "ROCR_VISIBLE_DEVICES", rocr);
  ev.add(", ");
  if (hip || !cvd) describe_variable(ev, "HIP_VISIBLE_DEVICES", hip);
  else describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

// ---------------------------------------------------------------------------------------------
// Intel: a render node whose PCI device is bound to i915 or xe, vendor 0x8086, display class.
// The device's uevent says all three in one read.
UCXTLS_OWN_FRAME void probe_ze(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::ze)];
  Text ev;
  ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *mask = in.get(kZeAffinity);
  bool hidden = ze_mask_hides_all(mask);
  if (hidden && !o.exhaustive) {
    ff->visible = Tri::no;
    describe_variable(ev, "ZE_AFFINITY_MASK", mask);
    ev.add(" names no device");
    return;
  }
  Path dir(s.sysroot, "/sys/class/drm");
  DirReader d(dir);
  char first[64] = {}, other[64] = {};
  int found = 0;
  Failure fail;
  while (const char *name = d.next()) {
    const char *num;
    if (!name_has_prefix(name, "renderD", &num) || all_digits(num) < 0) continue;
    // Cheapest test first: the device node this process would open.
    Path node(s.sysroot, "/dev/dri/");
    node.add(name);
    int a = path_access(node, F_OK);
    if (a < 0 && !absent(a)) fail.note("check", node, a, o.evidence);
    if (a < 0) continue;
    Path uevent = dir;
    uevent.add("/").add(name).add("/device/uevent");
    ssize_t n = read_file(uevent);
    if (n < 0 && !absent(n)) fail.note("read", uevent, n, o.evidence);
    PciUevent pci;
    if (n <= 0 || !parse_pci_uevent(g_file, size_t(n), &pci)) continue;
    if (strcmp(pci.driver, "i915") && strcmp(pci.driver, "xe")) {
      if (!other[0] && o.evidence) {
        Text ot;
        ot.init(other, sizeof other);
        ot.add(name).add(": ").add(pci.driver[0] ? pci.driver : "no driver");
      }
      continue;
    }
    if (!pci.has_id || pci.vendor != 0x8086 || !pci.has_class || (pci.pci_class >> 16) != 0x03) continue;
    if (!found && o.evidence) {
      Text fi;
      fi.init(first, sizeof first);
      fi.add(name).add(" (").add(pci.driver).add(")");
    }
    found++;
    if (!o.exhaustive) break;
  }
  if (!absent(d.error) && d.error) fail.note("list", dir, d.error, o.evidence);
  if (fail.error && !found) {  // one Intel GPU found is an answer; none found is not, here
    ff->error = fail.error;
    ev.add(fail.text);
    return;
  }
  ff->present = found;
  ff->partial = found && !o.exhaustive;
  ev.add((long long)found).add(ff->partial ? "+" : "").add(" Intel GPU render node(s) (i915/xe)");
  if (first[0]) ev.add(", first ").add(first);
  else if (other[0]) ev.add(", not ze: ").add(other);
  ev.add("; ");
  describe_variable(ev, "ZE_AFFINITY_MASK", mask);
  finish(ff, hidden ? 0 : found);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial && !hidden ? "+" : "").add(hidden ? " visible (names no device)" : " visible");
}

}  // namespace

void probe(Need need, const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  switch (need) {
    case Need::rdma: return probe_rdma(s, o, f);
    case Need::ucx_conf: return probe_ucx_conf(in, s, o, f);
    case Need::driver: return probe_driver(in, s, &f->driver);
    case Need::cuda: return probe_cuda(in, s, o, f);
    case Need::rocm: return probe_rocm(in, s, o, f);
    case Need::ze: return probe_ze(in, s, o, f);
    default: return;
  }
}

}  // namespace ucxtls
