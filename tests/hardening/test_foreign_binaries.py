#!/usr/bin/env python3
"""Static, musl-linked and 32-bit processes under the library.

- A `gcc -static` program: ld.so never runs, LD_PRELOAD is ignored; stdout, status and stderr
  are those of the run without the library.
- A `musl-gcc` program: musl's loader preloads the glibc-built, libc-only library; the program
  runs unaffected (stdout apart from the value it prints, status, stderr) and the value is set.
- A 32-bit (`gcc -m32`) program with the `$LIB` recipe: a 32-bit copy of the library is built
  from the same CMake project with the same flags (BUILD_DIR/m32, -m32), both copies are placed
  where `LD_PRELOAD='DIR/$LIB/libucxtls.so'` resolves for each ELF class (what `$LIB` expands to
  is the path ld.so opens, seen with strace), and both a 64-bit and a 32-bit program get the value, with no
  "wrong ELF class" or "cannot be preloaded" line. The 32-bit copy passes the same artifact rules
  (NEEDED libc.so.6 alone, nothing exported, GLIBC <= 2.17, no *_chk).

SKIP with the reason where a toolchain is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from common import BUILD_DIR, LIB, SOURCE_DIR, Checks, compile_c, env_for, have

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  const char *v = getenv("UCX_TLS");
  printf("hello from a %d-bit program\nUCX_TLS=%s\n", (int)(8 * sizeof(void *)), v ? v : "<unset>");
  return 3;
}
"""
C = "rc_x,rc,dc_x,dc,cuda_copy"


def run(argv, env):
    return subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def lines(b):
    return b.decode(errors="replace").splitlines()


def static_binary(t, work):
    exe, err = compile_c(work, "static", PROGRAM, flags=["-static"])
    if exe is None:
        t.skip("static binary", "gcc -static failed (libc.a missing?): " + err.splitlines()[-1] if err else "")
        return
    plain, pre = run([exe], env_for("dgx", preload=False)), run([exe], env_for("dgx", UCXTLS_DEBUG="1"))
    t.equal("static: stdout identical (LD_PRELOAD ignored, UCX_TLS unset)", pre.stdout, plain.stdout)
    t.check("static: the program saw no value", b"UCX_TLS=<unset>" in pre.stdout, pre.stdout.decode())
    t.equal("static: exit status identical (3)", pre.returncode, plain.returncode)
    t.equal("static: stderr identical (silent)", pre.stderr, plain.stderr)


def musl_binary(t, work):
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


def expand_lib(exe, work):
    """What ld.so makes of $LIB for exe's ELF class: the path it tries to open, seen by strace
    (its error line shows the name unexpanded). None when strace cannot tell."""
    if not have("strace"):
        return None
    probe = os.path.join(work, "probe-root")
    log = os.path.join(work, "expand.log")
    env = dict(env_for(None, preload=False), LD_PRELOAD=probe + "/$LIB/nothing-here.so")
    subprocess.run(["strace", "-o", log, "-e", "trace=openat,open", exe], env=env,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    try:
        with open(log) as f:
            m = re.search(re.escape(probe) + r"/(.*)/nothing-here\.so", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


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


def bits32(t, work, cmake):
    exe32, err = compile_c(work, "prog32", PROGRAM, flags=["-m32"])
    if exe32 is None:
        t.skip("32-bit process", "gcc -m32 cannot build a program (Debian: gcc-multilib): " + (err.splitlines()[-1] if err else ""))
        return
    exe64, err = compile_c(work, "prog64", PROGRAM)
    if not t.check("compile the 64-bit program", exe64 is not None, err or ""):
        return
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

    can_run32 = True
    try:
        run([exe32], env_for(None, preload=False))
    except OSError as e:
        can_run32 = False
        why32 = ("this kernel cannot run 32-bit programs (%s; no IA32 emulation): the 32-bit copy is "
                 "built and checked above, not run" % e.strerror)
    lib64_dir = expand_lib(exe64, work)
    # Debian's i386 ld.so expands $LIB to lib/i386-linux-gnu; asked of ld.so itself when it can run.
    lib32_dir = expand_lib(exe32, work) if can_run32 else "lib/i386-linux-gnu"
    t.check("ld.so expands $LIB per ELF class (64-bit: %s, 32-bit: %s%s)"
            % (lib64_dir, lib32_dir, "" if can_run32 else ", Debian's value, not asked"),
            lib64_dir and lib32_dir and lib64_dir != lib32_dir)
    if not (lib64_dir and lib32_dir):
        return
    root = os.path.join(work, "opt-ucxtls")
    for sub, src in ((lib64_dir, LIB), (lib32_dir, lib32)):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
        shutil.copy(src, os.path.join(root, sub, "libucxtls.so"))
    recipe = root + "/$LIB/libucxtls.so"
    for exe, bits in ((exe64, 64), (exe32, 32)):
        if bits == 32 and not can_run32:
            t.skip("32-bit program with the $LIB recipe", why32)
            continue
        env = env_for("dgx", UCXTLS_DEBUG="1")
        env["LD_PRELOAD"] = recipe
        plain, pre = run([exe], env_for("dgx", preload=False)), run([exe], env)
        err = pre.stderr.decode(errors="replace")
        t.equal("%d-bit program with LD_PRELOAD='DIR/$LIB/libucxtls.so': first line identical" % bits,
                lines(pre.stdout)[:1], lines(plain.stdout)[:1])
        t.equal("%d-bit program: the library works there (value set)" % bits, lines(pre.stdout)[1:], ["UCX_TLS=" + C], err)
        t.equal("%d-bit program: exit status identical (3)" % bits, pre.returncode, plain.returncode)
        t.check("%d-bit program: no ld.so error, one ucxtls debug line" % bits,
                "ELF class" not in err and "cannot be preloaded" not in err and err.count("ucxtls: set") == 1, err)
    if not can_run32:
        return
    # Without the recipe: a 64-bit path in a 32-bit process is the ld.so error line, never a failure.
    env = env_for("dgx")
    pre = run([exe32], env)
    t.equal("32-bit program with the 64-bit path: still runs, exit status 3", pre.returncode, 3)
    t.check("32-bit program with the 64-bit path: ld.so's 'wrong ELF class' line, value unset",
            "wrong ELF class" in pre.stderr.decode() and b"UCX_TLS=<unset>" in pre.stdout, pre.stderr.decode())


def main():
    cmake = sys.argv[1] if len(sys.argv) > 1 else "cmake"
    t = Checks("static, musl and 32-bit processes")
    with tempfile.TemporaryDirectory(prefix="ucxtls-foreign-") as work:
        static_binary(t, work)
        musl_binary(t, work)
        bits32(t, work, cmake)
    t.exit()


if __name__ == "__main__":
    main()
