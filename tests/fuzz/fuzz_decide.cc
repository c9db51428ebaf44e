// Fuzz target: a random environment through read_inputs -> parse_settings -> decide (with random
// facts handed in whenever a fact is asked for, as run_ladder does) -> format_line into buffers of
// random size. Invariants: the ladder ends within 16 passes, a "set" value is non-empty and fits,
// and the stderr line is exactly one line (one '\n', at the end) with no other control byte.
#include <string.h>

#include "core.h"
#include "fuzz_input.h"

using namespace ucxtls;

static Tri tri(uint8_t b) { return b % 3 == 0 ? Tri::unknown : b % 3 == 1 ? Tri::no : Tri::yes; }

static void evidence(FuzzInput &in, char *out, size_t cap) {
  const char *s = in.field();
  if (!s) s = "";
  size_t n = strlen(s);
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput in(data, size);
  size_t line_cap = in.byte() * 8;  // 0 .. 2040
  bool secure = in.byte() & 1;
  // The environment: up to 24 NUL-separated entries; the names of ours are frequent, so each
  // entry may start with a byte that picks a known name.
  char *envp[25];
  char storage[24][256];
  int ne = 0;
  for (; ne < 24 && !in.done(); ne++) {
    uint8_t pick = in.byte();
    const char *v = in.field();
    if (!v) break;
    if (pick < 2 * kVarCount) {
      const char *name = kOptions[pick % kVarCount].name;
      size_t k = strlen(name);
      size_t vn = strlen(v);
      if (k + 1 + vn >= sizeof storage[ne]) vn = sizeof storage[ne] - k - 2;
      memcpy(storage[ne], name, k);
      storage[ne][k] = '=';
      memcpy(storage[ne] + k + 1, v, vn);
      storage[ne][k + 1 + vn] = '\0';
      envp[ne] = storage[ne];
    } else {
      envp[ne] = const_cast<char *>(v);  // a raw entry, maybe without '='
    }
  }
  envp[ne] = nullptr;

  Inputs inputs;
  inputs.secure = secure;
  read_inputs(envp, &inputs);
  Settings s;
  parse_settings(inputs, &s);
  FUZZ_CHECK(s.tmpl != nullptr);

  Facts f;
  Decision d;
  int pass = 0;
  for (; pass < 16; pass++) {
    decide(inputs, s, f, &d);
    if (d.action != Action::undecided) break;
    Tri t = tri(in.byte());
    // A probe answers yes or no, or fails (unknown with an error): decide must then answer too.
    int err = t == Tri::unknown ? -24 : 0;
    switch (d.need) {
      case Need::rdma:
        f.rdma.value = t, f.rdma.error = err, f.rdma_mlx5 = in.byte() & 1;
        evidence(in, f.rdma.evidence, sizeof f.rdma.evidence);
        break;
      case Need::ucx_conf: f.ucx_conf.value = t, f.ucx_conf.error = err; evidence(in, f.ucx_conf.evidence, sizeof f.ucx_conf.evidence); break;
      case Need::driver: {
        f.driver.value = t == Tri::unknown ? Tri::no : t;
        f.driver.cuda.answered = tri(in.byte());
        f.driver.cuda.count = in.byte() - 2;
        f.driver.ze.answered = tri(in.byte());
        f.driver.ze.count = in.byte() - 2;
        evidence(in, f.driver.cuda.name, sizeof f.driver.cuda.name);
        evidence(in, f.driver.evidence, sizeof f.driver.evidence);
        break;
      }
      case Need::cuda: case Need::rocm: case Need::ze: {
        int fam = d.need == Need::cuda ? 1 : d.need == Need::rocm ? 2 : 3;
        f.family[fam].value = t;
        f.family[fam].error = err;
        evidence(in, f.family[fam].evidence, sizeof f.family[fam].evidence);
        break;
      }
      default: FUZZ_CHECK(false);  // "need" must name a fact
    }
  }
  FUZZ_CHECK(d.action != Action::undecided);
  if (d.action == Action::set) FUZZ_CHECK(d.value[0] && strlen(d.value) < sizeof d.value);
  (void)effective_value(inputs, d);

  char *line = static_cast<char *>(malloc(line_cap ? line_cap : 1));
  size_t n = format_line(Decided{inputs, s, f, d}, line_cap ? line : nullptr, line_cap);
  if (line_cap >= 2) {
    FUZZ_CHECK(n >= 1 && n < line_cap && line[n] == '\0' && line[n - 1] == '\n');
    for (size_t i = 0; i + 1 < n; i++) {
      unsigned char c = (unsigned char)line[i];
      FUZZ_CHECK(c >= 0x20 && c != 0x7f);
    }
  } else {
    FUZZ_CHECK(n == 0);
  }
  free(line);
  return 0;
}
