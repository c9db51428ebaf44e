// The template: what UCXTLS_TEMPLATE may hold, and the UCX_TLS value it composes to for a GPU
// family (its transports: ucx_names.h) and the node's RDMA. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "text.h"
#include "ucx_names.h"

namespace ucxtls {

// What the node's RDMA devices let UCX run (see probe_rdma): nothing, rc_verbs alone (Broadcom,
// Intel RoCE, rxe, Omni-Path), or the mlx5 transports as well (a ConnectX driven by mlx5_core).
enum class Rdma : uint8_t { none, rc, mlx5 };
const char *rdma_transports(Rdma r);  // "", "rc", "rc_x,rc,dc_x,dc"

extern const char kDefaultTemplate[];  // "{rdma},{copy}"
constexpr char kAllTransports[] = "all";  // UCX's own default: every transport the build has
// UCX's default less its verbs transports, for a node whose only RDMA is a RoCE port UCX lists
// but cannot open. A deny list takes aliases (openucx/ucx v1.22.0 src/ucp/core/ucp_context.c:
// the alias ib, :748-754, holds rc, ud (also as aux), dc, srd; ucp_transports_list_search,
// :1148-1209, and the deny rule, :1245-1261, drop them all; v1.13.1 likewise, :471, :793-841).
constexpr char kDenyIb[] = "^ib";
constexpr size_t kValueMax = 4096;     // the value the library writes: at most kValueMax - 1 bytes
// The longest template: room for its placeholders to grow into the longest value.
constexpr size_t kTemplateMax = kValueMax - 512;

// Placeholders: `{copy}` the family's copy transport, `{ipc}` its intra-node GPU transport,
// `{rdma}` what the node's RDMA runs (rdma_transports). Each becomes its text, or disappears with
// one adjacent comma when that is empty. Returns false (with *why) for an invalid template.
bool template_valid(const char *tmpl, const char **why);
bool template_uses_copy(const char *tmpl);  // {copy} or {ipc}: the family matters
bool template_uses_rdma(const char *tmpl);  // {rdma}

// Writes the value into out (cap bytes). Returns false if it does not fit.
bool compose(const char *tmpl, Family f, Rdma r, char *out, size_t cap);

// What an allow list leaves out of UCX's default (all) that programs other than the trainers use:
// shared memory (sm), self, tcp, the family's ipc and gdr transports. Writes their names,
// ", "-separated, to t (nothing for all, an exclusion list, or a list that has them all); a name
// that selects one of their transports counts (mm or posix for sm, cuda for cuda_ipc). For
// `ucxtls explain`.
void describe_left_out(const char *value, Family f, Text &t);

}  // namespace ucxtls
