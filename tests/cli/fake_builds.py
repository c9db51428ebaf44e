"""Fake UCX builds made by a test, for what cannot exist here: a libucp (its own libucs and libuct)
that registers the given transports and states the given version, and a ucx_info that is an ELF
program needing it (DT_NEEDED libucp.so.0, DT_RUNPATH its directory), which `ucxtls doctor`
resolves from its files as ld.so would. Nothing of either runs in doctor: RECORD, when given,
is a file each constructor appends '<euid> <comm>' to, so a test can prove it."""
import os
import subprocess

SRC = r'''#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT const char *ucp_get_version_string(void) { return VERSION; }
EXPORT const char *ucs_status_string(int s) { return s ? "error" : "Success"; }
#ifdef RECORD
__attribute__((constructor)) static void record(void) {
  char line[64];
  int fd = open(RECORD, O_WRONLY | O_APPEND | O_CREAT, 0666), n = snprintf(line, sizeof line, "%u ran\n", (unsigned)geteuid());
  if (fd >= 0 && write(fd, line, (size_t)n) < 0) {}
  if (fd >= 0) close(fd);
}
#endif
'''


def fake_ucx(d, transports=("tcp", "self", "sysv", "posix"), version="1.22.0", record=None, name="libucp.so.0"):
    """d/<name>: a libucp of this version registering these transports; its path."""
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "fake-%s.c" % name)
    with open(src, "w") as f:
        f.write(SRC + "".join('EXPORT char uct_%s_tl[64] = "%s";\n' % (tl, tl) for tl in transports))
    out = os.path.join(d, name)
    cmd = ["cc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wl,-soname," + name, '-DVERSION="%s"' % version, "-o", out, src]
    if record:
        cmd.append('-DRECORD="%s"' % record)
    subprocess.run(cmd, check=True)
    return out


def elf_ucx_info(d, libdir, record=None):
    """d/ucx_info: a program that needs libdir/libucp.so.0 (found through its RUNPATH); d."""
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "ucx_info.c")
    with open(src, "w") as f:
        f.write('#include <fcntl.h>\n#include <unistd.h>\nint main(void) {\n#ifdef RECORD\n'
                '  int fd = open(RECORD, O_WRONLY | O_APPEND | O_CREAT, 0666);\n'
                '  if (fd >= 0 && write(fd, "ucx_info ran\\n", 13) < 0) {}\n#endif\n  return 0;\n}\n')
    cmd = ["cc", "-o", os.path.join(d, "ucx_info"), src, "-Wl,--no-as-needed", "-L" + libdir, "-l:libucp.so.0",
           "-Wl,--enable-new-dtags,-rpath," + libdir]
    if record:
        cmd.append('-DRECORD="%s"' % record)
    subprocess.run(cmd, check=True)
    return d
