#!/usr/bin/env python3
"""`doctor --pid` reads a process's build and never runs it: a libucp whose constructor records its
effective uid (tests/cli/fake_ucx.c, FAKE_UCX_RECORD) mapped by a process of nobody, by a root
process in a pivot_root'ed mount and pid namespace (a container), by a chrooted process, and by a
root process whose library others may change: each is judged from its files (inside the process's
root), and the record holds the process's own line alone. Run as root (it needs setpriv, unshare,
chroot); SKIP otherwise."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, case, compile_c, env_for, have, main, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
WORK = tempfile.mkdtemp(prefix="ucxtls-pid-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"


def needs_root(t):
    missing = [x for x in ("cc", "setpriv", "unshare") if not have(x)]
    if os.geteuid() != 0 or missing:
        t.skip("doctor --pid as root", "not root" if os.geteuid() else "no %s" % ", ".join(missing))
        return False
    return True


def recording_ucx(where, record):
    """A fake UCX (NIXL-like transports) at where/libucp.so.0 whose constructor appends
    '<euid> <comm>' to record."""
    os.makedirs(where, exist_ok=True)
    out = os.path.join(where, "libucp.so.0")
    subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-DFAKE_UCX_TLS_NIXL=1",
                    '-DFAKE_UCX_RECORD="%s"' % record, "-o", out, SRC], check=True)
    return out


def records(path):
    try:
        with open(path) as f:
            return [tuple(x.split(" ", 1)) for x in f.read().splitlines()]
    except OSError:
        return []


def hold(argv, env):
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    return p, line


def release(p):
    p.stdin.close()
    p.wait(timeout=30)


def doctor(pid):
    p = run([CLI, "doctor", "--pid", str(pid), "--value", "tcp"], env_for(None, preload=False))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def doctor_held(lib):
    """doctor's answer on a python3 of this user that maps lib, held while it is asked."""
    p, _ = hold([sys.executable, "-c", HOLD, lib], env_for(None, preload=False))
    try:
        return doctor(p.pid)
    finally:
        release(p)


@case("a process of nobody: its build is judged, its constructor never runs in doctor")
def as_nobody(t):
    if not needs_root(t):
        return
    rec_dir = os.path.join(WORK, "rec")
    os.makedirs(rec_dir)
    os.chmod(rec_dir, 0o777)
    record = os.path.join(rec_dir, "euid")
    lib = recording_ucx(os.path.join(WORK, "nobody"), record)
    p, line = hold([shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", HOLD, lib],
                   env_for(None, preload=False))
    try:
        t.equal("control: the process runs as nobody and its constructor ran as 65534", records(record)[:1], [("65534", "python3")])
        rc, out, err = doctor(p.pid)
    finally:
        release(p)
    helper = [r[0] for r in records(record)[1:]]  # after the process's own
    t.check("doctor asked the build (exit 0, its UCX line)", rc == 0 and re.search(r"^UCX +%s" % re.escape(lib), out, re.M), out + err)
    t.equal("no constructor ran after the process's own", helper, [])


@case("a root process whose library others may change: judged from its files, nothing of it run (exit 0)")
def root_writable(t):
    if not needs_root(t):
        return
    record = os.path.join(WORK, "writable-euid")
    d = os.path.join(WORK, "writable")
    lib = recording_ucx(d, record)
    os.chmod(lib, 0o666)
    rc, out, err = doctor_held(lib)
    t.check("exit 0, its UCX line", rc == 0 and re.search(r"^UCX +%s" % re.escape(lib), out, re.M), "%d %r %r" % (rc, out, err))
    t.equal("no constructor ran but the process's own", len(records(record)), 1)


def system_tree(root):
    """root gets the host's /usr (and /bin, /lib, ... as links or binds) read-only, for python3."""
    binds = []
    for d in ("usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        src = "/" + d
        if os.path.islink(src):
            os.symlink(os.readlink(src), os.path.join(root, d))
        elif os.path.isdir(src):
            os.makedirs(os.path.join(root, d))
            binds.append(d)
    return binds


@case("a root process in a container (mount and pid namespaces, pivot_root): its build is read from its root, nothing run")
def container(t):
    if not needs_root(t):
        return
    root = os.path.join(WORK, "container")
    os.makedirs(os.path.join(root, "proc"))
    os.makedirs(os.path.join(root, "old"))
    binds = system_tree(root)
    name = "/ucxtls-escape-%d" % os.getpid()
    recording_ucx(os.path.join(root, "ucx"), name)
    marker = "container-%d" % os.getpid()

    def python_with(x):
        try:
            with open("/proc/%s/cmdline" % x, "rb") as a, open("/proc/%s/comm" % x) as b:
                return int(x) if marker.encode() in a.read() and b.read().startswith("python3") else 0
        except (OSError, ValueError):
            return 0
    script = ("set -e; mount --make-rprivate /; mount --bind %(r)s %(r)s; for d in %(b)s; do mount --rbind -o ro /$d %(r)s/$d; done; "
              "mount -t proc proc %(r)s/proc; cd %(r)s; pivot_root . old; umount -l /old; "
              "exec python3 -c \"$HOLD\" /ucx/libucp.so.0 %(m)s") % {"r": root, "b": " ".join(binds), "m": marker}
    env = env_for(None, preload=False, HOLD=HOLD, PATH="/usr/sbin:/usr/bin:/sbin:/bin")
    p, line = hold([shutil.which("unshare"), "-m", "-p", "--fork", "sh", "-c", script], env)
    try:
        if not t.check("control: the container's process holds its UCX", line == b"ready\n", (line + p.stderr.read1(2000)).decode(errors="replace")
                       if line != b"ready\n" else ""):
            return
        pid = [x for x in map(python_with, os.listdir("/proc")) if x]
        rc, out, err = doctor(pid[0])
    finally:
        release(p)
    inside = records(root + name)
    t.check("doctor asked it (exit 0), naming the file as the container maps it",
            rc == 0 and re.search(r"^UCX +/proc/%d/root/ucx/libucp.so.0" % pid[0], out, re.M), out + err)
    t.equal("no file written on the host's root (%s)" % name, os.path.exists(name), False)
    t.equal("no constructor ran after the container's process's own", [r[0] for r in inside[1:]], [])
    if os.path.exists(name):
        os.unlink(name)


@case("a chrooted process: its build is found at the host path maps names, read from its root")
def chrooted(t):
    if not needs_root(t) or not have("chroot"):
        return
    root = os.path.join(WORK, "chroot")
    os.makedirs(root)
    binds = system_tree(root)
    recording_ucx(os.path.join(root, "ucx"), "/euid")
    mounted = []
    try:
        for d in binds:  # in doctor's own mount namespace: a plain chroot
            subprocess.run(["mount", "--bind", "-o", "ro", "/" + d, os.path.join(root, d)], check=True)
            mounted.append(os.path.join(root, d))
        p, line = hold([shutil.which("chroot") or "/usr/sbin/chroot", root, "python3", "-c", HOLD, "/ucx/libucp.so.0"], env_for(None, preload=False))
        try:
            rc, out, err = doctor(p.pid)
        finally:
            release(p)
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", m])
    t.check("exit 0, the build at its host path (not /proc/PID/root prefixed to it)",
            rc == 0 and re.search(r"^UCX +%s/ucx/libucp.so.0 " % re.escape(root), out, re.M), "%d %r %r" % (rc, out, err))
    t.equal("no constructor ran after the process's own", [r[0] for r in records(root + "/euid")[1:]], [])


def suid_holder(exe):
    """A set-user-ID-root program at exe that loads each argument, says 'ready <uid> <euid>' and holds."""
    compile_c(exe, '#include <dlfcn.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(int c, char **v) {'
              ' for (int i = 1; i < c; i++) if (!dlopen(v[i], RTLD_NOW)) return 3; printf("ready %d %d\\n", (int)getuid(),'
              ' (int)geteuid()); fflush(stdout); char b; while (read(0, &b, 1) > 0) {} return 0; }\n', ["-ldl"], check=True)
    os.chmod(exe, 0o4755)


def suid_doctor(t, name, env, libs, build="nixl"):
    """doctor --pid's (stdout, stderr) on a set-user-ID-root holder started by nobody with env, that
    loads libs and then the fake UCX `build`, on a replayed Intel node; None when it did not start so."""
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
    exe = os.path.join(WORK, name)
    suid_holder(exe)
    p, line = hold([shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", exe] + libs +
                   [os.path.join(fakes, build, "libucp.so.0")], env)
    try:
        if not t.equal("control: it runs as nobody with euid 0 (set-user-ID)", line, b"ready 65534 0\n"):
            return None
        q = run([CLI, "doctor", "--pid", str(p.pid)], env_for("intel-xe", preload=False))
    finally:
        release(p)
    return q.returncode, q.stdout.decode(errors="replace"), q.stderr.decode(errors="replace")


@case("a set-user-ID program started by nobody that maps libucxtls.so, UCX_TLS=rc,cuda_copy: that value, secure execution")
def secure_with_library(t):
    if not needs_root(t):
        return
    # Its facts (the replayed Intel node) would give a family, and the library a decision, were it read.
    got = suid_doctor(t, "suid-lib", env_for("intel-xe", preload=False, UCX_TLS="rc,cuda_copy"), [LIB])
    if not got:
        return
    rc, out, err = got
    t.check("the value line shows rc,cuda_copy and says secure execution (its library read nothing)",
            re.search(r"^value +rc,cuda_copy \(.*secure execution: its libucxtls.so read nothing\)$", out, re.M), out + err)
    t.check("... not 'UCX_TLS stays unset', no line of its library's decision", "stays unset" not in out and
            not re.search(r"^library ", out, re.M), out)


@case("a set-user-ID program started by nobody that maps libucp (secure execution): no value to check, exit 0")
def secure_execution(t):
    if not needs_root(t):
        return
    # UCX_TLS unset in it; what it would compose without secure execution
    got = suid_doctor(t, "suid-ucx", env_for("intel-xe", preload=False, UCXTLS_TEMPLATE="tcp,{copy}"), [])
    if not got:
        return
    rc, out, err = got
    t.check("'secure execution (its libucxtls.so read nothing)' ... 'no value to check, only the build', "
            "verdict ok, exit 0", rc == 0 and "its libucxtls.so read nothing" in out and "no value to check, only the build" in out
            and out.splitlines()[-1:] == ["verdict     ok (exit 0)"], "%d %r %r" % (rc, out, err))
    t.check("... no value line (nothing composed from its UCXTLS_TEMPLATE), no build line for the node's family (ze)",
            not re.search(r"^value ", out, re.M) and "Level Zero" not in out and "ze_copy" not in out, out)


@case("a set-user-ID program started by nobody with LD_LIBRARY_PATH: ld.so ignores it there, and so does doctor")
def secure_library_path(t):
    # The fake build's module needs libcuda.so.1, found only through LD_LIBRARY_PATH (the fake CUDA
    # driver's directory). Under secure execution glibc's ld.so ignores LD_LIBRARY_PATH (elf/rtld.c
    # process_envvars), though /proc/PID/environ still shows it: the module does not load there.
    if not needs_root(t):
        return
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
    cuda = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))
    env = env_for("intel-xe", preload=False, LD_LIBRARY_PATH=cuda)
    module = "libuct_cuda.so.0 does not load here: libcuda.so.1"
    p, _ = hold([sys.executable, "-c", HOLD, os.path.join(fakes, "cuda-module", "libucp.so.0")], env)
    try:
        q = run([CLI, "doctor", "--pid", str(p.pid)], env_for("intel-xe", preload=False))
    finally:
        release(p)
    out = q.stdout.decode(errors="replace")
    t.check("control: without secure execution the module loads through LD_LIBRARY_PATH (cuda_copy registered)",
            module not in out and re.search(r"^this UCX .*cuda_copy", out, re.M), out)
    got = suid_doctor(t, "suid-llp", env, [], build="cuda-module")
    if got:
        rc, out, err = got
        t.check("secure execution: its module does not load (libcuda.so.1 not found), no cuda_copy",
                module in out and not re.search(r"^this UCX .*cuda_copy", out, re.M), "%d %r %r" % (rc, out, err))


@case("a process that kept UCX_TLS unset beside a ucx.conf in its working directory: nothing to check, exit 0")
def its_cwd(t):
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
    d = os.path.join(WORK, "cwd-conf")
    os.makedirs(d)
    with open(os.path.join(d, "ucx.conf"), "w") as f:
        f.write("UCX_TLS=tcp\n")
    p = subprocess.Popen([sys.executable, "-c", HOLD, os.path.join(fakes, "nixl", "libucp.so.0")], cwd=d,
                         env=env_for("dgx", UCXTLS_DEBUG="1"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    try:
        q = run([CLI, "doctor", "--pid", str(p.pid)], env_for("dgx", preload=False), cwd=WORK)
    finally:
        release(p)
        lib_line = p.stderr.read().decode(errors="replace")
    out, err = q.stdout.decode(errors="replace"), q.stderr.decode(errors="replace")
    t.check("control: the library in it kept UCX_TLS unset for its ./ucx.conf", "ucx.conf" in lib_line, lib_line)
    t.check("doctor (run elsewhere) names its ucx.conf, judges no derived value, exit 0",
            q.returncode == 0 and "UCX takes it from" in out and "ucx.conf" in out and not re.search(r"^value ", out, re.M),
            "%d %r %r" % (q.returncode, out, err))


OLD_WORDS = "(run as the process's user, or as root)"  # the advice for a user, wrong for root


def refused_as_root(t, what, prefix, target, want):
    """doctor --pid target run under prefix (as root): the kernel refuses its maps; the line says
    why although doctor is root, and what to do."""
    q = run(prefix + [CLI, "doctor", "--pid", str(target.pid)], env_for(None, preload=False))
    err = q.stderr.decode(errors="replace")
    t.check("%s: exit 2, 'cannot read /proc/%d/maps: Permission denied, although doctor runs as root', %r, what to do, "
            "not %r" % (what, target.pid, want, OLD_WORDS),
            q.returncode == 2 and "cannot read /proc/%d/maps: Permission denied, although doctor runs as root: " % target.pid in err
            and want in err and "; run doctor " in err and OLD_WORDS not in err, "%d %r" % (q.returncode, err))


@case("as root, a process whose maps the kernel refuses (a user namespace, no CAP_SYS_PTRACE, an LSM): why, and what to do")
def refused_root(t):
    if not needs_root(t):
        return
    # A process of nobody, outside any namespace doctor is put in; this root reads its maps (control).
    target, _ = hold(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", HOLD,
                      "libc.so.6"], env_for(None, preload=False))
    try:
        rc, out, err = doctor(target.pid)
        t.check("control: doctor as this root reads its maps (no libucp in it)", "no UCX mapped" in err, err)
        if have("unshare"):
            refused_as_root(t, "root of a user namespace (unshare -U -r)", ["unshare", "-U", "-r"], target,
                            "it is root of a user namespace (uid_map '0 0 1')")
        # On Linux 6.18 CAP_SYS_ADMIN or CAP_PERFMON pass the check too: all three dropped.
        refused_as_root(t, "root without CAP_SYS_PTRACE (setpriv)", ["setpriv", "--bounding-set=-sys_ptrace,-sys_admin,-perfmon"],
                        target, "it lacks CAP_SYS_PTRACE")
    finally:
        release(target)
    # This machine's process 1, where a sandbox around the tests refuses it to root with every capability.
    try:
        open("/proc/1/maps").close()
        t.skip("process 1 refused to root by an LSM", "this root reads /proc/1/maps here (no sandbox refuses it)")
    except PermissionError:
        q = run([CLI, "doctor", "--pid", "1"], env_for(None, preload=False))
        err = q.stderr.decode(errors="replace")
        t.check("doctor --pid 1, refused here to this root: why although root, what to do, not %r" % OLD_WORDS,
                q.returncode == 2 and "although doctor runs as root: " in err and "; run doctor " in err and OLD_WORDS not in err,
                "%d %r" % (q.returncode, err))


@case("a user under a /proc mounted hidepid=2: a root process is not 'no process', it may be hidden")
def hidden(t):
    if not needs_root(t):
        return
    cli = os.path.join(WORK, "ucxtls")  # where nobody may run it
    shutil.copy(CLI, cli)
    os.chmod(cli, 0o755)
    target, _ = hold([sys.executable, "-c", HOLD, "libc.so.6"], env_for(None, preload=False))
    try:
        # A proc instance of its own in a mount namespace of its own: the machine's /proc is untouched.
        script = ('mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups '
                  '%s doctor --pid %d' % (cli, target.pid))
        q = run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], env_for(None, preload=False))
        err = q.stderr.decode(errors="replace")
        t.check("nobody, doctor --pid of a root process under hidepid=2: exit 2, 'no process N that doctor can see', "
                "the mount option and what to do", q.returncode == 2 and
                "no process %d that doctor can see: /proc is mounted hidepid=invisible" % target.pid in err
                and "(run as the process's user, or as root)" in err, "%d %r" % (q.returncode, err))
    finally:
        release(target)


if __name__ == "__main__":
    main("doctor --pid asks a build in the process's place")
