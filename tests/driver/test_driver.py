#!/usr/bin/env python3
"""The driver tier (UCXTLS_PROBE=driver) through the real library and the real helper, in real
processes.

Fake libcuda.so.1 / libze_loader.so.1 (built by tests/driver/CMakeLists.txt) answer from FAKE_*
variables and log every call (FAKE_LOG). Fixture machines make the kernel's and the driver's
answers differ, so the test sees which tier answered. Then the real libraries where they exist:
Debian's Level Zero loader (libze1) and the CUDA toolkit's stub libcuda.so.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("UCXTLS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "e2e"))
from harness import BUILD_DIR, LIB, SHOW, Checks, env_for, run  # noqa: E402

C = "rc_x,rc,dc_x,dc,cuda_copy"
R = "rc_x,rc,dc_x,dc,rocm_copy"
Z = "rc_x,rc,dc_x,dc,ze_copy"
NONE = "rc_x,rc,dc_x,dc"

HELPER = os.path.join(os.path.dirname(LIB), "ucxtls-probe")
FAKES = os.path.join(BUILD_DIR, "tests", "driver", "fakes")
CUDA, ZE_NEW, ZE_OLD = (os.path.join(FAKES, d) for d in ("cuda", "ze-new", "ze-old"))
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-driver-")


def denv(machine, libs, **extra):
    """The driver tier on a fixture machine, with the fake libraries in `libs` first in line."""
    extra.setdefault("UCXTLS_PROBE", "driver")
    extra.setdefault("UCXTLS_DEBUG", "1")
    return env_for(machine, LD_LIBRARY_PATH=":".join(libs), **extra)


def sh(env, script=SHOW, timeout=60):
    """(stdout text, stderr text, exit status, seconds) of /bin/sh -c script under env."""
    t0 = time.monotonic()
    p = run(["/bin/sh", "-c", script], env, timeout=timeout)
    return p.stdout.decode(), p.stderr.decode(), p.returncode, time.monotonic() - t0


def tls_of(env):
    out, err, _, _ = sh(env)
    return out.split("|")[0], err


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


def main():
    t = Checks("driver tier: helper, fake and real vendor libraries, host isolation")
    for path in (HELPER, os.path.join(CUDA, "libcuda.so.1"), os.path.join(ZE_NEW, "libze_loader.so.1")):
        if not os.path.exists(path):
            t.check("built: " + path, False, "build the project first")
            t.exit()

    # The helper by hand: its report on stdout.
    p = run([HELPER], dict(env_for(None, preload=False), LD_LIBRARY_PATH=CUDA + ":" + ZE_NEW,
                           FAKE_CUDA_COUNT="2", FAKE_ZE_DEVICES="gpu,vpu;gpu"))
    t.equal("ucxtls-probe by hand prints its report", p.stdout.decode(),
            "ucxtls-probe 1\ncuda answer 2 0 CUDA_SUCCESS\nze answer 2 0 ZE_RESULT_SUCCESS\nend\n")
    t.check("ucxtls-probe rejects an unknown argument", run([HELPER, "--bogus"], env_for(None, preload=False)).returncode == 2)

    # --- Which tier answers: machine, fake libraries, fake answers, UCX_TLS, debug-line fragments.
    rows = [
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu,gpu"}, Z,
         ["ucxtls-probe answered in", "cuda: driver API: 0 device(s) (CUDA_ERROR_NO_DEVICE)",
          "ze: driver API: 2 device(s) (ZE_RESULT_SUCCESS)"]),
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu,gpu", "UCXTLS_PROBE": "kernel"}, C,
         ["; cuda: 1+ GPU(s) in /proc/driver/nvidia/gpus", "!driver probe"]),  # the kernel tier: device files
        ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "2"}, C, ["cuda: driver API: 2 device(s) (CUDA_SUCCESS)"]),
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "1", "FAKE_ZE_DEVICES": "gpu"}, C, []),  # both: CUDA wins
        ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu"}, NONE,
         ["ze: driver API: 0 device(s)"]),  # an NPU is not ze_copy's
        ("intel-xe", [CUDA, ZE_OLD], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu"}, NONE,
         ["ze: driver API: 0 device(s)"]),
        ("intel-xe", [CUDA, ZE_OLD], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu;cpu,gpu"}, Z,
         ["ze: driver API: 1 device(s)"]),  # a second driver with a GPU
        ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x78000001"}, NONE,
         ["(ZE_RESULT_ERROR_UNINITIALIZED)"]),
        ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x70010000"}, NONE,
         ["(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)"]),  # a cgroup-blocked /dev/dri
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "34"}, NONE, ["(CUDA_ERROR_STUB_LIBRARY)"]),
        # The helper sees the host's visibility variables (the fake answers NO_DEVICE for "").
        ("hybrid-laptop", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "1", "FAKE_ZE_DEVICES": "gpu", "CUDA_VISIBLE_DEVICES": "",
                                           "UCXTLS_TEMPLATE": "tcp,{copy}"}, "tcp,ze_copy",
         ["cuda: driver API: 0 device(s) (CUDA_ERROR_NO_DEVICE)"]),
        # Broken drivers: no answer, the kernel's stands, with the driver's own name.
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "803"}, C,
         ["cuda: driver API gave no answer (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH), kernel: "]),
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "802"}, C, ["(CUDA_ERROR_SYSTEM_NOT_READY)"]),
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT_RC": "999", "FAKE_CUDA_COUNT": "3"}, C, ["(CUDA_ERROR_UNKNOWN)"]),
        ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "4242"}, C, ["(CUresult 4242)"]),  # cuGetErrorName fails
        ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu", "FAKE_ZE_PROPS_RC": "0x70000001"},
         Z, ["ze: driver API gave no answer (ZE_RESULT_ERROR_DEVICE_LOST), kernel: "]),
        # ROCm is always the kernel's.
        ("mi300x", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100"}, R, ["rocm: 1+ KFD GPU node(s)"]),
    ]
    for machine, libs, fake, want, fragments in rows:
        label = "%s, %s %s" % (machine, "+".join(os.path.basename(l) for l in libs),
                               " ".join("%s=%s" % kv for kv in fake.items()))
        tls, err = tls_of(denv(machine, libs, **fake))
        t.equal(label + ": UCX_TLS", tls, want, "stderr: " + err)
        lines = err.splitlines()
        t.check(label + ": one debug line with " + repr(fragments),
                len(lines) == 1 and all((f[1:] not in lines[0]) if f[0] == "!" else (f in lines[0]) for f in fragments), err)

    # --- The helper asks each loader the right way, and never mixes the two init styles.
    log = new_log()
    tls_of(denv("intel-xe", [CUDA, ZE_NEW], FAKE_LOG=log, FAKE_ZE_DEVICES="gpu"))
    calls = [l.split(" pid=")[0] for l in log_lines(log)]
    t.equal("new loader: zeInitDrivers({0x00020021, NULL, GPU}) only, then properties (stype 0x3)",
            calls, ["cuda cuInit", "ze zeInitDrivers stype=0x20021 flags=1", "ze zeInitDrivers stype=0x20021 flags=1",
                    "ze zeDeviceGetProperties stype=0x3"])
    log = new_log()
    tls_of(denv("intel-xe", [CUDA, ZE_OLD], FAKE_LOG=log, FAKE_ZE_DEVICES="gpu"))
    calls = [l.split(" pid=")[0] for l in log_lines(log)]
    t.equal("old loader: zeInit(GPU_ONLY) + zeDriverGet",
            calls, ["cuda cuInit", "ze zeInit flags=1", "ze zeDriverGet", "ze zeDriverGet", "ze zeDeviceGetProperties stype=0x3"])

    # --- The host never maps a driver library while the driver's answer is used.
    log = new_log()
    probe = ("import os\n"
             "maps = open('/proc/self/maps').read()\n"
             "print(os.environ.get('UCX_TLS'))\n"
             "print(os.getpid())\n"
             "print(sorted(set(l.split()[-1] for l in maps.splitlines() if l.split()[-1].startswith('/'))))\n")
    p = run([sys.executable, "-c", probe], denv("dgx", [CUDA, ZE_NEW], FAKE_LOG=log, FAKE_CUDA_INIT="100",
                                                FAKE_ZE_DEVICES="gpu,gpu"))
    out = p.stdout.decode().splitlines()
    t.equal("python host: UCX_TLS is the driver's answer (ze, where the device files say cuda)", out[:1], [Z], p.stderr.decode())
    mapped = out[2] if len(out) > 2 else ""
    t.check("python host: /proc/self/maps shows no driver library (libcuda, libze_loader, the fakes)",
            mapped and "libcuda" not in mapped and "libze" not in mapped and FAKES not in mapped and "libucxtls.so" in mapped,
            mapped)
    helper_calls = [l for l in log_lines(log) if l.startswith("cuda cuInit")]
    t.check("the driver ran once, in ucxtls-probe, not in the host (pid %s)" % (out[1] if len(out) > 1 else "?"),
            len(helper_calls) == 1 and "exe=" + os.path.realpath(HELPER) in helper_calls[0]
            and (" pid=%s " % (out[1] if len(out) > 1 else "?")) not in helper_calls[0], "\n".join(log_lines(log)))
    t.check("the helper holds only stdio and its report fd (0-3) when the driver runs",
            len(helper_calls) == 1 and helper_calls[0].endswith("fds=0,1,2,3,"), "\n".join(helper_calls))

    # An fd the host inherited is not the helper's: it closes it (no driver can keep a host pipe open).
    r, w = os.pipe()
    log = new_log()
    subprocess.run(["/bin/sh", "-c", "true"], env=denv("dgx", [CUDA, ZE_NEW], FAKE_LOG=log), pass_fds=(w,),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    os.close(r), os.close(w)
    lines = [l for l in log_lines(log) if l.startswith("cuda cuInit")]
    t.check("an fd inherited by the host (%d) is closed in the helper" % w,
            len(lines) == 1 and lines[0].endswith("fds=0,1,2,3,"), "\n".join(lines))

    # --- A hanging driver costs the host at most the timeout; the helper is killed and reaped.
    for lib, var in (("cuda", "FAKE_CUDA_HANG"), ("ze", "FAKE_ZE_HANG")):
        log = new_log()
        env = denv("dgx", [CUDA, ZE_NEW], FAKE_LOG=log, UCXTLS_PROBE_TIMEOUT_MS="400", **{var: "30000"})
        out, err, rc, secs = sh(env, SHOW, timeout=30)
        t.equal("%s hangs: the kernel answer stands" % lib, out.split("|")[0], C, err)
        t.check("%s hangs: the host waited %.2f s, at least the 0.4 s timeout and under 0.4 + 1.0 s" % (lib, secs),
                0.4 <= secs < 1.4, err)
        t.check("%s hangs: the debug line says it timed out" % lib,
                "gave no answer within UCXTLS_PROBE_TIMEOUT_MS=400 ms: killed" in err, err)
        pids = [l.split(" pid=")[1].split()[0] for l in log_lines(log) if " pid=" in l]
        alive = [pid for pid in pids if os.path.exists("/proc/" + pid)
                 and "ucxtls-probe" in open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")]
        t.check("%s hangs: no helper is left running" % lib, pids and not alive, "helper pids %s, alive %s" % (pids, alive))

    # --- Nothing the helper starts reaches the host, even a host that is a child subreaper (PID 1
    # in a container is one): the helper runs in its own process group, the supervisor is the
    # subreaper that takes its orphans, and the group is killed. A late dlopen makes the host a
    # subreaper with a SIGCHLD handler before the constructor runs.
    host = ("import ctypes, os, signal, sys, time\n"
            "ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
            "got = []\n"
            "signal.signal(signal.SIGCHLD, lambda s, f: got.append(s))\n"
            "ctypes.CDLL(sys.argv[1])\n"
            "time.sleep(1.2)  # the driver's child sleeps 0.8 s\n"
            "try:\n"
            "    print(len(got), os.waitpid(-1, os.WNOHANG)[0])\n"
            "except ChildProcessError:\n"
            "    print(len(got), 'none')\n")
    for label, extra in (("answers", {}), ("hangs and is killed", {"FAKE_CUDA_HANG": "5000"})):
        log = new_log()
        env = denv("dgx", [CUDA, ZE_NEW], LD_PRELOAD=None, FAKE_LOG=log, FAKE_CUDA_CHILD="800",
                   UCXTLS_PROBE_TIMEOUT_MS="300", **extra)
        p = run([sys.executable, "-c", host, LIB], env, timeout=30)
        children = [l for l in log_lines(log) if " child=" in l]
        t.check("a driver that %s and leaves a child: the fake started one" % label, len(children) == 1,
                "\n".join(log_lines(log)))
        t.equal("... a subreaper host gets no SIGCHLD and no child to wait for", p.stdout.decode().strip(), "0 none",
                p.stderr.decode())

    # --- A process the driver detaches from the helper's group (setsid) is not killed with it; it
    # must still not keep the host waiting: the supervisor that stays to reap it holds none of the
    # host's fds, so a launcher reading the host's stdout/stderr sees EOF when the host exits.
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu", FAKE_CUDA_DAEMON="3000")
    t0 = time.monotonic()
    p = run(["/bin/sh", "-c", SHOW], env, timeout=30)
    secs = time.monotonic() - t0
    t.check("a driver leaves a setsid daemon: the host answers and its pipes close at once (%.2f s)" % secs,
            secs < 1.5 and p.stdout.decode().split("|")[0] == Z, p.stderr.decode())

    # --- A host's signal handler never runs in the supervisor (its copy of the host): a signal
    # sent to the host's process group during the probe runs the handler in the host alone.
    sig_host = os.path.join(FAKES, "libsignal_host.so")
    sig_log = new_log()
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_HANG="1500", UCXTLS_PROBE_TIMEOUT_MS="4000",
               LD_PRELOAD=LIB + " " + sig_host, SIGNAL_HOST_LOG=sig_log)
    hostp = subprocess.Popen(["/bin/sh", "-c", SHOW], env=env, start_new_session=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    time.sleep(0.5)
    os.killpg(hostp.pid, signal.SIGUSR1)
    out, err = hostp.communicate(timeout=30)
    handled = log_lines(sig_log)
    t.check("SIGUSR1 to the host's group during the probe: the host's handler ran in the host alone",
            handled and all(l == "handler pid=%d" % hostp.pid for l in handled),
            "host pid %d, log %s" % (hostp.pid, handled))
    t.check("... and the probe went on undisturbed: the helper answered",
            "ucxtls-probe answered in" in err.decode() and hostp.returncode == 0, err.decode())

    # --- A host with a tiny fd limit still gets the driver's answer.
    out, err, rc, _ = sh(denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu"),
                         "ulimit -n 9; exec /bin/sh -c '%s'" % SHOW.replace("'", "'\\''"))
    t.check("a host with ulimit -n 9: the helper still answers", err.strip().splitlines()[-1:] and
            "ucxtls-probe answered in" in err.strip().splitlines()[-1] and out.split("|")[0] == Z, err)

    # --- A crashing or noisy driver leaves the host's stdout and exit status untouched.
    script = "echo hello; exit 3"
    plain = run(["/bin/sh", "-c", script], env_for("dgx", preload=False))
    for fake, why in ((("FAKE_CUDA_CRASH", "abort"), "died of signal 6"), (("FAKE_CUDA_CRASH", "segv"), "died of signal 11"),
                      (("FAKE_ZE_CRASH", "abort"), "died of signal 6")):
        out, err, rc, _ = sh(denv("dgx", [CUDA, ZE_NEW], **dict([fake])), script)
        label = "%s=%s" % fake
        t.equal(label + ": host stdout untouched", out, plain.stdout.decode())
        t.equal(label + ": host exit status untouched", rc, plain.returncode)
        t.check(label + ": debug line says '%s' and the kernel answer stands" % why,
                why in err and "set UCX_TLS=" + C in err and err.count("\n") == 1, err)
    out, err, rc, _ = sh(denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_NOISE="FAKE NOISE", FAKE_ZE_NOISE="ZE NOISE",
                              FAKE_ZE_DEVICES="gpu", FAKE_CUDA_INIT="100"), script)
    t.check("a driver printing on stdout/stderr: nothing reaches the host's", out == "hello\n" and "NOISE" not in err
            and rc == 3 and "set UCX_TLS=" + Z in err, "stdout %r stderr %r" % (out, err))

    # --- A host that ignores SIGCHLD (inherited across exec, so from its first instruction).
    # (The host is python again, not sh: dash resets SIGCHLD when it starts.)
    host = ("import os, signal, sys\n"
            "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
            "os.execve(sys.executable, [sys.executable, '-c', sys.argv[1]], dict(os.environ, LD_PRELOAD=sys.argv[2]))\n")
    report = ("import os\n"
              "print(os.environ.get('UCX_TLS'))\n"
              "print([l for l in open('/proc/self/status') if l.startswith('SigIgn')][0].split()[1])\n")
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu", LD_PRELOAD=None)
    p = run([sys.executable, "-c", host, report, LIB], env)
    out, err = p.stdout.decode().splitlines(), p.stderr.decode()
    t.equal("SIGCHLD ignored: the host still gets the driver's answer", out[:1], [Z], err)
    sigign = int(out[1], 16) if len(out) > 1 else 0
    t.check("SIGCHLD ignored: still ignored after the constructor", sigign & (1 << (signal.SIGCHLD - 1)), repr(out))
    t.check("SIGCHLD ignored: the helper answered", "ucxtls-probe answered in" in err, err)
    took = re.search(r"answered in (\d+) ms", err)
    t.check("SIGCHLD ignored: the answer came at once, not at the 5 s deadline (%s ms)" % (took.group(1) if took else "?"),
            took is not None and int(took.group(1)) < 1000 and "did not exit cleanly" not in err, err)

    # --- A host whose SIGCHLD handler is in place before the library's constructor runs (an earlier
    # constructor installed it) gets no SIGCHLD from the probe.
    counter = os.path.join(FAKES, "libsigchld_counter.so")
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu", LD_PRELOAD=LIB + " " + counter)
    p = run(["/bin/true"], dict(env, SIGCHLD_COUNTER_SELFTEST="1"))
    t.check("SIGCHLD handler (control): the counter sees a plain child's SIGCHLD",
            "sigchld-counter: 1 SIGCHLD, installed before ucxtls: yes" in p.stderr.decode(), p.stderr.decode())
    p = run(["/bin/true"], env)
    err = p.stderr.decode()
    t.check("SIGCHLD handler installed before the constructor: 0 SIGCHLD from the driver probe, answer used",
            "sigchld-counter: 0 SIGCHLD, installed before ucxtls: yes" in err and "set UCX_TLS=" + Z in err, err)

    # --- The host's wait() never sees the helper; its signal state and fds are unchanged.
    waiter = ("import os\n"
              "try:\n"
              "    os.wait()\n"
              "    print('a child')\n"
              "except ChildProcessError:\n"
              "    print('ECHILD')\n"
              "print(os.environ.get('UCX_TLS'))\n"
              "st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
              "print(' '.join(st[k].strip() for k in ('SigIgn', 'SigCgt', 'SigBlk', 'SigPnd', 'ShdPnd')))\n"
              "print(sorted(os.listdir('/proc/self/fd')))\n")
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    p = run([sys.executable, "-c", waiter], env)
    q = run([sys.executable, "-c", waiter], dict(env, UCXTLS_PROBE="kernel"))
    out, base = p.stdout.decode().splitlines(), q.stdout.decode().splitlines()
    t.equal("the host's wait() gets ECHILD after the driver probe; the driver's answer is in os.environ",
            out[:2], ["ECHILD", Z], p.stderr.decode())
    t.equal("signal dispositions, mask and pending signals as with the kernel tier", out[2:3], base[2:3])
    t.equal("open fds as with the kernel tier", out[3:4], base[3:4])

    # --- A host started with stdin, stdout and stderr closed: the pipe gets fds 0 and 1, which the
    # child must move out of the way before it puts /dev/null there.
    out_file = os.path.join(SCRATCH, "closed-stdio.out")
    env = denv("dgx", [CUDA, ZE_NEW], FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu", UCXTLS_DEBUG=None)
    pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", 'printf "%s" "$UCX_TLS" > ' + out_file], env,
                         file_actions=[(os.POSIX_SPAWN_CLOSE, 0), (os.POSIX_SPAWN_CLOSE, 1), (os.POSIX_SPAWN_CLOSE, 2)])
    _, st = os.waitpid(pid, 0)
    got = open(out_file).read() if os.path.exists(out_file) else "(no output)"
    t.check("host with fds 0-2 closed: the driver's answer, exit 0", got == Z and st == 0, "%r, status %d" % (got, st))

    # --- The helper's copy of the library does nothing (no recursion), and the helper gets the
    # host's environment otherwise.
    d = tempfile.mkdtemp(dir=SCRATCH)
    shutil.copy(LIB, d)
    lib2 = os.path.join(d, os.path.basename(LIB))
    fake_helper = os.path.join(d, "ucxtls-probe")

    def helper_script(body):
        with open(fake_helper, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(fake_helper, 0o755)

    envdump = os.path.join(d, "env")
    helper_script("env > %s; printf 'ucxtls-probe 1\\ncuda answer 0 100 X\\nze answer 1 0 Y\\nend\\n' >&3" % envdump)
    tls, err = tls_of(denv("dgx", [], LD_PRELOAD=lib2, UCXTLS_DISABLE="0", CUDA_VISIBLE_DEVICES="0"))
    with open(envdump) as f:
        henv = dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)
    t.equal("a stand-in helper beside a copy of the library is run; its report is used", tls, Z, err)
    t.check("the helper's environment: UCXTLS_DISABLE=1, no UCXTLS_PROBE, the rest as the host's",
            henv.get("UCXTLS_DISABLE") == "1" and "UCXTLS_PROBE" not in henv
            and henv.get("CUDA_VISIBLE_DEVICES") == "0" and henv.get("LD_PRELOAD") == lib2, repr(henv))
    log = new_log()
    sh(denv("dgx", [CUDA, ZE_NEW], FAKE_LOG=log))
    t.equal("one host process: the driver is asked exactly once (the helper does not recurse)",
            len([l for l in log_lines(log) if l.startswith("cuda cuInit")]), 1)

    # --- Every failure of the helper: the kernel answer stands, and the debug line says why.
    failures = [
        ("exit 5", "ucxtls-probe exited with status 5 without a report"),
        ("echo garbage >&3", "ucxtls-probe wrote a malformed report"),
        ("printf 'ucxtls-probe 1\\ncuda answer 1 0 A\\n' >&3", "ucxtls-probe wrote a malformed report"),
        ("kill -KILL $$", "ucxtls-probe died of signal 9 before answering"),
        ("exec sleep 30", "gave no answer within UCXTLS_PROBE_TIMEOUT_MS=300 ms: killed"),
    ]
    for body, why in failures:
        helper_script(body)
        tls, err = tls_of(denv("dgx", [], LD_PRELOAD=lib2, UCXTLS_PROBE_TIMEOUT_MS="300"))
        t.check("helper `%s`: the kernel answer stands, '%s'" % (body, why), tls == C and why in err, "%s %s" % (tls, err))
    os.chmod(fake_helper, 0o644)
    tls, err = tls_of(denv("dgx", [], LD_PRELOAD=lib2))
    t.check("helper not executable: the kernel answer stands", tls == C and "no executable helper at " + d in err, err)
    os.unlink(fake_helper)
    tls, err = tls_of(denv("dgx", [], LD_PRELOAD=lib2))
    t.check("helper missing: the kernel answer stands", tls == C and "no executable helper at " + fake_helper in err, err)
    with open(fake_helper, "w") as f:
        f.write("#!/nonexistent/interpreter\n")
    os.chmod(fake_helper, 0o755)
    tls, err = tls_of(denv("dgx", [], LD_PRELOAD=lib2))
    t.check("helper that cannot be executed: the kernel answer stands, with errno",
            tls == C and "cannot execute %s (errno 2)" % fake_helper in err, err)

    # --- The helper runs only when the decision needs it.
    for label, extra in (("kernel tier", {"UCXTLS_PROBE": "kernel"}), ("UCXTLS_ACCEL=ze", {"UCXTLS_ACCEL": "ze"}),
                         ("UCX_TLS already set", {"UCX_TLS": "tcp"})):
        log = new_log()
        sh(denv("dgx", [CUDA, ZE_NEW], FAKE_LOG=log, **extra))
        t.equal(label + ": the helper is not run", log_lines(log), [])
    log = new_log()
    sh(denv("no-rdma", [CUDA, ZE_NEW], FAKE_LOG=log))
    t.equal("no RDMA with the default template: the helper is not run", log_lines(log), [])

    # --- Library absent: no answer for that family, the kernel's stands.
    if system_has("libcuda.so.1"):
        t.skip("libcuda.so.1 absent: the kernel answer stands", "this system has a libcuda.so.1 in the ld.so cache")
    else:
        tls, err = tls_of(denv("dgx", [ZE_NEW], FAKE_ZE_DEVICES="gpu"))
        t.check("libcuda.so.1 absent: the kernel's cuda stands (the fake ze GPU is second)",
                tls == C and "cuda: driver API gave no answer (libcuda.so.1 not found), kernel: " in err, err)

    # --- Real libraries where they exist.
    if not system_has("libze_loader.so.1"):
        t.skip("Debian's Level Zero loader", "no libze_loader.so.1 in the ld.so cache (apt-get install libze1)")
    else:
        p = run([HELPER], dict(env_for(None, preload=False), LD_LIBRARY_PATH=CUDA, FAKE_CUDA_INIT="100"))
        report = p.stdout.decode()
        print("     real Level Zero loader answered: " + report.replace("\n", " | "))
        ze_line = [l for l in report.splitlines() if l.startswith("ze ")]
        t.check("real libze_loader.so.1 (no GPU driver here): an answer, 0 GPUs, ZE_RESULT_ERROR_UNINITIALIZED",
                ze_line == ["ze answer 0 2013265921 ZE_RESULT_ERROR_UNINITIALIZED"], report)
        tls, err = tls_of(denv("intel-xe", [CUDA], FAKE_CUDA_INIT="100"))
        t.check("real loader on an Intel fixture: the driver says no ze device, so none",
                tls == NONE and "ze: driver API: 0 device(s) (ZE_RESULT_ERROR_UNINITIALIZED)" in err, err)

    stub = next((s for s in ("/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so",
                             "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so") if os.path.exists(s)), None)
    if not stub:
        t.skip("CUDA toolkit stub libcuda.so", "no /usr/local/cuda/lib*/stubs/libcuda.so here")
    else:
        sd = tempfile.mkdtemp(dir=SCRATCH)
        os.symlink(stub, os.path.join(sd, "libcuda.so.1"))
        p = run([HELPER], dict(env_for(None, preload=False), LD_LIBRARY_PATH=sd + ":" + ZE_NEW))
        report = p.stdout.decode()
        print("     CUDA stub answered: " + report.replace("\n", " | "))
        t.check("the toolkit's stub libcuda: an answer, 0 devices, CUDA_ERROR_STUB_LIBRARY",
                "cuda answer 0 34 CUDA_ERROR_STUB_LIBRARY" in report, report)
        tls, err = tls_of(denv("dgx", [sd, ZE_NEW]))
        t.check("stub first in LD_LIBRARY_PATH on a CUDA fixture: no CUDA for this process",
                tls == NONE and "(CUDA_ERROR_STUB_LIBRARY)" in err, err)

    shutil.rmtree(SCRATCH, ignore_errors=True)
    t.exit()


if __name__ == "__main__":
    main()
