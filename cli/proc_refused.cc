// Why doctor could not read a process's /proc files (see proc_refused.h).
#include "proc_refused.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// linux/capability.h. Measured on Linux 6.18: root reads another user's maps with any one of them,
// so the refusal is named for the capabilities only when all three are missing.
constexpr int kMapsCaps[] = {19 /* CAP_SYS_PTRACE */, 21 /* CAP_SYS_ADMIN */, 38 /* CAP_PERFMON */};
const char kHostUidMap[] = "0 0 4294967295";  // user_namespaces(7): the initial user namespace's map

// The first line (to a newline or a NUL), its runs of blanks made one space.
std::string first_line(const std::string &s) {
  std::string out;
  for (const std::string &w : words(s.substr(0, s.find_first_of(std::string("\n\0", 2))), " \t"))
    out += (out.empty() ? "" : " ") + w;
  return out;
}

// Where a process lives in a container or namespace doctor is not in: run it there.
const char kInside[] = "or inside the process's container (podman exec, kubectl exec), naming its PID there";

}  // namespace

RefusalFacts refusal_facts() {
  RefusalFacts f;
  f.root = geteuid() == 0;
  f.uid_map = first_line(file_text("/proc/self/uid_map"));
  const std::vector<std::string> eff = status_words(file_text("/proc/self/status"), "CapEff");
  if (!eff.empty()) {
    const unsigned long long caps = strtoull(eff[0].c_str(), nullptr, 16);
    f.maps_cap = false;
    for (int c : kMapsCaps) f.maps_cap = f.maps_cap || ((caps >> c) & 1);
  }
  std::string label = first_line(file_text("/proc/self/attr/apparmor/current"));
  if (label.empty()) label = first_line(file_text("/proc/self/attr/current"));
  f.label = label.find("unconfined") == std::string::npos ? label : "";
  f.lsms = first_line(file_text("/sys/kernel/security/lsm"));
  for (const std::string &line : split(file_text("/proc/mounts").c_str(), "\n")) {
    const std::vector<std::string> w = split(line.c_str(), " ");
    if (w.size() < 4 || w[1] != "/proc" || w[2] != "proc") continue;
    f.hidepid.clear();  // the last mount on /proc is the one seen
    for (const std::string &o : split(w[3].c_str(), ","))
      if (!o.compare(0, 8, "hidepid=")) f.hidepid = o.substr(8);
  }
  return f;
}

std::string refused_words(const RefusalFacts &f, const std::string &what, int err) {
  const std::string head = "cannot read " + what + ": " + strerror(err);
  if (!f.root) return head + " (run as the process's user, or as root)";
  const std::string root = head + ", although doctor runs as root: ";
  if (!f.uid_map.empty() && f.uid_map != kHostUidMap)
    return root + "it is root of a user namespace (uid_map '" + f.uid_map + "'), with no rights over a process "
                  "outside it; run doctor as the host's root, " + kInside;
  if (!f.maps_cap)
    return root + "it lacks CAP_SYS_PTRACE, which root needs to read the maps of another user's process, one "
                  "holding capabilities doctor lacks, or one not dumpable (the kernel's ptrace access check, "
                  "PTRACE_MODE_READ_FSCREDS); run doctor with CAP_SYS_PTRACE (a root shell that keeps it), " + kInside;
  if (!f.label.empty())
    return root + "an LSM confines doctor (its label '" + f.label + "'), and its policy refuses reading another "
                  "process (ptrace read); run doctor from an unconfined root shell on the host, " + kInside;
  return root + "it has CAP_SYS_PTRACE in the host's user namespace, so an LSM that labels nothing in /proc refused it (" +
         (f.lsms.empty() ? std::string("Landlock or a BPF program") : "this kernel runs " + f.lsms) +
         "; e.g. a sandbox doctor was started in); run doctor from a root shell outside that sandbox";
}

std::string absent_words(const RefusalFacts &f, pid_t pid) {
  const std::string none = "no process " + std::to_string(pid);
  if (f.root || (f.hidepid != "2" && f.hidepid != "invisible")) return none;
  return none + " that doctor can see: /proc is mounted hidepid=" + f.hidepid +
         ", which hides other users' processes (run as the process's user, or as root)";
}

}  // namespace cli
}  // namespace ucxtls
