#!/usr/bin/env python3
"""`doctor --pid` and `--ucx` against a hostile build, as root would run them on a shared node: a
libucp (tests/cli/fake_ucx.c plus a constructor compiled here) that records what it can reach from
the helper that loads it: the caller's terminal (it tries /dev/tty and TIOCSTI), the caller's
environment (SECRET_TOKEN), its euid. Files a user other than root can change (the module
directory, an LD_LIBRARY_PATH entry, a parent directory, the file's owner) are never loaded as
root; FIFOs and a mount that never answers do not hold doctor past its bound; the target's strings
reach the terminal without control bytes. Run as root (setpriv); SKIP otherwise."""
import fcntl
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import LIB, case, env_for, have, main, run  # noqa: E402

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
  if (strncmp(comm, "ucxtls-ucx", 10)) return;
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


def one_line_refusal(t, name, got, words):
    rc, out, err = got
    return t.check(name, rc == 2 and out == "" and err.count("\n") == 1 and words in err, "%d %r %r" % got)


def rec_dir(name):
    d = os.path.join(WORK, name)
    os.makedirs(d)
    os.chmod(d, 0o777)
    return os.path.join(d, "record")


@case("a nobody process's libucp cannot reach doctor's terminal (no /dev/tty, no TIOCSTI) nor its environment")
def terminal_and_environment(t):
    if not needs_root(t):
        return
    record = rec_dir("tty-rec")
    lib = build(os.path.join(WORK, "tty", "libucp.so.0"), record)
    p, _ = hold(as_nobody([sys.executable, "-c", HOLD, lib]), env_for(None, preload=False, TARGET_VAR="theirs"))
    master, slave = os.openpty()

    def own_terminal():  # doctor in a session whose controlling terminal is the pty, as in root's shell
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    try:
        d = subprocess.Popen([CLI, "doctor", "--pid", str(p.pid), "--value", "tcp"], stdin=slave, stdout=slave, stderr=slave,
                             env=env_for(None, preload=False, SECRET_TOKEN="root-secret-42"), preexec_fn=own_terminal)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            try:
                chunk = os.read(master, 4096) if ready else b""
            except OSError:  # EIO: every end of the slave is closed
                chunk = b""
            if not chunk:
                break
            seen += chunk
        rc = d.wait(timeout=30)
    finally:
        os.close(master)
        release(p)
    got = records(record)
    t.check("control: doctor asked the build (exit 0, its UCX line on the terminal)", rc == 0 and b"UCX " in seen, seen.decode(errors="replace"))
    t.check("the helper ran the constructor once, as nobody", len(got) == 1 and " euid=65534 " in got[0], repr(got))
    t.check("its open of /dev/tty failed with ENXIO (no controlling terminal), nothing pushed",
            len(got) == 1 and " tty_errno=6 pushed=0 " in got[0], repr(got))
    t.check("nothing it wrote or pushed reached the terminal", b"TTYWRITE" not in seen and b"INJECTED" not in seen, repr(seen))
    t.check("the caller's SECRET_TOKEN is not in its environment; the process's own TARGET_VAR is",
            len(got) == 1 and got[0].endswith(" secret=- target=theirs"), repr(got))


def root_case(t, name, lib):
    """doctor's answer on a root process holding lib."""
    p, line = hold([sys.executable, "-c", HOLD, lib], env_for(None, preload=False))
    try:
        if not t.equal("control (%s): the process holds its build" % name, line, b"ready\n"):
            return None
        return doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)


@case("a root process whose UCX module directory nobody can write: nobody's module is not loaded as root")
def module_dir(t):
    if not needs_root(t):
        return
    record = rec_dir("mod-rec")
    d = os.path.join(WORK, "moddir")
    lib = build(os.path.join(d, "libucp.so.0"), record, who="libucp-unused", ucx=True)
    os.makedirs(os.path.join(d, "ucx"))
    os.chmod(os.path.join(d, "ucx"), 0o777)
    mod = build(os.path.join(d, "ucx", "libuct_evil.so.0"), record, who="module", ucx=False)
    os.chown(mod, 65534, 65534)
    got = root_case(t, "module", lib)
    if got:
        one_line_refusal(t, "exit 2, one line naming the module directory", got, d + "/ucx (owner 0, mode 0777)")
        t.equal("no constructor ran in a helper", records(record), [])


@case("a root process whose LD_LIBRARY_PATH starts with a directory nobody can write: not loaded as root")
def library_path(t):
    if not needs_root(t):
        return
    record = rec_dir("llp-rec")
    open_dir, root_dir = os.path.join(WORK, "llp-open"), os.path.join(WORK, "llp-root")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)
    ucs = build(os.path.join(root_dir, "libucs.so.0"), record, who="root-libucs", ucx=False)
    lib = build(os.path.join(root_dir, "libucp.so.0"), record, who="libucp", libs=["-Wl,--no-as-needed", "-L" + root_dir, "-l:libucs.so.0"])
    llp = {"LD_LIBRARY_PATH": open_dir + ":" + root_dir}
    p, line = hold([sys.executable, "-c", HOLD, lib], env_for(None, preload=False, **llp))
    try:
        # nobody plants libucs.so.0 where the process's LD_LIBRARY_PATH looks first
        shutil.copy(ucs, os.path.join(open_dir, "libucs.so.0"))
        os.chown(os.path.join(open_dir, "libucs.so.0"), 65534, 65534)
        got = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    one_line_refusal(t, "exit 2, one line naming the directory of its LD_LIBRARY_PATH", got, open_dir + " (owner 0, mode 0777)")
    t.equal("no constructor ran in a helper", records(record), [])


@case("a root process's libucp in a root directory whose parent nobody owns: not loaded as root")
def parent_dir(t):
    if not needs_root(t):
        return
    record = rec_dir("parent-rec")
    parent = os.path.join(WORK, "parent")
    lib = build(os.path.join(parent, "root", "libucp.so.0"), record)
    os.chown(parent, 65534, 65534)
    got = root_case(t, "parent", lib)
    if got:
        one_line_refusal(t, "exit 2, one line naming the parent", got, parent + " (owner 65534, mode 0755)")
        t.equal("no constructor ran in a helper", records(record), [])


@case("a root process whose libucp has an RPATH with $LIB (ld.so's own expansion): not loaded as root")
def rpath_token(t):
    if not needs_root(t):
        return
    record = rec_dir("token-rec")
    lib = build(os.path.join(WORK, "token", "libucp.so.0"), record, libs=["-Wl,-rpath,/opt/ucxtls-none/$LIB"])
    got = root_case(t, "token", lib)
    if got:
        one_line_refusal(t, "exit 2, one line naming the directory", got, "/opt/ucxtls-none/$LIB (a directory doctor cannot expand)")
        t.equal("no constructor ran in a helper", records(record), [])


@case("a root process mapping a libucp that nobody owns (0644, in a root 0755 directory): refused, nothing loaded")
def owner_not_mode(t):
    if not needs_root(t):
        return
    record = rec_dir("owner-rec")
    lib = build(os.path.join(WORK, "owner", "libucp.so.0"), record)
    os.chmod(lib, 0o644)
    os.chown(lib, 65534, 65534)
    got = root_case(t, "owner", lib)
    if got:
        one_line_refusal(t, "exit 2, one line naming the file and its owner", got, lib + " (owner 65534, mode 0644)")
        t.equal("no constructor ran in a helper", records(record), [])


@case("a set-user-ID-root program started by nobody: the helper loads its build as nobody (65534), never as root")
def setuid_nobody(t):
    if not needs_root(t):
        return
    record = rec_dir("suid-rec")
    lib = build(os.path.join(WORK, "suid", "libucp.so.0"), record)
    exe = os.path.join(WORK, "suid-holder")
    harness.compile_c(exe, '#include <dlfcn.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(int c, char **v) { (void)c;'
                      ' if (!dlopen(v[1], RTLD_NOW)) return 3; printf("ready %d %d\\n", (int)getuid(), (int)geteuid());'
                      ' fflush(stdout); char b; while (read(0, &b, 1) > 0) {} return 0; }\n', ["-ldl"], check=True)
    os.chmod(exe, 0o4755)
    p, line = hold(as_nobody([exe, lib]), env_for(None, preload=False))
    try:
        if not t.equal("control: it runs as nobody with euid 0 (set-user-ID)", line, b"ready 65534 0\n"):
            return
        rc, out, err = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    got = records(record)
    t.check("doctor asked the build (exit 0)", rc == 0 and "UCX " in out, out + err)
    t.check("the helper's constructor ran as 65534, once", len(got) == 1 and " euid=65534 " in got[0], repr(got))


@case("doctor --ucx as root of a build that nobody owns: refused in one line, not run; a root-owned copy is asked")
def ucx_as_root(t):
    if not needs_root(t):
        return
    record = rec_dir("ucx-rec")
    d = os.path.join(WORK, "ucx-nobody")
    lib = build(os.path.join(d, "libucp.so.0"), record)
    os.chown(d, 65534, 65534)
    os.chown(lib, 65534, 65534)
    one_line_refusal(t, "exit 2, one line naming what nobody can change", doctor(["--ucx", d, "--value", "tcp"]),
                     d + " (owner 65534, mode 0755)")
    t.equal("no constructor ran in a helper", records(record), [])
    os.chown(d, 0, 0)
    os.chown(lib, 0, 0)
    if os.path.exists(record):
        os.unlink(record)
    rc, out, err = doctor(["--ucx", d, "--value", "tcp"])
    t.check("control: owned by root, it is asked (exit 0), its constructor ran as root",
            rc == 0 and [r.split()[1] for r in records(record)] == ["euid=0"], "%d %r %r %r" % (rc, out, err, records(record)))


@case("doctor --ucx DIR holding FIFOs named libucp.so.0 and libucp.so: an answer at once, nothing opened for reading")
def fifos(t):
    d = os.path.join(WORK, "fifos")
    os.makedirs(d)
    for name in ("libucp.so.0", "libucp.so"):
        os.mkfifo(os.path.join(d, name))
    start = time.time()
    try:
        rc, out, err = doctor(["--ucx", d, "--value", "tcp"], timeout=10)
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "killed at 10 s"
    took = time.time() - start
    t.check("exit 2 within 5 s, one line: no libucp there", rc == 2 and took < 5 and "no libucp in" in err, "%d %.1fs %r" % (rc, took, err))
    start = time.time()
    try:
        rc, out, err = doctor(["--ucx", os.path.join(d, "libucp.so.0"), "--value", "tcp"], timeout=10)
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "killed at 10 s"
    t.check("--ucx FIFO: exit 2 within 5 s, not a regular file", rc == 2 and time.time() - start < 5 and "not a regular file" in err,
            "%d %r" % (rc, err))


def hung_mount_class():
    """tests/hardening/test_limits.py's HungMount, without its cases."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hardening"))
    n = len(harness.CASES)
    from test_limits import HungMount
    del harness.CASES[n:]
    return HungMount


@case("a process whose UCX_CONFIG_DIR is a mount that never answers: doctor --pid ends at --timeout-ms, one line")
def hung_config_dir(t):
    if not needs_root(t, ("cc",)):
        return
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(harness.BUILD_DIR, "tests", "cli", "fakes-ucx"))
    m = hung_mount_class()()
    try:
        if m.error:
            t.skip("a mount that never answers", m.error)
            return
        p, _ = hold([sys.executable, "-c", HOLD, os.path.join(fakes, "nixl", "libucp.so.0")],
                    env_for("dgx", preload=False, UCX_CONFIG_DIR=m.dir))
        start = time.time()
        try:
            got = doctor(["--pid", str(p.pid), "--timeout-ms", "2000"], timeout=15)
        except subprocess.TimeoutExpired:
            got = (-1, "", "killed at 15 s")
        took = time.time() - start
        release(p)
    finally:
        m.close()
    rc, out, err = got
    t.check("exit 2 within 6 s, one line saying what gave no answer", rc == 2 and took < 6 and err.count("\n") == 1 and
            "ucx.conf places" in err and "2000 ms" in err, "%d %.1fs %r %r" % (rc, took, out, err))


@case("a process named with an escape sequence, a build whose version string holds one: printed with '?' for them")
def control_bytes(t):
    if not needs_root(t, ("cc",)):
        return
    record = os.path.join(WORK, "ctl-record")
    lib = build(os.path.join(WORK, "ctl", "libucp.so.0"), record, defines=["-DFAKE_UCX_NOT_UCX",
                                                                           '-DHOSTILE_VERSION="1.22\\033]0;owned\\007"'])
    name = "import ctypes; ctypes.CDLL(None).prctl(15, b'py\\x1b[2Jx', 0, 0, 0); "
    p, _ = hold([sys.executable, "-c", name + HOLD, lib], env_for(None, preload=False))
    try:
        rc, out, err = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    t.check("control: the version and the name are printed (exit 0)", rc == 0 and "1.22?]0;owned?" in out and "py?[2Jx" in out, out + err)
    t.check("no ESC or BEL reaches the terminal", "\x1b" not in out + err and "\x07" not in out + err, repr(out + err))


PODMAN = ["podman", "--runtime", "runc"]
TAG = "ucxtls-test-doctor-hostile"


@case("a root process in a Podman container: the helper runs under its seccomp filter, bounding set and cgroup", tags=("podman",))
def container_limits(t):
    if not needs_root(t, ("cc", "podman", "runc", "tar")):
        return
    d = os.path.join(WORK, "image")
    root = os.path.join(d, "root")
    for sub in ("lib64", "lib/x86_64-linux-gnu", "usr/bin", "ucx", "tmp", "etc"):
        os.makedirs(os.path.join(root, sub))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(root, "lib64"))
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(root, "lib/x86_64-linux-gnu"))
    harness.compile_c(os.path.join(root, "usr/bin/holder"), '#include <dlfcn.h>\n#include <unistd.h>\nint main(int c, char **v) {'
                      ' (void)c; if (!dlopen(v[1], RTLD_NOW)) return 3; for (;;) pause(); }\n', check=True)
    build(os.path.join(root, "ucx/libucp.so.0"), "/tmp/limits", defines=["-DLIMITS"])
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/:/bin/sh\n")
    image = "localhost/%s:%d" % (TAG, os.getpid())
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
    p = subprocess.run(PODMAN + ["import", "-", image], stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    tar.wait()
    if not t.check("podman import of the test's image", p.returncode == 0, p.stdout.decode(errors="replace")):
        return
    try:
        p = subprocess.run(PODMAN + ["run", "-d", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                                     "--label", TAG, image, "/usr/bin/holder", "/ucx/libucp.so.0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if p.returncode != 0:
            t.skip("a root process in a Podman container", "podman cannot run a container here: " + p.stderr.strip())
            return
        cid = p.stdout.strip()
        pid = subprocess.run(PODMAN + ["inspect", "--format", "{{.State.Pid}}", cid], stdout=subprocess.PIPE,
                             universal_newlines=True, timeout=60).stdout.strip()
        record = "/proc/%s/root/tmp/limits" % pid
        for _ in range(100):
            if records(record):
                break
            time.sleep(0.1)
        rc, out, err = doctor(["--pid", pid, "--value", "tcp"])
        got = records(record)
        # Traced already (strace): its filter cannot be read, so doctor refuses and says how to ask from inside.
        tracer = subprocess.Popen(["strace", "-p", pid, "-o", "/dev/null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
            if have("strace") else None
        for _ in range(100):
            with open("/proc/%s/status" % pid) as f:
                if tracer is None or re.search(r"^TracerPid:\s+[1-9]", f.read(), re.M):
                    break
            time.sleep(0.05)
        traced = doctor(["--pid", pid, "--value", "tcp"]) if tracer else None
        after = records(record)
        if tracer:
            tracer.terminate()
            tracer.wait(timeout=30)
    finally:
        subprocess.run(PODMAN + ["rm", "-f", "--filter", "label=" + TAG], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        subprocess.run(PODMAN + ["rmi", "-f", image], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    own = [r.split(" ", 1)[1] for r in got if r.startswith("holder ")]
    helper = [r.split(" ", 1)[1] for r in got if r.startswith("ucxtls-ucx")]
    t.check("control: the container's process runs under a seccomp filter (mode 2)", own and "seccomp=2 " in own[0], repr(got))
    t.check("doctor asked its build (exit 0)", rc == 0 and "UCX " in out, out + err)
    t.equal("the helper's seccomp mode, bounding set and cgroup are the container's", helper, own[:1])
    if traced is None:
        t.skip("a traced container process", "no strace (Debian strace)")
        return
    one_line_refusal(t, "traced by strace: exit 2, one line saying how to ask from inside", traced, "podman exec ID ucxtls doctor")
    t.equal("... and no helper ran", after, got)


if __name__ == "__main__":
    main("doctor --pid and --ucx against a hostile build")
