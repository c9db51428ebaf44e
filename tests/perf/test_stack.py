#!/usr/bin/env python3
"""The constructor's stack: under 8 KiB on every path, measured, and a host under `ulimit -s 24`.

The constructor runs on the host's stack before `main`, and the host may have made it small. The
measurement: a host program linked to a library whose constructor runs before the preloaded ones
and paints 48 KiB of the stack below its own frame with a pattern; `main` finds the deepest byte
that is no longer the pattern. The preloaded constructor is called at the same depth as the paint's
(ld.so's call_init loop), so that depth plus the 512 bytes the paint leaves under its own frame is
an upper bound of the stack the library's constructor used (it also counts whatever the loader
does deeper afterwards: the empty library's figure is shown for scale). A constructor that uses
12,000 bytes (a control built here) must measure at least that, or the method is broken. Each path
is checked to decide what it should, so a budget is never met by a path that skipped its work.
"""
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALL, ALWAYS, BUILD_DIR, C, LIB, SOURCE_DIR, Checks, case, env_for, have, main  # noqa: E402

EMPTY = os.environ.get("UCXTLSTEST_EMPTY_LIB", "")
BUDGET = 8192

PAINT_C = r"""
#define PAINT (48 * 1024)
#define GAP 512
unsigned char *paint_lo, *paint_hi;
__attribute__((constructor, noinline)) static void paint(void) {
  volatile unsigned char here = 0;
  unsigned char *hi = (unsigned char *)&here - GAP, *lo = hi - PAINT;
  for (volatile unsigned char *p = hi; p > lo;) *--p = 0xA5;  /* downwards: the stack grows */
  paint_lo = lo, paint_hi = hi;
}
"""
HOG_C = r"""
__attribute__((constructor)) static void hog(void) {
  volatile char b[12000];
  for (int i = 0; i < 12000; i++) b[i] = 1;
}
"""
HOST_C = r"""
#include <stdio.h>
#include <stdlib.h>
extern unsigned char *paint_lo, *paint_hi;
int main(void) {
  unsigned char *p = paint_lo;
  while (p < paint_hi && *p == 0xA5) p++;
  long used = (long)(paint_hi - p);
  const char *v = getenv("UCX_TLS");
  printf("%ld %s\n", used, v ? v : "<unset>");
  return 0;
}
"""

# name, machine, variables, expected UCX_TLS. The "set" paths compose the template with
# UCXTLS_WRITE=always (every fact read, the longest value written); the default's own paths follow.
A = ALWAYS
PATHS = [
    ("set, busy NVIDIA node", "dgx", A, C),
    ("set, busy AMD node", "mi300x", A, "rc_x,rc,dc_x,dc,rocm_copy"),
    ("set, busy Intel node", "intel-busy", A, "rc_x,rc,dc_x,dc,ze_copy"),
    ("set with the debug line", "dgx", dict(A, UCXTLS_DEBUG="1"), C),
    ("set, container given uverbs3", "container-one-of-eight", A, C),
    ("the default, busy NVIDIA node: unset, with the debug line", "dgx", {"UCXTLS_DEBUG": "1"}, "<unset>"),
    ("the default, busy AMD node: all, with the debug line", "mi300x", {"UCXTLS_DEBUG": "1"}, ALL),
    ("keep: UCX_TLS set by the user", "dgx", {"UCX_TLS": "tcp"}, "tcp"),
    ("skip: disabled", "dgx", dict(A, UCXTLS_DISABLE="1"), "<unset>"),
    ("skip: no GPU, with the debug line", "no-gpu", {"UCXTLS_DEBUG": "1"}, "<unset>"),
    ("clear: an inherited value on a node without a GPU", "no-gpu", {"UCX_TLS": C, "UCXTLS_DERIVED": C}, "<unset>"),
    ("set all: a GPU node without RDMA (32 EFA), with the debug line", "aws-p5", {"UCXTLS_DEBUG": "1"}, "all"),
    ("repair a kept value, with the debug line", "intel-busy", {"UCX_TLS": C, "UCXTLS_REPAIR": "1", "UCXTLS_DEBUG": "1"},
     "rc_x,rc,dc_x,dc,ze_copy"),
    ("invalid setting: the error line", "dgx", dict(A, UCXTLS_ACCEL="bogus"), "<unset>"),
    ("unknown variable and debug lines", "intel-busy", dict(A, UCXTLS_ACCELL="ze", UCXTLS_DEBUG="1"), "rc_x,rc,dc_x,dc,ze_copy"),
    ("explain-sized evidence: AMD with a GPU- list", "mi300x",
     dict(A, ROCR_VISIBLE_DEVICES="GPU-505ff276f021952c", UCXTLS_DEBUG="1"), "rc_x,rc,dc_x,dc,rocm_copy"),
]

def build(scratch):
    paint = os.path.join(scratch, "libpaint.so")
    host = os.path.join(scratch, "stack_host")
    src = os.path.join(scratch, "paint.c")
    with open(src, "w") as f:
        f.write(PAINT_C)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", src, "-o", paint], check=True)
    src = os.path.join(scratch, "host.c")
    with open(src, "w") as f:
        f.write(HOST_C)
    subprocess.run(["gcc", "-O1", src, "-o", host, "-L" + scratch, "-lpaint", "-Wl,-rpath," + scratch], check=True)
    src = os.path.join(scratch, "hog.c")
    with open(src, "w") as f:
        f.write(HOG_C)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", src, "-o", os.path.join(scratch, "libhog.so")], check=True)
    return host


def measure(host, env):
    p = subprocess.run([host], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    used, value = p.stdout.decode().split(None, 1)
    return int(used), value.strip(), p


def start():
    t = Checks("the constructor's stack: measured per path, and ulimit -s 24")
    if not have("gcc"):
        t.skip("all", "gcc not installed")
        t.exit()
    if not EMPTY or not os.path.exists(EMPTY):
        t.skip("all", "the empty preload library (UCXTLSTEST_EMPTY_LIB) is not built; run through ctest")
        t.exit()
    return t


@case("the constructor's stack per path (a painted stack)")
def painted_stack(t):
    with tempfile.TemporaryDirectory() as scratch:
        host = build(scratch)
        # The control: the paint runs before a preloaded constructor and sees what it uses.
        hog, _, _ = measure(host, env_for("dgx", LD_PRELOAD=os.path.join(scratch, "libhog.so")))
        t.check("control: a preloaded constructor with a 12,000-byte frame measures %d bytes" % (hog + 512),
                hog + 512 >= 12000)
        # The driver tier, with an answer saved for the dgx fixture by the real command and helper
        # (a fake libcuda.so.1 reporting 8 GPUs), and with none saved.
        fakes, cache, empty_cache = (os.path.join(scratch, d) for d in ("fakes", "cache", "empty-cache"))
        os.makedirs(fakes)
        os.makedirs(empty_cache, mode=0o755)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o",
                        os.path.join(fakes, "libcuda.so.1"), os.path.join(SOURCE_DIR, "tests", "driver", "fake_cuda.c")],
                       check=True)
        saved = subprocess.run([os.path.join(BUILD_DIR, "ucxtls"), "probe", "--save"],
                               env=env_for("dgx", preload=False, LD_LIBRARY_PATH=fakes, FAKE_CUDA_COUNT="8",
                                           UCXTLS_CACHE_DIR=cache), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        t.check("driver tier: ucxtls probe --save stored an answer for the dgx fixture", saved.returncode == 0,
                saved.stdout.decode())
        paths = PATHS + [
            ("driver tier: the saved answer, with the debug line", "dgx",
             dict(A, UCXTLS_PROBE="driver", UCXTLS_CACHE_DIR=cache, UCXTLS_DEBUG="1"), C),
            ("driver tier: no saved answer (the kernel answer stands)", "dgx",
             dict(A, UCXTLS_PROBE="driver", UCXTLS_CACHE_DIR=empty_cache, UCXTLS_DEBUG="1"), C),
        ]
        # The driver rows took the path they name (the debug line says which).
        said = {True: "driver API: 8 device(s)", False: "no saved answer at"}
        for with_answer in (True, False):
            _, _, p = measure(host, env_for("dgx", **paths[len(PATHS) + (0 if with_answer else 1)][2]))
            t.check("driver tier, %s: the debug line says %r" % ("saved answer" if with_answer else "none saved",
                    said[with_answer]), said[with_answer] in p.stderr.decode(), p.stderr.decode())
        for name, machine, extra, want in paths:
            floor, _, _ = measure(host, env_for(machine, LD_PRELOAD=EMPTY, **extra))
            used, value, p = measure(host, env_for(machine, **extra))
            stack = used + 512
            t.check("%s: UCX_TLS=%s, constructor stack at most %d bytes (budget < %d; the empty library: %d)" % (
                name, value, stack, BUDGET, floor + 512), value == want and stack < BUDGET, p.stderr.decode())



@case("ulimit -s 24: every run survives")
def small_stacks(t):
    # A host under `ulimit -s 24` (an empty preload needs about 14 KiB): every run survives.
    def small_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (24 * 1024, 24 * 1024))
    for machine, extra, want in [("dgx", A, C), ("mi300x", A, "rc_x,rc,dc_x,dc,rocm_copy"),
                                 ("intel-busy", dict(A, UCXTLS_DEBUG="1"), "rc_x,rc,dc_x,dc,ze_copy"),
                                 ("mi300x", {"UCXTLS_DEBUG": "1"}, ALL),
                                 ("dgx", dict(A, UCXTLS_ACCEL="bogus"), "<unset>")]:
        for lib, label in ((EMPTY, "the empty library"), (LIB, "libucxtls.so")):
            env = env_for(machine, LD_PRELOAD=lib, **extra)
            runs = [subprocess.run(["/bin/sh", "-c", 'printf "%s" "${UCX_TLS-<unset>}"'], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=small_stack,
                                   timeout=60) for _ in range(20)]
            ok = all(r.returncode == 0 for r in runs)
            if lib == LIB:
                ok = ok and all(r.stdout.decode() == want for r in runs)
            t.check("ulimit -s 24, %s %s, %s: 20 runs of /bin/sh survive%s" % (
                machine, " ".join("%s=%s" % kv for kv in extra.items()), label,
                " with UCX_TLS=" + want if lib == LIB else ""),
                ok, "; ".join("rc=%d %r" % (r.returncode, r.stdout) for r in runs[:3]))


if __name__ == "__main__":
    main("the constructor's stack: measured per path, and ulimit -s 24", start)
