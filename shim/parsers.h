// Parsers for the small files the kernel probe reads: the whole file's text in, fields out.
// Pure (see core.h); each is fuzzed (tests/fuzz).
#pragma once

#include <stddef.h>

namespace ucxtls {

// /proc/driver/nvidia/gpus/<bus>/information: "Device Minor:", "GPU UUID:", "GPU Excluded:".
struct NvInfo {
  bool has_minor = false;
  long minor = -1;
  char uuid[64] = {};
  bool excluded = false;
};
bool parse_nvidia_information(const char *text, size_t len, NvInfo *out);

// /sys/class/kfd/kfd/topology/nodes/<n>/properties: "name value" lines.
struct KfdNode {
  long long simd_count = 0;
  long long gfx_target_version = 0;
  long long drm_render_minor = -1;
  unsigned long long unique_id = 0;
  bool is_gpu() const { return simd_count > 0 && gfx_target_version > 0 && drm_render_minor >= 0; }
};
// Stops at a simd_count of 0 or less (a CPU node, whose other fields do not matter), and once the
// fields is_gpu() reads are known when the unique_id is not wanted (no GPU- entry to match).
bool parse_kfd_properties(const char *text, size_t len, KfdNode *out, bool want_id = true);

// A sysfs hex attribute such as "0x8086\n" or "0x030000\n".
bool parse_sysfs_hex(const char *text, size_t len, unsigned long *out);

// A PCI device's sysfs `uevent` (drivers/pci/pci-driver.c pci_uevent, and the driver core's
// DRIVER= line when a driver is bound): driver, vendor and class in one read.
//   DRIVER=i915 / PCI_CLASS=38000 / PCI_ID=8086:0BD5 / ...
struct PciUevent {
  char driver[32] = {};          // "" when no driver is bound
  bool has_class = false, has_id = false;
  unsigned long pci_class = 0;   // 24 bits: class, subclass, prog-if
  unsigned long vendor = 0, device = 0;
};
bool parse_pci_uevent(const char *text, size_t len, PciUevent *out);

// An RDMA device's sysfs node_type ("1: CA") or port state ("4: ACTIVE"): the leading number.
long parse_sysfs_enum(const char *text, size_t len);

// /proc/self/stat (proc(5)): the number of threads, field 20, counted after the command name's
// closing parenthesis (the name may hold blanks and parentheses). -1 when it is not there.
long parse_stat_threads(const char *text, size_t len);

// The auxiliary vector (getauxval(3), /proc/self/auxv): (type, value) word pairs up to AT_NULL.
// AT_SECURE's value as 1 or 0; -1 when it cannot be told: no AT_SECURE, no AT_NULL within
// `words`, or a type no kernel writes (over 255: the words are not an auxiliary vector).
int auxv_secure(const unsigned long *v, size_t words);

}  // namespace ucxtls
