// The decision: facts and settings in, one action and its reasons (codes) out, by the ladder of
// docs/design.md ("The ladder"; the step numbers in decide.cc are its numbers). Every fact starts
// unknown; decide() asks for the next one it needs, in the ladder's order, and the shell
// (probe_loop.cc run_ladder) fills it and asks again. Pure (see core.h).
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
  unsigned long long nlink = 0;
};

// ---------------------------------------------------------------------------------------------
// Facts: what the probes saw. One shape for every fact: its value (unknown until probed), the
// error of a probe that could not finish, and the evidence, what it saw in a user's words (for
// `explain` and the debug line).
constexpr size_t kEvidenceMax = 160;
constexpr size_t kDriverEvidenceMax = 256;

template <size_t EvidenceMax>
struct FactOf {
  Tri value = Tri::unknown;
  int error = 0;  // -errno: the probe could not finish, so value stays unknown
  char evidence[EvidenceMax] = {};
};
using Fact = FactOf<kEvidenceMax>;

// The one rule for what a decision may do with a fact: use it, ask for its probe, or, when the
// probe could not finish, nothing on a guess ("cannot tell" is never read as "no").
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

// The driver's answer for one family, as the driver tier uses it (driver_report.h: how it is
// asked, saved per node and read back).
struct DriverAnswer {
  Tri answered = Tri::unknown;  // yes: count is the driver's answer; no: there is none
  int count = 0;                // devices visible to this process (visibility variables applied)
  int present = 0;              // devices the driver reported (probed with them unset)
  long code = 0;                // the driver's result code (CUresult, ze_result_t)
  char name[48] = {};           // the driver's name for it, e.g. CUDA_ERROR_NO_DEVICE, or why none
};

// The driver tier's saved answer: value yes when one of this node was read, no when none is
// usable (evidence says why; never an error: the kernel's answer stands).
struct DriverFact : FactOf<kDriverEvidenceMax> {
  DriverAnswer cuda, ze;
};

struct Facts {
  Fact rdma;                // yes: a device UCX's rc transport runs on (CA, port ACTIVE, uverbs node)
  bool rdma_mlx5 = false;   // ... and one of them is a ConnectX
  // None runs rc, and a RoCE port UCX lists cannot be opened by this process (device_rules.h
  // RocePort::no_ndev_here): UCX's default fails there too, so the default writes kDenyIb.
  bool rdma_unopenable = false;
  // A ConnectX RoCE port with no GID UCX can use (device_rules.h RocePort::no_gid), and its name
  // ("mlx5_11:1"): UCX 1.21+'s rc_gda, in all and ib, opens it without UCX's port check and fails
  // the whole worker (src/uct/ib/mlx5/gdaki/gdaki.c uct_gdaki_query_tl_devices). Where nothing else
  // runs rc, the default writes kDenyIb for NVIDIA GPUs; beside an rc device `explain` and `doctor`
  // name it (the library's probe may stop before it: the answer does not depend on it there).
  bool rdma_gda_fails = false;
  char rdma_gda_port[40] = {};
  Fact ucx_conf;            // yes: a ucx.conf that UCX reads assigns UCX_TLS
  uint8_t ucx_conf_absent = 0;  // bit i: ucx.conf place i (probe.cc ucx_conf_place) was not there
  DriverFact driver;
  FamilyFact family[kFamilies];  // indexed by Family (none unused)
};

// What the node's RDMA runs, from the facts (Rdma::none until it is known to run anything).
Rdma rdma_kind(const Facts &f);

// The driver tier's answer for a family, when it has one (the driver tier, CUDA or ze, answered);
// NULL: the kernel probe's fact stands. decide() and the words of its reasons ask the same.
const DriverAnswer *driver_answer(const Settings &s, const Facts &f, Family fam);
// The driver tier is on, and asks for this family: its answer may be missing (NULL above) and
// the kernel's stand in.
const DriverAnswer *driver_asked(const Settings &s, const Facts &f, Family fam);

// ---------------------------------------------------------------------------------------------
// The decision.
enum class Action : uint8_t {
  need,  // a fact is missing: probe `need`, then decide again
  set,   // write UCX_TLS (and UCXTLS_DERIVED) = value
  keep,  // the user's configuration stands (UCX_TLS in the environment or in a ucx.conf)
  skip,  // do nothing; UCX_TLS stays as it is (unset, or the user's when the library is off)
  clear,  // remove an inherited UCX_TLS/UCXTLS_DERIVED pair: the answer here is "leave unset"
  repair  // UCXTLS_REPAIR: write UCX_TLS = value, the user's kept value with another family's
          // GPU transports rewritten to this node's (or its copy transport appended), and remove a UCXTLS_DERIVED present (a stale
          // marker): the marker never names a repaired value, which is the user's, so a child
          // elsewhere repairs again and never re-derives it as ours
};
const char *action_name(Action a);

enum class Need : uint8_t { nothing, rdma, ucx_conf, driver, cuda, rocm, ze };

// The state of the fact a Need names (Need::nothing: known).
FactState need_state(const Facts &f, Need n);

// Why: the steps the ladder took, as codes and the facts they name (arg: a Family, or the Need
// of a fact that could not be probed). decide() records them; lines.h renders their words, in one
// place, for the debug line, `explain` and its JSON alike.
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
  Action action = Action::need;
  Need need = Need::nothing;
  Family family = Family::none;
  bool family_known = false;
  bool rederived = false;     // UCX_TLS was our own inherited value, derived again here
  bool error = false;         // an invalid setting: steps[0] is the one-line error
  bool unknown_fact = false;  // a probe could not finish: nothing written on a guess
  bool mismatch = false;      // the kept UCX_TLS names another GPU family's transports, none of this node's
  bool lacks_copy = false;    // ... or no copy transport of this node's family at all (repair.h copy_verdict)
  // Somebody will read the reasons (the debug line, `explain`): the one thing that makes the
  // ladder look further than its answer needs (a kept value's family). run_ladder sets it.
  bool explained = false;
  Var invalid_var = kVarCount;       // the invalid setting (error, Reason::invalid), as the ladder
  const char *invalid_why = nullptr;  // found it: the sysroot's check is made in the probe loop
  int nsteps = 0;
  Step steps[kStepsMax] = {};
  char value[kValueMax] = {}; // the value to write (set, repair); last: only a write fills more than its first byte
  void note(Reason r, uint8_t arg = 0) {
    if (nsteps < kStepsMax) steps[nsteps++] = Step{r, arg};
  }
};

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d);

// Ladder step 5 on its own: which family's GPUs does this process see? UCXTLS_ACCEL when it is
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

// Does applying the decision remove UCXTLS_DERIVED beside a repair? Yes when one is present: it is
// stale (it differs from the kept UCX_TLS, or step 3 would have re-derived), and left beside the
// repaired value it could equal it, so that the next node would re-derive the user's value as
// ours. The marker never names a repaired value. The library's apply and `ucxtls env` ask it.
bool repair_drops_marker(const Inputs &in, const Decision &d);

}  // namespace ucxtls
