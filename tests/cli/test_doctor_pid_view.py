#!/usr/bin/env python3
"""`doctor --pid` decides from the process's own view: every file the library's probe reads (its
UCXTLS_SYSROOT, ./ucx.conf, $HOME/ucx.conf, $UCX_CONFIG_DIR/ucx.conf, /dev) is read inside the
process's root with the process's file credentials, and only regular files are read where a sysfs
attribute belongs. Each held process preloads libucxtls.so with UCXTLS_DEBUG=1, so that its own
line on stderr is what its library decided; doctor's `library` line must be that line. The cases:
a nobody process whose UCXTLS_SYSROOT links an ibdev attribute to a root-only file (its bytes never
printed), a FIFO and a device linked where ibdev belongs (no hang, nothing read), a root-only
ucx.conf behind each of the three places UCX reads, and processes in a private root (bubblewrap)
whose /dev shows fewer GPUs than the node's (made in a mount namespace of the test). Run as root;
SKIP otherwise."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, case, env_for, have, machines, main, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
UCP = os.path.join(FAKES, "nixl", "libucp.so.0")
WORK = tempfile.mkdtemp(prefix="ucxtls-view-")
os.chmod(WORK, 0o755)  # nobody's processes read their fixtures below it
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# The library goes into the held python3 alone (env(1) sets LD_PRELOAD for it), not into setpriv or
# bubblewrap before it: their lines would come first, and their UCX_TLS would be inherited.
# The system's python3: nobody may run it, and the private root holds /usr (not a home's pyenv).
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
PRELOADED = ["/usr/bin/env", "LD_PRELOAD=" + LIB, PYTHON, "-c", HOLD, UCP]
HOME = os.path.join(WORK, "home")  # empty, and nobody may read it (harness's EMPTY_HOME is root's alone)
os.makedirs(HOME)


def needs_root(t, *tools):
    missing = [x for x in ("setpriv",) + tools if not have(x)]
    if os.geteuid() != 0 or missing:
        t.skip("doctor --pid as root in the process's place", "not root" if os.geteuid() else "no %s" % ", ".join(missing))
        return False
    return True


def machine(name, label):
    """A fixture machine of its own under WORK (readable by nobody), to be changed by a case."""
    return machines.build(name, os.path.join(WORK, label))


def the_ibdev(root):
    """The ibdev attribute of the one RDMA device of container-one-of-eight (uverbs3), as a path
    without links, removed: the case puts its own thing there."""
    path = os.path.realpath(os.path.join(root, "sys", "class", "infiniband_verbs", "uverbs3", "ibdev"))
    os.unlink(path)
    return path


def library_line(text):
    lines = [l.strip() for l in text.splitlines() if l.startswith("ucxtls: ")]
    return lines[-1] if len(lines) == 1 else None  # the held process's alone


def python_below(pid):
    """The python3 process below pid (bubblewrap's child's child), or pid itself."""
    kids = {}
    for x in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % x) as f:
                stat = f.read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append((int(x), comm))
    todo = [pid]
    while todo:
        for child, comm in kids.get(todo.pop(), []):
            if comm.startswith("python3"):
                return child
            todo.append(child)
    return pid


def judged(argv, env, cwd=None, before_doctor=None, doctor=(CLI,)):
    """Holds argv (its library's debug line on stderr), runs `doctor` (root's, unless a prefix
    says otherwise) --pid on it; gives (doctor's exit, stdout, stderr, doctor's library line, the
    process's own line)."""
    p = subprocess.Popen(argv, env=env, cwd=cwd or WORK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = p.stdout.readline()
        if ready != b"ready\n":
            p.stdin.close()
            return None, "", (ready + p.stderr.read()).decode(errors="replace"), None, None
        if before_doctor:
            before_doctor()
        q = run(list(doctor) + ["doctor", "--pid", str(python_below(p.pid))], env_for(None, preload=False, HOME=HOME), timeout=30)
    finally:
        if not p.stdin.closed:
            p.stdin.close()
        p.wait(timeout=30)
    own = p.stderr.read().decode(errors="replace")
    out, err = q.stdout.decode(errors="replace"), q.stderr.decode(errors="replace")
    shown = next((l[len("library"):].strip() for l in out.splitlines() if l.startswith("library ")), None)
    return q.returncode, out, err, shown, library_line(own)


def same_decision(t, name, got):
    rc, out, err, shown, own = got
    t.check("%s: control: the process's library said its decision" % name, own is not None, err)
    t.check("%s: doctor's library line is the process's own" % name, shown == own and own is not None,
            "doctor (exit %s): %r\nthe process: %r\n%s%s" % (rc, shown, own, out, err))
    return out + err


@case("a nobody process's UCXTLS_SYSROOT links its ibdev attribute to a root-only file: its bytes never printed")
def sysroot_secret(t):
    if not needs_root(t):
        return
    root = machine("container-one-of-eight", "secret")
    secret_dir = os.path.join(WORK, "root-only")
    os.makedirs(secret_dir)
    secret = os.path.join(secret_dir, "token")
    word = "rootsecret%d" % os.getpid()
    with open(secret, "w") as f:
        f.write(word + "\n")
    os.chmod(secret, 0o600)
    os.symlink(secret, the_ibdev(root))
    env = env_for(None, preload=False, UCXTLS_SYSROOT=root, UCXTLS_DEBUG="1", HOME=HOME)
    got = judged(NOBODY + PRELOADED, env)
    text = same_decision(t, "root-only ibdev", got)
    t.check("the root-only file's bytes are nowhere in doctor's output", word not in text, text)
    t.check("... and its library could not read it either (EACCES: cannot tell)", "EACCES" in (got[4] or ""), got[4] or "")
    # A root process under that sysroot: its library reads no file that not everyone may read there.
    got = judged(PRELOADED, env)
    text = same_decision(t, "root-only ibdev, a root process", got)
    t.check("a root process's library did not read it (EACCES under a sysroot)", word not in text + (got[4] or "") and
            "EACCES" in (got[4] or ""), got[4] or "")
    # The same link to /proc/self/environ: in doctor, that names doctor's own environment.
    root = machine("container-one-of-eight", "environ")
    os.symlink("/proc/self/environ", the_ibdev(root))
    mark = "doctorsecret" * 3  # doctor's whole environment: under 64 bytes, no '/' (an IB device name's rules)
    p = subprocess.Popen(NOBODY + PRELOADED, env=env_for(None, preload=False, UCXTLS_SYSROOT=root, HOME=HOME),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdout.readline()
        q = run([CLI, "doctor", "--pid", str(p.pid)], {"UCXTLSTEST_MARK": mark})
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    text = (q.stdout + q.stderr).decode(errors="replace")
    t.check("ibdev -> /proc/self/environ: doctor's own environment is nowhere in its output", "doctorsecret" not in text, text)


@case("a FIFO and a device linked where a sysfs attribute belongs: no hang, nothing read, the library's own answer")
def fifo_and_device(t):
    if not needs_root(t):
        return
    root = machine("container-one-of-eight", "fifo")
    fifo = the_ibdev(root)
    os.mkfifo(fifo, 0o666)
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # both ends: a reader never blocks, and the bytes wait in it
    try:
        env = env_for(None, preload=False, UCXTLS_SYSROOT=root, UCXTLS_DEBUG="1", HOME=HOME)
        got = judged(PRELOADED, env, before_doctor=lambda: os.write(held, b"fifobytes\n"))
        text = same_decision(t, "FIFO", got)
        t.check("doctor answered (no hang)", got[0] is not None, text)
        try:
            left = os.read(held, 100)
        except BlockingIOError:
            left = b""
        t.equal("nothing read from the FIFO: its bytes are still in it", left, b"fifobytes\n")
        t.check("... and none shown", "fifobytes" not in text, text)
        t.check("the library took it for no ibdev (not a regular file)", "no IB device name in sysfs" in (got[4] or ""), got[4] or "")
    finally:
        os.close(held)
    root = machine("container-one-of-eight", "device")
    os.symlink("/dev/zero", the_ibdev(root))
    env = env_for(None, preload=False, UCXTLS_SYSROOT=root, UCXTLS_DEBUG="1", HOME=HOME)
    got = judged(PRELOADED, env)
    same_decision(t, "/dev/zero", got)
    t.check("/dev/zero: the library took it for no ibdev (never opened)", "no IB device name in sysfs" in (got[4] or ""), got[4] or "")


@case("a root-only ucx.conf behind ./, $HOME and $UCX_CONFIG_DIR of a nobody process: doctor reads as it, not as root")
def ucx_conf_places(t):
    if not needs_root(t):
        return
    root = machine("dgx", "conf-dgx")
    hidden = os.path.join(WORK, "conf-root-only")
    os.makedirs(hidden)
    os.chmod(hidden, 0o700)
    conf = os.path.join(hidden, "ucx.conf")
    with open(conf, "w") as f:
        f.write("UCX_TLS=tcp\n")
    for place in ("cwd", "HOME", "UCX_CONFIG_DIR"):
        d = os.path.join(WORK, "conf-" + place)
        os.makedirs(d)
        os.symlink(conf, os.path.join(d, "ucx.conf"))  # an absolute link: where only root may look
        extra = {"HOME": d if place == "HOME" else HOME}
        if place == "UCX_CONFIG_DIR":
            extra["UCX_CONFIG_DIR"] = d
        env = env_for(None, preload=False, UCXTLS_SYSROOT=root, UCXTLS_DEBUG="1", **extra)
        got = judged(NOBODY + PRELOADED, env, cwd=d if place == "cwd" else WORK)
        text = same_decision(t, place, got)
        t.check("%s: not 'UCX takes it from' the file nobody may read" % place, "UCX takes it from" not in text, text)


@case("nobody's doctor --pid of its own process, in the same root: decided in place (no chroot needed)")
def as_its_user(t):
    if not needs_root(t):
        return
    cli = os.path.join(WORK, "ucxtls")  # where nobody may run it
    shutil.copy(CLI, cli)
    os.chmod(cli, 0o755)
    env = env_for(None, preload=False, UCXTLS_SYSROOT=machine("dgx", "own-dgx"), UCXTLS_DEBUG="1", HOME=HOME)
    got = judged(NOBODY + PRELOADED, env, doctor=NOBODY + [cli])
    same_decision(t, "nobody's own process", got)
    t.check("exit 0", got[0] == 0, got[1] + got[2])


# The node doctor runs on, made in a mount namespace of its own: /dev a tmpfs holding the real
# null, zero, urandom and tty and eight fake NVIDIA GPU nodes (plain files: the kernel probe
# counts a node whose path exists). The process is a bubblewrap root whose own /dev holds the
# control node and one GPU; both hold the same python3 and build (read-only binds).
NODE = r"""set -e
d=$(mktemp -d); mount -t tmpfs none "$d"
for n in null zero full urandom random tty; do touch "$d/$n"; mount --bind "/dev/$n" "$d/$n"; done
touch "$d/nvidiactl"; for i in 0 1 2 3 4 5 6 7; do touch "$d/nvidia$i"; done
mount --move "$d" /dev
exec python3 "$0" --node "$@"
"""


def in_node(argv_json):
    """(--node) Within the namespace: holds the bubblewrap process, runs doctor on it, prints one
    JSON object: doctor's exit, output and library line, the process's own line."""
    import json
    spec = json.loads(argv_json)
    got = judged(spec["argv"], spec["env"])
    print(json.dumps({"got": got}))


def bwrap_root(gpus):
    """bubblewrap's arguments for a private root: the system read-only, the build and WORK, a
    fresh /proc, a minimal /dev with the control node and `gpus` fake GPU nodes."""
    fake = os.path.join(WORK, "gpu-node")
    open(fake, "w").close()
    args = ["bwrap", "--unshare-pid", "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for d in ("usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc"):
        if os.path.islink("/" + d):
            args += ["--symlink", os.readlink("/" + d), "/" + d]
        elif os.path.isdir("/" + d):
            args += ["--ro-bind", "/" + d, "/" + d]
    for path in sorted({os.path.dirname(LIB), FAKES, WORK}):
        args += ["--ro-bind", path, path]
    for i in range(gpus):
        args += ["--ro-bind", fake, "/dev/nvidia%d" % i]
    if gpus:
        args += ["--ro-bind", fake, "/dev/nvidiactl"]
    return args


@case("a process in a private root (bubblewrap) whose /dev shows fewer GPUs than the node's: its own verdict")
def private_root(t):
    if not needs_root(t, "bwrap", "unshare") or subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"]).returncode != 0:
        if os.geteuid() == 0:
            t.skip("a private root", "bubblewrap or unshare is missing, or cannot make a namespace here")
        return
    import json
    for gpus, visible, why in ((1, "5", "CUDA_VISIBLE_DEVICES=5: the node's sixth GPU, which its root lacks"),
                               (0, None, "no GPU node in its root")):
        env = env_for(None, preload=False, UCXTLS_DEBUG="1", UCXTLS_SYSROOT=None, PATH="/usr/bin:/bin", HOME=HOME)
        if visible:
            env["CUDA_VISIBLE_DEVICES"] = visible
        spec = {"argv": bwrap_root(gpus) + PRELOADED, "env": env}
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", NODE, os.path.abspath(__file__),
                            json.dumps(spec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        try:
            got = json.loads(p.stdout.decode().splitlines()[-1])["got"]
        except (ValueError, IndexError):
            t.check("%s: the node's namespace ran" % why, False, (p.stdout + p.stderr).decode(errors="replace"))
            continue
        text = same_decision(t, why, got)
        t.check("%s: its library saw no visible GPU (the node has eight)" % why, "no GPU" in (got[4] or "") or
                "none" in (got[4] or ""), got[4] or "")
        t.check("%s: doctor did not take the node's CUDA GPUs for its" % why, "cuda_copy" not in (got[3] or ""), text)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--node":
        in_node(sys.argv[2])
    else:
        main("doctor --pid decides in the process's place: its root, its credentials, regular files")
