// Unit tests of a kept UCX_TLS of another GPU family (shim/repair.h) and of the ladder's step 3
// around it (the debug line names it; UCXTLS_REPAIR=1 rewrites it): table rows.
#include <doctest/doctest.h>
#include <stdio.h>

#include <string>
#include <vector>

#include "core.h"
#include "unit_facts.h"

using namespace ucxtls;

namespace {

const char *const kCudaList = "rc_x,rc,dc_x,dc,cuda_copy";

std::string repaired(const char *value, Family node) {
  char out[kValueMax];
  return repair_value(value, node, out, sizeof out) == Repair::repaired ? std::string(out) : std::string("<none>");
}

}  // namespace

TEST_CASE("gpu_mismatch: another family's GPU transports and none of this node's") {
  struct Row {
    const char *value;
    Family node;
    bool mismatch;
  };
  const Row rows[] = {
      {kCudaList, Family::ze, true},
      {kCudaList, Family::rocm, true},
      {kCudaList, Family::cuda, false},
      {"rc_x,rc,dc_x,dc,ze_copy", Family::ze, false},
      {"cuda_copy,ze_copy", Family::ze, false},      // names this node's as well: it works here
      {"rc,tcp,sm,self", Family::ze, false},         // no GPU transport at all
      {"all", Family::rocm, false},
      {"^cuda_ipc", Family::ze, false},              // an exclusion list removes, names nothing
      {"^cuda_ipc,cuda_copy", Family::ze, false},    // every entry of it excluded, cuda_copy too
      {"cuda", Family::ze, true},                    // UCX's family alias
      {"\\cuda_copy", Family::rocm, true},           // the name, not an alias
      {"gdr_copy:aux,tcp", Family::ze, true},        // gdr_copy is CUDA's
      {"rocm_gdr", Family::cuda, true},
      {kCudaList, Family::none, false},              // no family known here: nothing to judge
      {"cuda_copyx,tcp", Family::ze, false},         // not a transport name of any family
      {"", Family::ze, false},
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    CAPTURE(family_name(r.node));
    CHECK(gpu_mismatch(r.value, r.node) == r.mismatch);
  }
}

TEST_CASE("repair_value: other families' entries rewritten, every other entry kept in order") {
  struct Row {
    const char *value;
    Family node;
    const char *want;  // "<none>": nothing to repair, or nothing would remain
  };
  const Row rows[] = {
      {kCudaList, Family::ze, "rc_x,rc,dc_x,dc,ze_copy"},
      {kCudaList, Family::rocm, "rc_x,rc,dc_x,dc,rocm_copy"},
      {kCudaList, Family::cuda, "<none>"},                              // not a mismatch
      {"rc_x,rc,dc_x,dc,tcp,cuda_copy,cuda_ipc", Family::rocm, "rc_x,rc,dc_x,dc,tcp,rocm_copy,rocm_ipc"},  // Dynamo's
      {"rc_x,rc,dc_x,dc,tcp,cuda_copy,cuda_ipc", Family::ze, "rc_x,rc,dc_x,dc,tcp,ze_copy"},  // no ze_ipc in a released UCX
      {"cuda_ipc,sm,cuda_copy,gdr_copy", Family::rocm, "rocm_ipc,sm,rocm_copy"},  // gdr: no ROCm counterpart
      {"rocm_copy,rocm_ipc,rocm_gdr,self", Family::cuda, "cuda_copy,cuda_ipc,gdr_copy,self"},
      {"cuda,tcp", Family::ze, "ze,tcp"},                               // the alias for the alias
      {"ze,sm", Family::rocm, "rocm,sm"},
      {"\\cuda_copy,tcp", Family::ze, "\\ze_copy,tcp"},                 // UCX's \ is kept
      {"cuda_copy:aux,tcp", Family::rocm, "rocm_copy:aux,tcp"},         // and :aux
      {"cuda_ipc,tcp", Family::ze, "tcp"},                              // no counterpart: removed
      {"cuda_ipc,cuda_copy", Family::ze, "ze_copy"},                    // ... with its comma, first
      {"tcp,cuda_ipc", Family::ze, "tcp"},                              // ... or last
      {"rocm_copy,cuda_copy,tcp", Family::ze, "ze_copy,tcp"},           // a rewrite made a repeat: dropped
      {"cuda_ipc", Family::ze, "<none>"},                               // nothing would remain
      {"^cuda_copy", Family::ze, "<none>"},                             // exclusions are left alone
      {"^cuda_ipc,cuda_copy", Family::ze, "<none>"},                    // ^ excludes both: ze_copy would deny the node's own
      {"rc,tcp", Family::ze, "<none>"},                                 // no GPU transport
      {"cuda_copy,ze_copy", Family::ze, "<none>"},                      // names this node's already
      {kCudaList, Family::none, "<none>"},                              // no known family
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    CAPTURE(family_name(r.node));
    CHECK(repaired(r.value, r.node) == r.want);
    // Idempotent: a repaired value is this node's and needs no repair.
    std::string once = repaired(r.value, r.node);
    if (once != "<none>") CHECK(repaired(once.c_str(), r.node) == "<none>");
  }
  // A value that does not fit is not repaired (never a cut list).
  char small[8];
  CHECK(repair_value(kCudaList, Family::rocm, small, sizeof small) == Repair::too_long);
  CHECK(std::string(small).empty());
}

TEST_CASE("describe_foreign_entries names the other family's entries as written") {
  char buf[128];
  Text t;
  t.init(buf, sizeof buf);
  describe_foreign_entries("rc,\\cuda_copy,ze_copy,cuda_ipc:aux", Family::ze, t);
  CHECK(std::string(buf) == "\\cuda_copy, cuda_ipc:aux");
}

TEST_CASE("describe_left_out: what a list leaves out of UCX's default") {
  struct Row {
    const char *value;
    Family f;
    const char *want;
  };
  const Row rows[] = {
      {kCudaList, Family::cuda, "sm, self, tcp, cuda_ipc, gdr_copy"},
      {"rc_x,rc,dc_x,dc,rocm_copy", Family::rocm, "sm, self, tcp, rocm_ipc"},
      {"rc_x,rc,dc_x,dc,ze_copy", Family::ze, "sm, self, tcp"},              // ze has no ipc, no gdr
      {"rc,sm,self,tcp,cuda_ipc,cuda_copy", Family::cuda, "gdr_copy"},
      {"rc,posix,self,\\tcp,cuda", Family::cuda, ""},                        // aliases and \ count
      {"rc,cma:aux,self,tcp", Family::none, ""},
      {"all", Family::cuda, ""},
      {"^tcp", Family::cuda, ""},
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    char buf[256];
    Text t;
    t.init(buf, sizeof buf);
    describe_left_out(r.value, r.f, t);
    CHECK(std::string(buf) == r.want);
  }
}

namespace {

struct Env {
  Inputs in;
  Env(std::initializer_list<std::pair<Var, const char *>> kv = {}) {
    for (auto &p : kv) in.var[p.first] = p.second;
  }
};


struct Result {
  Action action;
  std::string value, reasons;
  bool mismatch;
  std::vector<Need> asked;
};

// The decision with the probe loop played by the test: an unknown family fact is filled from
// `node` when decide() asks for it, and the asks are recorded.
Result decide_keep(const Env &e, Family node, bool quiet) {
  Settings s;
  parse_settings(e.in, &s);
  Facts f = node_of(node);
  Facts known = f;
  for (Family g : {Family::cuda, Family::rocm, Family::ze}) f.family[int(g)].value = Tri::unknown;
  Decision d;
  Result r;
  for (int i = 0; i < 8; i++) {
    decide(e.in, s, f, &d, !quiet);
    if (d.action != Action::undecided) break;
    r.asked.push_back(d.need);
    Family g = d.need == Need::cuda ? Family::cuda : d.need == Need::rocm ? Family::rocm : Family::ze;
    f.family[int(g)].value = known.family[int(g)].value;
  }
  r.action = d.action;
  r.value = d.action == Action::repair || d.action == Action::set ? d.value : "";
  char reason[kReasonMax];
  for (int i = 0; i < d.nsteps; i++) {
    render_reason(Decided{e.in, s, f, d}, i, reason, sizeof reason);
    r.reasons += std::string(reason) + "; ";
  }
  r.mismatch = d.mismatch;
  return r;
}

}  // namespace

TEST_CASE("step 3: a kept value of another family is named, and repaired only when asked") {
  // Quiet (no debug line) and no repair: nothing is probed, the value is kept.
  Result quiet = decide_keep(Env{{kUcxTls, kCudaList}}, Family::ze, true);
  CHECK(quiet.action == Action::keep);
  CHECK(quiet.asked.empty());
  CHECK_FALSE(quiet.mismatch);

  // The debug line (not quiet): the family is probed, the mismatch named with the way out.
  Result named = decide_keep(Env{{kUcxTls, kCudaList}}, Family::ze, false);
  CHECK(named.action == Action::keep);
  CHECK(named.mismatch);
  CHECK(named.reasons.find("it names cuda_copy but this node's GPUs are ze: UCXTLS_REPAIR=1 rewrites them, or unset UCX_TLS") !=
        std::string::npos);

  // UCXTLS_REPAIR=1, quiet: repaired all the same.
  Result fixed = decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "1"}}, Family::ze, true);
  CHECK(fixed.action == Action::repair);
  CHECK(fixed.value == "rc_x,rc,dc_x,dc,ze_copy");
  Result amd = decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "1"}}, Family::rocm, false);
  CHECK(amd.action == Action::repair);
  CHECK(amd.value == "rc_x,rc,dc_x,dc,rocm_copy");
  CHECK(amd.reasons.find("rewritten to this node's family") != std::string::npos);

  // Left alone: the node's own family, an exclusion list that leaves this node's copy transport,
  // a node with no known family, UCXTLS_REPAIR=0, and nothing left to write. (A value without any
  // GPU transport gets the node's appended: "step 3: a kept value without this node's copy
  // transport" below.)
  CHECK(decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "1"}}, Family::cuda, false).action == Action::keep);
  Result excl = decide_keep(Env{{kUcxTls, "^cuda_ipc"}, {kRepair, "1"}}, Family::ze, false);
  CHECK(excl.action == Action::keep);
  CHECK_FALSE(excl.mismatch);
  // A deny list of several entries: the ^ covers them all, so cuda_copy is denied, not named.
  Result deny = decide_keep(Env{{kUcxTls, "^cuda_ipc,cuda_copy"}, {kRepair, "1"}}, Family::ze, false);
  CHECK(deny.action == Action::keep);
  CHECK_FALSE(deny.mismatch);
  Result nofam = decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "1"}}, Family::none, false);
  CHECK(nofam.action == Action::keep);
  CHECK_FALSE(nofam.mismatch);
  CHECK(decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "0"}}, Family::ze, true).action == Action::keep);
  Result empty = decide_keep(Env{{kUcxTls, "cuda_ipc"}, {kRepair, "1"}}, Family::ze, false);
  CHECK(empty.action == Action::keep);
  CHECK(empty.reasons.find("nothing would remain") != std::string::npos);

  // Forced family: UCXTLS_ACCEL says what this node is, nothing is probed.
  Result forced = decide_keep(Env{{kUcxTls, kCudaList}, {kRepair, "1"}, {kAccel, "rocm"}}, Family::cuda, true);
  CHECK(forced.action == Action::repair);
  CHECK(forced.value == "rc_x,rc,dc_x,dc,rocm_copy");
  CHECK(forced.asked.empty());

  // Our own inherited value is derived again, not repaired (step 3's first rule): the default
  // writes all on Intel GPUs, UCXTLS_WRITE=always the template's value.
  Result ours = decide_keep(Env{{kUcxTls, kCudaList}, {kDerived, kCudaList}, {kRepair, "1"}}, Family::ze, true);
  CHECK(ours.action == Action::set);
  CHECK(ours.value == "all");
  Result always = decide_keep(Env{{kUcxTls, kCudaList}, {kDerived, kCudaList}, {kRepair, "1"}, {kWrite, "always"}}, Family::ze, true);
  CHECK(always.action == Action::set);
  CHECK(always.value == "rc_x,rc,dc_x,dc,ze_copy");
}

TEST_CASE("copy_verdict: can UCX carry the node's GPU memory with this value?") {
  struct Row {
    const char *value;
    Family node;
    Copy verdict;
  };
  const Row rows[] = {
      {"tcp", Family::cuda, Copy::lacks},                  // Slurm's UCX_TLS=tcp on an NVIDIA node
      {"sm,self,tcp,cuda_ipc", Family::cuda, Copy::lacks},  // cuda_ipc does not detect the memory type
      {"tcp,gdr_copy", Family::cuda, Copy::lacks},
      {"tcp,cuda_copy", Family::cuda, Copy::carries},
      {"tcp,\\cuda_copy", Family::cuda, Copy::carries},     // the transport itself
      {"tcp,cuda_copy:aux", Family::cuda, Copy::carries},  // named (as UCX matches it)
      {"tcp,cuda", Family::cuda, Copy::carries},           // the alias holds it
      {"tcp,\\cuda", Family::cuda, Copy::lacks},            // a transport named cuda: none
      {"all", Family::cuda, Copy::carries},
      {"tcp,all", Family::cuda, Copy::lacks},              // all only as the first item (else a parse error)
      {"^cuda_copy", Family::cuda, Copy::denied},
      {"^cuda", Family::cuda, Copy::denied},               // the alias denies its members
      {"^ib,cuda_copy", Family::cuda, Copy::denied},       // the ^ covers every entry
      {"^\\cuda", Family::cuda, Copy::carries},             // denies a transport named cuda: none
      {"^cuda_ipc", Family::cuda, Copy::carries},
      {"^ib", Family::cuda, Copy::carries},
      {"rc_x,rc,dc_x,dc,cuda_copy", Family::ze, Copy::lacks},  // another family's list
      {"tcp", Family::ze, Copy::lacks},
      {"tcp,ze", Family::ze, Copy::carries},
      {"^ze", Family::ze, Copy::denied},
      {"tcp,rocm_copy", Family::rocm, Copy::carries},
      {"^rocm_copy", Family::rocm, Copy::denied},
      {"tcp", Family::none, Copy::carries},                // no GPU: nothing to carry
      {"", Family::cuda, Copy::carries},                   // empty, ^: UCX refuses them for their own reason
      {"^", Family::cuda, Copy::carries},
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    CAPTURE(family_name(r.node));
    CHECK(copy_verdict(r.value, r.node) == r.verdict);
  }
}

TEST_CASE("step 3: a kept value without this node's copy transport is named; UCXTLS_REPAIR appends it") {
  struct Row {
    const char *value;
    Family node;
    bool repair;
    Action action;
    const char *written;  // the repaired value ("" when kept)
    const char *words;    // in the debug line
  };
  const Row rows[] = {
      {"tcp", Family::cuda, false, Action::keep, "",
       "it names no cuda_copy (nor cuda, nor all): GPU memory looks like host memory to UCX (NIXL: \"VRAM memory is "
       "detected as host by UCX.\"); add cuda_copy (UCXTLS_REPAIR=1 appends it) or unset UCX_TLS"},
      {"tcp", Family::cuda, true, Action::repair, "tcp,cuda_copy", "; UCXTLS_REPAIR=1: cuda_copy appended"},
      {"sm,self,tcp", Family::ze, true, Action::repair, "sm,self,tcp,ze_copy", "UCXTLS_REPAIR=1: ze_copy appended"},
      {"rc,tcp", Family::rocm, true, Action::repair, "rc,tcp,rocm_copy", "UCXTLS_REPAIR=1: rocm_copy appended"},
      {"sm,self,tcp,cuda_ipc", Family::cuda, true, Action::repair, "sm,self,tcp,cuda_ipc,cuda_copy", "cuda_copy appended"},
      // A deny list is named, never repaired: removing the user's own ^ entry is theirs to do.
      {"^cuda_copy", Family::cuda, true, Action::keep, "",
       "it denies cuda_copy: GPU memory looks like host memory to UCX (NIXL: \"VRAM memory is detected as host by UCX.\"); "
       "take cuda_copy out of the ^ list or unset UCX_TLS"},
      {"^ze", Family::ze, false, Action::keep, "", "it denies ze_copy"},
      // Values that carry it: kept, nothing said.
      {"tcp,cuda_copy", Family::cuda, true, Action::keep, "", ""},
      {"tcp,cuda", Family::cuda, true, Action::keep, "", ""},
      {"all", Family::cuda, true, Action::keep, "", ""},
      {"tcp", Family::none, true, Action::keep, "", ""},
      // Another family's list: rewritten (not appended), as before.
      {kCudaList, Family::ze, true, Action::repair, "rc_x,rc,dc_x,dc,ze_copy", "rewritten to this node's family"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.value);
    CAPTURE(family_name(r.node));
    CAPTURE(r.repair);
    Env env{{kUcxTls, r.value}};
    if (r.repair) env.in.var[kRepair] = "1";
    Result got = decide_keep(env, r.node, false);
    CAPTURE(got.reasons);
    CHECK(got.action == r.action);
    CHECK(got.value == r.written);
    if (r.words[0]) CHECK(got.reasons.find(r.words) != std::string::npos);
    else CHECK(got.reasons.find("looks like host memory") == std::string::npos);
  }
  // Quiet (no debug line) and no repair: nothing is probed, the value is kept.
  Result quiet = decide_keep(Env{{kUcxTls, "tcp"}}, Family::cuda, true);
  CHECK(quiet.action == Action::keep);
  CHECK(quiet.asked.empty());
  // Too long with it: kept, with the reason.
  std::string huge(kValueMax - 5, 'x');
  Result big = decide_keep(Env{{kUcxTls, huge.c_str()}, {kRepair, "1"}}, Family::cuda, false);
  CHECK(big.action == Action::keep);
  CHECK(big.reasons.find("UCXTLS_REPAIR=1: too long with it, kept") != std::string::npos);
}

// Repair never adopts the marker: a stale UCXTLS_DERIVED beside a kept value is
// removed by the repair, even when the repaired value equals it, so that no later process takes
// the user's repaired value for ours and re-derives it.
TEST_CASE("repair: a stale marker goes, even one equal to the repaired value; never kept beside it") {
  Env e{{kUcxTls, "rc,cuda_copy"}, {kDerived, "rc,ze_copy"}, {kRepair, "1"}};
  Result r = decide_keep(e, Family::ze, false);
  CHECK(r.action == Action::repair);
  CHECK(r.value == "rc,ze_copy");  // equal to the stale marker
  CHECK(r.reasons.find("UCXTLS_DERIVED (a stale marker) removed") != std::string::npos);
  Settings s;
  parse_settings(e.in, &s);
  Decision d;
  d.action = Action::repair;
  CHECK(repair_drops_marker(e.in, d));
  Env unmarked{{kUcxTls, "rc,cuda_copy"}, {kRepair, "1"}};
  CHECK_FALSE(repair_drops_marker(unmarked.in, d));
  CHECK(decide_keep(unmarked, Family::ze, false).reasons.find("stale marker") == std::string::npos);
  Env other_marker{{kUcxTls, "rc,cuda_copy"}, {kDerived, "tcp"}, {kRepair, "1"}};
  CHECK(repair_drops_marker(other_marker.in, d));
  for (Action a : {Action::set, Action::keep, Action::skip, Action::clear}) {
    d.action = a;
    CHECK_FALSE(repair_drops_marker(e.in, d));  // a set writes its own marker; the rest keep theirs
  }
}

// A kept value whose repair does not fit in a value the library writes is kept, and the reason
// says so (not "nothing would remain").
TEST_CASE("repair: a value too long to repair is kept, with the true reason") {
  std::string kept = "cuda_copy";
  while (kept.size() < kValueMax + 100) kept += ",tcp";
  Result r = decide_keep(Env{{kUcxTls, kept.c_str()}, {kRepair, "1"}}, Family::ze, false);
  CHECK(r.action == Action::keep);
  CHECK(r.reasons.find("nothing would remain") == std::string::npos);
  CHECK(r.reasons.find("would be longer than 4095 bytes, so it is kept") != std::string::npos);
  // At the boundary: a rewrite that grows (ze -> cuda, 2 bytes) past 4095 bytes is too long; one
  // that still fits is repaired.
  std::string fits = "ze";
  while (fits.size() < kValueMax - 1 - 2) fits += ",t";
  fits.resize(kValueMax - 1 - 2);  // 4093 bytes: 4095 after the rewrite
  if (fits.back() == ',') fits.back() = 't';
  char out[kValueMax];
  CHECK(repair_value(fits.c_str(), Family::cuda, out, sizeof out) == Repair::repaired);
  CHECK(std::string(out).size() == kValueMax - 1);
  std::string over = fits + "t";  // 4094 bytes: 4096 after the rewrite
  CHECK(repair_value(over.c_str(), Family::cuda, out, sizeof out) == Repair::too_long);
  CHECK(out[0] == '\0');
  CHECK(repair_value("cuda_ipc", Family::ze, out, sizeof out) == Repair::nothing_remains);
  CHECK(repair_value("rc,ze_copy", Family::ze, out, sizeof out) == Repair::no_mismatch);
}

TEST_CASE("apply: a repair writes UCX_TLS only when it changes it") {
  Env e{{kUcxTls, kCudaList}};
  Decision d;
  d.action = Action::repair;
  snprintf(d.value, sizeof d.value, "%s", "rc_x,rc,dc_x,dc,ze_copy");
  CHECK(env_needs_write(e.in, d));
  CHECK(std::string(effective_value(e.in, d)) == "rc_x,rc,dc_x,dc,ze_copy");
  Env same{{kUcxTls, "rc_x,rc,dc_x,dc,ze_copy"}};
  CHECK_FALSE(env_needs_write(same.in, d));
}
