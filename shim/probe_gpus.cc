// The GPU families' kernel probes (docs/design.md, "Kernel probe"); visibility.h and
// device_rules.h judge what they find.
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "device_rules.h"
#include "probe_shared.h"

namespace ucxtls {
namespace probes {
namespace {

constexpr int kIdsKept = 64;  // ids kept per family; more devices are counted without ids
constexpr size_t kIdMax = 48;

struct DeviceTable {
  int n = 0;
  char id[kIdsKept][kIdMax] = {};
  const char *ids[kIdsKept] = {};
  bool ids_unknown = false;  // all-zero: the static table needs no constructor
  void reset() {
    n = 0;
    ids_unknown = false;
  }
  void add(const char *s) {
    if (n < kIdsKept) {
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
  DeviceIds view() const { return {n, ids_unknown ? nullptr : ids}; }
};

UCXTLS_FILE_BACKED DeviceTable g_devices;

void record_visible(FamilyFact *ff, int visible_n) {
  ff->visible_n = visible_n;
  ff->value = visible_n > 0 ? Tri::yes : Tri::no;
}

// The end of a listing probe: the devices and how many are visible, or "cannot tell" when a part
// failed that the answer could depend on. True when settled.
bool conclude_listing(FamilyFact *ff, int present, int visible_n, const Failure &fail, const char *a, const char *b,
            const char *c, const ProbeOptions &o, Text &ev) {
  ff->present = present;
  if (fail.error && !yes_despite_failure(visible_n, a, b, c)) {
    ff->error = fail.error;
    ev.init(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
    ev.add(fail.text);
    return false;
  }
  record_visible(ff, visible_n);
  ev.add("; ");
  return true;
}

// The control node (/dev/nvidiactl, /dev/kfd): absent, the answer is "no" (true).
bool control_node_absent(const Settings &s, const char *node, const ProbeOptions &o, FamilyFact *ff, Text &ev,
                         Failure *fail) {
  Path p(s.sysroot, node);
  int r = path_access(p, F_OK);
  if (absent(r)) {
    ff->value = Tri::no;
    ev.add("no ").add(node);
    return true;
  }
  if (r < 0) fail->note("check", p, r, o.evidence);
  return false;
}

}  // namespace

UCXTLS_OWN_FRAME void probe_cuda(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::cuda)];
  Text ev(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *cvd = in.get(kCudaVisible);
  Failure fail;
  if (control_node_absent(s, "/dev/nvidiactl", o, ff, ev, &fail)) return;
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
        if (!t.n && o.evidence) Text(first, sizeof first).add(bus).add(" /dev/nvidia").add((long long)gpu.minor);
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
  if (!conclude_listing(ff, t.n, cuda_visible_count(cvd, t.view()), fail, cvd, nullptr, nullptr, o, ev)) return;
  describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

UCXTLS_OWN_FRAME void probe_rocm(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::rocm)];
  Text ev(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *rocr = in.get(kRocrVisible), *hip = in.get(kHipVisible), *cvd = in.get(kCudaVisible);
  Failure fail;
  if (control_node_absent(s, "/dev/kfd", o, ff, ev, &fail)) return;
  int bound = o.exhaustive ? kAllDevices : rocm_enumeration_bound(rocr, hip, cvd);
  DeviceTable &t = g_devices;
  t.reset();
  // ROCr's GPU-<unique_id> names matter only to a list that has one.
  const bool want_id = o.exhaustive || lists_name_ids(rocr, hip, cvd);
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
      char id[21] = {};
      if (k.unique_id) rocr_gpu_id(k.unique_id, id);
      t.add(id);
    }
    // No topology at all: ROCr cannot enumerate a GPU either (a real "not there").
    if (d.error && !absent(d.error)) fail.note("list", dir, d.error, o.evidence);
    ff->partial = t.n >= bound && !o.exhaustive;
    ev.add((long long)t.n).add(ff->partial ? "+" : "").add(" KFD GPU node(s) with a render node");
  } else if (!fail.error) {
    ev.add("/dev/kfd");
  }
  if (!conclude_listing(ff, t.n, rocm_visible_count(rocr, hip, cvd, t.view()), fail, rocr, hip, cvd, o, ev)) return;
  describe_variable(ev, "ROCR_VISIBLE_DEVICES", rocr);
  ev.add(", ");
  if (hip || !cvd) describe_variable(ev, "HIP_VISIBLE_DEVICES", hip);
  else describe_variable(ev, "CUDA_VISIBLE_DEVICES", cvd);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial ? "+" : "").add(" visible");
}

// Intel: a render node whose PCI device is an Intel GPU (device_rules.h intel_gpu); the device's
// uevent says its driver, vendor and class in one read.
UCXTLS_OWN_FRAME void probe_ze(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  FamilyFact *ff = &f->family[int(Family::ze)];
  Text ev(ff->evidence, o.evidence ? sizeof ff->evidence : 0);
  const char *mask = in.get(kZeAffinity);
  bool hidden = ze_mask_hides_all(mask);
  if (hidden && !o.exhaustive) {
    ff->value = Tri::no;
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
    if (!intel_gpu_driver(pci.driver)) {
      if (!other[0] && o.evidence) Text(other, sizeof other).add(name).add(": ").add(pci.driver[0] ? pci.driver : "no driver");
      continue;
    }
    if (!intel_gpu(pci)) continue;
    if (!found && o.evidence) Text(first, sizeof first).add(name).add(" (").add(pci.driver).add(")");
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
  ev.add((long long)found).add(ff->partial ? "+" : "").add(" Intel GPU render node(s)");
  if (first[0]) ev.add(", first ").add(first);
  else if (other[0]) ev.add(", not ze: ").add(other);
  ev.add("; ");
  describe_variable(ev, "ZE_AFFINITY_MASK", mask);
  record_visible(ff, hidden ? 0 : found);
  ev.add(": ").add((long long)ff->visible_n).add(ff->partial && !hidden ? "+" : "").add(hidden ? " visible (names no device)" : " visible");
}

}  // namespace probes
}  // namespace ucxtls
