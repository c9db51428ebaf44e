#!/usr/bin/env python3
"""Static, musl-linked and 32-bit processes under the library.

- A `gcc -static` program: ld.so never runs, LD_PRELOAD is ignored; stdout, status and stderr
  are those of the run without the library.
- A `musl-gcc` program: musl's loader preloads the glibc-built, libc-only library; the program
  runs unaffected (stdout apart from the value it prints, status, stderr) and the value is set.
- A 32-bit copy of the library, built from the same CMake project with the same flags
  (BUILD_DIR/m32, -m32), passes the same artifact rules as the 64-bit one (NEEDED libc.so.6 alone,
  nothing exported, GLIBC <= 2.17, no *_chk, no function imported), sets the value in a 32-bit
  program, and reads a ucx.conf over 2 GiB as the 64-bit one does (O_LARGEFILE); a 32-bit program given the 64-bit library gets ld.so's
  "wrong ELF class" line and runs unaffected (where the kernel runs 32-bit programs). The `$LIB`
  recipe itself (both copies under 'P/$LIB/libucxtls.so', a 32-bit process getting the value) is
  the `cli_install` test's.

SKIP with the reason where a toolchain is missing.
"""
import os
import re
import subprocess

from common import ARGS, BUILD_DIR, C, LIB, SOURCE_DIR, case, compile_c, env_for, have, main, scratch_dir

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  const char *v = getenv("UCX_TLS");
  printf("hello from a %d-bit program\nUCX_TLS=%s\n", (int)(8 * sizeof(void *)), v ? v : "<unset>");
  return 3;
}
"""


def run(argv, env):
    return subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def lines(b):
    return b.decode(errors="replace").splitlines()


def work_dir():
    """A scratch directory for this case's programs (removed when the process ends)."""
    return scratch_dir("ucxtls-foreign-")


@case("static binary", tags=("static",))
def static_binary(t):
    work = work_dir()
    exe, err = compile_c(work, "static", PROGRAM, flags=["-static"])
    if exe is None:
        t.skip("static binary", "gcc -static failed (libc.a missing?): " + err.splitlines()[-1] if err else "")
        return
    plain, pre = run([exe], env_for("dgx", preload=False)), run([exe], env_for("dgx", UCXTLS_DEBUG="1"))
    t.equal("static: stdout identical (LD_PRELOAD ignored, UCX_TLS unset)", pre.stdout, plain.stdout)
    t.check("static: the program saw no value", b"UCX_TLS=<unset>" in pre.stdout, pre.stdout.decode())
    t.equal("static: exit status identical (3)", pre.returncode, plain.returncode)
    t.equal("static: stderr identical (silent)", pre.stderr, plain.stderr)


@case("musl program", tags=("musl",))
def musl_binary(t):
    work = work_dir()
    if not have("musl-gcc"):
        t.skip("musl program", "musl-gcc not installed (Debian: musl-tools)")
        return
    exe, err = compile_c(work, "musl", PROGRAM, cc="musl-gcc")
    if exe is None:
        t.skip("musl program", "musl-gcc failed: " + (err.splitlines()[-1] if err else ""))
        return
    plain, pre = run([exe], env_for("dgx", preload=False)), run([exe], env_for("dgx"))
    t.equal("musl: the first line of stdout identical", lines(pre.stdout)[:1], lines(plain.stdout)[:1])
    t.equal("musl: the library ran under musl's loader and set the value", lines(pre.stdout)[1:],
            ["UCX_TLS=" + C], pre.stderr.decode())
    t.equal("musl: exit status identical (3)", pre.returncode, plain.returncode)
    t.equal("musl: stderr identical (silent)", pre.stderr, plain.stderr)
    pre = run([exe], env_for("dgx", UCXTLS_DEBUG="1", UCXTLS_ACCEL="bogus"))
    t.check("musl: an invalid setting gives the one stderr line", pre.stderr.decode().count("ucxtls: UCXTLS_ACCEL=") == 1,
            pre.stderr.decode())


def artifact_rules(t, lib, label):
    dyn = subprocess.run(["readelf", "-d", "-W", lib], stdout=subprocess.PIPE).stdout.decode()
    t.equal(label + ": NEEDED is libc.so.6 alone", re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn), ["libc.so.6"])
    syms = subprocess.run(["objdump", "-T", lib], stdout=subprocess.PIPE).stdout.decode()
    versions = sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", syms)})
    t.check(label + ": highest GLIBC_ version <= 2.17 (%s)" % (".".join(map(str, versions[-1])) if versions else "none"),
            bool(versions) and versions[-1] <= (2, 17), syms)
    t.equal(label + ": no *_chk import", [l for l in syms.splitlines() if "_chk" in l], [])
    defined = [l for l in subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE).stdout.decode().splitlines()
               if l.split()[-2:-1] != ["A"]]
    t.equal(label + ": nothing exported", defined, [])
    undefined = sorted(re.findall(r"\*UND\*\s+\S+\s+(?:\S+\s+)?(\S+)$", syms, re.M))
    t.equal(label + ": imports no function (__environ alone: raw system calls, its own pages)", undefined,
            ["__environ"], syms)


def program32(t):
    """A 32-bit program, or None after a SKIP."""
    exe32, err = compile_c(work_dir(), "prog32", PROGRAM, flags=["-m32"])
    if exe32 is None:
        t.skip("32-bit process", "gcc -m32 cannot build a program (Debian: gcc-multilib): " + (err.splitlines()[-1] if err else ""))
    return exe32


@case("32-bit: a copy of the library built with -m32 passes the artifact rules", tags=("m32_library",))
def library32(t):
    if program32(t) is None:
        return
    cmake = ARGS[0] if ARGS else "cmake"
    m32 = os.path.join(BUILD_DIR, "m32")
    cfg = subprocess.run([cmake, "-S", SOURCE_DIR, "-B", m32, "-DUCXTLS_TESTS=OFF", "-DCMAKE_C_FLAGS=-m32",
                          "-DCMAKE_CXX_FLAGS=-m32", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if cfg.returncode != 0:
        t.skip("32-bit process", "cannot configure a -m32 build (Debian: g++-multilib): " + cfg.stdout.decode()[-400:])
        return
    b = subprocess.run([cmake, "--build", m32, "--target", "ucxtls", "-j", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if not t.check("build the 32-bit library (same project, same flags, -m32)", b.returncode == 0, b.stdout.decode()[-3000:]):
        return
    lib32 = os.path.join(m32, os.path.basename(LIB))
    t.check("the 32-bit copy is ELFCLASS32", "ELF32" in subprocess.run(["readelf", "-h", lib32], stdout=subprocess.PIPE).stdout.decode())
    artifact_rules(t, lib32, "32-bit copy")
    exe32 = program32(t)
    try:
        run([exe32], env_for(None, preload=False))
    except OSError as e:
        t.skip("32-bit process with the 32-bit copy", "this kernel cannot run 32-bit programs (%s)" % e.strerror)
        return
    env = env_for("dgx", preload=False)
    env["LD_PRELOAD"] = lib32
    p = run([exe32], env)
    t.check("32-bit copy in a 32-bit process (int $0x80, old_mmap, the stack's auxv): the value is set",
            "UCX_TLS=%s\n" % C in p.stdout.decode() and p.returncode == 3, p.stdout.decode() + p.stderr.decode())
    # A ucx.conf over 2 GiB (sparse; no UCX_TLS line in its first MiB): a 32-bit open without
    # O_LARGEFILE fails with EOVERFLOW, "cannot tell", where a 64-bit process reads it.
    home = scratch_dir("ucxtls-bigconf-")
    with open(os.path.join(home, "ucx.conf"), "wb") as f:
        f.write(b"# padding\n")
        f.truncate((2 << 30) + 4096)
    env["HOME"] = home
    p32 = run([exe32], env)
    p64 = run(["/bin/sh", "-c", 'echo "UCX_TLS=${UCX_TLS-<unset>}"'], env_for("dgx", HOME=home))
    t.equal("a 2 GiB+ ucx.conf: the 64-bit library sets the value", p64.stdout.decode(), "UCX_TLS=%s\n" % C)
    t.check("a 2 GiB+ ucx.conf: the 32-bit copy does as the 64-bit one (O_LARGEFILE)",
            "UCX_TLS=%s\n" % C in p32.stdout.decode(), p32.stdout.decode() + p32.stderr.decode())
    os.unlink(os.path.join(home, "ucx.conf"))


@case("32-bit: a 32-bit program given the 64-bit library", tags=("m32_process",))
def program32_lib64(t):
    exe32 = program32(t)
    if exe32 is None:
        return
    try:
        run([exe32], env_for(None, preload=False))
    except OSError as e:
        t.skip("a 32-bit program given the 64-bit library",
               "this kernel cannot run 32-bit programs (%s; no IA32 emulation)" % e.strerror)
        return
    plain, pre = run([exe32], env_for("dgx", preload=False)), run([exe32], env_for("dgx"))
    t.equal("32-bit program given the 64-bit library: stdout identical (no value)", pre.stdout, plain.stdout)
    t.equal("32-bit program given the 64-bit library: exit status identical (3)", pre.returncode, plain.returncode)
    t.check("32-bit program given the 64-bit library: ld.so's 'wrong ELF class' line alone on stderr",
            "wrong ELF class" in pre.stderr.decode() and len(lines(pre.stderr)) == 1, pre.stderr.decode())


if __name__ == "__main__":
    main("static, musl and 32-bit processes")
