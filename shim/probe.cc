// The kernel probe (DESIGN §1 "Kernel probe"). Each function answers one fact, stopping as soon as
// the answer is known unless ProbeOptions::exhaustive asks for the whole picture.
#include "probe.h"

#include <string.h>

#include "sys.h"

namespace ucxtls {
namespace {

constexpr int kMaxDevices = 64;  // ids kept per family; more devices are counted without ids
constexpr size_t kIdMax = 48;

struct DeviceTable {
  int n = 0;
  char id[kMaxDevices][kIdMax];
  const char *ids[kMaxDevices];
  bool ids_known = true;
  void add(const char *s) {
    if (n < kMaxDevices) {
      size_t k = s ? strlen(s) : 0;
      if (k >= kIdMax) k = kIdMax - 1;
      if (k) memcpy(id[n], s, k);
      id[n][k] = '\0';
      ids[n] = k ? id[n] : nullptr;
    } else {
      ids_known = false;  // beyond the table: ids of the rest are unknown
    }
    n++;
  }
  DeviceIds view() const {
    DeviceIds d;
    d.n = n;
    d.ids = ids_known ? ids : nullptr;
    return d;
  }
};

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

void describe_variable(Text &t, const char *name, const char *value) {
  t.add(name);
  if (value) t.add("=").add_quoted(value, 40);
  else t.add(" unset");
}

void finish(FamilyFact *ff, int visible_n) {
  ff->visible_n = visible_n;
  ff->visible = visible_n > 0 ? Tri::yes : Tri::no;
}

// ---------------------------------------------------------------------------------------------
void probe_rdma(const Settings &s, const ProbeOptions &o, Facts *f) {
  Text ev;
  ev.init(f->rdma_evidence, o.evidence ? sizeof f->rdma_evidence : 0);
  char hca[64] = {};
  int hcas = 0;
  {
    DirReader d(Path(s.sysroot, "/sys/class/infiniband"));
    while (const char *name = d.next()) {
      if (!hcas) strncpy(hca, name, sizeof hca - 1);
      hcas++;
      if (!o.exhaustive) break;
    }
  }
  if (!hcas) {
    f->rdma = Tri::no;
    ev.add("no device in /sys/class/infiniband");
    return;
  }
  char node[64] = {};
  // The usual node first: one faccessat instead of open, getdents64 and close. Without it, the
  // listing (a container may be given uverbs3 alone).
  if (path_exists(Path(s.sysroot, "/dev/infiniband/uverbs0"))) {
    memcpy(node, "uverbs0", sizeof "uverbs0");
  } else {
    DirReader d(Path(s.sysroot, "/dev/infiniband"));
    while (const char *name = d.next()) {
      const char *rest;
      if (name_has_prefix(name, "uverbs", &rest)) {
        strncpy(node, name, sizeof node - 1);
        break;
      }
    }
  }
  ev.add("HCA ").add(hca);
  if (o.exhaustive && hcas > 1) ev.add(" and ").add((long long)(hcas - 1)).add(" more");
  if (!node[0]) {
    f->rdma = Tri::no;
    ev.add(" in sysfs but no /dev/infiniband/uverbs* node");
    return;
  }
  f->rdma = Tri::yes;
  ev.add(", /dev/infiniband/").add(node);
}

// ---------------------------------------------------------------------------------------------
// UCX reads these in this order (ucx.md §4); the library-relative file cannot be known before
// UCX is loaded. 1 MiB is far beyond any real ucx.conf: a bigger file is read that far only.
void probe_ucx_conf(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
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
    read_chunks(p, 1 << 20, [&](const char *c, size_t n) { scan.feed(c, n); });
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
void probe_cuda(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::cuda)];
  Text ev;
  ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *cvd = in.get(kCudaVisible);
  if (!path_exists(Path(s.sysroot, "/dev/nvidiactl"))) {
    ff->visible = Tri::no;
    ev.add("no /dev/nvidiactl");
    return;
  }
  int bound = o.exhaustive ? kAllDevices : cuda_enumeration_bound(cvd);
  DeviceTable t;
  char first[96] = {};
  if (bound > 0) {
    Path dir(s.sysroot, "/proc/driver/nvidia/gpus");
    DirReader d(dir);
    if (d.ok()) {
      while (t.n < bound) {
        const char *bus = d.next();
        if (!bus) break;
        char text[1024];
        Path info = dir;
        info.add("/").add(bus).add("/information");
        ssize_t n = read_small(info, text, sizeof text);
        NvInfo gpu;
        if (n <= 0 || !parse_nvidia_information(text, size_t(n), &gpu) || gpu.excluded) continue;
        Path node(s.sysroot, "/dev/nvidia");
        node.add_num(gpu.minor);
        if (!path_exists(node)) continue;  // a GPU this container was not given
        if (!t.n && o.evidence) {
          Text fi;
          fi.init(first, sizeof first);
          fi.add(bus).add(" /dev/nvidia").add((long long)gpu.minor);
        }
        t.add(gpu.uuid);
      }
      ff->partial = t.n >= bound && !o.exhaustive;
      ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" GPU(s) in /proc/driver/nvidia/gpus with a device node");
    } else {
      // No procfs view (masked /proc): the device nodes themselves.
      DirReader dev(Path(s.sysroot, "/dev"));
      while (t.n < bound) {
        const char *name = dev.next();
        if (!name) break;
        const char *rest;
        if (!name_has_prefix(name, "nvidia", &rest) || all_digits(rest) < 0) continue;
        if (!t.n && o.evidence) strncpy(first, name, 32);
        t.ids_known = false;
        t.add(nullptr);
      }
      ff->partial = t.n >= bound && !o.exhaustive;
      ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" /dev/nvidia<N> node(s) (no /proc/driver/nvidia/gpus)");
    }
    if (first[0]) ev.add(", first ").add(first);
  } else {
    ev.add("/dev/nvidiactl");
  }
  ff->present = t.n;
  finish(ff, cuda_visible_count(cvd, t.view()));
  ev.add("; ");
  describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

// ---------------------------------------------------------------------------------------------
void probe_rocm(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::rocm)];
  Text ev;
  ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *rocr = in.get(kRocrVisible), *hip = in.get(kHipVisible), *cvd = in.get(kCudaVisible);
  if (!path_exists(Path(s.sysroot, "/dev/kfd"))) {
    ff->visible = Tri::no;
    ev.add("no /dev/kfd");
    return;
  }
  int bound = o.exhaustive ? kAllDevices : rocm_enumeration_bound(rocr, hip, cvd);
  DeviceTable t;
  if (bound > 0) {
    Path dir(s.sysroot, "/sys/class/kfd/kfd/topology/nodes");
    DirReader d(dir);
    while (t.n < bound) {
      const char *node = d.next();
      if (!node) break;
      if (all_digits(node) < 0) continue;
      char text[4096];
      Path props = dir;
      props.add("/").add(node).add("/properties");
      ssize_t n = read_small(props, text, sizeof text);
      KfdNode k;
      if (n <= 0 || !parse_kfd_properties(text, size_t(n), &k) || !k.is_gpu()) continue;
      Path render(s.sysroot, "/dev/dri/renderD");
      render.add_num(long(k.drm_render_minor));
      if (!path_exists(render)) continue;  // a GPU this container was not given
      char id[24] = {};
      if (k.unique_id) {  // ROCr names a GPU "GPU-" + 16 hex digits of its unique_id
        static const char hex[] = "0123456789abcdef";
        memcpy(id, "GPU-", 4);
        for (int i = 0; i < 16; i++) id[4 + i] = hex[(k.unique_id >> (60 - 4 * i)) & 0xf];
      }
      t.add(id);
    }
    ff->partial = t.n >= bound && !o.exhaustive;
    ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" KFD GPU node(s) with a render node");
  } else {
    ev.add("/dev/kfd");
  }
  ff->present = t.n;
  finish(ff, rocm_visible_count(rocr, hip, cvd, t.view()));
  ev.add("; ");
  describe_variable(ev, "ROCR_VISIBLE_DEVICES", rocr);
  ev.add(", ");
  if (hip || !cvd) describe_variable(ev, "HIP_VISIBLE_DEVICES", hip);
  else describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

// ---------------------------------------------------------------------------------------------
void probe_ze(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
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
  while (const char *name = d.next()) {
    const char *num;
    if (!name_has_prefix(name, "renderD", &num) || all_digits(num) < 0) continue;
    // Cheapest test first: the device node this process would open.
    if (!path_exists(Path(s.sysroot, "/dev/dri/").add(name))) continue;
    Path dev = dir;
    dev.add("/").add(name).add("/device");
    char link[256];
    if (read_link(Path(dev).add("/driver"), link, sizeof link) < 0) continue;
    const char *driver = strrchr(link, '/');
    driver = driver ? driver + 1 : link;
    if (strcmp(driver, "i915") && strcmp(driver, "xe")) {
      if (!other[0] && o.evidence) {
        Text ot;
        ot.init(other, sizeof other);
        ot.add(name).add(": ").add(driver);
      }
      continue;
    }
    char text[64];
    unsigned long vendor = 0, cls = 0;
    ssize_t n = read_small(Path(dev).add("/vendor"), text, sizeof text);
    if (n <= 0 || !parse_sysfs_hex(text, size_t(n), &vendor) || vendor != 0x8086) continue;
    n = read_small(Path(dev).add("/class"), text, sizeof text);
    if (n <= 0 || !parse_sysfs_hex(text, size_t(n), &cls) || (cls >> 16) != 0x03) continue;
    if (!found && o.evidence) {
      Text fi;
      fi.init(first, sizeof first);
      fi.add(name).add(" (").add(driver).add(")");
    }
    found++;
    if (!o.exhaustive) break;
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

void run_ladder(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f, Decision *d) {
  // A sysroot that is not a directory would quietly replay an empty machine (say, one left
  // exported in a shell): checked once, just before the first probe, so the paths that probe
  // nothing (UCX_TLS set, disabled) stay free of syscalls.
  Settings checked = s;
  bool sysroot_checked = !s.sysroot;
  d->quiet = !o.evidence;  // one switch: no evidence, no reasons (but an error's line)
  // Each pass fills one fact; there are only so many facts, so the loop is bounded.
  for (int pass = 0; pass < 16; pass++) {
    decide(in, checked, *f, d);
    if (d->action != Action::need) return;
    if (!sysroot_checked) {
      sysroot_checked = true;
      if (!path_exists(Path(nullptr, checked.sysroot).add("/."))) {  // "/." fails on a file
        mark_invalid(&checked, kSysroot, "is not a directory");
        continue;
      }
    }
    probe(d->need, in, checked, o, f);
  }
}

}  // namespace ucxtls
