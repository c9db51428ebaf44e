// The probes: the file system (and the driver tier's saved answer) turned into Facts. The kernel
// probe checks paths, lists directories, reads links and small files: it loads no driver library
// and opens no device node.
#pragma once

#include "core.h"

namespace ucxtls {

struct ProbeOptions {
  // List every device (for `ucxtls explain`) instead of stopping as soon as the answer is known.
  bool exhaustive = false;
  // Write the evidence, and let the decision look at what only its reasons show (decide's
  // reasons_read). Off in the constructor without the debug line: a tenth of its instructions.
  bool evidence = true;
};

// Fills the fact that `need` names: its value, or its error when the probe could not finish.
void probe(Need need, const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);

// Decide, probe what it asks for, decide again, until it answers (probe_loop.cc).
void run_ladder(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f, Decision *d);

// decide.h which_family alone, by the same loop; Family::none when a probe cannot tell.
Family probe_family(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);

// The driver tier (driver_cache.cc).
void probe_driver(const Inputs &in, const Settings &s, DriverFact *out);

}  // namespace ucxtls
