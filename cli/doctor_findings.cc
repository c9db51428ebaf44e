// doctor's findings and its two endings (see doctor_findings.h). stderr has the same lines with
// --json as without (the errors before any row).
#include "doctor_findings.h"

#include <stdio.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exit.h"
#include "json.h"
#include "util.h"

namespace ucxtls {
namespace cli {

DoctorFindings &doctor_findings() {
  static DoctorFindings findings;
  return findings;
}

// What the exit status says, and why, in the words of the first message that failed (a `build`
// line may follow a name's verdict: the rows alone do not say which line decided); each other
// message as a row of its own above it, unless a row already shows its words. Every message that
// came after a row is on stdout only (exit.h record_messages).
void verdict_lines(int status, const std::vector<int> &statuses) {
  const std::vector<std::string> &messages = doctor_findings().messages, &in_rows = doctor_findings().in_rows;
  std::string why;
  size_t failed = 0;
  for (size_t i = 0; i < messages.size() && i < statuses.size(); i++) {
    const std::string text = messages[i].compare(0, 8, "doctor: ") ? messages[i] : messages[i].substr(8);
    if (statuses[i] && !failed++) {
      why = text;
      continue;
    }
    if (std::find(in_rows.begin(), in_rows.end(), messages[i]) != in_rows.end()) continue;
    print_line("%-11s %s\n", !statuses[i] ? "note" : statuses[i] == kUsage ? "unchecked" : "FAIL", text.c_str());
  }
  if (!status) return print_line("%-11s ok (exit 0)\n", "verdict");
  const std::string more = failed > 1 ? " (and " + std::to_string(failed - 1) + " more above)" : "";
  print_line("%-11s %s (exit %d)%s%s%s\n", "verdict", status == kUsage ? "could not check" : "FAIL", status,
             why.empty() ? "" : ": ", why.c_str(), more.c_str());
}

// Every run gives an object, an error's too (its status and messages say what went wrong), so
// that a node where doctor could not ask its UCX still has an answer among the others.
void print_findings_json(int status) {
  const DoctorFindings &f = doctor_findings();
  Json j;
  j.object().str("family", f.family).str("value", f.has_value ? f.value.c_str() : nullptr);
  j.str_or_null("source", f.source).array("ucx");
  for (const DoctorFindings::Ucx &u : f.ucx) {
    const UcxBuild &b = u.build;
    j.object().str("libucp", b.libucp).str_or_null("version", b.version).str_or_null("ucx_info", u.ucx_info);
    j.list("transports", b.transports).array("modules");
    for (const UcxModule &m : b.modules)  // why: "" when it loads
      j.object().str("path", m.path).boolean("loads", m.state == "loaded").str_or_null("why", m.state == "loaded" ? "" : m.why).end();
    j.end().end();
  }
  j.end().list("missing", f.missing).list("problems", f.problems).list("findings", f.findings);
  j.list("messages", f.messages).number("status", status);
  fputs(j.text().c_str(), stdout);
}

}  // namespace cli
}  // namespace ucxtls
