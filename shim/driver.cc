// The driver tier: not built yet. It answers "unknown", so the kernel probe's answer stands.
#include <string.h>

#include "probe.h"

namespace ucxtls {

void probe_driver(const Inputs &, const Settings &, DriverFact *out) {
  out->ran = Tri::no;
  strcpy(out->evidence, "not available in this build; the kernel probe answers");
}

}  // namespace ucxtls
