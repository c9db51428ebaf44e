/* The fake CUDA driver's memory: device allocations hidden from the host, host allocations,
   registered host ranges, pointer attributes, and (below) the copies, streams and events.
   See fake_cuda.c for what the driver is and its variables. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "fake_device_memory.h"

#define MAX_HOST_REGS 256
enum { KIND_DEVICE = CU_MEMORYTYPE_DEVICE, KIND_HOST = CU_MEMORYTYPE_HOST };
static pthread_mutex_t regs_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ memory */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  NEED_INIT();
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
  void *out;
  if (fake_mem_alloc(size, 0, 1, KIND_DEVICE, fake_cuda_current(), &out) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  fake_cuda_trace("alloc %zu", size);
  *p = (CUdeviceptr)(uintptr_t)out;
  return CUDA_SUCCESS;
}
static CUresult host_alloc(void **p, size_t size) {
  NEED_INIT();
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
  if (fake_mem_alloc(size, 0, 0, KIND_HOST, fake_cuda_current(), p) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  fake_cuda_trace("alloc host %zu", size);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAllocHost_v2(void **p, size_t size) { return host_alloc(p, size); }
EXPORT CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) { (void)flags; return host_alloc(p, size); }
static CUresult mem_free(void *p, int kind) {
  NEED_INIT();
  fake_alloc_t a;
  if (!p) return CUDA_SUCCESS;
  if (!fake_mem_find(p, &a) || a.base != (char *)p || a.kind != kind) return CUDA_ERROR_INVALID_VALUE;
  fake_mem_free(p, NULL);
  fake_cuda_trace("free");
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return mem_free((void *)(uintptr_t)p, KIND_DEVICE); }
EXPORT CUresult cuMemFreeHost(void *p) { return mem_free(p, KIND_HOST); }

/* Host ranges registered with cuMemHostRegister (page-locked memory, as the driver sees it). */
static struct { char *base; size_t size; } host_regs[MAX_HOST_REGS];
static int find_host_reg(const void *p) {
  for (int i = 0; i < MAX_HOST_REGS; i++)
    if (host_regs[i].base && (const char *)p >= host_regs[i].base && (const char *)p < host_regs[i].base + host_regs[i].size)
      return i;
  return -1;
}
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
  NEED_INIT();
  (void)flags;
  if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&regs_lock);
  if (find_host_reg(p) >= 0) r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  for (int i = 0; r == CUDA_ERROR_OUT_OF_MEMORY && i < MAX_HOST_REGS; i++)
    if (!host_regs[i].base) {
      host_regs[i].base = p;
      host_regs[i].size = size;
      r = CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&regs_lock);
  return r;
}
EXPORT CUresult cuMemHostUnregister(void *p) {
  NEED_INIT();
  CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  pthread_mutex_lock(&regs_lock);
  int i = find_host_reg(p);
  if (i >= 0 && host_regs[i].base == (char *)p) {
    host_regs[i].base = NULL;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&regs_lock);
  return r;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  NEED_INIT();
  fake_alloc_t a;
  if (!fake_mem_find((void *)(uintptr_t)p, &a)) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = (CUdeviceptr)(uintptr_t)a.base;
  if (size) *size = a.size;
  return CUDA_SUCCESS;
}

/* One pointer attribute (CUpointer_attribute); 1 when p is no memory of this driver's. */
static CUresult pointer_attribute(void *data, int attribute, CUdeviceptr p, int *unknown) {
  fake_alloc_t a;
  int ours = fake_mem_find((void *)(uintptr_t)p, &a);
  int host_reg = !ours && find_host_reg((void *)(uintptr_t)p) >= 0;
  *unknown = !ours && !host_reg;
  if (*unknown) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = ours ? (CUcontext)a.owner : NULL;
  switch (attribute) {
    case 1: *(CUcontext *)data = ctx; break;                                        /* CONTEXT */
    case 2: *(unsigned *)data = ours ? (unsigned)a.kind : CU_MEMORYTYPE_HOST; break; /* MEMORY_TYPE */
    case 3: *(CUdeviceptr *)data = p; break;                                         /* DEVICE_POINTER */
    case 4: *(void **)data = ours && a.kind == KIND_DEVICE ? NULL : (void *)(uintptr_t)p; break; /* HOST_POINTER */
    case 6: *(unsigned *)data = 1; break;                                            /* SYNC_MEMOPS */
    case 7: *(unsigned long long *)data = ours ? a.id : 0; break;                    /* BUFFER_ID */
    case 8: *(unsigned *)data = 0; break;                                            /* IS_MANAGED */
    case 9: *(int *)data = ctx ? ctx->device : -1; break;                            /* DEVICE_ORDINAL */
    case 10: *(unsigned *)data = 0; break;                                           /* IS_LEGACY_CUDA_IPC_CAPABLE */
    case 11: *(CUdeviceptr *)data = ours ? (CUdeviceptr)(uintptr_t)a.base : p; break; /* RANGE_START_ADDR */
    case 12: *(size_t *)data = ours ? a.size : 0; break;                             /* RANGE_SIZE */
    case 13: *(unsigned *)data = 1; break;                                           /* MAPPED */
    case 14: *(unsigned long long *)data = 0; break;                                 /* ALLOWED_HANDLE_TYPES */
    case 15: *(unsigned *)data = 0; break;                                           /* IS_GPU_DIRECT_RDMA_CAPABLE */
    case 17: *(void **)data = NULL; break;                                           /* MEMPOOL_HANDLE */
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
  NEED_INIT();
  int unknown;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  return pointer_attribute(data, attribute, p, &unknown);
}
/* Unlike cuPointerGetAttribute, a pointer the driver does not know is no error here: each
   attribute reads as zero (the CUDA Driver API reference says so). */
EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attributes, void **data, CUdeviceptr p) {
  NEED_INIT();
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    int unknown;
    CUresult r = pointer_attribute(data[i], attributes[i], p, &unknown);
    if (r == CUDA_SUCCESS) continue;
    if (!unknown) return r;
    switch (attributes[i]) { /* zero at each attribute's own width */
      case 1: case 3: case 4: case 7: case 11: case 12: case 14: case 17:
        *(unsigned long long *)data[i] = 0; break;
      case 9: *(int *)data[i] = -2; break; /* CU_DEVICE_INVALID */
      default: *(unsigned *)data[i] = 0; break;
    }
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuPointerSetAttribute(const void *value, int attribute, CUdeviceptr p) {
  NEED_INIT();
  fake_alloc_t a;
  if (!value || attribute != 6 /* SYNC_MEMOPS */) return CUDA_ERROR_INVALID_VALUE;
  return fake_mem_find((void *)(uintptr_t)p, &a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ copies, fills */
/* Where this driver's copy engine reaches [p, p+n): the driver-side pages of its allocations,
   or the program's own memory; NULL for a range that runs past the end of an allocation. */
static void *reach(CUdeviceptr p, size_t n, int *device) {
  fake_alloc_t a;
  *device = fake_mem_find((void *)(uintptr_t)p, &a) && a.kind == KIND_DEVICE;
  return fake_mem_reach((void *)(uintptr_t)p, n);
}
static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  NEED_INIT();
  if (!n) return CUDA_SUCCESS;
  int dst_dev, src_dev;
  void *to = reach(dst, n, &dst_dev);
  const void *from = reach(src, n, &src_dev);
  if (!to || !from || !dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memmove(to, from, n);
  fake_cuda_trace("copy %cto%c %zu", src_dev ? 'D' : 'H', dst_dev ? 'D' : 'H', n);
  return CUDA_SUCCESS;
}
#define HOST(p) ((CUdeviceptr)(uintptr_t)(p))
EXPORT CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(d, s, n); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return copy(d, s, n); }
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return copy(d, HOST(s), n); }
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return copy(HOST(d), s, n); }
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(d, s, n); }
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { (void)st; return copy(d, HOST(s), n); }
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return copy(HOST(d), s, n); }
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return copy(d, s, n); }
static CUresult fill(CUdeviceptr dst, const void *pattern, size_t width, size_t count) {
  NEED_INIT();
  int dev;
  char *to = reach(dst, width * count, &dev);
  if (!to || !dst) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) memcpy(to + i * width, pattern, width);
  fake_cuda_trace("memset %c %zu", dev ? 'D' : 'H', width * count);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return fill(d, &v, 1, n); }
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { return fill(d, &v, 4, n); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) { (void)st; return fill(d, &v, 1, n); }
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st) { (void)st; return fill(d, &v, 4, n); }

/* ------------------------------------------------------------------ streams, events */
/* Work completes when it is issued: a stream is always idle, an event always reached. */
#define STREAM_MAGIC 0x4643535452ull /* "FCSTR" */
#define EVENT_MAGIC 0x464345564eull  /* "FCEVN" */
struct fake_stream { unsigned long long magic; unsigned flags; };
struct fake_event { unsigned long long magic; unsigned flags; };
static int is_stream(CUstream s) { return !s || s == (CUstream)1 || s == (CUstream)2 || s->magic == STREAM_MAGIC; }
static int is_event(CUevent e) { return e && e->magic == EVENT_MAGIC; }

/* A stream or an event (the same two fields): made in the current context, freed by its destroy. */
static CUresult new_object(void **out, size_t size, unsigned long long magic, unsigned flags) {
  NEED_INIT();
  if (!fake_cuda_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  struct fake_stream *o = malloc(size);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  *o = (struct fake_stream){magic, flags};
  *out = o;
  return CUDA_SUCCESS;
}
static CUresult free_object(void *o, int valid) {
  NEED_INIT();
  if (!valid) return CUDA_ERROR_INVALID_HANDLE;
  ((struct fake_stream *)o)->magic = 0;
  free(o);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  return new_object((void **)s, sizeof **s, STREAM_MAGIC, flags);
}
EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority) {
  (void)priority;
  return cuStreamCreate(s, flags);
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  return free_object(s, s && is_stream(s) && s != (CUstream)1 && s != (CUstream)2);
}
EXPORT CUresult cuStreamSynchronize(CUstream s) { NEED_INIT(); return is_stream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
EXPORT CUresult cuStreamQuery(CUstream s) { return cuStreamSynchronize(s); }
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  NEED_INIT();
  (void)flags;
  return is_stream(s) && is_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuStreamAddCallback(CUstream s, CUstreamCallback fn, void *arg, unsigned flags) {
  NEED_INIT();
  if (!is_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!fn || flags) return CUDA_ERROR_INVALID_VALUE;
  fn(s, CUDA_SUCCESS, arg); /* the stream's work is done already */
  return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *arg) {
  NEED_INIT();
  if (!is_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  fn(arg);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
  return new_object((void **)e, sizeof **e, EVENT_MAGIC, flags);
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) { return free_object(e, is_event(e)); }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  NEED_INIT();
  return is_event(e) && is_stream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuEventQuery(CUevent e) { NEED_INIT(); return is_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
EXPORT CUresult cuEventSynchronize(CUevent e) { return cuEventQuery(e); }

/* ------------------------------------------------------------------ absent features */
/* IPC handles, virtual memory management, memory pools, managed memory: not in this GPU.
   Each answers CUDA_ERROR_NOT_SUPPORTED (any arguments) and leaves a trace line. */
/* The line is made in the entry point's own frame: its code then starts `push %rbp; mov %rsp,%rbp;
   sub $N,%rsp`, which UCM's bistro can patch (libucm_cuda hooks cuMemAllocManaged, cuMemMap,
   cuMemUnmap and stops at the first it cannot). */
#define NOT_SUPPORTED(name)                                  \
  EXPORT CUresult name() {                                   \
    char line[64];                                           \
    snprintf(line, sizeof line, "unsupported %s", #name);    \
    fake_cuda_trace("%s", line);                             \
    return CUDA_ERROR_NOT_SUPPORTED;                         \
  }
NOT_SUPPORTED(cuIpcGetMemHandle)
NOT_SUPPORTED(cuIpcOpenMemHandle_v2)
NOT_SUPPORTED(cuIpcCloseMemHandle)
NOT_SUPPORTED(cuMemAllocManaged)
NOT_SUPPORTED(cuMemRangeGetAttribute)
NOT_SUPPORTED(cuMemCreate)
NOT_SUPPORTED(cuMemRelease)
NOT_SUPPORTED(cuMemMap)
NOT_SUPPORTED(cuMemUnmap)
NOT_SUPPORTED(cuMemSetAccess)
NOT_SUPPORTED(cuMemAddressReserve)
NOT_SUPPORTED(cuMemAddressFree)
NOT_SUPPORTED(cuMemGetAllocationGranularity)
NOT_SUPPORTED(cuMemGetAllocationPropertiesFromHandle)
NOT_SUPPORTED(cuMemRetainAllocationHandle)
NOT_SUPPORTED(cuMemExportToShareableHandle)
NOT_SUPPORTED(cuMemImportFromShareableHandle)
NOT_SUPPORTED(cuMemPoolDestroy)
NOT_SUPPORTED(cuMemPoolExportPointer)
NOT_SUPPORTED(cuMemPoolExportToShareableHandle)
NOT_SUPPORTED(cuMemPoolImportFromShareableHandle)
NOT_SUPPORTED(cuMemPoolImportPointer)
NOT_SUPPORTED(cuMemPoolSetAccess)
