// The decision exactly as the library's constructor makes it (Evaluation, evaluate), and the library's
// own line for it. Every rule comes from the core (shim/core.h); nothing here restates one.
#pragma once

#include <memory>
#include <string>

#include "core.h"
#include "environment.h"

namespace ucxtls {
namespace cli {

// The decision, exactly as the constructor makes it, plus display-only evidence.
struct Evaluation {
  Environment env;
  Inputs in;
  Settings s;
  Facts f;       // what the decision read, probed with the library's own options (then the rest)
  Facts shown;   // the evidence to print: every device listed where that agrees with f (evaluate)
  std::string listing_differs;  // "rdma: what the full listing saw", where it saw otherwise than the library
  Decision d;
  Family family = Family::none;  // see family_decided
  bool family_decided = false;   // true: the decision chose it; false: shown for information
  std::string decided_line;      // library_line's answer, when it was made elsewhere (doctor --pid: process_view.h)
};

// Reads the environment (this process's at exec), decides exactly as the library would, with its
// probe options (the enumeration bounds included), then probes the facts the decision did not need
// and, for the evidence alone, lists every device. tmpl: a template to decide with instead of the
// environment's UCX_TLS and UCXTLS_TEMPLATE (`doctor --template`).
void evaluate(Evaluation *r, const char *tmpl = nullptr);

// The same for an environment already in r->env (`doctor --pid`: the process's start environment);
// secure: that process ran with secure execution (AT_SECURE), so its library read no variable.
void evaluate_loaded(Evaluation *r, bool secure, const char *tmpl = nullptr);

// Its first step alone, which reads no file: r->in and r->s from r->env (none when secure).
void load_inputs(Evaluation *r, bool secure, const char *tmpl = nullptr);

// The case ucxtls exists for: a UCX_TLS value naming another family's GPU transports and none of
// the GPUs this process can use (an Intel node given the CUDA list; repair.h gpu_mismatch), in
// words (the library's describe_foreign_entries): UCX then has no transport for this GPU's memory.
// "" when not (family none: never). Also a value that cannot carry their memory at all (repair.h
// copy_verdict: tcp on an NVIDIA node, ^cuda_copy). explain prints it for a kept value, doctor for
// the value it judges.
std::string gpu_mismatch_warning(const char *value, Family family);

// The library's own stderr line for this decision (lines.h format_line), with its newline.
std::string library_line(const Evaluation &r);

}  // namespace cli
}  // namespace ucxtls
