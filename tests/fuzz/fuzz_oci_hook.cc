// Fuzz target: what the node hook reads as root from the runtime and the image (helper/oci_hook_core.h):
// the OCI state and config.json (nlohmann-json, built without exceptions: a throw would abort), and
// /etc/ld.so.preload. The first byte picks the reader; the rest is the input. Invariants: a spec read
// has a root; a planned /etc/ld.so.preload reads (as glibc reads it) with the hook's copy last and
// keeps the image's text as its start; "already listed" means glibc loads a libucxtls.so from it.
#include <string>

#include "fuzz_input.h"
#include "oci_hook_core.h"

using namespace ucxtls;

static bool ends_with_ucxtls(const std::string &s) {
  const std::string tail = "/libucxtls.so";
  return s == "libucxtls.so" || (s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *text = reinterpret_cast<const char *>(data + 1);
  const size_t n = size - 1;
  switch (data[0] % 3) {
    case 0: {
      ContainerState st;
      if (read_container_state(text, n, &st)) FUZZ_CHECK(!st.bundle.empty() && st.bundle.find('\0') == std::string::npos);
      break;
    }
    case 1: {
      ContainerSpec spec;
      if (read_container_spec(text, n, &spec)) {
        FUZZ_CHECK(!spec.root.empty());
        for (const ContainerMount &m : spec.mounts) (void)mount_hides(m.destination, "/etc/ld.so.preload");
      }
      break;
    }
    default: {
      const std::string existing(text, n), lib = "/usr/lib/ucxtls-oci-hook/libucxtls.so";
      std::vector<std::string> names = glibc_preload_names(existing);
      PreloadPlan plan = plan_preload_file(existing, lib);
      bool listed = false;
      for (const std::string &s : names) listed = listed || ends_with_ucxtls(s);
      FUZZ_CHECK(listed == (plan.kind == PreloadPlan::kAlreadyListed));
      if (plan.kind == PreloadPlan::kWrite) {
        FUZZ_CHECK(plan.text.compare(0, existing.size(), existing) == 0);
        std::vector<std::string> after = glibc_preload_names(plan.text);
        FUZZ_CHECK(!after.empty() && after.back() == lib);
        FUZZ_CHECK(plan_preload_file(plan.text, lib).kind == PreloadPlan::kAlreadyListed);  // a restart adds nothing
      }
      break;
    }
  }
  return 0;
}
