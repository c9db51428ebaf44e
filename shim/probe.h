// The probes: the file system (and, for the driver tier, the answer saved per node) turned into Facts.
//
// The kernel probe only checks that paths exist, lists directories, reads links and reads small
// files into fixed buffers: no driver library is loaded and no device node is ever opened.
#pragma once

#include "core.h"

namespace ucxtls {

struct ProbeOptions {
  // List every device (for `ucxtls explain`) instead of stopping as soon as the answer is known.
  bool exhaustive = false;
  // Write the evidence strings (the debug line, `ucxtls explain`), and let the decision look at
  // what only its reasons show (a kept value's family). The constructor turns it off when nobody
  // will read them: building them was a tenth of its instructions. The reasons themselves are
  // codes, rendered only when a line is printed (lines.h).
  bool evidence = true;
};

// Fills the fact that `need` names: its value, or, when the probe could not finish (anything but
// "not there"), its error; with its evidence either way (decide.h FactState).
void probe(Need need, const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);

// The decision loop shared by the library and the command (probe_loop.cc): decide, probe what it asks
// for, decide again, until it answers.
void run_ladder(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f, Decision *d);

// The family question alone (decide.h which_family), probed by the same loop: the family this
// process's GPUs belong to, whatever the rest of the ladder says (`ucxtls explain` shows it when
// the decision did not need one). Family::none when a probe cannot tell.
Family probe_family(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);

// The driver tier (driver_cache.cc): reads the answer `ucxtls probe --save` stored for this node.
void probe_driver(const Inputs &in, const Settings &s, DriverFact *out);

}  // namespace ucxtls
