#!/usr/bin/env python3
"""`ucxtls doctor --ucx` of the aarch64 build, under qemu-user, on real aarch64 UCX builds from the
registries, against this machine's (x86_64) doctor on their x86_64 twins: Debian's libucx0 1.13
(arm64 .deb / the installed amd64 package), RAPIDS' libucx-cu12 1.22.0 and NIXL's nixl-cu12 1.5.1
(aarch64 wheels, tests/wheels/aarch64-requirements.txt / the x86_64 venv of
tests/wheels/requirements.txt). Each reads the same version, transports, modules (the module
directory compiled into libucs and what loads from it) and the same findings.

The aarch64 doctor runs in a mount namespace (bubblewrap) where /usr/lib/aarch64-linux-gnu holds
the arm64 glibc and libucx0 with the libraries it needs, as on a Grace node: doctor resolves a
build's libraries from the root, as ld.so would. qemu runs the program through the arm64 ld.so
itself, not with -L: qemu-user's -L sends every absolute path, "/" included, to the sysroot first,
and doctor walks paths from "/".
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from lane import ARM64_LIBDIR, CLI, EMULATOR, HOST_CLI, SYSROOT, missing_inputs
from harness import BASE_ENV, EMPTY_HOME, add_case, have, main, run, site_packages

UCX_DEB = os.environ.get("UCXTLSTEST_AARCH64_UCX", "")
WHEELS = os.environ.get("UCXTLSTEST_AARCH64_WHEELS", "")
X86_LIBDIR = "/usr/lib/x86_64-linux-gnu"


def arm64_libdir(top):
    """A directory of links to the arm64 sysroot's libraries and libucx0's, for bubblewrap to mount
    at /usr/lib/aarch64-linux-gnu."""
    d = os.path.join(top, "lib")
    os.makedirs(d)
    for src in (os.path.join(SYSROOT, ARM64_LIBDIR.lstrip("/")), os.path.join(UCX_DEB, ARM64_LIBDIR.lstrip("/")),
                os.path.join(UCX_DEB, "lib", "aarch64-linux-gnu")):  # libnl's packages use /lib
        if not os.path.isdir(src):
            continue
        for name in os.listdir(src):
            if not os.path.lexists(os.path.join(d, name)):
                os.symlink(os.path.join(src, name), os.path.join(d, name))
    return d


def neutral(text, places):
    """doctor's output made comparable across the two machines: a build's place, the multiarch
    triplet and auditwheel's hashed library names replaced by names."""
    for place, name in places:
        text = text.replace(place, name)
    text = text.replace("aarch64-linux-gnu", "<triplet>").replace("x86_64-linux-gnu", "<triplet>")
    return re.sub(r"-[0-9a-f]{8}(\.so)", r"-<hash>\1", text)


def bwrap_with(libdir):
    """bubblewrap's arguments for this machine's root with libdir at /usr/lib/aarch64-linux-gnu:
    / and /usr/lib rebuilt on tmpfs from binds of their entries, so that the mount point is made
    there and never in this machine's own /usr/lib."""
    args = ["bwrap", "--tmpfs", "/"]
    for parent in ("/", "/usr", "/usr/lib"):
        if parent != "/":
            args += ["--dir", parent]
        for name in sorted(os.listdir(parent)):
            path = os.path.join(parent, name)
            if path in ("/usr", "/usr/lib", ARM64_LIBDIR) or name in ("proc", "dev"):
                continue
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            else:
                args += ["--dev-bind", path, path]
    return args + ["--proc", "/proc", "--dev-bind", "/dev", "/dev", "--ro-bind", libdir, ARM64_LIBDIR]


def doctors(args):
    """(aarch64 doctor, x86_64 doctor) run with args[0] and args[1] added to `doctor --ucx`."""
    top = tempfile.mkdtemp(prefix="ucxtls-doctor-aarch64-")
    try:
        libdir = arm64_libdir(top)
        ld_so = os.path.join(ARM64_LIBDIR, "ld-linux-aarch64.so.1")
        env = dict(BASE_ENV, HOME=EMPTY_HOME)
        a = run(bwrap_with(libdir) + [EMULATOR[0], ld_so,
                 CLI, "doctor", "--ucx"] + args[0], env, timeout=120)
        x = run([HOST_CLI, "doctor", "--ucx"] + args[1], env, timeout=120)
    finally:
        shutil.rmtree(top, True)
    return a, x


def compare(t, label, arm_ucx, x86_ucx, places_arm, places_x86):
    a, x = doctors(([arm_ucx, "--json"], [x86_ucx, "--json"]))
    try:
        aj = json.loads(neutral(a.stdout.decode(), places_arm))
        xj = json.loads(neutral(x.stdout.decode(), places_x86))
    except ValueError:
        return t.check("%s: both doctors print one JSON object" % label, False,
                       "aarch64: %r %r\nx86_64: %r %r" % (a.stdout[:300], a.stderr[:300], x.stdout[:300], x.stderr[:300]))
    xb, ab = (xj.get("ucx") or [{}])[0], (aj.get("ucx") or [{}])[0]
    t.check("%s: the x86_64 doctor reads its version (%s)" % (label, xb.get("version")), bool(xb.get("version")))
    t.equal("%s: version as the x86_64 doctor reads it" % label, ab.get("version"), xb.get("version"))
    # (in any order: doctor lists them as the directory reads, which differs between file systems)
    t.equal("%s: transports as the x86_64 doctor reads them" % label, sorted(ab.get("transports") or []),
            sorted(xb.get("transports") or []))
    key = lambda m: m.get("path") or ""
    t.equal("%s: modules (what loads, and why not) as x86_64's" % label, sorted(ab.get("modules") or [], key=key),
            sorted(xb.get("modules") or [], key=key))
    for k in ("messages", "problems", "missing", "status"):
        t.equal("%s: %s as x86_64's" % (label, k), aj.get(k), xj.get(k))
    # The report in words also names the module directories (the one compiled into libucs included).
    a, x = doctors(([arm_ucx], [x86_ucx]))
    al, xl = lines(a.stdout.decode(), places_arm), lines(x.stdout.decode(), places_x86)
    t.equal("%s: the module directories doctor names, as x86_64's" % label,
            [l for l in al if l.startswith("this UCX")], [l for l in xl if l.startswith("this UCX")])
    t.equal("%s: doctor's report, line for line, as x86_64's" % label, al, xl)


def lines(text, places):
    """The report's lines, neutral, sorted, the transports of 'this UCX' too (directory order)."""
    out = []
    for l in neutral(text, places).splitlines():
        m = re.match(r"^(this UCX +)(.*?)( \(registered .*)$", l)
        out.append(m.group(1) + ", ".join(sorted(m.group(2).split(", "))) + m.group(3) if m else l)
    return sorted(out)


def needs(t, *variables):
    why = missing_inputs(*variables) or (None if have("bwrap") else "bwrap (Debian bubblewrap) not installed")
    if why:
        t.skip("doctor on aarch64 builds", why)
    return not why


def debian(t):
    if not needs(t, "UCXTLSTEST_AARCH64_UCX"):
        return
    if not os.path.exists(os.path.join(X86_LIBDIR, "libucp.so.0")):
        return t.skip("Debian's UCX", "the x86_64 twin (libucx0) is not installed; scripts/test.sh installs it")
    compare(t, "Debian libucx0 1.13", os.path.join(ARM64_LIBDIR, "libucp.so.0"), os.path.join(X86_LIBDIR, "libucp.so.0"),
            [], [])


def wheel(t, label, subdir):
    if not needs(t, "UCXTLSTEST_AARCH64_WHEELS"):
        return
    venv = os.environ.get("UCXTLSTEST_WHEELS")
    if not venv:
        return t.skip(label, "no x86_64 twin: %s" % os.environ.get("UCXTLSTEST_WHEELS_SKIP", "UCXTLSTEST_WHEELS unset"))
    site = site_packages(venv)
    compare(t, label, os.path.join(WHEELS, subdir), os.path.join(site, subdir),
            [(WHEELS, "<site>")], [(site, "<site>")])


add_case("Debian's libucx0 1.13 (arm64 .deb): what the x86_64 doctor reads from amd64's", debian)
add_case("RAPIDS' libucx-cu12 1.22.0 (aarch64 wheel): what the x86_64 doctor reads from x86_64's", wheel,
         "libucx-cu12", "libucx")
add_case("NIXL's nixl-cu12 1.5.1 (aarch64 wheel): what the x86_64 doctor reads from x86_64's", wheel,
         "nixl-cu12", "nixl_cu12.libs")


if __name__ == "__main__":
    main("ucxtls doctor of the aarch64 build on aarch64 UCX builds, against the x86_64 doctor")
