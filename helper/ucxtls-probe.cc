// ucxtls-probe: the driver tier's helper (DESIGN §1 "Driver probe"). An ordinary program that
// libucxtls.so starts, installed beside it, so that the host process never loads a driver library.
//
// It asks the CUDA driver API (libcuda.so.1) and the Level Zero loader (libze_loader.so.1) how many
// devices this process can use, writes the report of core.h (format_driver_report) on its report
// fd, and exits at once: no driver destructor, no atexit handler, runs after the answer.
//
//   ucxtls-probe [--report-fd=N]    (default: stdout, for a person at a shell)
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "vendor.h"

using namespace ucxtls;

namespace {

const uint32_t kMaxDrivers = 16, kMaxDevices = 256;

void set_answer(DriverAnswer *a, bool answered, int count, long code, const char *name) {
  a->answered = answered ? Tri::yes : Tri::no;
  a->count = answered ? count : 0;
  a->code = code;
  Text t;
  t.init(a->name, sizeof a->name);
  t.add(name);
}

void set_code_answer(DriverAnswer *a, bool answered, int count, long code, const char *name,
                     const char *prefix) {
  if (name) return set_answer(a, answered, count, code, name);
  char fallback[40];
  Text t;
  t.init(fallback, sizeof fallback);
  t.add(prefix).add((long long)code);
  set_answer(a, answered, count, code, fallback);
}

// CUDA: cuInit(0), then cuDeviceGetCount. The name comes from the driver itself (cuGetErrorName).
void ask_cuda(DriverAnswer *a) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return set_answer(a, false, 0, -1, "libcuda.so.1 not found");
  auto init = reinterpret_cast<ucxtls_cuInit_fn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<ucxtls_cuDeviceGetCount_fn>(dlsym(lib, "cuDeviceGetCount"));
  auto error_name = reinterpret_cast<ucxtls_cuGetErrorName_fn>(dlsym(lib, "cuGetErrorName"));
  if (!init || !count) return set_answer(a, false, 0, -1, "libcuda.so.1 lacks cuInit/cuDeviceGetCount");
  int n = 0;
  ucxtls_CUresult rc = init(0);
  if (rc == 0) rc = count(&n);
  if (rc == 0 && n < 0) return set_answer(a, false, 0, 0, "cuDeviceGetCount gave a negative count");
  const char *name = nullptr;
  if (!error_name || error_name(rc, &name) != 0 || !name) name = cuda_result_name(rc);
  set_code_answer(a, cuda_result_answers(rc), rc == 0 ? n : 0, rc, name, "CUresult ");
}

void set_ze_answer(DriverAnswer *a, ucxtls_ze_result_t rc, int gpus) {
  set_code_answer(a, ze_result_answers(long(rc)), rc == 0 ? gpus : 0, long(rc), ze_result_name(long(rc)),
                  "ze_result_t ");
}

// Level Zero: zeInitDrivers (loader >= 1.18) when the loader has it, else zeInit + zeDriverGet:
// never both (the spec calls mixing them undefined). Then every driver's devices of type GPU.
void ask_ze(DriverAnswer *a) {
  void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return set_answer(a, false, 0, -1, "libze_loader.so.1 not found");
  auto init_drivers = reinterpret_cast<ucxtls_zeInitDrivers_fn>(dlsym(lib, "zeInitDrivers"));
  auto init = reinterpret_cast<ucxtls_zeInit_fn>(dlsym(lib, "zeInit"));
  auto driver_get = reinterpret_cast<ucxtls_zeDriverGet_fn>(dlsym(lib, "zeDriverGet"));
  auto device_get = reinterpret_cast<ucxtls_zeDeviceGet_fn>(dlsym(lib, "zeDeviceGet"));
  auto properties = reinterpret_cast<ucxtls_zeDeviceGetProperties_fn>(dlsym(lib, "zeDeviceGetProperties"));
  if (!device_get || !properties || (!init_drivers && (!init || !driver_get)))
    return set_answer(a, false, 0, -1, "libze_loader.so.1 lacks the API");

  ucxtls_ze_driver_handle_t drivers[kMaxDrivers];
  uint32_t nd = 0;
  ucxtls_ze_result_t rc;
  if (init_drivers) {
    ucxtls_ze_init_driver_type_desc_t desc = {UCXTLS_ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, nullptr,
                                              UCXTLS_ZE_INIT_DRIVER_TYPE_FLAG_GPU};
    rc = init_drivers(&nd, nullptr, &desc);
    if (rc == 0 && nd) {
      if (nd > kMaxDrivers) nd = kMaxDrivers;
      rc = init_drivers(&nd, drivers, &desc);
    }
  } else {
    rc = init(UCXTLS_ZE_INIT_FLAG_GPU_ONLY);
    if (rc == 0) rc = driver_get(&nd, nullptr);
    if (rc == 0 && nd) {
      if (nd > kMaxDrivers) nd = kMaxDrivers;
      rc = driver_get(&nd, drivers);
    }
  }
  if (rc != 0) return set_ze_answer(a, rc, 0);

  int gpus = 0;
  for (uint32_t d = 0; d < nd; d++) {
    static ucxtls_ze_device_handle_t devices[kMaxDevices];
    uint32_t n = 0;
    rc = device_get(drivers[d], &n, nullptr);
    if (rc == 0 && n) {
      if (n > kMaxDevices) n = kMaxDevices;
      rc = device_get(drivers[d], &n, devices);
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
      // Room beyond the struct: a driver that writes a newer, longer layout cannot overrun us.
      union {
        ucxtls_ze_device_properties_t p;
        char room[4096];
      } props;
      memset(&props, 0, sizeof props);
      props.p.stype = UCXTLS_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      rc = properties(devices[i], &props.p);
      if (rc == 0 && props.p.type == UCXTLS_ZE_DEVICE_TYPE_GPU) gpus++;
    }
    // A driver that fails after init is broken, not empty: no answer (the kernel's stands).
    if (rc != 0) return set_code_answer(a, false, 0, long(rc), ze_result_name(long(rc)), "ze_result_t ");
  }
  set_ze_answer(a, 0, gpus);
}

// Keeps 0-2 and the report fd; closes everything else the host left open, so that no driver
// (or a process it starts) holds the host's pipes or sockets.
void close_inherited_fds(int keep) {
  int from = (keep > 2 ? keep : 2) + 1;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)from, ~0u, 0u) == 0) return;
#endif
  DIR *d = opendir("/proc/self/fd");
  if (!d) {
    for (int fd = from; fd < 4096; fd++) close(fd);
    return;
  }
  int fds[1024], n = 0;
  while (dirent *e = readdir(d)) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= from && fd != dirfd(d) && n < 1024) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
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
          "Asks libcuda.so.1 and libze_loader.so.1 how many devices this process can use and\n"
          "writes the report that libucxtls.so reads (UCXTLS_PROBE=driver).\n";
      ssize_t w = write(2, usage, sizeof usage - 1);
      (void)w;
      return 2;
    }
  }
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return 3;  // no report fd: nobody to answer
  close_inherited_fds(fd);
  // A host may have blocked signals; the drivers expect the defaults.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  DriverFact f;
  ask_cuda(&f.cuda);
  ask_ze(&f.ze);
  char report[kDriverReportMax];
  size_t len = format_driver_report(f, report, sizeof report);
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, report + off, len - off);
    if (w <= 0) _exit(4);
    off += size_t(w);
  }
  _exit(0);  // skip the drivers' destructors: the answer is out
}
