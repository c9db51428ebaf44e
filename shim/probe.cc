// The kernel probe (docs/design.md, "Kernel probe"): what the probes share, the ucx.conf scan, and
// probe(). A failed probe is not a "no": only "not there" (sys.h absent()) is; any other failure
// leaves the fact unknown with its error, unless the answer is certain without the part that failed.
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "device_rules.h"
#include "probe_shared.h"

namespace ucxtls {
namespace probes {

UCXTLS_FILE_BACKED char g_file[4096];

ssize_t read_file(const Path &p) { return read_small(p, g_file, sizeof g_file); }

bool name_has_prefix(const char *name, const char *prefix, const char **rest) {
  size_t k = strlen(prefix);
  if (strncmp(name, prefix, k)) return false;
  *rest = name + k;
  return true;
}

long all_digits(const char *s) {
  long v;
  size_t n = strlen(s);
  if (!n || n > 9) return -1;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return -1;
  return parse_long(s, n, &v) ? v : -1;
}

const char *basename_of(const char *path) {
  const char *p = path + strlen(path);  // from the end: the base name is the short part
  while (p > path && p[-1] != '/') p--;
  return p;
}

void describe_variable(Text &t, const char *name, const char *value) {
  t.add(name);
  if (value) t.add("=").add_quoted(value, 40);
  else t.add(" unset");
}

void describe_failure(Text &t, const char *what, const Path &p, long err) {
  t.add(errno_name(err)).add(": could not ").add(what).add(" ").add(p.buf);
}

void Failure::note(const char *what, const Path &p, long err, bool evidence) {
  if (error) return;
  error = int(err);
  if (evidence) {
    Text t(text, sizeof text);
    describe_failure(t, what, p, err);
  }
}

// UCX's order (src/ucs/config/parser.c ucs_config_parse_config_files), a later file overriding;
// the library-relative file is not known before UCX is loaded. Place i (0..3): false when unset.
bool ucx_conf_place(int i, const Inputs &in, const Settings &s, Path *p) {
  const char *base = i == 1 ? in.get(kHome) : i == 2 ? in.get(kUcxConfigDir) : nullptr;
  *p = Path(i == 0 ? s.sysroot : nullptr, i == 0 ? "/etc/ucx/ucx.conf" : i == 3 ? "./ucx.conf" : "");
  if (i == 1 || i == 2) {
    if (!base || !base[0]) return false;
    p->add(base).add("/ucx.conf");
  }
  return true;
}

// 1 MiB is far beyond any real ucx.conf: a bigger file is read that far only.
constexpr size_t kConfMax = 1 << 20;

// UCX reads its variables from the environment first, then from the ucx.conf files
// (parser.c ucs_config_apply_config_vars: "Env variable has precedence over file config").
UCXTLS_OWN_FRAME void scan_ucx_conf(const Inputs &in, const Settings &s, bool evidence, bool whole, Facts *f) {
  static const char kName[] = "UCX_IB_GID_INDEX";
  GidSetting &g = f->gid;
  const char *env = in.get(kUcxIbGidIndex);
  Text gt(g.shown, sizeof g.shown);
  if (env) {
    g.read = true;
    g.index = parse_gid_index(env);
    describe_variable(gt, kName, env);
    if (g.index == kGidUnknown) gt.add(" is not a number or auto");
    if (whole || f->ucx_conf.value != Tri::unknown) return;  // the GID was all a RoCE port asked for
  }
  f->ucx_conf = Fact();
  Text ev(f->ucx_conf.evidence, evidence ? sizeof f->ucx_conf.evidence : 0);
  char value[24] = {}, last[24] = {};
  int from = -1;
  bool in_section = false;
  for (int i = 0; i < 4; i++) {
    Path p(nullptr, "");
    if (!ucx_conf_place(i, in, s, &p)) continue;
    ConfScan tls, gid;
    gid.key = kName;
    gid.value = value;
    gid.value_cap = sizeof value;
    int r = read_chunks(p, kConfMax, [&](const char *c, size_t n) {
      tls.feed(c, n);
      if (!env) gid.feed(c, n);
    });
    // A file UCX cannot read either (EACCES) is as good as absent; anything else is "cannot tell".
    if (r < 0 && !absent(r) && r != -EACCES) {
      if (f->ucx_conf.value != Tri::yes) f->ucx_conf.error = r, describe_failure(ev, "read", p, r);
      if (!env) g.read = true, g.error = r, g.index = kGidUnknown, describe_failure(gt, "read", p, r);
      return;
    }
    gid.finish();
    if (gid.found) from = i, in_section = gid.value_in_section, memcpy(last, value, sizeof last);
    if (tls.found && f->ucx_conf.value != Tri::yes) {
      f->ucx_conf.value = Tri::yes;
      ev.add(p.buf);
      if (!whole) return;  // the decision keeps the file's value: no GID is asked for
    }
  }
  if (f->ucx_conf.value != Tri::yes) f->ucx_conf.value = Tri::no, ev.add("no UCX_TLS line in any ucx.conf");
  if (env) return;
  g.read = true;
  if (from < 0) return void(gt.add(kName).add(" unset (auto)"));
  // A [section] applies only where its filters match this machine: which value UCX reads is not
  // known from the file alone.
  g.index = in_section ? kGidUnknown : parse_gid_index(last);
  describe_variable(gt, kName, last);
  if (in_section) gt.add(" is in a [section] of ");
  else if (g.index == kGidUnknown) gt.add(" is not a number or auto, in ");
  else gt.add(" of ");
  Path p(nullptr, "");
  ucx_conf_place(from, in, s, &p);
  gt.add(p.buf);
}

}  // namespace probes

using namespace probes;

void probe(Need need, const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  switch (need) {
    case Need::rdma: return probe_rdma(in, s, o, f);
    case Need::ucx_conf: return scan_ucx_conf(in, s, o.evidence, false, f);
    case Need::driver: return probe_driver(in, s, &f->driver);
    case Need::cuda: return probe_cuda(in, s, o, f);
    case Need::rocm: return probe_rocm(in, s, o, f);
    case Need::ze: return probe_ze(in, s, o, f);
    default: return;
  }
}

}  // namespace ucxtls
