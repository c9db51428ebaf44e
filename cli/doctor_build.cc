// What doctor prints and records of one build (see doctor_build.h).
#include "doctor_build.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor_findings.h"
#include "node_findings.h"
#include "evaluation.h"
#include "util.h"

namespace ucxtls {
namespace cli {

std::vector<std::string> here_line(const std::vector<std::string> &registered, Family family, Rdma rdma) {
  std::vector<std::string> here;
  std::string list;
  for (const std::string &t : registered) {
    const UcxName *u = ucx_name(t.c_str(), t.size());
    const Device d = u ? u->device : Device::unknown;
    if (d == Device::any || (d == Device::gpu && u->family == family) || (d == Device::rdma && rdma != Rdma::none) ||
        (d == Device::mlx5 && rdma == Rdma::mlx5))
      here.push_back(t), list += (list.empty() ? "" : ", ") + t;
  }
  print_line("here        %s (those with a device on this node, by its facts)\n", list.empty() ? "none" : list.c_str());
  return here;
}

void build_lines(const UcxBuild &b) {
  std::string list;
  for (const std::string &t : b.transports) list += (list.empty() ? "" : ", ") + t;
  print_line("this UCX    %s (registered by its libuct and the modules UCX loads from %s%s)\n",
             list.empty() ? "no transport" : list.c_str(), b.module_dir.empty() ? "?" : b.module_dir.c_str(),
             b.bound.empty() ? "" : "; those read before doctor's bound was reached");
  for (const UcxModule &m : b.modules)
    if (m.state == "error") print_line("module      %s does not load here: %s\n", m.path.c_str(), m.why.c_str());
    else if (m.state == "not-loaded") print_line("module      %s is not loaded: %s\n", m.path.c_str(), m.why.c_str());
  for (const std::string &u : b.unread) print_line("%-11s %s\n", "could not", ("tell " + u).c_str());
}

void finding_lines(const std::vector<NodeFinding> &found) {
  for (const NodeFinding &n : found) {
    print_line("%-11s %s\n", "warning", n.text.c_str());
    doctor_findings().findings.push_back(std::string(n.tag) + ": " + n.text);
  }
}

void mismatch_line(const Evaluation &r, const std::string &value) {
  const std::string warning = gpu_mismatch_warning(value.c_str(), r.family);
  if (!warning.empty()) print_line("%-11s %s\n", "warning", warning.c_str());
  finding_lines(node_findings(r, value.c_str()));
}

}  // namespace cli
}  // namespace ucxtls
