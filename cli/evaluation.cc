// The decision as the library's constructor makes it, for the commands (see evaluation.h).
#include "evaluation.h"

#include <string.h>
#include <sys/auxv.h>

#include <vector>

#include "load.h"
#include "probe.h"

namespace ucxtls {
namespace cli {

namespace {

// One fact for the evidence: the full listing's, which counts every device, where it saw what the
// library's probe saw (same value, same error); else the library's, which the decision used.
template <typename F>
void show(const char *name, const F &decided, const F &listed, F *out, std::string *differs) {
  const bool same = decided.value == listed.value && decided.error == listed.error;
  *out = same ? listed : decided;
  if (!same && fact_state(decided) != FactState::to_probe)
    *differs += std::string(differs->empty() ? "" : "; ") + name + ": " + listed.evidence;
}

}  // namespace

void evaluate(Evaluation *r, const char *tmpl) {
  r->env.load();
  evaluate_loaded(r, getauxval(AT_SECURE) != 0, tmpl);
}

void load_inputs(Evaluation *r, bool secure, const char *tmpl) {
  char *none[] = {nullptr};  // as the library: secure execution reads nothing
  load(secure ? none : r->env.envp(), secure, &r->in, &r->s, tmpl);
}

void evaluate_loaded(Evaluation *r, bool secure, const char *tmpl) {
  load_inputs(r, secure, tmpl);
  // The library's probe options (docs/design.md, "One decision"): its enumeration bounds stop as
  // soon as the answer is known, and a file it never reads cannot change its answer, so neither
  // may it change the command's. Evidence on: the words are what the debug line prints.
  ProbeOptions lib;
  lib.evidence = true;
  run_ladder(r->in, r->s, lib, &r->f, &r->d);
  r->shown = r->f;
  if (r->in.secure) return;
  // Facts the ladder did not need, probed the same way (display only: the decision is final).
  std::vector<Need> rest = {Need::rdma, Need::ucx_conf, Need::cuda, Need::rocm, Need::ze};
  if (r->s.tier == ProbeTier::driver) rest.insert(rest.begin() + 2, Need::driver);
  for (Need n : rest)
    if (need_state(r->f, n) == FactState::to_probe) probe(n, r->in, r->s, lib, &r->f);
  // The family: the decision's, or, when it did not need one (UCX_TLS already set, no RDMA with
  // the default template, a ucx.conf, the library off, an invalid setting), the core's answer to
  // the family question alone on this machine, probed as the library would probe it (display
  // only: the decision stands as made).
  r->family_decided = r->d.family_known;
  if (r->d.family_known) {
    r->family = r->d.family;
  } else {
    auto f = std::make_unique<Facts>(r->f);
    r->family = probe_family(r->in, r->s, lib, f.get());
  }
  // The evidence: every device listed (counts, the first of each kind), read on top of the facts
  // above; where the listing saw otherwise (a file the library never reads could not be read),
  // the library's fact is shown, and listing_differs says so.
  ProbeOptions all;
  all.exhaustive = true;
  auto listed = std::make_unique<Facts>();
  for (Need n : rest) probe(n, r->in, r->s, all, listed.get());
  r->shown = r->f;
  show("rdma", r->f.rdma, listed->rdma, &r->shown.rdma, &r->listing_differs);
  if (r->shown.rdma.value == listed->rdma.value && r->shown.rdma.error == listed->rdma.error)
    r->shown.rdma_mlx5 = listed->rdma_mlx5;
  if (listed->rdma_gda_fails)  // a port past the one the library's probe stopped at (display only)
    r->shown.rdma_gda_fails = true, memcpy(r->shown.rdma_gda_port, listed->rdma_gda_port, sizeof r->shown.rdma_gda_port);
  show("ucx.conf", r->f.ucx_conf, listed->ucx_conf, &r->shown.ucx_conf, &r->listing_differs);
  for (int fam = 0; fam < kFamilies; fam++)
    show(family_name(Family(fam)), r->f.family[fam], listed->family[fam], &r->shown.family[fam], &r->listing_differs);
}

std::string gpu_mismatch_warning(const char *value, Family family) {
  if (!value) return "";
  const Copy copy = copy_verdict(value, family);
  if (copy != Copy::carries && !gpu_mismatch(value, family)) {  // no GPU transport of any family (repair.h)
    char words[512];
    Text t;
    t.init(words, sizeof words);
    t.add("UCX_TLS ");
    describe_copy_problem(copy, family, t);
    t.add("; ");
    describe_copy_fix(copy, family, t);
    return words;
  }
  if (!gpu_mismatch(value, family)) return "";
  char names[kValueMax];
  Text t;
  t.init(names, sizeof names);
  describe_foreign_entries(value, family, t);
  return std::string("UCX_TLS names ") + names + " but the GPUs this process can use are " + family_name(family) +
         ": UCX has no transport for their memory (" + copy_transport(family) +
         "); UCXTLS_REPAIR=1 rewrites them to this node's, or unset UCX_TLS to let ucxtls derive the value";
}

std::string library_line(const Evaluation &r) {
  if (!r.decided_line.empty()) return r.decided_line;  // made where the facts were read (process_view.h)
  // Decided again exactly as the constructor decides: its probes stop at the first visible GPU,
  // so the line carries the library's own counts ("1+"), not explain's full listing. The decision
  // is the same; only the evidence differs.
  auto f = std::make_unique<Facts>();
  auto d = std::make_unique<Decision>();
  ProbeOptions o;
  o.evidence = true;
  run_ladder(r.in, r.s, o, f.get(), d.get());
  char line[kLineMax];
  size_t n = format_line(Decided{r.in, r.s, *f, *d}, line, sizeof line);
  return std::string(line, n);
}

}  // namespace cli
}  // namespace ucxtls
