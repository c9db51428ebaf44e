// The decision as the library's constructor makes it, for the commands (see report.h).
#include "report.h"

#include "load.h"
#include "probe.h"

namespace ucxtls {
namespace cli {

void evaluate(Report *r, const char *tmpl) {
  r->env.load();
  load(r->env.envp(), &r->in, &r->s, tmpl);  // as the library: secure execution reads nothing
  // Exhaustive listing changes what is counted for the evidence, never the answer (the
  // enumeration bounds only stop early once the answer is known).
  ProbeOptions all;
  all.exhaustive = true;
  run_ladder(r->in, r->s, all, &r->f, &r->d);
  if (r->in.secure) return;
  // Evidence for the facts the ladder did not need; the decision above is final.
  const Need rest[] = {Need::rdma, Need::ucx_conf, Need::driver, Need::cuda, Need::rocm, Need::ze};
  for (Need n : rest) {
    if (n == Need::driver && r->s.tier != ProbeTier::driver) continue;
    if (need_state(r->f, n) == FactState::to_probe) probe(n, r->in, r->s, all, &r->f);
  }
  // The family: the decision's, or, when it did not need one (UCX_TLS already set, no RDMA with
  // the default template, a ucx.conf, the library off, an invalid setting), the core's answer to
  // the family question alone on this machine (display only: the decision stands as made).
  r->family_decided = r->d.family_known;
  if (r->d.family_known) {
    r->family = r->d.family;
  } else {
    auto f = std::make_unique<Facts>(r->f);
    r->family = probe_family(r->in, r->s, all, f.get());
  }
}

std::string library_line(const Report &r) {
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
