// The options: every variable the library reads, described once (kOptions: its name, default,
// meaning, kind and limits, as mimalloc's and UCX's tables; parsing, the error messages,
// `ucxtls --help`, the man page and the documentation's table come from it), read from the
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

// The inputs: raw values of the variables, read in one pass over the environment block
// (read_inputs), not at all in a secure-execution process. NULL = unset.
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

// One row per variable: parsing, the error messages, `ucxtls --help`, the man page and the
// documentation's table all come from it. kOptions[v].var == v (checked at compile time).
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
// name no option (in.unknown, in.unknown_count). The shell (load.h) calls it only when not
// secure: a setuid or file-capability process reads no variable at all.
void read_inputs(char *const *envp, Inputs *in);

// Bytes before the '=' of a "NAME=value" entry (the whole string when there is none).
size_t env_name_len(const char *entry);

// The library's own option whose name is closest to name[0..n) (edit_distance.h), or kVarCount
// when none is close: at most 2 edits, and fewer than half the characters after the prefix.
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
  // UCXTLS_WRITE=always: the default template is written on every GPU node (the behaviour before
  // 0.2.0), not only where a hard-coded CUDA list would be wrong for the node.
  bool write_always = false;
  ProbeTier tier = ProbeTier::kernel;
  // The bound of `ucxtls probe` alone: the library never runs the helper, so a bad value is the
  // command's error (timeout_why), not an invalid setting that would switch the library off.
  int probe_timeout_ms = kProbeTimeoutMsDefault;
  const char *timeout_why = nullptr;
  const char *sysroot = nullptr;  // NULL or non-empty
  // UCXTLS_CACHE_DIR is the driver tier's (and `ucxtls probe --save`'s) alone: a bad one is named
  // here (lines.h format_ignored_lines) and switches nothing off; with UCXTLS_PROBE=driver no saved
  // answer is read, so the kernel probe answers, as for any other driver-tier failure.
  const char *cache_dir_why = nullptr;
  // First invalid setting: which variable, and why (static text).
  bool invalid = false;
  Var invalid_var = kVarCount;
  const char *invalid_why = nullptr;
};

// A toggle's value, read as UCX reads its own toggles (src/ucs/config/parser.c: ucs_config_sscanf_bool
// and ucs_config_sscanf_on_off): UCX's boolean words y/yes/on/1 and n/no/off/0, plus true/false, in any case; unset or empty is off; any other word
// is invalid (an invalid setting: the row's why names the words).
enum class Toggle : uint8_t { off, on, invalid };
Toggle toggle_value(const char *v);
// Every setting from its row of kOptions, into a fresh *s; sets s->invalid on the first bad one
// of Scope::process (table order; a bad UCXTLS_CACHE_DIR with the driver tier comes last).
void parse_settings(const Inputs &in, Settings *s);
// Records an invalid setting (the first one wins); why is static text.
void mark_invalid(Settings *s, Var v, const char *why);

// Is UCXTLS_SYSROOT usable? Its row's rule (Kind::path: absolute, at most kSysrootMax bytes), and
// a directory. NULL when it is (as far as known), else why (static text). Whether it is a
// directory is a fact only the shell can find (dir_known, is_dir): run_ladder asks just before
// the first probe, so the paths that probe nothing make no system call; parse_settings applies
// the rest.
const char *sysroot_problem(const char *sysroot, bool dir_known, bool is_dir);

}  // namespace ucxtls
