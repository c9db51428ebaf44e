/* Compiled only where the vendors' headers are installed: helper/vendor.h must agree with them. */
#include <stddef.h>

#include "../../helper/vendor.h"

#ifdef UCXTLS_HAVE_ZE_API
#include <level_zero/ze_api.h>
_Static_assert(sizeof(ucxtls_ze_device_properties_t) == sizeof(ze_device_properties_t), "ze properties size");
#define SAME_FIELD(f) \
  _Static_assert(offsetof(ucxtls_ze_device_properties_t, f) == offsetof(ze_device_properties_t, f) && \
                 sizeof(((ucxtls_ze_device_properties_t *)0)->f) == sizeof(((ze_device_properties_t *)0)->f), #f)
SAME_FIELD(stype);
SAME_FIELD(pNext);
SAME_FIELD(type);
SAME_FIELD(vendorId);
SAME_FIELD(deviceId);
SAME_FIELD(flags);
SAME_FIELD(subdeviceId);
SAME_FIELD(coreClockRate);
SAME_FIELD(maxMemAllocSize);
SAME_FIELD(maxHardwareContexts);
SAME_FIELD(maxCommandQueuePriority);
SAME_FIELD(numThreadsPerEU);
SAME_FIELD(physicalEUSimdWidth);
SAME_FIELD(numEUsPerSubslice);
SAME_FIELD(numSubslicesPerSlice);
SAME_FIELD(numSlices);
SAME_FIELD(timerResolution);
SAME_FIELD(timestampValidBits);
SAME_FIELD(kernelTimestampValidBits);
SAME_FIELD(uuid);
SAME_FIELD(name);
_Static_assert(UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, "stype");
_Static_assert(UCXTLS_ZE_DEVICE_TYPE_GPU == ZE_DEVICE_TYPE_GPU, "GPU");
_Static_assert(UCXTLS_ZE_DEVICE_TYPE_VPU == ZE_DEVICE_TYPE_VPU, "VPU");
_Static_assert(UCXTLS_ZE_INIT_FLAG_GPU_ONLY == ZE_INIT_FLAG_GPU_ONLY, "GPU_ONLY");
_Static_assert(ZE_RESULT_ERROR_UNINITIALIZED == 0x78000001, "UNINITIALIZED");
_Static_assert(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS == 0x70010000, "INSUFFICIENT_PERMISSIONS");
#ifdef ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC
_Static_assert(UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC == ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, "desc");
#endif
#endif

#ifdef UCXTLS_HAVE_CUDA_H
#include <cuda.h>
_Static_assert(CUDA_SUCCESS == 0 && CUDA_ERROR_NO_DEVICE == 100 && CUDA_ERROR_STUB_LIBRARY == 34, "CUresult");
_Static_assert(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH == 803 && CUDA_ERROR_SYSTEM_NOT_READY == 802, "CUresult");
_Static_assert(sizeof(CUresult) == sizeof(ucxtls_CUresult), "CUresult size");
_Static_assert(sizeof(CUuuid) == sizeof(ucxtls_CUuuid) && sizeof(CUdevice) == sizeof(ucxtls_CUdevice), "CUuuid, CUdevice");
#endif

int ucxtls_abi_check;
