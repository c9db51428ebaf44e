/* The few vendor declarations the driver probe needs, written out so that neither the helper nor
   the test fakes need the CUDA or Level Zero headers. Values and layouts follow cuda.h and
   ze_api.h (checked against them by tests/driver/abi_check.c where the headers are installed). */
#ifndef UCXTLS_VENDOR_H
#define UCXTLS_VENDOR_H

#include <stdint.h>

/* CUDA driver API (libcuda.so.1). CUresult is an int-sized enum. */
typedef int ucxtls_CUresult;
typedef ucxtls_CUresult (*ucxtls_cuInit_fn)(unsigned int flags);
typedef ucxtls_CUresult (*ucxtls_cuDeviceGetCount_fn)(int *count);
typedef ucxtls_CUresult (*ucxtls_cuGetErrorName_fn)(ucxtls_CUresult error, const char **name);
typedef int ucxtls_CUdevice;
typedef struct {
  char bytes[16];
} ucxtls_CUuuid;
typedef ucxtls_CUresult (*ucxtls_cuDeviceGet_fn)(ucxtls_CUdevice *device, int ordinal);
/* The GPU's UUID (cuDeviceGetUuid; the _v2 entry point, which cuda.h >= 11.4 maps the name to,
   gives a MIG instance's UUID instead: CUDA_VISIBLE_DEVICES's GPU- entries name GPUs). */
typedef ucxtls_CUresult (*ucxtls_cuDeviceGetUuid_fn)(ucxtls_CUuuid *uuid, ucxtls_CUdevice device);
typedef ucxtls_CUresult (*ucxtls_cuDeviceGetName_fn)(char *name, int len, ucxtls_CUdevice device);

/* Level Zero loader (libze_loader.so.1). */
typedef uint32_t ucxtls_ze_result_t;
typedef struct ucxtls_ze_handle *ucxtls_ze_driver_handle_t;
typedef struct ucxtls_ze_handle *ucxtls_ze_device_handle_t;

#define UCXTLS_ZE_INIT_FLAG_GPU_ONLY 1u
#define UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES 0x3u
#define UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC 0x00020021u
#define UCXTLS_ZE_INIT_DRIVER_TYPE_FLAG_GPU 1u
#define UCXTLS_ZE_DEVICE_TYPE_GPU 1u
#define UCXTLS_ZE_DEVICE_TYPE_VPU 5u /* an NPU (VPU in spec 1.x headers): not ze_copy's business */

typedef struct {
  uint32_t stype; /* UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC */
  const void *pNext;
  uint32_t flags; /* ze_init_driver_type_flags_t */
} ucxtls_ze_init_driver_type_desc_t;

typedef struct {
  uint32_t stype; /* UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES */
  void *pNext;
  uint32_t type; /* ze_device_type_t */
  uint32_t vendorId;
  uint32_t deviceId;
  uint32_t flags;
  uint32_t subdeviceId;
  uint32_t coreClockRate;
  uint64_t maxMemAllocSize;
  uint32_t maxHardwareContexts;
  uint32_t maxCommandQueuePriority;
  uint32_t numThreadsPerEU;
  uint32_t physicalEUSimdWidth;
  uint32_t numEUsPerSubslice;
  uint32_t numSubslicesPerSlice;
  uint32_t numSlices;
  uint64_t timerResolution;
  uint32_t timestampValidBits;
  uint32_t kernelTimestampValidBits;
  uint8_t uuid[16];
  char name[256];
} ucxtls_ze_device_properties_t;

typedef ucxtls_ze_result_t (*ucxtls_zeInit_fn)(uint32_t flags);
typedef ucxtls_ze_result_t (*ucxtls_zeDriverGet_fn)(uint32_t *count, ucxtls_ze_driver_handle_t *drivers);
typedef ucxtls_ze_result_t (*ucxtls_zeInitDrivers_fn)(uint32_t *count, ucxtls_ze_driver_handle_t *drivers,
                                                      ucxtls_ze_init_driver_type_desc_t *desc);
typedef ucxtls_ze_result_t (*ucxtls_zeDeviceGet_fn)(ucxtls_ze_driver_handle_t driver, uint32_t *count,
                                                    ucxtls_ze_device_handle_t *devices);
typedef ucxtls_ze_result_t (*ucxtls_zeDeviceGetProperties_fn)(ucxtls_ze_device_handle_t device,
                                                              ucxtls_ze_device_properties_t *props);

#endif
