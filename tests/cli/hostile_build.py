"""What the hostile doctor tests share (tests/cli/test_doctor_hostile.py, test_doctor_container.py): a
libucp (tests/cli/fake_ucx.c plus a constructor compiled here) that records, in any process of
ucxtls's that would run it (doctor, a helper), what it can reach: the caller's terminal (/dev/tty,
TIOCSTI), the caller's environment (SECRET_TOKEN), its euid; with LIMITS, in every process, its
seccomp mode, bounding set and cgroup. Doctor reads builds and never runs them: no record is made."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import LIB, env_for, have, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
WORK = tempfile.mkdtemp(prefix="ucxtls-hostile-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]

# Run only in the helper (its comm): what the target's code can reach from there.
HOSTILE_C = r"""#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifdef HOSTILE_VERSION
__attribute__((visibility("default"))) const char *ucp_get_version_string(void) { return HOSTILE_VERSION; }
#endif
static void slurp(const char *path, char *out, size_t n) {
  int fd = open(path, O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, out, n - 1) : 0;
  out[got > 0 ? got : 0] = '\0';
  if (fd >= 0) close(fd);
}
#ifdef LIMITS  /* in every process that loads it: its seccomp mode, bounding set and memory (or v2) cgroup */
static void field(const char *text, const char *key, char *out, size_t n) {
  const char *p = strstr(text, key);
  size_t i = 0;
  if (p)
    for (p += strlen(key); *p == '\t' || *p == ' ';) p++;
  while (p && p[i] && p[i] != '\n' && i + 1 < n) out[i] = p[i], i++;
  out[i] = '\0';
}
__attribute__((constructor)) static void limits(void) {
  char st[8192], cg[4096], comm[64], a[64], b[64], c[512], line[1024];
  slurp("/proc/self/status", st, sizeof st);
  slurp("/proc/self/cgroup", cg, sizeof cg);
  slurp("/proc/self/comm", comm, sizeof comm);
  comm[strcspn(comm, "\n")] = '\0';
  field(st, "Seccomp:", a, sizeof a);
  field(st, "CapBnd:", b, sizeof b);
  field(cg, ":memory:", c, sizeof c);
  if (!c[0]) field(cg, "0::", c, sizeof c);
  int fd = open(RECORD, O_WRONLY | O_APPEND | O_CREAT, 0666);
  int n = snprintf(line, sizeof line, "%s seccomp=%s capbnd=%s cgroup=%s\n", comm, a, b, c);
  if (fd >= 0 && write(fd, line, (size_t)n) < 0) {}
  if (fd >= 0) close(fd);
}
#endif
__attribute__((constructor)) static void hostile(void) {
  char comm[64], line[512];
  slurp("/proc/self/comm", comm, sizeof comm);
  comm[strcspn(comm, "\n")] = '\0';
  if (strncmp(comm, "ucxtls", 6)) return;  /* only in a process of ucxtls's: doctor, or a helper of it */
  int fd, tty = open("/dev/tty", O_RDWR), tty_errno = tty < 0 ? errno : 0, pushed = 0;
  if (tty >= 0) {
    for (const char *c = "echo INJECTED\n"; *c; c++) pushed += ioctl(tty, TIOCSTI, c) == 0;
    if (write(tty, "TTYWRITE\n", 9) < 0) {}
    close(tty);
  }
  const char *secret = getenv("SECRET_TOKEN"), *mine = getenv("TARGET_VAR");
  if ((fd = open(RECORD, O_WRONLY | O_APPEND | O_CREAT, 0666)) < 0) return;
  int n = snprintf(line, sizeof line, "%s euid=%u tty_errno=%d pushed=%d secret=%s target=%s\n", WHO, (unsigned)geteuid(),
                   tty_errno, pushed, secret ? secret : "-", mine ? mine : "-");
  if (write(fd, line, (size_t)n) < 0) {}
  close(fd);
}
"""


def needs_root(t, tools=("cc", "setpriv")):
    missing = [x for x in tools if not have(x)]
    if os.geteuid() != 0 or missing:
        t.skip("doctor as root against a hostile build", "not root" if os.geteuid() else "no %s" % ", ".join(missing))
        return False
    return True


def build(out, record, who="libucp", ucx=True, defines=(), libs=()):
    """A shared object at out: fake_ucx.c (NIXL-like transports) unless ucx is False, plus the
    hostile constructor recording into record as who."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    src = os.path.join(WORK, "hostile.c")
    with open(src, "w") as f:
        f.write(HOSTILE_C)
    cmd = ["cc", "-shared", "-fPIC", "-fvisibility=hidden", '-DRECORD="%s"' % record, '-DWHO="%s"' % who, "-o", out, src]
    if ucx:
        cmd += ["-DFAKE_UCX_TLS_NIXL=1", SRC]
    subprocess.run(cmd + list(defines) + list(libs), check=True)
    return out


def records(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def hold(argv, env, **kw):
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return p, p.stdout.readline()


def release(p):
    p.stdin.close()
    p.wait(timeout=30)


def as_nobody(argv):
    return [shutil.which("setpriv")] + NOBODY + argv


def doctor(args, extra=None, timeout=60):
    p = run([CLI, "doctor"] + args, env_for(None, preload=False, **(extra or {})), timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def judged(t, name, got):
    """doctor read the build and gave its verdict (exit 0: tcp is served)."""
    rc, out, err = got
    return t.check(name, rc == 0 and out.startswith("UCX ") and "ok          tcp" in out, "%d %r %r" % got)


def rec_dir(name):
    d = os.path.join(WORK, name)
    os.makedirs(d)
    os.chmod(d, 0o777)
    return os.path.join(d, "record")
