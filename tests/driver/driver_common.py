"""What the driver tier's tests share: the fake drivers' places, the command run on a fixture
machine, a host's environment with the saved answer, and the scratch directory.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, EMPTY_HOME, LIB, SHOW, C, R, UNSET, Z, Checks, add_case, case, env_for, fixture, have, include, main, run  # noqa: E402,F401


HELPER = os.path.join(os.path.dirname(LIB), "ucxtls-probe")
UCXTLS = os.path.join(os.path.dirname(LIB), "ucxtls")
FAKES = os.path.join(BUILD_DIR, "tests", "driver", "fakes")
NO_FORK = os.path.join(BUILD_DIR, "tests", "driver", "no_fork")
CUDA, ZE_NEW, ZE_OLD = (os.path.join(FAKES, d) for d in ("cuda", "ze-new", "ze-old"))
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-driver-")
atexit.register(shutil.rmtree, SCRATCH, True)
U0 = "GPU-6b8f3a4e-2a1c-9d7e-8f00-1c2d3e4f5a6b"
U1 = "GPU-0d7e2f11-8c4b-4a3d-b2e1-9f8e7d6c5b4a"
REMEDY = "run ucxtls probe --save"


def machine(name):
    """A fixture machine; its /proc/sys/kernel/random/boot_id is the boot the cache is checked against."""
    return fixture(name)


def boot_of(name):
    with open(os.path.join(machine(name), "proc/sys/kernel/random/boot_id")) as f:
        return f.read().strip()


def new_dir(prefix="cache-"):
    return tempfile.mkdtemp(prefix=prefix, dir=SCRATCH)


def probe(args, name, cache, libs=(CUDA, ZE_NEW), exe=UCXTLS, timeout=60, **extra):
    """(CompletedProcess, seconds) of `ucxtls probe ARGS` on fixture `name` (None: this machine)."""
    machine(name) if name else None
    env = env_for(name, preload=False, LD_LIBRARY_PATH=":".join(libs), UCXTLS_CACHE_DIR=cache, **extra)
    t0 = time.monotonic()
    p = run([exe, "probe"] + args, env, timeout=timeout)
    return p, time.monotonic() - t0


SYSROOT_NOTE = "ucxtls: probe: UCXTLS_SYSROOT is set: the drivers asked are this machine's"


def without_sysroot_note(err):
    """stderr without the note `ucxtls probe` prints under UCXTLS_SYSROOT (the fakes replay here)."""
    return "".join(l for l in err.splitlines(True) if not l.startswith(SYSROOT_NOTE))


def host_env(name, cache, **extra):
    """A host's environment: the library, the driver tier, the debug line, the saved answer in cache;
    UCXTLS_WRITE=always, so that the value names the family the tier found (the default writes
    nothing beside NVIDIA GPUs and rc, all beside others)."""
    extra.setdefault("UCXTLS_PROBE", "driver")
    extra.setdefault("UCXTLS_WRITE", "always")
    extra.setdefault("UCXTLS_DEBUG", "1")
    machine(name)
    return env_for(name, UCXTLS_CACHE_DIR=cache, **extra)


def tls_of(env):
    """(UCX_TLS, stderr) as /bin/sh sees them."""
    p = run(["/bin/sh", "-c", SHOW], env)
    return p.stdout.decode().split("|")[0], p.stderr.decode()


def saved(name, libs=(CUDA, ZE_NEW), **fake):
    """A cache directory holding what `ucxtls probe --save` recorded for these fake answers."""
    cache = new_dir()
    p, _ = probe(["--save"], name, cache, libs, **fake)
    return cache, p


def new_log():
    fd, path = tempfile.mkstemp(prefix="fake-", suffix=".log", dir=SCRATCH)
    os.close(fd)
    return path


def log_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def system_has(soname):
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
    except OSError:
        return False
    return any(l.split()[:1] == [soname] for l in out.splitlines())


def once(fn):
    """fn() computed once per process, for the cases that share what it made."""
    made = []

    def cached():
        if not made:
            made.append(fn())
        return made[0]
    return cached


def alive(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def still_alive(pids, bound_s=10.0):
    """The pids of pids still running after waiting up to bound_s for all to end: a SIGKILLed
    process ends when the kernel next runs it, which on a loaded machine is not at once."""
    deadline = time.monotonic() + bound_s
    while True:
        left = [x for x in pids if alive(x)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def start():
    t = Checks("driver tier: ucxtls probe --save, the helper, the saved answer read by every process")
    for path in (HELPER, UCXTLS, NO_FORK, os.path.join(CUDA, "libcuda.so.1"), os.path.join(ZE_NEW, "libze_loader.so.1")):
        if not os.path.exists(path):
            t.check("built: " + path, False, "build the project first")
            t.exit()
    return t
