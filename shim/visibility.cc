// The visibility variables: pure functions only (see visibility.h).
#include "visibility.h"

#include <string.h>

#include "text.h"

namespace ucxtls {
namespace {

// Leading decimal digits of a token, as strtoul would read them ("1gpu2" -> 1). -1 when the token
// does not start with a digit (a sign, a word); -2 when the number is absurdly large.
long leading_index(const char *p, size_t n) {
  if (!n || p[0] < '0' || p[0] > '9') return -1;
  long v = 0;
  for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
    if (v > 100000000) return -2;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

// The devices `list` names up to its first invalid entry (CUDA's and ROCr's rule): ordinals, unique
// "GPU-" id prefixes (optimistic when ids are unknown); a "MIG-" entry (CUDA) is one device and ends
// the list: CUDA enumerates a single MIG instance.
int visible_in_list(const char *list, const DeviceIds &devs, bool mig_ok) {
  if (!list) return devs.n;
  // A repeat ends the list (checked within the bitmap's reach: no allocation).
  unsigned char chosen[128] = {};
  int count = 0;
  Items items(list);
  const char *tok;
  size_t n;
  while (items.next(&tok, &n)) {
    trim(&tok, &n);
    long index = -1;
    if (mig_ok && starts_with(tok, n, "MIG-", 4)) {
      return count + 1;
    } else if (starts_with(tok, n, "GPU-", 4)) {
      if (!devs.ids) {
        if (count >= devs.n) break;  // optimistic: a distinct unknown device
        count++;
        continue;
      }
      int match = -1, matches = 0;
      for (int i = 0; i < devs.n; i++) {
        const char *id = devs.ids[i];
        if (id && strlen(id) >= n && !memcmp(id, tok, n)) match = i, matches++;
      }
      if (matches != 1) break;  // unknown or ambiguous prefix
      index = match;
    } else {
      index = leading_index(tok, n);
      if (index < 0 || index >= devs.n) break;
    }
    if (index < long(sizeof chosen * 8)) {
      unsigned char bit = (unsigned char)(1u << (index & 7));
      if (chosen[index >> 3] & bit) break;
      chosen[index >> 3] |= bit;
    }
    // Optimistic GPU- entries (ids unknown) took devices whose index is not known: never count
    // more devices than there are (found by fuzz_visibility: "GPU-x,1,0" of 2 gave 3).
    if (count >= devs.n) break;
    count++;
  }
  return count;
}

int first_token_bound(const char *list, bool mig_ok) {
  if (!list) return 1;
  Items items(list);
  const char *tok;
  size_t n;
  items.next(&tok, &n);
  trim(&tok, &n);
  if (mig_ok && starts_with(tok, n, "MIG-", 4)) return 0;
  if (starts_with(tok, n, "GPU-", 4)) return kAllDevices;
  long index = leading_index(tok, n);
  if (index < 0) return 0;
  return int(index) + 1;
}

}  // namespace

int cuda_visible_count(const char *cvd, const DeviceIds &devs) { return visible_in_list(cvd, devs, true); }

int cuda_enumeration_bound(const char *cvd) { return first_token_bound(cvd, true); }

int rocm_visible_count(const char *rocr, const char *hip, const char *cvd, const DeviceIds &devs) {
  int after_rocr = visible_in_list(rocr, devs, false);
  const char *second = hip ? hip : cvd;
  if (!second) return after_rocr;
  DeviceIds left;
  left.n = after_rocr;  // HIP's ordinals index the devices ROCr left; their ids are not tracked
  return visible_in_list(second, left, false);
}

int rocm_enumeration_bound(const char *rocr, const char *hip, const char *cvd) {
  const char *second = hip ? hip : cvd;
  if (!rocr) return first_token_bound(second, false);
  if (!second) return first_token_bound(rocr, false);
  return kAllDevices;  // two lists: exact only with every device
}

bool ze_mask_hides_all(const char *mask) {
  if (!mask || !mask[0] || !strcmp(mask, "default")) return false;
  Items items(mask);
  const char *tok;
  size_t n;
  while (items.next(&tok, &n)) {
    trim(&tok, &n);
    // N or N.M
    size_t i = 0, d1 = 0, d2 = 0;
    while (i < n && tok[i] >= '0' && tok[i] <= '9') i++, d1++;
    bool ok = d1 > 0;
    if (ok && i < n) {
      if (tok[i] != '.') ok = false;
      i++;
      while (i < n && tok[i] >= '0' && tok[i] <= '9') i++, d2++;
      if (d2 == 0 || i != n) ok = false;
    }
    if (ok) return false;
  }
  return true;
}

}  // namespace ucxtls
