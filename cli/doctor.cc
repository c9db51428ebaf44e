// `ucxtls doctor [--value V | --template T] [--ucx PATH | --pid PID] [--json]`: does the UCX a
// process here loads (the libucp of the ucx_info on PATH), the build at PATH, or each one process
// PID maps, serve every transport of the value in effect, of V, or of what T composes to here? A
// transport it lacks makes UCX print "not available" on the stdout of every process that uses the
// value. Every build is read from its files (ucx_build.h: nothing of it is loaded or run) and
// judged by one rule in the three modes (doctor_judge.h check_build), whatever the value.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bounded_child.h"
#include "commands.h"
#include "doctor_build.h"
#include "doctor_findings.h"
#include "doctor_judge.h"
#include "exit.h"
#include "node_findings.h"
#include "process_view.h"
#include "evaluation.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

const char kUsageLine[] = " (ucxtls doctor [--value V | --template T] [--ucx PATH | --pid PID] [--timeout-ms MS] [--json])";

struct DoctorArgs {
  const char *value = nullptr, *tmpl = nullptr, *ucx = nullptr, *pid_text = nullptr;
  const char *tmpl_option = "--template";  // the option the template came from, named in its error
  pid_t pid = 0;
  int timeout_ms = 20000;
  long long deadline = 0;  // one for the whole command: each reading gets what is left of it
  int left_ms() const { return int(std::max<long long>(1, deadline - monotonic_ms())); }
};

// main.cc's prepare_args (args.h) has made every `--flag V` a `--flag=V`. -1: go on; else the
// status of the one stderr line that says what is wrong.
int parse_args(int argc, char **argv, DoctorArgs *a) {
  const char *timeout_text = nullptr;
  const struct {
    const char *name;
    const char **dest;
  } opts[] = {{"--value", &a->value}, {"--template", &a->tmpl}, {"--ucx", &a->ucx}, {"--pid", &a->pid_text},
              {"--timeout-ms", &timeout_text}};
  for (int i = 0; i < argc; i++) {
    bool known = false;
    for (const auto &o : opts) {
      const size_t n = strlen(o.name);
      if (!strncmp(argv[i], o.name, n) && argv[i][n] == '=') *o.dest = argv[i] + n + 1, known = true;
    }
    if (!known) return fail(kUsage, std::string("doctor: unknown option '") + argv[i] + "'" + kUsageLine);
  }
  if (a->value && a->tmpl) return fail(kUsage, std::string("doctor: --value and --template are alternatives") + kUsageLine);
  if (a->ucx && a->pid_text) return fail(kUsage, std::string("doctor: --ucx and --pid are alternatives") + kUsageLine);
  // An empty list is the option's text at fault: one line, before any row (no empty value row).
  if (a->value && (!*a->value || !strcmp(a->value, "^"))) return empty_value("--value", kUsage);
  char *end = nullptr;
  const long t = timeout_text ? strtol(timeout_text, &end, 10) : a->timeout_ms;
  if (timeout_text && (!*timeout_text || *end || t < 1 || t > 600000))
    return fail(kUsage, std::string("doctor: --timeout-ms wants a number of milliseconds (1..600000)") + kUsageLine);
  a->timeout_ms = int(t);
  a->deadline = monotonic_ms() + a->timeout_ms;
  const long pid = a->pid_text ? strtol(a->pid_text, &end, 10) : 0;
  if (a->pid_text && (!*a->pid_text || *end || pid < 1 || pid > 0x3fffffff))
    return fail(kUsage, std::string("doctor: --pid wants a process id, not '") + a->pid_text + "'" + kUsageLine);
  a->pid = pid_t(pid);
  // A value with placeholders is a template: what it composes to here is checked.
  if (a->value && strchr(a->value, '{')) a->tmpl = a->value, a->value = nullptr, a->tmpl_option = "--value";
  return -1;
}

// The decision judged: that process's, made in its place from the environment it started with
// (docs/command.md, "doctor --pid"), not the caller's; else this node's (with --value too: its
// family and RDMA judge the build).
int decide(const DoctorArgs &a, const MappedUcx &proc, Evaluation *r) {
  if (!a.pid_text || (!proc.env_read && a.value)) return evaluate(r, a.tmpl), -1;
  const std::string who = "process " + std::to_string(a.pid);
  if (!proc.env_read)
    return fail(kFailed, "doctor: cannot read /proc/" + std::to_string(a.pid) +
                             "/environ: the value that process started with is unknown; name one with --value");
  r->env.assign(proc.env);
  // From here on doctor goes on in a child of its own, bounded by the deadline: a mount of the
  // process's that never answers (FUSE, hard NFS) stops that child, never doctor
  // (bounded_child.h reads_in_child). Its decision is made in its place (process_view.h).
  std::string err;
  if (!reads_in_child(a.deadline, a.timeout_ms, who, &err)) return fail(kUsage, "doctor: " + err);
  if (!evaluate_as_process(r, a.pid, proc.secure, a.tmpl, a.deadline + kReadsGraceMs, a.timeout_ms, &err)) return fail(kUsage, "doctor: " + err);
  reads_done();
  return -1;
}

// The value to judge and where it came from, or the line that says why there is none. -1: go on.
int value_to_judge(const DoctorArgs &a, const Evaluation &r, const MappedUcx &proc, JudgedValue *v) {
  if (a.value) return v->value = a.value, v->source = "--value", -1;
  if (r.d.error && a.tmpl && r.s.invalid_var == kTemplate)  // the option's text: a usage error
    return fail(kUsage, std::string("doctor: ") + a.tmpl_option + " '" + a.tmpl + "' " + r.s.invalid_why);
  const bool pid = a.pid_text, library_ran = pid && !a.tmpl && !proc.ucxtls.empty() && !proc.secure;
  if (r.d.error && !pid) {
    const std::string line = library_line(r);
    fputs(line.c_str(), stderr);
    doctor_findings().messages.push_back(line.substr(8, line.size() - 9));  // as fail records its lines
    return kFailed;
  }
  // The decision's (the library's, here or in that process), or, in a process the library did not
  // run in (not loaded, or secure execution), UCX_TLS as it started.
  const char *value = !pid || a.tmpl || library_ran ? effective_value(r.in, r.d) : nullptr;
  if (pid && !a.tmpl && !library_ran) value = env_lookup(proc.env, "UCX_TLS", Dup::first);  // as UCX's getenv
  if (library_ran) v->library = library_line(r);
  const std::string who = "process " + std::to_string(a.pid);
  // No value to judge: the build still is, for the node's GPUs (every build mode, and the plain
  // doctor on a GPU node); "nothing" only where nothing else is read.
  const char *unchecked = a.ucx || pid || r.family != Family::none ? "no value to check, only the build" : "nothing to check";
  if (!value && r.f.ucx_conf.value == Tri::yes) {
    v->nothing = std::string("UCX_TLS is not in the environment") + (pid ? " of " + who : std::string()) +
                 ": UCX takes it from " + r.f.ucx_conf.evidence + "; check that value with --value";
  } else if (!value && pid && !library_ran) {
    v->nothing = "UCX_TLS is not in the environment " + who + " started with, and " +
                 (proc.secure ? "it runs with secure execution (its libucxtls.so read nothing)" : "no libucxtls.so is loaded in it") +
                 ": UCX uses every transport it has; " + unchecked;
  } else if (!value) {
    v->nothing = std::string("UCX_TLS stays unset ") + (pid ? "in " + who : std::string("here")) + " (" +
                 action_name(r.d.action) + (r.d.action == Action::clear ? ": the inherited pair is removed" : "") +
                 "): UCX uses every transport it has; " + unchecked;
  } else if (a.tmpl) {
    v->source = std::string("composed ") + (pid ? "in the environment " + who + " started with" : "here") + " from " + a.tmpl;
  } else if (pid && !library_ran) {
    v->source = "UCX_TLS in the environment " + who + " started with; " +
                (proc.secure ? "secure execution: its libucxtls.so read nothing" : "no libucxtls.so in it changed it");
  } else if (pid) {
    v->source = r.d.action == Action::set ? (r.in.get(kUcxTls) ? "derived again by its libucxtls.so: the UCX_TLS it started with was an inherited pair"
                                                                : "derived by its libucxtls.so from the environment it started with")
                : r.d.action == Action::repair ? "UCX_TLS it started with, repaired by its UCXTLS_REPAIR=1"
                                               : "UCX_TLS in the environment " + who + " started with, kept by its libucxtls.so";
  } else {
    v->source = r.d.action == Action::set      ? "derived by ucxtls"
                : r.d.action == Action::repair ? "UCX_TLS as set, repaired by UCXTLS_REPAIR=1"
                                               : "UCX_TLS as set";
  }
  if (value) v->value = value;
  return -1;
}

// One build: read, named, recorded for --json, judged. ucx_info: the plain doctor's (the build is
// the libucp ld.so gives it; judged by the transports with a device here), "" otherwise.
int check_one(const Evaluation &r, const JudgedValue &v, BuildPlace &place, const std::string &libucp,
              const std::string &ucx_info, const MappedUcx *proc = nullptr, size_t i = 0) {
  auto b = std::make_unique<UcxBuild>();
  std::string err;
  // Not read (not a UCX libucp, not an ELF object): nothing was checked, so no "missing" (exit 1),
  // an environment error (exit 2).
  if (!read_build(place, libucp, b.get(), &err)) return fail(kUsage, "doctor: " + err);
  const char *version = b->version.empty() ? "could not tell" : b->version.c_str();
  if (ucx_info.empty()) {
    print_line("UCX         %s (version %s)\n", b->libucp.c_str(), version);
  } else {
    print_line("UCX         the one %s runs (version %s)\n", ucx_info.c_str(), version);
    print_line("libucp      %s (the one ld.so gives ucx_info: its build is judged as --ucx judges one)\n", libucp.c_str());
  }
  doctor_findings().ucx.push_back({*b, ucx_info});  // the build, as doctor --json gives it (ucx[])
  if (proc) print_line("process     %d (%s) maps it as %s\n", int(proc->pid), proc->comm.c_str(), proc->as_mapped[i].c_str());
  return check_build(r, v, *b, !ucx_info.empty());
}

// --pid PID: each libucp the process maps, read inside its root (links never leave it), from its
// working directory, with its environment: what its ld.so and its UCX read (root_fs.h).
int check_pid(const DoctorArgs &a, const Evaluation &r, const JudgedValue &v, const MappedUcx &proc) {
  Root root;
  if (!root.open(proc.root, proc.cwd, proc.shown, a.left_ms()))
    return fail(kUsage, "doctor: cannot open " + proc.root + ": " + strerror(errno));
  BuildPlace place;
  place.root = &root, place.env = proc.env, place.secure = proc.secure, place.exe = proc.exe;
  place.mapped = mapped_names(root, proc.objects);
  int status = 0;
  for (size_t i = 0; i < proc.inside.size(); i++) {
    const int s = check_one(r, v, place, proc.inside[i], "", &proc, i);
    status = status ? status : s;  // the first build that fails decides: a later good one does not hide it
  }
  return status;
}

// This machine's root, from doctor's working directory, with the caller's environment: --ucx PATH
// (the build there, no program), or the plain doctor: the build of the ucx_info on PATH, the
// libucp ld.so would give it, worked out from its files (ld_search.h), never by running it.
int check_here(const DoctorArgs &a, const Evaluation &r, const JudgedValue &v, std::string libucp, const Environment &caller) {
  std::string ucx_info;
  if (!a.ucx) {
    // A node without GPUs has no family to build UCX for: with nothing to check, nothing is read.
    if (!v.nothing.empty() && r.family == Family::none) return print_line("%s\n", v.nothing.c_str()), 0;
    // A replayed machine has no UCX of its own to read (as `ucxtls probe` says of its drivers).
    if (!r.in.secure && (a.value ? getenv(kOptions[kSysroot].name) : r.in.get(kSysroot)))
      finding_lines({{"sysroot", "UCXTLS_SYSROOT is set: the UCX checked (ucx_info's) is this machine's, not the replayed machine's"}});
    const char *path = env_lookup(caller.envp(), "PATH", Dup::first);  // getenv's, as a shell's execvp
    ucx_info = path ? find_in_path("ucx_info", path) : "";
    if (ucx_info.empty())
      return fail(kUsage, "doctor: no ucx_info in PATH (Debian/Ubuntu: apt-get install ucx-utils), or name a build with --ucx PATH");
  }
  Root root;
  char cwd[4096];
  if (!root.open("/", getcwd(cwd, sizeof cwd) ? cwd : "/", "", a.left_ms()))
    return fail(kUsage, std::string("doctor: cannot open /: ") + strerror(errno));
  BuildPlace place;
  place.root = &root, place.exe = ucx_info;
  for (char *const *e = caller.envp(); *e; e++) place.env.push_back(*e);
  std::string err;
  // A script (a wrapper that runs another ucx_info): which UCX it runs cannot be read, and a
  // check that cannot tell is not a pass: exit 2, as for a build that could not be read.
  if (!a.ucx && !program_libucp(place, ucx_info, &libucp, &err)) return fail(kUsage, "doctor: " + err);
  return check_one(r, v, place, libucp, ucx_info);
}

// The steps: the options, where the builds are (before anything is printed: a bad PATH or PID is
// one line on stderr), the decision, the value it gives, then each build in the mode asked for.
int doctor_checks(int argc, char **argv) {
  DoctorArgs a;
  auto proc = std::make_unique<MappedUcx>();
  std::string libucp, err;
  if (int status = parse_args(argc, argv, &a); status >= 0) return status;
  if (a.ucx && !locate_libucp(a.ucx, &libucp, &err, a.left_ms())) return fail(kUsage, "doctor: --ucx " + err);
  int status = kUsage;
  if (a.pid_text && !mapped_ucx(a.pid, proc.get(), &err, &status)) return fail(status, "doctor: " + err);
  auto r = std::make_unique<Evaluation>();
  Environment caller;  // this command's own at exec (its PATH, LD_LIBRARY_PATH, UCX_* for --ucx and ucx_info)
  caller.load();
  JudgedValue v;
  if ((status = decide(a, *proc, r.get())) >= 0 || (status = value_to_judge(a, *r, *proc, &v)) >= 0) return status;
  DoctorFindings &found = doctor_findings();
  found.family = family_name(r->family);
  found.has_value = v.nothing.empty();
  found.value = v.value;
  found.source = v.nothing.empty() ? v.source : v.nothing;
  return a.pid_text ? check_pid(a, *r, v, *proc) : check_here(a, *r, v, libucp, caller);
}

}  // namespace

int cmd_doctor(int argc, char **argv) {
  std::vector<char *> args;
  bool json = false;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--json")) json = true;
    else args.push_back(argv[i]);
  // Every message is recorded (doctor_findings.h); those after the first row go to stdout alone.
  // With --json the rows are captured, and the findings printed as one object in their place.
  std::vector<std::string> rows;
  std::vector<int> statuses;
  const size_t before = lines_printed();
  if (json) capture_lines(&rows);
  record_messages(&doctor_findings().messages, &statuses, before);
  const int status = doctor_checks(int(args.size()), args.data());
  capture_lines(nullptr);
  record_messages(nullptr);
  if (json) print_findings_json(status);
  else if (lines_printed() > before) verdict_lines(status, statuses);
  return status;
}

}  // namespace cli
}  // namespace ucxtls
