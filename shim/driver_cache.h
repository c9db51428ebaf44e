// The driver tier's per-node cache as the library reads it (docs/driver-probe.md). The library
// never creates a process and never loads a driver library: `ucxtls probe --save` asks the drivers
// once per node, out of band, and every process reads the answer here, in a few system calls.
// The rules (where, who is trusted, what the text means) are pure and live in driver_report.h;
// probe_driver (probe.h) is this file's entry point.
#pragma once

#include <sys/types.h>

#include "core.h"
#include "driver_report.h"

namespace ucxtls {

// This boot's id (/proc/sys/kernel/random/boot_id under the sysroot, as the probe reads it) into
// buf, NUL-terminated; its length, or -1 when it cannot be read.
ssize_t read_boot_id(const Settings &s, char *buf, size_t cap);

// The device nodes whose modification time marks when a driver was loaded: /dev/nvidiactl (made
// when the NVIDIA driver is set up) and the /dev/dri directory (an entry is added when a DRM
// driver such as i915 or xe binds a GPU). A cache older than either was saved before that driver
// came: stale. Returns the first such node (its name, without the sysroot) in `node`, or false.
bool driver_loaded_after(const Settings &s, long long cache_mtime_ns, char *node, size_t cap);

// probe_driver over the given places, in order (probe_driver passes cache_dirs'): a place whose
// directory or file is missing gives way to the next; the first that has one decides (used, or
// ignored with why).
void probe_driver_at(const Inputs &in, const Settings &s, const CacheDir *dirs, int n, DriverFact *out);

}  // namespace ucxtls
