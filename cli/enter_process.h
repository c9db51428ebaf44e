// Where, and as whom, `doctor --pid PID` asks the build that process maps. Loading a UCX runs code
// from its files (constructors, LD_LIBRARY_PATH, UCX modules): code the caller has not vetted, which
// must never run with more privilege than the process already has. So the helper that loads it
// takes the process's place before it is executed: its cgroups, its namespaces (mount, and the
// others it does not share), its root and working directory, its user and group ids and
// supplementary groups, capabilities no more than its own, its bounding set, no_new_privs and last
// its seccomp filters (confinement.h). Its environment is the process's own (ucx_info.h child_env). A process that runs as root loads its build
// as root only from files that only root can change (inspect_safety.h).
#pragma once

#include <sys/types.h>

#include <string>

namespace ucxtls {
namespace cli {

// In the forked child, before it executes the helper (exe_fd, opened before: after a chroot its path
// may not exist there): takes the place of process pid. inside: the libucp to load, as that process
// names it from its own root; envp: the helper's environment. False: why, one line (nothing is
// executed then).
bool enter_process(pid_t pid, const std::string &inside, char *const envp[], std::string *why);

}  // namespace cli
}  // namespace ucxtls
