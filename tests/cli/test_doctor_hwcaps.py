#!/usr/bin/env python3
"""doctor's hwcaps subdirectories against the real loader's: a libucp that needs libucs.so.0, with a
libucs.so.0 in the LD_LIBRARY_PATH directory and in each of its glibc-hwcaps and legacy hwcap
subdirectories (x86-64 levels, tls, haswell, avx512_1, xeon_phi, x86_64, i686, sse2, aarch64,
atomics, and their combinations). Round after round, the libucs glibc 2.36's ld.so picks
(`ld.so --list`, what ldd shows) is the one `ucxtls doctor --ucx` names (its module directory is
<dir of libucs>/ucx), then that copy is removed: the whole search order is compared. x86-64 with
this machine's ld.so and CPU, and its 32-bit ld.so for a 32-bit build; aarch64 with Debian's arm64 ld.so under qemu-aarch64 (whose default
CPU has LSE atomics, as Grace has), the aarch64 build read by this x86_64 doctor. Then the same
through a private ld.so.cache (ldconfig marks each entry with its subdirectory's hwcap; ld.so
passes over another CPU's, such as haswell/ on an AMD CPU), bound over /etc/ld.so.cache for both."""
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))  # harness.py
sys.path.insert(0, HERE)
from harness import LIB, case, env_for, have, main, run  # noqa: E402
import aarch64_builds  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
WORK = tempfile.mkdtemp(prefix="ucxtls-hwcaps-")
NAMES = ["tls", "haswell", "xeon_phi", "avx512_1", "x86_64"]  # main's four and xeon_phi, in glibc's order
SUBDIRS = (["glibc-hwcaps/x86-64-v4", "glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2", "glibc-hwcaps/aarch64",
            "tls/x86_64/x86_64", "x86_64/x86_64", "tls/haswell/haswell", "i686", "sse2", "tls/i686/sse2", "tls/i686", "tls/sse2", "i686/sse2",
            "aarch64", "atomics", "aarch64/atomics", "tls/aarch64", "tls/atomics", "tls/aarch64/atomics"] +
           ["/".join(c) for n in range(1, len(NAMES) + 1) for c in itertools.combinations(NAMES, n)] + [""])
UCS = 'const char *ucs_status_string(int s) { return s ? "error" : "Success"; }\n'
UCP = ('extern const char *ucs_status_string(int);\n'
       'const char *ucp_get_version_string(void) { return "1.22.0"; }\n'
       'const char *ucp_status(void) { return ucs_status_string(0); }\n')


def build(d, compiler):
    """d/app/libucp.so.0 needing libucs.so.0, and a libucs.so.0 in d/lib/<each subdir>; the app's path."""
    src = os.path.join(d, "src")
    os.makedirs(src)
    for name, text in (("libucs.so.0", UCS), ("libucp.so.0", UCP)):
        with open(os.path.join(src, name + ".c"), "w") as f:
            f.write(text)
        extra = [os.path.join(src, "libucs.so.0")] if name == "libucp.so.0" else []
        subprocess.run(compiler + ["-O2", "-fPIC", "-shared", "-Wl,-soname," + name, "-o", os.path.join(src, name),
                                   os.path.join(src, name + ".c")] + extra, check=True)
    os.makedirs(os.path.join(d, "app"))
    shutil.copy(os.path.join(src, "libucp.so.0"), os.path.join(d, "app"))
    for s in SUBDIRS:
        os.makedirs(os.path.join(d, "lib", s), exist_ok=True)
        shutil.copy(os.path.join(src, "libucs.so.0"), os.path.join(d, "lib", s))
    return os.path.join(d, "app", "libucp.so.0")


def doctor_pick(libucp, lib):
    env = env_for(None, preload=False)
    env["LD_LIBRARY_PATH"] = lib
    out = run([CLI, "doctor", "--ucx", libucp, "--value", "tcp"], env, timeout=60).stdout.decode()
    m = re.search(r"modules UCX loads from ([^:)]*)/ucx[:)]", out)
    return os.path.normpath(m.group(1) + "/libucs.so.0") if m else None


def ldso_pick(loader, libucp, lib):
    out = subprocess.run(loader(libucp, lib), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60).stdout.decode()
    m = re.search(r"libucs\.so\.0 => (\S+)", out)
    return os.path.normpath(m.group(1)) if m and m.group(1) != "not" else None


def compare(t, what, d, libucp, loader):
    lib = os.path.join(d, "lib")
    order, wrong = [], []
    for _ in range(len(SUBDIRS) + 1):
        want = ldso_pick(loader, libucp, lib)
        got = doctor_pick(libucp, lib)
        shown = lambda p: p and os.path.relpath(p, lib)  # noqa: E731
        order.append(shown(want))
        if got != want:
            wrong.append("ld.so %s, doctor %s" % (shown(want), shown(got)))
        if not want or not want.startswith(lib + "/"):
            break
        os.remove(want)
    t.check("%s: doctor picks the libucs ld.so picks, %d rounds (ld.so's order: %s)" % (what, len(order), ", ".join(
        str(o) for o in order[:8]) + ", ..."), not wrong and len(order) > 3, "\n".join(wrong[:12]))


@case("x86-64: the hwcaps subdirectories in the order this machine's ld.so searches them")
def x86_64(t):
    loader = "/lib64/ld-linux-x86-64.so.2"
    if not os.path.exists(loader):
        return t.skip("x86-64's loader", "%s is not here (not an x86-64 Debian)" % loader)
    d = os.path.join(WORK, "x86_64")
    libucp = build(d, ["cc"])
    compare(t, "x86-64", d, libucp, lambda ucp, lib: [loader, "--library-path", lib, "--list", ucp])


@case("i386: a 32-bit build's subdirectories, in the order the 32-bit ld.so searches them", tags=("m32",))
def i386(t):
    loader = "/lib/ld-linux.so.2"
    if not os.path.exists(loader):
        return t.skip("i386's loader", "%s is not here: scripts/test.sh installs gcc-multilib (libc6-i386)" % loader)
    d = os.path.join(WORK, "i386")
    libucp = build(d, ["cc", "-m32"])
    compare(t, "i386", d, libucp, lambda ucp, lib: [loader, "--library-path", lib, "--list", ucp])


# The subdirectories ldconfig writes into ld.so.cache with a hwcap (glibc 2.36's ldconfig: the
# glibc-hwcaps levels, and legacy hwcap and platform names, each marked in the entry's hwcap word).
CACHED = ["glibc-hwcaps/x86-64-v4", "glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2", "haswell", "xeon_phi",
          "avx512_1", "x86_64", "tls", "i686", "sse2", ""]


@case("x86-64: ld.so.cache entries of hwcaps subdirectories, as this machine's ld.so takes them", tags=("cache",))
def x86_64_cache(t):
    loader = "/lib64/ld-linux-x86-64.so.2"
    for tool in ("bwrap", "ldconfig"):
        if not have(tool) and not os.path.exists("/sbin/" + tool):
            return t.skip("a private ld.so.cache", "%s is not installed (scripts/test.sh installs bubblewrap)" % tool)
    d = os.path.join(WORK, "cache")
    libucp = build(d, ["cc"])
    lib, cache, conf = os.path.join(d, "lib"), os.path.join(d, "ld.so.cache"), os.path.join(d, "ld.so.conf")
    for s in SUBDIRS:  # only the subdirectories ldconfig marks
        if s not in CACHED:
            os.remove(os.path.join(lib, s, "libucs.so.0"))
    with open(conf, "w") as f:
        f.write(lib + "\n")
    # This machine's root with the private cache over /etc/ld.so.cache (bubblewrap): for ld.so and doctor alike.
    private = ["bwrap", "--bind", "/", "/", "--ro-bind", cache, "/etc/ld.so.cache", "--dev", "/dev", "--proc", "/proc", "--"]
    probe = subprocess.run(private + ["true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT) if os.path.exists(cache) else None
    order, wrong = [], []
    for _ in range(len(CACHED) + 1):
        subprocess.run([shutil.which("ldconfig") or "/sbin/ldconfig", "-C", cache, "-f", conf], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe is None:
            probe = subprocess.run(private + ["true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if probe.returncode:
                return t.skip("a private ld.so.cache", "bwrap cannot bind one here: " + probe.stdout.decode().strip())
        want = ldso_pick(lambda ucp, _: private + [loader, "--list", ucp], libucp, None)
        env = env_for(None, preload=False)
        out = run(private + [CLI, "doctor", "--ucx", libucp, "--value", "tcp"], env, timeout=60).stdout.decode()
        m = re.search(r"modules UCX loads from ([^:)]*)/ucx[:)]", out)
        got = os.path.normpath(m.group(1) + "/libucs.so.0") if m else None
        order.append(want and os.path.relpath(want, lib))
        if got != want:
            wrong.append("ld.so %s, doctor %s" % (want, got))
        if not want or not want.startswith(lib + "/"):
            break
        os.remove(want)
    t.check("x86-64 cache: doctor picks the libucs ld.so picks, %d rounds (ld.so's order: %s)" % (
        len(order), ", ".join(str(o) for o in order)), not wrong and len(order) > 3, "\n".join(wrong))


@case("aarch64: the order Debian's arm64 ld.so searches under qemu-aarch64", tags=("aarch64",))
def aarch64(t):
    for tool in ("qemu-aarch64", "clang", "ld.lld"):
        if not have(tool):
            return t.skip("aarch64's loader", "%s is not installed (scripts/test.sh installs it)" % tool)
    root, why = aarch64_builds.arm64_root(WORK)
    if not root:
        return t.skip("Debian's arm64 glibc", why)
    loader = os.path.join(root, "lib", "aarch64-linux-gnu", "ld-linux-aarch64.so.1")
    d = os.path.join(WORK, "aarch64")
    libucp = build(d, ["clang", "--target=aarch64-linux-gnu", "-nostdlib", "-fuse-ld=lld"])
    compare(t, "aarch64", d, libucp, lambda ucp, lib: ["qemu-aarch64", loader, "--library-path", lib, "--list", ucp])


if __name__ == "__main__":
    try:
        main("doctor's hwcaps subdirectories == glibc's ld.so's")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
