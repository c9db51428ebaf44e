// What `ucxtls doctor` found, kept beside its text for `doctor --json` (doctor_json.cc): the node's
// GPU family, the value judged and where it came from, each UCX build judged, every name it cannot
// serve, every build problem, and the messages of its `ucxtls:` lines.
#pragma once

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

struct DoctorFindings {
  std::string family = "none";
  bool has_value = false;  // false: nothing to check (source says why)
  std::string value, source;
  struct Module {
    std::string path;
    bool loads;
    std::string why;  // "" when it loads
  };
  struct Ucx {
    std::string libucp, version;  // version "": could not be told
    std::string ucx_info;  // the plain doctor: the ucx_info whose libucp this is; "" otherwise
    std::vector<std::string> transports;
    std::vector<Module> modules;
  };
  std::vector<Ucx> ucx;
  std::vector<std::string> missing, problems, messages;
  std::vector<std::string> findings;  // about the node and the environment (node_findings.h): "tag: text"
  std::vector<std::string> in_rows;   // the messages whose words a row already shows (a `warning`, a `build` line)
};

// The findings of this run of the command (doctor.cc records into it).
DoctorFindings &doctor_findings();

// The checks and their text (doctor.cc); cmd_doctor (doctor_json.cc) adds --json around them.
int doctor_checks(int argc, char **argv);

}  // namespace cli
}  // namespace ucxtls
