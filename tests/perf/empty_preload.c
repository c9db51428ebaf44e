/* The floor for the performance budgets (docs/performance.md): a preload library whose constructor does
 * nothing, built libc-only the way libucxtls.so is (NEEDED libc.so.6, -z now, relro, nothing
 * exported). Whatever libucxtls.so costs beyond this file is its own work: the constructor's
 * syscalls, its instructions, and the loader binding its imports. Built by tests/perf (CMake)
 * and by scripts/bench.sh. */
__attribute__((constructor)) static void ucxtls_empty_init(void) {}
