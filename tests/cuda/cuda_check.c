/* cuda_check: what a CUDA program sees through the driver it is linked with (libcuda.so.1 by its
   soname; the tests put the fake one first). Prints one fact a line, "name: value", for
   test_cuda.py to judge; exits 0 when the program ran to its end, 1 when a call it needs failed.
   Declares the few driver entry points it calls itself (the CUDA Driver API's signatures), so it
   builds without NVIDIA's headers. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult, CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream;
CUresult cuInit(unsigned);
CUresult cuDeviceGetCount(int *);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDeviceGetName(char *, int, CUdevice);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuDeviceGetPCIBusId(char *, int, CUdevice);
CUresult cuDeviceGetUuid(char uuid[16], CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned *, int *);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuCtxPopCurrent_v2(CUcontext *);
CUresult cuCtxGetId(CUcontext, unsigned long long *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFreeHost(void *);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuPointerGetAttributes(unsigned, int *, void **, CUdeviceptr);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *, size_t *, CUdeviceptr);
CUresult cuGetProcAddress_v2(const char *, void **, int, unsigned long long, int *);
CUresult cuGetErrorName(CUresult, const char **);

static int failed;
/* Runs a call that must succeed; prints its name and result when it does not. */
#define MUST(call)                                                  \
  do {                                                              \
    CUresult r_ = (call);                                           \
    if (r_ != 0) {                                                  \
      const char *n_ = "?";                                         \
      cuGetErrorName(r_, &n_);                                      \
      printf("failed: %s = %d %s\n", #call, r_, n_);                \
      failed = 1;                                                   \
      return;                                                       \
    }                                                               \
  } while (0)
static const char *err_name(CUresult r) {
  const char *n = "?";
  cuGetErrorName(r, &n);
  return n;
}

/* What happens to a child that loads (or stores) one byte at p: "signal 11", or "exit 0". */
static void host_access(const char *what, void *p, int store) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (store) *(volatile char *)p = 1;
    else (void)*(volatile char *)p;
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) printf("%s: signal %d\n", what, WTERMSIG(status));
  else printf("%s: exit %d\n", what, WEXITSTATUS(status));
}

/* process_vm_readv of 16 bytes at p in this process: "ok", or the errno name. */
static void vm_read(const char *what, void *p) {
  char buf[16];
  struct iovec local = {buf, sizeof buf}, remote = {p, sizeof buf};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  printf("%s: %s\n", what, n == (ssize_t)sizeof buf ? "ok" : errno == EFAULT ? "EFAULT" : strerror(errno));
}

static void check(void) {
  int n = -1;
  CUresult init = cuInit(0);
  printf("cuInit: %s\n", err_name(init));
  if (init != 0) return;
  MUST(cuDeviceGetCount(&n));
  printf("devices: %d\n", n);
  for (int i = 0; i < n; i++) {
    CUdevice d;
    char name[64], bus[32], uuid[16];
    int dom, busno, slot;
    MUST(cuDeviceGet(&d, i));
    MUST(cuDeviceGetName(name, sizeof name, d));
    MUST(cuDeviceGetPCIBusId(bus, sizeof bus, d));
    MUST(cuDeviceGetAttribute(&dom, 50, d));
    MUST(cuDeviceGetAttribute(&busno, 33, d));
    MUST(cuDeviceGetAttribute(&slot, 34, d));
    MUST(cuDeviceGetUuid(uuid, d));
    printf("device %d: name=%s pci=%s attributes=%04x:%02x:%02x uuid=%.8s\n", i, name, bus, dom, busno, slot, uuid);
  }
  if (n < 1) return;

  CUcontext ctx, popped;
  unsigned flags;
  int active;
  unsigned long long ctx_id;
  MUST(cuDevicePrimaryCtxGetState(0, &flags, &active));
  printf("primary context active before retain: %d\n", active);
  MUST(cuDevicePrimaryCtxRetain(&ctx, 0));
  MUST(cuDevicePrimaryCtxGetState(0, &flags, &active));
  printf("primary context active after retain: %d\n", active);
  printf("cuMemAlloc without a current context: %s\n", err_name(cuMemAlloc_v2(&(CUdeviceptr){0}, 64)));
  MUST(cuCtxPushCurrent_v2(ctx));
  MUST(cuCtxGetId(NULL, &ctx_id));

  enum { SIZE = 8192 };
  CUdeviceptr dev, dev2;
  void *host;
  MUST(cuMemAlloc_v2(&dev, SIZE));
  MUST(cuMemAlloc_v2(&dev2, SIZE));
  MUST(cuMemAllocHost_v2(&host, SIZE));
  host_access("host load of device memory", (void *)(uintptr_t)dev, 0);
  host_access("host store to device memory", (void *)(uintptr_t)(dev + 100), 1);
  vm_read("process_vm_readv of device memory", (void *)(uintptr_t)dev);
  host_access("host load of cuMemAllocHost memory", host, 0);
  vm_read("process_vm_readv of cuMemAllocHost memory", host);

  static unsigned char in[SIZE], out[SIZE];
  for (int i = 0; i < SIZE; i++) in[i] = (unsigned char)(i * 7 + 3);
  CUstream stream;
  MUST(cuStreamCreate(&stream, 1));
  MUST(cuMemcpyHtoD_v2(dev, in, SIZE));
  MUST(cuMemcpyDtoDAsync_v2(dev2, dev, SIZE, stream));
  MUST(cuStreamSynchronize(stream));
  MUST(cuMemcpyDtoH_v2(out, dev2, SIZE));
  printf("HtoD, DtoD, DtoH round trip: %s\n", memcmp(in, out, SIZE) ? "differs" : "same bytes");
  MUST(cuMemsetD8_v2(dev2 + 16, 0xab, 32));
  MUST(cuMemcpyDtoH_v2(out, dev2, 64));
  printf("memset: %02x %02x %02x\n", out[15], out[16], out[48]);
  MUST(cuStreamDestroy_v2(stream));

  CUdeviceptr inner = dev + 100, start = 0, base = 0;
  unsigned memtype = 0, managed = 9;
  int ordinal = -1;
  CUcontext owner = NULL;
  unsigned long long id1 = 0, id2 = 0;
  size_t range = 0, size = 0;
  MUST(cuPointerGetAttribute(&memtype, 2, inner));
  MUST(cuPointerGetAttribute(&ordinal, 9, inner));
  MUST(cuPointerGetAttribute(&owner, 1, inner));
  MUST(cuPointerGetAttribute(&id1, 7, inner));
  MUST(cuPointerGetAttribute(&id2, 7, dev2));
  MUST(cuPointerGetAttribute(&managed, 8, inner));
  MUST(cuPointerGetAttribute(&start, 11, inner));
  MUST(cuPointerGetAttribute(&range, 12, inner));
  MUST(cuMemGetAddressRange_v2(&base, &size, inner));
  printf("inner pointer: memory_type=%u device_ordinal=%d context_is_primary=%d is_managed=%u "
         "buffer_ids_differ=%d range_start_is_base=%d range_size=%zu\n",
         memtype, ordinal, owner == ctx, managed, id1 && id2 && id1 != id2, start == dev, range);
  printf("cuMemGetAddressRange of inner pointer: base_is_alloc=%d size=%zu\n", base == dev, size);
  int types[4] = {2, 8, 9, 1};
  unsigned mt = 7, mg = 7;
  int ord = 7;
  CUcontext c = (CUcontext)1;
  void *data[4] = {&mt, &mg, &ord, &c};
  MUST(cuPointerGetAttributes(4, types, data, inner));
  printf("cuPointerGetAttributes of inner pointer: memory_type=%u is_managed=%u device_ordinal=%d\n", mt, mg, ord);

  static char not_cuda[64];
  CUdeviceptr foreign = (CUdeviceptr)(uintptr_t)not_cuda;
  printf("cuPointerGetAttribute of a host pointer: %s\n", err_name(cuPointerGetAttribute(&memtype, 2, foreign)));
  printf("cuMemGetAddressRange of a host pointer: %s\n", err_name(cuMemGetAddressRange_v2(&base, &size, foreign)));
  MUST(cuPointerGetAttributes(4, types, data, foreign));
  printf("cuPointerGetAttributes of a host pointer: memory_type=%u context_is_null=%d\n", mt, c == NULL);

  void *fn = NULL;
  int status = -1;
  MUST(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &status));
  printf("cuGetProcAddress cuMemAlloc: %s\n", fn == (void *)cuMemAlloc_v2 ? "cuMemAlloc_v2" : "other");
  CUresult r = cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, &status);
  printf("cuGetProcAddress cuNoSuchFunction: %s fn_is_null=%d status=%d\n", err_name(r), fn == NULL, status);

  MUST(cuMemFree_v2(dev));
  printf("cuPointerGetAttribute after cuMemFree: %s\n", err_name(cuPointerGetAttribute(&memtype, 2, dev + 100)));
  MUST(cuMemFree_v2(dev2));
  MUST(cuMemFreeHost(host));
  MUST(cuCtxPopCurrent_v2(&popped));
  MUST(cuDevicePrimaryCtxRelease_v2(0));
  MUST(cuDevicePrimaryCtxGetState(0, &flags, &active));
  printf("primary context active after release: %d\n", active);
}

int main(void) {
  check();
  printf("end: %s\n", failed ? "a call failed" : "reached");
  return failed;
}
