// How doctor judges a value against a build's transports (see doctor_judge.h).
#include "doctor_judge.h"

#include <stdio.h>

#include <algorithm>
#include <string>
#include <vector>

#include "doctor_build.h"
#include "doctor_findings.h"
#include "node_findings.h"
#include "exit.h"
#include "repair.h"
#include "evaluation.h"
#include "ucx_read.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

std::string strip_aux(const std::string &s) {
  size_t k = s.find(':');
  return k == std::string::npos ? s : s.substr(0, k);
}

// Whether a served entry brings only accelerator devices to the context: the copy and gdr
// transports are UCX's "accelerator" devices, an ipc transport (cuda_ipc, rocm_ipc) an "intra-node"
// one, which 1.22 counts as usable (`ucx_info -d`: "Type: intra-node"); an alias (cuda, rocm, ze)
// counts by the members it served here (`via`).
bool serves_accelerator_only(const std::string &item, const std::string &via) {
  Role role;
  if (gpu_entry_family(item.c_str(), item.size(), &role) == Family::none) return false;
  if (role == Role::ipc) return false;
  if (role != Role::alias) return true;
  for (const std::string &member : split(via.c_str(), ",")) {
    std::string m = strip_aux(member);
    if (gpu_entry_family(m.c_str(), m.size(), &role) == Family::none || role == Role::ipc) return false;
  }
  return true;
}

// The verdict on every name of value, a row each, with `have` the transports the build serves:
// the names missing, and in *gpu_only whether the names served are all GPU ones (repair.h's
// table) in an allow list. `version`: the UCX's, where the releases differ. False: the value is
// empty (UCX fails to create a context).
bool judge(const std::string &value, const std::vector<std::string> &have, const std::string &version,
           std::vector<std::string> *missing, bool *gpu_only) {
  auto served = [&](const std::string &name) { return std::find(have.begin(), have.end(), name) != have.end(); };
  std::string items = value;
  bool deny = !items.empty() && items[0] == '^';
  bool gpu = false, other = false;  // served names of the allow list
  if (deny) items.erase(0, 1);
  if (items.empty()) {
    print_line("MISSING     every transport: an empty list makes UCX fail (\"The TLs list is empty\")\n");
    return false;
  }
  for (const std::string &item : split(items.c_str(), ",")) {
    std::string name = strip_aux(item);
    bool exact = !name.empty() && name[0] == '\\';  // \name: the transport itself, not an alias
    if (exact) name.erase(0, 1);
    std::string via;  // which members serve it
    bool ok = name == "all" || served(name);
    // An alias counts as served when any member is, an aux-only one included: exactly when UCX
    // does not print "not available" for it.
    const UcxName *alias = exact ? nullptr : ucx_name(name.c_str(), name.size());
    if (alias && alias->role == Role::alias)
      for (const std::string &m : split(alias->members, ","))
        if (served(strip_aux(m))) ok = true, via += (via.empty() ? "" : ",") + m;
    if (deny && ok) {
      print_line("%-11s %s\n", "denied", item.c_str());
    } else if (deny && ucx_minor(version) >= 22) {  // measured: 1.22 says nothing about it
      print_line("%-11s %s (not in this UCX: harmless, UCX %s does not warn about a denied name)\n", "denied",
                 item.c_str(), version.c_str());
    } else if (deny) {
      // Harmless to the context, yet UCX 1.13 (measured) warns about it like an allowed name;
      // 1.22 does not (above). Reported, since it is in the value for nothing.
      print_line("%-11s %s (denied, and not in this UCX: some UCX releases warn about it)\n", "MISSING", item.c_str());
      missing->push_back(item);
    } else if (ok) {
      print_line("%-11s %s%s%s\n", "ok", item.c_str(), via.empty() ? "" : " -> ", via.c_str());
      (serves_accelerator_only(item, via) ? gpu : other) = true;
    } else {
      bool blank = item.find_first_of(" \t") != std::string::npos;  // UCX does not trim entries
      print_line("%-11s %s%s\n", "MISSING", item.c_str(), blank ? " (has a space: UCX does not trim entries)" : "");
      missing->push_back(item);
    }
  }
  *gpu_only = !deny && gpu && !other;
  return true;
}

// UCX >= 1.22 refuses a context whose usable transports are all accelerator ones (openucx/ucx
// #11373: "no usable transports/devices"), where the names are served: a line, and exit 1.
bool gpu_only_refused(bool gpu_only, const std::string &version) {
  if (!gpu_only || ucx_minor(version) < 22) return false;
  print_line("%-11s the value as a whole: UCX %s refuses a context whose only usable transports are accelerator ones\n",
             "refused", version.c_str());
  fail(kFailed, "doctor: UCX " + version + " fails to create a context with this value (\"no usable transports/devices\"): "
          "add tcp or sm,self to it");
  return true;
}

// A failure whose words a row above already shows: the text shows them once (doctor_findings.cc).
int failed_in_row(const std::string &msg) {
  doctor_findings().in_rows.push_back(msg);
  return fail(kFailed, msg);
}

// The build's problems (build_problems), a `build` line each, then the status, in every mode: an
// empty value, a refused context, names missing, a problem for this node.
int verdict(const Evaluation &r, const UcxBuild &b, const JudgedValue &v, bool empty, bool gpu_only,
            const std::vector<std::string> &missing) {
  const bool nothing = !v.nothing.empty();
  bool serious = false, deny = false;
  std::vector<std::string> names = tls_entries(v.value.c_str(), &deny);  // a deny list names nothing it wants
  if (nothing || deny) names.clear();
  const std::vector<std::string> problems = build_problems(b, names, r.family, rdma_kind(r.f), &serious);
  for (const std::string &p : problems) print_line("build       %s\n", p.c_str());
  DoctorFindings &found = doctor_findings();
  found.missing.insert(found.missing.end(), missing.begin(), missing.end());
  found.problems.insert(found.problems.end(), problems.begin(), problems.end());
  if (empty) return empty_value(v.source, kFailed);
  // A fact beyond doctor's reading (b.open, its `could not` lines: a library libucp needs, the
  // version the rules rest on) leaves the build open: what it seems to lack may be in what was not
  // read, so its names and problems are not judged, and the answer is never "ok" nor "MISSING".
  const bool open = !b.open.empty() || !b.untold.empty();
  if (!open && gpu_only_refused(gpu_only, b.version)) return kFailed;  // worse than names missing: no context at all
  // The value cannot carry this node's GPU memory (repair.h copy_verdict), whoever set it: its
  // line first, the build's (which no value can fix) last.
  int status = 0;
  if (!nothing && copy_verdict(v.value.c_str(), r.family) != Copy::carries)
    status = failed_in_row("doctor: " + gpu_mismatch_warning(v.value.c_str(), r.family));  // mismatch_line's `warning`
  if (open && !status)
    return fail(kUsage, "doctor: could not tell " + (b.open.empty() ? b.untold : b.open[0]) + ": the build could not be checked");
  if (open) return status;
  if (!missing.empty()) {
    std::string names;
    for (const std::string &m : missing) names += (names.empty() ? "" : ", ") + m;
    return fail(kFailed, "doctor: this UCX cannot serve " + names +
                             ": it prints \"not available\" on stdout of every process that uses this value");
  }
  if (serious) return failed_in_row("doctor: " + problems[0]);  // its `build` line above
  return status;
}

}  // namespace

int check_build(const Evaluation &r, const JudgedValue &v, const UcxBuild &b, bool only_here) {
  const bool nothing = !v.nothing.empty();
  if (nothing) {
    print_line("%s\n", v.nothing.c_str());
    finding_lines(node_findings(r, nullptr));
  } else {
    print_line("value       %s (%s)\n", v.value.c_str(), v.source.c_str());
    mismatch_line(r, v.value);
  }
  if (!v.library.empty()) print_line("library     %s", v.library.c_str());  // what its libucxtls.so prints with UCXTLS_DEBUG=1
  build_lines(b);
  // A bound of doctor's stopped the reading: a transport it seems to lack may be in what was not
  // read, so no name is judged (no MISSING row).
  if (!b.bound.empty()) return fail(kUsage, "doctor: could not tell what this UCX serves: " + b.bound);
  finding_lines(build_findings(r, b.version, b.transports));
  std::vector<std::string> missing;
  bool gpu_only = false, empty = false;
  if (!nothing)
    empty = !judge(v.value, only_here ? here_line(b.transports, r.family, rdma_kind(r.f)) : b.transports, b.version,
                   &missing, &gpu_only);
  return verdict(r, b, v, empty, gpu_only, missing);
}

int empty_value(const std::string &source, int status) {
  return fail(status, "doctor: the value is empty (" + source + "): UCX fails to create a context (\"The TLs list is empty\")");
}

}  // namespace cli
}  // namespace ucxtls
