// UCX's transport vocabulary: one row per name UCX_TLS can hold, the transports UCX registers
// (UCT_TL_DEFINE) and its aliases (ucp_tl_aliases). The template, repair and doctor read it: a UCX
// release that adds or drops a name is a one-row edit. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace ucxtls {

// A GPU family: whose memory a transport carries.
enum class Family : uint8_t { none, cuda, rocm, ze };
constexpr int kFamilies = 4;

// copy: the family's memory domain, which tells its memory from host memory; ipc: between its
// GPUs on a node; gdr: the CPU's window on its memory; alias: a name for its members.
enum class Role : uint8_t { copy, ipc, gdr, rdma, shm, net, self, alias };

// What gives a transport a device on a node, by the facts doctor holds: nothing (lo, memory), a
// GPU of its family, any RDMA device, a ConnectX driven by mlx5; unknown: facts it does not hold.
enum class Device : uint8_t { any, gpu, rdma, mlx5, unknown };

// Characters, not pointers: the table needs no relocation, so the loader has nothing to do for it.
struct UcxName {
  char name[12];
  Family family;
  Role role;
  Device device;
  bool ships;        // in the current release; a kept UCX_TLS may still hold the others
  char module[20];   // the file that registers it: libuct itself, or a module
  char flag[16];     // the configure flag that builds it ("": always built)
  char members[88];  // an alias's, in UCX's order (name:aux: auxiliary only)
};
extern const UcxName kUcxNames[];
extern const size_t kUcxNameCount;

// The row of a name (without UCX's `\` and `:aux`), or nullptr.
const UcxName *ucx_name(const char *name, size_t n);
inline const UcxName *ucx_name(const char *name) { return ucx_name(name, strlen(name)); }

// An allow-list entry's transport name, without UCX's `\` prefix (the name, not an alias) and
// `:aux` suffix (auxiliary only): what the name rules compare.
void entry_name(const char *entry, size_t n, const char **name, size_t *len);

// The family's shipping transport of a role ("cuda_copy"), "" when it has none (ze's ipc: naming
// a transport the build lacks makes UCX warn on stdout). family_name: its alias, or "none".
const char *family_transport(Family f, Role r);
inline const char *family_name(Family f) { return f == Family::none ? "none" : family_transport(f, Role::alias); }
inline const char *copy_transport(Family f) { return family_transport(f, Role::copy); }
inline const char *ipc_transport(Family f) { return family_transport(f, Role::ipc); }

// Do two names select a transport in common? A transport selects itself, an alias its members
// (not its aux-only ones: "ud_mlx5:aux" in rc).
bool names_overlap(const char *a, size_t an, const char *b, size_t bn);

}  // namespace ucxtls
