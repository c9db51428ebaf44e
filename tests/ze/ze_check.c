/* ze_check: asks the Level Zero loader (Debian's libze1) what a program sees of the GPU, for the
   fake driver's tests (and for a real Intel GPU, the same way). One mode per run:
     devices       each GPU: index, name, vendor:device, PCI address (zeDevicePciGetPropertiesExt)
     roundtrip     device, host and shared allocations: zeMemGetAllocProperties' type and
                   zeMemGetAddressRange on an inner pointer; a pattern written through an immediate
                   list's copy and fill and a regular list on a queue, read back through the driver
     touch-device  reads a device allocation with a host load: a real GPU's VRAM faults (SIGSEGV)
     write-device  writes to it with a host store: faults the same way
     touch-host    the control: a host allocation read and written by the host
     vm-readv      process_vm_readv of this process's own device memory (what UCX's cma does):
                   EFAULT, as for VRAM
   Prints what it saw on stdout; exits 0 when the mode's expectation held, 1 when not, 2 when Level
   Zero has no GPU. */
#define _GNU_SOURCE
#include <errno.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static ze_driver_handle_t drv;
static ze_device_handle_t dev;
static ze_context_handle_t ctx;

#define CHECK(call)                                                          \
  do {                                                                       \
    ze_result_t rc_ = (call);                                                \
    if (rc_ != ZE_RESULT_SUCCESS) {                                          \
      printf("%s failed: 0x%x\n", #call, (unsigned)rc_);                     \
      return 1;                                                              \
    }                                                                        \
  } while (0)

static int init(void) {
  uint32_t n = 1;
  ze_result_t rc = zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (rc != ZE_RESULT_SUCCESS) {
    printf("zeInit: 0x%x (no Level Zero GPU driver answered)\n", (unsigned)rc);
    return 2;
  }
  if (zeDriverGet(&n, &drv) != ZE_RESULT_SUCCESS || n == 0) return printf("no driver\n"), 2;
  n = 1;
  if (zeDeviceGet(drv, &n, &dev) != ZE_RESULT_SUCCESS || n == 0) return printf("no device\n"), 2;
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  if (zeContextCreate(drv, &cd, &ctx) != ZE_RESULT_SUCCESS) return printf("no context\n"), 1;
  return 0;
}

static const char *type_name(ze_memory_type_t t) {
  switch (t) {
  case ZE_MEMORY_TYPE_HOST: return "host";
  case ZE_MEMORY_TYPE_DEVICE: return "device";
  case ZE_MEMORY_TYPE_SHARED: return "shared";
  default: return "unknown";
  }
}

static int devices(void) {
  uint32_t n = 0;
  CHECK(zeDeviceGet(drv, &n, NULL));
  ze_device_handle_t *all = calloc(n, sizeof *all);
  CHECK(zeDeviceGet(drv, &n, all));
  for (uint32_t i = 0; i < n; i++) {
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ze_pci_ext_properties_t pci = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
    CHECK(zeDeviceGetProperties(all[i], &p));
    CHECK(zeDevicePciGetPropertiesExt(all[i], &pci));
    printf("gpu %u: %s, %04x:%04x, type %s, pci %04x:%02x:%02x.%x\n", i, p.name, p.vendorId, p.deviceId,
           p.type == ZE_DEVICE_TYPE_GPU ? "gpu" : "other", pci.address.domain, pci.address.bus, pci.address.device,
           pci.address.function);
  }
  free(all);
  return 0;
}

static int roundtrip(void) {
  const size_t size = 1 << 20;
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *buf[3];
  CHECK(zeMemAllocDevice(ctx, &dd, size, 4096, dev, &buf[0]));
  CHECK(zeMemAllocHost(ctx, &hd, size, 4096, &buf[1]));
  CHECK(zeMemAllocShared(ctx, &dd, &hd, size, 4096, dev, &buf[2]));
  const char *names[3] = {"device", "host", "shared"};
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
  ze_command_list_handle_t imm, list;
  ze_command_queue_handle_t queue;
  CHECK(zeCommandListCreateImmediate(ctx, dev, &qd, &imm));
  CHECK(zeCommandListCreate(ctx, dev, &ld, &list));
  CHECK(zeCommandQueueCreate(ctx, dev, &qd, &queue));
  unsigned char *in = malloc(size), *out = malloc(size);
  int bad = 0;
  for (int k = 0; k < 3; k++) {
    ze_memory_allocation_properties_t props = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    void *base = NULL;
    size_t len = 0;
    CHECK(zeMemGetAllocProperties(ctx, (char *)buf[k] + 100, &props, &owner));
    CHECK(zeMemGetAddressRange(ctx, (char *)buf[k] + 100, &base, &len));
    int ok = !strcmp(type_name(props.type), names[k]) && base == buf[k] && len == size &&
             (k == 1 ? owner == NULL : owner == dev);
    printf("%s allocation: zeMemGetAllocProperties type %s, zeMemGetAddressRange base %s length %zu: %s\n", names[k],
           type_name(props.type), base == buf[k] ? "= the allocation" : "WRONG", len, ok ? "ok" : "WRONG");
    bad |= !ok;
    for (size_t i = 0; i < size; i++) in[i] = (unsigned char)(i * 7 + k);
    /* immediate: host -> buffer, fill the last 4 KiB, buffer -> host */
    unsigned char pat = 0xa5;
    CHECK(zeCommandListAppendMemoryCopy(imm, buf[k], in, size, NULL, 0, NULL));
    CHECK(zeCommandListAppendMemoryFill(imm, (char *)buf[k] + size - 4096, &pat, 1, 4096, NULL, 0, NULL));
    memset(out, 0, size);
    CHECK(zeCommandListAppendMemoryCopy(imm, out, buf[k], size, NULL, 0, NULL));
    memset(in + size - 4096, 0xa5, 4096);
    ok = !memcmp(in, out, size);
    /* regular list on a queue: buffer -> host again */
    memset(out, 0, size);
    CHECK(zeCommandListAppendMemoryCopy(list, out, buf[k], size, NULL, 0, NULL));
    CHECK(zeCommandListClose(list));
    CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
    CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
    CHECK(zeCommandListReset(list));
    ok = ok && !memcmp(in, out, size);
    printf("%s allocation: copy and fill through the driver, read back: %s\n", names[k], ok ? "ok" : "WRONG");
    bad |= !ok;
  }
  ze_memory_allocation_properties_t props = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  CHECK(zeMemGetAllocProperties(ctx, in, &props, NULL));
  printf("malloc'd memory: zeMemGetAllocProperties type %s\n", type_name(props.type));
  bad |= props.type != ZE_MEMORY_TYPE_UNKNOWN;
  for (int k = 0; k < 3; k++) CHECK(zeMemFree(ctx, buf[k]));
  CHECK(zeMemGetAllocProperties(ctx, buf[0], &props, NULL));
  printf("freed device allocation: type %s\n", type_name(props.type));
  bad |= props.type != ZE_MEMORY_TYPE_UNKNOWN;
  CHECK(zeCommandListDestroy(imm));
  CHECK(zeCommandListDestroy(list));
  CHECK(zeCommandQueueDestroy(queue));
  CHECK(zeContextDestroy(ctx));
  return bad;
}

static int touch(int device, int write) {
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  volatile unsigned char *p;
  void *v;
  if (device)
    CHECK(zeMemAllocDevice(ctx, &dd, 4096, 4096, dev, &v));
  else
    CHECK(zeMemAllocHost(ctx, &hd, 4096, 4096, &v));
  p = v;
  printf("%s the %s allocation at %p with the host...\n", write ? "writing" : "reading", device ? "device" : "host", v);
  fflush(stdout);
  if (write)
    p[10] = 42;
  else
    printf("read %u\n", p[10]);
  printf("the host %s it\n", write ? "wrote" : "read");
  return device; /* reaching here is a failure for device memory */
}

static int vm_readv(void) {
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *v;
  char local[64];
  CHECK(zeMemAllocDevice(ctx, &dd, 4096, 4096, dev, &v));
  struct iovec l = {local, sizeof local}, r = {v, sizeof local};
  ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
  printf("process_vm_readv of device memory: %zd (%s)\n", n, n < 0 ? strerror(errno) : "read");
  return !(n < 0 && errno == EFAULT);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ze_check devices|roundtrip|touch-device|write-device|touch-host|vm-readv\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int rc = init();
  if (rc) return rc;
  const char *m = argv[1];
  if (!strcmp(m, "devices")) return devices();
  if (!strcmp(m, "roundtrip")) return roundtrip();
  if (!strcmp(m, "touch-device")) return touch(1, 0);
  if (!strcmp(m, "write-device")) return touch(1, 1);
  if (!strcmp(m, "touch-host")) return touch(0, 0) || touch(0, 1);
  if (!strcmp(m, "vm-readv")) return vm_readv();
  fprintf(stderr, "ze_check: unknown mode %s\n", m);
  return 2;
}
