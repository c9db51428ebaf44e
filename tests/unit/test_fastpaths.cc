// Unit tests of the shortcuts taken for speed (docs/performance.md): they must not change an answer.
#include <doctest/doctest.h>

#include <string>

#include "core.h"

using namespace ucxtls;

TEST_CASE("read_inputs: the first-letter filter and the in-place compare match names exactly") {
  char a[] = "UCX_TLS", b[] = "UCX_TLS_X=1", c[] = "ucx_tls=lower", d[] = "", e[] = "=x",
       f[] = "UCX_TL=short", g[] = "HOMEDIR=/x", h[] = "UCX_TLS==v", i[] = "HOME=", j[] = "\x95" "CX_TLS=hi";
  char *envp[] = {a, b, c, d, e, f, g, j, h, i, nullptr};
  Inputs in;
  read_inputs(envp, &in);
  CHECK(std::string(in.get(kUcxTls)) == "=v");  // the value starts after the first '='
  CHECK(std::string(in.get(kHome)) == "");       // present and empty is not unset
  for (int v = 0; v < kVarCount; v++)
    if (v != kUcxTls && v != kHome) CHECK(in.get(Var(v)) == nullptr);
}

TEST_CASE("read_inputs: every variable of the table is found, each at its first occurrence") {
  std::string entries[2][kVarCount];
  char *envp[2 * kVarCount + 1];
  for (int k = 0; k < 2; k++)
    for (int v = 0; v < kVarCount; v++) {
      entries[k][v] = std::string(kOptions[v].name) + "=" + (k ? "second" : "first") + std::to_string(v);
      envp[k * kVarCount + v] = &entries[k][v][0];
    }
  envp[2 * kVarCount] = nullptr;
  Inputs in;
  read_inputs(envp, &in);
  for (int v = 0; v < kVarCount; v++) CHECK(std::string(in.get(Var(v))) == "first" + std::to_string(v));
  read_inputs(nullptr, &in);
  for (int v = 0; v < kVarCount; v++) CHECK(in.get(Var(v)) == nullptr);
}

TEST_CASE("a Text of no capacity takes nothing (the constructor's probes without evidence)") {
  char buf[4] = {'x', 'y', 'z', '\0'};
  Text t;
  t.init(buf, 0);
  t.add("abc").add(42LL).add_quoted("q").add("de", 2).add(static_cast<const char *>(nullptr));
  CHECK(t.len == 0);
  CHECK(std::string(buf) == "xyz");  // the buffer is not touched
}
