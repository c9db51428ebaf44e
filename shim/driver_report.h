// The driver tier's answer as text, and the pure rules for the per-node file that holds it
// (docs/driver-probe.md): helper/ucxtls-probe writes a report, `ucxtls probe --save` stores it with
// this boot's id, the library (driver_cache.cc) reads it back. Pure.
#pragma once

#include "core.h"

namespace ucxtls {

// The report. One item a line, closed by "end", so a file cut short is no report at all:
//   ucxtls-driver 2
//   boot 0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10          (the cache only: the boot it belongs to)
//   cuda answer 2 0 CUDA_SUCCESS
//   cuda-device 0 GPU-6b8f3a4e-2a1c-9d7e-8f00-1c2d3e4f5a6b NVIDIA H200
//   cuda-device 1 GPU-0d7e2f11-8c4b-4a3d-b2e1-9f8e7d6c5b4a NVIDIA H200
//   ze unknown 0 -1 libze_loader.so.1 not found
//   end
// A family line: answer|unknown, the devices reported, the result code, then the name (the
// driver's error name, or why no answer). Device lines, in the driver's order: the identity the
// visibility variables need ("-" when none), then the name (left out of the saved file). Lines of
// other kinds are ignored (a later helper's extras).
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

// Writes the report; 0 when it does not fit. Blanks in an id and control bytes are replaced.
size_t format_driver_report(const DriverReport &r, char *out, size_t cap);
// Parses text in place (the report points into it). False, with *why, when incomplete or malformed.
bool parse_driver_report(char *text, size_t len, DriverReport *out, const char **why);

// Which driver results answer "how many devices?" (others: no answer, the kernel's stands).
// CUDA: SUCCESS, NO_DEVICE (100) and STUB_LIBRARY (34) (0 devices).
bool cuda_result_answers(long code);
// Level Zero: SUCCESS, UNINITIALIZED (0x78000001: no driver, or no device it supports) and
// INSUFFICIENT_PERMISSIONS (0x70010000: /dev/dri not ours, e.g. a cgroup-blocked GPU).
bool ze_result_answers(long code);
// The init call succeeded (`ucxtls probe` exits 1 when no family's did).
bool driver_initialised(const DriverAnswer &a);
// Names of the codes above and a few more; NULL for a code not in the table.
const char *cuda_result_name(long code);  // fallback when libcuda lacks cuGetErrorName
const char *ze_result_name(long code);     // Level Zero has no name function

// The per-node cache: UCXTLS_CACHE_DIR alone when set; else $XDG_RUNTIME_DIR/ucxtls, then
// /run/ucxtls. `ucxtls probe --save` writes to the first; a reader takes the first that exists.
struct CacheDir {
  const char *base;  // a directory ...
  const char *sub;   // ... and what to append to it ("" or "/ucxtls")
};
constexpr char kCacheFileName[] = "driver";
int cache_dirs(const Inputs &in, CacheDir out[2]);

// Trusted: owned by root or the reader (euid), not writable by group or others, of the right type.
bool cache_trusted(const FileFacts &f, unsigned euid, bool dir, Text &why);

// boot_id: /proc/sys/kernel/random/boot_id's text.
bool same_boot(const char *boot, const char *boot_id, size_t n);

// The driver fact for this process: the saved devices narrowed by its CUDA_VISIBLE_DEVICES and
// ZE_AFFINITY_MASK. Leaves out->value and out->evidence to the caller.
void answer_from_report(const DriverReport &r, const Inputs &in, DriverFact *out);

}  // namespace ucxtls
