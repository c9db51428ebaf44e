#!/usr/bin/env python3
"""`doctor --pid` as root of processes whose environment a user controls, each judged from files
with none of their code run: every library and module here carries fake_ucx.c's recording
constructor (FAKE_UCX_RECORD: "<euid> <comm>" appended to a file in any process that runs it), and
the record holds only the held process's own lines afterwards. The environments: an empty
LD_LIBRARY_PATH entry (the working directory) that is a sticky world-writable directory holding a
user's library, a glibc-hwcaps subdirectory of a root-owned directory holding a user's library, two
LD_LIBRARY_PATH entries in the environment (ld.so takes the last: the verdict must name the
library the last one gives), a ./ucx.conf in the working directory naming a user's module
directory and a root-only UCX_LOG_FILE (left untouched), and a nobody process with supplementary
groups. Which copy doctor read shows in the transports it names (each copy defines its own).
Run as root; SKIP otherwise."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, env_for, main  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(harness.LIB), "ucxtls"))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
WORK = tempfile.mkdtemp(prefix="ucxtls-henv-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
RECORD = os.path.join(WORK, "record")
# Holds its libucp (ctypes.CDLL) and, when given, asks ld.so for a second library by name, printing
# the file it mapped: what ld.so itself chose from the environment.
HOLD = ("import ctypes, sys\nctypes.CDLL(sys.argv[1])\nchosen = '-'\nif len(sys.argv) > 2:\n"
        "    ctypes.CDLL(sys.argv[2])\n"
        "    chosen = [l.split()[-1] for l in open('/proc/self/maps') if sys.argv[2] in l][0]\n"
        "print('ready', chosen, flush=True)\nsys.stdin.read()\n")


def lib(path, transport=None, ucx=False, needs=(), owner=None):
    """A shared object at path with the recording constructor (a libucp when ucx), defining
    uct_<transport>_tl when given, needing the libraries `needs` (paths: their names are kept)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    extra = os.path.join(WORK, "tl-%s.c" % (transport or "none"))
    with open(extra, "w") as f:
        if transport:
            f.write('__attribute__((visibility("default"))) char uct_%s_tl[64] = "%s";\n' % (transport, transport))
    cmd = ["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-soname," + os.path.basename(path), "-o", path, SRC, extra,
           '-DFAKE_UCX_RECORD="%s"' % RECORD] + ([] if ucx else ["-DFAKE_UCX_NOT_UCX=1"])
    if needs:
        cmd += ["-Wl,--no-as-needed"] + list(needs)
    subprocess.run(cmd, check=True)
    if owner is not None:
        os.chown(path, owner, owner)
    return path


def records():
    try:
        with open(RECORD) as f:
            return f.read().splitlines()
    except OSError:
        return []


def judge(t, name, argv, env, cwd=None, want=(), unwanted=()):
    """Holds argv (a process that loads its build), runs doctor --pid on it as root; checks the
    verdict names each transport of want and none of unwanted, and that no code of the build ran
    in doctor. Gives (doctor's output, what the process's own ld.so chose)."""
    with open(RECORD, "w"):
        os.chmod(RECORD, 0o666)  # a nobody process records too
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline().decode()
        if not line.startswith("ready"):
            p.stdin.close()
            t.check("%s: control: the process holds its build" % name, False, line + p.stderr.read().decode())
            return "", ""
        before = records()
        r = harness.run([CLI, "doctor", "--pid", str(p.pid), "--value", "tcp"], env_for(None, preload=False))
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    out = r.stdout.decode(errors="replace")
    t.check("%s: judged (exit 0, tcp ok)" % name, r.returncode == 0 and "ok          tcp" in out, out + r.stderr.decode(errors="replace"))
    registered = next((l for l in out.splitlines() if l.startswith("this UCX ")), "")
    names = set(registered[len("this UCX "):].split(" (")[0].strip().split(", "))
    for tl in want:
        t.check("%s: the verdict names %s (the copy ld.so or UCX would load)" % (name, tl), tl in names, registered)
    for tl in unwanted:
        t.check("%s: not %s (a copy ld.so or UCX would pass over)" % (name, tl), tl not in names, registered)
    t.check("%s: control: the process's own record (its constructors ran in it)" % name, len(before) > 0, repr(before))
    t.equal("%s: no constructor ran in doctor (the record is the process's alone)" % name,
            [l for l in records() if "ucxtls" in l], [])
    t.equal("%s: nothing was added to the record by doctor" % name, records(), before)
    return out, line.split()[-1] if line else ""


def needs_root(t):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        t.skip("doctor as root against hostile environments", "not root" if os.geteuid() else "no setpriv")
        return False
    return True


def module_build(name, needs):
    """A libucp (its own libucs) in WORK/name/lib whose module ucx/libuct_mod.so.0 needs `needs`."""
    d = os.path.join(WORK, name, "lib")
    ucp = lib(os.path.join(d, "libucp.so.0"), ucx=True)
    lib(os.path.join(d, "ucx", "libuct_mod.so.0"), "mod", needs=needs)
    return ucp


def stub(path):
    subprocess.run(["cc", "-shared", "-o", path, "-Wl,-soname," + os.path.basename(path), "-x", "c", "/dev/null"], check=True)
    return path


def build_needing(name, soname):
    """module_build(name) whose module needs `soname`, which is then left for the case to place."""
    link = stub(os.path.join(WORK, soname))
    ucp = module_build(name, [link])
    os.unlink(link)
    return ucp


@case("an empty LD_LIBRARY_PATH entry: the working directory, sticky and world-writable, holding a user's library")
def empty_entry(t):
    if not needs_root(t):
        return
    ucp = build_needing("empty", "libdep.so.0")
    cwd = os.path.join(WORK, "sticky")
    os.makedirs(cwd)
    os.chmod(cwd, 0o1777)
    lib(os.path.join(cwd, "libdep.so.0"), "planted", owner=65534)
    judge(t, "empty entry", [sys.executable, "-c", HOLD, ucp], env_for(None, preload=False, LD_LIBRARY_PATH=":/nonexistent"),
          cwd=cwd, want=("planted", "mod"))


@case("a glibc-hwcaps subdirectory (a user's) of a root-owned LD_LIBRARY_PATH directory holding a library")
def hwcaps(t):
    if not needs_root(t):
        return
    levels = subprocess.run(["/lib64/ld-linux-x86-64.so.2", "--help"], stdout=subprocess.PIPE).stdout.decode()
    level = next((l.split()[0] for l in levels.splitlines() if "x86-64-v" in l and "supported, searched" in l), None)
    if not level:
        t.skip("glibc-hwcaps", "ld.so --help lists no supported x86-64 level")
        return
    ucp = build_needing("hwcaps", "libhw.so.0")
    d = os.path.join(WORK, "hwroot")
    lib(os.path.join(d, "libhw.so.0"), "plain")
    sub = os.path.join(d, "glibc-hwcaps", level)
    os.makedirs(sub)
    os.chown(sub, 65534, 65534)
    lib(os.path.join(sub, "libhw.so.0"), "hwcaps", owner=65534)
    lib(os.path.join(d, "libhwctl.so.0"), "plainctl")
    lib(os.path.join(sub, "libhwctl.so.0"), "hwctl", owner=65534)
    out, chosen = judge(t, "glibc-hwcaps/" + level, [sys.executable, "-c", HOLD, ucp, "libhwctl.so.0"],
                        env_for(None, preload=False, LD_LIBRARY_PATH=d), want=("hwcaps",), unwanted=("plain",))
    t.check("control: the process's ld.so took the glibc-hwcaps copy too", "/glibc-hwcaps/" in chosen, chosen)


@case("two LD_LIBRARY_PATH entries in the environment: the verdict names the library the last gives, as ld.so does")
def two_entries(t):
    if not needs_root(t):
        return
    ucp = build_needing("dup", "libdup.so.0")
    first, last = os.path.join(WORK, "first"), os.path.join(WORK, "last")
    for d, tl in ((first, "first"), (last, "last")):
        lib(os.path.join(d, "libdup.so.0"), tl)
        lib(os.path.join(d, "libdupctl.so.0"), tl + "ctl")
    launcher = os.path.join(WORK, "twice")
    harness.compile_c(launcher, '#include <unistd.h>\nint main(int c, char **v) { (void)c;\n'
                      '  char *env[] = {v[1], v[2], "PATH=/usr/bin:/bin", 0};\n  execve(v[3], v + 3, env);\n  return 127;\n}\n',
                      check=True)
    out, chosen = judge(t, "two entries", [launcher, "LD_LIBRARY_PATH=" + first, "LD_LIBRARY_PATH=" + last, sys.executable, "-c",
                                           HOLD, ucp, "libdupctl.so.0"], None, want=("last",), unwanted=("first",))
    t.check("control: the process's ld.so took the last one's library too", chosen.startswith(last + "/"), chosen)


@case("a ./ucx.conf naming a user's module directory and a root-only UCX_LOG_FILE: read, nothing run, the file untouched")
def ucx_conf(t):
    if not needs_root(t):
        return
    ucp = lib(os.path.join(WORK, "conf", "lib", "libucp.so.0"), ucx=True)
    cwd, mods = os.path.join(WORK, "conf-cwd"), os.path.join(WORK, "users-modules")
    os.makedirs(cwd)
    os.chmod(cwd, 0o1777)
    lib(os.path.join(mods, "libuct_users.so.0"), "users", owner=65534)
    os.chown(mods, 65534, 65534)
    secret = os.path.join(WORK, "root-only.log")
    with open(secret, "w") as f:
        f.write("root's own log\n")
    os.chmod(secret, 0o600)
    before = os.stat(secret)
    with open(os.path.join(cwd, "ucx.conf"), "w") as f:
        f.write("UCX_MODULE_DIR = %s\nUCX_LOG_FILE = %s\nUCX_LOG_LEVEL = trace\n" % (mods, secret))
    os.chown(os.path.join(cwd, "ucx.conf"), 65534, 65534)
    out, _ = judge(t, "./ucx.conf", [sys.executable, "-c", HOLD, ucp], env_for(None, preload=False), cwd=cwd, want=("users",))
    t.check("its module directory is the one ucx.conf names (read as UCX reads it)", mods in out, out)
    after = os.stat(secret)
    with open(secret) as f:
        text = f.read()
    t.check("the root-only UCX_LOG_FILE is untouched (size, mtime, content)",
            (after.st_size, after.st_mtime_ns, text) == (before.st_size, before.st_mtime_ns, "root's own log\n"), repr(text))


@case("a nobody process with supplementary groups (0 among them): judged, nothing of it run")
def nobody_groups(t):
    if not needs_root(t):
        return
    ucp = lib(os.path.join(WORK, "groups", "libucp.so.0"), ucx=True)
    argv = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--groups=0,4,27", sys.executable, "-c", HOLD, ucp]
    judge(t, "nobody with groups 0,4,27", argv, env_for(None, preload=False))
    t.check("control: the record is nobody's (65534), made in the process", records() and all(l.startswith("65534 ") for l in records()),
            repr(records()))


@case("a rootless Podman container's process judged from its root", tags=("podman",))
def rootless_podman(t):
    users = []
    try:
        with open("/etc/subuid") as f:
            users = [l.split(":")[0] for l in f if l.strip() and not l.startswith("#")]
    except OSError:
        pass
    if not shutil.which("podman") or not users:
        t.skip("a rootless Podman container", "no podman" if not shutil.which("podman") else
               "no user has subordinate ids (/etc/subuid is empty): rootless Podman cannot map a container's users here")
        return
    t.skip("a rootless Podman container", "users with subordinate ids (%s), but no image is stored for them and nothing "
           "can be pulled here" % ", ".join(users))


if __name__ == "__main__":
    main("doctor --pid as root against hostile environments: read, never run")
