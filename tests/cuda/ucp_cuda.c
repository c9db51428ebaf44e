/* ucp_cuda: UCP moves device memory of the CUDA driver it is linked with (the fake one, in the
   tests), over the transports $UCX_TLS allows (the test compiles this program against the UCX of
   a wheel). 4 KiB of cuMemAlloc memory is mapped (ucp_mem_map) by the target, which says what
   UCX thinks it is (ucp_mem_query) and packs its rkey; the initiator puts 4 KiB of host memory
   into it (ucp_put_nbx) and gets it back (ucp_get_nbx) into its own cuMemAlloc memory. Every
   byte is checked through the driver (cuMemcpyDtoH).
     ucp_cuda               one process, two workers of one UCP context, one endpoint
     ucp_cuda two-process   a target and an initiator process (fork), each its own context;
                            the worker address and rkey go over a socket pair
   Prints one fact a line, "name: value" (in two-process mode each name begins with "target" or
   "initiator"); exit 0 when it ran to its end, 1 when a step failed. */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
static ucp_context_h context;
static ucp_worker_h workers[2];
static int nworkers;
static const char *who = ""; /* "", "target " or "initiator ": the prefix of each fact */
static unsigned char pattern[SIZE];

#define STEP(what, ok)                                        \
  do {                                                        \
    if (!(ok)) {                                              \
      printf("%sfailed: %s\n", who, what);                    \
      printf("%send: a step failed\n", who);                  \
      return 1;                                               \
    }                                                         \
  } while (0)

/* Progresses the workers until the request completes (bounded: 20 s). */
static ucs_status_t wait_for(ucs_status_ptr_t req) {
  if (req == NULL) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  time_t until = time(NULL) + 20;
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS && time(NULL) < until)
    for (int i = 0; i < nworkers; i++) ucp_worker_progress(workers[i]);
  ucp_request_free(req);
  return st;
}

/* The driver's primary context current, a UCP context with n workers. */
static int setup(int n) {
  CUcontext ctx;
  STEP("cuInit", cuInit(0) == 0);
  STEP("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
  STEP("cuCtxPushCurrent", cuCtxPushCurrent_v2(ctx) == 0);
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA};
  ucs_status_t st = ucp_init(&params, NULL, &context);
  printf("%sucp_init: %s\n", who, ucs_status_string(st));
  STEP("ucp_init", st == UCS_OK);
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  for (nworkers = 0; nworkers < n; nworkers++)
    STEP("ucp_worker_create", ucp_worker_create(context, &wp, &workers[nworkers]) == UCS_OK);
  for (int i = 0; i < SIZE; i++) pattern[i] = (unsigned char)(i * 13 + 5);
  return 0;
}

/* 4 KiB of zeroed device memory. */
static int device_buffer(CUdeviceptr *p) {
  static unsigned char zeros[SIZE];
  STEP("cuMemAlloc", cuMemAlloc_v2(p, SIZE) == 0);
  STEP("cuMemcpyHtoD", cuMemcpyHtoD_v2(*p, zeros, SIZE) == 0);
  return 0;
}

/* The target's side: its device memory mapped, described and its rkey packed. */
static int map_target(CUdeviceptr target, ucp_mem_h *memh, void **rkey, size_t *rkey_size) {
  ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                             .address = (void *)(uintptr_t)target, .length = SIZE};
  ucs_status_t st = ucp_mem_map(context, &mp, memh);
  printf("%sucp_mem_map of device memory: %s\n", who, ucs_status_string(st));
  STEP("ucp_mem_map", st == UCS_OK);
  ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE};
  STEP("ucp_mem_query", ucp_mem_query(*memh, &attr) == UCS_OK);
  printf("%sucp_mem_query memory type: %s\n", who,
         attr.mem_type < UCS_MEMORY_TYPE_LAST ? ucs_memory_type_names[attr.mem_type] : "?");
  STEP("ucp_rkey_pack", ucp_rkey_pack(context, *memh, rkey, rkey_size) == UCS_OK);
  fflush(stdout);
  return 0;
}

/* Whether 4 KiB of device memory holds the pattern, read through the driver. */
static const char *holds_pattern(CUdeviceptr p) {
  static unsigned char back[SIZE];
  if (cuMemcpyDtoH_v2(back, p, SIZE) != 0) return "cuMemcpyDtoH failed";
  return memcmp(back, pattern, SIZE) ? "differ" : "same";
}

/* The initiator's side: an endpoint to the target's worker, put then get; check_target: the
   target's memory is in this process, read it after the put. */
static int transfer(const ucp_address_t *address, const void *rkey_buf, uint64_t target, int check_target) {
  ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = address};
  ucp_ep_h ep;
  ucs_status_t st = ucp_ep_create(workers[0], &ep_params, &ep);
  printf("%sucp_ep_create: %s\n", who, ucs_status_string(st));
  STEP("ucp_ep_create", st == UCS_OK);
  ucp_rkey_h rkey;
  STEP("ucp_ep_rkey_unpack", ucp_ep_rkey_unpack(ep, rkey_buf, &rkey) == UCS_OK);
  CUdeviceptr local;
  if (device_buffer(&local)) return 1;
  fflush(stdout);

  ucp_request_param_t rp = {0};
  st = wait_for(ucp_put_nbx(ep, pattern, SIZE, target, rkey, &rp));
  if (st == UCS_OK) st = wait_for(ucp_ep_flush_nbx(ep, &rp));
  printf("%sput host -> device: %s\n", who, ucs_status_string(st));
  if (check_target) printf("put bytes read through the driver: %s\n", holds_pattern((CUdeviceptr)target));
  fflush(stdout);
  st = wait_for(ucp_get_nbx(ep, (void *)(uintptr_t)local, SIZE, target, rkey, &rp));
  if (st == UCS_OK) st = wait_for(ucp_ep_flush_nbx(ep, &rp));
  printf("%sget device -> device: %s\n", who, ucs_status_string(st));
  printf("%sget bytes read through the driver: %s\n", who, holds_pattern(local));
  ucp_rkey_destroy(rkey);
  ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
  wait_for(ucp_ep_close_nbx(ep, &cp));
  return 0;
}

static int one_process(void) {
  CUdeviceptr target;
  ucp_mem_h memh;
  void *rkey;
  size_t rkey_size;
  ucp_address_t *address;
  size_t address_len;
  if (setup(2) || device_buffer(&target) || map_target(target, &memh, &rkey, &rkey_size)) return 1;
  STEP("ucp_worker_get_address", ucp_worker_get_address(workers[1], &address, &address_len) == UCS_OK);
  if (transfer(address, rkey, target, 1)) return 1;
  ucp_rkey_buffer_release(rkey);
  ucp_worker_release_address(workers[1], address);
  ucp_mem_unmap(context, memh);
  return 0;
}

/* Messages over the socket pair: a length, then the bytes. */
static int send_blob(int fd, const void *p, size_t n) {
  return write(fd, &n, sizeof n) == (ssize_t)sizeof n && write(fd, p, n) == (ssize_t)n ? 0 : -1;
}
static size_t recv_blob(int fd, void *p, size_t cap) {
  size_t n = 0;
  if (read(fd, &n, sizeof n) != (ssize_t)sizeof n || n > cap) return 0;
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return n;
}

static int target_process(int fd) {
  who = "target ";
  CUdeviceptr target;
  ucp_mem_h memh;
  void *rkey;
  size_t rkey_size, address_len;
  ucp_address_t *address;
  if (setup(1) || device_buffer(&target) || map_target(target, &memh, &rkey, &rkey_size)) return 1;
  STEP("ucp_worker_get_address", ucp_worker_get_address(workers[0], &address, &address_len) == UCS_OK);
  uint64_t where = target;
  STEP("send to the initiator", send_blob(fd, address, address_len) == 0 && send_blob(fd, rkey, rkey_size) == 0 &&
                                    send_blob(fd, &where, sizeof where) == 0);
  /* Serve the initiator until it says it is done (bounded: 30 s). */
  struct pollfd pfd = {fd, POLLIN, 0};
  time_t until = time(NULL) + 30;
  while (poll(&pfd, 1, 0) == 0 && time(NULL) < until) ucp_worker_progress(workers[0]);
  printf("target bytes after the initiator's put: %s\n", holds_pattern(target));
  ucp_rkey_buffer_release(rkey);
  ucp_worker_release_address(workers[0], address);
  ucp_mem_unmap(context, memh);
  return 0;
}

static int initiator_process(int fd) {
  who = "initiator ";
  static char address[65536], rkey[4096];
  uint64_t target = 0;
  if (setup(1)) return 1;
  STEP("receive from the target", recv_blob(fd, address, sizeof address) && recv_blob(fd, rkey, sizeof rkey) &&
                                      recv_blob(fd, &target, sizeof target) == sizeof target);
  int failed = transfer((ucp_address_t *)address, rkey, target, 0);
  STEP("tell the target", write(fd, "d", 1) == 1);
  return failed;
}

int main(int argc, char **argv) {
  int failed;
  if (argc > 1 && strcmp(argv[1], "two-process") == 0) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(sv[0]);
      failed = target_process(sv[1]);
    } else {
      close(sv[1]);
      failed = initiator_process(sv[0]);
      close(sv[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      printf("target process: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
  } else {
    failed = one_process();
  }
  for (int i = 0; i < nworkers; i++) ucp_worker_destroy(workers[i]);
  if (context) ucp_cleanup(context);
  if (!failed) printf("%send: reached\n", who);
  fflush(stdout);
  return failed;
}
