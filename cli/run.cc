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

// The program execvp would run for name: itself when it has a slash, else the first executable in
// PATH (the caller's; "/bin:/usr/bin" when unset, as execvp). "" when none.
std::string program_path(const char *name) {
  if (strchr(name, '/')) return name;
  const char *path = getenv("PATH");
  for (const std::string &dir : split(path ? path : "/bin:/usr/bin", ":")) {
    std::string p = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;  // execve runs a regular file only: a FIFO or directory there is passed over
    if (access(p.c_str(), X_OK) == 0 && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return p;
  }
  return "";
}

// The DT_NEEDED names of an ELF file; none for anything else (a script, a file it cannot read).
std::vector<std::string> elf_needed(const std::string &path) {
  ElfDynamic e;
  return read_elf_dynamic(path, &e) ? e.needed : std::vector<std::string>();
}

// AddressSanitizer's runtime, when the program links it dynamically (gcc's default: NEEDED
// libasan.so.N; clang's -shared-libsan: libclang_rt.asan-<arch>.so). It must be the first library
// of the process, and ld.so puts every LD_PRELOAD entry before NEEDED ones: so it goes first in
// LD_PRELOAD, by the name the program gives it (ld.so finds it as it would have). "" when none.
std::string asan_runtime(const char *program) {
  const std::string path = program_path(program);
  if (path.empty()) return "";
  for (const std::string &n : elf_needed(path))
    if (!n.compare(0, 10, "libasan.so") || !n.compare(0, 16, "libclang_rt.asan")) return n;
  return "";
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

  // The caller's environment as it was at exec (see Environment), with the library after the
  // LD_PRELOAD entries that ld.so would use: AddressSanitizer refuses to start unless its runtime
  // is first (a user's LD_PRELOAD=libasan.so), and the library exports nothing, so its place in the
  // list decides nothing else (docs/install.md, "AddressSanitizer"). With several LD_PRELOAD
  // entries in the environment ld.so reads the last (glibc's rtld walks them all; measured with
  // Debian 12's glibc 2.36): that one is kept, the others go (a duplicate would only confuse).
  Environment env;
  env.load();
  const char *old = nullptr;
  for (char *const *e = env.envp(); *e; e++)
    if (!strncmp(*e, "LD_PRELOAD=", 11)) old = *e + 11;
  std::string list = old ? old : "";
  // A program that names ASan's runtime in its DT_NEEDED, started with nothing that puts that
  // runtime first: it goes first, so that the program starts (it would refuse any preload).
  const std::string asan = asan_runtime(argv[i]);
  bool asan_first = false;
  for (const std::string &entry : split(list.c_str(), ": ")) {
    const size_t slash = entry.rfind('/');
    const std::string base = slash == std::string::npos ? entry : entry.substr(slash + 1);
    asan_first = !base.compare(0, 10, "libasan.so") || !base.compare(0, 16, "libclang_rt.asan");
    break;
  }
  if (!asan.empty() && !asan_first) list = list.empty() ? asan : asan + ":" + list;
  if (!preload_has(list.c_str(), lib)) list = list.find_first_not_of(": ") == std::string::npos ? lib : list + ":" + lib;
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
