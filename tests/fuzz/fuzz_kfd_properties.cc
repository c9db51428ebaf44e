// Fuzz target: KFD topology `properties` as the probe reads it (one read into a 4096-byte buffer,
// no NUL terminator).
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) size = 4096;
  char *text = static_cast<char *>(malloc(size ? size : 1));
  memcpy(text, data, size);
  KfdNode node;
  bool any = parse_kfd_properties(text, size, &node);
  if (!any) {
    KfdNode fresh;
    FUZZ_CHECK(node.simd_count == fresh.simd_count && node.drm_render_minor == fresh.drm_render_minor);
  }
  if (node.is_gpu()) FUZZ_CHECK(node.drm_render_minor >= 0);
  free(text);
  return 0;
}
