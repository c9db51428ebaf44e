// Rows that catch plausible bugs in the library (a mutation run planted single bugs in shim/
// that no test caught). Each row names the rule and the bug it catches; each was
// checked by planting that bug by hand: the row fails, and passes again once it is reverted.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core.h"
#include "driver_cache.h"
#include "driver_report.h"
#include "environ_edit.h"
#include "repair.h"
#include "temp_tree.h"
#include "unit_facts.h"

using namespace ucxtls;

namespace {

struct Env {
  Inputs in;
  Env(std::initializer_list<std::pair<Var, const char *>> kv = {}) {
    for (auto &p : kv) in.var[p.first] = p.second;
  }
};

std::vector<std::string> listed(char *const *arr) {
  std::vector<std::string> out;
  for (char *const *e = arr; e && *e; e++) out.emplace_back(*e);
  return out;
}

Decision decided(const Env &e, Family node, bool explained = true) {
  Settings s;
  parse_settings(e.in, &s);
  Decision d;
  decide(e.in, s, node_of(node), &d, explained);
  return d;
}

}  // namespace

// Bug: the room check off by one (`size + missing > room_cap`, or `>=` for `>`): when the
// environment grew by exactly one entry between the scan and the write, the new array is written
// one pointer past its room. Rows at the boundary: grown by one is refused and nothing is
// written, not even the slot past the room; the same size fits exactly.
TEST_CASE("env_write: the environment grew by exactly one entry since the scan: nothing added, nothing past the room") {
  char tls[] = "UCX_TLS=v", derived[] = "UCXTLS_DERIVED=v";
  char *const entries[] = {tls, derived};
  const char *const names[] = {"UCX_TLS", "UCXTLS_DERIVED"};
  std::string a = "A=1", b = "B=2", c = "C=3";
  std::vector<char *> scanned = {&a[0], &b[0], nullptr};
  int missing = 0;
  const size_t count = env_scan(scanned.data(), names, 2, &missing);
  REQUIRE(count == 2);
  REQUIRE(missing == 2);
  const size_t cap = count + size_t(missing) + 1;  // as process_env_write sizes it
  char *const sentinel = reinterpret_cast<char *>(0x5a);
  for (size_t grown : {size_t(0), size_t(1)}) {
    CAPTURE(grown);
    std::vector<char *> now = {&a[0], &b[0]};
    if (grown) now.push_back(&c[0]);
    now.push_back(nullptr);
    std::vector<char *> room(cap + 1, sentinel);  // one slot past the room, to see a write there
    char **env = now.data();
    char *added[2] = {};
    const int k = env_write(&env, entries, 2, room.data(), cap, added);
    CHECK(room[cap] == sentinel);
    if (grown) {
      CHECK(k == -1);
      CHECK(env == now.data());
      CHECK(room[0] == sentinel);
      CHECK(listed(env) == std::vector<std::string>{"A=1", "B=2", "C=3"});
    } else {
      CHECK(k == 2);
      CHECK(env == room.data());
      CHECK(listed(env) == std::vector<std::string>{"A=1", "B=2", "UCX_TLS=v", "UCXTLS_DERIVED=v"});
    }
  }
}

// Bug: a word compared as a prefix (memcmp over the word's length only): UCXTLS_ACCEL=cuda12 read
// as cuda, UCXTLS_PROBE=drivers as driver. Rows in test_core.cc, "settings: invalid values".

// Bug: the "never write ^ alone" check dropped (only the empty result kept): UCXTLS_TEMPLATE=^{copy}
// on a node without a GPU composes to "^", which UCX reads as "exclude nothing"... or rejects.
TEST_CASE("compose: a value of ^ alone is never written") {
  for (const char *tmpl : {"^{copy}", "^{ipc}", "^{rdma}", "^{copy},{ipc}"}) {
    CAPTURE(tmpl);
    Env e{{kTemplate, tmpl}, {kAccel, "none"}};
    Facts f = node_of(Family::none);
    f.rdma.value = Tri::no;
    Settings s;
    parse_settings(e.in, &s);
    Decision d;
    decide(e.in, s, f, &d);
    CHECK(d.action == Action::skip);
    CHECK(std::string(d.value).empty());
    // Inherited from another node: removed, never replaced by ^.
    Env inherited{{kTemplate, tmpl}, {kAccel, "none"}, {kUcxTls, "rc,cuda_copy"}, {kDerived, "rc,cuda_copy"}};
    decide(inherited.in, s, f, &d);
    CHECK(d.action == Action::clear);
    CHECK(effective_value(inherited.in, d) == nullptr);
  }
  Env no_gpu{{kTemplate, "^{copy}"}};  // the probe finds no family here
  Decision d = decided(no_gpu, Family::none);
  CHECK(d.action == Action::skip);
  CHECK(std::string(d.value).empty());
}

// Bug: the repair made while a setting of ours is invalid (the `s.invalid` guard dropped): an
// invalid setting means the library does nothing else (ladder step 4), a kept value included.
TEST_CASE("repair: a kept value is not repaired while a setting is invalid") {
  const char *const cuda_list = "rc_x,rc,dc_x,dc,cuda_copy";
  for (auto bad : std::vector<std::pair<Var, const char *>>{{kAccel, "foo"}, {kTemplate, "rc, {copy}"},
                                                            {kProbe, "nvml"}, {kDebug, "maybe"}}) {
    CAPTURE(kOptions[bad.first].name);
    Env e{{kUcxTls, cuda_list}, {kRepair, "1"}, bad};
    Decision d = decided(e, Family::ze);
    CHECK(d.action != Action::repair);
    CHECK(effective_value(e.in, d) == std::string(cuda_list));
    CHECK_FALSE(env_needs_write(e.in, d));
  }
  Env good{{kUcxTls, cuda_list}, {kRepair, "1"}};  // the control: valid settings repair
  CHECK(decided(good, Family::ze).action == Action::repair);
}

// Bug: the repeat check compares an entry as a prefix of an earlier one: `cuda_copy,rocm` on ze
// becomes `ze_copy,ze`, and `ze` (the alias) must stay: it is not a repeat of `ze_copy`.
TEST_CASE("repair: a rewritten entry that is a prefix of an earlier one is not a repeat") {
  struct Row {
    const char *value;
    Family node;
    const char *want;
  } rows[] = {{"cuda_copy,rocm", Family::ze, "ze_copy,ze"},
              {"rocm_copy,ze", Family::cuda, "cuda_copy,cuda"},
              {"ze_copy,ze", Family::rocm, "rocm_copy,rocm"},
              {"cuda_copy,cuda_copy", Family::ze, "ze_copy"},  // a real repeat still goes
              {"ze,rocm_copy", Family::cuda, "cuda,cuda_copy"}};
  for (const Row &r : rows) {
    CAPTURE(r.value);
    char out[kValueMax];
    REQUIRE(repair_value(r.value, r.node, out, sizeof out) == Repair::repaired);
    CHECK(std::string(out) == r.want);
  }
}

// Bug: a cache directory that exists without the file taken as the answer's place (the missing
// file "decided" instead of giving way): $XDG_RUNTIME_DIR/ucxtls made by something else, and the
// answer root saved in /run/ucxtls never read. Two real directories stand for the two places.
TEST_CASE("driver tier: a cache directory without the file gives way to the next place") {
  char first[] = "/tmp/ucxtls-unit-XXXXXX", second[] = "/tmp/ucxtls-unit-XXXXXX";
  REQUIRE(mkdtemp(first) != nullptr);
  REQUIRE(mkdtemp(second) != nullptr);
  REQUIRE(chmod(first, 0755) == 0);
  REQUIRE(chmod(second, 0755) == 0);
  Settings s;
  char boot[kBootIdMax + 8];
  const ssize_t nb = read_boot_id(s, boot, sizeof boot);
  REQUIRE(nb > 0);
  while (boot[strlen(boot) - 1] == '\n') boot[strlen(boot) - 1] = '\0';
  DriverReport r;
  r.boot = boot;
  r.cuda.answer.answered = Tri::yes;
  r.cuda.answer.count = r.cuda.answer.present = 3;
  r.cuda.ndev = 3;
  const char *const uuids[] = {"GPU-00000000-0000-0000-0000-000000000000", "GPU-11111111-1111-1111-1111-111111111111",
                               "GPU-22222222-2222-2222-2222-222222222222"};
  for (int i = 0; i < 3; i++) r.cuda.dev[i] = {uuids[i], "NVIDIA H200"};
  r.ze.answer.answered = Tri::yes;
  char text[kDriverReportMax];
  const size_t n = format_driver_report(r, text, sizeof text);
  REQUIRE(n > 0);
  const std::string file = std::string(second) + "/driver";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, n) == ssize_t(n));
  close(fd);
  Env e;
  DriverFact out;
  const CacheDir places[] = {{first, ""}, {second, ""}};
  probe_driver_at(e.in, s, places, 2, &out);
  CAPTURE(out.evidence);
  CHECK(out.value == Tri::yes);
  CHECK(out.cuda.answered == Tri::yes);
  CHECK(out.cuda.count == 3);
  CHECK(std::string(out.evidence).find(file) != std::string::npos);
  // The first place missing altogether gives way too (the control).
  const std::string gone = std::string(first) + "/absent";
  const CacheDir places2[] = {{gone.c_str(), ""}, {second, ""}};
  probe_driver_at(e.in, s, places2, 2, &out);
  CHECK(out.value == Tri::yes);
  unlink(file.c_str());
  rmdir(second);
  rmdir(first);
}

// Bug: the staleness check made `>=` (a device node as old as the saved answer counts as newer):
// /dev/nvidiactl created in the same clock tick as the answer saved by a boot-time
// `ucxtls probe --save` (a file system with coarse times gives both one stamp), and every process
// on the node throws the answer away. Equal times are not stale; one nanosecond newer is.
TEST_CASE("driver tier: a device node with the same mtime as the saved answer is not stale; one ns newer is") {
  TempTree node, cache;  // the replayed node (UCXTLS_SYSROOT) and the cache directory
  REQUIRE(chmod(cache.root.c_str(), 0755) == 0);
  const char boot[] = "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10";
  node.file("/proc/sys/kernel/random/boot_id", std::string(boot) + "\n");
  node.file("/dev/nvidiactl", "");
  DriverReport rep;
  rep.boot = boot;
  rep.cuda.answer.answered = Tri::yes;
  rep.cuda.answer.count = rep.cuda.answer.present = 1;
  rep.cuda.ndev = 1;
  rep.cuda.dev[0] = {"GPU-00000000-0000-0000-0000-000000000000", "NVIDIA H200"};
  rep.ze.answer.answered = Tri::yes;
  char text[kDriverReportMax];
  const size_t n = format_driver_report(rep, text, sizeof text);
  REQUIRE(n > 0);
  cache.file("/driver", std::string(text, n));
  const std::string file = cache.root + "/driver", ctl = node.root + "/dev/nvidiactl";
  // Times well inside what every file system stores (whole seconds, and a nanosecond part).
  const long long saved_ns = 1764800000LL * 1000000000LL + 123456789LL;
  auto stamp = [](const std::string &path, long long ns) {
    const timespec t[2] = {{time_t(ns / 1000000000LL), long(ns % 1000000000LL)},
                           {time_t(ns / 1000000000LL), long(ns % 1000000000LL)}};
    REQUIRE(utimensat(AT_FDCWD, path.c_str(), t, 0) == 0);
  };
  stamp(file, saved_ns);
  Env e{{kSysroot, node.root.c_str()}};
  Settings s;
  parse_settings(e.in, &s);
  REQUIRE(s.sysroot != nullptr);
  const CacheDir places[] = {{cache.root.c_str(), ""}};
  struct Row {
    long long node_ns;
    bool stale;
  } rows[] = {{saved_ns, false}, {saved_ns + 1, true}, {saved_ns - 1, false}, {saved_ns + 1000000000LL, true}};
  for (const Row &row : rows) {
    CAPTURE(row.node_ns - saved_ns);
    stamp(ctl, row.node_ns);
    struct stat st;
    REQUIRE(stat(ctl.c_str(), &st) == 0);
    // A file system that cannot hold the nanoseconds cannot tell these rows apart: none here can't.
    REQUIRE((long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec == row.node_ns);
    char which[64] = {};
    CHECK(driver_loaded_after(s, saved_ns, which, sizeof which) == row.stale);
    if (row.stale) CHECK(std::string(which) == "/dev/nvidiactl");
    DriverFact out;
    probe_driver_at(e.in, s, places, 1, &out);
    CAPTURE(std::string(out.evidence));
    CHECK((out.value == Tri::yes) == !row.stale);
    CHECK((std::string(out.evidence).find("stale, /dev/nvidiactl is newer") != std::string::npos) == row.stale);
  }
}
