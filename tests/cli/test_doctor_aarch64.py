#!/usr/bin/env python3
"""`ucxtls doctor --ucx` on aarch64 (Grace) UCX builds, read by this x86_64 doctor from their files:
Debian's arm64 UCX 1.13.1, RAPIDS' aarch64 libucx-cu12 1.22.0 and the UCX 1.23.0 in NIXL's aarch64
nixl-cu12 1.5.1 (tests/cli/aarch64_builds.py fetches them). Each says what its x86_64 twin says:
version, transports, the module directory compiled in, which modules do not load and why, the
verdict. The arm64 libraries their modules need are Debian's arm64 packages, on LD_LIBRARY_PATH.
And a 32-bit build or one of another machine: its version "could not tell", the verdict "could not
check" (exit 2), never "ok"."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))  # harness.py
sys.path.insert(0, HERE)
from harness import LIB, case, env_for, have, main, run, site_packages, wheels  # noqa: E402
import aarch64_builds  # noqa: E402
from fake_builds import fake_ucx  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
WORK = tempfile.mkdtemp(prefix="ucxtls-aarch64-")
_root = []


def doctor(libucp, library_path=None):
    env = env_for(None, preload=False)
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    p = run([CLI, "doctor", "--ucx", libucp, "--value", "tcp"], env, timeout=120)
    return p.returncode, p.stdout.decode()


def reading(status, out, prefix):
    """What doctor read, with the build's own location (prefix) and multiarch triplet taken out."""
    out = (out.replace(prefix, "<build>") if prefix else out).replace("x86_64-linux-gnu", "<triplet>").replace("aarch64-linux-gnu", "<triplet>")
    ucx = re.search(r"^UCX +\S+ \(version (.*)\)$", out, re.M)
    tls = re.search(r"^this UCX +(.*) \(registered by its libuct and the modules UCX loads from (.*)\)$", out, re.M)
    return {
        "version": ucx.group(1) if ucx else None,
        "transports": sorted(tls.group(1).split(", ")) if tls else None,
        "module directories": tls.group(2).split(":")[1:] if tls else None,  # the first is beside libucs
        # Module files are named by their build (libuct_ib.so.0, libuct_ib.so.0.0.0): the module's name.
        "modules not loading": sorted(re.sub(r"\S*/libuct_([a-z0-9_]+)\.so[.0-9]*", r"\1", m)
                                      for m in re.findall(r"^module +(.*)$", out, re.M)),
        "could not tell": re.findall(r"^could not +(.*)$", out, re.M),
        "verdict": re.findall(r"^verdict +(.*)$", out, re.M),
        "status": status,
    }


def arm64_root(t):
    if not _root:
        root, why = aarch64_builds.arm64_root(WORK)
        _root.append((root, why))
    root, why = _root[0]
    if why:
        t.skip("Debian's arm64 packages", why)
    return root


def same_as_twin(t, what, arm, arm_prefix, amd, amd_prefix, library_path):
    got = reading(*doctor(arm, library_path), arm_prefix)
    want = reading(*doctor(amd), amd_prefix)
    t.check("%s: the version is read (%s)" % (what, got["version"]), got["version"] not in (None, "could not tell"), str(got))
    for key in want:
        t.equal("%s: %s as its x86_64 twin's" % (what, key), got[key], want[key])


@case("Debian's arm64 UCX 1.13.1 reads as its amd64 twin installed here", tags=("debian",))
def debian(t):
    amd = "/usr/lib/x86_64-linux-gnu/libucp.so.0"
    if not os.path.exists(amd):
        return t.skip("Debian's arm64 UCX", "Debian's amd64 UCX (libucx0) is not installed; scripts/test.sh installs it")
    root = arm64_root(t)
    if not root:
        return
    arm = os.path.join(root, "usr", "lib", "aarch64-linux-gnu", "libucp.so.0")
    same_as_twin(t, "Debian's libucx0:arm64", arm, root, amd, "", aarch64_builds.arm64_library_path(root))


@case("RAPIDS' and NIXL's aarch64 wheels read as their x86_64 twins", tags=("wheels",))
def wheels_twins(t):
    venv, why = wheels()
    if not venv:
        return t.skip("the aarch64 wheels' x86_64 twins", why)
    site, why = aarch64_builds.aarch64_site(WORK)
    if not site:
        return t.skip("the aarch64 wheels", why)
    root = arm64_root(t)
    if not root:
        return
    amd_site = site_packages(venv)
    for what, rel in (("RAPIDS' libucx-cu12 1.22.0", "libucx/lib"), ("NIXL's nixl-cu12 1.5.1", "nixl_cu12.libs")):
        same_as_twin(t, what, os.path.join(site, rel), site, os.path.join(amd_site, rel), amd_site,
                     aarch64_builds.arm64_library_path(root))


def set_machine(path, machine):
    with open(path, "r+b") as f:
        f.seek(18)
        f.write(struct.pack("<H", machine))


@case("a 32-bit build and one of another machine: version could not tell, verdict could not check (exit 2)")
def unknown_machine(t):
    builds = []
    riscv = fake_ucx(os.path.join(WORK, "riscv"), version="1.22.0")
    set_machine(riscv, 243)  # EM_RISCV: the same file, its code now another machine's
    builds.append(("a 64-bit object of machine 243 (RISC-V)", riscv))
    if have("clang") and have("ld.lld"):
        d = os.path.join(WORK, "i386")
        os.makedirs(d)
        src = os.path.join(d, "ucp.c")
        with open(src, "w") as f:
            f.write('const char *ucp_get_version_string(void) { return "1.22.0"; }\n'
                    'const char *ucs_status_string(int s) { return s ? "error" : "Success"; }\n'
                    'char uct_tcp_tl[16] = "tcp";\n')
        lib = os.path.join(d, "libucp.so.0")
        subprocess.run(["clang", "--target=i686-linux-gnu", "-O2", "-fPIC", "-shared", "-nostdlib", "-fuse-ld=lld",
                        "-Wl,-soname,libucp.so.0", "-o", lib, src], check=True)
        builds.append(("a 32-bit i386 object", lib))
    else:
        t.skip("a 32-bit i386 build", "clang and ld.lld build it here (no 32-bit libc needed); not installed")
    for what, lib in builds:
        status, out = doctor(lib)
        t.check("%s: version could not tell" % what, "(version could not tell)" in out, out)
        t.check("%s: the line says why (doctor decodes x86-64 and AArch64 code)" % what,
                "could not   tell its version (doctor decodes x86-64 and AArch64 code" in out, out)
        t.check("%s: verdict could not check, exit 2, never ok" % what,
                status == 2 and "verdict     could not check (exit 2)" in out, "exit %d\n%s" % (status, out))


if __name__ == "__main__":
    try:
        main("doctor on aarch64 builds, a 32-bit build and another machine's")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
