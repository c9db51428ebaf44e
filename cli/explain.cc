// `ucxtls explain [--json]`: the decision for this environment and machine, with the evidence
// behind it, as text for a person or one JSON document for a program.
#include <stdio.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "exit.h"
#include "json.h"
#include "node_findings.h"
#include "evaluation.h"
#include "sys.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// The decision's reasons in words (lines.h render_reason: the library's own words), rendered
// from the facts the evidence shows (evaluation.h `shown`: every device counted, where the full
// listing agrees with the library's fact), so that a reason and its evidence row give one count.
// The library line below stays the library's: its probe stops at the first device it needs
// (`1+ GPU(s)`), as a host process's must.
std::vector<std::string> reasons(const Evaluation &r) {
  std::vector<std::string> out;
  char reason[kReasonMax];
  for (int i = 0; i < r.d.nsteps; i++) {
    render_reason(Decided{r.in, r.s, r.shown, r.d}, i, reason, sizeof reason);
    out.push_back(reason);
  }
  return out;
}

const char *json_tri(Tri t) { return t == Tri::yes ? "true" : t == Tri::no ? "false" : "null"; }

// An evidence row's answer: yes, no, or why there is none (a probe that failed, one not run).
const char *tri_word(Tri t, int error, const char *yes, const char *no = "no") {
  return t == Tri::yes ? yes : t == Tri::no ? no : error ? "unknown" : "not probed";
}

const Family kShown[] = {Family::cuda, Family::rocm, Family::ze};

// The case ucxtls exists for, on a value the library keeps (evaluation.h gpu_mismatch_warning).
std::string kept_value_warning(const Evaluation &r) {
  return r.d.action == Action::keep ? gpu_mismatch_warning(effective_value(r.in, r.d), r.family) : "";
}

// On a node where the default list is written: what it leaves out of UCX's default (all), which
// programs other than the trainers may use. "" when nothing is, or when the value is not ours.
std::string left_out_note(const Evaluation &r) {
  if (r.d.action != Action::set || r.s.template_from_user) return "";
  char names[256];
  Text t;
  t.init(names, sizeof names);
  describe_left_out(r.d.value, r.family, t);
  if (!names[0]) return "";
  return std::string("compared with UCX's default (all), this value leaves out ") + names +
         ": fine for a trainer; for inference servers and MPI jobs set UCXTLS_TEMPLATE='{rdma},sm,self,tcp,{ipc},{copy}'";
}

// One line: what a process started in this environment runs with, and why. Where nothing is
// written, that is UCX's own default; the why is the ladder's last step in the library's words, or
// for a composed value the template it comes from.
std::string summary(const Evaluation &r) {
  const Decision &d = r.d;
  const char *value = effective_value(r.in, d);
  const bool written = d.action == Action::set || d.action == Action::repair;
  std::string what, why;
  const bool fixed = written && (!strcmp(value, kAllTransports) || !strcmp(value, kDenyIb));  // not composed
  if (written && !strcmp(value, kAllTransports)) what = "UCX_TLS=all, UCX's own default, written by ucxtls";
  else if (fixed) what = "UCX_TLS=^ib, UCX's default without its verbs transports, written by ucxtls";
  else if (written) what = std::string("UCX_TLS=") + value + (d.action == Action::repair ? ", repaired by ucxtls" : ", written by ucxtls");
  else if (value) what = "UCX_TLS=" + shell_quote(value) + ", set before ucxtls ran";
  else if (r.f.ucx_conf.value == Tri::yes) what = std::string("the UCX_TLS of ") + r.f.ucx_conf.evidence;
  else what = "UCX's own default (UCX_TLS unset: all)";
  if (d.action == Action::set && !fixed)
    why = std::string("the template ") + r.s.tmpl + " composed for " + family_name(r.family) +
          (r.s.template_from_user ? " (UCXTLS_TEMPLATE)" : r.s.write_always ? " (UCXTLS_WRITE=always)" : "");
  else if (d.nsteps)
    why = reasons(r)[size_t(d.error ? 0 : d.nsteps - 1)];
  return "a process here runs with " + what + (why.empty() ? "" : ": " + why);
}

void explain_text(const Evaluation &r) {
  const Decision &d = r.d;
  const char *value = effective_value(r.in, d);
  print_line("action    %s\n", action_name(d.action));
  if (d.action == Action::set)
    print_line("UCX_TLS   %s (written with UCXTLS_DERIVED)\n", value);
  else if (d.action == Action::repair)
    print_line("UCX_TLS   %s (repaired from %s by UCXTLS_REPAIR=1; no UCXTLS_DERIVED)\n", value,
           shell_quote(r.in.get(kUcxTls)).c_str());
  else if (d.action == Action::clear)
    print_line("UCX_TLS   unset (the inherited UCX_TLS and UCXTLS_DERIVED are removed)\n");
  else if (value)
    print_line("UCX_TLS   %s (left as it is)\n", value);
  else if (r.f.ucx_conf.value == Tri::yes)
    print_line("UCX_TLS   unset in the environment (UCX takes it from %s)\n", r.f.ucx_conf.evidence);
  else
    print_line("UCX_TLS   unset (UCX uses its default, all)\n");
  print_line("summary   %s\n", summary(r).c_str());
  const std::string warning = kept_value_warning(r);
  if (!warning.empty()) print_line("warning   %s\n", warning.c_str());
  const std::string note = left_out_note(r);
  if (!note.empty()) print_line("note      %s\n", note.c_str());
  for (const NodeFinding &n : node_findings(r, value)) print_line("warning   %s\n", n.text.c_str());
  const bool composed = r.d.action == Action::set || r.d.action == Action::repair;
  print_line("family    %s (%s)\n", family_name(r.family),
         !r.family_decided ? "what the probe sees; the decision did not need it"
         : composed && !strcmp(value, kAllTransports) ? "all, UCX's own default, is written for its GPUs"
         : composed && !strcmp(value, kDenyIb) ? "^ib, UCX's default without its verbs transports, is written for its GPUs"
         : composed                     ? "the value is composed for it"
         : r.family == Family::none     ? "no GPU family found: nothing is composed"
                                        : "the decision's; nothing is written");
  print_line("template  %s (%s)\n", r.s.tmpl, r.s.template_from_user ? "UCXTLS_TEMPLATE" : "default");
  print_line("reasons\n");
  for (const std::string &reason : reasons(r)) print_line("  - %s\n", reason.c_str());
  if (r.in.secure) return;  // nothing else was read
  print_line("evidence\n");
  print_line("  rdma      %-10s %s\n", tri_word(r.shown.rdma.value, r.shown.rdma.error, rdma_transports(rdma_kind(r.shown))),
             r.shown.rdma.evidence);
  print_line("  ucx.conf  %-10s %s\n", tri_word(r.shown.ucx_conf.value, r.shown.ucx_conf.error, "UCX_TLS"), r.shown.ucx_conf.evidence);
  if (r.s.tier == ProbeTier::driver)
    print_line("  driver    %-10s %s\n", r.shown.driver.value == Tri::yes ? "saved" : "none", r.shown.driver.evidence);
  if (r.s.tier == ProbeTier::driver && r.shown.driver.value != Tri::yes)  // how to create it
    print_line("            `ucxtls probe --save` asks the drivers and saves their answer for this node (docs/driver-probe.md)\n");
  for (Family fam : kShown) {
    const FamilyFact &ff = r.shown.family[int(fam)];
    print_line("  %-9s %-10s %s\n", family_name(fam), tri_word(ff.value, ff.error, "visible", "none"), ff.evidence);
  }
  if (!r.listing_differs.empty())  // evidence only: the answer is the library's (evaluation.h)
    print_line("  listing   every device listed, this read otherwise (files the library's probe does not read; "
           "shown above is what it read): %s\n", r.listing_differs.c_str());
  print_line("variables\n");
  for (int v = 0; v < kVarCount; v++) {
    const char *val = r.in.get(Var(v));
    if (val) print_line("  %s=%s\n", kOptions[v].name, shell_quote(val).c_str());
    else if (v < kOwnVarCount && strcmp(kOptions[v].def, "-") && strcmp(kOptions[v].def, "unset"))
      print_line("  %s unset (default %s)\n", kOptions[v].name, kOptions[v].def);
    else
      print_line("  %s unset\n", kOptions[v].name);
  }
  char unknown[kUnknownLineMax];  // the library's line for a misspelt UCXTLS_* variable
  size_t nu = format_unknown_line(r.in, r.s, unknown, sizeof unknown);
  char ignored[kIgnoredLinesMax];  // ... and for a setting of one command or tier that is invalid
  const size_t ni = r.d.error ? 0 : format_ignored_lines(r.in, r.s, ignored, sizeof ignored);  // as the library
  printf("library line\n%s%.*s", nu ? "  " : "", int(nu), unknown);
  for (size_t i = 0; i < ni;) {  // each line indented as the others
    const size_t len = strcspn(ignored + i, "\n") + 1;
    printf("  %.*s", int(len), ignored + i);
    i += len;
  }
  printf("  %s", library_line(r).c_str());
}

void explain_json(const Evaluation &r) {
  const Decision &d = r.d;
  const std::vector<std::string> why = reasons(r);
  Json j;
  j.object().str("action", action_name(d.action)).str("value", effective_value(r.in, d)).str("family", family_name(r.family));
  j.boolean("family_decided", r.family_decided).list("reasons", why).str("summary", summary(r));
  j.str("error", d.error ? why[0].c_str() : nullptr);
  j.str_or_null("warning", kept_value_warning(r)).str_or_null("left_out", left_out_note(r)).array("findings");
  for (const NodeFinding &n : node_findings(r, effective_value(r.in, d))) j.object().str("tag", n.tag).str("text", n.text).end();
  j.end().str("repaired_from", d.action == Action::repair ? r.in.get(kUcxTls) : nullptr);
  // A misspelt UCXTLS_* variable (the first one, by name) and how many there are.
  j.str_or_null("unknown_variable", r.in.unknown ? std::string(r.in.unknown, strcspn(r.in.unknown, "=")) : "");
  j.number("unknown_variables", r.in.unknown_count).boolean("secure", r.in.secure).str("template", r.s.tmpl);
  j.boolean("template_from_user", r.s.template_from_user).str("probe", r.s.tier == ProbeTier::driver ? "driver" : "kernel");
  std::string line = library_line(r);
  line.pop_back();  // the newline
  j.str("line", line).object("evidence").object("rdma").raw("usable", json_tri(r.shown.rdma.value));
  j.str("transports", rdma_transports(rdma_kind(r.shown))).str("error", r.shown.rdma.error ? errno_name(r.shown.rdma.error) : nullptr);
  j.str("evidence", r.shown.rdma.evidence).end();
  j.object("ucx_conf").raw("assigns_ucx_tls", json_tri(r.shown.ucx_conf.value)).str("evidence", r.shown.ucx_conf.evidence).end();
  if (r.s.tier == ProbeTier::driver)
    j.object("driver").raw("ran", json_tri(r.shown.driver.value)).str("evidence", r.shown.driver.evidence).end();
  for (Family fam : kShown) {
    const FamilyFact &ff = r.shown.family[int(fam)];
    j.object(family_name(fam)).raw("visible", json_tri(ff.value)).number("present", ff.present).number("visible_count", ff.visible_n);
    j.str("error", ff.error ? errno_name(ff.error) : nullptr).str("evidence", ff.evidence).end();
  }
  j.end().object("variables");
  for (int v = 0; v < kVarCount; v++) j.str(kOptions[v].name, r.in.get(Var(v)));
  fputs(j.text().c_str(), stdout);
}

}  // namespace

int cmd_explain(int argc, char **argv) {
  bool json = false;
  if (const char *bad = first_unknown(argc, argv, "--json", &json))
    return fail(kUsage, std::string("explain: unknown option '") + bad + "' (try ucxtls --help)");
  auto r = std::make_unique<Evaluation>();
  evaluate(r.get());
  if (json) explain_json(*r);
  else explain_text(*r);
  // An invalid setting is reported in full above, and as the library's own stderr line.
  if (r->d.error) {
    fputs(library_line(*r).c_str(), stderr);
    return kFailed;
  }
  return 0;
}

}  // namespace cli
}  // namespace ucxtls
