/* A fake UCX build, for what cannot exist on this machine: UCX built otherwise than Debian's
 * (NIXL's wheel without DC, RAPIDS' without verbs, one whose CUDA module needs a libcuda.so.1 that
 * is not here), and a UCX that hangs or crashes when asked. It is a libucp that is its own libucs
 * and libuct: the entry points `ucxtls doctor --ucx` asks (ucp_get_version_string,
 * uct_query_components, uct_component_query, uct_release_component_list, ucs_status_string) and
 * the transport definitions UCX's UCT_TL_DEFINE macros write: a global `uct_<name>_tl` whose first
 * field is the name (uct/base/uct_iface.h). Which ones: FAKE_UCX_TLS_<build>. */
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TL(name) EXPORT char uct_##name##_tl[64] = #name;

#ifndef FAKE_UCX_NOT_UCX
EXPORT const char *ucp_get_version_string(void) { return "1.22.0-fake"; }
#endif
EXPORT const char *ucs_status_string(int status) { return status ? "error" : "Success"; }

typedef struct uct_component *uct_component_h;
EXPORT int uct_query_components(uct_component_h **components, unsigned *n) {
#ifdef FAKE_UCX_CRASH
  raise(SIGSEGV);
#endif
  *components = NULL;
  *n = 0;
  return 0;
}
EXPORT int uct_component_query(uct_component_h c, void *attr) { (void)c, (void)attr; return -1; }
EXPORT void uct_release_component_list(uct_component_h *c) { (void)c; }

#ifdef FAKE_UCX_RECORD  /* a constructor that records who ran it: "<euid> <comm>" appended to this file */
#include <fcntl.h>
#include <stdio.h>
__attribute__((constructor)) static void record_euid(void) {
  char comm[64] = "?", line[128];
  int fd = open("/proc/self/comm", O_RDONLY);
  if (fd >= 0) {
    ssize_t n = read(fd, comm, sizeof comm - 1);
    comm[n > 0 ? n - 1 : 0] = '\0';
    close(fd);
  }
  fd = open(FAKE_UCX_RECORD, O_WRONLY | O_APPEND | O_CREAT, 0666);
  if (fd >= 0) {
    int n = snprintf(line, sizeof line, "%u %s\n", (unsigned)geteuid(), comm);
    if (write(fd, line, (size_t)n) < 0) {}
    close(fd);
  }
}
#endif

#ifdef FAKE_UCX_HANG
__attribute__((constructor)) static void hang_when_loaded(void) {
  for (;;) pause();
}
#endif

/* Every build has what libuct compiles in. */
TL(self) TL(tcp) TL(sysv) TL(posix)
#ifdef FAKE_UCX_TLS_NIXL  /* --with-cuda --with-verbs --without-dc (ai-dynamo/nixl contrib/Dockerfile.manylinux) */
TL(cma) TL(rc_verbs) TL(ud_verbs) TL(rc_mlx5) TL(ud_mlx5) TL(cuda_copy) TL(cuda_ipc)
#endif
#ifdef FAKE_UCX_TLS_RAPIDS  /* --with-cuda --without-verbs (rapidsai/ucx-wheels python/libucx/setup.py) */
TL(cma) TL(cuda_copy) TL(cuda_ipc) TL(gdr_copy)
#endif
#ifdef FAKE_UCX_TLS_ZE_MODULE  /* a Level Zero module (libuct_ze) that loads here */
TL(ze_copy) TL(ze_ipc)
#endif
#ifdef FAKE_UCX_TLS_CUDA_MODULE  /* a CUDA module (libuct_cuda) that needs libcuda.so.1 */
TL(cuda_copy) TL(cuda_ipc)
#endif
