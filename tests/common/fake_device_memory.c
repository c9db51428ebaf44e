/* Device memory for the fake GPU drivers: see fake_device_memory.h. */
#define _GNU_SOURCE
#include "fake_device_memory.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_alloc_t *allocs;
static size_t nallocs, allocs_cap;
static uint64_t next_alloc_id = 1;

size_t fake_mem_page_size(void) {
  static size_t ps;
  if (!ps) ps = (size_t)sysconf(_SC_PAGESIZE);
  return ps;
}

/* Reserves size bytes aligned to alignment (a power of two, at least a page): PROT_NONE. */
static char *reserve(size_t size, size_t alignment) {
  size_t total = size + alignment;
  char *raw = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  char *aligned = (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
  if (aligned > raw) munmap(raw, (size_t)(aligned - raw));
  size_t tail = (size_t)((raw + total) - (aligned + size));
  if (tail) munmap(aligned + size, tail);
  return aligned;
}

static void unmap(const fake_alloc_t *a) {
  if (a->shadow && a->shadow != a->base) munmap(a->shadow, a->mapped);
  munmap(a->base, a->mapped);
  if (a->fd >= 0) close(a->fd);
}

int fake_mem_alloc(size_t size, size_t alignment, int hidden, int kind, void *owner, void **out) {
  if (alignment & (alignment - 1)) return EINVAL;
  if (alignment < fake_mem_page_size()) alignment = fake_mem_page_size();
  size_t length = (size + fake_mem_page_size() - 1) & ~(fake_mem_page_size() - 1);
  if (length == 0) length = fake_mem_page_size();
  fake_alloc_t a = {.size = size, .mapped = length, .fd = -1, .kind = kind, .owner = owner};
  a.base = reserve(length, alignment);
  if (!a.base) return ENOMEM;
  if (hidden) {
    /* The same pages twice: PROT_NONE where the program looks, read-write for the driver. */
    a.fd = (int)syscall(SYS_memfd_create, "fake-gpu-vram", 1u /* MFD_CLOEXEC */);
    if (a.fd < 0 || ftruncate(a.fd, (off_t)length) != 0 ||
        mmap(a.base, length, PROT_NONE, MAP_SHARED | MAP_FIXED, a.fd, 0) == MAP_FAILED) {
      unmap(&a);
      return ENOMEM;
    }
    a.shadow = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
    if (a.shadow == MAP_FAILED) {
      a.shadow = NULL;
      unmap(&a);
      return ENOMEM;
    }
  } else {
    if (mprotect(a.base, length, PROT_READ | PROT_WRITE) != 0) {
      unmap(&a);
      return ENOMEM;
    }
    a.shadow = a.base;
  }
  pthread_mutex_lock(&allocs_lock);
  if (nallocs == allocs_cap) {
    size_t cap = allocs_cap ? allocs_cap * 2 : 64;
    fake_alloc_t *grown = realloc(allocs, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&allocs_lock);
      unmap(&a);
      return ENOMEM;
    }
    allocs = grown;
    allocs_cap = cap;
  }
  a.id = next_alloc_id++;
  allocs[nallocs++] = a;
  pthread_mutex_unlock(&allocs_lock);
  *out = a.base;
  return 0;
}

int fake_mem_free(void *base, fake_alloc_t *freed) {
  fake_alloc_t a;
  int found = 0;
  pthread_mutex_lock(&allocs_lock);
  for (size_t i = 0; i < nallocs; i++) {
    if (allocs[i].base == (char *)base) {
      a = allocs[i];
      allocs[i] = allocs[--nallocs];
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&allocs_lock);
  if (!found) return -1;
  if (freed) *freed = a;
  unmap(&a);
  return 0;
}

int fake_mem_find(const void *p, fake_alloc_t *out) {
  int found = 0;
  pthread_mutex_lock(&allocs_lock);
  for (size_t i = 0; i < nallocs; i++) {
    if ((const char *)p >= allocs[i].base && (const char *)p < allocs[i].base + allocs[i].size) {
      *out = allocs[i];
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&allocs_lock);
  return found;
}

void *fake_mem_reach(const void *p, size_t n) {
  fake_alloc_t a;
  if (!fake_mem_find(p, &a)) return (void *)p;
  size_t off = (size_t)((const char *)p - a.base);
  if (n > a.size - off) return NULL;
  return a.shadow + off;
}
