// The options: every variable the library reads, described once (kOptions: name, default,
// meaning; parsing, `ucxtls --help` and the documentation's table come from it), read from the
// environment in one pass (read_inputs), and parsed into Settings with the first invalid one
// named. Unknown UCXTLS_* variables (a typo such as UCXTLS_ACCELL) are found in the same pass and
// matched to the closest option, as UCX does for its own UCX_* variables (docs/design.md,
// "Variables"). Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "template.h"
#include "text.h"

namespace ucxtls {

// The inputs: raw values of the variables, read once by the shell (secure_getenv). NULL = unset.
enum Var : uint8_t {
  kDisable,
  kAccel,
  kRepair,
  kTemplate,
  kProbe,
  kProbeTimeoutMs,
  kCacheDir,
  kDebug,
  kSysroot,
  kDerived,
  kOwnVarCount,  // the library's own variables end here; below are variables it reads
  kUcxTls = kOwnVarCount,
  kUcxConfigDir,
  kHome,
  kCudaVisible,
  kRocrVisible,
  kHipVisible,
  kZeAffinity,
  kXdgRuntimeDir,
  kVarCount
};

struct Option {
  const char *name;
  const char *def;      // shown default ("unset" when there is none)
  const char *meaning;  // one line
};
extern const Option kOptions[kVarCount];

constexpr char kOwnPrefix[] = "UCXTLS_";

// The limits of the settings: the table's text and the error messages take them from here.
constexpr int kProbeTimeoutMsDefault = 5000;
constexpr int kProbeTimeoutMsMin = 1, kProbeTimeoutMsMax = 600000;
constexpr size_t kSysrootMax = 256;  // leaves room for the probe's paths in sys.h's Path

struct Inputs {
  bool secure = false;  // getauxval(AT_SECURE): decided before any variable is read
  const char *var[kVarCount] = {};
  const char *unknown = nullptr;  // the first UCXTLS_* entry ("NAME=value") that names no option
  int unknown_count = 0;          // how many such entries
  const char *get(Var v) const { return var[v]; }
};

// Fills in.var from an environment block (NAME=value strings, NULL-terminated) in one pass; the
// first occurrence of a name wins, as with getenv. The same pass counts UCXTLS_* entries that
// name no option (in.unknown, in.unknown_count). The shell calls it only when not secure, so it
// reads exactly what secure_getenv would.
void read_inputs(char *const *envp, Inputs *in);

// Bytes before the '=' of a "NAME=value" entry (the whole string when there is none).
size_t env_name_len(const char *entry);

// The library's own option whose name is closest to name[0..n) (case-insensitive edit distance,
// a swap of two neighbours counting once), or kVarCount when none is close: at most 2 edits, and
// fewer than half the characters after the prefix.
Var closest_option(const char *name, size_t n);

// Parsed settings (the library's own variables), or the first invalid one.
enum class ProbeTier : uint8_t { kernel, driver };
struct Settings {
  bool disabled = false;
  bool debug = false;
  bool accel_forced = false;
  bool repair = false;  // UCXTLS_REPAIR: rewrite another family's GPU transports in a kept UCX_TLS
  Family accel = Family::none;
  bool template_from_user = false;
  const char *tmpl = nullptr;  // never NULL after parse_settings
  ProbeTier tier = ProbeTier::kernel;
  // The bound of `ucxtls probe` alone: the library never runs the helper, so a bad value is the
  // command's error (timeout_why), not an invalid setting that would switch the library off.
  int probe_timeout_ms = kProbeTimeoutMsDefault;
  const char *timeout_why = nullptr;
  const char *sysroot = nullptr;  // NULL or non-empty
  // UCXTLS_CACHE_DIR is the driver tier's (and `ucxtls probe --save`'s) alone: a bad one is always
  // named here, and is an invalid setting only with UCXTLS_PROBE=driver.
  const char *cache_dir_why = nullptr;
  // First invalid setting: which variable, and why (static text).
  bool invalid = false;
  Var invalid_var = kVarCount;
  const char *invalid_why = nullptr;
};

// A boolean switch as the contract reads it: set to anything but "" or "0".
bool switch_on(const char *v);
// Only the switches (DISABLE, DEBUG): the cheap first reads of the ladder.
void parse_switches(const Inputs &in, Settings *s);
// The rest of the settings; sets s->invalid on the first bad one.
void parse_settings(const Inputs &in, Settings *s);
// Records an invalid setting (the first one wins); why is static text.
void mark_invalid(Settings *s, Var v, const char *why);

// Is UCXTLS_SYSROOT usable? The one rule: an absolute path of at most kSysrootMax bytes that
// names a directory. NULL when it is (as far as known), else why (static text). Whether it is a
// directory is a fact only the shell can find (dir_known, is_dir): run_ladder asks just before
// the first probe, so the paths that probe nothing make no system call; parse_settings applies
// the rest.
const char *sysroot_problem(const char *sysroot, bool dir_known, bool is_dir);

}  // namespace ucxtls
