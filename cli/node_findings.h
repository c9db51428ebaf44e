// What `explain` and `doctor` say about the node beside the decision, where the library cannot act
// on it: a ConnectX RoCE port that UCX 1.21+'s rc_gda fails on, NIXL_UCX_TLS overriding UCX_TLS
// inside NIXL agents, a UCX_NET_DEVICES that leaves NIXL no active-message lane, and AMD GPUs
// beside a ConnectX under a UCX whose ROCm memory goes to the IB memory domain without dmabuf.
// Each is one line of words; doctor's build-dependent one needs the build's version.
#pragma once

#include <string>
#include <vector>

#include "evaluation.h"

namespace ucxtls {
namespace cli {

struct NodeFinding {
  const char *tag;   // the row's name: "rc_gda", "nixl", "net-devices", "rocm-dmabuf"
  std::string text;  // what a user reads, with the fix
};

// The names of a UCX list (UCX_TLS, UCX_NET_DEVICES), without a leading '^' (*deny), the ":aux"
// suffix and the exact-name '\'.
std::vector<std::string> tls_entries(const char *value, bool *deny);

// The findings about the node and the environment r was decided in, for the value in effect
// (NULL: unset): explain and doctor print each as a line.
std::vector<NodeFinding> node_findings(const Evaluation &r, const char *value);

// doctor, for a build of this version ("" when it could not be told) registering these
// transports: what a UCX before 1.23 with ROCm does with AMD GPUs beside a ConnectX. Empty when it
// does not apply.
std::vector<NodeFinding> build_findings(const Evaluation &r, const std::string &version,
                                        const std::vector<std::string> &transports);

}  // namespace cli
}  // namespace ucxtls
