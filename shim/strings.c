/* The string functions the library calls, hidden in libucxtls.so alone: the loader binds every
 * import in every process (glibc's are IFUNCs: a resolver call each), which was most of the
 * instructions the library added to a process start (docs/performance.md). Built with -fno-builtin
 * so that no loop turns back into a call to itself; the command uses libc's. */
#include <stddef.h>

/* hot: in .text.hot, with the code every process runs (one page fault less). */
#define LOCAL __attribute__((visibility("hidden"), hot))

typedef unsigned long long __attribute__((may_alias, aligned(1))) word_t;

/* memcpy moves words, the last one overlapping the one before; under 8 bytes, 4-, 2-, 1-byte steps. */
typedef unsigned int __attribute__((may_alias, aligned(1))) half_t;
typedef unsigned short __attribute__((may_alias, aligned(1))) quarter_t;

LOCAL void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (n >= sizeof(word_t)) {
    const size_t last = n - sizeof(word_t);
    for (size_t i = 0; i < last; i += sizeof(word_t)) *(word_t *)(d + i) = *(const word_t *)(s + i);
    *(word_t *)(d + last) = *(const word_t *)(s + last);
    return dst;
  }
  if (n & 4) *(half_t *)d = *(const half_t *)s, d += 4, s += 4;
  if (n & 2) *(quarter_t *)d = *(const quarter_t *)s, d += 2, s += 2;
  if (n & 1) *d = *s;
  return dst;
}

LOCAL void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else if (d > s) {
    while (n--) d[n] = s[n];
  }
  return dst;
}

LOCAL void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

LOCAL int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *p = a, *q = b;
  for (; n; n--, p++, q++)
    if (*p != *q) return *p - *q;
  return 0;
}

/* clang calls bcmp for a memcmp whose result is only compared with zero (LLVM's SimplifyLibCalls). */
LOCAL int bcmp(const void *a, const void *b, size_t n) { return memcmp(a, b, n); }

/* A word at a time while 8 bytes remain (a word holding c has a zero byte after the xor), never
 * reading past s + n; then the bytes of the word that holds it, or of the tail. */
LOCAL void *memchr(const void *s, int c, size_t n) {
  const unsigned char *p = s;
  const unsigned char ch = (unsigned char)c;
  const unsigned long long ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL, pattern = ones * ch;
  for (; n >= sizeof(word_t); n -= sizeof(word_t), p += sizeof(word_t)) {
    const unsigned long long w = *(const word_t *)p ^ pattern;
    if ((w - ones) & ~w & highs) break;
  }
  for (; n; n--, p++)
    if (*p == ch) return (void *)p;
  return NULL;
}

LOCAL size_t strlen(const char *s) {
  const char *p = s;
  while (*p) p++;
  return (size_t)(p - s);
}

LOCAL int strcmp(const char *a, const char *b) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  while (*p && *p == *q) p++, q++;
  return *p - *q;
}

LOCAL int strncmp(const char *a, const char *b, size_t n) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  for (; n; n--, p++, q++) {
    if (*p != *q) return *p - *q;
    if (!*p) return 0;
  }
  return 0;
}

LOCAL char *strchr(const char *s, int c) {
  for (;; s++) {
    if (*s == (char)c) return (char *)s;
    if (!*s) return NULL;
  }
}

LOCAL char *strrchr(const char *s, int c) {
  const char *last = NULL;
  for (;; s++) {
    if (*s == (char)c) last = s;
    if (!*s) return (char *)last;
  }
}

LOCAL char *strstr(const char *hay, const char *needle) {
  if (!*needle) return (char *)hay;
  for (; *hay; hay++) {
    const char *h = hay, *n = needle;
    while (*n && *h == *n) h++, n++;
    if (!*n) return (char *)hay;
  }
  return NULL;
}

LOCAL char *strncpy(char *restrict dst, const char *restrict src, size_t n) {
  size_t i = 0;
  for (; i < n && src[i]; i++) dst[i] = src[i];
  for (; i < n; i++) dst[i] = '\0';
  return dst;
}
