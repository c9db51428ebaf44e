// UCX's transport names and aliases (see ucx_names.h).
#include "ucx_names.h"

#include "text.h"

namespace ucxtls {

// openucx/ucx v1.22.0: the aliases are ucp_tl_aliases (src/ucp/core/ucp_context.c:748-771;
// tests/unit/test_ucx_names.cc compares them with a real libucp), the modules src/uct/**/Makefile.am,
// the flags config/m4 and src/uct/**/configure.m4. The families' rows come first (family_transport
// stops after them). Not shipping: rocm_gdr (libuct_rocm_gdr, removed in v1.14.0), ze_ipc, ze_gdr.
const UcxName kUcxNames[] = {
    {"cuda", Family::cuda, Role::alias, Device::unknown, true, "", "", "cuda_copy,cuda_ipc,gdr_copy"},
    {"cuda_copy", Family::cuda, Role::copy, Device::gpu, true, "libuct_cuda", "--with-cuda", ""},
    {"cuda_ipc", Family::cuda, Role::ipc, Device::gpu, true, "libuct_cuda", "--with-cuda", ""},
    {"gdr_copy", Family::cuda, Role::gdr, Device::gpu, true, "libuct_cuda_gdrcopy", "--with-gdrcopy", ""},
    {"rocm", Family::rocm, Role::alias, Device::unknown, true, "", "", "rocm_copy,rocm_ipc,rocm_gdr"},
    {"rocm_copy", Family::rocm, Role::copy, Device::gpu, true, "libuct_rocm", "--with-rocm", ""},
    {"rocm_ipc", Family::rocm, Role::ipc, Device::gpu, true, "libuct_rocm", "--with-rocm", ""},
    {"rocm_gdr", Family::rocm, Role::gdr, Device::gpu, false, "libuct_rocm_gdr", "--with-rocm", ""},
    {"ze", Family::ze, Role::alias, Device::unknown, true, "", "", "ze_copy,ze_ipc,ze_gdr"},
    {"ze_copy", Family::ze, Role::copy, Device::gpu, true, "libuct_ze", "--with-ze", ""},
    {"ze_ipc", Family::ze, Role::ipc, Device::gpu, false, "libuct_ze", "--with-ze", ""},
    {"ze_gdr", Family::ze, Role::gdr, Device::gpu, false, "libuct_ze", "--with-ze", ""},
    {"self", Family::none, Role::self, Device::any, true, "libuct", "", ""},
    {"tcp", Family::none, Role::net, Device::any, true, "libuct", "", ""},
    {"posix", Family::none, Role::shm, Device::any, true, "libuct", "", ""},
    {"sysv", Family::none, Role::shm, Device::any, true, "libuct", "", ""},
    {"cma", Family::none, Role::shm, Device::any, true, "libuct_cma", "--enable-cma", ""},
    {"knem", Family::none, Role::shm, Device::unknown, true, "libuct_knem", "--with-knem", ""},
    {"xpmem", Family::none, Role::shm, Device::unknown, true, "libuct_xpmem", "--with-xpmem", ""},
    {"rc_verbs", Family::none, Role::rdma, Device::rdma, true, "libuct_ib", "--with-verbs", ""},
    {"ud_verbs", Family::none, Role::rdma, Device::rdma, true, "libuct_ib", "--with-verbs", ""},
    {"rc_mlx5", Family::none, Role::rdma, Device::mlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"ud_mlx5", Family::none, Role::rdma, Device::mlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"dc_mlx5", Family::none, Role::rdma, Device::mlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"gga_mlx5", Family::none, Role::rdma, Device::mlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"rc_gda", Family::none, Role::rdma, Device::unknown, true, "libuct_ib_mlx5_gda", "--with-gda", ""},
    {"srd", Family::none, Role::rdma, Device::unknown, true, "libuct_ib_efa", "--with-efa", ""},
    {"ugni_smsg", Family::none, Role::rdma, Device::unknown, true, "libuct_ugni", "--with-ugni", ""},
    {"ugni_udt", Family::none, Role::rdma, Device::unknown, true, "libuct_ugni", "--with-ugni", ""},
    {"ugni_rdma", Family::none, Role::rdma, Device::unknown, true, "libuct_ugni", "--with-ugni", ""},
    {"gaudi_gdr", Family::none, Role::gdr, Device::unknown, true, "libuct_gaudi", "--with-gaudi", ""},
    {"mm", Family::none, Role::alias, Device::unknown, true, "", "", "posix,sysv,xpmem"},
    {"sm", Family::none, Role::alias, Device::unknown, true, "", "", "posix,sysv,xpmem,knem,cma"},
    {"shm", Family::none, Role::alias, Device::unknown, true, "", "", "posix,sysv,xpmem,knem,cma"},
    {"ib", Family::none, Role::alias, Device::unknown, true, "", "", "rc_verbs,ud_verbs,rc_mlx5,ud_mlx5,dc_mlx5,gga_mlx5,ud_mlx5:aux,ud_verbs:aux,srd,rc_gda"},
    {"ud_v", Family::none, Role::alias, Device::unknown, true, "", "", "ud_verbs"},
    {"ud_x", Family::none, Role::alias, Device::unknown, true, "", "", "ud_mlx5"},
    {"ud", Family::none, Role::alias, Device::unknown, true, "", "", "ud_mlx5,ud_verbs"},
    {"rc_v", Family::none, Role::alias, Device::unknown, true, "", "", "rc_verbs,ud_verbs:aux"},
    {"rc_x", Family::none, Role::alias, Device::unknown, true, "", "", "rc_mlx5,ud_mlx5:aux"},
    {"rc", Family::none, Role::alias, Device::unknown, true, "", "", "rc_mlx5,ud_mlx5:aux,rc_verbs,ud_verbs:aux"},
    {"dc", Family::none, Role::alias, Device::unknown, true, "", "", "dc_mlx5,ud_mlx5:aux"},
    {"dc_x", Family::none, Role::alias, Device::unknown, true, "", "", "dc_mlx5,ud_mlx5:aux"},
    {"ugni", Family::none, Role::alias, Device::unknown, true, "", "", "ugni_smsg,ugni_udt:aux,ugni_rdma"},
    {"gaudi", Family::none, Role::alias, Device::unknown, true, "", "", "gaudi_gdr"},
    {"gga", Family::none, Role::alias, Device::unknown, true, "", "", "gga_mlx5"},
};
const size_t kUcxNameCount = sizeof kUcxNames / sizeof kUcxNames[0];

const UcxName *ucx_name(const char *name, size_t n) {
  if (!n || n >= sizeof kUcxNames[0].name) return nullptr;
  for (const UcxName &u : kUcxNames)
    if (u.name[0] == name[0] && !memcmp(u.name, name, n) && !u.name[n]) return &u;
  return nullptr;
}

void entry_name(const char *e, size_t n, const char **name, size_t *len) {
  if (n && e[0] == '\\') e++, n--;
  if (n >= 4 && !memcmp(e + n - 4, ":aux", 4)) n -= 4;
  *name = e;
  *len = n;
}

const char *family_transport(Family f, Role r) {
  for (const UcxName &u : kUcxNames) {
    if (u.family == Family::none) break;  // the families' rows are over
    if (u.family == f && u.role == r && u.ships) return u.name;
  }
  return "";
}

bool names_overlap(const char *a, size_t an, const char *b, size_t bn) {
  const UcxName *u = ucx_name(a, an), *v = ucx_name(b, bn);
  if (!u || !v) return an == bn && !memcmp(a, b, an);  // every alias's members are in the table
  Items x(u->role == Role::alias ? u->members : u->name);
  const char *m, *o;
  size_t k, l;
  while (x.next(&m, &k)) {
    if (memchr(m, ':', k)) continue;  // aux-only: it equals no name of y but another aux one
    for (Items y(v->role == Role::alias ? v->members : v->name); y.next(&o, &l);)
      if (k == l && !memcmp(m, o, k)) return true;
  }
  return false;
}

}  // namespace ucxtls
