// Unit tests of the file layer doctor and the node hook share (cli/root_fs.h): a path never
// resolves outside its root, through ".." or an absolute symbolic link, both by the kernel's
// openat2 RESOLVE_IN_ROOT (where it has it) and by the walker that stands in for it; only regular
// files open; the duplicate rules of an environment lookup.
#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../../cli/root_fs.h"
#include "temp_tree.h"

using namespace ucxtls::files;

namespace {

// What reading path inside t's /r gives: its text, or "E<errno>".
std::string read_in(const TempTree &t, const std::string &path, const std::string &cwd = "/") {
  Root root;
  REQUIRE(root.open(t.root + "/r", cwd, "", 0));
  std::string text;
  int err = 0;
  return read_small(root, path, 100, &text, &err) ? text : "E" + std::to_string(err);
}

}  // namespace

TEST_CASE("root_fs: no path leaves its root, by openat2 or by the walker") {
  TempTree t;
  t.file("/secret", "outside");  // beside the root: what an escape would read
  t.file("/r/secret", "inside");
  t.file("/r/etc/conf", "conf");
  t.link("/r/abs", "/secret");                   // absolute: from the root, not the host's /
  t.link("/r/host", t.root + "/secret");         // the host's path of the outside file: not inside
  t.link("/r/etc/up", "../../../secret");        // relative, climbing past the root
  t.link("/r/etc/loop", "/etc/loop");
  // Whether this kernel (and its seccomp filter) lets openat2 (437) run, asked directly: struct
  // open_how {flags, mode, resolve}, RESOLVE_IN_ROOT 0x10 (include/uapi/linux/openat2.h).
  const uint64_t how[3] = {O_PATH | O_CLOEXEC, 0, 0x10};
  const int probe = int(syscall(437, AT_FDCWD, "/", how, sizeof how));
  const bool kernel = probe >= 0;
  if (kernel) close(probe);
  for (const bool openat2 : {true, false}) {
    CAPTURE(openat2);
    try_openat2 = openat2;
    const unsigned long walked = walks;
    CHECK(read_in(t, "/../secret") == "inside");
    CHECK(read_in(t, "../../secret", "/etc") == "inside");
    CHECK(read_in(t, "/etc/../../../secret") == "inside");
    CHECK(read_in(t, "/abs") == "inside");
    CHECK(read_in(t, "/etc/up") == "inside");
    CHECK(read_in(t, "up", "/etc") == "inside");
    CHECK(read_in(t, "/host") == "E" + std::to_string(ENOENT));
    CHECK(read_in(t, "/etc/loop") == "E" + std::to_string(ELOOP));  // the kernel's ELOOP, then the walker's
    CHECK(read_in(t, "/etc/conf/x") == "E" + std::to_string(ENOTDIR));
    // The kernel resolved every path but the loop (which the walker decides again), or, with
    // openat2 off or absent, the walker every one.
    if (openat2 && kernel) CHECK(walks - walked == 1);
    else CHECK(walks - walked == 9);
    if (openat2 && !kernel) MESSAGE("SKIP the openat2 half: this kernel or its seccomp filter refuses openat2");
  }
  try_openat2 = true;
}

TEST_CASE("root_fs: only a regular file opens, without blocking") {
  TempTree t;
  t.file("/r/etc/conf", "conf");
  REQUIRE(mkfifo((t.root + "/r/fifo").c_str(), 0600) == 0);
  t.made.push_back(t.root + "/r/fifo");
  CHECK(read_in(t, "/fifo") == "E" + std::to_string(EINVAL));
  CHECK(read_in(t, "/etc") == "E" + std::to_string(EISDIR));
  t.link("/r/l", "etc/conf");
  // The errno of a failed open, or 0 when it opened.
  auto open_errno = [&t](const char *name, bool nofollow) {
    struct stat st;
    const int fd = open_regular_at(AT_FDCWD, (t.root + name).c_str(), nofollow, &st);
    return fd >= 0 ? close(fd) * 0 : errno;
  };
  CHECK(open_errno("/r/fifo", false) == EINVAL);
  CHECK(open_errno("/r/l", true) == ELOOP);
  CHECK(open_errno("/r/l", false) == 0);
  std::string text;
  CHECK(read_file(t.root + "/r/l", &text, 4));
  CHECK(text == "conf");
  const bool over = read_file(t.root + "/r/l", &text, 3), efbig = errno == EFBIG;
  CHECK_FALSE(over);
  CHECK(efbig);
  CHECK(text.empty());
}

TEST_CASE("root_fs: an environment lookup takes the first (getenv) or the last (ld.so)") {
  const std::vector<std::string> env = {"A=1", "AB=x", "A=2", "B="};
  CHECK(std::string(env_lookup(env, "A", Dup::first)) == "1");
  CHECK(std::string(env_lookup(env, "A", Dup::last)) == "2");
  CHECK(std::string(env_lookup(env, "B", Dup::last)) == "");
  CHECK(env_lookup(env, "C", Dup::first) == nullptr);
  char a1[] = "A=1", a2[] = "A=2";
  char *const block[] = {a1, a2, nullptr};
  CHECK(std::string(env_lookup(block, "A", Dup::last)) == "2");
  CHECK(path_parts("//a/./b/") == std::vector<std::string>({"a", ".", "b"}));
}
