/* ucp_cuda: UCP moves device memory of the CUDA driver it is linked with (the fake one, in the
   tests). One process, two workers of one UCP context, one endpoint between them over the
   transports $UCX_TLS allows (the test compiles this program against the UCX of a wheel):
     - worker B maps 4 KiB of cuMemAlloc memory (ucp_mem_map) and says what UCX thinks it is
       (ucp_mem_query), packs its rkey for worker A;
     - A puts 4 KiB of host memory into it (ucp_put_nbx), and the bytes are read back through
       the driver (cuMemcpyDtoH);
     - A gets it back (ucp_get_nbx) into its own cuMemAlloc memory, read back the same way.
   Prints one fact a line, "name: value"; exit 0 when it ran to its end, 1 when a step failed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);

enum { SIZE = 4096 };
static ucp_worker_h workers[2];

#define STEP(what, ok)                                        \
  do {                                                        \
    if (!(ok)) {                                              \
      printf("failed: %s\n", what);                           \
      printf("end: a step failed\n");                         \
      return 1;                                               \
    }                                                         \
  } while (0)

/* Progresses both workers until the request completes (bounded: 20 s). */
static ucs_status_t wait_for(ucs_status_ptr_t req) {
  if (req == NULL) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  time_t until = time(NULL) + 20;
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS && time(NULL) < until) {
    ucp_worker_progress(workers[0]);
    ucp_worker_progress(workers[1]);
  }
  ucp_request_free(req);
  return st;
}

static const char *mem_type_name(ucs_memory_type_t t) {
  return t < UCS_MEMORY_TYPE_LAST ? ucs_memory_type_names[t] : "?";
}

int main(void) {
  CUcontext ctx;
  STEP("cuInit", cuInit(0) == 0);
  STEP("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
  STEP("cuCtxPushCurrent", cuCtxPushCurrent_v2(ctx) == 0);

  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA};
  ucp_context_h context;
  ucs_status_t st = ucp_init(&params, NULL, &context);
  printf("ucp_init: %s\n", ucs_status_string(st));
  STEP("ucp_init", st == UCS_OK);
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  for (int i = 0; i < 2; i++) STEP("ucp_worker_create", ucp_worker_create(context, &wp, &workers[i]) == UCS_OK);

  /* B's device memory, mapped and described by UCX. */
  CUdeviceptr target, local;
  STEP("cuMemAlloc", cuMemAlloc_v2(&target, SIZE) == 0 && cuMemAlloc_v2(&local, SIZE) == 0);
  static unsigned char zeros[SIZE];
  STEP("cuMemcpyHtoD", cuMemcpyHtoD_v2(target, zeros, SIZE) == 0 && cuMemcpyHtoD_v2(local, zeros, SIZE) == 0);
  ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                             .address = (void *)(uintptr_t)target, .length = SIZE};
  ucp_mem_h memh;
  st = ucp_mem_map(context, &mp, &memh);
  printf("ucp_mem_map of device memory: %s\n", ucs_status_string(st));
  STEP("ucp_mem_map", st == UCS_OK);
  ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE};
  STEP("ucp_mem_query", ucp_mem_query(memh, &attr) == UCS_OK);
  printf("ucp_mem_query memory type: %s\n", mem_type_name(attr.mem_type));
  void *rkey_buf;
  size_t rkey_size;
  STEP("ucp_rkey_pack", ucp_rkey_pack(context, memh, &rkey_buf, &rkey_size) == UCS_OK);

  /* A's endpoint to B, by B's worker address. */
  ucp_address_t *address;
  size_t address_len;
  STEP("ucp_worker_get_address", ucp_worker_get_address(workers[1], &address, &address_len) == UCS_OK);
  ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = address};
  ucp_ep_h ep;
  st = ucp_ep_create(workers[0], &ep_params, &ep);
  printf("ucp_ep_create: %s\n", ucs_status_string(st));
  STEP("ucp_ep_create", st == UCS_OK);
  ucp_rkey_h rkey;
  STEP("ucp_ep_rkey_unpack", ucp_ep_rkey_unpack(ep, rkey_buf, &rkey) == UCS_OK);
  fflush(stdout);

  /* put: A's host memory -> B's device memory */
  static unsigned char pattern[SIZE], back[SIZE];
  for (int i = 0; i < SIZE; i++) pattern[i] = (unsigned char)(i * 13 + 5);
  ucp_request_param_t rp = {0};
  st = wait_for(ucp_put_nbx(ep, pattern, SIZE, (uint64_t)target, rkey, &rp));
  if (st == UCS_OK) st = wait_for(ucp_ep_flush_nbx(ep, &rp));
  printf("put host -> device: %s\n", ucs_status_string(st));
  STEP("cuMemcpyDtoH", cuMemcpyDtoH_v2(back, target, SIZE) == 0);
  printf("put bytes read through the driver: %s\n", memcmp(back, pattern, SIZE) ? "differ" : "same");
  fflush(stdout);

  /* get: B's device memory -> A's device memory */
  st = wait_for(ucp_get_nbx(ep, (void *)(uintptr_t)local, SIZE, (uint64_t)target, rkey, &rp));
  if (st == UCS_OK) st = wait_for(ucp_ep_flush_nbx(ep, &rp));
  printf("get device -> device: %s\n", ucs_status_string(st));
  memset(back, 0, SIZE);
  STEP("cuMemcpyDtoH", cuMemcpyDtoH_v2(back, local, SIZE) == 0);
  printf("get bytes read through the driver: %s\n", memcmp(back, pattern, SIZE) ? "differ" : "same");

  ucp_rkey_destroy(rkey);
  ucp_rkey_buffer_release(rkey_buf);
  ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
  wait_for(ucp_ep_close_nbx(ep, &cp));
  ucp_worker_release_address(workers[1], address);
  ucp_mem_unmap(context, memh);
  for (int i = 0; i < 2; i++) ucp_worker_destroy(workers[i]);
  ucp_cleanup(context);
  printf("end: reached\n");
  return 0;
}
