/* The heap ceiling for the paths that write (docs/performance.md: no heap allocation beyond what
 * two setenv calls need, and the environment edit must not cost more than they do): a preload
 * library whose constructor makes exactly the two setenv calls that libucxtls.so once made on the
 * dgx fixture, and nothing else. tests/perf checks that the library's heap use is at most this
 * one's under valgrind. */
#include <stdlib.h>

__attribute__((constructor)) static void ucxtls_setenv_only_init(void) {
  setenv("UCX_TLS", "rc_x,rc,dc_x,dc,cuda_copy", 1);
  setenv("UCXTLS_DERIVED", "rc_x,rc,dc_x,dc,cuda_copy", 1);
}
