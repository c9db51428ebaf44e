// `ucxtls probe [--save]`: asks the GPU drivers once, out of band, for the driver tier, through the
// helper ucxtls-probe run as a bounded child (bounded_child.h) with the visibility variables unset:
// the answer lists every device, and each process applies its own variables to it. --save stores
// it with this boot's id as <cache dir>/driver, written beside it and renamed over the old one (a
// reader sees one whole file); a helper that fails is saved as "no answer" with the reason, so
// that processes fall back to the kernel probe and their debug line says why.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "bounded_child.h"
#include "core.h"
#include "driver_cache.h"
#include "driver_report.h"
#include "load.h"
#include "probe.h"
#include "commands.h"
#include "args.h"
#include "exit.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

const char kHelperName[] = "ucxtls-probe";

int probe_fail(int status, const std::string &msg) { return fail(status, "probe: " + msg); }

// Beside this command (a build tree), else in <libexecdir>/ucxtls relative to it (an installed tree).
std::string helper_path() {
  std::string dir = ".", at[2];
  own_directory(&dir);
  helper_candidates(dir, kHelperName, at);
  return access(at[0].c_str(), X_OK) != 0 && access(at[1].c_str(), X_OK) == 0 ? at[1] : at[0];
}

// What the helper gave: a report (text, parsed in place), or why there is none.
struct HelperRun {
  bool ok = false;
  std::string why;        // one line, when !ok
  std::string short_why;  // the same in the few words a saved "no answer" has room for
  long long ms = 0;
  char text[kDriverReportMax];
  DriverReport report;
};

bool report_complete(const std::string &r) { return r.size() >= 4 && !r.compare(r.size() - 4, 4, "end\n"); }

void run_helper(const std::string &helper, int timeout_ms, HelperRun *r) {
  // The caller's environment without the visibility variables, and the helper's own copy of the
  // library (it inherits LD_PRELOAD) turned off.
  std::vector<char *> envp;
  for (char **e = environ; *e; e++) {
    static const char *const drop[] = {"CUDA_VISIBLE_DEVICES=", "ZE_AFFINITY_MASK=", "UCXTLS_DISABLE=", "UCXTLS_PROBE="};
    bool skip = false;
    for (const char *d : drop) skip = skip || !strncmp(*e, d, strlen(d));
    if (!skip) envp.push_back(*e);
  }
  char off[] = "UCXTLS_DISABLE=1";
  envp.push_back(off);
  envp.push_back(nullptr);
  char arg[] = "--report-fd=3";
  std::string path = helper;
  char *args[] = {&path[0], arg, nullptr};

  ChildRun child;
  run_bounded(args, envp.data(), timeout_ms, sizeof r->text, report_complete, &child, &r->why);
  if (!r->why.empty()) {
    r->short_why = r->why;
    return;
  }
  const size_t len = child.report.size();
  memcpy(r->text, child.report.data(), len);
  const int status = child.status;
  r->ms = child.ms;

  const char *why = nullptr;
  if (parse_driver_report(r->text, len, &r->report, &why)) {
    r->ok = true;
    return;
  }
  const std::string name = kHelperName;
  if (child.exec_errno) {
    r->why = "cannot execute " + helper + " (" + strerror(child.exec_errno) + ")";
    r->short_why = name + " cannot be executed";
  } else if (!child.ended) {
    const std::string ms = std::to_string(timeout_ms);
    r->why = name + " gave no answer within UCXTLS_PROBE_TIMEOUT_MS=" + ms + " ms: killed";
    r->short_why = name + " timed out after " + ms + " ms";
  } else if (child.reaped && WIFSIGNALED(status)) {  // it ended before the deadline: not our SIGKILL
    const std::string sig = std::to_string(WTERMSIG(status));
    r->short_why = name + " died of signal " + sig;
    r->why = r->short_why + " (" + strsignal(WTERMSIG(status)) + ") before answering";
  } else if (child.reaped && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    r->short_why = name + " exited with status " + std::to_string(WEXITSTATUS(status));
    r->why = r->short_why + " without a report";
  } else {
    r->why = name + (len ? " wrote a malformed report (" + std::string(why ? why : "?") + ")" : " wrote no report");
    r->short_why = name + (len ? ": malformed report" : " wrote no report");
  }
}

void print_family(const char *label, const FamilyReport &f) {
  const DriverAnswer &a = f.answer;
  if (a.answered != Tri::yes) {
    printf("%-6s no answer (%s): the kernel probe answers for %s\n", label, a.name, label);
    return;
  }
  printf("%-6s %d device(s) (%s)\n", label, a.present, a.name);
  for (int i = 0; i < f.ndev; i++) printf("       %-2d %s  %s\n", i, f.dev[i].id, f.dev[i].name);
  if (a.present > f.ndev) printf("       ... and %d more, not identified\n", a.present - f.ndev);
}

// mkdir -p; directories it creates get mode 0755 whatever the umask (the library of every user
// reads what root saves in /run/ucxtls).
bool make_dirs(const std::string &dir, std::string *err) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return true;
  size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash), err)) return false;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *err = "cannot create " + dir + ": " + strerror(errno);
    return false;
  }
  chmod(dir.c_str(), 0755);
  return true;
}

// Writes text as dir/driver: a temporary file beside it, then rename (atomic in one directory).
bool save(const std::string &dir, const char *text, size_t len, std::string *err) {
  char tmp_name[96];
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(tmp_name, sizeof tmp_name, ".%s.%d.%ld", kCacheFileName, (int)getpid(), (long)ts.tv_nsec);
  const std::string tmp = dir + "/" + tmp_name, final_path = dir + "/" + kCacheFileName;
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return *err = "cannot create " + tmp + ": " + strerror(errno), false;
  bool ok = fchmod(fd, 0644) == 0 && write_all(fd, text, len) && fsync(fd) == 0;
  int saved_errno = errno;
  ok = close(fd) == 0 && ok;
  if (ok && rename(tmp.c_str(), final_path.c_str()) == 0) return true;
  if (!saved_errno) saved_errno = errno;
  unlink(tmp.c_str());
  *err = "cannot write " + final_path + ": " + strerror(saved_errno);
  return false;
}

}  // namespace

int cmd_probe(int argc, char **argv) {
  bool want_save = false;
  if (const char *bad = first_unknown(argc, argv, "--save", &want_save))
    return probe_fail(kUsage, std::string("unknown option '") + bad + "' (ucxtls probe [--save])");
  Inputs in;
  Settings s;
  load(environ, getauxval(AT_SECURE) != 0, &in, &s);
  // A setting of the probe's that is invalid (its timeout, its cache directory, a replayed machine).
  const Var bad = s.timeout_why ? kProbeTimeoutMs : s.cache_dir_why ? kCacheDir : kSysroot;
  const char *bad_why = s.timeout_why     ? s.timeout_why
                        : s.cache_dir_why ? s.cache_dir_why
                        : s.invalid && s.invalid_var == kSysroot ? s.invalid_why : nullptr;
  if (bad_why)
    return probe_fail(kFailed, std::string(kOptions[bad].name) + "=\"" + (in.get(bad) ? in.get(bad) : "") + "\" " + bad_why);

  // A replayed machine has no drivers to ask: the answer is this machine's, stamped (with --save)
  // with the replayed machine's boot id, and it wins over the replay's kernel answer.
  if (s.sysroot)
    note(std::string("probe: UCXTLS_SYSROOT is set: the drivers asked are this machine's, not the replayed machine's") +
                (want_save ? ", and the answer is saved as the replayed machine's" : ""));
  const std::string helper = helper_path();
  auto run = std::unique_ptr<HelperRun>(new HelperRun());
  run_helper(helper, s.probe_timeout_ms, run.get());
  DriverReport &r = run->report;
  if (!run->ok) {  // no answer from either driver; the reason stands in for the driver's name
    r = DriverReport();
    for (FamilyReport *f : {&r.cuda, &r.ze}) {
      f->answer.answered = Tri::no;
      f->answer.code = -1;
      snprintf(f->answer.name, sizeof f->answer.name, "%s", run->short_why.c_str());
    }
  }
  print_family("cuda", r.cuda);
  print_family("ze", r.ze);
  printf("%-6s not asked: the kernel probe answers for rocm\n", "rocm");
  if (run->ok)
    printf("helper %s answered in %lld ms (CUDA_VISIBLE_DEVICES and ZE_AFFINITY_MASK unset)\n", helper.c_str(), run->ms);
  else
    printf("helper %s: %s\n", helper.c_str(), run->why.c_str());

  CacheDir dirs[2];
  cache_dirs(in, dirs);
  const std::string dir = std::string(dirs[0].base) + dirs[0].sub;
  // Exit 1 when no driver initialised. With --save that answer is still this node's, and what the
  // library reads: a family that answered 0 devices has none, one without an answer is left to the
  // kernel probe (docs/driver-probe.md); the line says so once the file is written.
  std::string failed;
  if (!run->ok) failed = run->why + "; the kernel probe's answer stands";
  else if (!driver_initialised(r.cuda.answer) && !driver_initialised(r.ze.answer))
    failed = std::string("no driver initialised (cuda: ") + r.cuda.answer.name + "; ze: " + r.ze.answer.name + ")";
  if (!want_save) {
    printf("saved  no (ucxtls probe --save stores it as %s/%s)\n", dir.c_str(), kCacheFileName);
    return failed.empty() ? 0 : probe_fail(kFailed, failed);
  }
  // A save that cannot be made says why after this line.
  auto cannot_save = [&](const std::string &why) {
    if (!failed.empty()) probe_fail(kFailed, failed);
    return probe_fail(kUsage, "cannot save: " + why);
  };

  char boot[kBootIdMax + 8];
  ssize_t n = read_boot_id(s, boot, sizeof boot);
  if (n <= 0) return cannot_save("this boot's id (/proc/sys/kernel/random/boot_id) cannot be read");
  while (n && (boot[n - 1] == '\n' || boot[n - 1] == ' ')) boot[--n] = '\0';
  r.boot = boot;
  for (FamilyReport *f : {&r.cuda, &r.ze})  // names are for people (printed above), not for every process
    for (int i = 0; i < f->ndev; i++) f->dev[i].name = nullptr;
  std::string err;
  if (!make_dirs(dir, &err)) return cannot_save(err);
  // The directory must pass the rule every reader applies, or no process would use the file.
  struct stat st;
  char why_buf[128];
  Text why;
  why.init(why_buf, sizeof why_buf);
  FileFacts facts;
  if (stat(dir.c_str(), &st) == 0) {
    facts.uid = st.st_uid, facts.mode = st.st_mode;
    if (!cache_trusted(facts, geteuid(), true, why))
      return cannot_save(dir + " " + why_buf + ": every process would ignore a file in it");
  }
  char text[kDriverReportMax];
  size_t len = format_driver_report(r, text, sizeof text);
  if (!len) return cannot_save("the answer does not fit in a report");
  if (!save(dir, text, len, &err)) return cannot_save(err);
  // What a process started from here makes of it: the library's own reader.
  DriverFact check;
  probe_driver(in, s, &check);
  printf("saved  %s/%s (boot %s)\n", dir.c_str(), kCacheFileName, boot);
  printf("reader %s\n", check.evidence);
  if (check.value != Tri::yes) return probe_fail(kFailed, (failed.empty() ? "" : failed + "; ") + "saved, but the library ignores it: " + check.evidence);
  if (!failed.empty())
    return probe_fail(kFailed, failed + ": saved all the same, and read with UCXTLS_PROBE=driver (a family that "
                                        "answered 0 devices has none, one without an answer gets the kernel probe's)");
  return 0;
}

}  // namespace cli
}  // namespace ucxtls
