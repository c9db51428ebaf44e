/* libnixl_like.so's interface (nixl_like.c): what tests/ze/trainer.py calls through ctypes and
   nixl_like_main.c calls directly. */
#ifndef UCXTLS_TESTS_NIXL_LIKE_H
#define UCXTLS_TESTS_NIXL_LIKE_H
#include <stddef.h>

#define NIXL_LIKE_FORCE 1 /* go on after NIXL would refuse the registration */

enum {
  NL_OK = 0,               /* registered and moved, every byte checked through the driver */
  NL_USAGE = 2,
  NL_INIT = 10,            /* ucp_init (or the worker) failed: no UCX context */
  NL_MEM_MAP = 11,         /* ucp_mem_map or ucp_mem_query failed */
  NL_DETECTED_AS_HOST = 20,/* NIXL's refusal: "VRAM memory is detected as host by UCX" */
  NL_TRANSFER = 30,        /* a connect, get or put failed with a UCX status */
  NL_DATA = 31,            /* the transfer completed, the bytes are wrong */
  NL_PEER = 40,            /* the peer died or did not answer within the timeout */
  NL_GPU = 50              /* the GPU driver failed (no GPU, allocation, copy) */
};

int nixl_like_run(const char *role, int fd, size_t size, int flags, const char *gpu);
const char *nixl_like_code_name(int code);
#endif
