// Fuzz target: /proc/driver/nvidia/gpus/<bus>/information as the probe reads it (one read into a
// 1024-byte buffer, no NUL terminator).
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1024) size = 1024;  // the probe's buffer
  // An exact-size heap copy, so ASan sees any read past the end.
  char *text = static_cast<char *>(malloc(size ? size : 1));
  memcpy(text, data, size);
  NvInfo info;
  bool ok = parse_nvidia_information(text, size, &info);
  FUZZ_CHECK(ok == info.has_minor);
  if (ok) FUZZ_CHECK(info.minor >= 0 && info.minor < 1000000);
  FUZZ_CHECK(strlen(info.uuid) < sizeof info.uuid);
  free(text);
  return 0;
}
