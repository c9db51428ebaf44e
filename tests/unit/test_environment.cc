// Unit tests of the environment edit (shim/environ_edit.h) and of unknown UCXTLS_* variables
// (shim/options.h, shim/lines.h): table rows over plain arrays and names.
#include <doctest/doctest.h>
#include <string.h>

#include <string>
#include <vector>

#include "core.h"
#include "environ_edit.h"
#include "lines.h"
#include "load.h"
#include "options.h"

using namespace ucxtls;

namespace {

// A NULL-terminated environment array over string literals (kept alive by the test).
struct Block {
  std::vector<std::string> text;
  std::vector<char *> ptrs;
  explicit Block(std::initializer_list<const char *> entries) {
    for (const char *e : entries) text.emplace_back(e);
    for (auto &s : text) ptrs.push_back(&s[0]);
    ptrs.push_back(nullptr);
  }
  char **arr() { return ptrs.data(); }
};

std::vector<std::string> listed(char *const *arr) {
  std::vector<std::string> out;
  for (char *const *e = arr; e && *e; e++) out.emplace_back(*e);
  return out;
}

}  // namespace

TEST_CASE("env_write: every entry of a present name, in place, duplicates too, and no other name") {
  Block b{"A=1", "UCX_TLS=old", "UCX_TLSX=keep", "UCX_TL=keep", "UCX_TLS=dup", "UCXTLS_DERIVED=x"};
  char tls[] = "UCX_TLS=new", derived[] = "UCXTLS_DERIVED=new";
  char *const entries[] = {tls, derived};
  char **env = b.arr();
  char *added[2] = {};
  CHECK(env_write(&env, entries, 2, nullptr, 0, added) == 0);
  CHECK(env == b.arr());
  CHECK(listed(env) == std::vector<std::string>{"A=1", "UCX_TLS=new", "UCX_TLSX=keep", "UCX_TL=keep", "UCX_TLS=new",
                                                "UCXTLS_DERIVED=new"});
  CHECK(env[1] == tls);  // the caller's string itself, not a copy
  CHECK(env[4] == tls);
}

TEST_CASE("env_remove: every entry of the name, later entries move down, the array stays") {
  Block b{"UCX_TLS=a", "A=1", "UCX_TLS=b", "UCX_TLS=c", "UCXTLS_DERIVED=a", "B=2"};
  CHECK(env_remove(b.arr(), "UCX_TLS", 7) == 3);
  CHECK(listed(b.arr()) == std::vector<std::string>{"A=1", "UCXTLS_DERIVED=a", "B=2"});
  CHECK(env_remove(b.arr(), "UCXTLS_DERIVED", 14) == 1);
  CHECK(listed(b.arr()) == std::vector<std::string>{"A=1", "B=2"});
  CHECK(env_remove(b.arr(), "A", 1) == 1);
  CHECK(env_remove(b.arr(), "B", 1) == 1);
  CHECK(listed(b.arr()).empty());
  CHECK(env_remove(b.arr(), "B", 1) == 0);
  CHECK(env_remove(nullptr, "B", 1) == 0);
  Block prefix{"UCX_TLS_X=1", "UCX_TL=2"};
  CHECK(env_remove(prefix.arr(), "UCX_TLS", 7) == 0);
  CHECK(listed(prefix.arr()).size() == 2);
}

TEST_CASE("env_value: getenv's answer, the first entry of the exact name") {
  Block b{"UCX_TLSX=no", "UCX_TLS=first", "UCX_TLS=second", "UCX_TLS"};
  CHECK(std::string(env_value(b.arr(), "UCX_TLS")) == "first");
  Block none{"UCX_TLS", "UCX_TL=x"};
  CHECK(env_value(none.arr(), "UCX_TLS") == nullptr);  // an entry without '=' is no variable
  CHECK(env_value(nullptr, "UCX_TLS") == nullptr);
}

TEST_CASE("format_line: a failed write says failed, and what the environment holds; never set") {
  Inputs in;
  Settings s;
  Facts f;
  Decision d;
  d.action = Action::set;
  strcpy(d.value, "rc,cuda_copy");
  d.note(Reason::no_gpu_placeholder);  // any one reason
  const char *why = "the template has no {copy} or {ipc}: no GPU probe";
  char line[kLineMax];
  struct Row {
    const char *failed, *now, *want;
  } rows[] = {
      {nullptr, nullptr, "ucxtls: set UCX_TLS=rc,cuda_copy: "},
      {"no memory", nullptr, "ucxtls: failed to set UCX_TLS=rc,cuda_copy (no memory): UCX_TLS stays unset: "},
      {"no memory", "old", "ucxtls: failed to set UCX_TLS=rc,cuda_copy (no memory): UCX_TLS is \"old\": "},
  };
  for (const Row &r : rows) {
    CAPTURE(r.want);
    CHECK(std::string(line, format_line(Decided{in, s, f, d}, line, sizeof line, r.failed, r.now)) ==
          std::string(r.want) + why + "\n");
  }
  d.action = Action::clear;  // done in place: it cannot fail, and the line never claims it did
  CHECK(std::string(line, format_line(Decided{in, s, f, d}, line, sizeof line, nullptr, nullptr)) ==
        std::string("ucxtls: clear UCX_TLS and UCXTLS_DERIVED: ") + why + "\n");
}

TEST_CASE("env_write: present names in place; the rest in one new array, the old one untouched") {
  char tls[] = "UCX_TLS=v", derived[] = "UCXTLS_DERIVED=v";
  char *const entries[] = {tls, derived};
  const char *const names[] = {"UCX_TLS", "UCXTLS_DERIVED"};
  struct Row {
    std::initializer_list<const char *> start;
    int added;
    std::vector<std::string> want;
  };
  const Row rows[] = {
      {{"A=1", "B=2"}, 2, {"A=1", "B=2", "UCX_TLS=v", "UCXTLS_DERIVED=v"}},                      // set
      {{"UCX_TLS=x", "A=1", "UCXTLS_DERIVED=x"}, 0, {"UCX_TLS=v", "A=1", "UCXTLS_DERIVED=v"}},  // re-derive
      {{"UCXTLS_DERIVED=x", "A=1"}, 1, {"UCXTLS_DERIVED=v", "A=1", "UCX_TLS=v"}},                // a stale marker
      {{}, 2, {"UCX_TLS=v", "UCXTLS_DERIVED=v"}},                                                 // empty environment
  };
  for (const Row &r : rows) {
    Block b(r.start);
    char **env = b.arr();
    int missing = -1;
    const size_t count = env_scan(env, names, 2, &missing);
    CHECK(count == r.start.size());
    CHECK(missing == r.added);
    std::vector<char *> room(count + 3, reinterpret_cast<char *>(1));
    char *added[2] = {};
    CHECK(env_write(&env, entries, 2, r.added ? room.data() : nullptr, r.added ? room.size() : 0, added) == r.added);
    CHECK(listed(env) == r.want);
    if (r.added) {
      CHECK(env == room.data());                        // published: the new array
      CHECK(listed(b.arr()).size() == r.start.size());  // the old array: same length, still readable
      CHECK(added[0] == tls);                           // UCX_TLS is missing in every adding row
    } else {
      CHECK(env == b.arr());
    }
  }
  char **null_env = nullptr;  // after clearenv()
  char *room[3], *added[2];
  int none_missing = -1;
  CHECK(env_scan(null_env, names, 2, &none_missing) == 0);
  CHECK(none_missing == 2);
  CHECK(env_write(&null_env, entries, 2, room, 3, added) == 2);
  CHECK(listed(null_env) == std::vector<std::string>{"UCX_TLS=v", "UCXTLS_DERIVED=v"});
  // The environment grew after the room was sized (another thread's setenv): nothing is added,
  // nothing written past the room, and the array is left as it was.
  Block grown{"A=1", "B=2", "C=3"};
  char **genv = grown.arr();
  char *small[3] = {reinterpret_cast<char *>(1), reinterpret_cast<char *>(1), reinterpret_cast<char *>(1)};
  CHECK(env_write(&genv, entries, 2, small, 3, added) == -1);
  CHECK(genv == grown.arr());
  CHECK(small[0] == reinterpret_cast<char *>(1));
  CHECK(env_write(&genv, entries, 2, nullptr, 0, added) == -1);
}

TEST_CASE("read_inputs: UCXTLS_* names that no option has are counted, the first one kept") {
  Block b{"UCXTLS_ACCELL=ze", "UCXTLS_ACCEL=cuda", "UCXTLS_ACCEL=rocm", "UCX_TLSX=1", "UCXTLS=1",
          "UCXTLS_DEBUGG=1", "ucxtls_debug=1", "HOME=/h"};
  Inputs in;
  read_inputs(b.arr(), &in);
  CHECK(std::string(in.get(kAccel)) == "cuda");
  REQUIRE(in.unknown != nullptr);
  CHECK(std::string(in.unknown) == "UCXTLS_ACCELL=ze");
  CHECK(in.unknown_count == 2);  // a repeated known name is not unknown; UCX_TLSX is UCX's business
  Block clean{"UCXTLS_DEBUG=1", "UCX_TLS=x", "PATH=/bin"};
  read_inputs(clean.arr(), &in);
  CHECK(in.unknown == nullptr);
  CHECK(in.unknown_count == 0);
}

TEST_CASE("closest_option: a close misspelling names the option, anything else nothing") {
  struct Row {
    const char *name;
    const char *want;  // nullptr: no suggestion
  };
  const Row rows[] = {
      {"UCXTLS_ACCELL", "UCXTLS_ACCEL"},     // one extra letter
      {"UCXTLS_ACEL", "UCXTLS_ACCEL"},       // one missing
      {"UCXTLS_ACCLE", "UCXTLS_ACCEL"},      // a swap counts once
      {"UCXTLS_accel", "UCXTLS_ACCEL"},      // case
      {"UCXTLS_DEBG", "UCXTLS_DEBUG"},
      {"UCXTLS_DISABLED", "UCXTLS_DISABLE"},
      {"UCXTLS_TEMPLATES", "UCXTLS_TEMPLATE"},
      {"UCXTLS_PROBE_TIMEOUT", nullptr},     // 3 edits from UCXTLS_PROBE_TIMEOUT_MS
      {"UCXTLS_PROBE_TIMEOUT_S", "UCXTLS_PROBE_TIMEOUT_MS"},
      {"UCXTLS_SYSROT", "UCXTLS_SYSROOT"},
      {"UCXTLS_DERIVE", "UCXTLS_DERIVED"},
      {"UCXTLS_PROBES", "UCXTLS_PROBE"},
      {"UCXTLS_FOO", nullptr},
      {"UCXTLS_X", nullptr},
      {"UCXTLS_", nullptr},
      {"UCXTLS_TLS", nullptr},
      {"UCXTLS_ACCELERATOR_FAMILY_FOR_THE_NODE_AND_MORE_THAN_48_BYTES_LONG", nullptr},
  };
  for (const Row &r : rows) {
    CAPTURE(r.name);
    Var v = closest_option(r.name, strlen(r.name));
    if (r.want) {
      REQUIRE(v != kVarCount);
      CHECK(std::string(kOptions[v].name) == r.want);
    } else {
      CHECK(v == kVarCount);
    }
  }
  // Every option's own name is closest to itself (derived from kOptions, whatever it holds).
  for (int v = 0; v < kOwnVarCount; v++) CHECK(closest_option(kOptions[v].name, strlen(kOptions[v].name)) == Var(v));
}

TEST_CASE("format_unknown_line: one line naming the variable, the suggestion, how many more") {
  Inputs in;
  Settings s;
  char line[kUnknownLineMax];
  CHECK(format_unknown_line(in, s, line, sizeof line) == 0);
  in.unknown = "UCXTLS_ACCELL=ze";
  in.unknown_count = 1;
  size_t n = format_unknown_line(in, s, line, sizeof line);
  CHECK(std::string(line, n) == "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n");
  in.unknown = "UCXTLS_FOO=1";
  in.unknown_count = 3;
  n = format_unknown_line(in, s, line, sizeof line);
  CHECK(std::string(line, n) == "ucxtls: unknown variable UCXTLS_FOO, and 2 more unknown UCXTLS_ variables; ignored\n");
  in.unknown_count = 2;
  n = format_unknown_line(in, s, line, sizeof line);
  CHECK(std::string(line, n) == "ucxtls: unknown variable UCXTLS_FOO, and 1 more unknown UCXTLS_ variable; ignored\n");
  // An entry without '=' is no variable: named as an entry, never "did you mean" its own name.
  for (int v = 0; v < kOwnVarCount; v++) {
    in.unknown = kOptions[v].name;
    in.unknown_count = 1;
    n = format_unknown_line(in, s, line, sizeof line);
    CHECK(std::string(line, n) == std::string("ucxtls: environment entry ") + kOptions[v].name +
                                      " without '=' (it sets nothing); ignored\n");
  }
  // Control bytes and very long names: still one printable line that fits.
  std::string odd = "UCXTLS_A\nB\x1b" + std::string(300, 'Z') + "=1";
  in.unknown = odd.c_str();
  in.unknown_count = 1;
  n = format_unknown_line(in, s, line, sizeof line);
  REQUIRE(n > 0);
  CHECK(n < sizeof line);
  CHECK(line[n - 1] == '\n');
  CHECK(memchr(line, '\n', n - 1) == nullptr);
  CHECK(std::string(line, n).find("UCXTLS_A?B?ZZZ") != std::string::npos);
  CHECK(std::string(line, n).find("...; ignored\n") != std::string::npos);
  Settings off;
  off.disabled = true;
  CHECK(format_unknown_line(in, off, line, sizeof line) == 0);  // off prints nothing
  in.secure = true;
  CHECK(format_unknown_line(in, s, line, sizeof line) == 0);
  in.secure = false;
  char tiny[8];
  n = format_unknown_line(in, s, tiny, sizeof tiny);
  CHECK(n < sizeof tiny);
  CHECK(format_unknown_line(in, s, tiny, 1) == 0);
}

TEST_CASE("load: the environment block read once, parsed; a template to decide with instead") {
  Block b{"UCXTLS_ACCEL=rocm", "UCX_TLS=tcp", "UCXTLS_DERIVED=tcp", "UCXTLS_TEMPLATE=rc,{copy}", "UCXTLS_ACCEL=ze"};
  Inputs in;
  Settings s;
  load(b.arr(), false, &in, &s);
  CHECK_FALSE(in.secure);
  CHECK(std::string(in.get(kUcxTls)) == "tcp");
  CHECK(s.accel_forced);
  CHECK(s.accel == Family::rocm);  // the first occurrence, as getenv
  CHECK(std::string(s.tmpl) == "rc,{copy}");
  Inputs tin;
  Settings ts;
  load(b.arr(), false, &tin, &ts, "tcp,{ipc}");
  CHECK(std::string(ts.tmpl) == "tcp,{ipc}");
  CHECK(ts.template_from_user);
  CHECK(tin.get(kUcxTls) == nullptr);
  CHECK(tin.get(kDerived) == nullptr);
  Inputs bad;
  Settings bs;
  load(b.arr(), false, &bad, &bs, "tcp {copy}");
  CHECK(bs.invalid_var == kTemplate);
}
