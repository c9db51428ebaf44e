/* A fake Intel GPU for Level Zero: a driver library that Debian's real loader (libze1) loads
   through ZE_ENABLE_ALT_DRIVERS=/path/to/libze_fake_gpu.so, so that UCX's ze transport and
   ucx_perftest's ze allocator run against it as against a real GPU, with no GPU in the machine.

   What it is (measured needs: Debian's libze1 1.8.12 loader, UCX 1.22 src/uct/ze,
   src/ucm/ze, src/tools/perf/ze):
   - every DDI getter the loader asks for (ze, zes, zet; the "Exp" ones too), for API 1.x; each
     table slot this driver does not implement answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE and
     says so on stderr once (so a call UCX makes that the fake lacks is seen, not silently wrong);
   - one driver with GPU devices (vendor 0x8086, Data Center GPU Max-like), each with PCI
     properties (zeDevicePciGetPropertiesExt), memory and queue-group properties, no sub-devices;
   - contexts; device, host and shared allocations; zeMemGetAllocProperties and
     zeMemGetAddressRange for its own allocations (any of its contexts: the allocations belong to
     the driver, as in Intel's runtime), ZE_MEMORY_TYPE_UNKNOWN for anything else;
   - command queues and lists (regular and immediate) whose copies and fills the driver does.

   Device memory behaves like a real GPU's: THE HOST CANNOT READ OR WRITE IT. Each device
   allocation (tests/common/fake_device_memory.c) is a memfd mapped twice: PROT_NONE at the
   address handed out (a host load or store there faults with SIGSEGV; process_vm_readv of it fails with EFAULT), and read-write at a
   private address that only this driver's copies and fills use. So a program (or UCX) that
   treats device memory as host memory fails as it would on a real node, instead of silently
   working. Host and shared allocations are ordinary read-write memory, as on a real node.

   Variables (the fake's own, not Level Zero's):
     FAKEGPU_DEVICES  ','-list of the GPUs' PCI addresses (domain:bus:device.function), default
                      "0000:29:00.0" (one GPU); at most 8
     FAKEGPU_TRACE    a file to which every call is appended, one name a line (to count what a
                      program asked of the GPU) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "fake_device_memory.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 8
#define MAGIC_DRIVER 0x5a45445256ull /* "ZEDRV" */
#define MAGIC_DEVICE 0x5a45444556ull
#define MAGIC_CONTEXT 0x5a45435458ull
#define MAGIC_QUEUE 0x5a45515545ull
#define MAGIC_LIST 0x5a454c5354ull

/* ------------------------------------------------------------------ tracing */
static int trace_fd = -2;
static void trace(const char *what) {
  if (trace_fd == -2) {
    const char *path = getenv("FAKEGPU_TRACE");
    trace_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  if (trace_fd < 0) return;
  char line[128];
  size_t n = strlen(what);
  if (n > sizeof line - 2) n = sizeof line - 2;
  memcpy(line, what, n);
  line[n++] = '\n';
  ssize_t w = write(trace_fd, line, n); /* one write: lines from threads do not interleave */
  (void)w;
}
#define TRACE() trace(__func__ + 5) /* the Level Zero name, without "fake_" */
/* An entry point's first checks, in Level Zero's order: the handle, then the pointer it fills. */
#define ENTER_HANDLE(handle_ok)                                   \
  do {                                                            \
    TRACE();                                                      \
    if (!(handle_ok)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE; \
  } while (0)
#define ENTER(handle_ok, out)                                \
  do {                                                       \
    ENTER_HANDLE(handle_ok);                                 \
    if (!(out)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER; \
  } while (0)

/* ------------------------------------------------------------------ objects */
typedef struct {
  uint64_t magic;
  int index;
  ze_pci_address_ext_t pci;
} fake_device_t;

static struct {
  uint64_t magic;
  int ready;
  int ndevices;
  fake_device_t devices[MAX_GPUS];
} driver = {MAGIC_DRIVER, 0, 0, {{0}}};

typedef struct { uint64_t magic; } fake_context_t;

typedef enum { OP_COPY, OP_FILL } op_kind_t;
typedef struct {
  op_kind_t kind;
  void *dst;
  const void *src;
  size_t size;
  unsigned char pattern[128];
  size_t pattern_size;
} fake_op_t;

typedef struct {
  uint64_t magic;
  int immediate;
  int closed;
  size_t nops, cap;
  fake_op_t *ops;
} fake_list_t;

typedef struct { uint64_t magic; } fake_queue_t;

static int parse_pci(const char *s, ze_pci_address_ext_t *a) {
  unsigned d, b, dev, f;
  int used = 0;
  if (sscanf(s, "%x:%x:%x.%x%n", &d, &b, &dev, &f, &used) != 4) return -1;
  if (s[used] != '\0' && s[used] != ',') return -1;
  a->domain = d;
  a->bus = b;
  a->device = dev;
  a->function = f;
  return 0;
}

static ze_result_t setup(void) {
  if (driver.ready) return ZE_RESULT_SUCCESS;
  const char *list = getenv("FAKEGPU_DEVICES");
  if (!list || !*list) list = "0000:29:00.0";
  int n = 0;
  for (const char *p = list; *p && n < MAX_GPUS;) {
    fake_device_t *d = &driver.devices[n];
    if (parse_pci(p, &d->pci) != 0) {
      fprintf(stderr, "fake ze driver: FAKEGPU_DEVICES: '%s' is not a PCI address list (dddd:bb:dd.f,...)\n", list);
      return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    d->magic = MAGIC_DEVICE;
    d->index = n++;
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  driver.ndevices = n;
  driver.ready = 1;
  return ZE_RESULT_SUCCESS;
}

static fake_device_t *as_device(void *h) {
  fake_device_t *d = (fake_device_t *)h;
  return d && d->magic == MAGIC_DEVICE ? d : NULL;
}
static int is_driver(void *h) { return h == (void *)&driver; }
static int is_context(void *h) { return h && ((fake_context_t *)h)->magic == MAGIC_CONTEXT; }
static fake_list_t *as_list(void *h) {
  fake_list_t *l = (fake_list_t *)h;
  return l && l->magic == MAGIC_LIST ? l : NULL;
}
static int is_queue(void *h) { return h && ((fake_queue_t *)h)->magic == MAGIC_QUEUE; }

/* ------------------------------------------------------------------ unimplemented slots */
static ze_result_t unsupported(void) {
  static int said;
  void *caller = __builtin_return_address(0);
  Dl_info info;
  if (!said) {
    said = 1;
    if (caller && dladdr(caller, &info) && info.dli_sname)
      fprintf(stderr, "fake ze driver: a Level Zero call this fake does not implement, from %s\n", info.dli_sname);
    else
      fprintf(stderr, "fake ze driver: a Level Zero call this fake does not implement\n");
  }
  trace("unsupported");
  return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

/* Every slot of a DDI table that this driver left empty answers unsupported(). The tables are
   structs of function pointers only. */
static void fill_rest(void *table, size_t size) {
  void **slot = (void **)table;
  for (size_t i = 0; i < size / sizeof(void *); i++)
    if (!slot[i]) slot[i] = (void *)unsupported;
}

/* Level Zero's two-call list protocol for a list of n: a query (count 0, or no array) is told n;
   a fill gets at most n. 1: the caller fills *count entries. */
static int list_entries(uint32_t *count, const void *out, uint32_t n) {
  if (*count == 0 || !out) {
    *count = n;
    return 0;
  }
  if (*count > n) *count = n;
  return 1;
}

/* ------------------------------------------------------------------ global, driver */
static ze_result_t fake_zeInit(ze_init_flags_t flags) {
  TRACE();
  if (flags && !(flags & ZE_INIT_FLAG_GPU_ONLY)) return ZE_RESULT_ERROR_UNINITIALIZED; /* VPU only */
  return setup();
}

static ze_result_t fake_zeDriverGet(uint32_t *count, ze_driver_handle_t *out) {
  TRACE();
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (setup() != ZE_RESULT_SUCCESS) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (list_entries(count, out, 1)) out[0] = (ze_driver_handle_t)&driver;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetApiVersion(ze_driver_handle_t h, ze_api_version_t *v) {
  ENTER(is_driver(h), v);
  *v = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetProperties(ze_driver_handle_t h, ze_driver_properties_t *p) {
  ENTER(is_driver(h), p);
  memset(p->uuid.id, 0, sizeof p->uuid.id);
  memcpy(p->uuid.id, "ucxtls-fake-gpu", 15);
  p->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetIpcProperties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p) {
  ENTER(is_driver(h), p);
  p->flags = 0; /* no IPC: UCX 1.22 has no ze_ipc transport anyway */
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetExtensionProperties(ze_driver_handle_t h, uint32_t *count,
                                                       ze_driver_extension_properties_t *p) {
  (void)p;
  ENTER(is_driver(h), count);
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetExtensionFunctionAddress(ze_driver_handle_t h, const char *name, void **f) {
  TRACE();
  (void)name;
  if (!is_driver(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (f) *f = NULL;
  return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------------ devices */
static ze_result_t fake_zeDeviceGet(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *out) {
  ENTER(is_driver(h), count);
  if (list_entries(count, out, (uint32_t)driver.ndevices))
    for (uint32_t i = 0; i < *count; i++) out[i] = (ze_device_handle_t)&driver.devices[i];
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetSubDevices(ze_device_handle_t h, uint32_t *count, ze_device_handle_t *out) {
  (void)out;
  ENTER(as_device(h), count);
  *count = 0; /* flat: ZE_FLAT_DEVICE_HIERARCHY's view of a one-tile GPU */
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetProperties(ze_device_handle_t h, ze_device_properties_t *p) {
  fake_device_t *d = as_device(h);
  ENTER(d, p);
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5; /* Data Center GPU Max 1550 */
  p->flags = 0;
  p->subdeviceId = 0;
  p->coreClockRate = 1600;
  p->maxMemAllocSize = (uint64_t)64 << 30;
  p->maxHardwareContexts = 65536;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 8;
  p->physicalEUSimdWidth = 16;
  p->numEUsPerSubslice = 8;
  p->numSubslicesPerSlice = 64;
  p->numSlices = 1;
  p->timerResolution = 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 32;
  memset(p->uuid.id, 0, sizeof p->uuid.id);
  p->uuid.id[0] = 0x86;
  p->uuid.id[1] = 0x80;
  p->uuid.id[2] = 0xd5;
  p->uuid.id[3] = 0x0b;
  p->uuid.id[8] = (uint8_t)d->pci.bus;
  p->uuid.id[9] = (uint8_t)d->pci.device;
  p->uuid.id[15] = (uint8_t)d->index;
  snprintf(p->name, sizeof p->name, "Intel(R) Data Center GPU Max 1550 (ucxtls fake GPU %d)", d->index);
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDevicePciGetPropertiesExt(ze_device_handle_t h, ze_pci_ext_properties_t *p) {
  fake_device_t *d = as_device(h);
  ENTER(d, p);
  p->address = d->pci;
  p->maxSpeed.genVersion = 5;
  p->maxSpeed.width = 16;
  p->maxSpeed.maxBandwidth = 63000000000ll;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t *count,
                                                    ze_device_memory_properties_t *p) {
  ENTER(as_device(h), count);
  if (!list_entries(count, p, 1)) return ZE_RESULT_SUCCESS;
  p->flags = 0;
  p->maxClockRate = 3200;
  p->maxBusWidth = 8192;
  p->totalSize = (uint64_t)128 << 30;
  snprintf(p->name, sizeof p->name, "HBM");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetMemoryAccessProperties(ze_device_handle_t h, ze_device_memory_access_properties_t *p) {
  ENTER(as_device(h), p);
  p->hostAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
  p->deviceAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
  p->sharedSingleDeviceAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
  p->sharedCrossDeviceAllocCapabilities = 0;
  p->sharedSystemAllocCapabilities = 0;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t h, uint32_t *count,
                                                               ze_command_queue_group_properties_t *p) {
  ENTER(as_device(h), count);
  if (!list_entries(count, p, 1)) return ZE_RESULT_SUCCESS;
  p->flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  p->maxMemoryFillPatternSize = 128;
  p->numQueues = 1;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceCanAccessPeer(ze_device_handle_t a, ze_device_handle_t b, ze_bool_t *v) {
  TRACE();
  if (!as_device(a) || !as_device(b)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!v) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *v = a == b;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetStatus(ze_device_handle_t h) {
  TRACE();
  return as_device(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

/* ------------------------------------------------------------------ contexts */
static ze_result_t fake_zeContextCreate(ze_driver_handle_t h, const ze_context_desc_t *desc, ze_context_handle_t *out) {
  (void)desc;
  ENTER(is_driver(h), out);
  fake_context_t *c = calloc(1, sizeof *c);
  if (!c) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  c->magic = MAGIC_CONTEXT;
  *out = (ze_context_handle_t)c;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeContextCreateEx(ze_driver_handle_t h, const ze_context_desc_t *desc, uint32_t n,
                                          ze_device_handle_t *devices, ze_context_handle_t *out) {
  (void)n;
  (void)devices;
  return fake_zeContextCreate(h, desc, out);
}

static ze_result_t fake_zeContextDestroy(ze_context_handle_t h) {
  ENTER_HANDLE(is_context(h));
  ((fake_context_t *)h)->magic = 0;
  free(h);
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeContextGetStatus(ze_context_handle_t h) {
  TRACE();
  return is_context(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

/* ------------------------------------------------------------------ memory */
/* Device allocations are hidden from the host (tests/common/fake_device_memory.c); host and
   shared ones are ordinary memory. */
static ze_result_t allocate(ze_context_handle_t ctx, ze_memory_type_t type, fake_device_t *device, size_t size,
                            size_t alignment, void **out) {
  if (!is_context(ctx)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  int hidden = type == ZE_MEMORY_TYPE_DEVICE;
  if (fake_mem_alloc(size, alignment, hidden, type, device, out) != 0)
    return hidden ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeMemAllocDevice(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *desc, size_t size,
                                         size_t alignment, ze_device_handle_t dev, void **out) {
  TRACE();
  (void)desc;
  fake_device_t *d = as_device(dev);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return allocate(ctx, ZE_MEMORY_TYPE_DEVICE, d, size, alignment, out);
}

static ze_result_t fake_zeMemAllocHost(ze_context_handle_t ctx, const ze_host_mem_alloc_desc_t *desc, size_t size,
                                       size_t alignment, void **out) {
  TRACE();
  (void)desc;
  return allocate(ctx, ZE_MEMORY_TYPE_HOST, NULL, size, alignment, out);
}

static ze_result_t fake_zeMemAllocShared(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *ddesc,
                                         const ze_host_mem_alloc_desc_t *hdesc, size_t size, size_t alignment,
                                         ze_device_handle_t dev, void **out) {
  TRACE();
  (void)ddesc;
  (void)hdesc;
  fake_device_t *d = NULL;
  if (dev && !(d = as_device(dev))) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return allocate(ctx, ZE_MEMORY_TYPE_SHARED, d, size, alignment, out);
}

static ze_result_t fake_zeMemFree(ze_context_handle_t ctx, void *p) {
  ENTER(is_context(ctx), p);
  if (fake_mem_free(p, NULL) != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeMemGetAllocProperties(ze_context_handle_t ctx, const void *p,
                                                ze_memory_allocation_properties_t *props, ze_device_handle_t *dev) {
  ENTER(is_context(ctx), props);
  fake_alloc_t a;
  if (!p || !fake_mem_find(p, &a)) {
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    if (dev) *dev = NULL;
    return ZE_RESULT_SUCCESS;
  }
  props->type = (ze_memory_type_t)a.kind;
  props->id = a.id;
  props->pageSize = fake_mem_page_size();
  if (dev) *dev = (ze_device_handle_t)a.owner;
  /* A dma-buf export request (ze_external_memory_export_fd_t in pNext) is left as it came: this
     GPU has no dma-buf, and there is no RDMA device here to import one. */
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeMemGetAddressRange(ze_context_handle_t ctx, const void *p, void **base, size_t *size) {
  ENTER_HANDLE(is_context(ctx));
  fake_alloc_t a;
  if (!p || !fake_mem_find(p, &a)) return ZE_RESULT_ERROR_NOT_AVAILABLE;
  if (base) *base = a.base;
  if (size) *size = a.size;
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ the copy engine */
static ze_result_t run_op(const fake_op_t *op) {
  void *dst = fake_mem_reach(op->dst, op->size);
  if (!dst) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (op->kind == OP_COPY) {
    trace("gpu copy");
    const void *src = fake_mem_reach(op->src, op->size);
    if (!src) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    memmove(dst, src, op->size);
  } else {
    trace("gpu fill");
    for (size_t i = 0; i < op->size; i += op->pattern_size) {
      size_t n = op->size - i < op->pattern_size ? op->size - i : op->pattern_size;
      memcpy((char *)dst + i, op->pattern, n);
    }
  }
  return ZE_RESULT_SUCCESS;
}

static ze_result_t list_add(fake_list_t *l, const fake_op_t *op) {
  if (l->immediate) return run_op(op);
  if (l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (l->nops == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    fake_op_t *grown = realloc(l->ops, cap * sizeof *grown);
    if (!grown) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->ops = grown;
    l->cap = cap;
  }
  l->ops[l->nops++] = *op;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t new_list(ze_context_handle_t ctx, ze_device_handle_t dev, int immediate, ze_command_list_handle_t *out) {
  if (!is_context(ctx) || !as_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fake_list_t *l = calloc(1, sizeof *l);
  if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->magic = MAGIC_LIST;
  l->immediate = immediate;
  *out = (ze_command_list_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListCreate(ze_context_handle_t ctx, ze_device_handle_t dev,
                                            const ze_command_list_desc_t *desc, ze_command_list_handle_t *out) {
  TRACE();
  (void)desc;
  return new_list(ctx, dev, 0, out);
}

static ze_result_t fake_zeCommandListCreateImmediate(ze_context_handle_t ctx, ze_device_handle_t dev,
                                                     const ze_command_queue_desc_t *desc, ze_command_list_handle_t *out) {
  TRACE();
  (void)desc;
  return new_list(ctx, dev, 1, out);
}

static ze_result_t fake_zeCommandListDestroy(ze_command_list_handle_t h) {
  fake_list_t *l = as_list(h);
  ENTER_HANDLE(l);
  l->magic = 0;
  free(l->ops);
  free(l);
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListClose(ze_command_list_handle_t h) {
  fake_list_t *l = as_list(h);
  ENTER_HANDLE(l);
  l->closed = 1;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListReset(ze_command_list_handle_t h) {
  fake_list_t *l = as_list(h);
  ENTER_HANDLE(l);
  l->closed = 0;
  l->nops = 0;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t check_events(ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
  (void)wait;
  /* This GPU has no events (UCX's ze transport and perftest use none): refuse rather than ignore. */
  return signal || nwait ? ZE_RESULT_ERROR_UNSUPPORTED_FEATURE : ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListAppendMemoryCopy(ze_command_list_handle_t h, void *dst, const void *src, size_t size,
                                                      ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
  fake_list_t *l = as_list(h);
  ENTER_HANDLE(l);
  if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_result_t rc = check_events(signal, nwait, wait);
  if (rc != ZE_RESULT_SUCCESS) return rc;
  fake_op_t op = {.kind = OP_COPY, .dst = dst, .src = src, .size = size};
  return list_add(l, &op);
}

static ze_result_t fake_zeCommandListAppendMemoryFill(ze_command_list_handle_t h, void *dst, const void *pattern,
                                                      size_t pattern_size, size_t size, ze_event_handle_t signal,
                                                      uint32_t nwait, ze_event_handle_t *wait) {
  fake_list_t *l = as_list(h);
  ENTER_HANDLE(l);
  if (!dst || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fake_op_t op = {.kind = OP_FILL, .dst = dst, .size = size, .pattern_size = pattern_size};
  if (pattern_size == 0 || pattern_size > sizeof op.pattern || (pattern_size & (pattern_size - 1)))
    return ZE_RESULT_ERROR_INVALID_SIZE;
  ze_result_t rc = check_events(signal, nwait, wait);
  if (rc != ZE_RESULT_SUCCESS) return rc;
  memcpy(op.pattern, pattern, pattern_size);
  return list_add(l, &op);
}

static ze_result_t fake_zeCommandListAppendBarrier(ze_command_list_handle_t h, ze_event_handle_t signal, uint32_t nwait,
                                                   ze_event_handle_t *wait) {
  ENTER_HANDLE(as_list(h));
  return check_events(signal, nwait, wait); /* in order anyway */
}

static ze_result_t fake_zeCommandQueueCreate(ze_context_handle_t ctx, ze_device_handle_t dev,
                                             const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *out) {
  TRACE();
  (void)desc;
  if (!is_context(ctx) || !as_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fake_queue_t *q = calloc(1, sizeof *q);
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  q->magic = MAGIC_QUEUE;
  *out = (ze_command_queue_handle_t)q;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandQueueDestroy(ze_command_queue_handle_t h) {
  ENTER_HANDLE(is_queue(h));
  ((fake_queue_t *)h)->magic = 0;
  free(h);
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t h, uint32_t n,
                                                          ze_command_list_handle_t *lists, ze_fence_handle_t fence) {
  ENTER(is_queue(h), lists);
  if (fence) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  for (uint32_t i = 0; i < n; i++) {
    fake_list_t *l = as_list(lists[i]);
    if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!l->closed || l->immediate) return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    for (size_t k = 0; k < l->nops; k++) {
      ze_result_t rc = run_op(&l->ops[k]);
      if (rc != ZE_RESULT_SUCCESS) return rc;
    }
  }
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandQueueSynchronize(ze_command_queue_handle_t h, uint64_t timeout) {
  TRACE();
  (void)timeout;
  return is_queue(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE; /* done at execution */
}

/* ------------------------------------------------------------------ the DDI getters */
/* The loader asks each getter for its API version (1.4 for libze1 1.8.12): any 1.x is ours. */
#define CHECK_VERSION(v, t)                                                                 \
  do {                                                                                      \
    if (!(t)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                                  \
    if (ZE_MAJOR_VERSION(v) != 1) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;               \
  } while (0)

/* A getter: every slot answers unsupported() (fill_rest) but those `ours` sets, a comma list of
   SET(Object, Function): pfnFunction = fake_zeObjectFunction. */
#define TABLE(getter, type, ours)                          \
  EXPORT ze_result_t getter(ze_api_version_t v, type *t) { \
    CHECK_VERSION(v, t);                                   \
    memset(t, 0, sizeof *t);                               \
    (void)(ours);                                          \
    fill_rest(t, sizeof *t);                               \
    return ZE_RESULT_SUCCESS;                              \
  }
#define SET(object, fn) (t->pfn##fn = fake_ze##object##fn)
/* Tables this GPU has nothing for (images, kernels, events, fences, sysman, tools...): every slot
   answers unsupported(). The loader requires the getters to exist and succeed. */
#define EMPTY_TABLE(getter, type) TABLE(getter, type, 0)

TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t, (t->pfnInit = fake_zeInit))
TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t,
      (SET(Driver, Get), SET(Driver, GetApiVersion), SET(Driver, GetProperties), SET(Driver, GetIpcProperties),
       SET(Driver, GetExtensionProperties), SET(Driver, GetExtensionFunctionAddress)))
TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t,
      (SET(Device, Get), SET(Device, GetSubDevices), SET(Device, GetProperties), SET(Device, GetMemoryProperties),
       SET(Device, GetMemoryAccessProperties), SET(Device, GetCommandQueueGroupProperties),
       SET(Device, CanAccessPeer), SET(Device, GetStatus), SET(Device, PciGetPropertiesExt)))
TABLE(zeGetContextProcAddrTable, ze_context_dditable_t,
      (SET(Context, Create), SET(Context, CreateEx), SET(Context, Destroy), SET(Context, GetStatus)))
TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t,
      (SET(CommandQueue, Create), SET(CommandQueue, Destroy), SET(CommandQueue, ExecuteCommandLists),
       SET(CommandQueue, Synchronize)))
TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t,
      (SET(CommandList, Create), SET(CommandList, CreateImmediate), SET(CommandList, Destroy),
       SET(CommandList, Close), SET(CommandList, Reset), SET(CommandList, AppendBarrier),
       SET(CommandList, AppendMemoryCopy), SET(CommandList, AppendMemoryFill)))
TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t,
      (SET(Mem, AllocShared), SET(Mem, AllocDevice), SET(Mem, AllocHost), SET(Mem, Free),
       SET(Mem, GetAllocProperties), SET(Mem, GetAddressRange)))

EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
EMPTY_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
EMPTY_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t)
EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
EMPTY_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)

EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
