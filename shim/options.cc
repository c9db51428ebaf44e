// The options table, the pass over the environment, unknown variables, the settings (options.h).
#include "options.h"

#include <string.h>

#include "edit_distance.h"

namespace ucxtls {

namespace {

// A Kind::word row's words, the default first; one string, not an array of relocated pointers.
constexpr char kAccelWords[] = "auto cuda rocm ze none";
constexpr Family kAccelFamily[] = {Family::none, Family::cuda, Family::rocm, Family::ze, Family::none};
constexpr size_t count_words(const char *s) { return *s ? (*s == ' ') + count_words(s + 1) : 1; }
static_assert(sizeof kAccelFamily / sizeof *kAccelFamily == count_words(kAccelWords), "a family per UCXTLS_ACCEL word");
constexpr char kProbeWords[] = "kernel driver";  // ProbeTier's order
constexpr char kWriteWords[] = "needed always";  // Settings::write_always: the second
static_assert(int(ProbeTier::kernel) == 0 && int(ProbeTier::driver) == 1, "UCXTLS_PROBE's words are the tiers in order");

// The boolean words of a toggle (UCX's own, ucs_config_sscanf_bool in src/ucs/config/parser.c:
// y/yes/on/1 and n/no/off/0, plus true/false), read in any case.
constexpr char kOnWords[] = "y yes on 1 true";
constexpr char kOffWords[] = "n no off 0 false";

// The messages name the words and limits above: change both together (tests/unit/test_core.cc
// checks every row against its words, limits and message).
constexpr char kBoolWhy[] = "is not a boolean word (y, yes, on, 1, true; n, no, off, 0, false; any case)";
constexpr char kAccelWhy[] = "is not one of auto, cuda, rocm, ze, none";
constexpr char kProbeWhy[] = "is not one of kernel, driver";
constexpr char kWriteWhy[] = "is not one of needed, always";
static_assert(kProbeTimeoutMsDefault == 5000 && kProbeTimeoutMsMin == 1 && kProbeTimeoutMsMax == 600000 &&
              kSysrootMax == 256, "the texts below name these limits");
constexpr char kTimeoutMeaning[] = "bound on `ucxtls probe` (the driver APIs' helper), 1 to 600000 ms";
constexpr char kTimeoutWhy[] = "is not a whole number of milliseconds from 1 to 600000";
constexpr char kSysrootTooLong[] = "is longer than 256 bytes";
constexpr char kNotAbsolute[] = "is not an absolute path";

constexpr Kind kToggle = Kind::toggle, kWord = Kind::word, kPattern = Kind::pattern, kNumber = Kind::number,
               kPath = Kind::path, kInput = Kind::input;
constexpr Scope kEvery = Scope::process;

}  // namespace

// constexpr: first_letters() reads it at compile time; "const Option kOptions" opens its own
// line, where tests/cli read the names from this file.
constexpr
const Option kOptions[kVarCount] = {
    {"UCXTLS_DISABLE", kDisable, kToggle, kEvery, "unset",
     "y, yes, on, 1, true (any case): turn the library off; n, no, off, 0, false: leave it on", kOnWords,
     0, 0, kBoolWhy},
    {"UCXTLS_ACCEL", kAccel, kWord, kEvery, "auto", "accelerator family: auto (probe), cuda, rocm, ze or none (as without GPUs)",
     kAccelWords, 0, 0, kAccelWhy},
    {"UCXTLS_REPAIR", kRepair, kToggle, kEvery, "unset",
     "y, yes, on, 1, true (any case): a kept UCX_TLS with only another GPU family's transports gets this node's instead, one without this node's copy transport gets it appended; n, no, off, 0, false: not",
     kOnWords, 0, 0, kBoolWhy},
    {"UCXTLS_TEMPLATE", kTemplate, kPattern, kEvery, kDefaultTemplate,
     "UCX_TLS pattern: {copy} the copy transport, {ipc} cuda_ipc/rocm_ipc, {rdma} the RDMA transports; an empty one goes with one comma"},
    {"UCXTLS_WRITE", kWrite, kWord, kEvery, "needed",
     "where the default template writes: needed (all, UCX's own default, where a hard-coded CUDA rc list would be wrong: other GPUs than NVIDIA's, or no rc device; nothing elsewhere) or always (on every GPU node, as before 0.2.0)",
     kWriteWords, 0, 0, kWriteWhy},
    {"UCXTLS_PROBE", kProbe, kWord, kEvery, "kernel",
     "kernel (device files only) or driver (the CUDA/Level Zero answer `ucxtls probe --save` stored)", kProbeWords,
     0, 0, kProbeWhy},
    {"UCXTLS_PROBE_TIMEOUT_MS", kProbeTimeoutMs, kNumber, Scope::probe_command, "5000",
     kTimeoutMeaning, nullptr, kProbeTimeoutMsMin, kProbeTimeoutMsMax, kTimeoutWhy},
    {"UCXTLS_CACHE_DIR", kCacheDir, kPath, Scope::driver_tier, "unset",
     "where `ucxtls probe --save` stores the driver's answer and the library reads it (an absolute path); unset: $XDG_RUNTIME_DIR/ucxtls, then /run/ucxtls"},
    {"UCXTLS_DEBUG", kDebug, kToggle, kEvery, "unset",
     "y, yes, on, 1, true (any case): one line on stderr saying what was decided and why; n, no, off, 0, false: none",
     kOnWords, 0, 0, kBoolWhy},
    {"UCXTLS_SYSROOT", kSysroot, kPath, kEvery, "unset",
     "directory put in front of every /dev, /sys, /proc, /etc path the probe reads", nullptr, 0, kSysrootMax,
     kSysrootTooLong},
    {"UCXTLS_DERIVED", kDerived, kInput, kEvery, "-",
     "written by the library with UCX_TLS: marks the value as derived, so it is derived again"},
    {"UCXTLS_SAID", kSaid, kInput, kEvery, "-",
     "written by the library: the hash of its lines about settings; a child with the same lines stays silent"},
    {"UCX_TLS", kUcxTls, kInput, kEvery, "-",
     "UCX's transport list: kept when set, even empty, unless it equals UCXTLS_DERIVED (then derived again)"},
    {"UCX_CONFIG_DIR", kUcxConfigDir, kInput, kEvery, "-", "UCX's extra ucx.conf directory, checked for a UCX_TLS line"},
    {"HOME", kHome, kInput, kEvery, "-", "$HOME/ucx.conf is checked for a UCX_TLS line"},
    {"UCX_IB_GID_INDEX", kUcxIbGidIndex, kInput, kEvery, "-",
     "the RoCE GID UCX tests (auto: 0 for its port check); read, as UCX reads it, before the ucx.conf files"},
    {"CUDA_VISIBLE_DEVICES", kCudaVisible, kInput, kEvery, "-", "NVIDIA GPUs the process may use (CUDA's rules)"},
    {"ROCR_VISIBLE_DEVICES", kRocrVisible, kInput, kEvery, "-", "AMD GPUs the process may use (ROCr's rules)"},
    {"HIP_VISIBLE_DEVICES", kHipVisible, kInput, kEvery, "-", "AMD GPUs, applied after ROCR_VISIBLE_DEVICES"},
    {"ZE_AFFINITY_MASK", kZeAffinity, kInput, kEvery, "-", "Intel GPUs the process may use (empty = all)"},
    {"XDG_RUNTIME_DIR", kXdgRuntimeDir, kInput, kEvery, "-",
     "$XDG_RUNTIME_DIR/ucxtls holds the driver's answer when UCXTLS_CACHE_DIR is unset"},
};

// A bit per first letter of the names (its low six bits): one test rejects most entries.
constexpr unsigned long long first_letters() {
  unsigned long long m = 0;
  for (const Option &o : kOptions) m |= 1ULL << (o.name[0] & 63);
  return m;
}
constexpr unsigned long long kFirstLetters = first_letters();
static_assert(!(kFirstLetters & 1), "an empty entry matches no first letter");
constexpr size_t kOwnPrefixLen = sizeof kOwnPrefix - 1;

void read_inputs(char *const *envp, Inputs *in) {
  for (int v = 0; v < kVarCount; v++) in->var[v] = nullptr;
  in->unknown = nullptr;
  in->unknown_count = 0;
  if (!envp) return;
  // Each slot is loaded once: a thread's unsetenv may be moving the entries down meanwhile (the
  // library then writes nothing, but it reads first), and a slot read twice may be NULL.
  for (char *const *e = envp;; e++) {
    const char *entry = __atomic_load_n(e, __ATOMIC_RELAXED);
    if (!entry) break;
    if (!(kFirstLetters >> (entry[0] & 63) & 1)) continue;
    // The prefix once: then the own names' tails, or the other names.
    size_t skip = 0;
    while (skip < kOwnPrefixLen && entry[skip] == kOwnPrefix[skip]) skip++;
    const bool own = skip == kOwnPrefixLen;
    if (!own) skip = 0;
    const char *rest = entry + skip;
    const int last = own ? kOwnVarCount : kVarCount;
    int v = own ? 0 : kOwnVarCount;
    size_t n = 0;
    for (; v < last; v++) {
      const char *name = kOptions[v].name + skip;
      for (n = 0; name[n] && rest[n] == name[n];) n++;
      if (!name[n] && rest[n] == '=') break;
    }
    if (v < last) {
      if (!in->var[v]) in->var[v] = rest + n + 1;  // the first wins, as with getenv
    } else if (own) {
      if (!in->unknown) in->unknown = entry;
      in->unknown_count++;
    }
  }
}

size_t env_name_len(const char *entry) {
  size_t n = 0;
  while (entry[n] && entry[n] != '=') n++;
  return n;
}

Var closest_option(const char *name, size_t n) {
  const size_t prefix = sizeof kOwnPrefix - 1;
  Var best = kVarCount;
  size_t best_d = 3;  // more than 2 edits is not close
  for (int v = 0; v < kOwnVarCount; v++) {
    const char *known = kOptions[v].name;
    const size_t nk = strlen(known);
    size_t d = edit_distance(name, n, known, nk);
    size_t tail = nk > prefix ? nk - prefix : 0;
    if (d < best_d && 2 * d < tail) best = Var(v), best_d = d;
  }
  return best;
}

namespace {
// The index of v among the space-separated words (lower case), or -1; any_case: v's ASCII case is ignored.
long word_index(const char *words, const char *v, bool any_case) {
  const size_t n = strlen(v);
  Items items(words, " ");
  const char *w;
  size_t k;
  for (long index = 0; items.next(&w, &k); index++) {
    if (k != n) continue;
    size_t i = 0;
    while (i < n && ((any_case && v[i] >= 'A' && v[i] <= 'Z') ? char(v[i] | 0x20) : v[i]) == w[i]) i++;
    if (i == n) return index;
  }
  return -1;
}
}  // namespace

Toggle toggle_value(const char *v) {
  if (!v || !v[0]) return Toggle::off;  // empty is unset
  if (word_index(kOnWords, v, true) >= 0) return Toggle::on;
  if (word_index(kOffWords, v, true) >= 0) return Toggle::off;
  return Toggle::invalid;
}

void mark_invalid(Settings *s, Var v, const char *why) {
  if (s->invalid) return;  // the first one is reported
  s->invalid = true;
  s->invalid_var = v;
  s->invalid_why = why;
}

namespace {

// A value by its row's rule; unset and empty are the default.
struct Parsed {
  bool set = false;           // a non-empty value (a toggle: on)
  long number = 0;            // Kind::word: the word's index; Kind::number: the number
  const char *why = nullptr;  // the value breaks the row's rule (static text)
};

const char *path_problem(const Option &o, const char *v) {
  if (o.max && strlen(v) > size_t(o.max)) return o.why;
  if (v[0] != '/') return kNotAbsolute;
  return nullptr;
}

Parsed parse_value(const Option &o, const char *v) {
  Parsed p;
  if (o.kind == Kind::toggle) {
    const Toggle t = toggle_value(v);
    p.set = t == Toggle::on;
    if (t == Toggle::invalid) p.why = o.why;
    return p;
  }
  p.set = v && v[0];
  if (!p.set) return p;
  switch (o.kind) {
    case Kind::word:
      p.number = word_index(o.words, v, false);
      if (p.number < 0) p.why = o.why;
      break;
    case Kind::number:
      if (!parse_long(v, strlen(v), &p.number) || p.number < o.min || p.number > o.max) p.why = o.why;
      break;
    case Kind::pattern: template_valid(v, &p.why); break;  // why is set when it is not
    case Kind::path: p.why = path_problem(o, v); break;
    default: break;
  }
  return p;
}

void store(Settings *s, Var v, const char *value, const Parsed &p) {
  const bool good = p.set && !p.why;
  switch (v) {
    case kDisable: s->disabled = p.set; break;
    case kDebug: s->debug = p.set; break;
    case kRepair: s->repair = p.set; break;
    case kAccel:
      s->accel_forced = good && p.number > 0;  // "auto": probe
      if (s->accel_forced) s->accel = kAccelFamily[p.number];
      break;
    case kTemplate:
      s->template_from_user = p.set;
      s->tmpl = p.set ? value : kDefaultTemplate;
      break;
    case kWrite: s->write_always = good && p.number == 1; break;
    case kProbe: s->tier = ProbeTier(good ? p.number : 0); break;
    case kProbeTimeoutMs: s->probe_timeout_ms = good ? int(p.number) : kProbeTimeoutMsDefault; break;
    case kSysroot: s->sysroot = p.set ? value : nullptr; break;
    default: break;
  }
}

}  // namespace

const char *sysroot_problem(const char *r, bool dir_known, bool is_dir) {
  if (const char *why = path_problem(kOptions[kSysroot], r)) return why;
  if (dir_known && !is_dir) return "is not a directory";
  return nullptr;
}

void parse_settings(const Inputs &in, Settings *s) {
  *s = Settings();
  s->tmpl = kDefaultTemplate;  // with the struct's, every setting's default: what unset or empty gives
  for (int v = 0; v < kOwnVarCount; v++) {
    const Option &o = kOptions[v];
    const char *value = in.get(Var(v));
    if (!value || !value[0]) continue;  // most are: every process parses
    const Parsed p = parse_value(o, value);
    store(s, Var(v), value, p);
    if (!p.why) continue;
    switch (o.scope) {
      case Scope::process: mark_invalid(s, Var(v), p.why); break;
      case Scope::probe_command: s->timeout_why = p.why; break;
      case Scope::driver_tier: s->cache_dir_why = p.why; break;
    }
  }
}

}  // namespace ucxtls
