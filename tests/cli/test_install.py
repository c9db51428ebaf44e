#!/usr/bin/env python3
"""Install trees and packages: `cmake --install` to a temporary prefix and the command run from
there (moved, and through a symlink), the .deb from CPack unpacked and run, and the README's `$LIB`
recipe for mixed 32/64-bit process trees."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import BUILD_DIR, SOURCE_DIR, Checks, env_for, have, run  # noqa: E402

CMAKE = os.environ.get("UCXTLS_CMAKE", "cmake")
CPACK = os.environ.get("UCXTLS_CPACK", "cpack")
SHOW = 'printf "%s|%s" "${UCX_TLS-<unset>}" "${LD_PRELOAD-<unset>}"'
ZE = "rc_x,rc,dc_x,dc,ze_copy"


def run_from(t, label, cli, lib):
    """`cli run sh` on the intel-xe fixture must see the ze value and `lib` preloaded."""
    p = run([cli, "run", "sh", "-c", SHOW], env_for("intel-xe", preload=False))
    t.equal(label, (p.stdout.decode(), p.returncode), ("%s|%s" % (ZE, os.path.realpath(lib)), 0), p.stderr.decode())


def main():
    t = Checks("install tree, package, $LIB recipe")
    scratch = tempfile.mkdtemp(prefix="ucxtls-install-")
    try:
        prefix = os.path.join(scratch, "prefix")
        p = subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        cli = os.path.join(prefix, "bin", "ucxtls")
        libs = glob.glob(os.path.join(prefix, "lib*", "**", "libucxtls.so"), recursive=True)
        t.check("cmake --install --prefix P gives P/bin/ucxtls and P/lib.../libucxtls.so",
                p.returncode == 0 and os.access(cli, os.X_OK) and len(libs) == 1, p.stdout.decode() + repr(libs))
        if not libs:
            t.exit()
        lib = libs[0]
        run_from(t, "P/bin/ucxtls run finds P's library", cli, lib)
        p = run([cli, "explain", "--json"], env_for("intel-xe", preload=False))
        t.check("P/bin/ucxtls explain works from the install tree", p.returncode == 0 and ZE in p.stdout.decode(),
                p.stdout.decode() + p.stderr.decode())

        # Relocatable: the path from bin to lib is relative, so a moved tree still works...
        moved = os.path.join(scratch, "moved")
        shutil.move(prefix, moved)
        mlib = os.path.join(moved, os.path.relpath(lib, prefix))
        run_from(t, "a moved install tree finds its own library", os.path.join(moved, "bin", "ucxtls"), mlib)
        # ...and so does a symlink to the command (/proc/self/exe is the real file).
        os.makedirs(os.path.join(scratch, "links"))
        link = os.path.join(scratch, "links", "ucxtls")
        os.symlink(os.path.join(moved, "bin", "ucxtls"), link)
        run_from(t, "a symlink to the installed command finds the installed library", link, mlib)
        # A command with no library beside it says so.
        lone = os.path.join(scratch, "lone")
        os.makedirs(lone)
        shutil.copy(os.path.join(moved, "bin", "ucxtls"), lone)
        p = run([os.path.join(lone, "ucxtls"), "run", "true"], env_for(None, preload=False))
        t.check("a command with no library beside it: exit 2, one line naming where it looked",
                p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1 and b"libucxtls.so" in p.stderr,
                repr(p))

        # The .deb from CPack, unpacked (not installed: the test must not change the machine).
        if not (have("dpkg-deb") and os.path.exists(os.path.join(BUILD_DIR, "CPackConfig.cmake"))):
            t.skip(".deb", "dpkg-deb or CPackConfig.cmake missing")
        else:
            out = os.path.join(scratch, "pack")
            p = subprocess.run([CPACK, "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-B", out],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            debs = glob.glob(os.path.join(out, "*.deb"))
            t.check("cpack -G DEB builds one package", p.returncode == 0 and len(debs) == 1, p.stdout.decode())
            if debs:
                listing = subprocess.run(["dpkg-deb", "-c", debs[0]], stdout=subprocess.PIPE).stdout.decode()
                t.check("the package holds usr/bin/ucxtls and usr/lib.../libucxtls.so",
                        re.search(r" \./usr/bin/ucxtls$", listing, re.M) and re.search(r" \./usr/lib[^ ]*/libucxtls\.so$", listing, re.M),
                        listing)
                info = subprocess.run(["dpkg-deb", "-f", debs[0], "Package", "Version", "Depends"], stdout=subprocess.PIPE).stdout.decode()
                version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
                t.check("package ucxtls, the project version, depends on libc6", "Package: ucxtls" in info
                        and "Version: " + version in info and "libc6" in info, info)
                root = os.path.join(scratch, "deb-root")
                subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
                dlib = glob.glob(os.path.join(root, "usr", "lib*", "**", "libucxtls.so"), recursive=True)
                if t.check("the unpacked package has the library", len(dlib) == 1, repr(dlib)):
                    run_from(t, "the unpacked package's ucxtls run finds the package's library",
                             os.path.join(root, "usr", "bin", "ucxtls"), dlib[0])

        # $LIB: ld.so picks the directory of the process's own ELF class. Where it points is
        # system-specific (Debian lib/x86_64-linux-gnu, RHEL lib64): the library is placed in each
        # candidate and /proc/self/maps of the preloaded process shows the one ld.so chose.
        tree = os.path.join(scratch, "opt-ucxtls")
        for d in ("lib/x86_64-linux-gnu", "lib64", "lib", "lib/aarch64-linux-gnu"):
            os.makedirs(os.path.join(tree, d), exist_ok=True)
            shutil.copy(mlib, os.path.join(tree, d, "libucxtls.so"))
        env = env_for("intel-xe", preload=False, LD_PRELOAD=tree + "/$LIB/libucxtls.so")
        p = run(["/bin/sh", "-c", SHOW + '; echo; grep -o "%s/[^ ]*libucxtls.so" /proc/$$/maps | sort -u' % tree], env)
        lines = p.stdout.decode().splitlines()
        t.check("LD_PRELOAD='P/$LIB/libucxtls.so' (quoted) loads the library: UCX_TLS set, no ld.so error",
                len(lines) == 2 and lines[0].startswith(ZE + "|") and "$LIB" in lines[0] and p.stderr == b""
                and os.path.dirname(lines[1]) != tree, p.stdout.decode() + p.stderr.decode())
        if len(lines) == 2:
            print("     $LIB here = %s" % os.path.relpath(os.path.dirname(lines[1]), tree))

        # The 32-bit half of the recipe: build the library with -m32 (the command is not needed).
        probe32 = os.path.join(scratch, "probe32")
        c = os.path.join(scratch, "show.c")
        with open(c, "w") as f:
            f.write('#include <stdio.h>\n#include <stdlib.h>\nint main(void){const char*v=getenv("UCX_TLS");'
                    'printf("%s",v?v:"<unset>");return 0;}\n')
        can32 = have("gcc") and subprocess.run(["gcc", "-m32", c, "-o", probe32], stderr=subprocess.DEVNULL).returncode == 0
        if not can32:
            t.skip("32-bit library", "gcc -m32 cannot build here (Debian: gcc-multilib)")
        else:
            b32 = os.path.join(scratch, "build32")
            p = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", b32, "-DUCXTLS_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release",
                                "-DCMAKE_C_FLAGS=-m32", "-DCMAKE_CXX_FLAGS=-m32"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if p.returncode == 0:
                p = subprocess.run([CMAKE, "--build", b32, "--target", "ucxtls", "-j2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            lib32 = os.path.join(b32, "libucxtls.so")
            header = subprocess.run(["readelf", "-h", "-d", lib32], stdout=subprocess.PIPE).stdout.decode() if p.returncode == 0 else ""
            needed = re.findall(r"\(NEEDED\).*\[(.*)\]", header)
            t.check("the 32-bit build of the library: ELF32, needs libc.so.6 alone",
                    p.returncode == 0 and "ELF32" in header and needed == ["libc.so.6"], p.stdout.decode()[-2000:] + header)
            for d in ("lib/i386-linux-gnu", "lib32", "lib"):
                os.makedirs(os.path.join(tree, d), exist_ok=True)
                shutil.copy(lib32, os.path.join(tree, d, "libucxtls.so"))
            why = "the 32-bit program failed"
            try:
                ran = subprocess.run([probe32], stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode == 0
            except OSError as e:
                ran = False
                why = str(e)
            if not ran:
                t.skip("a 32-bit process under '$LIB'", "this kernel cannot run 32-bit programs (%s)" % why)
            else:
                p = run([probe32], env)
                t.equal("a 32-bit process under the same LD_PRELOAD='P/$LIB/libucxtls.so' gets the value, no ld.so error",
                        (p.stdout.decode(), p.stderr.decode()), (ZE, ""))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t.exit()


if __name__ == "__main__":
    main()
