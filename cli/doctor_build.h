// What `ucxtls doctor` prints and records (doctor --json) of one build read from its files, and the
// transports of it that have a device on this node. doctor.cc judges the value against them.
#pragma once

#include <string>
#include <vector>

#include "core.h"
#include "ucx_build.h"

namespace ucxtls {
namespace cli {

// The registered transports that have a device on this node, by the node's facts (the plain
// doctor judges this node: UCX prints "not available" for a transport without one, as `ucx_info
// -d` showed): verbs transports where its RDMA runs rc, mlx5 ones on a ConnectX, a GPU family's
// where its GPUs are; the rest (tcp, self, shared memory, cma) everywhere. xpmem, knem (device
// nodes of their own) and srd (EFA, which the facts do not tell apart) are left out: doctor does
// not claim a transport it cannot see. Printed as the plain doctor's `here` line.
std::vector<std::string> here_line(const std::vector<std::string> &registered, Family family, Rdma rdma);

// What the build registers and which modules UCX would load, as read from its files; then what
// could not be read of it: a "could not tell" line each, never guessed.
void build_lines(const UcxBuild &b);

struct NodeFinding;
struct Evaluation;
// What the node adds (node_findings.h): a `warning` line each, recorded for doctor --json.
void finding_lines(const std::vector<NodeFinding> &found);
// Under the value line: explain's warning for a value that names another family's GPU
// transports, in the same words (evaluation.h), then what the node adds for that value.
void mismatch_line(const Evaluation &r, const std::string &value);

}  // namespace cli
}  // namespace ucxtls
