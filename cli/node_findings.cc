// The node's findings for explain and doctor (see node_findings.h).
#include "node_findings.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

namespace ucxtls {
namespace cli {

namespace {

// A variable of the environment the decision was made in (doctor --pid: that process's), as getenv.
const char *env_get(const Evaluation &r, const char *name) { return env_lookup(r.env.envp(), name, Dup::first); }

// UCX's boolean words (parser.c ucs_config_sscanf_bool / _ternary) for "yes".
bool yes_word(const char *v) {
  static const char *const kYes[] = {"y", "yes", "on", "1", "try"};
  for (const char *w : kYes)
    if (v && !strcasecmp(v, w)) return true;
  return false;
}

// Does a UCX_TLS value (NULL: unset, UCX's default all) let UCX open rc_gda? all, ib and rc_gda
// itself do; a deny list does unless it names ib or rc_gda.
bool value_opens_rc_gda(const char *value) {
  if (!value) return true;
  bool deny;
  for (const std::string &e : tls_entries(value, &deny))
    if (names_overlap(e.c_str(), e.size(), "rc_gda", 6) || (!deny && e == "all")) return !deny;  // rc_gda, ib
  return deny;
}

}  // namespace

std::vector<std::string> tls_entries(const char *value, bool *deny) {
  *deny = value[0] == '^';
  std::vector<std::string> out;
  for (std::string e : split(value + (*deny ? 1 : 0), ",")) {
    e = e.substr(0, e.find(':'));
    if (!e.empty() && e[0] == '\\') e.erase(0, 1);
    out.push_back(e);
  }
  return out;
}

std::vector<NodeFinding> node_findings(const Evaluation &r, const char *value) {
  std::vector<NodeFinding> out;
  // UCX 1.21+'s rc_gda lists a device per GPU and its nearest ConnectX without UCX's port and GID
  // check (src/uct/ib/mlx5/gdaki/gdaki.c uct_gdaki_query_tl_devices), and its uct_iface_open on a
  // port with no usable GID fails the whole worker (smg-project/smg#2520; NIXL's CI runs
  // UCX_TLS=^rc_gda, ai-dynamo/nixl#1846). Where no device runs rc the library writes ^ib itself.
  if (r.shown.rdma_gda_fails && r.family == Family::cuda && value_opens_rc_gda(value)) {
    const std::string port = r.shown.rdma_gda_port;
    out.push_back({"rc_gda", "ConnectX RoCE port " + port + " has no usable GID: UCX 1.21+'s rc_gda (in all and ib) opens it "
                   "for the GPUs nearest it and their workers fail (\"uct_iface_open(rc_gda/cuda0-" + port +
                   ") failed\"); set UCX_TLS=^rc_gda, or UCX_NET_DEVICES to the ports that work"});
  }
  // ModelExpress and Dynamo create their NIXL agents with UCX_TLS set to NIXL_UCX_TLS
  // (ai-dynamo/modelexpress nixl_transfer.py): inside those agents it replaces the value above.
  if (const char *nixl = env_get(r, "NIXL_UCX_TLS"))
    if (nixl[0])
      out.push_back({"nixl", std::string("NIXL_UCX_TLS=") + shell_quote(nixl) + " overrides " +
                                 (value ? "UCX_TLS=" + shell_quote(value) : std::string("UCX's default (UCX_TLS unset)")) +
                                 " inside NIXL agents that read it (ModelExpress, Dynamo): they run with its value"});
  // A pin to RDMA ports alone drops tcp's and lo's devices: NIXL's endpoint to itself asks for a
  // peer failure handler, which self, sysv and cuda_copy lack ("no active messages transport ...
  // self/memory - no peer failure handler", sgl-project/sglang#40641, ai-dynamo/nixl#1846).
  if (const char *net = env_get(r, "UCX_NET_DEVICES")) {
    const bool deny = net[0] == '^';
    const std::vector<std::string> names = split(net + (deny ? 1 : 0), ",");
    bool rdma_only = !deny && !names.empty();
    for (const std::string &n : names)
      if (n.find(':') == std::string::npos) rdma_only = false;  // a net device (eth0, lo) or all
    if (rdma_only)
      out.push_back({"net-devices", std::string("UCX_NET_DEVICES=") + shell_quote(net) +
                                        " names RDMA ports alone: tcp and lo get no device, and NIXL's endpoint to "
                                        "itself fails (\"no active messages transport\"); add lo or an Ethernet "
                                        "device to it"});
  }
  return out;
}

std::vector<NodeFinding> build_findings(const Evaluation &r, const std::string &version,
                                        const std::vector<std::string> &transports) {
  std::vector<NodeFinding> out;
  bool rocm = false;  // a build without ROCm registers no AMD memory at all (doctor's build line says so)
  for (const std::string &t : transports) rocm |= t == copy_transport(Family::rocm);
  int major = 0, minor = 0;
  const bool before_1_23 = sscanf(version.c_str(), "%d.%d", &major, &minor) == 2 && major == 1 && minor < 23;
  // UCX's IB memory domain claims ROCm memory whenever /dev/kfd exists (src/uct/ib/base/ib_md.c:
  // uct_ib_check_gpudirect_driver(md, "/dev/kfd", ...)), and rocm_copy's DMABUF is "no" by default
  // (src/uct/rocm/copy/rocm_copy_md.c): without AMD's peer-memory module, registration fails EFAULT.
  if (before_1_23 && rocm && r.family == Family::rocm && rdma_kind(r.f) == Rdma::mlx5 && !yes_word(env_get(r, "UCX_ROCM_COPY_DMABUF")))
    out.push_back({"rocm-dmabuf", "UCX " + version + " registers AMD GPU memory with the ConnectX through AMD's "
                   "peer-memory module (UCX_ROCM_COPY_DMABUF is off): without it registration fails with EFAULT; set "
                   "UCX_ROCM_COPY_DMABUF=y, or load the module"});
  return out;
}

}  // namespace cli
}  // namespace ucxtls
