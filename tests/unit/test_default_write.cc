// Step 7 of the ladder: where the default template writes (UCXTLS_WRITE). The default writes all
// (UCX's own default) only where a hard-coded rc_x,rc,dc_x,dc,cuda_copy would be wrong for the
// node, nothing on NVIDIA GPUs beside an rc device; UCXTLS_WRITE=always composes the template on
// every GPU node; a user's template is composed whatever UCXTLS_WRITE says.
#include <doctest/doctest.h>

#include <stdio.h>

#include <string>
#include <vector>

#include "core.h"
#include "unit_facts.h"

using namespace ucxtls;

namespace {

// unopenable: no rc, and a RoCE port UCX lists but cannot open (its GIDs' net device is elsewhere).
// gda: no rc, and a ConnectX RoCE port with no usable GID, which UCX 1.21+'s rc_gda opens.
// mlx5_gda: a ConnectX runs rc, and another one's port has no usable GID.
enum class Net { mlx5, rc_only, none, failed, unopenable, gda, mlx5_gda };

Facts node(Family fam, Net net) {
  Facts f = node_of(fam);
  f.rdma.value = net == Net::none || net == Net::unopenable || net == Net::gda ? Tri::no
                 : net == Net::failed                                         ? Tri::unknown
                                                                              : Tri::yes;
  f.rdma_mlx5 = net == Net::mlx5 || net == Net::mlx5_gda;
  f.rdma_unopenable = net == Net::unopenable;
  f.rdma_gda_fails = net == Net::gda || net == Net::mlx5_gda;
  if (f.rdma_gda_fails) snprintf(f.rdma_gda_port, sizeof f.rdma_gda_port, "mlx5_11:1");
  if (net == Net::failed) f.rdma.error = -24;  // EMFILE: a probe that could not finish
  return f;
}

// The decision as one word: the value written, "unset" (nothing written), "?" (a fact could not
// be told: nothing written on a guess), or the action's name for any other outcome.
struct Got {
  std::string what;
  std::string line;
  std::vector<Need> asked;
};

Got decide_on(std::vector<std::pair<Var, const char *>> vars, Facts f) {
  Inputs in;
  for (auto &p : vars) in.var[p.first] = p.second;
  Settings s;
  parse_settings(in, &s);
  Decision d;
  Got g;
  // The probe loop, played here: a fact asked is the node's; the asks are recorded.
  const Facts known = f;
  f.rdma.value = f.ucx_conf.value = Tri::unknown;
  f.rdma.error = 0;
  for (Family fam : {Family::cuda, Family::rocm, Family::ze}) f.family[int(fam)].value = Tri::unknown;
  for (int i = 0; i < 8; i++) {
    decide(in, s, f, &d, true);
    if (d.action != Action::undecided) break;
    g.asked.push_back(d.need);
    if (d.need == Need::rdma) f.rdma = known.rdma;
    else if (d.need == Need::ucx_conf) f.ucx_conf = known.ucx_conf;
    else {
      const Family fam = d.need == Need::cuda ? Family::cuda : d.need == Need::rocm ? Family::rocm : Family::ze;
      f.family[int(fam)] = known.family[int(fam)];
    }
  }
  g.what = d.action == Action::set ? std::string(d.value)
           : d.unknown_fact       ? "?"
           : d.action == Action::skip && !d.error ? "unset"
                                  : action_name(d.action);
  char line[kLineMax];
  format_line(Decided{in, s, f, d}, line, sizeof line);
  g.line = line;
  return g;
}

const char *const kUser = "{rdma},tcp,{copy}";

}  // namespace

TEST_CASE("step 7: each family x network x UCXTLS_WRITE x template") {
  struct Row {
    Family family;
    Net net;
    // default template with UCXTLS_WRITE needed (the default), always; the user's template kUser
    // with needed, always.
    const char *needed, *always, *user_needed, *user_always;
  } rows[] = {
      {Family::cuda, Net::mlx5, "unset", "rc_x,rc,dc_x,dc,cuda_copy", "rc_x,rc,dc_x,dc,tcp,cuda_copy", "rc_x,rc,dc_x,dc,tcp,cuda_copy"},
      {Family::cuda, Net::rc_only, "unset", "rc,cuda_copy", "rc,tcp,cuda_copy", "rc,tcp,cuda_copy"},
      {Family::cuda, Net::none, "all", "all", "tcp,cuda_copy", "tcp,cuda_copy"},
      {Family::cuda, Net::failed, "?", "?", "?", "?"},
      {Family::cuda, Net::unopenable, "^ib", "^ib", "tcp,cuda_copy", "tcp,cuda_copy"},  // all fails there too
      {Family::cuda, Net::gda, "^ib", "^ib", "tcp,cuda_copy", "tcp,cuda_copy"},  // rc_gda, in all, fails there
      {Family::cuda, Net::mlx5_gda, "unset", "rc_x,rc,dc_x,dc,cuda_copy", "rc_x,rc,dc_x,dc,tcp,cuda_copy",
       "rc_x,rc,dc_x,dc,tcp,cuda_copy"},  // beside an rc device nothing is written: explain names the port
      {Family::rocm, Net::mlx5, "all", "rc_x,rc,dc_x,dc,rocm_copy", "rc_x,rc,dc_x,dc,tcp,rocm_copy", "rc_x,rc,dc_x,dc,tcp,rocm_copy"},
      {Family::rocm, Net::rc_only, "all", "rc,rocm_copy", "rc,tcp,rocm_copy", "rc,tcp,rocm_copy"},
      {Family::rocm, Net::none, "all", "all", "tcp,rocm_copy", "tcp,rocm_copy"},
      {Family::rocm, Net::failed, "all", "?", "?", "?"},  // the default needs no network fact here
      {Family::rocm, Net::unopenable, "all", "^ib", "tcp,rocm_copy", "tcp,rocm_copy"},  // ... nor here
      {Family::rocm, Net::gda, "all", "all", "tcp,rocm_copy", "tcp,rocm_copy"},  // rc_gda lists CUDA GPUs alone
      {Family::ze, Net::mlx5, "all", "rc_x,rc,dc_x,dc,ze_copy", "rc_x,rc,dc_x,dc,tcp,ze_copy", "rc_x,rc,dc_x,dc,tcp,ze_copy"},
      {Family::ze, Net::rc_only, "all", "rc,ze_copy", "rc,tcp,ze_copy", "rc,tcp,ze_copy"},
      {Family::ze, Net::none, "all", "all", "tcp,ze_copy", "tcp,ze_copy"},
      {Family::ze, Net::failed, "all", "?", "?", "?"},
      {Family::ze, Net::unopenable, "all", "^ib", "tcp,ze_copy", "tcp,ze_copy"},
      {Family::ze, Net::gda, "all", "all", "tcp,ze_copy", "tcp,ze_copy"},
      {Family::none, Net::mlx5, "unset", "unset", "rc_x,rc,dc_x,dc,tcp", "rc_x,rc,dc_x,dc,tcp"},
      {Family::none, Net::rc_only, "unset", "unset", "rc,tcp", "rc,tcp"},
      {Family::none, Net::none, "unset", "unset", "tcp", "tcp"},
      {Family::none, Net::failed, "unset", "unset", "?", "?"},
      {Family::none, Net::unopenable, "unset", "unset", "tcp", "tcp"},
  };
  for (const Row &r : rows) {
    CAPTURE(family_name(r.family));
    CAPTURE(int(r.net));
    const Facts f = node(r.family, r.net);
    CHECK(decide_on({}, f).what == r.needed);
    CHECK(decide_on({{kWrite, "needed"}}, f).what == r.needed);
    CHECK(decide_on({{kWrite, "always"}}, f).what == r.always);
    CHECK(decide_on({{kTemplate, kUser}}, f).what == r.user_needed);
    CHECK(decide_on({{kTemplate, kUser}, {kWrite, "always"}}, f).what == r.user_always);
  }
}

TEST_CASE("step 7: the default asks the RDMA fact for NVIDIA GPUs alone (cost order)") {
  using V = std::vector<Need>;
  // ROCm and ze: all whatever the network, so the RDMA probe is never run.
  // The family first, then ucx.conf (a GPU node only).
  CHECK(decide_on({}, node(Family::rocm, Net::mlx5)).asked == V{Need::cuda, Need::rocm, Need::ucx_conf});
  CHECK(decide_on({}, node(Family::ze, Net::none)).asked == V{Need::cuda, Need::rocm, Need::ze, Need::ucx_conf});
  // NVIDIA: the RDMA fact decides between unset and all.
  CHECK(decide_on({}, node(Family::cuda, Net::mlx5)).asked == V{Need::cuda, Need::ucx_conf, Need::rdma});
  // No GPU: nothing to fix, neither ucx.conf nor the network is asked.
  CHECK(decide_on({}, node(Family::none, Net::mlx5)).asked == V{Need::cuda, Need::rocm, Need::ze});
  // UCXTLS_WRITE=always composes {rdma} on every GPU node: asked last.
  CHECK(decide_on({{kWrite, "always"}}, node(Family::rocm, Net::mlx5)).asked == V{Need::cuda, Need::rocm, Need::ucx_conf, Need::rdma});
  // UCXTLS_ACCEL=none is a node without GPUs: nothing is asked, nothing written.
  Got none = decide_on({{kAccel, "none"}}, node(Family::cuda, Net::mlx5));
  CHECK(none.asked == V{});
  CHECK(none.what == "unset");
  // With UCXTLS_WRITE=always it is composed: {rdma} needed.
  Got always = decide_on({{kAccel, "none"}, {kWrite, "always"}}, node(Family::cuda, Net::mlx5));
  CHECK(always.asked == V{Need::ucx_conf, Need::rdma});
  CHECK(always.what == "rc_x,rc,dc_x,dc");
}

TEST_CASE("step 7: UCXTLS_WRITE takes needed or always; another word is one line and the library is off") {
  for (const char *bad : {"bogus", "Always", "NEEDED", "alway", "always ", "1", "yes"}) {
    Got g = decide_on({{kWrite, bad}}, node(Family::ze, Net::mlx5));
    CAPTURE(g.line);
    CHECK(g.what == "skip");  // an error: UCX_TLS left unchanged
    CHECK(g.asked.empty());   // off: nothing probed
    CHECK(g.line == "ucxtls: UCXTLS_WRITE=\"" + std::string(bad) + "\" is not one of needed, always; UCX_TLS left unchanged\n");
    CHECK(g.line.find('\n') == g.line.size() - 1);
  }
  CHECK(decide_on({{kWrite, ""}}, node(Family::ze, Net::mlx5)).what == "all");  // empty is unset
}

TEST_CASE("step 7: the words say what a process runs with and why") {
  struct Row {
    Family family;
    Net net;
    std::vector<std::pair<Var, const char *>> vars;
    const char *head, *words;
  } rows[] = {
      {Family::cuda, Net::mlx5, {}, "ucxtls: skip (UCX_TLS stays unset): ",
       "NVIDIA GPUs and an rc device: UCX's own default stands (all), and a hard-coded rc_x,rc,dc_x,dc,cuda_copy fits this node; "
       "UCXTLS_WRITE=always writes the template here\n"},
      {Family::rocm, Net::mlx5, {}, "ucxtls: set UCX_TLS=all: ",
       "all (UCX's own default, with rocm's copy transport), so a hard-coded rc_x,rc,dc_x,dc,cuda_copy cannot displace it on these GPUs\n"},
      {Family::ze, Net::none, {}, "ucxtls: set UCX_TLS=all: ",
       "all (UCX's own default, with ze's copy transport), so a hard-coded rc_x,rc,dc_x,dc,cuda_copy cannot displace it on these GPUs\n"},
      {Family::cuda, Net::none, {}, "ucxtls: set UCX_TLS=all: ",
       "no RDMA device UCX's rc transport runs on: all (UCX's own default), so a hard-coded rc list cannot break this node\n"},
      {Family::none, Net::mlx5, {}, "ucxtls: skip (UCX_TLS stays unset): ", "no GPU family found: nothing to fix here, UCX's default stands\n"},
      {Family::cuda, Net::unopenable, {}, "ucxtls: set UCX_TLS=^ib: ",
       "^ib: UCX lists a RoCE port it cannot open here (so all would fail \"Address not valid\") and no other device "
       "runs rc: UCX's default without its verbs transports\n"},
      {Family::cuda, Net::gda, {}, "ucxtls: set UCX_TLS=^ib: ",
       "^ib: ConnectX RoCE port mlx5_11:1 has no usable GID, and UCX 1.21+'s rc_gda (in all) opens it and fails the "
       "worker; no device runs rc: UCX's default without its verbs transports\n"},
      {Family::cuda, Net::mlx5, {{kWrite, "always"}}, "ucxtls: set UCX_TLS=rc_x,rc,dc_x,dc,cuda_copy: ",
       "UCXTLS_WRITE=always (the default template on every GPU node)"},
  };
  for (const Row &r : rows) {
    Got g = decide_on(r.vars, node(r.family, r.net));
    CAPTURE(g.line);
    CHECK(g.line.rfind(r.head, 0) == 0);
    CHECK(g.line.find(r.words) != std::string::npos);
  }
}
