// How `ucxtls doctor` judges a value against a build it has read, in every mode: UCX's own rules
// (its alias table, \exact names, :aux, a deny list), a row per name, what the build cannot do
// whatever UCX_TLS says, then the `ucxtls:` line that says why the status is what it is.
#pragma once

#include <string>

#include "ucx_build.h"

namespace ucxtls {
namespace cli {

struct Evaluation;

// The value doctor judges and where it came from, or, with no value, the line that says why.
struct JudgedValue {
  std::string value, source;
  std::string nothing;  // "" when there is a value to judge
  std::string library;  // --pid: the line the process's libucxtls.so printed for its decision; "" otherwise
};

// The rows of build b for value v, after its name lines, and the status: the value line, what the
// node adds, the build's transports and modules, every name's verdict (only_here: against the
// transports with a device on this node, as the plain doctor judges), the build's problems.
int check_build(const Evaluation &r, const JudgedValue &v, const UcxBuild &b, bool only_here);

// An empty value (UCX: "The TLs list is empty"), named by where it came from (--value, UCX_TLS, ...).
int empty_value(const std::string &source, int status);

}  // namespace cli
}  // namespace ucxtls
