"""test_install.py's `$LIB` recipe: LD_PRELOAD='P/$LIB/libucxtls.so' in a 64-bit and a 32-bit
process, and install.md's lines that write it."""
import os
import re
import shutil
import subprocess

from harness import ALWAYS, BUILD_DIR, SOURCE_DIR, Z, case, env_for, have, run
from install_checks import CMAKE, SCRATCH, SHOW, installed_lib, once

# $LIB: ld.so picks the directory of the process's own ELF class. Where it points is
# system-specific (Debian lib/x86_64-linux-gnu, RHEL lib64): the library is placed in each
# candidate and /proc/self/maps of the preloaded process shows the one ld.so chose.
TREE = os.path.join(SCRATCH, "opt-ucxtls")


LIB_ENV = env_for("intel-xe", preload=False, **ALWAYS, LD_PRELOAD=TREE + "/$LIB/libucxtls.so")


@case("$LIB: a 64-bit process under LD_PRELOAD='P/$LIB/libucxtls.so'")
def lib_64(t):
    lib = installed_lib(t)
    if not lib:
        return
    for d in ("lib/x86_64-linux-gnu", "lib64", "lib", "lib/aarch64-linux-gnu"):
        os.makedirs(os.path.join(TREE, d), exist_ok=True)
        shutil.copy(lib, os.path.join(TREE, d, "libucxtls.so"))
    p = run(["/bin/sh", "-c", SHOW + '; echo; grep -o "%s/[^ ]*libucxtls.so" /proc/$$/maps | sort -u' % TREE], LIB_ENV)
    lines = p.stdout.decode().splitlines()
    t.check("LD_PRELOAD='P/$LIB/libucxtls.so' (quoted) loads the library: UCX_TLS set, no ld.so error",
            len(lines) == 2 and lines[0].startswith(Z + "|") and "$LIB" in lines[0] and p.stderr == b""
            and os.path.dirname(lines[1]) != TREE, p.stdout.decode() + p.stderr.decode())
    if len(lines) == 2:
        print("     $LIB here = %s" % os.path.relpath(os.path.dirname(lines[1]), TREE))


INSTALL_MD = os.path.join(SOURCE_DIR, "docs", "install.md")


@case("install.md's $LIB lines append to LD_PRELOAD and leave $LIB to ld.so")
def lib_lines(t):
    with open(INSTALL_MD, encoding="utf-8") as f:
        lines = re.findall(r"^export LD_PRELOAD=.*\$LIB.*$", f.read(), re.M)
    t.check("install.md has its two $LIB recipes' export lines (%d)" % len(lines), len(lines) == 2, "%r" % lines)
    for line in lines:
        want = re.search(r"(/\S*?)\\?\$LIB(/libucxtls\.so)", line)
        lib = want.group(1) + "$LIB" + want.group(2) if want else "?"
        for before, expect in ((None, lib), ("/site/libother.so", "/site/libother.so:" + lib)):
            # The earlier entry is set inside the script: bash itself is never started with it.
            script = ("export LD_PRELOAD=%s\n" % before if before else "") + line + '\nprintf %s "$LD_PRELOAD"'
            p = run(["/bin/bash", "-c", script], env_for(None, preload=False))
            t.equal("`%s` with LD_PRELOAD %s" % (line, before or "unset"), p.stdout.decode(), expect, p.stderr.decode())


# The 32-bit half of the recipe: the library built with -m32 (the command is not needed), in
# BUILD_DIR/install-m32 so that the two 32-bit cases, two CTest tests, share one build (CTest runs
# them one at a time: RESOURCE_LOCK).
M32 = os.path.join(BUILD_DIR, "install-m32")


@once
def probe32():
    """A 32-bit program that prints UCX_TLS, or None when gcc -m32 cannot build one."""
    exe = os.path.join(SCRATCH, "probe32")
    c = os.path.join(SCRATCH, "show.c")
    with open(c, "w") as f:
        f.write('#include <stdio.h>\n#include <stdlib.h>\nint main(void){const char*v=getenv("UCX_TLS");'
                'printf("%s",v?v:"<unset>");return 0;}\n')
    ok = have("gcc") and subprocess.run(["gcc", "-m32", c, "-o", exe], stderr=subprocess.DEVNULL).returncode == 0
    return exe if ok else None


@once
def build32():
    """(process, BUILD_DIR/install-m32/libucxtls.so, configured): the -m32 build of the library."""
    p = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", M32, "-DUCXTLS_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_C_FLAGS=-m32", "-DCMAKE_CXX_FLAGS=-m32"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    configured = p.returncode == 0
    if configured:
        p = subprocess.run([CMAKE, "--build", M32, "--target", "ucxtls", "-j2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p, os.path.join(M32, "libucxtls.so"), configured


def skip_unconfigured32(t, configured, p):
    """A -m32 C++ compiler that CMake cannot use (no g++-multilib) is a missing component: SKIP."""
    if not configured:
        t.skip("32-bit library", "cannot configure a -m32 build (Debian: g++-multilib): " + p.stdout.decode()[-300:])
    return not configured


@case("$LIB 32-bit: the library built with -m32", tags=("m32_library",))
def library_32(t):
    if not probe32():
        t.skip("32-bit library", "gcc -m32 cannot build here (Debian: gcc-multilib)")
        return
    p, lib32, configured = build32()
    if skip_unconfigured32(t, configured, p):
        return
    header = subprocess.run(["readelf", "-h", "-d", lib32], stdout=subprocess.PIPE).stdout.decode() if p.returncode == 0 else ""
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", header)
    t.check("the 32-bit build of the library: ELF32, needs libc.so.6 alone",
            p.returncode == 0 and "ELF32" in header and needed == ["libc.so.6"], p.stdout.decode()[-2000:] + header)


@case("$LIB 32-bit: a 32-bit process under the same LD_PRELOAD", tags=("m32_process",))
def process_32(t):
    exe = probe32()
    if not exe:
        t.skip("32-bit library", "gcc -m32 cannot build here (Debian: gcc-multilib)")
        return
    why = "the 32-bit program failed"
    try:
        ran = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode == 0
    except OSError as e:
        ran = False
        why = str(e)
    if not ran:
        t.skip("a 32-bit process under '$LIB'", "this kernel cannot run 32-bit programs (%s)" % why)
        return
    lib = installed_lib(t)
    p, lib32, configured = build32()
    if skip_unconfigured32(t, configured, p):
        return
    if not lib or not t.check("the 32-bit build of the library", p.returncode == 0 and os.path.exists(lib32),
                              p.stdout.decode()[-2000:]):
        return
    # The tree of the 64-bit case, then the 32-bit copy where a 32-bit process's $LIB may point.
    for d, copy in (("lib/x86_64-linux-gnu", lib), ("lib64", lib), ("lib/aarch64-linux-gnu", lib),
                    ("lib/i386-linux-gnu", lib32), ("lib32", lib32), ("lib", lib32)):
        os.makedirs(os.path.join(TREE, d), exist_ok=True)
        shutil.copy(copy, os.path.join(TREE, d, "libucxtls.so"))
    p = run([exe], LIB_ENV)
    t.equal("a 32-bit process under the same LD_PRELOAD='P/$LIB/libucxtls.so' gets the value, no ld.so error",
            (p.stdout.decode(), p.stderr.decode()), (Z, ""))
