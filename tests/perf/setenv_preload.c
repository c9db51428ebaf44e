/* The heap floor for the busy fixture (issue 5: "no heap allocation beyond what setenv needs"): a
 * preload library whose constructor makes exactly the two setenv calls that libucxtls.so makes on
 * the dgx fixture, and nothing else. tests/perf compares the heap use of the two under valgrind. */
#include <stdlib.h>

__attribute__((constructor)) static void ucxtls_setenv_only_init(void) {
  setenv("UCX_TLS", "rc_x,rc,dc_x,dc,cuda_copy", 1);
  setenv("UCXTLS_DERIVED", "rc_x,rc,dc_x,dc,cuda_copy", 1);
}
