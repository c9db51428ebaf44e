// How `ucxtls doctor` judges a value against the transports a UCX build serves: UCX's own rules
// (its alias table, \exact names, :aux, a deny list), a row per name, then the status and the
// `ucxtls:` line that says why (doctor.cc reads the build and prints the rows before these).
#pragma once

#include <string>
#include <vector>

#include "ucx_build.h"

namespace ucxtls {
namespace cli {

struct Report;

// The verdict on every name of value, with `have` saying which transports the UCX has: a line per
// name; gives the names that are missing, and in *gpu_only whether the names served are all GPU
// ones (repair.h's table) in an allow list. `version`: the UCX's, where the releases differ. False:
// the value is empty (UCX fails to create a context).
bool judge(const std::string &value, const std::vector<std::string> &have, const std::string &version,
           std::vector<std::string> *missing, bool *gpu_only);

// An empty value (UCX: "The TLs list is empty"), named by where it came from (--value, UCX_TLS, ...).
int empty_value(const std::string &source, int status);

// What the build cannot do whatever UCX_TLS says (build_problems), a `build` line each, then the
// status, in every mode: an empty value, a refused context, names missing, a problem for this node.
// nothing: no value to judge (the node's family is still one to build for).
int verdict(const Report &r, const UcxBuild &b, const char *nothing, const std::string &value, const std::string &source,
            const std::string &version, bool empty, bool gpu_only, const std::vector<std::string> &missing);

// A bound of doctor's stopped the reading of a build: a transport it seems to lack may be in what
// was not read, so no name is judged (no MISSING row): "could not check", exit 2.
int bounded(const UcxBuild &b);

}  // namespace cli
}  // namespace ucxtls
