// The decision: facts and settings in, one action out, by the ladder of docs/design.md ("The
// ladder"; the step numbers in decide.cc are its numbers). Every fact starts unknown; decide()
// asks for the next one it needs, in cost order, and the shell (probe.cc run_ladder) fills it and
// asks again. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "template.h"
#include "text.h"

namespace ucxtls {

// Three-valued fact: not probed yet, known false, known true.
enum class Tri : uint8_t { unknown, no, yes };

// What stat(2) says of a file (sys.h stat_path/stat_fd fill it; the rules that read it are pure).
struct FileFacts {
  unsigned uid = 0;
  unsigned mode = 0;  // st_mode: type and permission bits
  long long size = 0;
  long long mtime_ns = 0;
  unsigned long long dev = 0, ino = 0;  // which file it is (compared, never shown)
};

// ---------------------------------------------------------------------------------------------
// Facts: what the probes saw. Evidence strings are for `explain` and the debug line.
constexpr size_t kEvidenceMax = 160;

struct FamilyFact {
  Tri visible = Tri::unknown;
  int error = 0;     // -errno: the probe could not finish, so visible stays unknown
  int present = 0;   // devices the probe found (may stop early: see enumeration bounds)
  int visible_n = 0; // of those, visible after the variables
  bool partial = false;  // the probe stopped before listing every device
  char evidence[kEvidenceMax] = {};
};

// The driver's answer for one family, as the driver tier uses it (driver_report.h: how it is
// asked, saved per node and read back).
struct DriverAnswer {
  Tri answered = Tri::unknown;  // yes: count is the driver's answer; no: there is none
  int count = 0;                // devices visible to this process (visibility variables applied)
  int present = 0;              // devices the driver reported (probed with them unset)
  long code = 0;                // the driver's result code (CUresult, ze_result_t)
  char name[48] = {};           // the driver's name for it, e.g. CUDA_ERROR_NO_DEVICE, or why none
};

constexpr size_t kDriverEvidenceMax = 256;
struct DriverFact {
  Tri ran = Tri::unknown;  // yes: a saved answer of this node was read; no: none usable (evidence says why)
  DriverAnswer cuda, ze;
  char evidence[kDriverEvidenceMax] = {};
};

// Each fact is unknown until probed; a probe that cannot finish leaves it unknown and sets its
// error (-errno): "cannot tell" is never read as "no".
struct Facts {
  Tri rdma = Tri::unknown;  // yes: a device UCX's rc transport runs on (CA, port ACTIVE, uverbs node)
  bool rdma_mlx5 = false;   // ... and one of them is a ConnectX (mlx5_core)
  int rdma_error = 0;
  char rdma_evidence[kEvidenceMax] = {};
  Tri ucx_conf = Tri::unknown;  // yes: a ucx.conf that UCX reads assigns UCX_TLS
  int ucx_conf_error = 0;
  char ucx_conf_evidence[kEvidenceMax] = {};
  DriverFact driver;
  FamilyFact family[kFamilies];  // indexed by Family (none unused)
};

// What the node's RDMA runs, from the facts (Rdma::none until it is known to run anything).
Rdma rdma_kind(const Facts &f);

// ---------------------------------------------------------------------------------------------
// The decision.
enum class Action : uint8_t {
  need,  // a fact is missing: probe `need`, then decide again
  set,   // write UCX_TLS (and UCXTLS_DERIVED) = value
  keep,  // the user's configuration stands (UCX_TLS in the environment or in a ucx.conf)
  skip,  // do nothing; UCX_TLS stays as it is (unset, or the user's when the library is off)
  clear,  // remove an inherited UCX_TLS/UCXTLS_DERIVED pair: the answer here is "leave unset"
  repair  // UCXTLS_REPAIR: write UCX_TLS = value, the user's kept value with another family's
          // GPU transports rewritten to this node's (no UCXTLS_DERIVED: a child elsewhere repairs again)
};
const char *action_name(Action a);

enum class Need : uint8_t { nothing, rdma, ucx_conf, driver, cuda, rocm, ze };
const char *need_name(Need n);

constexpr int kReasonsMax = 8;
constexpr size_t kReasonMax = 200;

struct Decision {
  Action action = Action::need;
  Need need = Need::nothing;
  Family family = Family::none;
  bool family_known = false;
  bool rederived = false;     // UCX_TLS was our own inherited value, derived again here
  bool error = false;         // an invalid setting: reasons[0] is the one-line error
  bool unknown_fact = false;  // a probe could not finish: nothing written on a guess
  bool mismatch = false;      // the kept UCX_TLS names another GPU family's transports, none of this node's
  char value[kValueMax] = {}; // the value to write (set)
  bool quiet = false;         // no reasons are written (run_ladder sets it from
                              // ProbeOptions::evidence); an error's line is written all the same
  int nreasons = 0;
  char reasons[kReasonsMax][kReasonMax] = {};
  Text reason(bool always = false);  // starts a new reason line (a no-op Text when quiet)
};

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d);

// Ladder step 7 on its own: which family's GPUs does this process see? UCXTLS_ACCEL when it is
// set, else the probes' answers in priority order CUDA, ROCm, ze (the driver tier's answer for a
// family where it has one, the kernel probe's otherwise). decide() asks it when the template has
// {copy} or {ipc}; `ucxtls explain` asks it alone (probe.h probe_family) to show the family when
// the decision did not need one.
struct FamilyAnswer {
  Need need = Need::nothing;     // a fact to probe first, then ask again
  bool cannot_tell = false;      // the probe of `failed` could not finish: no answer
  Family failed = Family::none;
  Family family = Family::none;  // the answer, when need is nothing and !cannot_tell
};
FamilyAnswer which_family(const Settings &s, const Facts &f);

// The UCX_TLS value in effect after the decision is applied (NULL = unset).
const char *effective_value(const Inputs &in, const Decision &d);

// Does applying the decision change the environment? set: yes, unless UCX_TLS and UCXTLS_DERIVED
// already hold the value (re-derived to what is there); clear: yes (decide() clears only an
// inherited pair, so it is there); keep, skip: no. The library's apply and `ucxtls env` ask it.
bool env_needs_write(const Inputs &in, const Decision &d);

}  // namespace ucxtls
