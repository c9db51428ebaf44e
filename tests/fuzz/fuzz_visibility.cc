// Fuzz target: the visibility variables (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
// HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK) against a device list with or without ids.
// Input: [n devices][ids known?] then NUL-separated fields: cvd, rocr, hip, ze, id0, id1, ...
#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput in(data, size);
  int n = in.byte() % 70;  // beyond the probe's 64-id table and the 128-bit repeat bitmap
  bool with_ids = in.byte() & 1;
  const char *cvd = in.maybe_field();
  const char *rocr = in.maybe_field();
  const char *hip = in.maybe_field();
  const char *ze = in.maybe_field();
  const char *ids[70] = {};
  for (int i = 0; i < n; i++) ids[i] = in.maybe_field();
  DeviceIds devs;
  devs.n = n;
  devs.ids = with_ids ? ids : nullptr;

  int c = cuda_visible_count(cvd, devs);
  FUZZ_CHECK(c >= 0);
  // At most every device, or one more when the list ends in a MIG instance.
  FUZZ_CHECK(c <= n + 1);
  int cb = cuda_enumeration_bound(cvd);
  FUZZ_CHECK(cb >= 0);
  // The bound is exact for "any visible": enumerating `cb` devices answers like enumerating all.
  if (cb < n && cb != kAllDevices) {
    DeviceIds first = devs;
    first.n = cb;
    FUZZ_CHECK((cuda_visible_count(cvd, first) > 0) == (c > 0));
  }

  int r = rocm_visible_count(rocr, hip, cvd, devs);
  FUZZ_CHECK(r >= 0 && r <= n);
  int rb = rocm_enumeration_bound(rocr, hip, cvd);
  FUZZ_CHECK(rb >= 0);
  if (rb < n && rb != kAllDevices) {
    DeviceIds first = devs;
    first.n = rb;
    FUZZ_CHECK((rocm_visible_count(rocr, hip, cvd, first) > 0) == (r > 0));
  }

  bool hidden = ze_mask_hides_all(ze);
  if (!ze || !ze[0]) FUZZ_CHECK(!hidden);
  return 0;
}
