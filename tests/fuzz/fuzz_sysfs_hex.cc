// Fuzz target: sysfs hex attributes (device/vendor, device/class: one read into 64 bytes) and the
// decimal parser every number goes through. Invariant: each agrees with strtoul/strtol on what
// both accept.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64) size = 64;
  char *text = static_cast<char *>(malloc(size ? size : 1));
  memcpy(text, data, size);
  char z[65];
  memcpy(z, data, size);
  z[size] = '\0';

  unsigned long hex = 0;
  if (parse_sysfs_hex(text, size, &hex) && strlen(z) == size) {
    errno = 0;
    char *end = nullptr;
    unsigned long want = strtoul(z, &end, 16);
    if (errno == 0) FUZZ_CHECK(want == hex);
  }
  long dec = 0;
  if (parse_long(text, size, &dec)) {
    FUZZ_CHECK(strlen(z) == size);
    errno = 0;
    char *end = nullptr;
    long want = strtol(z, &end, 10);
    FUZZ_CHECK(errno == 0 && *end == '\0' && want == dec);
  }
  free(text);
  return 0;
}
