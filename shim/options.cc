// The options table, the one pass over the environment, unknown variables and the settings:
// pure functions only (see options.h).
#include "options.h"

#include <string.h>

namespace ucxtls {

namespace {

// Text that names a limit, built from the limit's constant at compile time.
constexpr auto kTimeoutDefault = decimal<kProbeTimeoutMsDefault>();
constexpr auto kTimeoutRange = decimal<kProbeTimeoutMsMin>() + lit(" to ") + decimal<kProbeTimeoutMsMax>();
constexpr auto kTimeoutMeaning = lit("bound on `ucxtls probe` (the driver APIs' helper), ") + kTimeoutRange + lit(" ms");
constexpr auto kTimeoutWhy = lit("is not a whole number of milliseconds from ") + kTimeoutRange;
constexpr auto kSysrootTooLong = lit("is longer than ") + decimal<kSysrootMax>() + lit(" bytes");

}  // namespace

// The one table behind parsing, `ucxtls --help`, the man page and the documentation's table.
const Option kOptions[kVarCount] = {
    {"UCXTLS_DISABLE", "unset", "turn the library off: any value but empty or 0"},
    {"UCXTLS_ACCEL", "auto", "accelerator family: auto (probe), cuda, rocm, ze or none"},
    {"UCXTLS_REPAIR", "unset",
     "1: a kept UCX_TLS naming another GPU family's transports and none of this node's gets them rewritten to this node's"},
    {"UCXTLS_TEMPLATE", kDefaultTemplate,
     "UCX_TLS pattern: {copy} the copy transport, {ipc} cuda_ipc/rocm_ipc, {rdma} the RDMA transports; an empty one goes with one comma"},
    {"UCXTLS_PROBE", "kernel",
     "kernel (device files only) or driver (the CUDA/Level Zero answer `ucxtls probe --save` stored)"},
    {"UCXTLS_PROBE_TIMEOUT_MS", kTimeoutDefault.s, kTimeoutMeaning.s},
    {"UCXTLS_CACHE_DIR", "unset",
     "where `ucxtls probe --save` stores the driver's answer and the library reads it (an absolute path); unset: $XDG_RUNTIME_DIR/ucxtls, then /run/ucxtls"},
    {"UCXTLS_DEBUG", "unset", "1: one line on stderr saying what was decided and why"},
    {"UCXTLS_SYSROOT", "unset",
     "directory put in front of every /dev, /sys, /proc, /etc path the probe reads"},
    {"UCXTLS_DERIVED", "-",
     "written by the library with UCX_TLS: marks the value as derived, so it is derived again"},
    {"UCX_TLS", "-", "UCX's transport list: kept when set, even empty, unless it equals UCXTLS_DERIVED (then derived again)"},
    {"UCX_CONFIG_DIR", "-", "UCX's extra ucx.conf directory, checked for a UCX_TLS line"},
    {"HOME", "-", "$HOME/ucx.conf is checked for a UCX_TLS line"},
    {"CUDA_VISIBLE_DEVICES", "-", "NVIDIA GPUs the process may use (CUDA's rules)"},
    {"ROCR_VISIBLE_DEVICES", "-", "AMD GPUs the process may use (ROCr's rules)"},
    {"HIP_VISIBLE_DEVICES", "-", "AMD GPUs, applied after ROCR_VISIBLE_DEVICES"},
    {"ZE_AFFINITY_MASK", "-", "Intel GPUs the process may use (empty = all)"},
    {"XDG_RUNTIME_DIR", "-", "$XDG_RUNTIME_DIR/ucxtls holds the driver's answer when UCXTLS_CACHE_DIR is unset"},
};

// ---------------------------------------------------------------------------------------------
// The one pass over the environment

// It runs in every process, over environments of hundreds of entries: one test of the first
// letter rejects almost every entry, and a match is compared in place (no strlen, no strncmp).
// An entry that starts like ours ("UCXTLS_") but matched no name is an unknown variable.
void read_inputs(char *const *envp, Inputs *in) {
  for (int v = 0; v < kVarCount; v++) in->var[v] = nullptr;
  in->unknown = nullptr;
  in->unknown_count = 0;
  if (!envp) return;
  unsigned long long first = 0;  // first letters of the names (all ASCII upper case or digits)
  for (int v = 0; v < kVarCount; v++) first |= 1ULL << (kOptions[v].name[0] & 63);
  for (char *const *e = envp; *e; e++) {
    const char *entry = *e;
    if (!(first >> (entry[0] & 63) & 1)) continue;
    bool known = false;
    for (int v = 0; v < kVarCount; v++) {
      const char *name = kOptions[v].name;
      if (entry[0] != name[0]) continue;
      size_t i = 1;
      while (name[i] && entry[i] == name[i]) i++;
      if (!name[i] && entry[i] == '=') {
        if (!in->var[v]) in->var[v] = entry + i + 1;  // a later duplicate is known, not read
        known = true;
        break;
      }
    }
    if (known) continue;
    size_t i = 0;
    while (kOwnPrefix[i] && entry[i] == kOwnPrefix[i]) i++;
    if (kOwnPrefix[i]) continue;
    if (!in->unknown) in->unknown = entry;
    in->unknown_count++;
  }
}

size_t env_name_len(const char *entry) {
  size_t n = 0;
  while (entry[n] && entry[n] != '=') n++;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Unknown variables: the closest option

namespace {

constexpr size_t kCompared = 48;  // longer names are compared by their first 48 bytes

char upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

// Optimal string alignment distance (Levenshtein plus adjacent swaps), case-insensitive.
size_t distance(const char *a, size_t na, const char *b, size_t nb) {
  if (na > kCompared) na = kCompared;
  if (nb > kCompared) nb = kCompared;
  unsigned char rows[3][kCompared + 1];  // the row before the previous one, the previous, this one
  unsigned char *pp = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= nb; j++) prev[j] = (unsigned char)j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = (unsigned char)i;
    for (size_t j = 1; j <= nb; j++) {
      const bool same = upper(a[i - 1]) == upper(b[j - 1]);
      unsigned d = prev[j - 1] + (same ? 0u : 1u);
      if (prev[j] + 1u < d) d = prev[j] + 1u;
      if (cur[j - 1] + 1u < d) d = cur[j - 1] + 1u;
      if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) && upper(a[i - 2]) == upper(b[j - 1]) &&
          pp[j - 2] + 1u < d)
        d = pp[j - 2] + 1u;
      cur[j] = (unsigned char)d;
    }
    unsigned char *t = pp;
    pp = prev, prev = cur, cur = t;
  }
  return prev[nb];
}

}  // namespace

Var closest_option(const char *name, size_t n) {
  const size_t prefix = sizeof kOwnPrefix - 1;
  Var best = kVarCount;
  size_t best_d = 3;  // more than 2 edits is not close
  for (int v = 0; v < kOwnVarCount; v++) {
    const char *known = kOptions[v].name;
    size_t nk = 0;
    while (known[nk]) nk++;
    size_t d = distance(name, n, known, nk);
    size_t tail = nk > prefix ? nk - prefix : 0;
    if (d < best_d && 2 * d < tail) best = Var(v), best_d = d;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Settings

bool switch_on(const char *v) { return v && v[0] && !(v[0] == '0' && v[1] == '\0'); }

static bool set_nonempty(const char *v) { return v && v[0]; }

void mark_invalid(Settings *s, Var v, const char *why) {
  if (s->invalid) return;  // the first one is reported
  s->invalid = true;
  s->invalid_var = v;
  s->invalid_why = why;
}

void parse_switches(const Inputs &in, Settings *s) {
  s->disabled = switch_on(in.get(kDisable));
  s->debug = switch_on(in.get(kDebug));
  s->repair = switch_on(in.get(kRepair));
}

const char *sysroot_problem(const char *r, bool dir_known, bool is_dir) {
  if (strlen(r) > kSysrootMax) return kSysrootTooLong.s;
  if (r[0] != '/') return "is not an absolute path";
  if (dir_known && !is_dir) return "is not a directory";
  return nullptr;
}

void parse_settings(const Inputs &in, Settings *s) {
  parse_switches(in, s);

  const char *a = in.get(kAccel);
  s->accel_forced = false;
  if (!set_nonempty(a) || !strcmp(a, "auto")) {
  } else if (!strcmp(a, "cuda")) {
    s->accel_forced = true, s->accel = Family::cuda;
  } else if (!strcmp(a, "rocm")) {
    s->accel_forced = true, s->accel = Family::rocm;
  } else if (!strcmp(a, "ze")) {
    s->accel_forced = true, s->accel = Family::ze;
  } else if (!strcmp(a, "none")) {
    s->accel_forced = true, s->accel = Family::none;
  } else {
    mark_invalid(s, kAccel, "is not one of auto, cuda, rocm, ze, none");
  }

  const char *t = in.get(kTemplate);
  s->template_from_user = set_nonempty(t);
  s->tmpl = s->template_from_user ? t : kDefaultTemplate;
  const char *why = nullptr;
  if (s->template_from_user && !template_valid(t, &why)) mark_invalid(s, kTemplate, why);

  const char *p = in.get(kProbe);
  if (!set_nonempty(p) || !strcmp(p, "kernel")) {
    s->tier = ProbeTier::kernel;
  } else if (!strcmp(p, "driver")) {
    s->tier = ProbeTier::driver;
  } else {
    mark_invalid(s, kProbe, "is not one of kernel, driver");
  }

  const char *ms = in.get(kProbeTimeoutMs);
  s->probe_timeout_ms = kProbeTimeoutMsDefault;
  if (set_nonempty(ms)) {
    long v = 0;
    if (!parse_long(ms, strlen(ms), &v) || v < kProbeTimeoutMsMin || v > kProbeTimeoutMsMax)
      s->timeout_why = kTimeoutWhy.s;
    else
      s->probe_timeout_ms = int(v);
  }

  const char *r = in.get(kSysroot);
  s->sysroot = set_nonempty(r) ? r : nullptr;
  if (s->sysroot) {
    const char *problem = sysroot_problem(s->sysroot, false, false);
    if (problem) mark_invalid(s, kSysroot, problem);
  }
  const char *cache = in.get(kCacheDir);
  s->cache_dir_why = set_nonempty(cache) && cache[0] != '/' ? "is not an absolute path" : nullptr;
  if (s->cache_dir_why && s->tier == ProbeTier::driver) mark_invalid(s, kCacheDir, s->cache_dir_why);
}

}  // namespace ucxtls
