/* A fake libcuda.so.1 for the driver-probe tests. Variables:
     FAKE_CUDA_INIT      cuInit's result (default 0)
     FAKE_CUDA_COUNT     devices cuDeviceGetCount reports (default 0)
     FAKE_CUDA_COUNT_RC  cuDeviceGetCount's result (default 0)
     FAKE_CUDA_UUIDS     the devices' UUIDs, comma-separated, as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
                         (default: byte i of device d's UUID is 16 * d + i)
     FAKE_CUDA_UUID_RC   cuDeviceGetUuid's result (default 0)
     FAKE_CUDA_HANG / _CRASH / _NOISE, FAKE_LOG: see fake_common.h
   Like the real driver, it answers CUDA_ERROR_NO_DEVICE when CUDA_VISIBLE_DEVICES is set and empty,
   and CUDA_ERROR_NOT_INITIALIZED in a forked child of a process that had initialised it. */
#include "fake_common.h"

static int initialized;
static pid_t init_pid;

__attribute__((visibility("default"))) int cuInit(unsigned int flags) {
  fake_log("cuda cuInit");
  fake_misbehave("CUDA");
  if (flags != 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (init_pid && init_pid != getpid()) return 3; /* CUDA after fork: undefined; observed 3 */
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  int rc = cvd && !*cvd ? 100 : (int)fake_num("FAKE_CUDA_INIT", 0);
  initialized = rc == 0;
  if (initialized) init_pid = getpid();
  return rc;
}

__attribute__((visibility("default"))) int cuDeviceGetCount(int *count) {
  if (!count) return 1;
  if (!initialized) return 3; /* CUDA_ERROR_NOT_INITIALIZED, as the real driver */
  *count = (int)fake_num("FAKE_CUDA_COUNT", 0);
  return (int)fake_num("FAKE_CUDA_COUNT_RC", 0);
}

__attribute__((visibility("default"))) int cuGetErrorName(int error, const char **name) {
  static const struct {
    int code;
    const char *name;
  } names[] = {{0, "CUDA_SUCCESS"}, {3, "CUDA_ERROR_NOT_INITIALIZED"}, {34, "CUDA_ERROR_STUB_LIBRARY"},
               {100, "CUDA_ERROR_NO_DEVICE"}, {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
               {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"}, {999, "CUDA_ERROR_UNKNOWN"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (names[i].code == error) {
      *name = names[i].name;
      return 0;
    }
  }
  *name = NULL;
  return 1; /* CUDA_ERROR_INVALID_VALUE for a code it does not know, as the real driver */
}

__attribute__((visibility("default"))) int cuDeviceGet(int *device, int ordinal) {
  if (!device) return 1;
  if (!initialized) return 3;
  if (ordinal < 0 || ordinal >= (int)fake_num("FAKE_CUDA_COUNT", 0)) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = ordinal;
  return 0;
}

/* CUuuid is 16 bytes. */
__attribute__((visibility("default"))) int cuDeviceGetUuid(unsigned char *uuid, int device) {
  if (!uuid) return 1;
  if (!initialized) return 3;
  if (device < 0 || device >= (int)fake_num("FAKE_CUDA_COUNT", 0)) return 101;
  int rc = (int)fake_num("FAKE_CUDA_UUID_RC", 0);
  if (rc) return rc;
  for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(16 * device + i);
  const char *list = getenv("FAKE_CUDA_UUIDS");
  for (int d = 0; list && d < device; d++) {
    list = strchr(list, ',');
    if (list) list++;
  }
  if (list && !strncmp(list, "GPU-", 4)) {
    const char *p = list + 4;
    for (int i = 0; i < 16 && *p && *p != ','; p++) {
      if (*p == '-') continue;
      char hex[3] = {p[0], p[1], 0};
      uuid[i++] = (unsigned char)strtoul(hex, NULL, 16);
      p++;
    }
  }
  return 0;
}

__attribute__((visibility("default"))) int cuDeviceGetName(char *name, int len, int device) {
  if (!name || len <= 0) return 1;
  if (!initialized) return 3;
  snprintf(name, (size_t)len, "Fake CUDA device %d", device);
  return 0;
}
