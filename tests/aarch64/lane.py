"""The aarch64 lane's shared parts: the cross-built programs run under qemu-user, and this
machine's (x86_64) build beside them to compare with.

CTest runs these scripts in the cross build (scripts/aarch64-toolchain.cmake) with the harness's
variables (UCXTLSTEST_LIB and UCXTLSTEST_BUILD_DIR name the aarch64 files) and:
  UCXTLSTEST_QEMU              qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR's first word; -L SYSROOT follows)
  UCXTLSTEST_AARCH64_SYSROOT   the arm64 sysroot (scripts/aarch64-sysroot.sh)
  UCXTLSTEST_HOST_BUILD_DIR    this machine's own build (ucxtls, libucxtls.so), for the comparisons
and, from tests/aarch64/fetch.sh through scripts/test.sh, UCXTLSTEST_AARCH64_UCX, _WHEELS, _KERNEL.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import BUILD_DIR, LIB  # noqa: E402

SYSROOT = os.environ.get("UCXTLSTEST_AARCH64_SYSROOT", "")
QEMU = os.environ.get("UCXTLSTEST_QEMU", "")
EMULATOR = [QEMU, "-L", SYSROOT] if QEMU and SYSROOT else []  # CMAKE_CROSSCOMPILING_EMULATOR's
HOST_BUILD = os.environ.get("UCXTLSTEST_HOST_BUILD_DIR", "")
CLI = os.path.join(BUILD_DIR, "ucxtls")
HOST_CLI = os.path.join(HOST_BUILD, "ucxtls")
HOST_LIB = os.path.join(HOST_BUILD, "libucxtls.so")
ARM64_LIBDIR = "/usr/lib/aarch64-linux-gnu"


def emulated(argv, **guest_only):
    """argv (an aarch64 program and its arguments) under qemu-user. The program's environment is
    qemu's own (run's env: the command reads /proc/self/environ, which qemu-user answers with its
    own), plus guest_only, given with qemu -E (LD_PRELOAD in qemu's environment would be the host
    loader's)."""
    sets = []
    for k, v in sorted(guest_only.items()):
        sets += ["-E", "%s=%s" % (k, v)]
    return EMULATOR[:1] + sets + EMULATOR[1:] + list(argv)


def missing_inputs(*names):
    """The reason a case cannot run here (a variable unset or naming nothing), or None."""
    if not EMULATOR:
        return "UCXTLSTEST_QEMU or _AARCH64_SYSROOT is unset: not a cross build (scripts/aarch64-toolchain.cmake)"
    for name in names:
        v = os.environ.get(name, "")
        if not v or not os.path.exists(v):
            return "%s is %s (scripts/test.sh sets it from tests/aarch64/fetch.sh)" % (name, repr(v) if v else "unset")
    if HOST_BUILD and not os.path.exists(HOST_CLI):
        return "no x86_64 build to compare with at %s (UCXTLS_HOST_BUILD_DIR)" % HOST_BUILD
    if not HOST_BUILD:
        return "UCXTLSTEST_HOST_BUILD_DIR is unset: nothing to compare with (configure with -DUCXTLS_HOST_BUILD_DIR)"
    return None
