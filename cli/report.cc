// What the `ucxtls` commands share (see report.h).
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <new>

#include "probe.h"

#ifndef UCXTLS_BIN_TO_LIB
#define UCXTLS_BIN_TO_LIB "../lib"
#endif
#ifndef UCXTLS_BIN_TO_HELPERS
#define UCXTLS_BIN_TO_HELPERS "../libexec/ucxtls"
#endif

namespace ucxtls {
namespace cli {

int fail(int status, const std::string &msg) {
  fprintf(stderr, "ucxtls: %s\n", msg.c_str());
  return status;
}

void Environment::load() {
  int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool whole = read_all(fd, &raw);
    close(fd);
    if (whole) {
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


void evaluate(Report *r, const char *tmpl) {
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
    if (need_state(r->f, n) == FactState::to_probe) probe(n, r->in, r->s, all, &r->f);
  }
  // The family: the decision's, or, when it did not need one (UCX_TLS already set, no RDMA with
  // the default template, a ucx.conf, the library off, an invalid setting), the core's answer to
  // the family question alone on this machine (display only: the decision stands as made).
  r->family_decided = r->d.family_known;
  if (r->d.family_known) {
    r->family = r->d.family;
  } else {
    auto f = std::make_unique<Facts>(r->f);
    r->family = probe_family(r->in, r->s, all, f.get());
  }
}

std::string library_line(const Report &r) {
  // Decided again exactly as the constructor decides: its probes stop at the first visible GPU,
  // so the line carries the library's own counts ("1+"), not explain's full listing. The decision
  // is the same; only the evidence differs.
  auto f = std::make_unique<Facts>();
  auto d = std::make_unique<Decision>();
  ProbeOptions o;
  o.evidence = true;
  run_ladder(r.in, r.s, o, f.get(), d.get());
  char line[kLineMax];
  size_t n = format_line(Decided{r.in, r.s, *f, *d}, line, sizeof line);
  return std::string(line, n);
}

namespace {

void close_stdout() {
  const bool failed_before = ferror(stdout);
  int err = fflush(stdout) != 0 ? errno : 0;
  if (fclose(stdout) != 0 && !err) err = errno;
  if (!failed_before && !err) return;
  fprintf(stderr, "ucxtls: write error on stdout%s%s\n", err ? ": " : "", err ? strerror(err) : "");
  _exit(kUsage);  // as coreutils: the output was lost, whatever the command's own answer was
}

// operator new's handler: called before it would throw, so it needs no memory of its own.
void out_of_memory() {
  static const char kLine[] = "ucxtls: out of memory\n";
  (void)!write(2, kLine, sizeof kLine - 1);
  _exit(kUsage);
}

}  // namespace

void install_guards() {
  std::set_new_handler(out_of_memory);
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    const int n = open("/dev/null", (fd == 2 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);  // the lowest free: fd
    if (n >= 0 && n != fd) close(n);
  }
  atexit(close_stdout);
}

bool read_all(int fd, std::string *out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) out->append(buf, size_t(n));
    else if (n == 0) return true;
    else if (errno != EINTR) return false;
  }
}

std::string shell_quote(const char *s) {
  std::string o = "'";
  for (; *s; s++) {
    if (*s == '\'') o += "'\\''";
    else o += *s;
  }
  return o + "'";
}

std::vector<std::string> split(const char *list, const char *seps) {
  std::vector<std::string> out;
  Items items(list, seps);
  const char *item;
  size_t n;
  while (items.next(&item, &n)) out.emplace_back(item, n);
  return out;
}

bool own_directory(std::string *dir) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  const char *slash = strrchr(exe, '/');
  *dir = !slash ? "." : slash == exe ? "/" : std::string(exe, size_t(slash - exe));
  return true;
}

void install_candidates(const std::string &dir, const char *name, std::string out[2]) {
  out[0] = dir + "/" + name;
  out[1] = dir + "/" UCXTLS_BIN_TO_LIB "/" + name;
}

void helper_candidates(const std::string &dir, const char *name, std::string out[2]) {
  out[0] = dir + "/" + name;
  out[1] = dir + "/" UCXTLS_BIN_TO_HELPERS "/" + name;
}

}  // namespace cli
}  // namespace ucxtls
