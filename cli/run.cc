// `ucxtls run [--] COMMAND [ARGS...]`: exec COMMAND with libucxtls.so, the one installed with this
// command, added at the end of LD_PRELOAD.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "commands.h"
#include "elf.h"
#include "environment.h"
#include "exit.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

bool is_asan(const std::string &name) { return !name.compare(0, 10, "libasan.so") || !name.compare(0, 16, "libclang_rt.asan"); }

// AddressSanitizer's runtime, when the program links it dynamically (gcc's default: NEEDED
// libasan.so.N; clang's -shared-libsan: libclang_rt.asan-<arch>.so). It must be the first library
// of the process, and ld.so puts every LD_PRELOAD entry before NEEDED ones: so it goes first in
// LD_PRELOAD, by the name the program gives it (ld.so finds it as it would have). "" when none.
std::string asan_runtime(const char *program) {
  // The program execvp would run: itself when named with a slash, else the caller's PATH's
  // ("/bin:/usr/bin" when unset, as execvp).
  const char *search = getenv("PATH");
  const std::string path = strchr(program, '/') ? program : find_in_path(program, search ? search : "/bin:/usr/bin");
  // Its DT_NEEDED names; none for anything else (a script, a file it cannot read).
  struct stat st;
  const int fd = path.empty() ? -1 : open_regular_at(AT_FDCWD, path.c_str(), false, &st);
  ElfObject o;
  std::string why;
  const bool ok = fd >= 0 && read_elf([fd](void *b, size_t n, off_t off) { return pread(fd, b, n, off); }, &o, false, &why);
  if (fd >= 0) close(fd);
  for (const std::string &n : o.needed)
    if (ok && is_asan(n)) return n;
  return "";
}

// The library installed with this command (beside it: a build tree; in libdir: an install tree), as
// an LD_PRELOAD entry can name it: 0, or the failure's exit status after its line.
int preload_library(const char *cmd, std::string *lib) {
  std::string dir, looked = "/proc/self/exe (unreadable)", candidates[2];
  if (own_directory(&dir)) {
    install_candidates(dir, "libucxtls.so", candidates);
    looked = candidates[0] + ", " + candidates[1];
  }
  char real[PATH_MAX];
  for (const std::string &c : candidates)
    if (lib->empty() && !c.empty() && access(c.c_str(), R_OK) == 0 && realpath(c.c_str(), real)) *lib = real;
  if (lib->empty())
    return fail(kUsage, std::string(cmd) + ": libucxtls.so not found beside this command (looked at " + looked + ")");
  if (lib->find_first_of(": ") != std::string::npos)
    return fail(kUsage, std::string(cmd) + ": the library path " + *lib +
                            " has a space or colon, which LD_PRELOAD cannot hold");
  return 0;
}

}  // namespace

int cmd_run(int argc, char **argv) {
  int i = 0;
  if (i < argc && !strcmp(argv[i], "--")) i++;
  if (i >= argc) return fail(kUsage, "run: no command given (ucxtls run [--] COMMAND [ARGS...])");
  std::string lib;
  if (int status = preload_library("run", &lib)) return status;

  // The caller's environment at exec (see Environment), the library after the LD_PRELOAD entries:
  // ASan's runtime must be first, and the library exports nothing (docs/install.md,
  // "AddressSanitizer"). Of several LD_PRELOAD variables ld.so reads the last (glibc's rtld walks
  // them all; measured with Debian 12's glibc 2.36): that one is kept, the others go.
  Environment env;
  env.load();
  const char *old = env_lookup(env.envp(), "LD_PRELOAD", Dup::last);
  std::string list = old ? old : "";
  // A program that names ASan's runtime in its DT_NEEDED, started with nothing that puts that
  // runtime first: it goes first, so that the program starts (it would refuse any preload).
  const std::string asan = asan_runtime(argv[i]);
  const std::string first = split(list.c_str(), ": ")[0];  // split gives one item at least
  const bool asan_first = is_asan(base_name(first));
  if (!asan.empty() && !asan_first) list = list.empty() ? asan : asan + ":" + list;
  const std::vector<std::string> entries = split(list.c_str(), ": ");  // LD_PRELOAD's separators
  if (std::find(entries.begin(), entries.end(), lib) == entries.end())
    list = list.find_first_not_of(": ") == std::string::npos ? lib : list + ":" + lib;
  std::string preload = "LD_PRELOAD=" + list;
  std::vector<char *> envp;
  for (char *const *e = env.envp(); *e; e++)
    if (strncmp(*e, "LD_PRELOAD=", 11)) envp.push_back(*e);
  envp.push_back(&preload[0]);
  envp.push_back(nullptr);
  fflush(stdout);
  execvpe(argv[i], argv + i, envp.data());
  int err = errno;
  // 127 for a command not found, 126 for one that cannot run: as shells report them.
  return fail(err == ENOENT ? 127 : 126, std::string("run: cannot run '") + argv[i] + "': " + strerror(err));
}

// `ucxtls lib`: the path `run` would preload, for LD_PRELOAD="$(ucxtls lib)".
int cmd_lib(int argc, char **argv) {
  if (argc > 0) return fail(kUsage, std::string("lib: unknown argument '") + argv[0] + "' (ucxtls lib --help)");
  std::string lib;
  if (int status = preload_library("lib", &lib)) return status;
  printf("%s\n", lib.c_str());
  return 0;
}

}  // namespace cli
}  // namespace ucxtls
