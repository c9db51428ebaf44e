// ucxtls: the command beside libucxtls.so (explain, env, run, doctor).
//
// An ordinary C++17 program, but every answer comes from the library's own code: the same
// read_inputs -> parse_settings -> run_ladder -> decide path the constructor runs (shim/), and
// format_line for the library's one-line summary. Nothing here restates a rule of the ladder.
// stdout carries only what was asked for; every error is one line on stderr and a non-zero exit.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "core.h"
#include "probe.h"
#include "sys.h"
#include "unknown.h"

#ifndef UCXTLS_VERSION
#define UCXTLS_VERSION "unknown"
#endif
#ifndef UCXTLS_BIN_TO_LIB
#define UCXTLS_BIN_TO_LIB "../lib"
#endif

using namespace ucxtls;

int cmd_probe(int argc, char **argv);  // cli/probe.cc: ucxtls probe [--save]

namespace {

// Exit statuses: 0 fine, 1 a check failed (doctor) or a setting is invalid, 2 usage or
// environment error (unknown command, no ucx_info, no library). run passes its child's through.
constexpr int kFailed = 1, kUsage = 2;

int fail(int status, const std::string &msg) {
  fprintf(stderr, "ucxtls: %s\n", msg.c_str());
  return status;
}

// ---------------------------------------------------------------------------------------------
// The environment as it was when this process started. If libucxtls.so is preloaded into the
// command itself, its constructor has already changed `environ` (set or cleared UCX_TLS), and
// explaining that would describe the wrong process: a new process started from the caller's
// shell sees the exec-time block, which /proc/self/environ still holds (setenv/unsetenv never
// touch it). Without /proc, `environ` is the best there is.
struct Environment {
  std::string raw;
  std::vector<char *> vars;  // NULL-terminated, pointing into raw (or into environ)

  void load() {
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) raw.append(buf, size_t(n));
      close(fd);
      if (n == 0) {
        for (size_t i = 0; i < raw.size(); i += strlen(&raw[i]) + 1)
          if (raw[i]) vars.push_back(&raw[i]);
        vars.push_back(nullptr);
        return;
      }
      raw.clear();
    }
    for (char **e = environ; *e; e++) vars.push_back(*e);
    vars.push_back(nullptr);
  }
  char *const *envp() const { return vars.data(); }
};

// ---------------------------------------------------------------------------------------------
// The decision, exactly as the constructor makes it, plus display-only evidence.
struct Report {
  Environment env;
  Inputs in;
  Settings s;
  Facts f;
  Decision d;
  Family family = Family::none;  // see family_decided
  bool family_decided = false;   // true: the decision chose it; false: shown for information
};

bool fact_known(const Facts &f, Need n) {
  switch (n) {
    case Need::rdma: return f.rdma != Tri::unknown || f.rdma_error;
    case Need::ucx_conf: return f.ucx_conf != Tri::unknown || f.ucx_conf_error;
    case Need::driver: return f.driver.ran != Tri::unknown;
    case Need::cuda: return f.family[int(Family::cuda)].visible != Tri::unknown || f.family[int(Family::cuda)].error;
    case Need::rocm: return f.family[int(Family::rocm)].visible != Tri::unknown || f.family[int(Family::rocm)].error;
    case Need::ze: return f.family[int(Family::ze)].visible != Tri::unknown || f.family[int(Family::ze)].error;
    default: return true;
  }
}

// `family` when the decision did not settle one (UCX_TLS already set, no RDMA with the default
// template, a ucx.conf, the library off, an invalid setting): the family the library's rule picks
// on this machine for this environment, from the same decide() asked the family question alone
// (a "{copy}" template, no UCX_TLS, no ucx.conf). Display only: the decision stands as made.
Family family_for_display(const Report &r) {
  Inputs in = r.in;
  in.secure = false;
  in.var[kUcxTls] = nullptr;
  in.var[kDerived] = nullptr;
  Settings s = r.s;
  s.disabled = false;
  s.invalid = false;
  s.template_from_user = true;
  s.tmpl = "{copy}";
  Facts f = r.f;
  f.ucx_conf = Tri::no;
  ProbeOptions all;
  all.exhaustive = true;
  auto d = std::make_unique<Decision>();
  run_ladder(in, s, all, &f, d.get());
  return d->family_known ? d->family : Family::none;
}

// tmpl: a template to decide with instead of the environment's UCX_TLS and UCXTLS_TEMPLATE
// (`doctor --template`): the value the library would compose from it in this environment.
void evaluate(Report *r, const char *tmpl = nullptr) {
  r->env.load();
  // Secure execution: like the library, read nothing.
  r->in.secure = getauxval(AT_SECURE) != 0;
  if (!r->in.secure) read_inputs(r->env.envp(), &r->in);
  if (tmpl) {
    r->in.var[kTemplate] = tmpl;
    r->in.var[kUcxTls] = r->in.var[kDerived] = nullptr;
  }
  parse_settings(r->in, &r->s);
  // Exhaustive listing changes what is counted for the evidence, never the answer (the
  // enumeration bounds only stop early once the answer is known).
  ProbeOptions all;
  all.exhaustive = true;
  run_ladder(r->in, r->s, all, &r->f, &r->d);
  if (r->in.secure) return;
  // Evidence for the facts the ladder did not need; the decision above is final.
  const Need rest[] = {Need::rdma, Need::ucx_conf, Need::driver, Need::cuda, Need::rocm, Need::ze};
  for (Need n : rest) {
    if (n == Need::driver && r->s.tier != ProbeTier::driver) continue;
    if (!fact_known(r->f, n)) probe(n, r->in, r->s, all, &r->f);
  }
  r->family_decided = r->d.family_known;
  r->family = r->d.family_known ? r->d.family : family_for_display(*r);
}

std::string library_line(const Report &r) {
  char line[2048];
  size_t n = format_line(r.in, r.d, line, sizeof line);
  return std::string(line, n);
}

// ---------------------------------------------------------------------------------------------
// Output helpers

// JSON string: quotes, backslashes and control bytes escaped; bytes that are not valid UTF-8
// (environment values can hold anything) become U+FFFD so the document always parses.
std::string json_str(const char *s) {
  if (!s) return "null";
  std::string o = "\"";
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      char u[8];
      snprintf(u, sizeof u, "\\u%04x", c);
      o += u;
      p++;
    } else if (c < 0x80) {
      o += char(c);
      p++;
    } else {
      int len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
      bool ok = len > 0;
      for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xc0) == 0x80;
      // Overlong 3/4-byte forms, surrogates and code points above U+10FFFF are not UTF-8.
      if (ok && len == 3) ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
      if (ok && len == 4) ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
      if (ok) {
        o.append((const char *)p, size_t(len));
        p += len;
      } else {
        o += "\\ufffd";
        p++;
      }
    }
  }
  return o + "\"";
}

const char *json_tri(Tri t) { return t == Tri::yes ? "true" : t == Tri::no ? "false" : "null"; }

// POSIX shell single quotes: only ' itself needs care ('\'').
std::string shell_quote(const char *s) {
  std::string o = "'";
  for (; *s; s++) {
    if (*s == '\'') o += "'\\''";
    else o += *s;
  }
  return o + "'";
}

const char *tri_word(Tri t, int error = 0) {
  return t == Tri::yes ? "yes" : t == Tri::no ? "no" : error ? "unknown" : "not probed";
}

Rdma rdma_kind(const Facts &f) { return f.rdma != Tri::yes ? Rdma::none : f.rdma_mlx5 ? Rdma::mlx5 : Rdma::rc; }

const Family kShown[] = {Family::cuda, Family::rocm, Family::ze};

// ---------------------------------------------------------------------------------------------
// explain

void explain_text(const Report &r) {
  const Decision &d = r.d;
  const char *value = effective_value(r.in, d);
  printf("action    %s\n", action_name(d.action));
  if (d.action == Action::set)
    printf("UCX_TLS   %s (written with UCXTLS_DERIVED)\n", value);
  else if (d.action == Action::clear)
    printf("UCX_TLS   unset (the inherited UCX_TLS and UCXTLS_DERIVED are removed)\n");
  else if (value)
    printf("UCX_TLS   %s (left as it is)\n", value);
  else if (r.f.ucx_conf == Tri::yes)
    printf("UCX_TLS   unset in the environment (UCX takes it from %s)\n", r.f.ucx_conf_evidence);
  else
    printf("UCX_TLS   unset (UCX uses its default, all)\n");
  printf("family    %s (%s)\n", family_name(r.family),
         r.family_decided ? "the value is composed for it"
                          : "what the probe sees; the decision did not need it");
  printf("template  %s (%s)\n", r.s.tmpl, r.s.template_from_user ? "UCXTLS_TEMPLATE" : "default");
  printf("reasons\n");
  for (int i = 0; i < d.nreasons; i++) printf("  - %s\n", d.reasons[i]);
  if (r.in.secure) return;  // nothing else was read
  printf("evidence\n");
  printf("  rdma      %-10s %s\n", r.f.rdma == Tri::yes ? rdma_transports(rdma_kind(r.f)) : tri_word(r.f.rdma, r.f.rdma_error),
         r.f.rdma_evidence);
  printf("  ucx.conf  %-10s %s\n", r.f.ucx_conf == Tri::yes ? "UCX_TLS" : tri_word(r.f.ucx_conf, r.f.ucx_conf_error),
         r.f.ucx_conf_evidence);
  if (r.s.tier == ProbeTier::driver)
    printf("  driver    %-10s %s\n", r.f.driver.ran == Tri::yes ? "saved" : "none", r.f.driver.evidence);
  if (r.s.tier == ProbeTier::driver && r.f.driver.ran != Tri::yes)  // how to create it
    printf("            `ucxtls probe --save` asks the drivers and saves their answer for this node (README: The driver probe)\n");
  for (Family fam : kShown) {
    const FamilyFact &ff = r.f.family[int(fam)];
    printf("  %-9s %-10s %s\n", family_name(fam),
           ff.visible == Tri::yes ? "visible" : ff.visible == Tri::no ? "none" : ff.error ? "unknown" : "not probed",
           ff.evidence);
  }
  printf("variables\n");
  for (int v = 0; v < kVarCount; v++) {
    const char *val = r.in.get(Var(v));
    if (val) printf("  %s=%s\n", kOptions[v].name, shell_quote(val).c_str());
    else if (v < kOwnVarCount && strcmp(kOptions[v].def, "-") && strcmp(kOptions[v].def, "unset"))
      printf("  %s unset (default %s)\n", kOptions[v].name, kOptions[v].def);
    else
      printf("  %s unset\n", kOptions[v].name);
  }
  char unknown[kUnknownLineMax];  // the library's line for a misspelt UCXTLS_* variable
  size_t nu = format_unknown_line(r.in, r.s, unknown, sizeof unknown);
  printf("library line\n%s%.*s  %s", nu ? "  " : "", int(nu), unknown, library_line(r).c_str());
}

void explain_json(const Report &r) {
  const Decision &d = r.d;
  std::string o = "{";
  o += "\"action\":" + json_str(action_name(d.action));
  o += ",\"value\":" + json_str(effective_value(r.in, d));
  o += ",\"family\":" + json_str(family_name(r.family));
  o += std::string(",\"family_decided\":") + (r.family_decided ? "true" : "false");
  o += ",\"reasons\":[";
  for (int i = 0; i < d.nreasons; i++) o += (i ? "," : "") + json_str(d.reasons[i]);
  o += "],\"error\":" + (d.error ? json_str(d.reasons[0]) : std::string("null"));
  o += std::string(",\"secure\":") + (r.in.secure ? "true" : "false");
  o += ",\"template\":" + json_str(r.s.tmpl);
  o += std::string(",\"template_from_user\":") + (r.s.template_from_user ? "true" : "false");
  o += ",\"probe\":" + json_str(r.s.tier == ProbeTier::driver ? "driver" : "kernel");
  std::string line = library_line(r);
  line.pop_back();  // the newline
  o += ",\"line\":" + json_str(line.c_str());
  o += ",\"evidence\":{";
  o += "\"rdma\":{\"usable\":" + std::string(json_tri(r.f.rdma)) + ",\"transports\":" +
       json_str(rdma_transports(rdma_kind(r.f))) + ",\"error\":" + json_str(r.f.rdma_error ? errno_name(r.f.rdma_error) : nullptr) +
       ",\"evidence\":" + json_str(r.f.rdma_evidence) + "}";
  o += ",\"ucx_conf\":{\"assigns_ucx_tls\":" + std::string(json_tri(r.f.ucx_conf)) +
       ",\"evidence\":" + json_str(r.f.ucx_conf_evidence) + "}";
  if (r.s.tier == ProbeTier::driver)
    o += ",\"driver\":{\"ran\":" + std::string(json_tri(r.f.driver.ran)) +
         ",\"evidence\":" + json_str(r.f.driver.evidence) + "}";
  for (Family fam : kShown) {
    const FamilyFact &ff = r.f.family[int(fam)];
    o += ",\"" + std::string(family_name(fam)) + "\":{\"visible\":" + json_tri(ff.visible) +
         ",\"present\":" + std::to_string(ff.present) + ",\"visible_count\":" + std::to_string(ff.visible_n) +
         ",\"error\":" + json_str(ff.error ? errno_name(ff.error) : nullptr) +
         ",\"evidence\":" + json_str(ff.evidence) + "}";
  }
  o += "},\"variables\":{";
  for (int v = 0; v < kVarCount; v++) o += (v ? "," : "") + json_str(kOptions[v].name) + ":" + json_str(r.in.get(Var(v)));
  o += "}}\n";
  fputs(o.c_str(), stdout);
}

int cmd_explain(int argc, char **argv) {
  bool json = false;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else return fail(kUsage, std::string("explain: unknown option '") + argv[i] + "' (try ucxtls --help)");
  }
  auto r = std::make_unique<Report>();
  evaluate(r.get());
  if (json) explain_json(*r);
  else explain_text(*r);
  // An invalid setting is reported in full above, and as the library's own stderr line.
  if (r->d.error) {
    fputs(library_line(*r).c_str(), stderr);
    return kFailed;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// env

// Two output forms of the same decision. `sh`: shell text for eval, values single-quoted. `slurm`:
// the lines a Slurm TaskProlog prints on stdout, which slurmstepd applies to the task: `export
// NAME=value` (taken verbatim, so no quotes: Slurm does not unquote) and `unset NAME` (one name
// per line: Slurm unsets the rest of the line as a single name).
enum class EnvFormat { sh, slurm };

void print_env(EnvFormat fmt, const char *value) {
  if (fmt == EnvFormat::slurm) {
    if (value) printf("export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n", value, value);
    else printf("unset UCX_TLS\nunset UCXTLS_DERIVED\n");
  } else if (value) {
    std::string q = shell_quote(value);
    printf("export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n", q.c_str(), q.c_str());
  } else {
    printf("unset UCX_TLS UCXTLS_DERIVED\n");
  }
}

int cmd_env(int argc, char **argv) {
  EnvFormat fmt = EnvFormat::sh;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--format=sh")) fmt = EnvFormat::sh;
    else if (!strcmp(argv[i], "--format=slurm")) fmt = EnvFormat::slurm;
    else return fail(kUsage, std::string("env: unknown argument '") + argv[i] + "' (--format=sh or --format=slurm)");
  }
  auto r = std::make_unique<Report>();
  evaluate(r.get());
  if (r->d.error) {
    fputs(library_line(*r).c_str(), stderr);
    // As the library does: an inherited value of ours goes even when a setting is invalid.
    if (r->d.action == Action::clear) print_env(fmt, nullptr);
    return kFailed;
  }
  if (r->s.debug) fputs(library_line(*r).c_str(), stderr);  // as the library would say it
  const char *tls = r->in.get(kUcxTls), *derived = r->in.get(kDerived);
  bool already = tls && derived && !strcmp(tls, r->d.value) && !strcmp(derived, r->d.value);
  if (r->d.action == Action::set && !already) {  // a re-derived value equal to the shell's: nothing to do
    // A value is composed from a validated template (names, commas, ':aux', '^'), so it never
    // holds a line break that would end Slurm's line early; refuse rather than print half a value.
    if (fmt == EnvFormat::slurm && strpbrk(r->d.value, "\n\r"))
      return fail(kFailed, "env: the value holds a line break; a Slurm TaskProlog line cannot carry it");
    print_env(fmt, r->d.value);
  } else if (r->d.action == Action::clear) {
    print_env(fmt, nullptr);
  }  // keep, skip, or set to what the shell has: the shell is already right
  return 0;
}

// ---------------------------------------------------------------------------------------------
// run

std::string dirname_of(const std::string &p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? "." : k == 0 ? "/" : p.substr(0, k);
}

// The library installed beside this command: the same directory (build tree), then
// <prefix>/<bindir>/../<libdir> (install tree; the relative path is fixed at configure time).
bool find_library(std::string *out, std::string *looked) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    *looked = "/proc/self/exe (unreadable)";
    return false;
  }
  exe[n] = '\0';
  std::string dir = dirname_of(exe);
  const std::string candidates[] = {dir + "/libucxtls.so", dir + "/" UCXTLS_BIN_TO_LIB "/libucxtls.so"};
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
  std::string cur;
  for (const char *p = list;; p++) {
    if (!*p || *p == ':' || *p == ' ') {
      if (cur == lib) return true;
      cur.clear();
      if (!*p) return false;
    } else {
      cur += *p;
    }
  }
}

int cmd_run(int argc, char **argv) {
  int i = 0;
  if (i < argc && !strcmp(argv[i], "--")) i++;
  if (i >= argc) return fail(kUsage, "run: no command given (ucxtls run [--] COMMAND [ARGS...])");
  std::string lib, looked;
  if (!find_library(&lib, &looked))
    return fail(kUsage, "run: libucxtls.so not found beside this command (looked at " + looked + ")");
  if (lib.find_first_of(": ") != std::string::npos)
    return fail(kUsage, "run: the library path " + lib + " has a space or colon, which LD_PRELOAD cannot hold");

  // The caller's environment as it was at exec (see Environment), with the library in front of
  // any LD_PRELOAD entries already there.
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
      else if (*old) preload += std::string(":") + old;
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

// ---------------------------------------------------------------------------------------------
// doctor

// UCX's alias table (ucp_tl_aliases, UCX master = v1.21/v1.22; ../shared/research/ucx.md §1).
// An alias counts as served when any member is, an aux-only member included, which is exactly
// when UCX does not print "not available" for it.
struct Alias {
  const char *name;
  const char *members;
};
const Alias kAliases[] = {
    {"mm", "posix,sysv,xpmem"},
    {"sm", "posix,sysv,xpmem,knem,cma"},
    {"shm", "posix,sysv,xpmem,knem,cma"},
    {"ib", "rc_verbs,ud_verbs,rc_mlx5,ud_mlx5,dc_mlx5,gga_mlx5,ud_mlx5:aux,ud_verbs:aux,srd,rc_gda"},
    {"ud_v", "ud_verbs"},
    {"ud_x", "ud_mlx5"},
    {"ud", "ud_mlx5,ud_verbs"},
    {"rc_v", "rc_verbs,ud_verbs:aux"},
    {"rc_x", "rc_mlx5,ud_mlx5:aux"},
    {"rc", "rc_mlx5,ud_mlx5:aux,rc_verbs,ud_verbs:aux"},
    {"dc", "dc_mlx5,ud_mlx5:aux"},
    {"dc_x", "dc_mlx5,ud_mlx5:aux"},
    {"ugni", "ugni_smsg,ugni_udt:aux,ugni_rdma"},
    {"cuda", "cuda_copy,cuda_ipc,gdr_copy"},
    {"rocm", "rocm_copy,rocm_ipc,rocm_gdr"},
    {"ze", "ze_copy,ze_ipc,ze_gdr"},
    {"gaudi", "gaudi_gdr"},
    {"gga", "gga_mlx5"},
};

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t k = s.find(sep, start);
    out.push_back(s.substr(start, k == std::string::npos ? std::string::npos : k - start));
    if (k == std::string::npos) return out;
    start = k + 1;
  }
}

std::string strip_aux(const std::string &s) {
  size_t k = s.find(':');
  return k == std::string::npos ? s : s.substr(0, k);
}

// Runs `ucx_info -d` and collects its "Transport:" names. The child gets the caller's
// environment without UCX_TLS (it must not narrow what UCX reports) and with the library off.
bool ucx_transports(const Environment &env, std::vector<std::string> *tls, std::string *err) {
  std::vector<char *> envp;
  for (char *const *e = env.envp(); *e; e++)
    if (strncmp(*e, "UCX_TLS=", 8) && strncmp(*e, "UCXTLS_DERIVED=", 15) && strncmp(*e, "UCXTLS_DISABLE=", 15))
      envp.push_back(*e);
  char off[] = "UCXTLS_DISABLE=1";
  envp.push_back(off);
  envp.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return *err = std::string("pipe: ") + strerror(errno), false;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return *err = std::string("fork: ") + strerror(errno), false;
  if (pid == 0) {
    dup2(fds[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);  // UCX's own warnings are not the point here
    char *argv[] = {(char *)"ucx_info", (char *)"-d", nullptr};
    execvpe(argv[0], argv, envp.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return *err = "cannot run ucx_info (not in PATH? Debian/Ubuntu: apt-get install ucx-utils)", false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return *err = "ucx_info -d failed (status " + std::to_string(status) + ")", false;
  for (const std::string &line : split(out, '\n')) {
    size_t k = line.find("Transport:");
    if (line.empty() || line[0] != '#' || k == std::string::npos) continue;
    size_t b = line.find_first_not_of(" \t", k + 10), e = line.find_first_of(" \t\r", b);
    if (b == std::string::npos) continue;
    std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool dup = false;
    for (const std::string &t : *tls) dup = dup || t == name;
    if (!dup) tls->push_back(name);
  }
  if (tls->empty()) return *err = "ucx_info -d listed no transport", false;
  return true;
}

int cmd_doctor(int argc, char **argv) {
  const char *explicit_value = nullptr, *tmpl = nullptr;
  const char *usage = " (ucxtls doctor [--value V | --template T])";
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool value_opt = !strcmp(a, "--value"), tmpl_opt = !strcmp(a, "--template");
    if ((value_opt || tmpl_opt) && i + 1 >= argc) return fail(kUsage, std::string("doctor: ") + a + " needs an argument" + usage);
    if (value_opt) explicit_value = argv[++i];
    else if (tmpl_opt) tmpl = argv[++i];
    else if (!strncmp(a, "--value=", 8)) explicit_value = a + 8;
    else if (!strncmp(a, "--template=", 11)) tmpl = a + 11;
    else return fail(kUsage, std::string("doctor: unknown option '") + a + "'" + usage);
  }
  // A value with placeholders is a template: check what it composes to here.
  if (explicit_value && strchr(explicit_value, '{')) tmpl = explicit_value, explicit_value = nullptr;
  auto r = std::make_unique<Report>();
  std::string value, source;
  if (explicit_value) {
    value = explicit_value;
    source = "--value";
    r->env.load();
  } else {
    evaluate(r.get(), tmpl);
    if (r->d.error) {
      fputs(library_line(*r).c_str(), stderr);
      return kFailed;
    }
    const char *v = effective_value(r->in, r->d);
    if (!v && r->f.ucx_conf == Tri::yes) {
      printf("UCX_TLS is not in the environment: UCX takes it from %s; check that value with --value\n",
             r->f.ucx_conf_evidence);
      return 0;
    }
    if (!v) {
      printf("UCX_TLS stays unset here (%s): UCX uses every transport it has; nothing to check\n",
             action_name(r->d.action));
      return 0;
    }
    value = v;
    source = tmpl ? std::string("composed here from ") + tmpl
                  : r->d.action == Action::set ? "derived by ucxtls" : "UCX_TLS as set";
  }

  std::vector<std::string> have;
  std::string err;
  if (!ucx_transports(r->env, &have, &err)) return fail(kUsage, "doctor: " + err);
  auto served = [&](const std::string &name) {
    for (const std::string &t : have)
      if (t == name) return true;
    return false;
  };
  std::string list;
  for (const std::string &t : have) list += (list.empty() ? "" : ", ") + t;
  printf("value       %s (%s)\n", value.c_str(), source.c_str());
  printf("this UCX    %s (ucx_info -d)\n", list.c_str());

  std::string items = value;
  bool deny = !items.empty() && items[0] == '^';
  if (deny) items.erase(0, 1);
  if (items.empty()) {
    printf("MISSING     every transport: an empty list makes UCX fail (\"The TLs list is empty\")\n");
    return fail(kFailed, "doctor: UCX_TLS is empty: UCX fails to create a context (\"The TLs list is empty\")");
  }
  std::vector<std::string> missing;
  for (const std::string &item : split(items, ',')) {
    std::string name = strip_aux(item);
    bool exact = !name.empty() && name[0] == '\\';  // \name: the transport itself, not an alias
    if (exact) name.erase(0, 1);
    std::string via;  // which members serve it
    bool ok = name == "all" || served(name);
    if (!exact) {
      for (const Alias &a : kAliases) {
        if (name != a.name) continue;
        for (const std::string &m : split(a.members, ','))
          if (served(strip_aux(m))) ok = true, via += (via.empty() ? "" : ",") + m;
      }
    }
    if (deny && ok) {
      printf("%-11s %s\n", "denied", item.c_str());
    } else if (deny) {
      // Harmless to the context, yet UCX 1.13 (measured) warns about it like an allowed name;
      // the newest UCX does not (ucx.md §2). Reported, since it is in the value for nothing.
      printf("%-11s %s (denied, and not in this UCX: some UCX releases warn about it)\n", "MISSING", item.c_str());
      missing.push_back(item);
    } else if (ok) {
      printf("%-11s %s%s%s\n", "ok", item.c_str(), via.empty() ? "" : " -> ", via.c_str());
    } else {
      bool blank = item.find_first_of(" \t") != std::string::npos;  // UCX does not trim entries
      printf("%-11s %s%s\n", "MISSING", item.c_str(), blank ? " (has a space: UCX does not trim entries)" : "");
      missing.push_back(item);
    }
  }
  if (missing.empty()) return 0;
  std::string names;
  for (const std::string &m : missing) names += (names.empty() ? "" : ", ") + m;
  fprintf(stderr, "ucxtls: doctor: this UCX cannot serve %s: it prints \"not available\" on stdout of every process that uses this value\n",
          names.c_str());
  return kFailed;
}

// ---------------------------------------------------------------------------------------------
// help, version, dispatch

void help() {
  printf(
      "usage: ucxtls COMMAND [ARGS]\n"
      "\n"
      "The command beside libucxtls.so: it answers through the library's own decision code.\n"
      "\n"
      "commands:\n"
      "  explain [--json]        the decision for this environment and machine, with evidence\n"
      "  env [--format=sh|slurm] shell text for eval \"$(ucxtls env)\": export or unset UCX_TLS;\n"
      "                          slurm: the unquoted export/unset lines a Slurm TaskProlog prints\n"
      "  run [--] COMMAND...     exec COMMAND with libucxtls.so added to LD_PRELOAD\n"
      "  doctor [--value V | --template T]\n"
      "                          check that the local UCX (ucx_info -d) serves every transport of\n"
      "                          the value in effect, of V, or of what template T composes to here\n"
      "                          ({copy}, {ipc}, {rdma}); exit 1 if one is missing\n"
      "  probe [--save]          ask the CUDA and Level Zero drivers (in the helper ucxtls-probe)\n"
      "                          which devices there are; --save stores the answer for this node,\n"
      "                          which UCXTLS_PROBE=driver reads\n"
      "  --help, --version\n"
      "\n"
      "variables of ucxtls (the library and this command read the same):\n");
  for (int v = 0; v < kVarCount; v++) {
    if (v == kOwnVarCount) printf("\nvariables it reads as well:\n");
    const Option &o = kOptions[v];
    if (v < kOwnVarCount) printf("  %-24s default %s\n  %-24s %s\n", o.name, o.def, "", o.meaning);
    else printf("  %-24s %s\n", o.name, o.meaning);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ucxtls explain|env|run|doctor|probe ... (ucxtls --help)\n");
    return kUsage;
  }
  const char *cmd = argv[1];
  int n = argc - 2;
  char **rest = argv + 2;
  if (!strcmp(cmd, "explain")) return cmd_explain(n, rest);
  if (!strcmp(cmd, "env")) return cmd_env(n, rest);
  if (!strcmp(cmd, "run")) return cmd_run(n, rest);
  if (!strcmp(cmd, "doctor")) return cmd_doctor(n, rest);
  if (!strcmp(cmd, "probe")) return cmd_probe(n, rest);  // cli/probe.cc
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) return help(), 0;
  if (!strcmp(cmd, "--version")) return printf("ucxtls %s\n", UCXTLS_VERSION), 0;
  return fail(kUsage, std::string("unknown command '") + cmd + "' (try ucxtls --help)");
}
