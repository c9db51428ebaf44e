/* A fake NVIDIA CUDA driver (libcuda.so.1) for the tests: UCX's CUDA module (libuct_cuda.so,
   libucm_cuda.so of UCX 1.22 as RAPIDS' libucx and NIXL's wheels ship it) loads it in place of
   NVIDIA's driver, so that cuda_copy comes up and moves device memory on a machine without a GPU.
   Written from the CUDA Driver API reference (docs.nvidia.com/cuda/cuda-driver-api) and from
   what UCX 1.22 calls (openucx/ucx src/uct/cuda, src/ucm/cuda). Its NVML companion is
   fake_nvml.c (libnvidia-ml.so.1).

   Use: put the directory holding this libcuda.so.1 and libnvidia-ml.so.1 first in
   LD_LIBRARY_PATH (the build puts both in <build>/tests/cuda/lib/).

   Variables (the fake's own, not CUDA's):
     FAKECUDA_DEVICES  how many GPUs, 0..8 (default 1). 0: a driver with no GPU (cuInit answers
                       CUDA_ERROR_NO_DEVICE, as NVIDIA's does). Anything else: one line on stderr
                       naming the variable, and cuInit answers CUDA_ERROR_UNKNOWN (a broken
                       driver, not an absent GPU).
     FAKECUDA_TRACE    a file to which a line is appended for each copy or fill the driver does
                       ("copy HtoD 4096", "copy DtoH ..", "copy DtoD ..", "copy HtoH ..",
                       "memset D 4096"), for each allocation ("alloc 4096", "alloc host 4096",
                       "free") and for each call this driver does not support ("unsupported
                       cuIpcGetMemHandle"; "unsupported NAME (cuGetProcAddress)" for a name it
                       does not have).
   GPU i: PCI 0000:(0x41+i):00.0, name "Fake NVIDIA GPU", UUID "FAKECUDA" followed by i,
   compute capability 9.0, 80 GiB.

   Device memory (cuMemAlloc) is memory THE HOST CANNOT READ OR WRITE: a load or store faults
   with SIGSEGV and process_vm_readv gets EFAULT (tests/common/fake_device_memory.c); only this
   driver's copies reach it. Host memory (cuMemAllocHost, cuMemHostAlloc) is ordinary memory.
   Streams and events complete at once (each copy is done when its call returns). Not supported
   (CUDA_ERROR_NOT_SUPPORTED, and a trace line): IPC handles, VMM, memory pools, managed
   memory; device attributes say so (VMM, pools, fabric handles, dma-buf, GPUDirect RDMA: 0).
   UCX 1.22 then brings up cuda_copy and cuda_ipc (no NVLink, no IPC handle) and moves device
   memory through cuda_copy.
   A pointer the driver does not know: cuPointerGetAttribute answers CUDA_ERROR_INVALID_VALUE,
   cuMemGetAddressRange CUDA_ERROR_NOT_FOUND, cuPointerGetAttributes success with zeros (as the
   API reference says); memory registered by cuMemHostRegister is typed host. Boolean pointer
   attributes are written as 4-byte unsigned ints (UCX reads them into uint32_t/int). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"

#define MAX_CTX_STACK 16

/* ------------------------------------------------------------------ tracing */
static int trace_fd = -2;
void fake_cuda_trace(const char *fmt, ...) {
  if (trace_fd == -2) {
    const char *path = getenv("FAKECUDA_TRACE");
    trace_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  if (trace_fd < 0) return;
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(trace_fd, line, (size_t)n); /* one write: lines from threads stay whole */
  (void)w;
}

/* ------------------------------------------------------------------ devices, contexts */
static struct {
  int initialized; /* 0 not yet; 1 ready; -1 failed (init_result says how) */
  CUresult init_result;
  int ndevices;
  struct fake_ctx primary[MAX_GPUS];
} drv;
static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread CUcontext ctx_stack[MAX_CTX_STACK];
static __thread int ctx_depth;

static CUresult setup(void) {
  int n = fake_gpu_count("fake libcuda");
  if (n < 0) return CUDA_ERROR_UNKNOWN;
  drv.ndevices = n;
  for (int i = 0; i < n; i++) drv.primary[i] = (struct fake_ctx){i, 0, (unsigned long long)i + 1, 0};
  return n ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

EXPORT CUresult cuInit(unsigned flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  if (!drv.initialized) {
    drv.init_result = setup();
    drv.initialized = drv.init_result == CUDA_SUCCESS ? 1 : -1;
  }
  pthread_mutex_unlock(&drv_lock);
  return drv.init_result;
}
CUresult fake_cuda_ready(void) {
  return drv.initialized == 1 ? CUDA_SUCCESS : drv.initialized ? drv.init_result : CUDA_ERROR_NOT_INITIALIZED;
}
#define NEED_DEVICE(d) \
  do { NEED_INIT(); if ((d) < 0 || (d) >= drv.ndevices) return CUDA_ERROR_INVALID_DEVICE; } while (0)
/* ... and the arguments it fills (CUDA checks the device first). */
#define NEED_DEVICE_AND(d, args_ok) \
  do { NEED_DEVICE(d); if (!(args_ok)) return CUDA_ERROR_INVALID_VALUE; } while (0)

EXPORT CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 12090;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  NEED_INIT();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = drv.ndevices;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  NEED_DEVICE_AND(ordinal, d);
  *d = ordinal;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  NEED_DEVICE_AND(d, name && len > 0);
  snprintf(name, (size_t)len, "Fake NVIDIA GPU");
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  NEED_DEVICE_AND(d, u);
  memcpy(u->bytes, "FAKECUDA\0\0\0\0\0\0\0", 16);
  u->bytes[15] = (char)d;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) { return cuDeviceGetUuid(u, d); }
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  NEED_DEVICE_AND(d, bytes);
  *bytes = 80ull << 30;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
  NEED_DEVICE_AND(d, v);
  switch (attribute) { /* CUdevice_attribute */
    case 1: *v = 1024; break;          /* MAX_THREADS_PER_BLOCK */
    case 10: *v = 32; break;           /* WARP_SIZE */
    case 16: *v = 132; break;          /* MULTIPROCESSOR_COUNT */
    case 33: *v = 0x41 + d; break;     /* PCI_BUS_ID */
    case 34: *v = 0; break;            /* PCI_DEVICE_ID (the slot) */
    case 50: *v = 0; break;            /* PCI_DOMAIN_ID */
    case 40: *v = 2; break;            /* ASYNC_ENGINE_COUNT */
    case 41: *v = 1; break;            /* UNIFIED_ADDRESSING */
    case 75: *v = 9; break;            /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = 0; break;            /* COMPUTE_CAPABILITY_MINOR */
    default: *v = 0; break;            /* VMM (102), pools (115), RDMA (116), dma-buf (124), ...: no */
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
  NEED_DEVICE_AND(d, id && len > 0);
  snprintf(id, (size_t)len, "00000000:%02X:00.0", 0x41 + d);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *id) {
  NEED_INIT();
  unsigned dom, bus, dev, fn;
  if (!d || !id || sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return CUDA_ERROR_INVALID_VALUE;
  if (dom || dev || fn || bus < 0x41 || (int)(bus - 0x41) >= drv.ndevices) return CUDA_ERROR_INVALID_DEVICE;
  *d = (int)(bus - 0x41);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
  NEED_DEVICE(a);
  NEED_DEVICE_AND(b, can);
  *can = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  NEED_DEVICE_AND(d, c);
  pthread_mutex_lock(&drv_lock);
  drv.primary[d].retained++;
  pthread_mutex_unlock(&drv_lock);
  *c = &drv.primary[d];
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  NEED_DEVICE(d);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&drv_lock);
  if (drv.primary[d].retained > 0) drv.primary[d].retained--;
  else r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&drv_lock);
  return r;
}
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active) {
  NEED_DEVICE_AND(d, flags && active);
  *flags = drv.primary[d].flags;
  *active = drv.primary[d].retained > 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned flags) {
  NEED_DEVICE(d);
  drv.primary[d].flags = flags;
  return CUDA_SUCCESS;
}

static int is_ctx(CUcontext c) { return c >= drv.primary && c < drv.primary + drv.ndevices; }
CUcontext fake_cuda_current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }
EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
  NEED_INIT();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = fake_cuda_current();
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  NEED_INIT();
  if (c && !is_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx_depth) {
    if (c) ctx_stack[ctx_depth++] = c;
  } else if (c) {
    ctx_stack[ctx_depth - 1] = c;
  } else {
    ctx_depth--;
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) {
  NEED_INIT();
  if (!is_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx_depth == MAX_CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx_stack[ctx_depth++] = c;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c) {
  NEED_INIT();
  if (!ctx_depth) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = ctx_stack[--ctx_depth];
  if (c) *c = top;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
  NEED_INIT();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  *d = fake_cuda_current()->device;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetId(CUcontext c, unsigned long long *id) {
  NEED_INIT();
  if (!c) c = fake_cuda_current();
  if (!is_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  *id = c->id;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetFlags(unsigned *flags) {
  NEED_INIT();
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = fake_cuda_current()->flags;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetFlags(unsigned flags) {
  NEED_INIT();
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda_current()->flags = flags;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSynchronize(void) {
  NEED_INIT();
  return fake_cuda_current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}


/* ------------------------------------------------------------------ errors, entry points */
static const struct { CUresult code; const char *name, *text; } errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
static CUresult error_lookup(CUresult code, const char **out, int text) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == code) {
      *out = text ? errors[i].text : errors[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuGetErrorString(CUresult code, const char **s) { return error_lookup(code, s, 1); }
EXPORT CUresult cuGetErrorName(CUresult code, const char **s) { return error_lookup(code, s, 0); }

/* This library's own exported function of that name, the newest "_vN" first (cuMemAlloc is
   cuMemAlloc_v2), as cuGetProcAddress hands out the entry point of the API version asked for. */
static void *own_symbol(const char *name) {
  static void *self;
  Dl_info mine, where;
  if (!dladdr((void *)own_symbol, &mine)) return NULL;
  if (!self && !(self = dlopen(mine.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) return NULL;
  char versioned[128];
  void *f = NULL;
  for (int v = 3; v >= 1 && !f; v--) {
    if (v > 1) snprintf(versioned, sizeof versioned, "%s_v%d", name, v);
    f = dlsym(self, v > 1 ? versioned : name);
  }
  /* Only this library's own functions: dlsym on a handle searches its dependencies too. */
  return f && dladdr(f, &where) && where.dli_fbase == mine.dli_fbase ? f : NULL;
}
EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int version, unsigned long long flags,
                                    int *status /* CUdriverProcAddressQueryResult */) {
  (void)version;
  (void)flags;
  if (!name || !fn) return CUDA_ERROR_INVALID_VALUE;
  *fn = strncmp(name, "cu", 2) == 0 ? own_symbol(name) : NULL;
  if (status) *status = *fn ? 0 /* SUCCESS */ : 1 /* SYMBOL_NOT_FOUND */;
  if (!*fn) fake_cuda_trace("unsupported %s (cuGetProcAddress)", name);
  return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuGetProcAddress(const char *name, void **fn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(name, fn, version, flags, NULL);
}
