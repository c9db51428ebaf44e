// The driver tier's per-node cache as the library reads it (docs/driver-probe.md); the pure rules
// are driver_report.h's.
#pragma once

#include <sys/types.h>

#include "core.h"
#include "driver_report.h"

namespace ucxtls {

// This boot's id (/proc/sys/kernel/random/boot_id) into buf: its length, or -1.
ssize_t read_boot_id(const Settings &s, char *buf, size_t cap);

// A cache older than /dev/nvidiactl (made when the NVIDIA driver is set up) or /dev/dri (an entry
// is added when i915 or xe binds a GPU) predates that driver: stale. The node's name, or false.
bool driver_loaded_after(const Settings &s, long long cache_mtime_ns, char *node, size_t cap);

// probe_driver over the given places, in order: the first with a file decides.
void probe_driver_at(const Inputs &in, const Settings &s, const CacheDir *dirs, int n, DriverFact *out);

}  // namespace ucxtls
