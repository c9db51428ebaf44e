// The driver tier's answer as text, and the pure rules for the per-node file that holds it
// (docs/driver-probe.md). Three parties share it:
//   - helper/ucxtls-probe asks the CUDA driver API and the Level Zero loader and writes a report;
//   - `ucxtls probe --save` (cli/probe.cc) runs the helper and stores the report, with this boot's
//     id, in the cache directory;
//   - the library (driver_cache.cc) reads that file, checks it with the rules below, and applies
//     this process's visibility variables to the devices it lists.
// Everything here is pure: text and file facts in, answers and reasons out.
#pragma once

#include "core.h"

namespace ucxtls {

// ---------------------------------------------------------------------------------------------
// The report. One item a line, closed by "end", so a file cut short is no report at all:
//   ucxtls-driver 2
//   boot 0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10          (the cache only: the boot it belongs to)
//   cuda answer 2 0 CUDA_SUCCESS
//   cuda-device 0 GPU-6b8f3a4e-2a1c-9d7e-8f00-1c2d3e4f5a6b NVIDIA H200
//   cuda-device 1 GPU-0d7e2f11-8c4b-4a3d-b2e1-9f8e7d6c5b4a NVIDIA H200
//   ze unknown 0 -1 libze_loader.so.1 not found
//   end
// A family line: answer|unknown, the devices the driver reported, its result code, and the rest of
// the line is the name (the driver's error name, or why there is no answer). An answered family is
// followed by one device line per device (the first kDriverDevicesMax), numbered from 0 in the
// driver's order: the identity the visibility variables need (CUDA: the GPU UUID, "GPU-..." as
// CUDA_VISIBLE_DEVICES spells it; Level Zero: its 16-byte UUID in hex), "-" when the driver gave
// none, then the device's name (the helper's report; the saved file leaves names out, to keep the
// read that every process makes short). Lines of other kinds are ignored (a later helper's extras).
constexpr int kDriverDevicesMax = 32;  // devices identified per family; more are counted, without ids
constexpr size_t kDeviceIdMax = 48;
constexpr size_t kDeviceNameMax = 48;
constexpr size_t kBootIdMax = 40;
constexpr size_t kDriverReportMax = 8192;  // the largest report or cache file

struct DriverDevice {
  const char *id = nullptr;    // never NULL in a parsed report; "-" when unknown
  const char *name = nullptr;  // never NULL in a parsed report ("-" when there is none); NULL: not written
};

struct FamilyReport {
  DriverAnswer answer;  // count == present: the driver's own count (visibility variables unset)
  int ndev = 0;
  DriverDevice dev[kDriverDevicesMax];
};

struct DriverReport {
  const char *boot = nullptr;  // NULL: no boot line (the helper's report)
  FamilyReport cuda, ze;
};

// Writes the report; 0 when it does not fit (never a cut one). Ids and names are written as they
// are, blanks in an id and control bytes anywhere replaced, so the text always parses back.
size_t format_driver_report(const DriverReport &r, char *out, size_t cap);
// Parses text in place (fields are NUL-terminated inside it; the report points into it). False,
// with *why (static text), when the report is incomplete or malformed; both families are then
// "no answer".
bool parse_driver_report(char *text, size_t len, DriverReport *out, const char **why);

// Which driver results answer "how many devices are there?" (the rest mean a broken or
// transient driver state: no answer, the kernel probe's answer stands; docs/driver-probe.md).
// CUDA: SUCCESS (the count follows), NO_DEVICE (100) and STUB_LIBRARY (34) answer 0 devices.
bool cuda_result_answers(long code);
// Level Zero: SUCCESS, UNINITIALIZED (0x78000001: no driver, or no device it supports) and
// INSUFFICIENT_PERMISSIONS (0x70010000: /dev/dri not ours, e.g. a cgroup-blocked GPU).
bool ze_result_answers(long code);
// Did the family's driver initialise (its init call succeeded: CUDA_SUCCESS, ZE_RESULT_SUCCESS)?
// The results above that answer 0 devices (NO_DEVICE, STUB_LIBRARY, UNINITIALIZED,
// INSUFFICIENT_PERMISSIONS) do not: `ucxtls probe` exits 1 when no family's driver initialised.
bool driver_initialised(const DriverAnswer &a);
// Names of the codes above and a few more; NULL for a code not in the table.
const char *cuda_result_name(long code);  // fallback when libcuda lacks cuGetErrorName
const char *ze_result_name(long code);     // Level Zero has no name function

// ---------------------------------------------------------------------------------------------
// The per-node cache.

// Where it is: UCXTLS_CACHE_DIR alone when set; otherwise $XDG_RUNTIME_DIR/ucxtls (when set),
// then /run/ucxtls. `ucxtls probe --save` writes to the first; a reader takes the first that
// exists (so a root-written /run/ucxtls serves jobs that inherited a XDG_RUNTIME_DIR).
struct CacheDir {
  const char *base;  // a directory ...
  const char *sub;   // ... and what to append to it ("" or "/ucxtls")
};
constexpr char kCacheFileName[] = "driver";
int cache_dirs(const Inputs &in, CacheDir out[2]);

// What fstat says about the cache file or its directory.
// Trusted: owned by root or by the reader (euid), not writable by group or others, and of the
// right type (a directory; a regular file). Otherwise false, with the reason in why.
bool cache_trusted(const FileFacts &f, unsigned euid, bool dir, Text &why);

// Is `boot` (the cache's boot line) this boot? boot_id is /proc/sys/kernel/random/boot_id's text.
bool same_boot(const char *boot, const char *boot_id, size_t n);

// The driver fact for this process from a trusted cache of this boot: per family, the devices the
// driver listed, narrowed by this process's CUDA_VISIBLE_DEVICES (ordinals and GPU- prefixes
// against the saved UUIDs) and ZE_AFFINITY_MASK. Leaves out->value and out->evidence to the caller.
void answer_from_report(const DriverReport &r, const Inputs &in, DriverFact *out);

}  // namespace ucxtls
