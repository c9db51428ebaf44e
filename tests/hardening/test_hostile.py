#!/usr/bin/env python3
"""Hostile machines and settings: the host process runs exactly as without the library.

Machines are generated in a temporary directory from the fixture machines
(tests/fixtures/machines.py), then damaged (damaged_machines.py): random bytes or nothing in every
file the probe reads, directories where files belong, symlink loops, 50 MB files, 5000 directory
entries, unreadable files (run as `nobody`), FIFOs where files belong (with and without a writer
holding data), ./ucx.conf -> /dev/stdin; settings: CUDA_VISIBLE_DEVICES with 20 000 entries, a 100
KB UCX_TLS, long and non-ASCII templates and lists, a 1 MB environment, deep, missing and too-long
UCXTLS_SYSROOT.

Each case runs a host (`/bin/sh -c 'echo host; cd /proc/$$/fd && echo *; exit 7'`, so a leaked
descriptor shows, or `cat` reading stdin) with and without the library: stdout and exit status must be identical, no run may time out, and stderr holds at
most the one `ucxtls:` line (exactly one with UCXTLS_DEBUG=1). When the sanitizer build exists,
the sanitized fixture driver also runs the constructor's ladder on every hostile machine. The
slowest process is reported (no tight wall-time assertion).
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import time

from common import LIB, SAN_DIR, Timer, case, env_for, fixture, have, machines, main
from damaged_machines import base_machine, build_machines, probe_files

# The host lists its open descriptors (a shell glob: no child process): a descriptor the
# constructor leaked would change stdout.
HOST = ["/bin/sh", "-c", "echo host; cd /proc/$$/fd && echo *; exit 7"]
TIMEOUT = 30


def host_env(machine_root, **extra):
    env = env_for(None, **extra)
    if machine_root is not None:
        env["UCXTLS_SYSROOT"] = machine_root
    return env


def compare(t, timer, label, env, argv=HOST, cwd=None, debug_line=None, user=None, stdin=None):
    """Runs argv with and without the library; checks stdout, status, stderr, time."""
    plain_env = dict(env)
    plain_env.pop("LD_PRELOAD", None)
    pre_argv, pre_env = argv, env
    if user:
        # setpriv drops to the user; `env` then preloads the library into the host alone.
        prefix = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups", "--"]
        argv = prefix + argv
        pre_argv = prefix + ["/usr/bin/env", "LD_PRELOAD=" + env["LD_PRELOAD"]] + pre_argv
        pre_env = plain_env
    try:
        plain = subprocess.run(argv, env=plain_env, cwd=cwd, input=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
        t0 = time.monotonic()
        pre = subprocess.run(pre_argv, env=pre_env, cwd=cwd, input=stdin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
        dt = time.monotonic() - t0
        if dt > timer.worst:
            timer.worst, timer.worst_label = dt, label
    except subprocess.TimeoutExpired as e:
        t.check(label + ": finishes within %ds" % TIMEOUT, False, str(e))
        return None
    ok = pre.stdout == plain.stdout and pre.returncode == plain.returncode
    t.check(label + ": stdout and exit status unchanged (%.0f ms)" % (dt * 1000), ok,
            "with: rc %d %r\nwithout: rc %d %r\nstderr: %r" % (pre.returncode, pre.stdout[:300], plain.returncode,
                                                               plain.stdout[:300], pre.stderr[:600]))
    err = pre.stderr.decode(errors="replace")
    ours = [l for l in pre.stderr.splitlines(keepends=True) if l.startswith(b"ucxtls: ")]
    rest = b"".join(l for l in pre.stderr.splitlines(keepends=True) if not l.startswith(b"ucxtls: "))
    if debug_line is None:
        debug_line = env.get("UCXTLS_DEBUG") == "1"
    if debug_line:
        t.check(label + ": exactly one ucxtls line on stderr", len(ours) == 1 and err.count("ucxtls:") == 1, err[-600:])
    else:
        t.check(label + ": at most one ucxtls line on stderr (an invalid setting)", len(ours) <= 1, err[-600:])
    t.check(label + ": the rest of stderr unchanged", rest == plain.stderr,
            "with: %r\nwithout: %r" % (pre.stderr[-400:], plain.stderr[-400:]))
    return pre


def sanitized_driver(t, label, env):
    drv = os.path.join(SAN_DIR, "tests", "hardening", "fixture_driver")
    if not os.path.exists(drv):
        return False
    env = dict(env)
    env.pop("LD_PRELOAD", None)
    env["ASAN_OPTIONS"] = "detect_leaks=1:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    try:
        p = subprocess.run([drv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return t.check(label + ": sanitized driver finishes", False, str(e))
    err = p.stderr.decode(errors="replace")
    return t.check(label + ": sanitized driver (ASan+UBSan) clean", p.returncode == 0 and "Sanitizer" not in err
                   and "runtime error" not in err, err[-3000:])


TIMER = Timer()


_top = []


def top():
    """The directory of this process's hostile machines, made once (and removed at exit)."""
    if not _top:
        d = tempfile.mkdtemp(prefix="ucxtls-hostile-")
        os.chmod(d, 0o755)  # `nobody` must reach the unreadable-files machine
        _top.append(d)
        atexit.register(remove, d)
        atexit.register(TIMER.report)
    return _top[0]


def remove(d):
    for sub, dirs, files in os.walk(d):
        for x in dirs + files:
            try:
                os.chmod(os.path.join(sub, x), 0o755, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(d, ignore_errors=True)


_made = {}


def made():
    """The damaged machines (name: root), built once per process."""
    if not _made:
        _made.update(build_machines(top()))
    return _made


def fifo_home():
    """A working directory whose ucx.conf is a FIFO (no writer unless a case opens one)."""
    home = os.path.join(top(), "fifo-home")
    if not os.path.exists(home):
        os.makedirs(home)
        os.mkfifo(os.path.join(home, "ucx.conf"))
    return home


MACHINE_SETTINGS = ({"UCXTLS_DEBUG": "1"},
                    {"CUDA_VISIBLE_DEVICES": "GPU-5c3f4c01,7", "ROCR_VISIBLE_DEVICES": "1",
                     "UCXTLS_TEMPLATE": "tcp,{copy}", "UCXTLS_PROBE": "driver"})


def label_of(name, extra):
    return "%s %s" % (name, " ".join("%s=%s" % kv for kv in extra.items()) or "(defaults)")


@case("hostile machines: the host runs as without the library")
def hostile_machines(t):
    timer = TIMER
    for name, root in made().items():
        for extra in MACHINE_SETTINGS:
            compare(t, timer, label_of(name, extra), host_env(root, **extra))


def no_sanitizer_build(t):
    if os.path.exists(os.path.join(SAN_DIR, "tests", "hardening", "fixture_driver")):
        return False
    t.skip("sanitized driver on hostile machines", "no sanitizer build (the sanitize_build test makes it; needs clang)")
    return True


@case("sanitized: fixture_driver on the hostile machines")
def sanitized_machines(t):
    if no_sanitizer_build(t):
        return
    for name, root in made().items():
        extra = MACHINE_SETTINGS[0]
        sanitized_driver(t, label_of(name, extra), host_env(root, **extra))


@case("FIFOs with a writer and pending data")
def fifos(t):
    timer, top_dir = TIMER, top()
    made_machines = made()
    fifo_root = made_machines["fifos"]
    conf = os.path.join(fifo_root, "etc/ucx/ucx.conf")
    home = fifo_home()
    fds = []
    for p in [conf, os.path.join(home, "ucx.conf")] + [q for q in probe_files(fifo_root) if q != conf][:4]:
        r = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # so the write end can open
        w = os.open(p, os.O_WRONLY)
        os.write(w, b"UCX_TLS=pending\n")
        fds.append((p, r, w))
    compare(t, timer, "FIFOs with a writer and pending data", host_env(fifo_root, HOME=home, UCXTLS_DEBUG="1"),
            cwd=home)
    for p, r, w in fds:
        try:
            data = os.read(r, 100)
        except BlockingIOError:
            data = b""
        if p.endswith("ucx.conf"):
            t.equal("FIFO %s: the pending data is still there for its reader" % os.path.relpath(p, top_dir),
                    data, b"UCX_TLS=pending\n")
        os.close(r)
        os.close(w)


@case("driver tier: a FIFO named like the cache file gets no reader")
def driver_cache_fifo(t):
    """A writer blocked opening the FIFO (no reader yet) must stay blocked: the library checks the
    file before it opens it (docs/design.md, "The driver tier"), so it never becomes the reader."""
    cache = os.path.join(top(), "fifo-cache")
    os.makedirs(cache, 0o755, exist_ok=True)
    fifo = os.path.join(cache, "driver")
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o644)
    writer = subprocess.Popen(["python3", "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); "
                               "os.write(1, b'opened'); os.write(fd, b'boot x\\n')", fifo],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)  # the writer is in open(2), waiting for a reader
        compare(t, TIMER, "driver tier, the cache file a FIFO with a writer waiting",
                host_env(fixture("dgx"), UCXTLS_PROBE="driver", UCXTLS_CACHE_DIR=cache, UCXTLS_DEBUG="1"))
        time.sleep(0.3)
        t.equal("the FIFO's writer is still waiting for a reader (the library never opened it)",
                writer.poll(), None)
    finally:
        r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # releases the writer, whatever happened
        try:
            writer.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.communicate()
        os.close(r)


@case("./ucx.conf -> /dev/stdin: the host's stdin is not drained")
def ucx_conf_stdin(t):
    timer, top_dir = TIMER, top()
    cwd = os.path.join(top_dir, "stdin-cwd")
    os.makedirs(cwd)
    os.symlink("/dev/stdin", os.path.join(cwd, "ucx.conf"))
    data = b"first line of the host's input\nUCX_TLS=x\n" * 100
    compare(t, timer, "./ucx.conf -> /dev/stdin, cat reading a pipe", host_env(made()["many-entries"]),
            argv=["cat"], cwd=cwd, stdin=data)


@case("as root: unreadable files, as nobody", tags=("as_root",))
def unreadable(t):
    timer, top_dir = TIMER, top()
    if os.geteuid() != 0:
        t.skip("unreadable files as nobody", "not root: cannot switch to nobody")
        return
    if not have("setpriv"):
        t.skip("unreadable files as nobody", "setpriv not installed (util-linux)")
        return
    if not os.access(LIB, os.R_OK) or any(not (os.stat(d).st_mode & 0o005) for d in _parents(LIB)):
        t.skip("unreadable files as nobody", "nobody cannot read %s" % LIB)
        return
    root = os.path.join(top_dir, "unreadable")
    base_machine(root)
    with open(os.path.join(root, "etc/ucx/ucx.conf"), "w") as f:
        f.write("UCX_TLS=tcp\n")
    for p in probe_files(root):
        os.chmod(p, 0)
    os.chmod(os.path.join(root, "sys/class/infiniband"), 0)
    nobody_home = os.path.join(top_dir, "nobody-home")
    os.makedirs(nobody_home)
    os.chmod(nobody_home, 0o755)
    for extra in ({"UCXTLS_DEBUG": "1"}, {"UCXTLS_TEMPLATE": "tcp,{copy}", "UCXTLS_DEBUG": "1"}):
        label = "unreadable files, as nobody %s" % " ".join("%s=%s" % kv for kv in extra.items())
        p = compare(t, timer, label, host_env(root, HOME=nobody_home, **extra), cwd=nobody_home, user=65534)
        if p is not None:
            t.check(label + ": the library ran (debug line)", b"ucxtls: " in p.stderr, p.stderr.decode())


def settings():
    """(label, sysroot, variables) of the hostile settings; machines built once per process."""
    if _settings:
        return _settings[0]
    top_dir = top()
    made()  # the hostile machines' directory holds the regular file used as a sysroot (top/big)
    dgx = os.path.join(top_dir, "dgx")
    machines.build("dgx", dgx)
    deep = os.path.join(top_dir, "deep", *(["d"] * 400))
    machines.build("dgx", deep)
    cvd = ",".join(str(i) for i in range(20000))
    big_env = {"JUNK%05d" % i: "v" * 500 for i in range(2000)}  # about 1 MB
    settings = [
        ("CUDA_VISIBLE_DEVICES of 20 000 entries", dgx, {"CUDA_VISIBLE_DEVICES": cvd}),
        ("CUDA_VISIBLE_DEVICES of 20 000 GPU- entries", dgx, {"CUDA_VISIBLE_DEVICES": ",".join("GPU-%d" % i for i in range(12000))}),
        ("ROCR/HIP_VISIBLE_DEVICES of 20 000 entries", dgx, {"ROCR_VISIBLE_DEVICES": cvd, "HIP_VISIBLE_DEVICES": cvd}),
        ("ZE_AFFINITY_MASK of 60 000 bytes", dgx, {"ZE_AFFINITY_MASK": "x," * 30000, "CUDA_VISIBLE_DEVICES": ""}),
        ("UCX_TLS of 100 KB", dgx, {"UCX_TLS": "rc," * 34000}),
        ("UCX_TLS of 100 KB equal to UCXTLS_DERIVED", dgx, {"UCX_TLS": "rc," * 34000, "UCXTLS_DERIVED": "rc," * 34000}),
        ("UCXTLS_TEMPLATE of 100 KB", dgx, {"UCXTLS_TEMPLATE": "rc," * 34000 + "{copy}"}),
        ("UCXTLS_TEMPLATE of 600 {copy}", dgx, {"UCXTLS_TEMPLATE": "{copy}," * 590 + "rc"}),
        ("non-ASCII UCXTLS_TEMPLATE", dgx, {"UCXTLS_TEMPLATE": "r\u00e9seau,\u4e2d\u6587,{copy}"}),
        ("non-ASCII and control bytes in every variable", dgx,
         {k: "\u00e9\u4e2d\x01\x1b[2J\x7f" for k in ("UCXTLS_ACCEL", "UCXTLS_PROBE", "UCXTLS_PROBE_TIMEOUT_MS",
                                                     "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                                     "ZE_AFFINITY_MASK", "UCX_CONFIG_DIR", "HOME")}),
        ("HOME and UCX_CONFIG_DIR of 100 KB", dgx, {"HOME": "/h" * 50000, "UCX_CONFIG_DIR": "/c" * 50000}),
        ("a 1 MB environment of 2000 variables", dgx, big_env),
        ("UCXTLS_SYSROOT 400 directories deep", deep, {}),
        ("UCXTLS_SYSROOT missing", os.path.join(top_dir, "missing"), {}),
        ("UCXTLS_SYSROOT of 2047 bytes (paths overflow)", "/" + "x" * 2046, {}),
        ("UCXTLS_SYSROOT of 100 KB", "/" + "x" * 100000, {}),
        ("UCXTLS_SYSROOT a regular file", os.path.join(top_dir, "big"), {}),
        ("UCXTLS_SYSROOT /", "/", {}),
    ]
    _settings.append(settings)
    return settings


_settings = []


@case("hostile settings: the host runs as without the library")
def hostile_settings(t):
    timer, home = TIMER, fifo_home()
    for label, root, extra in settings():
        for debug in ({}, {"UCXTLS_DEBUG": "1"}):
            compare(t, timer, label + (" (debug)" if debug else ""), host_env(root, **dict(extra, **debug)), cwd=home)


@case("sanitized: fixture_driver with the hostile settings")
def sanitized_settings(t):
    if no_sanitizer_build(t):
        return
    for label, root, extra in settings():
        sanitized_driver(t, label, host_env(root, **dict(extra, UCXTLS_DEBUG="1")))


@case("an empty environment, and stdin and stderr closed")
def empty_and_closed(t):
    timer, home = TIMER, fifo_home()
    made_machines = made()
    compare(t, timer, "empty environment (env -i)", {"LD_PRELOAD": LIB}, argv=["/bin/sh", "-c", "echo host; exit 7"],
            cwd=home, debug_line=False)
    closed = ["/bin/sh", "-c", "exec 0<&- 2>&-; exec /bin/sh -c 'echo host; cd /proc/$$/fd && echo *; exit 7'"]
    for debug in ({}, {"UCXTLS_DEBUG": "1"}):
        compare(t, timer, "stdin and stderr closed%s" % (" (debug)" if debug else ""),
                host_env(made_machines["many-entries"], **debug), argv=closed, cwd=home, debug_line=False)


def _parents(path):
    out = []
    d = os.path.dirname(os.path.abspath(path))
    while d and d != "/":
        out.append(d)
        d = os.path.dirname(d)
    return out


if __name__ == "__main__":
    main("hostile machines and settings")
