// UCX's transport names and aliases (see ucx_names.h).
#include "ucx_names.h"

#include "text.h"

namespace ucxtls {

namespace {
constexpr Family kNone = Family::none, kCuda = Family::cuda, kRocm = Family::rocm, kZe = Family::ze;
constexpr Role kCopy = Role::copy, kIpc = Role::ipc, kGdr = Role::gdr, kRdma = Role::rdma, kShm = Role::shm,
               kAlias = Role::alias;
constexpr Device kAny = Device::any, kGpu = Device::gpu, kVerbs = Device::rdma, kMlx5 = Device::mlx5,
                 kUnknown = Device::unknown;
}  // namespace

// openucx/ucx v1.22.0: the aliases are ucp_tl_aliases (src/ucp/core/ucp_context.c:748-771; the
// `names` unit test compares them with a real libucp), the modules src/uct/**/Makefile.am, the
// flags config/m4 and src/uct/**/configure.m4. The families' rows come first: family_transport
// finds them soonest. Not shipping: rocm_gdr (libuct_rocm_gdr, removed in v1.14.0), ze_ipc and
// ze_gdr (in ze's alias, in no release yet).
const UcxName kUcxNames[] = {
    {"cuda", kCuda, kAlias, kUnknown, true, "", "", "cuda_copy,cuda_ipc,gdr_copy"},
    {"cuda_copy", kCuda, kCopy, kGpu, true, "libuct_cuda", "--with-cuda", ""},
    {"cuda_ipc", kCuda, kIpc, kGpu, true, "libuct_cuda", "--with-cuda", ""},
    {"gdr_copy", kCuda, kGdr, kGpu, true, "libuct_cuda_gdrcopy", "--with-gdrcopy", ""},
    {"rocm", kRocm, kAlias, kUnknown, true, "", "", "rocm_copy,rocm_ipc,rocm_gdr"},
    {"rocm_copy", kRocm, kCopy, kGpu, true, "libuct_rocm", "--with-rocm", ""},
    {"rocm_ipc", kRocm, kIpc, kGpu, true, "libuct_rocm", "--with-rocm", ""},
    {"rocm_gdr", kRocm, kGdr, kGpu, false, "libuct_rocm_gdr", "--with-rocm", ""},
    {"ze", kZe, kAlias, kUnknown, true, "", "", "ze_copy,ze_ipc,ze_gdr"},
    {"ze_copy", kZe, kCopy, kGpu, true, "libuct_ze", "--with-ze", ""},
    {"ze_ipc", kZe, kIpc, kGpu, false, "libuct_ze", "--with-ze", ""},
    {"ze_gdr", kZe, kGdr, kGpu, false, "libuct_ze", "--with-ze", ""},
    {"self", kNone, Role::self, kAny, true, "libuct", "", ""},
    {"tcp", kNone, Role::net, kAny, true, "libuct", "", ""},
    {"posix", kNone, kShm, kAny, true, "libuct", "", ""},
    {"sysv", kNone, kShm, kAny, true, "libuct", "", ""},
    {"cma", kNone, kShm, kAny, true, "libuct_cma", "--enable-cma", ""},
    {"knem", kNone, kShm, kUnknown, true, "libuct_knem", "--with-knem", ""},
    {"xpmem", kNone, kShm, kUnknown, true, "libuct_xpmem", "--with-xpmem", ""},
    {"rc_verbs", kNone, kRdma, kVerbs, true, "libuct_ib", "--with-verbs", ""},
    {"ud_verbs", kNone, kRdma, kVerbs, true, "libuct_ib", "--with-verbs", ""},
    {"rc_mlx5", kNone, kRdma, kMlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"ud_mlx5", kNone, kRdma, kMlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"dc_mlx5", kNone, kRdma, kMlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"gga_mlx5", kNone, kRdma, kMlx5, true, "libuct_ib_mlx5", "--with-mlx5", ""},
    {"rc_gda", kNone, kRdma, kUnknown, true, "libuct_ib_mlx5_gda", "--with-gda", ""},
    {"srd", kNone, kRdma, kUnknown, true, "libuct_ib_efa", "--with-efa", ""},
    {"ugni_smsg", kNone, kRdma, kUnknown, true, "libuct_ugni", "--with-ugni", ""},
    {"ugni_udt", kNone, kRdma, kUnknown, true, "libuct_ugni", "--with-ugni", ""},
    {"ugni_rdma", kNone, kRdma, kUnknown, true, "libuct_ugni", "--with-ugni", ""},
    {"gaudi_gdr", kNone, kGdr, kUnknown, true, "libuct_gaudi", "--with-gaudi", ""},
    {"mm", kNone, kAlias, kUnknown, true, "", "", "posix,sysv,xpmem"},
    {"sm", kNone, kAlias, kUnknown, true, "", "", "posix,sysv,xpmem,knem,cma"},
    {"shm", kNone, kAlias, kUnknown, true, "", "", "posix,sysv,xpmem,knem,cma"},
    {"ib", kNone, kAlias, kUnknown, true, "", "", "rc_verbs,ud_verbs,rc_mlx5,ud_mlx5,dc_mlx5,gga_mlx5,ud_mlx5:aux,ud_verbs:aux,srd,rc_gda"},
    {"ud_v", kNone, kAlias, kUnknown, true, "", "", "ud_verbs"},
    {"ud_x", kNone, kAlias, kUnknown, true, "", "", "ud_mlx5"},
    {"ud", kNone, kAlias, kUnknown, true, "", "", "ud_mlx5,ud_verbs"},
    {"rc_v", kNone, kAlias, kUnknown, true, "", "", "rc_verbs,ud_verbs:aux"},
    {"rc_x", kNone, kAlias, kUnknown, true, "", "", "rc_mlx5,ud_mlx5:aux"},
    {"rc", kNone, kAlias, kUnknown, true, "", "", "rc_mlx5,ud_mlx5:aux,rc_verbs,ud_verbs:aux"},
    {"dc", kNone, kAlias, kUnknown, true, "", "", "dc_mlx5,ud_mlx5:aux"},
    {"dc_x", kNone, kAlias, kUnknown, true, "", "", "dc_mlx5,ud_mlx5:aux"},
    {"ugni", kNone, kAlias, kUnknown, true, "", "", "ugni_smsg,ugni_udt:aux,ugni_rdma"},
    {"gaudi", kNone, kAlias, kUnknown, true, "", "", "gaudi_gdr"},
    {"gga", kNone, kAlias, kUnknown, true, "", "", "gga_mlx5"},
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
  if (f == Family::none) return "";  // the other rows' family: none is no family to look up
  for (const UcxName &u : kUcxNames)
    if (u.family == f && u.role == r && u.ships) return u.name;
  return "";
}

const char *family_name(Family f) { return f == Family::none ? "none" : family_transport(f, Role::alias); }

bool names_overlap(const char *a, size_t an, const char *b, size_t bn) {
  const UcxName *u = ucx_name(a, an), *v = ucx_name(b, bn);
  if (!u || !v) return an == bn && !memcmp(a, b, an);  // every alias's members are in the table
  Items x(u->role == Role::alias ? u->members : u->name);
  const char *m, *o;
  size_t k, l;
  while (x.next(&m, &k)) {
    entry_name(m, k, &m, &k);
    Items y(v->role == Role::alias ? v->members : v->name);
    while (y.next(&o, &l)) {
      entry_name(o, l, &o, &l);
      if (k == l && !memcmp(m, o, k)) return true;
    }
  }
  return false;
}

}  // namespace ucxtls
