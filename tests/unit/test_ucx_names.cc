// Unit tests of UCX's transport names (shim/ucx_names.h): the table agrees with itself, and its
// aliases with those of a real libucp (RAPIDS' and NIXL's wheels), read as doctor reads a build.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "../../cli/elf.h"
#include "text.h"
#include "ucx_names.h"

using namespace ucxtls;
using namespace ucxtls::cli;

namespace {

std::vector<std::string> members_of(const UcxName &u) {
  std::vector<std::string> out;
  Items items(u.members);
  const char *m;
  size_t n;
  while (u.members[0] && items.next(&m, &n)) out.push_back(std::string(m, n));
  return out;
}

std::string without_aux(const std::string &m) { return m.substr(0, m.find(':')); }

}  // namespace

TEST_CASE("ucx names: the table agrees with itself") {
  for (size_t i = 0; i < kUcxNameCount; i++) {
    const UcxName &u = kUcxNames[i];
    CAPTURE(u.name);
    CHECK(ucx_name(u.name) == &u);  // names are unique
    CHECK((i == 0 || kUcxNames[i - 1].family != Family::none || u.family == Family::none));  // families first
    if (u.role != Role::alias) {
      CHECK((u.device == Device::gpu) == (u.family != Family::none));
      CHECK(u.members[0] == '\0');
      CHECK(u.module[0] != '\0');
      continue;
    }
    REQUIRE(u.members[0] != '\0');
    for (const std::string &m : members_of(u)) {  // each member is a transport of the table
      CAPTURE(m);
      const UcxName *t = ucx_name(without_aux(m).c_str());
      REQUIRE(t != nullptr);
      CHECK(t->role != Role::alias);
      CHECK(t->family == u.family);
    }
  }
  for (Family f : {Family::cuda, Family::rocm, Family::ze}) {
    CAPTURE(family_name(f));
    int copies = 0;
    std::vector<std::string> transports;
    for (size_t i = 0; i < kUcxNameCount; i++) {
      const UcxName &u = kUcxNames[i];
      if (u.family != f) continue;
      copies += u.role == Role::copy;
      if (u.role != Role::alias) transports.push_back(u.name);
      for (size_t j = 0; j < i; j++)  // one shipping transport a role: what repair and the template write
        CHECK_FALSE((u.ships && kUcxNames[j].ships && kUcxNames[j].family == f && kUcxNames[j].role == u.role));
    }
    CHECK(copies == 1);
    CHECK(ucx_name(copy_transport(f))->ships);
    const UcxName *alias = ucx_name(family_name(f));  // the family's alias holds its transports
    REQUIRE(alias != nullptr);
    CHECK(members_of(*alias) == transports);
  }
  CHECK(std::string(family_name(Family::none)) == "none");
  CHECK(std::string(copy_transport(Family::none)).empty());
}

TEST_CASE("ucx names: the names a name selects") {
  struct Row {
    const char *a, *b;
    bool overlap;
  } const rows[] = {
      {"sm", "mm", true},        {"posix", "sm", true},      {"sm", "self", false},    {"ib", "rc_gda", true},
      {"rc", "rc_gda", false},   {"cuda", "cuda_ipc", true}, {"rocm", "cuda", false},  {"ud", "rc", false},  // ud_mlx5:aux
      {"tcp", "tcp", true},      {"foo", "foo", true},       {"foo", "sm", false},     {"rc", "dc", false},
      {"ud_x", "ud", true},
  };
  for (const Row &r : rows) {
    CAPTURE(r.a);
    CAPTURE(r.b);
    CHECK(names_overlap(r.a, strlen(r.a), r.b, strlen(r.b)) == r.overlap);
    CHECK(names_overlap(r.b, strlen(r.b), r.a, strlen(r.a)) == r.overlap);
  }
  CHECK(std::string(ipc_transport(Family::rocm)) == "rocm_ipc");
  CHECK(std::string(ipc_transport(Family::ze)).empty());  // ze_ipc ships in no release
  CHECK(std::string(family_transport(Family::cuda, Role::gdr)) == "gdr_copy");
  CHECK(std::string(family_transport(Family::rocm, Role::gdr)).empty());  // rocm_gdr: removed in 1.14
}

namespace {

// ucp_tl_aliases (src/ucp/core/ucp_context.c) as a libucp holds it: rows of pointers {alias,
// {member, ..., NULL}}, each row padded with NULLs, the table ended by a row of NULLs. Found from
// the pointer to "posix" that follows one to "mm" (the first row); empty when not found.
std::vector<std::pair<std::string, std::string>> libucp_aliases(const ReadAt &read, const ElfObject &o) {
  std::vector<std::pair<std::string, std::string>> out;
  auto text = [&](uint64_t at) {
    std::string s;
    const uint64_t p = relocated_pointer(read, o, at);
    return p && elf_string(read, o, p, 64, &s) ? s : std::string();
  };
  for (uint64_t posix : find_text(read, o, "posix")) {
    uint64_t at = relocation_to(read, o, posix);
    if (!at || text(at - 8) != "mm") continue;
    for (at -= 8;;) {
      std::string name = text(at), members;
      for (at += 8; relocated_pointer(read, o, at); at += 8) members += (members.empty() ? "" : ",") + text(at);
      out.push_back({name, members});
      int nulls = 0;
      while (!relocated_pointer(read, o, at) && nulls < 16) at += 8, nulls++;
      if (nulls >= 12) return out;  // more than a row's padding: the end row
    }
  }
  return out;
}

}  // namespace

TEST_CASE("ucx names: the aliases are UCX's, as the RAPIDS and NIXL wheels' libucp hold them") {
  const char *venv = getenv("UCXTLSTEST_WHEELS");
  if (!venv || !*venv) {
    const char *why = getenv("UCXTLSTEST_WHEELS_SKIP");
    const std::string reason = why && *why ? why : "UCXTLSTEST_WHEELS is unset (scripts/test.sh sets it)";
    MESSAGE("SKIP: no real UCX: " << reason);
    return;
  }
  glob_t g{};
  const std::string site = std::string(venv) + "/lib/python3*/site-packages/";
  glob((site + "libucx/lib/libucp.so.0").c_str(), 0, nullptr, &g);
  glob((site + "nixl*.libs/libucp*.so*").c_str(), GLOB_APPEND, nullptr, &g);
  if (g.gl_pathc == 0) MESSAGE("SKIP: no libucp in " << site << "libucx/lib or nixl*.libs");
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const std::string path = g.gl_pathv[i];
    CAPTURE(path);
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const ReadAt read = [fd](void *b, size_t n, off_t off) { return pread(fd, b, n, off); };
    ElfObject o;
    std::string why;
    REQUIRE(read_elf(read, &o, false, &why));
    const auto aliases = libucp_aliases(read, o);
    close(fd);
    REQUIRE_MESSAGE(aliases.size() > 10, "ucp_tl_aliases not found in " << path);
    size_t ours = 0;
    for (size_t k = 0; k < kUcxNameCount; k++) ours += kUcxNames[k].role == Role::alias;
    CHECK(aliases.size() == ours);
    for (const auto &a : aliases) {
      CAPTURE(a.first);
      const UcxName *u = ucx_name(a.first.c_str());
      REQUIRE(u != nullptr);
      CHECK(u->role == Role::alias);
      CHECK(std::string(u->members) == a.second);
    }
  }
  globfree(&g);
}
