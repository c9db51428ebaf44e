// `ucxtls doctor`'s two endings around the same checks: the text's verdict line, and with --json
// the findings printed as one JSON object on one line instead of the text (docs/command.md,
// "doctor --json"), so that the answers of many nodes can be compared and grouped. Its messages
// are in the object; stderr has the same lines as without --json (the errors before any row).
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "commands.h"
#include "doctor_findings.h"
#include "exit.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

DoctorFindings findings;

std::string json_list(const std::vector<std::string> &items) {
  std::string o = "[";
  for (size_t i = 0; i < items.size(); i++) o += (i ? "," : "") + json_str(items[i].c_str());
  return o + "]";
}

std::string json_or_null(const std::string &s) { return s.empty() ? "null" : json_str(s.c_str()); }

// The text's end: what the exit status says, and why, in the words of the first message that failed
// (a `build` line may follow a name's verdict: the rows alone do not say which line decided); each
// other message as a row of its own above it, unless a row already shows its words. Every message
// that came after a row is on stdout only (record_failures); stderr keeps the errors that came
// before any row, and then that one line is the whole answer (no verdict).
void verdict_lines(int status, const std::vector<std::string> &messages, const std::vector<int> &statuses) {
  const std::vector<std::string> &in_rows = findings.in_rows;
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

}  // namespace

DoctorFindings &doctor_findings() { return findings; }

int cmd_doctor(int argc, char **argv) {
  std::vector<char *> args;
  bool json = false;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--json")) json = true;
    else args.push_back(argv[i]);
  if (!json) {
    std::vector<std::string> messages;
    std::vector<int> statuses;
    const size_t rows = lines_printed();
    record_failures(&messages, &statuses, rows);
    const int status = doctor_checks(argc, argv);
    record_failures(nullptr);
    if (lines_printed() > rows) verdict_lines(status, messages, statuses);
    return status;
  }
  // Every run gives an object, an error's too (its status and messages say what went wrong), so
  // that a node where doctor could not ask its UCX still has an answer among the others.
  std::vector<std::string> text;
  capture_lines(&text);
  record_failures(&findings.messages, nullptr, lines_printed());
  const int status = doctor_checks(int(args.size()), args.data());
  capture_lines(nullptr);
  record_failures(nullptr);
  const DoctorFindings &f = findings;
  std::string o = "{\"family\":" + json_str(f.family.c_str());
  o += ",\"value\":" + (f.has_value ? json_str(f.value.c_str()) : std::string("null"));
  o += ",\"source\":" + json_or_null(f.source);
  o += ",\"ucx\":[";
  for (size_t i = 0; i < f.ucx.size(); i++) {
    const DoctorFindings::Ucx &u = f.ucx[i];
    o += std::string(i ? "," : "") + "{\"libucp\":" + json_str(u.libucp.c_str()) + ",\"version\":" + json_or_null(u.version) +
         ",\"ucx_info\":" + json_or_null(u.ucx_info) + ",\"transports\":" + json_list(u.transports) + ",\"modules\":[";
    for (size_t k = 0; k < u.modules.size(); k++)
      o += std::string(k ? "," : "") + "{\"path\":" + json_str(u.modules[k].path.c_str()) + ",\"loads\":" +
           (u.modules[k].loads ? "true" : "false") + ",\"why\":" + json_or_null(u.modules[k].why) + "}";
    o += "]}";
  }
  o += "],\"missing\":" + json_list(f.missing) + ",\"problems\":" + json_list(f.problems);
  o += ",\"findings\":" + json_list(f.findings) + ",\"messages\":" + json_list(f.messages) + ",\"status\":" + std::to_string(status) + "}\n";
  fputs(o.c_str(), stdout);
  return status;
}

}  // namespace cli
}  // namespace ucxtls
