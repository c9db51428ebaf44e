// Why `doctor --pid` could not read a process's /proc files, in words a user can act on. As root,
// a refused /proc/PID/maps is not "run as root": the kernel lets a reader map another process's
// memory only past its ptrace access check (PTRACE_MODE_READ_FSCREDS, fs/proc/base.c mm_access,
// kernel/ptrace.c __ptrace_may_access), which a user namespace, missing capabilities or an LSM
// refuse whatever the uid. The facts are read cheaply from /proc (nothing is traced); one pure
// function picks the likely cause and the fix.
#pragma once

#include <sys/types.h>

#include <string>

namespace ucxtls {
namespace cli {

struct RefusalFacts {
  bool root = false;          // doctor's effective uid is 0 (in its own user namespace)
  std::string uid_map;        // /proc/self/uid_map's first line, spaces squeezed ("0 0 4294967295": the host's)
  bool maps_cap = true;       // a capability that lets root read any process's maps (CAP_SYS_PTRACE, CAP_SYS_ADMIN or
                              // CAP_PERFMON) in doctor's effective set (CapEff); doctor itself never traces
  std::string label;          // doctor's AppArmor or SELinux label; "" when none (unconfined, no such LSM)
  std::string lsms;           // /sys/kernel/security/lsm; "" when unreadable
  std::string hidepid;        // /proc's hidepid= mount option; "" when none
};

// The facts about doctor itself and this /proc (the shell: small reads of /proc and /sys only).
RefusalFacts refusal_facts();

// "cannot read <what>: <error>, <cause>; <what to do>" for a read of what (e.g. "/proc/1/maps")
// refused with err (EACCES or EPERM), from the facts; pure.
std::string refused_words(const RefusalFacts &f, const std::string &what, int err);

// For a /proc/PID that is not there (ENOENT): "no process PID", or, where /proc hides other users'
// processes from this non-root reader (hidepid=2), that it may exist unseen; pure.
std::string absent_words(const RefusalFacts &f, pid_t pid);

}  // namespace cli
}  // namespace ucxtls
