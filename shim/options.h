// The options: every variable the library reads, described once in kOptions (as mimalloc's and
// UCX's tables), read in one pass over the environment, parsed into Settings. An unknown UCXTLS_*
// variable is matched to the closest option, as UCX does for UCX_*. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "template.h"
#include "text.h"

namespace ucxtls {

// The variables (raw values in Inputs, NULL = unset).
enum Var : uint8_t {
  kDisable,
  kAccel,
  kRepair,
  kTemplate,
  kWrite,
  kProbe,
  kProbeTimeoutMs,
  kCacheDir,
  kDebug,
  kSysroot,
  kDerived,
  kSaid,
  kOwnVarCount,  // the library's own variables end here; below are variables it reads
  kUcxTls = kOwnVarCount,
  kUcxConfigDir,
  kHome,
  kUcxIbGidIndex,
  kCudaVisible,
  kRocrVisible,
  kHipVisible,
  kZeAffinity,
  kXdgRuntimeDir,
  kVarCount
};

// What a variable is: how its value is read, and what a bad one is told.
enum class Kind : uint8_t {
  toggle,   // a boolean word (toggle_value): y/yes/on/1/true, n/no/off/0/false, any case; "": off
  word,     // one of the row's words; unset or empty: the first
  pattern,  // a UCX_TLS template (template.h template_valid)
  number,   // a whole number from the row's min to its max
  path,     // an absolute path, at most the row's max bytes (0: any length)
  input,    // read as it is, never parsed here: another program's variable, or the library's marker
};
// Whom a bad value stops.
enum class Scope : uint8_t {
  process,        // every process: an invalid setting (the library says so and does nothing else)
  probe_command,  // `ucxtls probe` alone, the one reader (Settings::timeout_why)
  driver_tier,    // the driver tier and `ucxtls probe --save` (Settings::cache_dir_why): an invalid
                  // setting only with UCXTLS_PROBE=driver
};

// One row per variable, kOptions[v].var == v: parsing, messages, --help, the man page, the docs.
struct Option {
  const char *name;
  Var var;
  Kind kind;
  Scope scope;
  const char *def;      // shown default ("unset" when there is none, "-" for an input)
  const char *meaning;  // one line
  const char *words = nullptr;  // Kind::word: the allowed words, one space apart; Kind::toggle: the on words
  long min = 0, max = 0;        // Kind::number: the range; Kind::path: the longest (0: any)
  const char *why = nullptr;    // a value outside words, min..max or max: static text
};
extern const Option kOptions[kVarCount];

constexpr char kOwnPrefix[] = "UCXTLS_";

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

// Fills in.var from an environment block in one pass (the first occurrence wins, as with getenv)
// and counts the UCXTLS_* entries that name no option. Never called in secure execution.
void read_inputs(char *const *envp, Inputs *in);

// Bytes before the '=' of a "NAME=value" entry (the whole string when there is none).
size_t env_name_len(const char *entry);

// The own option closest to name[0..n): at most 2 edits, under half the chars after the prefix;
// else kVarCount.
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
  bool write_always = false;  // UCXTLS_WRITE=always: the template on every GPU node (before 0.2.0)
  ProbeTier tier = ProbeTier::kernel;
  // `ucxtls probe`'s bound alone: a bad value is named, never switches the library off.
  int probe_timeout_ms = kProbeTimeoutMsDefault;
  const char *timeout_why = nullptr;
  const char *sysroot = nullptr;  // NULL or non-empty
  // A bad UCXTLS_CACHE_DIR is named and switches nothing off (the kernel probe answers).
  const char *cache_dir_why = nullptr;
  // First invalid setting: which variable, and why (static text).
  bool invalid = false;
  Var invalid_var = kVarCount;
  const char *invalid_why = nullptr;
};

// A toggle, as UCX reads its own (src/ucs/config/parser.c ucs_config_sscanf_bool, _on_off):
// y/yes/on/1, n/no/off/0, plus true/false, any case; unset or empty is off.
enum class Toggle : uint8_t { off, on, invalid };
Toggle toggle_value(const char *v);
// Every setting from its row, into a fresh *s; s->invalid names the first bad one of Scope::process.
void parse_settings(const Inputs &in, Settings *s);
// Records an invalid setting (the first one wins); why is static text.
void mark_invalid(Settings *s, Var v, const char *why);

// Why UCXTLS_SYSROOT is not usable (not absolute, longer than kSysrootMax, not a directory when
// dir_known), or NULL. The shell checks the directory only once a probe ran (probe_loop.cc).
const char *sysroot_problem(const char *sysroot, bool dir_known, bool is_dir);

}  // namespace ucxtls
