#!/usr/bin/env python3
"""Late dlopen: the library loaded after main started, with other threads running.

1. Python: threads calling the C getenv (GIL released) and reading os.environ while the main
   thread runs ctypes.CDLL(lib) on the DGX fixture; repeated to give a race a chance. No crash.
   What is observed is printed and asserted: nothing is written while other threads run (one of
   them could be inside unsetenv or setenv, which edit the environment in place), so neither
   os.environ, C getenv nor a child sees UCX_TLS.
2. C: a host whose threads spin on getenv while another thread, with a 64 KiB stack, dlopens the
   library (the constructor's deepest path needs about 31 KiB of stack). No crash, nothing written.
3. C: setenv, then dlopen: with one thread the value is written; with another thread running the
   array setenv made may be freed by its next setenv, so it is not even read: nothing written,
   nothing printed (a dlopen'd constructor has no exec-time array to read UCXTLS_DEBUG from).
"""
import subprocess
import tempfile

from common import C, LIB, case, compile_c, env_for, main

PY = r"""
import ctypes, os, subprocess, sys, threading, time
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
libc.getenv.argtypes = [ctypes.c_char_p]
stop = False
def c_reader():
    while not stop:
        libc.getenv(b"UCX_TLS"); libc.getenv(b"UCXTLS_DERIVED"); libc.getenv(b"PATH")
def py_worker():
    n = 0
    while not stop:
        os.environ.get("UCX_TLS"); n += sum(range(50))
threads = [threading.Thread(target=c_reader) for _ in range(3)] + [threading.Thread(target=py_worker)]
for t in threads: t.start()
time.sleep(0.02)
ctypes.CDLL(sys.argv[1])
stop = True
for t in threads: t.join()
show = ["/bin/sh", "-c", 'printf "%s" "${UCX_TLS-<unset>}"']
print("os.environ: %s" % os.environ.get("UCX_TLS", "<unset>"))
print("getenv: %s" % (libc.getenv(b"UCX_TLS") or b"<unset>").decode())
print("child(env=None): %s" % subprocess.run(show, stdout=subprocess.PIPE).stdout.decode())
print("child(env=dict(os.environ)): %s" % subprocess.run(show, stdout=subprocess.PIPE, env=dict(os.environ)).stdout.decode())
"""

C_HOST = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static volatile int stop;
static void *spin(void *arg) {
  (void)arg;
  while (!stop) { getenv("UCX_TLS"); getenv("PATH"); }
  return NULL;
}
static void *load(void *lib) {
  return dlopen((const char *)lib, RTLD_NOW);
}
int main(int argc, char **argv) {
  pthread_t s[3], l;
  for (int i = 0; i < 3; i++) pthread_create(&s[i], NULL, spin, NULL);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  void *h = NULL;
  if (pthread_create(&l, &a, load, argv[1])) return 2;
  pthread_join(l, &h);
  stop = 1;
  for (int i = 0; i < 3; i++) pthread_join(s[i], NULL);
  const char *v = getenv("UCX_TLS");
  printf("loaded=%d UCX_TLS=%s\n", h != NULL, v ? v : "<unset>");
  return 0;
}
"""

RUNS = 10


@case("python: ctypes.CDLL with threads running")
def python_dlopen(t):
    env = env_for("dgx", preload=False)
    outs = set()
    crashes = []
    for i in range(RUNS):
        p = subprocess.run(["python3", "-c", PY, LIB], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if p.returncode != 0:
            crashes.append("rc %d: %s" % (p.returncode, p.stderr.decode()[-500:]))
        outs.add(p.stdout.decode())
    t.equal("python ctypes.CDLL with 4 threads running, %d runs: no crash" % RUNS, crashes, [])
    t.equal("every run observed the same", len(outs), 1, "\n".join(outs))
    seen = dict(l.split(": ", 1) for l in sorted(outs)[0].splitlines() if ": " in l)
    for k, v in sorted(seen.items()):
        print("     observed: %s: %s" % (k, v))
    t.equal("os.environ does not see a value (snapshot taken at startup)", seen.get("os.environ"), "<unset>")
    t.equal("C getenv: nothing written while other threads run", seen.get("getenv"), "<unset>")
    t.equal("a child with the inherited environment (env=None): nothing", seen.get("child(env=None)"), "<unset>")
    t.equal("a child given env=dict(os.environ) does not", seen.get("child(env=dict(os.environ))"), "<unset>")


@case("C host: dlopen from a small-stack thread while threads call getenv")
def c_dlopen(t):
    env = env_for("dgx", preload=False)
    with tempfile.TemporaryDirectory(prefix="ucxtls-dlopen-") as work:
        host, err = compile_c(work, "host", C_HOST, flags=["-pthread", "-ldl"])
        if t.check("compile the C host", host is not None, err or ""):
            bad = []
            for i in range(RUNS):
                p = subprocess.run([host, LIB], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
                if p.returncode != 0 or p.stdout.decode().strip() != "loaded=1 UCX_TLS=<unset>":
                    bad.append("rc %d: %r %r" % (p.returncode, p.stdout, p.stderr[-300:]))
            t.equal("C host: dlopen from a 64 KiB-stack thread while 3 threads call getenv, %d runs: "
                    "loaded, nothing written while other threads run, no crash" % RUNS, bad, [])


# A host that calls setenv (so __environ is glibc's heap array, not the exec's), optionally starts
# a thread, then dlopens the library: glibc hands a dlopen'd constructor the current __environ as
# envp, so envp alone cannot tell the exec's array from one a concurrent setenv may free.
SETENV_HOST = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static volatile int stop;
static void *idle(void *arg) { (void)arg; while (!stop) usleep(1000); return NULL; }
int main(int argc, char **argv) {
  (void)argc;
  setenv("HOST_VAR", "1", 1);
  pthread_t t;
  const int threaded = !strcmp(argv[2], "thread");
  if (threaded && pthread_create(&t, NULL, idle, NULL)) return 2;
  void *h = dlopen(argv[1], RTLD_NOW);
  stop = 1;
  if (threaded) pthread_join(t, NULL);
  const char *v = getenv("UCX_TLS");
  printf("loaded=%d UCX_TLS=%s\n", h != NULL, v ? v : "<unset>");
  return 0;
}
"""


@case("C host: setenv, then dlopen: written with one thread, not even read while another runs")
def setenv_then_dlopen(t):
    env = env_for("dgx", preload=False, UCXTLS_DEBUG="1")
    with tempfile.TemporaryDirectory(prefix="ucxtls-dlopen-") as work:
        host, err = compile_c(work, "host", SETENV_HOST, flags=["-pthread", "-ldl"])
        if not t.check("compile the C host", host is not None, err or ""):
            return
        p = subprocess.run([host, LIB, "alone"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        t.equal("one thread: the value is set (nothing can free the array under the library)",
                p.stdout.decode().strip(), "loaded=1 UCX_TLS=" + C, p.stderr.decode())
        p = subprocess.run([host, LIB, "thread"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        t.equal("another thread runs: nothing is written (envp given to a dlopen'd constructor is not the exec's)",
                p.stdout.decode().strip(), "loaded=1 UCX_TLS=<unset>", p.stderr.decode())
        t.equal("nothing printed: the debug request cannot be read safely", p.stderr.decode(), "")


if __name__ == "__main__":
    main("late dlopen with threads running")
