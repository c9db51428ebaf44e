/* The parts of a fake UCX build other than libucs (fake_libucs.c), for the differential test
 * (test_differential.py): each is built once per run and copied, renamed and relinked (patchelf)
 * into every layout. What doctor reads in a real build is here as UCX writes it:
 *   ROLE_UCP:    libucp: ucp_get_version_string returning a string (its body a plain
 *                `return "..."`); the string is a placeholder the harness overwrites per layout.
 *   ROLE_UCT:    libuct, ROLE_MODULE: a uct module: the transport definitions of UCX's
 *                UCT_TL_DEFINE (uct/base/uct_iface.h), a global uct_<name>_tl whose first field is
 *                the name, registered by a constructor as UCX's are; ours reports the name.
 *                FRAMEWORK: the framework whose modules this object loads (libuct: uct, the ib
 *                module: uct_ib) with UCS_MODULE_FRAMEWORK_LOAD's list, a ":name:name" string
 *                (configure's <framework>_MODULES); libuct's is a placeholder. The module's is
 *                loaded by libucs: a module does not need libucs here, so it cannot call it.
 *   ROLE_DEP:    a library a module needs (nothing but its SONAME matters).
 *   ROLE_APP:    the program (named ucx_info in a layout): needs libucp, reports which libucp
 *                ld.so gave it, then waits (stdin) so that doctor --pid can read it.
 *   ROLE_OPENER: what `doctor --ucx PATH` stands for, a build loaded by its path with no program
 *                of its own around it (as Python's libucx does): dlopen(argv[1]) from a program
 *                with no RPATH or RUNPATH; reports as ROLE_APP, or "error\t<dlerror>".
 * Reports go to stdout, one "<what>\t<value>" line each, written whole with write(2). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

__attribute__((unused)) static void report(const char *what, const char *value) {
  char line[4200];
  int n = snprintf(line, sizeof line, "%s\t%s\n", what, value);
  if (n > 0 && write(1, line, (size_t)n) < 0) {}
}

#ifdef ROLE_UCP
static const char version[48] = "@@FAKEUCX_VERSION@@";
EXPORT const char *ucp_get_version_string(void) { return version; }
/* Code after it, as in a real libucp: doctor reads 20 bytes of the function's body. */
EXPORT void ucp_cleanup(void *context) { report("cleanup", context ? "context" : "none"); }
#endif

#if defined(ROLE_UCT) || defined(ROLE_MODULE)
/* TLS is a list such as TL(self) TL(tcp): each one a definition and a line of the report. */
#define TL(name) EXPORT char uct_##name##_tl[64] = #name;
TLS
#undef TL
#define TL(name) report("tl", #name);
#ifdef FRAMEWORK
/* After a NUL, as a literal among others would be, so that a reader finds the list's start. */
static char framework_modules[260] = "\0" FRAMEWORK_MODULES;
#endif
#ifdef ROLE_UCT  /* libuct loads its framework (it needs libucs, as UCX's does) */
EXPORT void ucs_load_modules(const char *framework, const char *modules);  /* fake_libucs.c */
__attribute__((constructor)) static void register_transports(void) {
  TLS
  ucs_load_modules(FRAMEWORK, framework_modules + 1);
}
#else
__attribute__((constructor)) static void register_transports(void) { TLS }
#ifdef FRAMEWORK  /* the module's framework, which libucs loads once the module is (fake_libucs.c) */
EXPORT const char *fake_module_framework[2] = {FRAMEWORK, framework_modules + 1};
#endif
#endif
#endif

#ifdef ROLE_UCT
EXPORT int uct_query_components(void **components, unsigned *n) { return *components = NULL, *n = 0, 0; }
#endif

#ifdef ROLE_DEP
EXPORT int fake_dep_anchor;
#endif

#ifdef ROLE_APP
const char *ucp_get_version_string(void);
int main(void) {
  Dl_info info;
  char pid[32], buf[64];
  if (dladdr((void *)ucp_get_version_string, &info) && info.dli_fname) report("libucp", info.dli_fname);
  report("version", ucp_get_version_string());
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  report("ready", pid);
  while (read(0, buf, sizeof buf) > 0) {}  /* until the harness closes stdin */
  return 0;
}
#endif

#ifdef ROLE_OPENER
int main(int argc, char **argv) {
  Dl_info info;
  void *ucp = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) : NULL;
  const char *(*version)(void) = ucp ? (const char *(*)(void))dlsym(ucp, "ucp_get_version_string") : NULL;
  if (!version) {
    const char *err = dlerror();
    report("error", err ? err : "no ucp_get_version_string");
    return 1;
  }
  if (dladdr((void *)version, &info) && info.dli_fname) report("libucp", info.dli_fname);
  report("version", version());
  report("ready", "opened");
  return 0;
}
#endif
