// A kept UCX_TLS that names another GPU family's transports (the CUDA list exported by a job
// script and run on an Intel partition: the failure this project exists for), and its repair to
// this node's family (UCXTLS_REPAIR=1). Pure (see core.h).
#pragma once

#include <stddef.h>

#include "template.h"
#include "text.h"

namespace ucxtls {

// The family and role of one entry ([\]name[:aux]; ucx_names.h), or Family::none when it is not
// a GPU transport. A rewrite keeps an entry's `\` and `:aux`.
Family gpu_entry_family(const char *entry, size_t n, Role *role);

// A mismatch: an allow list that names another family's GPU transports and none of `node`'s (a
// deny list removes: repair leaves it alone). `node` none: never (nothing tells what its GPUs need).
bool gpu_mismatch(const char *value, Family node);

// Writes the names of the value's GPU entries that are not `node`'s ("cuda_copy, cuda_ipc") to t.
void describe_foreign_entries(const char *value, Family node, Text &t);

// Can UCX carry the node's GPU memory with this value? It needs the family's copy transport
// (without it, NIXL: "VRAM memory is detected as host by UCX."). An allow list holds it by name
// (\name too), through the family's alias (never as \alias) or as all; a deny list removes it by
// the same names. Family::none, and an empty value (UCX refuses it for its own reason): carries.
enum class Copy : unsigned char {
  carries,
  lacks,   // an allow list without it (tcp on an NVIDIA node, another family's list)
  denied,  // a deny list that removes it (^cuda_copy, ^cuda)
};
Copy copy_verdict(const char *value, Family node);

// The words of a Copy verdict other than carries, for the debug line, `explain` and `doctor`:
// what the value lacks and what follows ("names no cuda_copy (nor cuda, nor all): GPU memory ...
// (NIXL: ...)"), and the fix ("add cuda_copy (UCXTLS_REPAIR=1 appends it) or unset UCX_TLS").
void describe_copy_problem(Copy v, Family node, Text &t);
void describe_copy_fix(Copy v, Family node, Text &t);

// UCXTLS_REPAIR on an allow list that lacks the copy transport (and names no other family's GPU
// transports, which repair_value rewrites): the value with ",{copy}" appended into out. False
// when it does not fit in cap.
bool append_copy(const char *value, Family node, char *out, size_t cap);

// Rewrites every other family's GPU entry to `node`'s counterpart of the same role (cuda_copy ->
// ze_copy, cuda_ipc -> rocm_ipc, the alias cuda -> ze), removes one with no counterpart (cuda_ipc
// on ze, gdr_copy on rocm and ze), drops an entry that the rewrite made a repeat of an earlier
// one, and keeps every other entry as written, in order, into out (empty unless repaired).
enum class Repair : unsigned char {
  repaired,         // out holds the repaired value
  no_mismatch,      // nothing to repair (gpu_mismatch is false)
  nothing_remains,  // every entry would go
  too_long,         // the repaired value does not fit in cap (kValueMax: a value the library writes)
};
Repair repair_value(const char *value, Family node, char *out, size_t cap);

}  // namespace ucxtls
