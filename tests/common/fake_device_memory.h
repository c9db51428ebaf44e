/* Device memory for the fake GPU drivers of the tests (tests/ze, tests/cuda): memory that THE
   HOST CANNOT READ OR WRITE, as on a real GPU, whose bytes only the driver's copies reach.
   Each hidden allocation is a memfd mapped twice: PROT_NONE at the address handed out (a host
   load or store there faults with SIGSEGV; process_vm_readv of it fails with EFAULT), and
   read-write at a private "shadow" address. A visible allocation (host or shared memory) is
   ordinary read-write memory; its shadow is its base. Thread-safe; each driver library compiles
   its own copy (hidden symbols), so each driver sees its own allocations alone. */
#ifndef UCXTLS_TEST_FAKE_DEVICE_MEMORY_H
#define UCXTLS_TEST_FAKE_DEVICE_MEMORY_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *base;     /* what the program sees: [base, base + size) */
  size_t size, mapped;
  char *shadow;   /* where the driver reaches the bytes */
  int fd;         /* the memfd of a hidden allocation, else -1 */
  int kind;       /* the driver's memory type, kept as given */
  void *owner;    /* the driver's device or context, kept as given */
  uint64_t id;    /* unique within the process, from 1 */
} fake_alloc_t;

size_t fake_mem_page_size(void);
/* 0, or an errno value (ENOMEM). alignment: 0 or a power of two. */
int fake_mem_alloc(size_t size, size_t alignment, int hidden, int kind, void *owner, void **out);
/* 0 and *freed filled (may be NULL), or -1 when base is not the start of an allocation. */
int fake_mem_free(void *base, fake_alloc_t *freed);
/* 1 and *out filled when p lies in an allocation, else 0. */
int fake_mem_find(const void *p, fake_alloc_t *out);
/* Where the driver reaches [p, p+n): the shadow of an allocation, or p itself (the program's
   own memory, which a real GPU reaches through the IOMMU). NULL when the range starts in an
   allocation and runs past its end. */
void *fake_mem_reach(const void *p, size_t n);
#endif
