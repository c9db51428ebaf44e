// The functional core of ucxtls: plain facts and settings in, one decision out.
//
// Nothing here touches the file system, the environment or a global: every function is pure, so
// each rule is a table row in tests/unit. The library's constructor, the `ucxtls` command and the
// driver-probe helper all reach their answers through this file (DESIGN §1, §3).
//
// Build rules (DESIGN §2): libc only, no exceptions, no RTTI, no allocation, fixed-size buffers.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ucxtls {

// ---------------------------------------------------------------------------------------------
// Small fixed-capacity text buffer: appends are truncated, never overflow, always NUL-terminated.
struct Text {
  char *data;
  size_t cap;  // including the terminating NUL
  size_t len;
  bool truncated;
  void init(char *buf, size_t size);
  Text &add(const char *s);
  Text &add(const char *s, size_t n);
  Text &add(long long v);
  Text &add_quoted(const char *s, size_t max_shown = 60);  // "value" shortened with "..."
  // Ends a stderr line: control bytes become '?' (one printable line), then "\n". init() must have
  // been given one byte less than the buffer. Returns the length.
  size_t end_line();
};

// ---------------------------------------------------------------------------------------------
// Families and their copy transports.
enum class Family : uint8_t { none, cuda, rocm, ze };
const char *family_name(Family f);            // "none", "cuda", "rocm", "ze"
const char *copy_transport(Family f);         // "cuda_copy", "rocm_copy", "ze_copy", ""
// The family's intra-node GPU transport: "cuda_ipc", "rocm_ipc"; "" for ze (no released UCX has
// ze_ipc: naming it makes UCX warn on stdout) and none.
const char *ipc_transport(Family f);
constexpr int kFamilies = 4;

// What the node's RDMA devices let UCX run (see probe_rdma): nothing, rc_verbs alone (Broadcom,
// Intel RoCE, rxe, Omni-Path), or the mlx5 transports as well (a ConnectX driven by mlx5_core).
enum class Rdma : uint8_t { none, rc, mlx5 };
const char *rdma_transports(Rdma r);  // "", "rc", "rc_x,rc,dc_x,dc"

// Three-valued fact: not probed yet, known false, known true.
enum class Tri : uint8_t { unknown, no, yes };

// ---------------------------------------------------------------------------------------------
// The inputs: raw values of the variables, read once by the shell (secure_getenv). NULL = unset.
// Each variable is described once, in kOptions (name, default, meaning): parsing, --help and
// the README table come from it.
enum Var : uint8_t {
  kDisable,
  kAccel,
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

struct Inputs {
  bool secure = false;  // getauxval(AT_SECURE): decided before any variable is read
  const char *var[kVarCount] = {};
  const char *unknown = nullptr;  // the first UCXTLS_* entry ("NAME=value") that names no option
  int unknown_count = 0;          // how many such entries (unknown.h)
  const char *get(Var v) const { return var[v]; }
};

// Fills in.var from an environment block (NAME=value strings, NULL-terminated) in one pass; the
// first occurrence of a name wins, as with getenv. The same pass counts UCXTLS_* entries that
// name no option (in.unknown, in.unknown_count). The shell calls it only when not secure, so it
// reads exactly what secure_getenv would.
void read_inputs(char *const *envp, Inputs *in);

// Parsed settings (the library's own variables), or the first invalid one.
enum class ProbeTier : uint8_t { kernel, driver };
struct Settings {
  bool disabled = false;
  bool debug = false;
  bool accel_forced = false;
  Family accel = Family::none;
  bool template_from_user = false;
  const char *tmpl = nullptr;  // never NULL after parse_settings
  ProbeTier tier = ProbeTier::kernel;
  int probe_timeout_ms = 5000;
  const char *sysroot = nullptr;  // NULL or non-empty
  // First invalid setting: which variable, and why (static text).
  bool invalid = false;
  Var invalid_var = kVarCount;
  const char *invalid_why = nullptr;
};

extern const char kDefaultTemplate[];  // "{rdma},{copy}"
constexpr size_t kValueMax = 4096;      // longest UCX_TLS value the library writes
constexpr size_t kPathMax = 4096;
constexpr size_t kSysrootMax = 256;     // leaves room for the probe's paths in sys.h's Path

// A boolean switch as the contract reads it: set to anything but "" or "0".
bool switch_on(const char *v);
// Only the switches (DISABLE, DEBUG): the cheap first reads of the ladder.
void parse_switches(const Inputs &in, Settings *s);
// The rest of the settings; sets s->invalid on the first bad one.
void parse_settings(const Inputs &in, Settings *s);
// Records an invalid setting (the first one wins); why is static text.
void mark_invalid(Settings *s, Var v, const char *why);

// What stat(2) says of a file (sys.h stat_path/stat_fd fill it; the rules that read it are pure).
struct FileFacts {
  unsigned uid = 0;
  unsigned mode = 0;  // st_mode: type and permission bits
  long long size = 0;
  long long mtime_ns = 0;
};

// ---------------------------------------------------------------------------------------------
// Template composition. Placeholders: `{copy}` the family's copy transport, `{ipc}` its intra-node
// GPU transport, `{rdma}` what the node's RDMA runs (rdma_transports). Each becomes its text, or
// disappears with one adjacent comma when that is empty. Returns false (with *why) for an invalid
// template.
bool template_valid(const char *tmpl, const char **why);
bool template_uses_copy(const char *tmpl);  // {copy} or {ipc}: the family matters
bool template_uses_rdma(const char *tmpl);  // {rdma}
// Writes the value into out (cap bytes). Returns false if it does not fit.
bool compose(const char *tmpl, Family f, Rdma r, char *out, size_t cap);

// ---------------------------------------------------------------------------------------------
// Visibility variables. A "device list" has n devices with optional ids (uuid text).
struct DeviceIds {
  int n = 0;                           // devices present (enumerated)
  const char *const *ids = nullptr;    // ids[i] for i < n, or NULL when ids are unknown
};

// CUDA_VISIBLE_DEVICES by CUDA's rules: NULL = all; "" = none; a comma list of ordinals,
// GPU-<uuid prefix> (unique) and MIG-<...> entries that ends at the first invalid entry
// (negative, out of range, not a number, unknown or ambiguous GPU- prefix, repeated).
// Returns how many devices are visible.
int cuda_visible_count(const char *cvd, const DeviceIds &devs);
// How many devices the probe must enumerate to answer "is any device visible?" exactly:
// 0 when the answer needs no device (none visible), else a bound; kAllDevices when ids matter.
constexpr int kAllDevices = 1 << 30;
int cuda_enumeration_bound(const char *cvd);

// ROCm: ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES when HIP's is
// unset) applied to the devices ROCR left. "" and "-1" = none. GPU- entries match ids by prefix.
int rocm_visible_count(const char *rocr, const char *hip, const char *cvd, const DeviceIds &devs);
int rocm_enumeration_bound(const char *rocr, const char *hip, const char *cvd);

// ZE_AFFINITY_MASK: NULL, "" or "default" = all devices; otherwise the devices stay visible
// while any entry is a well-formed index (N or N.M); none when no entry is.
bool ze_mask_hides_all(const char *mask);

// ---------------------------------------------------------------------------------------------
// Parsers for the small files the kernel probe reads (whole file text in, fields out).

// /proc/driver/nvidia/gpus/<bus>/information: "Device Minor:", "GPU UUID:", "GPU Excluded:".
struct NvInfo {
  bool has_minor = false;
  long minor = -1;
  char uuid[64] = {};
  bool excluded = false;
};
bool parse_nvidia_information(const char *text, size_t len, NvInfo *out);

// /sys/class/kfd/kfd/topology/nodes/<n>/properties: "name value" lines.
struct KfdNode {
  long long simd_count = 0;
  long long gfx_target_version = 0;
  long long drm_render_minor = -1;
  unsigned long long unique_id = 0;
  bool is_gpu() const { return simd_count > 0 && gfx_target_version > 0 && drm_render_minor >= 0; }
};
// Stops at a simd_count of 0 or less (a CPU node, whose other fields do not matter), and once the
// fields is_gpu() reads are known when the unique_id is not wanted (no GPU- entry to match).
bool parse_kfd_properties(const char *text, size_t len, KfdNode *out, bool want_id = true);

// A sysfs hex attribute such as "0x8086\n" or "0x030000\n".
bool parse_sysfs_hex(const char *text, size_t len, unsigned long *out);

// A PCI device's sysfs `uevent` (drivers/pci/pci-driver.c pci_uevent, and the driver core's
// DRIVER= line when a driver is bound): driver, vendor and class in one read.
//   DRIVER=i915 / PCI_CLASS=38000 / PCI_ID=8086:0BD5 / ...
struct PciUevent {
  char driver[32] = {};          // "" when no driver is bound
  bool has_class = false, has_id = false;
  unsigned long pci_class = 0;   // 24 bits: class, subclass, prog-if
  unsigned long vendor = 0, device = 0;
};
bool parse_pci_uevent(const char *text, size_t len, PciUevent *out);

// An RDMA device's sysfs node_type ("1: CA") or port state ("4: ACTIVE"): the leading number.
long parse_sysfs_enum(const char *text, size_t len);

// Parses a decimal integer that spans the whole string (optional sign). No overflow.
bool parse_long(const char *s, size_t n, long *out);

// ucx.conf scanning: fed in chunks; reports whether any line (in any section) assigns UCX_TLS.
// INI syntax as UCX reads it: blank-trimmed key, '#' and ';' comment lines, [sections].
struct ConfScan {
  uint8_t state = 0;
  uint8_t matched = 0;
  bool found = false;
  bool prev_name = false;  // a name=value line was seen in this section (inih's multi-line rule)
  bool indented = false;   // the current line started with blanks
  size_t offset = 0;       // bytes fed so far (a BOM only counts at 0)
  void feed(const char *p, size_t n);
};

// ---------------------------------------------------------------------------------------------
// Facts: what the probes saw. Every fact starts unknown; decide() asks for the next one it needs,
// in cost order, and the shell fills it. Evidence strings are for `explain` and the debug line.
constexpr size_t kEvidenceMax = 160;

struct FamilyFact {
  Tri visible = Tri::unknown;
  int error = 0;     // -errno: the probe could not finish, so visible stays unknown
  int present = 0;   // devices the probe found (may stop early: see enumeration bounds)
  int visible_n = 0; // of those, visible after the variables
  bool partial = false;  // the probe stopped before listing every device
  char evidence[kEvidenceMax] = {};
};

// The driver's answer for one family, as the driver tier uses it (driver_report.h: how it is
// asked, saved per node and read back).
struct DriverAnswer {
  Tri answered = Tri::unknown;  // yes: count is the driver's answer; no: there is none
  int count = 0;                // devices visible to this process (visibility variables applied)
  int present = 0;              // devices the driver reported (probed with them unset)
  long code = 0;                // the driver's result code (CUresult, ze_result_t)
  char name[48] = {};           // the driver's name for it, e.g. CUDA_ERROR_NO_DEVICE, or why none
};

constexpr size_t kDriverEvidenceMax = 256;
struct DriverFact {
  Tri ran = Tri::unknown;  // yes: a saved answer of this node was read; no: none usable (evidence says why)
  DriverAnswer cuda, ze;
  char evidence[kDriverEvidenceMax] = {};
};

// Each fact is unknown until probed; a probe that cannot finish leaves it unknown and sets its
// error (-errno): "cannot tell" is never read as "no".
struct Facts {
  Tri rdma = Tri::unknown;  // yes: a device UCX's rc transport runs on (CA, port ACTIVE, uverbs node)
  bool rdma_mlx5 = false;   // ... and one of them is a ConnectX (mlx5_core)
  int rdma_error = 0;
  char rdma_evidence[kEvidenceMax] = {};
  Tri ucx_conf = Tri::unknown;  // yes: a ucx.conf that UCX reads assigns UCX_TLS
  int ucx_conf_error = 0;
  char ucx_conf_evidence[kEvidenceMax] = {};
  DriverFact driver;
  FamilyFact family[kFamilies];  // indexed by Family (none unused)
};

// ---------------------------------------------------------------------------------------------
// The decision.
enum class Action : uint8_t {
  need,  // a fact is missing: probe `need`, then decide again
  set,   // write UCX_TLS (and UCXTLS_DERIVED) = value
  keep,  // the user's configuration stands (UCX_TLS in the environment or in a ucx.conf)
  skip,  // do nothing; UCX_TLS stays as it is (unset, or the user's when the library is off)
  clear  // remove an inherited UCX_TLS/UCXTLS_DERIVED pair: the answer here is "leave unset"
};
const char *action_name(Action a);

enum class Need : uint8_t { nothing, rdma, ucx_conf, driver, cuda, rocm, ze };
const char *need_name(Need n);

constexpr int kReasonsMax = 8;
constexpr size_t kReasonMax = 200;

struct Decision {
  Action action = Action::need;
  Need need = Need::nothing;
  Family family = Family::none;
  bool family_known = false;
  bool rederived = false;     // UCX_TLS was our own inherited value, derived again here
  bool error = false;         // an invalid setting: reasons[0] is the one-line error
  bool unknown_fact = false;  // a probe could not finish: nothing written on a guess
  char value[kValueMax] = {}; // the value to write (set)
  bool quiet = false;         // no reasons are written (run_ladder sets it from
                              // ProbeOptions::evidence); an error's line is written all the same
  int nreasons = 0;
  char reasons[kReasonsMax][kReasonMax] = {};
  Text reason(bool always = false);  // starts a new reason line (a no-op Text when quiet)
};

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d);

// The UCX_TLS value in effect after the decision is applied (NULL = unset).
const char *effective_value(const Inputs &in, const Decision &d);

// The single stderr line (debug or error), "ucxtls: ...\n". Returns its length.
size_t format_line(const Inputs &in, const Decision &d, char *out, size_t cap);

}  // namespace ucxtls
