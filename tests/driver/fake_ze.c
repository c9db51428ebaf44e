/* A fake libze_loader.so.1 for the driver-probe tests. Built twice: with FAKE_ZE_INIT_DRIVERS (a
   loader >= 1.18 that has zeInitDrivers) and without (an old loader: zeInit + zeDriverGet only).
   Variables:
     FAKE_ZE_INIT        the init call's result (default 0)
     FAKE_ZE_DEVICES     drivers separated by ';', each a ','-list of device types: gpu, cpu, vpu
                         (e.g. "gpu,gpu;vpu"). Every driver is returned whatever the init flags,
                         so the tests see the helper's own GPU filter.
     FAKE_ZE_PROPS_RC    zeDeviceGetProperties' result (a driver that breaks after init)
     FAKE_ZE_HANG / _CRASH / _NOISE, FAKE_LOG: see fake_common.h
   It checks what the helper passes (structure types, flags) and logs a call that mixes the two
   init styles as "MIXED". */
#include <stdint.h>

#include "../../helper/vendor.h"
#include "fake_common.h"

#define ZE_RESULT_ERROR_UNINITIALIZED 0x78000001u
#define ZE_RESULT_ERROR_INVALID_ARGUMENT 0x78000004u
#define ZE_RESULT_ERROR_INVALID_NULL_POINTER 0x78000007u
#define ZE_RESULT_ERROR_INVALID_ENUMERATION 0x7800000cu

#define MAX_DRIVERS 8
#define MAX_DEVICES 32
static int ndrivers, ndevices[MAX_DRIVERS];
static uint32_t types[MAX_DRIVERS][MAX_DEVICES];
static int inited_old, inited_new;

static void parse_devices(void) {
  const char *v = getenv("FAKE_ZE_DEVICES");
  ndrivers = 0;
  if (!v || !*v) return;
  ndrivers = 1;
  ndevices[0] = 0;
  const char *p = v;
  while (*p) {
    size_t n = strcspn(p, ",;");
    uint32_t t = !strncmp(p, "gpu", n) ? 1 : !strncmp(p, "cpu", n) ? 2 : !strncmp(p, "vpu", n) ? 5 : 0;
    if (n && ndevices[ndrivers - 1] < MAX_DEVICES) types[ndrivers - 1][ndevices[ndrivers - 1]++] = t;
    p += n;
    if (*p == ';' && ndrivers < MAX_DRIVERS) ndevices[ndrivers++] = 0;
    if (*p) p++;
  }
}

static uint32_t give_drivers(uint32_t *count, ucxtls_ze_driver_handle_t *out) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!out) {
    *count = (uint32_t)ndrivers;
    return 0;
  }
  if (*count > (uint32_t)ndrivers) *count = (uint32_t)ndrivers;
  for (uint32_t i = 0; i < *count; i++) out[i] = (ucxtls_ze_driver_handle_t)(uintptr_t)(0x1000 + i * 0x100);
  return 0;
}

static uint32_t init_result(void) {
  static int done;
  static uint32_t rc;
  if (!done) {
    fake_misbehave("ZE");
    rc = (uint32_t)fake_num("FAKE_ZE_INIT", 0);
    parse_devices();
    if (rc) ndrivers = 0;
    done = 1;
  }
  return rc;
}

__attribute__((visibility("default"))) uint32_t zeInit(uint32_t flags) {
  char what[64];
  snprintf(what, sizeof what, "ze zeInit flags=%u%s", flags, inited_new ? " MIXED" : "");
  fake_log(what);
  inited_old = 1;
  return init_result();
}

__attribute__((visibility("default"))) uint32_t zeDriverGet(uint32_t *count, ucxtls_ze_driver_handle_t *drivers) {
  fake_log(inited_new ? "ze zeDriverGet MIXED" : "ze zeDriverGet");
  if (!inited_old) return ZE_RESULT_ERROR_UNINITIALIZED;
  uint32_t rc = init_result();
  if (rc) return rc;
  return give_drivers(count, drivers);
}

#ifdef FAKE_ZE_INIT_DRIVERS
__attribute__((visibility("default"))) uint32_t zeInitDrivers(uint32_t *count, ucxtls_ze_driver_handle_t *drivers,
                                                              ucxtls_ze_init_driver_type_desc_t *desc) {
  char what[96];
  snprintf(what, sizeof what, "ze zeInitDrivers stype=0x%x flags=%u%s", desc ? desc->stype : 0,
           desc ? desc->flags : 0, inited_old ? " MIXED" : "");
  fake_log(what);
  inited_new = 1;
  if (!desc || !count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->stype != UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->flags == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  uint32_t rc = init_result();
  if (rc) {
    *count = 0;
    return rc;
  }
  return give_drivers(count, drivers);
}
#endif

__attribute__((visibility("default"))) uint32_t zeDeviceGet(ucxtls_ze_driver_handle_t driver, uint32_t *count,
                                                            ucxtls_ze_device_handle_t *devices) {
  uintptr_t d = ((uintptr_t)driver - 0x1000) / 0x100;
  if (!count || d >= (uintptr_t)ndrivers) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!devices) {
    *count = (uint32_t)ndevices[d];
    return 0;
  }
  if (*count > (uint32_t)ndevices[d]) *count = (uint32_t)ndevices[d];
  for (uint32_t i = 0; i < *count; i++) devices[i] = (ucxtls_ze_device_handle_t)(uintptr_t)(0x100000 + d * 0x1000 + i);
  return 0;
}

__attribute__((visibility("default"))) uint32_t zeDeviceGetProperties(ucxtls_ze_device_handle_t device,
                                                                      ucxtls_ze_device_properties_t *props) {
  char what[64];
  snprintf(what, sizeof what, "ze zeDeviceGetProperties stype=0x%x", props ? props->stype : 0);
  fake_log(what);
  if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (props->stype != UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  uint32_t rc = (uint32_t)fake_num("FAKE_ZE_PROPS_RC", 0);
  if (rc) return rc;
  uintptr_t h = (uintptr_t)device - 0x100000;
  props->type = types[h / 0x1000][h % 0x1000];
  props->vendorId = 0x8086;
  snprintf(props->name, sizeof props->name, "Fake Level Zero device %u.%u", (unsigned)(h / 0x1000), (unsigned)(h % 0x1000));
  for (int i = 0; i < 16; i++) props->uuid[i] = (uint8_t)(0xa0 + 16 * (h / 0x1000) + 4 * (h % 0x1000) + i);
  return 0;
}
