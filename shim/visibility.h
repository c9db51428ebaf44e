// The visibility variables, by each runtime's own rules: how many devices a process may use, and
// how many a probe must list to answer exactly. Pure (see core.h).
#pragma once

namespace ucxtls {

// A "device list" has n devices with optional ids (uuid text).
struct DeviceIds {
  int n = 0;                           // devices present (enumerated)
  const char *const *ids = nullptr;    // ids[i] for i < n, or NULL when ids are unknown
};

// CUDA_VISIBLE_DEVICES: NULL = all, "" = none; ordinals, unique GPU-<uuid prefix> and MIG- entries,
// ending at the first invalid one (negative, out of range, not a number, unknown, repeated).
int cuda_visible_count(const char *cvd, const DeviceIds &devs);
// How many devices the probe must enumerate to answer "is any device visible?" exactly:
// 0 when the answer needs no device (none visible), else a bound; kAllDevices when ids matter.
constexpr int kAllDevices = 1 << 30;
int cuda_enumeration_bound(const char *cvd);

// ROCm: ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES when HIP's is
// unset) applied to the devices ROCR left. "" and "-1" = none. GPU- entries match ids by prefix.
int rocm_visible_count(const char *rocr, const char *hip, const char *cvd, const DeviceIds &devs);
int rocm_enumeration_bound(const char *rocr, const char *hip, const char *cvd);

// ZE_AFFINITY_MASK: NULL, "" or "default" = all devices; otherwise the devices stay visible
// while any entry is a well-formed index (N or N.M); none when no entry is.
bool ze_mask_hides_all(const char *mask);

}  // namespace ucxtls
