/* Shared by the fake CUDA driver's files (fake_cuda.c: devices, contexts, entry points;
   fake_cuda_memory.c: memory, copies, streams, events). */
#ifndef UCXTLS_TEST_FAKE_CUDA_H
#define UCXTLS_TEST_FAKE_CUDA_H
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

/* The CUDA driver API's types and codes (values as cuda.h defines them). */
typedef int CUresult, CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct fake_event *CUevent;
typedef struct { char bytes[16]; } CUuuid;
typedef void (*CUstreamCallback)(CUstream, CUresult, void *);
typedef void (*CUhostFn)(void *);
enum {
  CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_HANDLE = 400, CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_NOT_SUPPORTED = 801, CUDA_ERROR_UNKNOWN = 999,
};
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };

struct fake_ctx {
  int device;
  unsigned flags;
  unsigned long long id;
  int retained; /* primary context: retain count; active while > 0 */
};

/* CUDA_SUCCESS once cuInit succeeded, else what a call answers (not initialized, or why cuInit failed). */
CUresult fake_cuda_ready(void);
/* The calling thread's current context, or NULL. */
CUcontext fake_cuda_current(void);
/* A line appended to $FAKECUDA_TRACE, when set. */
void fake_cuda_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define MAX_GPUS 8
/* The GPU count $FAKECUDA_DEVICES asks for (0..MAX_GPUS, default 1), or -1 after one line on
   stderr naming the variable. The fake libcuda and libnvidia-ml see the same GPUs. */
static inline int fake_gpu_count(const char *who) {
  const char *v = getenv("FAKECUDA_DEVICES");
  if (!v || !*v) return 1;
  char *end;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > MAX_GPUS) {
    fprintf(stderr, "%s: FAKECUDA_DEVICES='%s' is not a GPU count 0..%d\n", who, v, MAX_GPUS);
    return -1;
  }
  return (int)n;
}
#define NEED_INIT() \
  do { CUresult ready_ = fake_cuda_ready(); if (ready_ != CUDA_SUCCESS) return ready_; } while (0)
#endif
