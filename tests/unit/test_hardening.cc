// Regression rows for what the hardening work (docs/testing.md) found: each was a fuzzer crash or a
// sanitizer report; the comment names the test that found it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

#include "core.h"
#include "sys.h"

using namespace ucxtls;

TEST_CASE("format_line into a buffer too small for a line writes nothing past it") {
  // fuzz_decide: cap 0 wrote the newline through a null pointer, cap 1 one byte past the end.
  Inputs in;
  Settings s;
  Facts f;
  Decision d;
  d.action = Action::skip;
  const Decided x{in, s, f, d};
  char guard[4] = {'x', 'x', 'x', 'x'};
  CHECK(format_line(x, nullptr, 0) == 0);
  CHECK(format_line(x, guard, 1) == 0);
  CHECK(guard[0] == '\0');
  CHECK(guard[1] == 'x');
  CHECK(format_line(x, guard, 2) == 1);
  CHECK(std::string(guard) == "\n");
  CHECK(guard[2] == 'x');
}

TEST_CASE("format_line stays one line when evidence read from the file system has control bytes") {
  // fuzz_decide invariant: a directory entry or link target named "mlx5_0\nX" (possible under
  // UCXTLS_SYSROOT) went into the debug line verbatim.
  Inputs in;
  Settings s;
  Facts f;
  strcpy(f.rdma.evidence, "no usable RDMA device (HCA mlx5_0\nsecond\x1b[31m)");
  Decision d;
  d.action = Action::skip;
  d.note(Reason::rdma);
  char line[256];
  size_t n = format_line(Decided{in, s, f, d}, line, sizeof line);
  REQUIRE(n > 1);
  CHECK(line[n - 1] == '\n');
  CHECK(strchr(line, '\n') == line + n - 1);
  CHECK(strchr(line, '\x1b') == nullptr);
  CHECK(std::string(line).find("mlx5_0?second?[31m") != std::string::npos);
}

TEST_CASE("visibility lists never count more devices than there are") {
  // fuzz_visibility: optimistic GPU- entries (ids unknown) plus ordinals overcounted.
  DeviceIds two;
  two.n = 2;
  CHECK(rocm_visible_count("1,0,1", "GPU-[10f0,1,0", nullptr, two) == 2);
  CHECK(cuda_visible_count("GPU-a,1,0", two) == 2);
  CHECK(cuda_visible_count("GPU-a,GPU-b,GPU-c", two) == 2);
  DeviceIds none;
  CHECK(cuda_visible_count("GPU-a,0", none) == 0);
}

TEST_CASE("DirReader lists thousands of entries of any name length") {
  // sanitize_fixtures: UBSan reported getdents64 records read through a misaligned buffer.
  char dir[] = "/tmp/ucxtls-dirreader-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::set<std::string> made;
  for (int i = 0; i < 600; i++) {
    std::string name = std::string(size_t(1 + i % 200), char('a' + i % 26)) + std::to_string(i);
    std::string path = std::string(dir) + "/" + name;
    int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    close(fd);
    made.insert(name);
  }
  std::set<std::string> seen;
  {
    DirReader r(Path(nullptr, dir));
    REQUIRE(r.error == 0);  // the directory opened
    while (const char *n = r.next()) seen.insert(n);
    CHECK(r.next() == nullptr);  // stays at the end
  }
  CHECK(seen == made);
  for (auto &n : made) unlink((std::string(dir) + "/" + n).c_str());
  rmdir(dir);
}

TEST_CASE("read_chunks opens regular files only, and leaves a stream's data to its reader") {
  // hostile (./ucx.conf -> /dev/stdin): the ucx.conf scan drained the host's stdin.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  REQUIRE(write(fds[1], "UCX_TLS=x\n", 10) == 10);
  std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  size_t fed = 0;
  int r = read_chunks(Path(nullptr, path.c_str()), 1 << 20, [&](const char *, size_t n) { fed += n; });
  CHECK(absent(r));  // not a regular file: never opened, counted as absent
  CHECK(fed == 0);
  // Devices (./ucx.conf -> /dev/ptmx would allocate a pty) and procfs files of size 0
  // (/proc/kmsg would consume the kernel log) are not regular files of some size either.
  for (const char *dev : {"/dev/null", "/dev/ptmx", "/proc/self/status", "/dev/zero"}) {
    CAPTURE(dev);
    CHECK(absent(read_chunks(Path(nullptr, dev), 1 << 20, [&](const char *, size_t n) { fed += n; })));
  }
  CHECK(fed == 0);
  // A missing file is absent; a failure that is not "not there" is returned as it is.
  CHECK(read_chunks(Path(nullptr, "/nonexistent/ucx.conf"), 1 << 20, [&](const char *, size_t) {}) == -ENOENT);
  std::string longer(600, 'x');
  CHECK(read_chunks(Path(nullptr, ("/" + longer).c_str()), 1 << 20, [&](const char *, size_t) {}) == -ENAMETOOLONG);
  char buf[16] = {};
  fcntl(fds[0], F_SETFL, O_NONBLOCK);  // a drained pipe fails the check instead of hanging
  CHECK(read(fds[0], buf, sizeof buf) == 10);
  close(fds[0]);
  close(fds[1]);
  // A file is still read.
  char name[] = "/tmp/ucxtls-chunks-XXXXXX";
  int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "UCX_TLS=x\n", 10) == 10);
  close(fd);
  fed = 0;
  CHECK(read_chunks(Path(nullptr, name), 1 << 20, [&](const char *, size_t n) { fed += n; }) == 0);
  CHECK(fed == 10);
  // ... also through a symlink.
  std::string link = std::string(name) + ".link";
  REQUIRE(symlink(name, link.c_str()) == 0);
  fed = 0;
  CHECK(read_chunks(Path(nullptr, link.c_str()), 1 << 20, [&](const char *, size_t n) { fed += n; }) == 0);
  CHECK(fed == 10);
  unlink(link.c_str());
  unlink(name);
}

TEST_CASE("read_small under a sysroot opens regular files everyone may read only") {
  // A FIFO, a device or a stream linked where a sysfs attribute belongs, under a user's
  // UCXTLS_SYSROOT: never opened, absent.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  REQUIRE(write(fds[1], "mlx5_0\n", 7) == 7);
  char buf[64];
  char dir[] = "/tmp/ucxtls-small-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string pipe_path = "/proc/self/fd/" + std::to_string(fds[0]);
  const char *const names[] = {"/fifo", "/null", "/zero", "/ptmx"};
  const char *const targets[] = {pipe_path.c_str(), "/dev/null", "/dev/zero", "/dev/ptmx"};
  for (int i = 0; i < 4; i++) {
    CAPTURE(targets[i]);
    REQUIRE(symlink(targets[i], (std::string(dir) + names[i]).c_str()) == 0);
    CHECK(read_small(Path(dir, names[i]), buf, sizeof buf) == -ENOENT);
    unlink((std::string(dir) + names[i]).c_str());
  }
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  CHECK(read(fds[0], buf, sizeof buf) == 7);  // the stream's data is still its reader's
  close(fds[0]);
  close(fds[1]);
  // Without a sysroot the kernel's own attributes are read as they are (a procfs file of size 0).
  CHECK(read_small(Path(nullptr, "/proc/self/stat"), buf, sizeof buf) > 0);
  const std::string file = std::string(dir) + "/ibdev";
  FILE *f = fopen(file.c_str(), "w");
  REQUIRE(f);
  fputs("mlx5_0\n", f);
  fclose(f);
  chmod(file.c_str(), 0644);
  CHECK(read_small(Path(dir, "/ibdev"), buf, sizeof buf) == 7);
  // Under the sysroot, a file not everyone may read is refused, to root too: cannot tell.
  chmod(file.c_str(), 0600);
  CHECK(read_small(Path(dir, "/ibdev"), buf, sizeof buf) == -EACCES);
  CHECK(read_small(Path(nullptr, file.c_str()), buf, sizeof buf) == (geteuid() == 0 ? 7 : -EACCES));
  unlink(file.c_str());
  rmdir(dir);
}
