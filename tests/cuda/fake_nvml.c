/* A fake NVIDIA Management Library (libnvidia-ml.so.1) beside the fake CUDA driver (fake_cuda.c):
   the same GPUs ($FAKECUDA_DEVICES), PCI identities and UUIDs. Written from the NVML API
   reference (docs.nvidia.com/deploy/nvml-api) and what UCX 1.22 asks of it: UCX's CUDA module
   links nvmlErrorString and dlopens this library for nvmlInit_v2, nvmlShutdown,
   nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3,
   nvmlDeviceGetFieldValues (NVML_FI_DEV_NVLINK_LINK_COUNT), nvmlDeviceGetNvLinkRemotePciInfo_v2
   and nvmlDeviceGetGpuFabricInfoV (or nvmlDeviceGetGpuFabricInfo): all must resolve or UCX
   drops NVML (src/uct/cuda/base/cuda_nvml.c). These GPUs have no NVLink (a link count of 0)
   and no fabric (NVML_ERROR_NOT_SUPPORTED). */
#include <string.h>

#include "fake_cuda.h"

typedef int nvmlReturn_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
       NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
       NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_UNKNOWN = 999 };
typedef struct fake_nvml_device { int index; } *nvmlDevice_t;
typedef struct {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType; /* nvmlValueType_t */
  nvmlReturn_t nvmlReturn;
  union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; } value;
} nvmlFieldValue_t;
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_VALUE_TYPE_UNSIGNED_INT 1

static struct fake_nvml_device devices[MAX_GPUS];
static int ndevices = -1; /* -1: not initialized */

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  int n = fake_gpu_count("fake libnvidia-ml");
  if (n < 0) return NVML_ERROR_UNKNOWN;
  for (int i = 0; i < n; i++) devices[i].index = i;
  ndevices = n;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags) { (void)flags; return nvmlInit_v2(); }
EXPORT nvmlReturn_t nvmlShutdown(void) { return ndevices < 0 ? NVML_ERROR_UNINITIALIZED : NVML_SUCCESS; }

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) {
  if (ndevices < 0) return NVML_ERROR_UNINITIALIZED;
  if (!n) return NVML_ERROR_INVALID_ARGUMENT;
  *n = (unsigned)ndevices;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
  if (ndevices < 0) return NVML_ERROR_UNINITIALIZED;
  if (!d || i >= (unsigned)ndevices) return NVML_ERROR_INVALID_ARGUMENT;
  *d = &devices[i];
  return NVML_SUCCESS;
}
static int is_device(nvmlDevice_t d) { return ndevices >= 0 && d >= devices && d < devices + ndevices; }
#define NEED_DEVICE(d) \
  do { if (ndevices < 0) return NVML_ERROR_UNINITIALIZED; if (!is_device(d)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i) {
  NEED_DEVICE(d);
  if (!i) return NVML_ERROR_INVALID_ARGUMENT;
  *i = (unsigned)d->index;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
  NEED_DEVICE(d);
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x41u + (unsigned)d->index;
  pci->pciDeviceId = 0x233010deu; /* device 0x2330 (H100 SXM), vendor 0x10de */
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len) {
  NEED_DEVICE(d);
  if (!name || len < 16) return NVML_ERROR_INSUFFICIENT_SIZE;
  snprintf(name, len, "Fake NVIDIA GPU");
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len) {
  NEED_DEVICE(d);
  /* GPU-<the 16 bytes of cuDeviceGetUuid, as 8-4-4-4-12 hex>: "FAKECUDA", zeros, the index */
  if (!uuid || len < 41) return NVML_ERROR_INSUFFICIENT_SIZE;
  snprintf(uuid, len, "GPU-46414b45-4355-4441-0000-0000000000%02x", (unsigned)d->index);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *values) {
  NEED_DEVICE(d);
  if (n < 0 || (n && !values)) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < n; i++) {
    values[i].timestamp = values[i].latencyUsec = 0;
    values[i].value.ull = 0;
    if (values[i].fieldId == NVML_FI_DEV_NVLINK_LINK_COUNT) { /* no NVLink */
      values[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      values[i].nvmlReturn = NVML_SUCCESS;
    } else {
      values[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t *pci) {
  NEED_DEVICE(d);
  (void)link;
  (void)pci;
  return NVML_ERROR_NOT_SUPPORTED;
}
EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, void *info) {
  NEED_DEVICE(d);
  (void)info;
  return NVML_ERROR_NOT_SUPPORTED;
}
EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, void *info) { return nvmlDeviceGetGpuFabricInfoV(d, info); }
