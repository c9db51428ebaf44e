// The decision: facts and settings in, one action and its reasons out, by the ladder of
// docs/design.md (decide.cc numbers its steps). Every fact starts unknown; decide() asks for the
// next one it needs and the shell (probe_loop.cc run_ladder) fills it. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "template.h"
#include "text.h"

namespace ucxtls {

// Three-valued fact: not probed yet, known false, known true.
enum class Tri : uint8_t { unknown, no, yes };

// What stat(2) says of a file.
struct FileFacts {
  unsigned uid = 0;
  unsigned mode = 0;  // st_mode: type and permission bits
  long long size = 0;
  long long mtime_ns = 0;
  unsigned long long dev = 0, ino = 0;  // which file it is (compared, never shown)
  unsigned long long nlink = 0;
};

// Facts: what the probes saw. Each: its value, the error of a probe that could not finish, and
// the evidence in a user's words (for `explain` and the debug line).
constexpr size_t kEvidenceMax = 160;
constexpr size_t kDriverEvidenceMax = 256;

template <size_t EvidenceMax>
struct FactOf {
  Tri value = Tri::unknown;
  int error = 0;  // -errno: the probe could not finish, so value stays unknown
  char evidence[EvidenceMax] = {};
};
using Fact = FactOf<kEvidenceMax>;

// Use a fact, ask for its probe, or, when the probe could not finish, nothing on a guess.
enum class FactState : uint8_t { known, to_probe, cannot_tell };
template <size_t N>
FactState fact_state(const FactOf<N> &f) {
  return f.value != Tri::unknown ? FactState::known : f.error ? FactState::cannot_tell : FactState::to_probe;
}

// A GPU family's kernel probe: value is "visible".
struct FamilyFact : Fact {
  int present = 0;        // devices the probe found (may stop early: see enumeration bounds)
  int visible_n = 0;      // of those, visible after the variables
  bool partial = false;   // the probe stopped before listing every device
};

// The driver's answer for one family (driver_report.h: asked, saved per node, read back).
struct DriverAnswer {
  Tri answered = Tri::unknown;  // yes: count is the driver's answer; no: there is none
  int count = 0;                // devices visible to this process (visibility variables applied)
  int present = 0;              // devices the driver reported (probed with them unset)
  long code = 0;                // the driver's result code (CUresult, ze_result_t)
  char name[48] = {};           // the driver's name for it, e.g. CUDA_ERROR_NO_DEVICE, or why none
};

// The driver tier's saved answer: yes when one of this node was read; no (never an error): the
// kernel's answer stands.
struct DriverFact : FactOf<kDriverEvidenceMax> {
  DriverAnswer cuda, ze;
};

// UCX_IB_GID_INDEX as UCX reads it: the environment's, else the last ucx.conf line that assigns
// it, the files in UCX's order (a later one overrides).
struct GidSetting {
  bool read = false;
  long index = -1;      // device_rules.h: kGidAuto (UCX's default), an index, or kGidUnknown
  int error = 0;        // -errno: a ucx.conf could not be read (then index is kGidUnknown)
  char shown[96] = {};  // where it came from, for the evidence: UCX_IB_GID_INDEX="3" (FILE)
};

struct Facts {
  Fact rdma;                // yes: a device UCX's rc transport runs on (CA, port ACTIVE, uverbs node)
  bool rdma_mlx5 = false;   // ... and one of them is a ConnectX
  // None runs rc, and a RoCE port UCX lists cannot be opened here (RocePort::no_ndev_here).
  bool rdma_unopenable = false;
  // A ConnectX RoCE port with no usable GID ("mlx5_11:1"): UCX 1.21+'s rc_gda, in all and ib,
  // opens it without UCX's port check and fails the worker (src/uct/ib/mlx5/gdaki/gdaki.c
  // uct_gdaki_query_tl_devices).
  bool rdma_gda_fails = false;
  char rdma_gda_port[40] = {};
  Fact ucx_conf;            // yes: a ucx.conf that UCX reads assigns UCX_TLS
  GidSetting gid;           // read in the same scan of the ucx.conf files (probe.cc scan_ucx_conf)
  DriverFact driver;
  FamilyFact family[kFamilies];  // indexed by Family (none unused)
};

// What the node's RDMA runs, from the facts (Rdma::none until it is known to run anything).
Rdma rdma_kind(const Facts &f);

// The driver tier's answer for a family, or NULL: the kernel probe's fact stands.
const DriverAnswer *driver_answer(const Settings &s, const Facts &f, Family fam);
// The driver tier is on and asks for this family (its answer may still be missing).
const DriverAnswer *driver_asked(const Settings &s, const Facts &f, Family fam);

enum class Action : uint8_t {
  undecided,  // a fact is missing: probe `need`, then decide again
  set,   // write UCX_TLS (and UCXTLS_DERIVED) = value
  keep,  // the user's configuration stands (UCX_TLS in the environment or in a ucx.conf)
  skip,  // do nothing; UCX_TLS stays as it is (unset, or the user's when the library is off)
  clear,  // remove an inherited UCX_TLS/UCXTLS_DERIVED pair: the answer here is "leave unset"
  repair  // UCXTLS_REPAIR: write UCX_TLS = the user's value repaired, and remove a stale
          // UCXTLS_DERIVED: a repaired value is the user's, repaired again on another node
};
const char *action_name(Action a);

enum class Need : uint8_t { nothing, rdma, ucx_conf, driver, cuda, rocm, ze };

// The state of the fact a Need names (Need::nothing: known).
FactState need_state(const Facts &f, Need n);

// Why: the steps the ladder took (arg: a Family, or the Need of a fact that could not be probed);
// lines.h renders their words.
enum class Reason : uint8_t {
  secure,             // step 1
  disabled,           // step 2
  kept,               // step 3: UCX_TLS is the user's
  rederived,          // step 3: it was ours: derived again
  mismatch,           // step 3: the kept value names another family's GPU transports
  repaired,           // ... and UCXTLS_REPAIR rewrote it
  nothing_remains,    // ... nothing of it would remain: kept
  repair_too_long,    // ... the repaired value would not fit (kValueMax): kept
  lacks_copy,         // step 3: the kept allow list names no copy transport of this node's family
  copy_denied,        // step 3: the kept deny list removes it
  copy_appended,      // ... and UCXTLS_REPAIR appended it
  append_too_long,    // ... the value with it would not fit (kValueMax): kept
  invalid,            // step 4: the error line
  sysroot,            // a replayed machine
  ucx_conf,           // step 6
  user_template,      // a template the user set
  no_gpu_placeholder,  // the template needs no family
  accel_forced,       // step 5: UCXTLS_ACCEL
  driver_tier,        // step 5: the driver tier's saved answer (its evidence)
  family_seen,        // step 5: what was seen of family `arg`
  no_gpu,             // step 5: no family, default template
  rdma,               // step 7: the RDMA evidence
  all_without_rc,     // step 7: all
  deny_ib,            // step 7: ^ib: a RoCE port UCX lists cannot be opened, and nothing else runs rc
  deny_ib_gda,        // step 7: ^ib: NVIDIA GPUs, and a ConnectX RoCE port with no usable GID that rc_gda opens
  all_other_family,   // step 7: all: a hard-coded CUDA list names none of this node's GPU transports
  cuda_list_fits,     // step 7: NVIDIA GPUs and rc: UCX's own default stands, a hard-coded CUDA list too
  write_always,       // UCXTLS_WRITE=always: the default template on every GPU node
  too_long,           // step 8: the error line
  empty_value,        // step 8
  cannot_tell,        // a fact (arg: its Need) could not be probed
};
struct Step {
  Reason reason;
  uint8_t arg;
};
constexpr int kStepsMax = 12;

struct Decision {
  Action action = Action::undecided;
  Need need = Need::nothing;
  Family family = Family::none;
  bool family_known = false;
  bool rederived = false;     // UCX_TLS was our own inherited value, derived again here
  bool error = false;         // an invalid setting: steps[0] is the one-line error
  bool unknown_fact = false;  // a probe could not finish: nothing written on a guess
  bool mismatch = false;      // the kept UCX_TLS names another GPU family's transports, none of this node's
  bool lacks_copy = false;    // ... or no copy transport of this node's family at all (repair.h copy_verdict)
  Var invalid_var = kVarCount;       // the invalid setting (error, Reason::invalid), as the ladder
  const char *invalid_why = nullptr;  // found it: the sysroot's check is made in the probe loop
  int nsteps = 0;
  Step steps[kStepsMax] = {};
  char value[kValueMax] = {}; // the value to write (set, repair); last: only a write fills more than its first byte
  void note(Reason r, uint8_t arg = 0) {
    if (nsteps < kStepsMax) steps[nsteps++] = Step{r, arg};
  }
};

// reasons_read: somebody reads the reasons (the debug line, `explain`), so a kept value's family
// is looked at too (ProbeOptions::evidence).
void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d, bool reasons_read = false);

// Ladder step 5 alone: UCXTLS_ACCEL, else the probes' answers in the order CUDA, ROCm, ze (the
// driver tier's where it has one). `ucxtls explain` asks it alone (probe.h probe_family).
struct FamilyAnswer {
  Need need = Need::nothing;     // a fact to probe first, then ask again
  bool cannot_tell = false;      // the probe of `failed` could not finish: no answer
  Family failed = Family::none;
  Family family = Family::none;  // the answer, when need is nothing and !cannot_tell
};
FamilyAnswer which_family(const Settings &s, const Facts &f);

// The UCX_TLS value in effect after the decision is applied (NULL = unset).
const char *effective_value(const Inputs &in, const Decision &d);

// Does applying the decision change the environment? A set not when both variables hold the
// value already; a clear always (only an inherited pair is cleared); keep and skip never.
bool env_needs_write(const Inputs &in, const Decision &d);

// A repair removes a UCXTLS_DERIVED present: it is stale, and left beside the repaired value the
// next node could re-derive the user's value as ours.
bool repair_drops_marker(const Inputs &in, const Decision &d);

}  // namespace ucxtls
