// System calls with the architecture's own instruction: an imported function binds to the
// executable's definition first (a host's own `syscall` or `sigprocmask`), called before its
// constructors set it up, so the library imports none. The result, or -errno; errno untouched.
// Registers: syscall(2), "Architecture calling conventions" (i386's int $0x80 works on every x86
// kernel). Another architecture falls back to libc's syscall(3) (an import: a limit, README).
#pragma once

namespace ucxtls {

#if defined(__x86_64__)
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__i386__)
// Five arguments at most (ebp would be the sixth): mmap goes through old_mmap (sys.cc map_pages).
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e) : "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
}
#else
#define UCXTLS_LIBC_SYSCALL 1
long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0);  // sys.cc
#endif

}  // namespace ucxtls
