// The limits a process runs under besides its ids and namespaces, taken by the helper that loads
// its build (enter_process.h): its cgroups (device and memory limits), its capability bounding set
// and its seccomp filters (a container's). Run as root, the helper otherwise runs the image's code
// with fewer limits than the container had. Where root cannot take them (a filter it cannot read),
// the helper is not run: one line says how to ask from inside the container.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

struct Confinement {
  unsigned long long bounding = ~0ull;           // CapBnd
  std::vector<std::vector<sock_filter>> filters;  // its seccomp filters, the first installed first
};

// Before any of its namespaces is entered (doctor's /proc and /sys/fs/cgroup): joins its cgroups
// and reads its bounding set and filters (stopping it for the moment ptrace takes to read them).
// False: why, one line. Only root must take them: another user's helper runs as that user anyway.
bool take_confinement(pid_t pid, Confinement *c, std::string *why);

// Before the capabilities are given up: every capability outside its bounding set is dropped.
bool apply_bounding(const Confinement &c, std::string *why);

// The last step before the helper is executed (no_new_privs set): its filters, in its order.
bool apply_filters(const Confinement &c, std::string *why);

}  // namespace cli
}  // namespace ucxtls
