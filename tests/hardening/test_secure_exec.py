#!/usr/bin/env python3
"""Secure execution (AT_SECURE): the library is loaded into a setuid program yet does nothing.

ld.so preloads a library into a setuid program only when LD_PRELOAD names it bare, it lies in a
standard directory, and it carries the set-user-ID bit (ld.so(8)). The
test installs a uniquely named set-user-ID copy of the library in the system library directory,
makes a setuid-root copy of a small program, and runs it as `nobody` (this script drops to
nobody between fork and exec: no setpriv, no preloaded launcher in front of it) with
UCXTLS_DEBUG=1 and a fixture machine where the library would write UCX_TLS. It must show:
the library mapped in the program (/proc/self/maps), AT_SECURE=1, UCX_TLS unset, no debug line,
and (under strace, when ptrace works here) no probe syscall and no read of the sysroot. A
control run of a non-setuid copy of the same program, same user, same environment, shows the
library acting (value, debug line, sysroot reads), so the test can fail. Everything installed is
removed. Not root: SKIP with the reason and exit status 77, which CTest shows as "Skipped", never as
passed (CI runs as root, so there it always runs).
"""
import os
import shutil
import subprocess
import tempfile

from common import BASE_ENV, LIB, case, compile_c, fixture, have, main

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char line[4096];
  int mapped = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, argv[1])) mapped = 1;
  if (f) fclose(f);
  const char *v = getenv("UCX_TLS");
  printf("mapped=%d secure=%lu euid=%d UCX_TLS=%s\n", mapped, getauxval(AT_SECURE), (int)geteuid(),
         v ? v : "<unset>");
  return 0;
}
"""


def libdir():
    for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64"):
        if os.path.exists(os.path.join(d, "libc.so.6")):
            return d
    return None


class Setup:
    """A set-user-ID copy of the library in the standard library directory (ld.so loads only such
    a preload in secure mode), and the test program, plain and set-user-ID root; removed at the end
    of the case, and the removal checked."""

    def __init__(self, t):
        self.t = t
        self.installed = None
        self.work = None

    def __enter__(self):
        t = self.t
        if os.geteuid() != 0:
            t.skip("secure execution", "not root: cannot install a set-user-ID library and program")
            t.exit()
        d = libdir()
        if not t.check("a standard library directory with libc.so.6", d is not None):
            t.exit()
        self.name = "libucxtls-secure-test-%d.so" % os.getpid()
        self.installed = os.path.join(d, self.name)
        self.work = work = tempfile.mkdtemp(prefix="ucxtls-secure-")
        os.chmod(work, 0o755)
        prog, err = compile_c(work, "show", PROGRAM)
        if not t.check("compile the test program", prog is not None, err or ""):
            t.exit()
        self.suid = os.path.join(work, "show-suid")
        self.plain = os.path.join(work, "show-plain")
        shutil.copy(prog, self.suid)
        shutil.copy(prog, self.plain)
        os.chown(self.suid, 0, 0)
        os.chmod(self.suid, 0o4755)
        os.chmod(self.plain, 0o755)
        # Under no_new_privs (bubblewrap, many CI sandboxes) or on a nosuid mount the kernel ignores
        # the set-user-ID bit: no secure execution can be produced here, which is a SKIP, not a FAIL.
        probe = subprocess.run([self.suid, "-"], env=BASE_ENV, preexec_fn=as_nobody, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, timeout=60, cwd=work).stdout.decode()
        if "secure=1" not in probe:
            t.skip("secure execution", "the kernel ignores the set-user-ID bit here (%s): a setuid-root "
                   "program runs with %s" % (no_new_privs_or_nosuid(), probe.strip() or "no output"))
            t.exit()
        shutil.copy(LIB, self.installed)
        os.chmod(self.installed, 0o4755)  # the set-user-ID bit ld.so asks of a preload in secure mode
        self.machine = fixture("dgx")
        for p in (os.path.dirname(self.machine), os.path.dirname(os.path.dirname(self.machine))):
            os.chmod(p, 0o755)  # nobody must be able to reach the fixture in the control run
        self.preload_env = ["LD_PRELOAD=" + self.name, "UCXTLS_DEBUG=1", "UCXTLS_SYSROOT=" + self.machine,
                            "UCXTLS_WRITE=always",  # the control run writes the CUDA list on this dgx
                            "HOME=/nonexistent"]
        return self

    def __exit__(self, *exc):
        if self.installed:
            if os.path.exists(self.installed):
                os.unlink(self.installed)
            self.t.check("the installed copy is removed", not os.path.exists(self.installed))
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
        return False


def no_new_privs_or_nosuid():
    try:
        with open("/proc/self/status") as f:
            if any(l.split() == ["NoNewPrivs:", "1"] for l in f):
                return "no_new_privs is set on this process"
    except OSError:
        pass
    return "a nosuid mount or a user namespace"


def as_nobody():  # between fork and exec: the program itself is exec'd as nobody
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


@case("as root: a setuid program loads the library, which does nothing", tags=("as_root",))
def setuid_program(t):
    with Setup(t) as s:
        def show(exe):
            env = dict(BASE_ENV, **dict(e.split("=", 1) for e in s.preload_env))
            p = subprocess.run([exe, s.name], env=env, preexec_fn=as_nobody, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, cwd=s.work)
            return p.returncode, p.stdout.decode(), p.stderr.decode()

        rc, out, err = show(s.plain)
        t.equal("control: non-setuid copy as nobody: loaded, not secure, value written",
                out.strip(), "mapped=1 secure=0 euid=65534 UCX_TLS=rc_x,rc,dc_x,dc,cuda_copy", err)
        t.check("control: the debug line is printed", "ucxtls: set UCX_TLS=" in err, err)

        rc, out, err = show(s.suid)
        t.equal("setuid-root copy as nobody: loaded (in /proc/self/maps), AT_SECURE=1, UCX_TLS unset",
                out.strip(), "mapped=1 secure=1 euid=0 UCX_TLS=<unset>", err)
        t.equal("setuid-root copy: no debug line despite UCXTLS_DEBUG=1, stderr empty", err, "")
        t.equal("setuid-root copy: exit status 0", rc, 0)


@case("as root: strace: no probe syscalls under AT_SECURE", tags=("as_root", "strace"))
def setuid_strace(t):
    # No probe syscalls: strace as root follows the setuid exec with its privileges (-u).
    if not have("strace"):
        t.skip("no probe syscalls under AT_SECURE", "strace not installed")
        return
    if subprocess.run(["strace", "-o", "/dev/null", "true"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        t.skip("no probe syscalls under AT_SECURE", "ptrace is not permitted here")
        return
    with Setup(t) as s:
        machine = s.machine

        def trace(exe):
            log = os.path.join(s.work, "trace-" + os.path.basename(exe))
            argv = ["strace", "-u", "nobody", "-o", log, "-e", "trace=%file,getdents64,read"]
            for e in s.preload_env:
                argv += ["-E", e]
            p = subprocess.run(argv + [exe, s.name], env=BASE_ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, cwd=s.work)
            with open(log) as f:
                return p.stdout.decode(), f.read()

        out, log = trace(s.plain)
        t.check("control under strace: the library reads the sysroot", machine in log, log[-2000:])
        out, log = trace(s.suid)
        t.check("setuid-root under strace: still secure and loaded", "mapped=1 secure=1" in out, out)
        t.check("setuid-root under strace: the library was opened by ld.so", s.name in log, log[-2000:])
        probes = [l for l in log.splitlines() if machine in l or "ucx.conf" in l or "/dev/nvidia" in l
                  or "/sys/class" in l or "/proc/driver" in l or "getdents64" in l]
        t.equal("setuid-root under strace: no probe syscall, nothing under the sysroot", probes, [], log[-3000:])


if __name__ == "__main__":
    main("secure execution: loaded into a setuid program, does nothing")
