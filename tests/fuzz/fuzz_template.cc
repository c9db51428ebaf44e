// Fuzz target: UCXTLS_TEMPLATE validation and composition for every family, into buffers of
// every size from 0 up. Invariants: compose never writes past its buffer (ASan), and a valid
// template composes to "", "^" or a list that is itself a valid template without placeholders.
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput in(data, size);
  size_t cap = in.byte();  // a small buffer, to walk the truncation paths
  const char *t = in.field();
  if (!t) return 0;
  const char *why = nullptr;
  bool valid = template_valid(t, &why);
  FUZZ_CHECK(valid || (why && why[0]));
  (void)template_uses_copy(t);
  (void)template_uses_rdma(t);
  const Family fams[] = {Family::none, Family::cuda, Family::rocm, Family::ze};
  const Rdma rdmas[] = {Rdma::none, Rdma::rc, Rdma::mlx5};
  for (Family f : fams) for (Rdma r : rdmas) {
    if (cap) {
      char *small = static_cast<char *>(malloc(cap));  // exact size: ASan sees any overrun
      (void)compose(t, f, r, small, cap);
      FUZZ_CHECK(strlen(small) < cap);
      free(small);
    }
    if (!valid) continue;
    static char out[kValueMax];
    if (!compose(t, f, r, out, sizeof out)) continue;  // too long: decide() reports it
    if (!out[0] || !strcmp(out, "^")) continue;
    const char *why2 = nullptr;
    FUZZ_CHECK(!template_uses_copy(out) && !template_uses_rdma(out));
    // A valid template composes to a valid list; only the length rule may not hold (a template of
    // 3584 bytes grows when each placeholder becomes its text; compose still bounds it).
    if (strlen(out) <= kValueMax - 512) FUZZ_CHECK(template_valid(out, &why2));
  }
  return 0;
}
