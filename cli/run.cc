// `ucxtls run [--] COMMAND [ARGS...]`: exec COMMAND with libucxtls.so, the one installed with this
// command, added at the end of LD_PRELOAD.
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "commands.h"
#include "environment.h"
#include "exit.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// The library installed with this command: beside it (build tree), then in libdir (install tree).
bool find_library(std::string *out, std::string *looked) {
  std::string dir;
  if (!own_directory(&dir)) {
    *looked = "/proc/self/exe (unreadable)";
    return false;
  }
  std::string candidates[2];
  install_candidates(dir, "libucxtls.so", candidates);
  for (const std::string &c : candidates) {
    looked->append(looked->empty() ? "" : ", ").append(c);
    char real[PATH_MAX];
    if (access(c.c_str(), R_OK) == 0 && realpath(c.c_str(), real)) {
      *out = real;
      return true;
    }
  }
  return false;
}

// LD_PRELOAD entries are separated by spaces or colons.
bool preload_has(const char *list, const std::string &lib) {
  for (const std::string &entry : split(list, ": "))
    if (entry == lib) return true;
  return false;
}

// The library as an LD_PRELOAD entry can name it: 0, or the failure's exit status after its line.
int preload_library(const char *cmd, std::string *lib) {
  std::string looked;
  if (!find_library(lib, &looked))
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

  // The caller's environment as it was at exec (see Environment), with the library after any
  // LD_PRELOAD entries already there: AddressSanitizer refuses to start unless its runtime is
  // first (a user's LD_PRELOAD=libasan.so), and the library exports nothing, so its place in the
  // list decides nothing else (docs/install.md, "AddressSanitizer").
  Environment env;
  env.load();
  std::vector<char *> envp;
  std::string preload = "LD_PRELOAD=" + lib;
  bool had = false;
  for (char *const *e = env.envp(); *e; e++) {
    if (!strncmp(*e, "LD_PRELOAD=", 11)) {
      if (had) continue;  // ld.so reads the first; a duplicate would only confuse
      had = true;
      const char *old = *e + 11;
      if (preload_has(old, lib)) preload = *e;
      else if (*old) preload = std::string("LD_PRELOAD=") + old + ":" + lib;
      envp.push_back(&preload[0]);
    } else {
      envp.push_back(*e);
    }
  }
  if (!had) envp.push_back(&preload[0]);
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
