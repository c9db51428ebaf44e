#!/usr/bin/env python3
"""The write on an aarch64 kernel: Debian's arm64 kernel booted in qemu-system-aarch64 (TCG, -M virt
-cpu max) with an initramfs made here: the arm64 ld.so and libc (the sysroot), the aarch64
libucxtls.so, Debian's arm64 dash (a dynamic program, so it can be preloaded) and busybox-static,
and two fixture machines. Its /init runs dash with the library preloaded, and a child of that dash
(busybox sh) prints the UCX_TLS it inherited; the lines come back on the serial console.

- dgx with UCXTLS_WRITE=always: the child reads rc_x,rc,dc_x,dc,cuda_copy, written by the library;
- aws-p5 (EFA: no rc): the child reads all, the default's answer;
- UCX_TLS=tcp set by the user: the child reads tcp, left alone;
- without the library: the child reads nothing (the control).

Under qemu-user the write cannot be seen (qemu runs a thread of its own, and the library's
one-thread rule refuses); here the process is the kernel's alone. The boot and the four runs take
about 10 s of TCG. It runs when UCXTLSTEST_AARCH64_KERNEL names the kernel image (scripts/test.sh's
aarch64 lane sets it from tests/aarch64/fetch.sh --kernel), and SKIPs otherwise.
"""
import os
import re
import shutil
import stat
import subprocess
import tempfile

from lane import LIB, SYSROOT, missing_inputs
from harness import ALL, C, add_case, fixture, have, main

KERNEL = os.environ.get("UCXTLSTEST_AARCH64_KERNEL", "")
QEMU_SYSTEM = "qemu-system-aarch64"
MULTIARCH = "usr/lib/aarch64-linux-gnu"

INIT = r"""#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
echo "UCXTLS-KERNEL $(/bin/busybox uname -m) $(/bin/busybox uname -r)"
# A child of dash (a command substitution forks) prints the UCX_TLS it inherited.
show='v=$(/bin/busybox sh -c "echo \${UCX_TLS-<unset>}"); echo "$v"'
run() {  # run NAME VARIABLE=VALUE...: dash with them, its child prints UCX_TLS
  name=$1; shift
  echo "UCXTLS-CASE $name: $(/bin/busybox env -i PATH=/bin HOME=/ "$@" /bin/dash -c "$show" 2>/tmp/err)"
  while read -r line; do echo "UCXTLS-STDERR $name: $line"; done </tmp/err
}
run written UCXTLS_SYSROOT=/m/dgx UCXTLS_WRITE=always UCXTLS_DEBUG=1 LD_PRELOAD=/lib/libucxtls.so
run default UCXTLS_SYSROOT=/m/aws-p5 LD_PRELOAD=/lib/libucxtls.so
run kept UCX_TLS=tcp UCXTLS_SYSROOT=/m/dgx UCXTLS_WRITE=always LD_PRELOAD=/lib/libucxtls.so
run control UCXTLS_SYSROOT=/m/dgx UCXTLS_WRITE=always
echo UCXTLS-DONE
/bin/busybox poweroff -f
"""


def cpio(files, out):
    """A newc cpio archive (the kernel's initramfs format) of files: [(path, mode, data or link)]."""
    with open(out, "wb") as f:
        for ino, (path, mode, data) in enumerate(files + [("TRAILER!!!", 0, b"")], 1):
            name = path.encode() + b"\0"
            head = "070701" + "".join("%08X" % v for v in (
                ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name), 0))
            f.write(head.encode() + name + b"\0" * (-(110 + len(name)) % 4))
            f.write(data + b"\0" * (-len(data) % 4))


def tree(src, dest):
    """The files, directories and links below src, as cpio entries under dest."""
    out = [(dest, stat.S_IFDIR | 0o755, b"")]
    for top, dirs, names in os.walk(src):
        rel = os.path.relpath(top, src)
        base = dest if rel == "." else dest + "/" + rel
        for d in sorted(dirs):
            p = os.path.join(top, d)
            if os.path.islink(p):
                out.append((base + "/" + d, stat.S_IFLNK | 0o777, os.readlink(p).encode()))
            else:
                out.append((base + "/" + d, stat.S_IFDIR | 0o755, b""))
        for n in sorted(names):
            p = os.path.join(top, n)
            if os.path.islink(p):
                out.append((base + "/" + n, stat.S_IFLNK | 0o777, os.readlink(p).encode()))
            else:
                with open(p, "rb") as f:
                    out.append((base + "/" + n, stat.S_IFREG | (os.stat(p).st_mode & 0o777), f.read()))
    return out


def initramfs(path):
    kdir = os.path.dirname(KERNEL)
    def read(p):
        with open(p, "rb") as f:
            return f.read()
    d, x, r = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
    files = [(n, d, b"") for n in ("bin", "dev", "proc", "tmp", "lib", "lib/aarch64-linux-gnu", "m")]
    files += [("init", x, INIT.encode()),
              ("bin/busybox", x, read(os.path.join(kdir, "busybox"))),
              ("bin/dash", x, read(os.path.join(kdir, "dash"))),
              ("lib/ld-linux-aarch64.so.1", x, read(os.path.join(SYSROOT, MULTIARCH, "ld-linux-aarch64.so.1"))),
              ("lib/aarch64-linux-gnu/libc.so.6", x, read(os.path.join(SYSROOT, MULTIARCH, "libc.so.6"))),
              ("lib/libucxtls.so", r, read(LIB))]
    for m in ("dgx", "aws-p5"):
        files += tree(fixture(m), "m/" + m)
    cpio(files, path)


def boot(t):
    why = missing_inputs("UCXTLSTEST_AARCH64_KERNEL")
    if why:
        return t.skip("aarch64 kernel", why)
    if not have(QEMU_SYSTEM):
        return t.skip("aarch64 kernel", "%s not installed (Debian qemu-system-arm)" % QEMU_SYSTEM)
    top = tempfile.mkdtemp(prefix="ucxtls-kernel-aarch64-")
    try:
        initramfs(os.path.join(top, "initramfs.cpio"))
        # TCG; pauth-impdef: QEMU's cheaper pointer-authentication hash (docs/system/arm/cpu-features); no
        # network (the default NIC needs a boot ROM from another package, ipxe-qemu).
        argv = [QEMU_SYSTEM, "-M", "virt", "-cpu", "max,pauth-impdef=on", "-m", "512", "-smp", "1",
                "-nographic", "-no-reboot", "-nic", "none", "-kernel", KERNEL, "-initrd", os.path.join(top, "initramfs.cpio"),
                "-append", "console=ttyAMA0 rdinit=/init panic=-1 loglevel=1"]
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=480)
            console = p.stdout.decode(errors="replace").replace("\r", "")
        except subprocess.TimeoutExpired as e:
            console = (e.stdout or b"").decode(errors="replace") + "\n(timed out after 480 s)"
    finally:
        shutil.rmtree(top, True)
    ours = [l for l in console.splitlines() if l.startswith("UCXTLS-")]
    print("     the serial console's lines of the test:\n       " + "\n       ".join(ours), flush=True)
    if not t.check("the kernel ran /init to its end", "UCXTLS-DONE" in ours, console[-3000:]):
        return
    kernel = re.search(r"^UCXTLS-KERNEL (\S+)", console, re.M)
    t.equal("the kernel's machine (uname -m)", kernel and kernel.group(1), "aarch64")
    got = dict(re.findall(r"^UCXTLS-CASE (\w+): (.*)$", console, re.M))
    t.equal("dgx, UCXTLS_WRITE=always: the child of the preloaded dash reads the value written", got.get("written"), C)
    t.equal("aws-p5 (EFA): the child reads the default's answer", got.get("default"), ALL)
    t.equal("UCX_TLS=tcp set: left alone", got.get("kept"), "tcp")
    t.equal("without the library: the child reads no UCX_TLS", got.get("control"), "<unset>")
    t.check("the debug line says it set UCX_TLS",
            re.search(r"^UCXTLS-STDERR written: ucxtls: set UCX_TLS=%s: " % re.escape(C), console, re.M) is not None,
            "\n".join(ours))


add_case("aarch64 kernel: a child of a preloaded process reads the UCX_TLS the library wrote", boot)


if __name__ == "__main__":
    main("the write on an aarch64 kernel (qemu-system-aarch64)")
