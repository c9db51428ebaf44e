/* shim/strings.c against libc: the library's own string functions (linked into libucxtls.so
 * instead of libc's: docs/performance.md) must return what libc's return, on every length, alignment and
 * overlap the library could hand them. Compiled from the same source under other names. */
#define memcpy ucxtls_memcpy
#define memmove ucxtls_memmove
#define memset ucxtls_memset
#define memcmp ucxtls_memcmp
#define memchr ucxtls_memchr
#define strlen ucxtls_strlen
#define strcmp ucxtls_strcmp
#define strncmp ucxtls_strncmp
#define strchr ucxtls_strchr
#define strrchr ucxtls_strrchr
#define strstr ucxtls_strstr
#define strncpy ucxtls_strncpy
#include "../../shim/strings.c"
#undef memcpy
#undef memmove
#undef memset
#undef memcmp
#undef memchr
#undef strlen
#undef strcmp
#undef strncmp
#undef strchr
#undef strrchr
#undef strstr
#undef strncpy

#include <stdio.h>
#include <string.h>

static int failed, passed;

static void check(int ok, const char *what, int a, int b, int c) {
  if (ok) {
    passed++;
  } else if (failed++ < 20) {
    printf("FAIL %s (case %d %d %d)\n", what, a, b, c);
  }
}

static int sign(int v) { return (v > 0) - (v < 0); }

int main(void) {
  static const char *words[] = {"", "a", "ab", "UCX_TLS", "UCX_TLSX", "UCXTLS_DERIVED", "rc_x,rc,dc_x,dc,{copy}",
                                "{copy}", "/sys/class/infiniband", "uverbs", "\xff\x80", "aaaaaaaaaaaaaaaaaaab"};
  const int nw = (int)(sizeof words / sizeof *words);
  for (int i = 0; i < nw; i++) {
    const char *s = words[i];
    check(ucxtls_strlen(s) == strlen(s), "strlen", i, 0, 0);
    for (int c = 0; c < 256; c += 5) {
      check(ucxtls_strchr(s, c) == strchr(s, c), "strchr", i, c, 0);
      check(ucxtls_strrchr(s, c) == strrchr(s, c), "strrchr", i, c, 0);
      check(ucxtls_memchr(s, c, strlen(s)) == memchr(s, c, strlen(s)), "memchr", i, c, 0);
    }
    check(ucxtls_strchr(s, 0) == strchr(s, 0), "strchr NUL", i, 0, 0);
    check(ucxtls_strrchr(s, 0) == strrchr(s, 0), "strrchr NUL", i, 0, 0);
    for (int j = 0; j < nw; j++) {
      const char *t = words[j];
      check(sign(ucxtls_strcmp(s, t)) == sign(strcmp(s, t)), "strcmp", i, j, 0);
      check(ucxtls_strstr(s, t) == strstr(s, t), "strstr", i, j, 0);
      for (size_t n = 0; n < 24; n++) {
        check(sign(ucxtls_strncmp(s, t, n)) == sign(strncmp(s, t, n)), "strncmp", i, j, (int)n);
        size_t m = n < strlen(s) + 1 && n < strlen(t) + 1 ? n : 0;
        check(sign(ucxtls_memcmp(s, t, m)) == sign(memcmp(s, t, m)), "memcmp", i, j, (int)m);
      }
    }
    for (size_t n = 0; n < 30; n++) {
      char a[32], b[32];
      memset(a, 'x', sizeof a);
      memset(b, 'x', sizeof b);
      ucxtls_strncpy(a, s, n);
      strncpy(b, s, n);
      check(!memcmp(a, b, sizeof a), "strncpy", i, (int)n, 0);
    }
  }
  /* Copies and fills at every length and alignment, and overlapping moves both ways. */
  unsigned char src[96], a[128], b[128];
  for (int k = 0; k < (int)sizeof src; k++) src[k] = (unsigned char)(k * 37 + 11);
  for (int off = 0; off < 9; off++)
    for (int len = 0; len < 80; len++) {
      memset(a, 0, sizeof a);
      memset(b, 0, sizeof b);
      check(ucxtls_memcpy(a + off, src + (len % 7), (size_t)len) == a + off, "memcpy result", off, len, 0);
      memcpy(b + off, src + (len % 7), (size_t)len);
      check(!memcmp(a, b, sizeof a), "memcpy", off, len, 0);
      ucxtls_memset(a + off, len, (size_t)len);
      memset(b + off, len, (size_t)len);
      check(!memcmp(a, b, sizeof a), "memset", off, len, 0);
      for (int shift = -8; shift <= 8; shift++) {
        if (off + shift < 0 || off + shift + len > (int)sizeof a) continue;
        for (int k = 0; k < (int)sizeof a; k++) a[k] = b[k] = (unsigned char)k;
        ucxtls_memmove(a + off + shift, a + off, (size_t)len);
        memmove(b + off + shift, b + off, (size_t)len);
        check(!memcmp(a, b, sizeof a), "memmove", off, len, shift);
      }
    }
  printf("%d passed, %d failed, 0 skipped\n", passed, failed);
  return failed != 0;
}
