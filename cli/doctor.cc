// `ucxtls doctor [--value V | --template T] [--ucx PATH | --pid PID]`: does the local UCX (the
// libucp of the ucx_info on PATH), or the build at PATH, or the UCX that process PID has mapped,
// serve every transport of the value in effect, of V, or of what template T composes to here? A
// transport it lacks makes UCX print "not available" on the stdout of every process that uses the
// value. The build is read from its files (ucx_build.h: nothing of it is loaded or run, in any
// mode), and what it cannot do whatever UCX_TLS says (no ze_copy on an Intel node, no verbs on an
// RDMA node) is named in words: one rule for the three modes, whatever the value.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "doctor_findings.h"
#include "exit.h"
#include "bounded_child.h"
#include "process_view.h"
#include "repair.h"
#include "report.h"
#include "util.h"
#include "doctor_build.h"
#include "doctor_judge.h"
#include "node_findings.h"

namespace ucxtls {
namespace cli {
namespace {

// One build (--ucx, or a libucp a process maps): read, then the value judged against it.
int doctor_build(const Report &r, BuildPlace &place, const std::string &libucp, const std::string &shown,
                 const MappedUcx *proc, pid_t pid, size_t index, const std::string &value, const std::string &source,
                 const char *nothing, const std::string &why) {
  auto b = std::make_unique<UcxBuild>();
  std::string err;
  // Not read (not a UCX libucp, not an ELF object): nothing was checked, so no "missing" (exit 1),
  // an environment error (exit 2).
  if (!read_ucx_build(place, libucp, b.get(), &err)) return fail(kUsage, "doctor: " + err);
  b->libucp = shown;
  const std::string version = b->version.empty() ? "could not tell" : b->version;
  print_line("UCX         %s (version %s)\n", shown.c_str(), version.c_str());
  record_build(*b, "");
  if (proc)
    print_line("process     %d (%s) maps it as %s\n", int(pid), proc->comm.c_str(), proc->as_mapped[index].c_str());
  if (nothing) {
    print_line("%s\n", nothing);
    finding_lines(node_findings(r, nullptr));
  } else {
    print_line("value       %s (%s)\n", value.c_str(), source.c_str());
    mismatch_line(r, value);
  }
  if (!why.empty()) print_line("library     %s", why.c_str());  // the line its libucxtls.so prints with UCXTLS_DEBUG=1
  build_lines(*b);
  if (!b->bound.empty()) return bounded(*b);
  finding_lines(build_findings(r, b->version, b->transports));
  std::vector<std::string> missing;
  bool gpu_only = false;
  const bool empty = !nothing && !judge(value, b->transports, b->version, &missing, &gpu_only);
  return verdict(r, *b, nothing, value, source, b->version, empty, gpu_only, missing);
}

}  // namespace

int doctor_checks(int argc, char **argv) {
  const char *explicit_value = nullptr, *tmpl = nullptr, *ucx_path = nullptr, *pid_text = nullptr, *timeout_text = nullptr;
  const char *usage = " (ucxtls doctor [--value V | --template T] [--ucx PATH | --pid PID] [--timeout-ms MS] [--json])";
  struct Opt {
    const char *name;
    const char **dest;
  } const opts[] = {{"--value", &explicit_value}, {"--template", &tmpl}, {"--ucx", &ucx_path},
                    {"--pid", &pid_text}, {"--timeout-ms", &timeout_text}};
  // main.cc's prepare_args (args.h) has made every `--flag V` a `--flag=V`.
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool known = false;
    for (const Opt &o : opts) {
      size_t n = strlen(o.name);
      if (!strncmp(a, o.name, n) && a[n] == '=') *o.dest = a + n + 1, known = true;
    }
    if (!known) return fail(kUsage, std::string("doctor: unknown option '") + a + "'" + usage);
  }
  if (explicit_value && tmpl) return fail(kUsage, std::string("doctor: --value and --template are alternatives") + usage);
  if (ucx_path && pid_text) return fail(kUsage, std::string("doctor: --ucx and --pid are alternatives") + usage);
  // An empty list is the option's text at fault: one line, before any row (no empty value row).
  if (explicit_value && (!*explicit_value || !strcmp(explicit_value, "^"))) return empty_value("--value", kUsage);
  const bool build_mode = ucx_path || pid_text;
  int timeout_ms = 20000;
  if (timeout_text) {
    char *end = nullptr;
    long t = strtol(timeout_text, &end, 10);
    if (!*timeout_text || *end || t < 1 || t > 600000)
      return fail(kUsage, std::string("doctor: --timeout-ms wants a number of milliseconds (1..600000)") + usage);
    timeout_ms = int(t);
  }
  // One deadline for the whole command: each reading below gets what is left of it.
  const long long deadline = monotonic_ms() + timeout_ms;
  auto left_ms = [deadline]() { return int(std::max<long long>(1, deadline - monotonic_ms())); };
  long pid = 0;
  if (pid_text) {
    char *end = nullptr;
    pid = strtol(pid_text, &end, 10);
    if (!*pid_text || *end || pid < 1 || pid > 0x3fffffff)
      return fail(kUsage, std::string("doctor: --pid wants a process id, not '") + pid_text + "'" + usage);
  }
  // Where the build is, before anything is printed: a bad PATH or PID is one line on stderr.
  std::vector<std::string> libucps;
  auto proc = std::make_unique<MappedUcx>();
  if (ucx_path) {
    std::string found, err;
    if (!locate_libucp(ucx_path, &found, &err, left_ms())) return fail(kUsage, "doctor: --ucx " + err);
    libucps.push_back(found);
  } else if (pid_text) {
    std::string err;
    int status = kUsage;
    if (!mapped_ucx(pid_t(pid), proc.get(), &err, &status)) return fail(status, "doctor: " + err);
    libucps = proc->libucp;
  }

  // A value with placeholders is a template: check what it composes to here.
  const char *tmpl_option = "--template";  // the option the user typed, named in its error
  if (explicit_value && strchr(explicit_value, '{')) tmpl = explicit_value, explicit_value = nullptr, tmpl_option = "--value";
  auto r = std::make_unique<Report>();
  Environment caller;  // this command's own at exec (its PATH, LD_LIBRARY_PATH, UCX_* for --ucx and ucx_info)
  caller.load();
  std::string value, source, nothing, why;
  if (pid_text) {
    // That process's start environment, as the library in it read it (docs/command.md, "doctor
    // --pid"): its settings, visibility variables and UCX_TLS decide, not the caller's.
    if (!proc->env_read && !explicit_value)
      return fail(kFailed, "doctor: cannot read /proc/" + std::to_string(pid) +
                               "/environ: the value that process started with is unknown; name one with --value");
    if (proc->env_read) {
      r->env.assign(proc->env);
      // From here on doctor goes on in a child of its own, bounded by the deadline: a mount of the
      // process's that never answers (FUSE, hard NFS) stops that child, never doctor
      // (bounded_child.h reads_in_child). Its decision is made in its place (process_view.h).
      std::string err;
      if (!reads_in_child(deadline, timeout_ms, "process " + std::to_string(pid), &err)) return fail(kUsage, "doctor: " + err);
      if (!evaluate_as_process(r.get(), pid_t(pid), proc->secure, tmpl, timeout_ms, &err)) return fail(kUsage, "doctor: " + err);
      reads_done();
    } else {
      evaluate(r.get(), tmpl);
    }
  } else {  // with --value too: this node's family (and RDMA, for a build's problems)
    evaluate(r.get(), tmpl);
  }
  const std::string who = "process " + std::to_string(pid);
  if (explicit_value) {
    value = explicit_value;
    source = "--value";
  } else {
    if (r->d.error && tmpl && r->s.invalid_var == kTemplate)  // the option's text: a usage error
      return fail(kUsage, std::string("doctor: ") + tmpl_option + " '" + tmpl + "' " + r->s.invalid_why);
    const bool library_ran = pid_text && !tmpl && !proc->ucxtls.empty() && !proc->secure;
    if (r->d.error && !pid_text) {
      const std::string line = library_line(*r);
      fputs(line.c_str(), stderr);
      doctor_findings().messages.push_back(line.substr(8, line.size() - 9));  // as fail records its lines
      return kFailed;
    }
    // The value: the decision's (the library's, here or in that process), or, in a process the
    // library did not run in (not loaded, or secure execution), UCX_TLS as it started.
    const char *v = !pid_text || tmpl || library_ran ? effective_value(r->in, r->d) : nullptr;
    if (pid_text && !tmpl && !library_ran)
      for (const std::string &e : proc->env)  // the first, as getenv (stdlib/getenv.c) and so UCX read it
        if (!e.compare(0, 8, "UCX_TLS=")) {
          v = e.c_str() + 8;
          break;
        }
    if (library_ran) why = library_line(*r);
    const char *started = r->in.get(kUcxTls);
    // No value to judge: the build still is, for the node's GPUs (every build mode, and the plain
    // doctor on a GPU node); "nothing" only where nothing else is read.
    const char *unchecked = build_mode || r->family != Family::none ? "no value to check, only the build" : "nothing to check";
    if (!v && r->f.ucx_conf.value == Tri::yes) {
      nothing = std::string("UCX_TLS is not in the environment") + (pid_text ? " of " + who : std::string()) +
                ": UCX takes it from " + r->f.ucx_conf.evidence + "; check that value with --value";
    } else if (!v && pid_text && !library_ran) {
      nothing = "UCX_TLS is not in the environment " + who + " started with, and " +
                (proc->secure ? "it runs with secure execution (its libucxtls.so read nothing)" : "no libucxtls.so is loaded in it") +
                ": UCX uses every transport it has; " + unchecked;
    } else if (!v) {
      nothing = std::string("UCX_TLS stays unset ") + (pid_text ? "in " + who : std::string("here")) + " (" +
                action_name(r->d.action) + (r->d.action == Action::clear ? ": the inherited pair is removed" : "") +
                "): UCX uses every transport it has; " + unchecked;
    } else {
      value = v;
      if (tmpl) {
        source = std::string("composed ") + (pid_text ? "in the environment " + who + " started with" : "here") + " from " + tmpl;
      } else if (pid_text && !library_ran) {
        source = "UCX_TLS in the environment " + who + " started with; " +
                 (proc->secure ? "secure execution: its libucxtls.so read nothing" : "no libucxtls.so in it changed it");
      } else if (pid_text) {
        source = r->d.action == Action::set ? (started ? "derived again by its libucxtls.so: the UCX_TLS it started with was an inherited pair"
                                                       : "derived by its libucxtls.so from the environment it started with")
                 : r->d.action == Action::repair ? "UCX_TLS it started with, repaired by its UCXTLS_REPAIR=1"
                                                 : "UCX_TLS in the environment " + who + " started with, kept by its libucxtls.so";
      } else {
        source = r->d.action == Action::set      ? "derived by ucxtls"
                 : r->d.action == Action::repair ? "UCX_TLS as set, repaired by UCXTLS_REPAIR=1"
                                                 : "UCX_TLS as set";
      }
    }
  }

  DoctorFindings &found = doctor_findings();
  found.family = family_name(r->family);
  found.has_value = nothing.empty();
  found.value = value;
  found.source = nothing.empty() ? source : nothing;
  if (build_mode) {
    // The files are read inside the process's root (links never leave it), from its working
    // directory, with its environment: what its ld.so and its UCX read (root_fs.h). --ucx: this
    // machine's root, the caller's environment, no program.
    Root root;
    BuildPlace place;
    place.root = &root;
    if (pid_text) {
      if (!root.open(proc->root, proc->cwd, proc->shown, left_ms()))
        return fail(kUsage, "doctor: cannot open " + proc->root + ": " + strerror(errno));
      place.env = proc->env, place.secure = proc->secure, place.exe = proc->exe;
      place.mapped = mapped_names(root, proc->objects);
    } else {
      char cwd[4096];
      if (!root.open("/", getcwd(cwd, sizeof cwd) ? cwd : "/", "", left_ms()))
        return fail(kUsage, std::string("doctor: cannot open /: ") + strerror(errno));
      place.env = env_list(caller);
    }
    int status = 0;
    for (size_t i = 0; i < libucps.size(); i++) {
      const std::string inside = pid_text ? proc->inside[i] : libucps[i];
      int s = doctor_build(*r, place, inside, libucps[i], pid_text ? proc.get() : nullptr, pid_t(pid), i, value, source,
                           nothing.empty() ? nullptr : nothing.c_str(), why);
      status = status ? status : s;  // the first build that fails decides: a later good one does not hide it
    }
    return status;
  }
  // A node without GPUs has no family to build UCX for: with nothing to check, nothing is read.
  if (!nothing.empty() && r->family == Family::none) {
    print_line("%s\n", nothing.c_str());
    return 0;
  }
  // A replayed machine has no UCX of its own to read (as `ucxtls probe` says of its drivers).
  if (!r->in.secure && (explicit_value ? getenv(kOptions[kSysroot].name) : r->in.get(kSysroot)))
    finding_lines({{"sysroot", "UCXTLS_SYSROOT is set: the UCX checked (ucx_info's) is this machine's, not the replayed machine's"}});
  // The build ucx_info belongs to, judged as --ucx judges one: the libucp ld.so would give it,
  // worked out from its files (ld_search.h), never by running it.
  const std::string ucx_info = ucx_info_path(caller);
  if (ucx_info.empty())
    return fail(kUsage, "doctor: no ucx_info in PATH (Debian/Ubuntu: apt-get install ucx-utils), or name a build with --ucx PATH");
  Root root;
  char cwd[4096];
  if (!root.open("/", getcwd(cwd, sizeof cwd) ? cwd : "/", "", left_ms()))
    return fail(kUsage, std::string("doctor: cannot open /: ") + strerror(errno));
  BuildPlace place;
  place.root = &root, place.env = env_list(caller), place.exe = ucx_info;
  std::string libucp, err;
  // A script (a wrapper that runs another ucx_info): which UCX it runs cannot be read, and a
  // check that cannot tell is not a pass: exit 2, as for a ucx_info that gave no answer.
  if (!program_libucp(place, ucx_info, &libucp, &err)) return fail(kUsage, "doctor: " + err);
  auto b = std::make_unique<UcxBuild>();
  if (!read_ucx_build(place, libucp, b.get(), &err)) return fail(kUsage, "doctor: " + err);
  b->libucp = libucp;
  const std::string version = b->version;
  print_line("UCX         the one %s runs (version %s)\n", ucx_info.c_str(), version.empty() ? "could not tell" : version.c_str());
  print_line("libucp      %s (the one ld.so gives ucx_info: its build is judged as --ucx judges one)\n", libucp.c_str());
  record_build(*b, ucx_info);
  std::vector<std::string> missing;
  bool gpu_only = false, empty = false;
  if (!nothing.empty()) {
    print_line("%s\n", nothing.c_str());
    finding_lines(node_findings(*r, nullptr));
    build_lines(*b);
    if (!b->bound.empty()) return bounded(*b);
    finding_lines(build_findings(*r, version, b->transports));
  } else {
    print_line("value       %s (%s)\n", value.c_str(), source.c_str());
    mismatch_line(*r, value);
    build_lines(*b);
    if (!b->bound.empty()) return bounded(*b);
    finding_lines(build_findings(*r, version, b->transports));
    const std::vector<std::string> here = here_line(b->transports, r->family, rdma_kind(r->f));
    empty = !judge(value, here, version, &missing, &gpu_only);
  }
  return verdict(*r, *b, nothing.empty() ? nullptr : nothing.c_str(), value, source, version, empty, gpu_only, missing);
}

}  // namespace cli
}  // namespace ucxtls
