// What `ucxtls doctor` found, recorded as it prints its rows, and its two endings: the verdict
// line of the text, or with --json the findings as one object on one line in place of the text
// (docs/command.md, "doctor --json"), so that the answers of many nodes can be compared.
#pragma once

#include <string>
#include <vector>

#include "ucx_build.h"

namespace ucxtls {
namespace cli {

struct DoctorFindings {
  std::string family = "none";
  bool has_value = false;  // false: nothing to check (source says why)
  std::string value, source;
  struct Ucx {
    UcxBuild build;
    std::string ucx_info;  // the plain doctor: the ucx_info whose libucp this is; "" otherwise
  };
  std::vector<Ucx> ucx;
  std::vector<std::string> missing, problems;
  std::vector<std::string> messages;  // the `ucxtls:` lines, without "ucxtls: " (exit.h record_messages)
  std::vector<std::string> findings;  // about the node and the environment (node_findings.h): "tag: text"
  std::vector<std::string> in_rows;   // the messages whose words a row already shows (a `warning`, a `build` line)
};

// The findings of this run of the command.
DoctorFindings &doctor_findings();

// The text's last line, `verdict`, for the exit status and the status of each message recorded.
void verdict_lines(int status, const std::vector<int> &statuses);

// doctor --json: the findings and the exit status, as one JSON object on stdout.
void print_findings_json(int status);

}  // namespace cli
}  // namespace ucxtls
