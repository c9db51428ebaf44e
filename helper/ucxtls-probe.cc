// ucxtls-probe: the driver tier's helper (docs/driver-probe.md), which only `ucxtls probe` runs.
// It asks libcuda.so.1 and libze_loader.so.1 which devices there are, with the identity the
// visibility variables need (CUDA: each GPU's UUID; Level Zero: the GPU devices in the loader's
// order), writes driver_report.h's report on its report fd, and exits at once: no driver
// destructor or atexit handler runs after the answer.
//
//   ucxtls-probe [--report-fd=N]    (default: stdout, for a person at a shell)
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/root_fs.h"
#include "driver_report.h"
#include "vendor.h"

using namespace ucxtls;

namespace {

const uint32_t kMaxDrivers = 16, kMaxDevices = 256;

// Storage for the devices' ids and names that the report points to.
struct DeviceText {
  char id[kDriverDevicesMax][kDeviceIdMax];
  char name[kDriverDevicesMax][kDeviceNameMax];
};
DeviceText cuda_text, ze_text;

// The family's answer, named name (nullptr: prefix and the code's number).
void set_answer(FamilyReport *f, bool answered, int count, long code, const char *name, const char *prefix = "") {
  DriverAnswer *a = &f->answer;
  a->answered = answered ? Tri::yes : Tri::no;
  a->count = a->present = answered ? count : 0;
  a->code = code;
  Text t;
  t.init(a->name, sizeof a->name);
  if (name) t.add(name);
  else t.add(prefix).add((long long)code);
  if (!answered) f->ndev = 0;
}

// The driver APIs' entry points, each named once: a struct member of vendor.h's type
// ucxtls_<name>_fn, looked up by that name (NULL when the library lacks it).
#define UCXTLS_CUDA_API(X) X(cuInit) X(cuDeviceGetCount) X(cuGetErrorName) X(cuDeviceGet) X(cuDeviceGetUuid) X(cuDeviceGetName)
#define UCXTLS_ZE_API(X) X(zeInitDrivers) X(zeInit) X(zeDriverGet) X(zeDeviceGet) X(zeDeviceGetProperties)
#define UCXTLS_API_MEMBER(name) ucxtls_##name##_fn name;
#define UCXTLS_API_LOOKUP(name) name = reinterpret_cast<ucxtls_##name##_fn>(dlsym(lib, #name));
struct CudaApi {
  UCXTLS_CUDA_API(UCXTLS_API_MEMBER)
  void find(void *lib) { UCXTLS_CUDA_API(UCXTLS_API_LOOKUP) }
};
struct ZeApi {
  UCXTLS_ZE_API(UCXTLS_API_MEMBER)
  void find(void *lib) { UCXTLS_ZE_API(UCXTLS_API_LOOKUP) }
};

// "GPU-" and the 16 bytes as CUDA and nvidia-smi print them: 8-4-4-4-12 hex digits.
void format_gpu_uuid(const unsigned char *b, char *out, size_t cap) {
  snprintf(out, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

// CUDA: the count, then each device's UUID and name; the result named by the driver (cuGetErrorName).
void ask_cuda(FamilyReport *f) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return set_answer(f, false, 0, -1, "libcuda.so.1 not found");
  CudaApi api;
  api.find(lib);
  if (!api.cuInit || !api.cuDeviceGetCount) return set_answer(f, false, 0, -1, "libcuda.so.1 lacks cuInit/cuDeviceGetCount");
  int n = 0;
  ucxtls_CUresult rc = api.cuInit(0);
  if (rc == 0) rc = api.cuDeviceGetCount(&n);
  if (rc == 0 && n < 0) return set_answer(f, false, 0, 0, "cuDeviceGetCount gave a negative count");
  const char *name = nullptr;
  if (!api.cuGetErrorName || api.cuGetErrorName(rc, &name) != 0 || !name) name = cuda_result_name(rc);
  set_answer(f, cuda_result_answers(rc), rc == 0 ? n : 0, rc, name, "CUresult ");
  if (rc != 0) return;
  // Devices without an identity still count; their id is "-" (a GPU- entry cannot match them).
  f->ndev = n < kDriverDevicesMax ? n : kDriverDevicesMax;
  for (int i = 0; i < f->ndev; i++) {
    char *id = cuda_text.id[i], *dev_name = cuda_text.name[i];
    strcpy(id, "-");
    strcpy(dev_name, "-");
    ucxtls_CUdevice dev = 0;
    if (api.cuDeviceGet && api.cuDeviceGet(&dev, i) == 0) {
      ucxtls_CUuuid uuid;
      if (api.cuDeviceGetUuid && api.cuDeviceGetUuid(&uuid, dev) == 0)
        format_gpu_uuid(reinterpret_cast<const unsigned char *>(uuid.bytes), id, kDeviceIdMax);
      if (api.cuDeviceGetName && api.cuDeviceGetName(dev_name, int(kDeviceNameMax), dev) != 0) strcpy(dev_name, "-");
      dev_name[kDeviceNameMax - 1] = '\0';
    }
    f->dev[i].id = id;
    f->dev[i].name = dev_name;
  }
}

void set_ze_answer(FamilyReport *f, ucxtls_ze_result_t rc, int gpus) {
  set_answer(f, ze_result_answers(long(rc)), rc == 0 ? gpus : 0, long(rc), ze_result_name(long(rc)), "ze_result_t ");
}

// Level Zero's getters, called twice: the count, then at most max handles into out.
template <class Handle, class Get>
ucxtls_ze_result_t get_handles(uint32_t *n, uint32_t max, Handle *out, Get get) {
  ucxtls_ze_result_t rc = get(n, nullptr);
  if (rc != 0 || !*n) return rc;
  if (*n > max) *n = max;
  return get(n, out);
}

// Level Zero: zeInitDrivers (loader >= 1.18) when the loader has it, else zeInit + zeDriverGet:
// never both (the spec calls mixing them undefined). Then every driver's devices of type GPU, in
// the loader's order (the order ZE_AFFINITY_MASK's indices follow).
void ask_ze(FamilyReport *f) {
  void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return set_answer(f, false, 0, -1, "libze_loader.so.1 not found");
  ZeApi api;
  api.find(lib);
  if (!api.zeDeviceGet || !api.zeDeviceGetProperties || (!api.zeInitDrivers && (!api.zeInit || !api.zeDriverGet)))
    return set_answer(f, false, 0, -1, "libze_loader.so.1 lacks the API");

  ucxtls_ze_driver_handle_t drivers[kMaxDrivers];
  uint32_t nd = 0;
  ucxtls_ze_init_driver_type_desc_t desc = {UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, nullptr,
                                            UCXTLS_ZE_INIT_DRIVER_TYPE_FLAG_GPU};
  ucxtls_ze_result_t rc = api.zeInitDrivers ? 0 : api.zeInit(UCXTLS_ZE_INIT_FLAG_GPU_ONLY);
  if (rc == 0)
    rc = get_handles(&nd, kMaxDrivers, drivers, [&](uint32_t *n, ucxtls_ze_driver_handle_t *out) {
      return api.zeInitDrivers ? api.zeInitDrivers(n, out, &desc) : api.zeDriverGet(n, out);
    });
  if (rc != 0) return set_ze_answer(f, rc, 0);

  int gpus = 0;
  for (uint32_t d = 0; d < nd; d++) {
    static ucxtls_ze_device_handle_t devices[kMaxDevices];
    uint32_t n = 0;
    rc = get_handles(&n, kMaxDevices, devices,
                     [&](uint32_t *k, ucxtls_ze_device_handle_t *out) { return api.zeDeviceGet(drivers[d], k, out); });
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
      // Room beyond the struct: a driver that writes a newer, longer layout cannot overrun us.
      union {
        ucxtls_ze_device_properties_t p;
        char room[4096];
      } props;
      memset(&props, 0, sizeof props);
      props.p.stype = UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      rc = api.zeDeviceGetProperties(devices[i], &props.p);
      if (rc != 0 || props.p.type != UCXTLS_ZE_DEVICE_TYPE_GPU) continue;
      if (gpus < kDriverDevicesMax) {
        char *id = ze_text.id[gpus], *name = ze_text.name[gpus];
        for (int k = 0; k < 16; k++) snprintf(id + 2 * k, 3, "%02x", props.p.uuid[k]);
        Text t;
        t.init(name, kDeviceNameMax);
        t.add(props.p.name[0] ? props.p.name : "-", props.p.name[0] ? strnlen(props.p.name, sizeof props.p.name) : 1);
        f->dev[gpus].id = id;
        f->dev[gpus].name = name;
      }
      gpus++;
    }
    // A driver that fails after init is broken, not empty: no answer (the kernel's stands).
    if (rc != 0) return set_answer(f, false, 0, long(rc), ze_result_name(long(rc)), "ze_result_t ");
  }
  set_ze_answer(f, 0, gpus);
  f->ndev = gpus < kDriverDevicesMax ? gpus : kDriverDevicesMax;
}

}  // namespace

int main(int argc, char **argv) {
  int fd = 1;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--report-fd=", 12) && argv[i][12]) {
      fd = atoi(argv[i] + 12);
    } else {
      static const char usage[] =
          "usage: ucxtls-probe [--report-fd=N]\n"
          "Asks libcuda.so.1 and libze_loader.so.1 which devices there are and writes the report\n"
          "that `ucxtls probe` prints and `ucxtls probe --save` stores for UCXTLS_PROBE=driver.\n";
      files::write_all(2, usage, sizeof usage - 1);
      return 2;
    }
  }
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return 3;  // no report fd: nobody to answer
  // No driver (or a process it starts) holds a pipe or socket the host left open.
  files::close_from((fd > 2 ? fd : 2) + 1);
  // A host may have blocked signals; the drivers expect the defaults.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  static DriverReport r;
  ask_cuda(&r.cuda);
  ask_ze(&r.ze);
  static char report[kDriverReportMax];
  size_t len = format_driver_report(r, report, sizeof report);
  _exit(files::write_all(fd, report, len) ? 0 : 4);  // skip the drivers' destructors: the answer is out
}
