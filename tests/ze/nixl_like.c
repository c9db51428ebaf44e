/* libnixl_like.so: registers and moves GPU memory the way NIXL's UCX backend does
   (ai-dynamo/nixl src/plugins/ucx/ucx_utils.cpp), so that the tests observe what a NIXL user
   observes on an Intel GPU node, without NIXL:
   - one context (RMA, AMO32, AMO64, AM, as NIXL asks), configuration from UCX's environment
     (ucp_config_read: NIXL never sets UCX_TLS), one worker;
   - memReg: ucp_mem_map of the device buffer WITHOUT a memory type (address and length only),
     then ucp_mem_query; memory that UCX reports as host is refused, in NIXL's words: "VRAM memory
     is detected as host by UCX";
   - the rkey packed (ucp_rkey_pack) and sent to the peer with the worker address; the initiator
     connects (error handling mode PEER, as NIXL), unpacks the rkey, does a get and a put
     (ucp_get_nbx / ucp_put_nbx with the memh, as NIXL) and flushes;
   - every byte checked through the GPU driver (copied back to the host with
     zeCommandListAppendMemoryCopy, or cuMemcpyDtoH on an NVIDIA GPU), never read by the host.

   Two processes run it: the target (owns the remote buffer) and the initiator; they exchange
   messages over a connected stream socket whose descriptor each is given. It is called in-process
   (ctypes) by tests/ze/trainer.py, and by the small program nixl_like_main.c.

   int nixl_like_run(const char *role, int fd, size_t size, int flags, const char *gpu)
     role  "target" or "initiator"; gpu "ze" (Level Zero, the default) or "cuda"
     flags NIXL_LIKE_FORCE: go on after NIXL would have refused (to see what UCX then does)
   Prints "nixl_like: ..." lines on stdout (UCX prints its own there too) and returns one of the
   NL_* codes below. Every wait is bounded (NIXL_LIKE_TIMEOUT seconds, default 30), and a peer
   that dies is seen through the socket's end of file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>
#include <ucs/memory/memory_type.h>

#include "nixl_like.h"

/* ------------------------------------------------------------------ output */
static const char *g_role = "?";
/* One "nixl_like ROLE: ..." line on stdout, flushed (UCX writes there too, and a crash must not
   lose it); an expression, so that `return SAY(...), code;` reads as one step. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("nixl_like %s: ", g_role);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}
#define SAY say

static double timeout_s(void) {
  const char *v = getenv("NIXL_LIKE_TIMEOUT");
  double t = v ? atof(v) : 0;
  return t > 0 ? t : 30;
}
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ the GPU, through its driver */
typedef struct {
  int (*alloc)(size_t size, void **p);
  int (*to_device)(void *dst, const void *src, size_t size);
  int (*to_host)(void *dst, const void *src, size_t size);
  void (*release)(void *p);
  const char *what;
} gpu_t;

/* Level Zero (Intel): linked against the loader (libze_loader.so.1) and called through the PLT,
   as programs that use an Intel GPU do. That matters: UCX learns that an address is device memory
   from UCM's hooks on zeMemAllocDevice/zeMemFree (relocation patching of those PLT entries, which
   fill UCX's memory type cache); a pointer taken with dlsym before ucp_init bypasses them, and UCX
   then takes every later device allocation for host memory ("not found in memtype cache, assuming
   host memory"). Left out with -DNIXL_LIKE_NO_ZE (a machine without Level Zero's headers). */
#ifndef NIXL_LIKE_NO_ZE
#include <level_zero/ze_api.h>
static struct {
  ze_driver_handle_t drv;
  ze_device_handle_t dev;
  ze_context_handle_t ctx;
  ze_command_list_handle_t list;
} ze;

static int ze_copy(void *dst, const void *src, size_t size) {
  ze_result_t rc = zeCommandListAppendMemoryCopy(ze.list, dst, src, size, NULL, 0, NULL);
  if (rc) SAY("zeCommandListAppendMemoryCopy: 0x%x", (unsigned)rc);
  return rc ? -1 : 0;
}
static int ze_alloc(size_t size, void **p) {
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_result_t rc = zeMemAllocDevice(ze.ctx, &d, size, 4096, ze.dev, p);
  if (rc) SAY("zeMemAllocDevice: 0x%x", (unsigned)rc);
  return rc ? -1 : 0;
}
static void ze_release(void *p) { zeMemFree(ze.ctx, p); }

static int ze_open(gpu_t *g) {
  uint32_t n = 1;
  ze_result_t rc = zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (rc) return SAY("zeInit: 0x%x: no Level Zero GPU", (unsigned)rc), -1;
  if (zeDriverGet(&n, &ze.drv) || !n) return SAY("zeDriverGet: no driver"), -1;
  n = 1;
  if (zeDeviceGet(ze.drv, &n, &ze.dev) || !n) return SAY("zeDeviceGet: no GPU"), -1;
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  if (zeContextCreate(ze.drv, &cd, &ze.ctx)) return SAY("zeContextCreate failed"), -1;
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
  if (zeCommandListCreateImmediate(ze.ctx, ze.dev, &qd, &ze.list)) return SAY("zeCommandListCreateImmediate failed"), -1;
  *g = (gpu_t){ze_alloc, ze_copy, ze_copy, ze_release, "Level Zero GPU 0"};
  return 0;
}
#else
static int ze_open(gpu_t *g) {
  (void)g;
  return SAY("built without Level Zero (NIXL_LIKE_NO_ZE)"), -1;
}
#endif

/* CUDA (NVIDIA), through the driver API (dlopen libcuda.so.1: no CUDA headers needed). */
static struct {
  void *ctx;
  int (*Init)(unsigned);
  int (*DeviceGet)(int *, int);
  int (*PrimaryCtxRetain)(void **, int);
  int (*CtxSetCurrent)(void *);
  int (*MemAlloc)(unsigned long long *, size_t);
  int (*MemFree)(unsigned long long);
  int (*HtoD)(unsigned long long, const void *, size_t);
  int (*DtoH)(void *, unsigned long long, size_t);
} cu;
static int cu_alloc(size_t size, void **p) {
  unsigned long long d = 0;
  int rc = cu.MemAlloc(&d, size);
  if (rc) SAY("cuMemAlloc: %d", rc);
  *p = (void *)(uintptr_t)d;
  return rc ? -1 : 0;
}
static int cu_to_device(void *dst, const void *src, size_t size) {
  int rc = cu.HtoD((uintptr_t)dst, src, size);
  if (rc) SAY("cuMemcpyHtoD: %d", rc);
  return rc ? -1 : 0;
}
static int cu_to_host(void *dst, const void *src, size_t size) {
  int rc = cu.DtoH(dst, (uintptr_t)src, size);
  if (rc) SAY("cuMemcpyDtoH: %d", rc);
  return rc ? -1 : 0;
}
static void cu_release(void *p) { cu.MemFree((uintptr_t)p); }
static int cu_open(gpu_t *g) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return SAY("no CUDA driver: %s", dlerror()), -1;
#define SYM(field, name) if (!(*(void **)&cu.field = dlsym(lib, name))) return SAY("no %s in libcuda", name), -1
  SYM(Init, "cuInit");
  SYM(DeviceGet, "cuDeviceGet");
  SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(CtxSetCurrent, "cuCtxSetCurrent");
  SYM(MemAlloc, "cuMemAlloc_v2");
  SYM(MemFree, "cuMemFree_v2");
  SYM(HtoD, "cuMemcpyHtoD_v2");
  SYM(DtoH, "cuMemcpyDtoH_v2");
#undef SYM
  int dev = 0, rc;
  if ((rc = cu.Init(0)) != 0) return SAY("cuInit: %d", rc), -1;
  if ((rc = cu.DeviceGet(&dev, 0)) != 0) return SAY("cuDeviceGet: %d", rc), -1;
  if ((rc = cu.PrimaryCtxRetain(&cu.ctx, dev)) != 0 || (rc = cu.CtxSetCurrent(cu.ctx)) != 0)
    return SAY("CUDA context: %d", rc), -1;
  *g = (gpu_t){cu_alloc, cu_to_device, cu_to_host, cu_release, "CUDA device 0"};
  return 0;
}

/* ------------------------------------------------------------------ messages over the socket */
static int write_all(int fd, const void *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p = (const char *)p + w;
    n -= (size_t)w;
  }
  return 0;
}
static int send_msg(int fd, const void *p, uint64_t n) {
  return write_all(fd, &n, sizeof n) || write_all(fd, p, n) ? -1 : 0;
}

/* Waits for fd to be readable, progressing the worker meanwhile; -1 on timeout. */
static int wait_readable(int fd, ucp_worker_h w, double deadline) {
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, 0);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
    if (now() > deadline) return -1;
    if (w)
      ucp_worker_progress(w);
    else
      usleep(1000);
  }
}
static int read_all(int fd, void *p, size_t n, ucp_worker_h w, double deadline) {
  while (n) {
    if (wait_readable(fd, w, deadline)) return -2;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1; /* end of file: the peer is gone */
    p = (char *)p + r;
    n -= (size_t)r;
  }
  return 0;
}
/* A message in a malloc'd buffer; NULL when the peer is gone or too slow (said why). */
static void *recv_msg(int fd, uint64_t *n, ucp_worker_h w, const char *what) {
  double deadline = now() + timeout_s();
  uint64_t len;
  int rc = read_all(fd, &len, sizeof len, w, deadline);
  void *buf = rc == 0 && len < (1u << 24) ? malloc(len ? len : 1) : NULL;
  if (buf && (rc = read_all(fd, buf, len, w, deadline)) == 0) {
    *n = len;
    return buf;
  }
  free(buf);
  SAY("peer failure: %s while waiting for %s", rc == -2 ? "no answer within the timeout" : "the peer is gone (end of file)", what);
  return NULL;
}

/* ------------------------------------------------------------------ UCX, as NIXL uses it */
static unsigned char pattern(int who, size_t i) { return (unsigned char)(who ? i * 7 + 3 : (i * 13 + 1) ^ 0x5a); }

/* NIXL's memReg: ucp_mem_map without a memory type, then ucp_mem_query. */
static int mem_reg(ucp_context_h ctx, void *addr, size_t size, int flags, ucp_mem_h *memh) {
  ucp_mem_map_params_t mp;
  memset(&mp, 0, sizeof mp);
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = addr;
  mp.length = size;
  ucs_status_t st = ucp_mem_map(ctx, &mp, memh);
  if (st != UCS_OK) {
    SAY("ucp_mem_map failed: %s", ucs_status_string(st));
    return NL_MEM_MAP;
  }
  ucp_mem_attr_t attr;
  attr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
  st = ucp_mem_query(*memh, &attr);
  if (st != UCS_OK) {
    SAY("ucp_mem_query failed: %s", ucs_status_string(st));
    ucp_mem_unmap(ctx, *memh);
    return NL_MEM_MAP;
  }
  SAY("ucp_mem_query: memory type %s", ucs_memory_type_names[attr.mem_type]);
  if (attr.mem_type == UCS_MEMORY_TYPE_HOST) {
    if (!(flags & NIXL_LIKE_FORCE)) {
      SAY("registration refused: VRAM memory is detected as host by UCX");
      ucp_mem_unmap(ctx, *memh);
      return NL_DETECTED_AS_HOST;
    }
    SAY("VRAM memory is detected as host by UCX; going on anyway (forced, unlike NIXL)");
  }
  return NL_OK;
}

static void err_cb(void *arg, ucp_ep_h ep, ucs_status_t st) {
  (void)arg;
  (void)ep;
  SAY("endpoint error: %s", ucs_status_string(st));
}

/* Waits for a request (or an immediate status); bounded. */
static ucs_status_t wait_req(ucp_worker_h w, void *req, int peer_fd) {
  if (req == NULL) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  double deadline = now() + timeout_s();
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    ucp_worker_progress(w);
    if (now() > deadline) {
      SAY("peer failure: the request did not complete within the timeout");
      ucp_request_cancel(w, req);
      st = UCS_ERR_TIMED_OUT;
      break;
    }
    struct pollfd p = {peer_fd, POLLIN, 0};
    char c;
    if (poll(&p, 1, 0) > 0 && recv(peer_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
      SAY("peer failure: the peer is gone (end of file) during the request");
      ucp_request_cancel(w, req);
      st = UCS_ERR_CONNECTION_RESET;
      break;
    }
  }
  ucp_request_free(req);
  return st;
}

/* A put (NIXL's WRITE) or a get (NIXL's READ) with the memh, as NIXL posts them, then a flush. */
static int rma(ucp_worker_h w, ucp_ep_h ep, int put, void *local, ucp_mem_h memh, size_t size, uint64_t raddr,
               ucp_rkey_h rkey, int fd) {
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
  rp.memh = memh;
  SAY("%s %zu bytes %s the target's device memory", put ? "ucp_put_nbx" : "ucp_get_nbx", size, put ? "into" : "from");
  ucs_status_t st = wait_req(w, put ? ucp_put_nbx(ep, local, size, raddr, rkey, &rp)
                                    : ucp_get_nbx(ep, local, size, raddr, rkey, &rp), fd);
  if (st == UCS_OK) st = wait_req(w, ucp_ep_flush_nbx(ep, &(ucp_request_param_t){0}), fd);
  SAY("%s: %s", put ? "put" : "get", ucs_status_string(st));
  if (st == UCS_OK) return NL_OK;
  return st == UCS_ERR_TIMED_OUT || st == UCS_ERR_CONNECTION_RESET ? NL_PEER : NL_TRANSFER;
}

static int check_device(gpu_t *g, const void *dev, size_t size, int who, const char *what) {
  unsigned char *host = malloc(size);
  if (!host || g->to_host(host, dev, size)) {
    free(host);
    return NL_GPU;
  }
  size_t bad = 0, first = size;
  for (size_t i = 0; i < size; i++)
    if (host[i] != pattern(who, i)) {
      if (first == size) first = i;
      bad++;
    }
  free(host);
  if (bad) {
    SAY("%s: %zu of %zu bytes wrong (first at %zu), checked through the GPU driver", what, bad, size, first);
    return NL_DATA;
  }
  SAY("%s: all %zu bytes right, checked through the GPU driver", what, size);
  return NL_OK;
}

static int fill_device(gpu_t *g, void *dev, size_t size, int who) {
  unsigned char *host = malloc(size);
  if (!host) return NL_GPU;
  for (size_t i = 0; i < size; i++) host[i] = who < 0 ? 0 : pattern(who, i);
  int rc = g->to_device(dev, host, size) ? NL_GPU : NL_OK;
  free(host);
  return rc;
}

struct peer_info { uint64_t addr, size; };

static int run(int initiator, int fd, size_t size, int flags, gpu_t *g) {
  int rc;
  SAY("UCX %s (%s), UCX_TLS=%s", ucp_get_version_string(), initiator ? "initiator" : "target",
      getenv("UCX_TLS") ? getenv("UCX_TLS") : "(unset)");
  ucp_config_t *config;
  ucs_status_t st = ucp_config_read(NULL, NULL, &config);
  if (st != UCS_OK) return SAY("ucp_config_read failed: %s", ucs_status_string(st)), NL_INIT;
  ucp_params_t params;
  memset(&params, 0, sizeof params);
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
  ucp_context_h ctx;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) {
    SAY("ucp_init failed: %s", ucs_status_string(st));
    return NL_INIT;
  }
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w;
  st = ucp_worker_create(ctx, &wp, &w);
  if (st != UCS_OK) {
    SAY("ucp_worker_create failed: %s", ucs_status_string(st));
    ucp_cleanup(ctx);
    return NL_INIT;
  }
  void *buf = NULL, *back = NULL;
  ucp_mem_h memh = NULL, back_memh = NULL;
  if (g->alloc(size, &buf) || fill_device(g, buf, size, initiator)) {
    rc = NL_GPU;
    goto out;
  }
  SAY("%zu bytes of device memory at %p (%s)", size, buf, g->what);
  rc = mem_reg(ctx, buf, size, flags, &memh);
  if (rc != NL_OK) {
    memh = NULL;
    goto out;
  }

  if (!initiator) {
    /* Target: send the worker address, the rkey and the buffer; wait for the initiator's end. */
    ucp_address_t *addr;
    size_t addr_len;
    void *rkey_buf;
    size_t rkey_len;
    if ((st = ucp_worker_get_address(w, &addr, &addr_len)) != UCS_OK ||
        (st = ucp_rkey_pack(ctx, memh, &rkey_buf, &rkey_len)) != UCS_OK) {
      SAY("address or rkey: %s", ucs_status_string(st));
      rc = NL_TRANSFER;
      goto out;
    }
    struct peer_info pi = {(uintptr_t)buf, size};
    int bad = send_msg(fd, addr, addr_len) || send_msg(fd, rkey_buf, rkey_len) || send_msg(fd, &pi, sizeof pi);
    ucp_rkey_buffer_release(rkey_buf);
    ucp_worker_release_address(w, addr);
    if (bad) {
      SAY("peer failure: cannot send to the peer");
      rc = NL_PEER;
      goto out;
    }
    SAY("sent the worker address (%zu bytes) and the rkey (%zu bytes); serving", addr_len, rkey_len);
    uint64_t n;
    int32_t *verdict = recv_msg(fd, &n, w, "the initiator's transfers");
    if (!verdict) {
      rc = NL_PEER;
      goto out;
    }
    SAY("the initiator says its transfers ended with code %d", *verdict);
    free(verdict);
    rc = check_device(g, buf, size, 1, "the initiator's put, in this target's device memory");
    int32_t mine = rc;
    send_msg(fd, &mine, sizeof mine);
    goto out;
  }

  /* Initiator. */
  {
    uint64_t alen, rlen, plen;
    void *addr = recv_msg(fd, &alen, NULL, "the target's worker address");
    void *rkey_buf = addr ? recv_msg(fd, &rlen, NULL, "the target's rkey") : NULL;
    struct peer_info *pi = rkey_buf ? recv_msg(fd, &plen, NULL, "the target's buffer") : NULL;
    if (!pi) {
      free(addr);
      free(rkey_buf);
      rc = NL_PEER;
      goto out;
    }
    ucp_ep_params_t ep_params;
    memset(&ep_params, 0, sizeof ep_params);
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address = addr;
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = err_cb;
    ucp_ep_h ep = NULL;
    ucp_rkey_h rkey = NULL;
    st = ucp_ep_create(w, &ep_params, &ep);
    if (st == UCS_OK) st = ucp_ep_rkey_unpack(ep, rkey_buf, &rkey);
    free(addr);
    free(rkey_buf);
    uint64_t raddr = pi->addr;
    free(pi);
    int32_t code = NL_OK;
    if (st != UCS_OK) {
      SAY("connect: %s", ucs_status_string(st));
      code = NL_TRANSFER;
    }
    /* put (NIXL's WRITE): our buffer into the target's; then get (NIXL's READ) it back into a
       second device buffer of ours. The target checks the put in its own memory, we check the get. */
    if (code == NL_OK) code = rma(w, ep, 1, buf, memh, size, raddr, rkey, fd);
    if (code == NL_OK && (g->alloc(size, &back) || fill_device(g, back, size, -1))) code = NL_GPU;
    if (code == NL_OK) code = mem_reg(ctx, back, size, flags | NIXL_LIKE_FORCE, &back_memh);
    if (code == NL_OK) code = rma(w, ep, 0, back, back_memh, size, raddr, rkey, fd);
    if (code == NL_OK)
      code = check_device(g, back, size, 1, "the get (what the put wrote), in this initiator's device memory");
    if (send_msg(fd, &code, sizeof code) != 0) {
      SAY("peer failure: cannot tell the target");
      code = NL_PEER;
    } else {
      uint64_t n;
      int32_t *theirs = recv_msg(fd, &n, w, "the target's check of the put");
      if (!theirs) {
        code = NL_PEER;
      } else {
        SAY("the target checked the put: code %d", *theirs);
        if (code == NL_OK) code = *theirs;
        free(theirs);
      }
    }
    rc = code;
    if (rkey) ucp_rkey_destroy(rkey);
    if (ep) {
      ucp_request_param_t cp;
      memset(&cp, 0, sizeof cp);
      cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
      wait_req(w, ucp_ep_close_nbx(ep, &cp), fd);
    }
  }

out:
  if (back_memh) ucp_mem_unmap(ctx, back_memh);
  if (memh) ucp_mem_unmap(ctx, memh);
  if (back) g->release(back);
  if (buf) g->release(buf);
  ucp_worker_destroy(w);
  ucp_cleanup(ctx);
  SAY("result: %s", nixl_like_code_name(rc));
  return rc;
}

__attribute__((visibility("default"))) const char *nixl_like_code_name(int code) {
  switch (code) {
  case NL_OK: return "registered and moved, data checked";
  case NL_USAGE: return "usage";
  case NL_INIT: return "no UCX context (ucp_init failed)";
  case NL_MEM_MAP: return "ucp_mem_map failed";
  case NL_DETECTED_AS_HOST: return "registration refused: VRAM memory is detected as host by UCX";
  case NL_TRANSFER: return "transfer failed";
  case NL_DATA: return "data wrong";
  case NL_PEER: return "peer failure";
  case NL_GPU: return "GPU driver failure";
  default: return "unknown";
  }
}

__attribute__((visibility("default"))) int nixl_like_run(const char *role, int fd, size_t size, int flags,
                                                         const char *gpu) {
  int initiator = role && !strcmp(role, "initiator");
  if (!role || (!initiator && strcmp(role, "target")) || size == 0) return NL_USAGE;
  g_role = initiator ? "initiator" : "target";
  gpu_t g;
  if (!gpu || !*gpu) gpu = "ze";
  if (!strcmp(gpu, "ze") ? ze_open(&g) : !strcmp(gpu, "cuda") ? cu_open(&g) : (SAY("unknown GPU kind %s", gpu), -1))
    return NL_GPU;
  return run(initiator, fd, size, flags, &g);
}
