#!/usr/bin/env python3
"""The command where it meets its users in a failure: `doctor --pid` judges the process
(its start environment, as the library in it decided), doctor is bounded and leaves nothing behind
when interrupted, one rule for --value and --template, text a terminal can trust, `ucxtls run`
keeps the preload ld.so would use and starts an ASan program, and the doctor's build lines on the
nodes whose rc device is not a ConnectX. Real processes throughout: a python3 that loads a fake
libucp (tests/cli/fake_ucx.c) with the real libucxtls.so preloaded; a UCX that would hang or crash
when loaded and a ucx_info that would hang, which doctor reads and never runs."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALWAYS, BUILD_DIR, C, LIB, UNSET, Z, case, compile_c, env_for, have, main, run  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_builds import elf_ucx_info, fake_ucx  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
EXEC_ENV = os.path.join(BUILD_DIR, "tests", "ucxtls_exec_env")
WORK = tempfile.mkdtemp(prefix="ucxtls-cmd-")
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)

# python3 with a libucp loaded (the fake NIXL-like build: cuda_copy, verbs, no ze, no DC), holding.
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"


class Holder:
    def __init__(self, env, libucp=None):
        self.p = subprocess.Popen([sys.executable, "-c", HOLD, libucp or os.path.join(FAKES, "nixl", "libucp.so.0")],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.p.stdout.readline()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def doctor(args, env):
    p = run([CLI, "doctor"] + args, env)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    return p.returncode, out, set(re.findall(r"^MISSING +(\S+)", out, re.M)), err


def value_line(out):
    m = re.search(r"^value +(\S*) \((.*)\)$", out, re.M)
    return (m.group(1), m.group(2)) if m else (None, None)


# ---------------------------------------------------------------------------------------------
# doctor --pid judges the process
@case("doctor --pid: the process's start environment, decided as the library in it decided")
def pid_judges_the_process(t):
    # UCXTLS_WRITE=always: the template's value, which this build cannot serve, is written.
    caller = env_for("intel-xe", preload=False, **ALWAYS)  # the caller's own environment derives Z here
    # An inherited pair from a CUDA node, re-derived by the library in the process on this Intel node.
    h = Holder(env_for("intel-xe", UCX_TLS=C, UCXTLS_DERIVED=C, **ALWAYS))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], caller)
    finally:
        h.close()
    value, source = value_line(out)
    t.equal("an inherited CUDA pair on an Intel node: the value judged is the one the library derived again",
            value, Z, out + err)
    t.check("... and says why (derived again by its libucxtls.so: an inherited pair), with the library's line",
            "inherited pair" in source and re.search(r"^library +ucxtls: set UCX_TLS=%s: " % re.escape(Z), out, re.M), out)
    t.check("... ze_copy MISSING (this build has no ze), no false MISSING cuda_copy, exit 1",
            missing == {"ze_copy"} and rc == 1, out + err)
    # The process's own settings and visibility variables, not the caller's.
    for label, extra in (("UCXTLS_DISABLE=1", {"UCXTLS_DISABLE": "1"}),
                         ("CUDA_VISIBLE_DEVICES=''", {"CUDA_VISIBLE_DEVICES": ""})):
        h = Holder(env_for("dgx", **ALWAYS, **extra))
        try:
            rc, out, missing, err = doctor(["--pid", str(h.p.pid)], env_for("dgx", preload=False, **ALWAYS))
        finally:
            h.close()
        t.check("a process started with %s on a DGX: UCX_TLS stays unset in it, nothing judged, exit 0 "
                "(the caller would derive %s)" % (label, C),
                rc == 0 and "UCX_TLS stays unset in process %d (skip)" % h.p.pid in out and not missing
                and value_line(out)[0] is None, out + err)
    h = Holder(env_for("intel-xe", UCXTLS_TEMPLATE="tcp,{copy}"))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], caller)
    finally:
        h.close()
    t.equal("its UCXTLS_TEMPLATE: the value composed from it in that process", value_line(out)[0], "tcp,ze_copy", out)
    h = Holder(env_for("intel-xe", UCX_TLS=C, UCXTLS_REPAIR="1"))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], caller)
    finally:
        h.close()
    t.check("its UCXTLS_REPAIR=1: the repaired value, named as such",
            value_line(out) == (Z, "UCX_TLS it started with, repaired by its UCXTLS_REPAIR=1"), out)
    # A process without the library: UCX_TLS as it started, and it says so.
    h = Holder(env_for("intel-xe", preload=False, UCX_TLS=C, UCXTLS_DERIVED=C))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], caller)
    finally:
        h.close()
    t.check("a process with no libucxtls.so: its UCX_TLS as it started, and the reason named",
            value_line(out) == (C, "UCX_TLS in the environment process %d started with; no libucxtls.so in it changed it"
                                % h.p.pid), out)
    t.check("... judged against this node's family from its own environment: ze named as missing from the build",
            "built without Level Zero (ze) support" in out and rc == 1, out + err)
    # --template with --pid: composed in that process's environment (its visibility variables).
    h = Holder(env_for("hybrid-laptop", CUDA_VISIBLE_DEVICES=""))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid), "--template", "tcp,{copy}"], env_for("hybrid-laptop", preload=False))
    finally:
        h.close()
    t.equal("--template with --pid: composed with that process's CUDA_VISIBLE_DEVICES='' (its iGPU: ze)",
            value_line(out)[0], "tcp,ze_copy", out + err)


# ---------------------------------------------------------------------------------------------
# bounded everywhere, nothing left behind; one rule
def helpers_running(marker):
    """PIDs of processes whose command line holds marker."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


_serial = [0]


def hanging_ucx_info(tag):
    """(a directory with a ucx_info that never answers (a wedged driver), the marker in its command
    line): it execs sleep, with a second duration unique to this call as the marker."""
    d = os.path.join(WORK, "bin-" + tag)
    os.makedirs(d)
    _serial[0] += 1
    marker = "0.%d%03d7" % (os.getpid(), _serial[0])
    with open(os.path.join(d, "ucx_info"), "w") as f:
        f.write("#!/bin/sh\nexec sleep 1000 %s\n" % marker)
    os.chmod(os.path.join(d, "ucx_info"), 0o755)
    return d, marker


def wait_for(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


@case("doctor never runs ucx_info nor loads a build: a ucx_info script that would hang, a UCX that hangs when loaded")
def never_runs(t):
    d, marker = hanging_ucx_info("never")
    env = env_for(None, preload=False)
    env["PATH"] = d + ":" + env["PATH"]
    start = time.monotonic()
    p = run([CLI, "doctor", "--value", "tcp", "--timeout-ms", "60000"], env, timeout=30)
    took = time.monotonic() - start
    err = p.stderr.decode()
    t.check("a script ucx_info: exit 2 at once (%.1f s), one line: could not tell which UCX it runs, name one with --ucx" % took,
            p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1 and "could not tell which UCX" in err
            and "it is a script" in err and "--ucx PATH" in err and took < 5, err)
    t.equal("... and it never ran (no process with its marker)", helpers_running(marker), [])
    for build in ("hang", "crash"):
        start = time.monotonic()
        p = run([CLI, "doctor", "--ucx", os.path.join(FAKES, build, "libucp.so.0"), "--value", "tcp"], env, timeout=30)
        took = time.monotonic() - start
        t.check("the UCX that would %s when loaded: read, judged (exit 0) in %.1f s" % (build, took),
                p.returncode == 0 and p.stdout.startswith(b"UCX ") and took < 5, p.stdout.decode() + p.stderr.decode())


def children_of(pid):
    out = []
    for x in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % x) as f:
                if x.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(x))
        except (OSError, ValueError, IndexError):
            pass
    return out


def alive(pid):
    """Running (not gone, not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@case("probe: an interrupted probe leaves no helper behind (a driver that hangs)")
def probe_interrupted(t):
    fakes = os.path.join(BUILD_DIR, "tests", "driver", "fakes")
    if not os.path.isdir(os.path.join(fakes, "cuda")):
        t.skip("probe interrupted", "the fake drivers (tests/driver) are not built")
        return
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        name = signal.Signals(sig).name
        env = env_for(None, preload=False, LD_LIBRARY_PATH=os.path.join(fakes, "cuda") + ":" + os.path.join(fakes, "ze-new"),
                      FAKE_CUDA_HANG="60000", UCXTLS_PROBE_TIMEOUT_MS="60000", UCXTLS_CACHE_DIR=WORK)
        p = subprocess.Popen([CLI, "probe"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        kids = wait_for(lambda: children_of(p.pid), 10)
        if not t.check("%s: the helper runs (%s)" % (name, kids), bool(kids)):
            p.kill()
            p.wait()
            continue
        time.sleep(0.3)  # into the driver's hang
        os.kill(p.pid, sig)
        p.wait(timeout=10)
        t.equal("%s: the command ends by the signal" % name, p.returncode, -sig)
        t.check("%s: nothing is left behind" % name, wait_for(lambda: not any(alive(k) for k in kids), 3),
                str([k for k in kids if alive(k)]))
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)


@case("doctor: --value V and --template V (no placeholder) against a UCX without ze on an Intel node: one verdict")
def one_rule(t):
    env = env_for("intel-xe", preload=False)
    results = []
    for opt in ("--value", "--template"):
        rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl"), opt, "tcp,sm,self"], env)
        builds = re.findall(r"^build +(.*)$", out, re.M)
        results.append((rc, missing, builds))
        t.check("%s tcp,sm,self: the missing Level Zero support named, exit 1" % opt,
                rc == 1 and any("built without Level Zero (ze) support" in b for b in builds), out + err)
    t.equal("the same verdict both ways", results[0], results[1])


# ---------------------------------------------------------------------------------------------
# text a terminal can trust
@case("explain's text escapes control bytes from variables, as the library's line does")
def explain_escapes(t):
    nasty = "a\x1b[2J\nucxtls: set UCX_TLS=fake\rb\x07"
    env = env_for("dgx", preload=False, UCX_TLS=nasty, UCXTLS_TEMPLATE="rc,\x1b]0;title\x07{copy}")
    p = run([CLI, "explain"], env)
    out = p.stdout.decode(errors="replace")
    t.check("no ESC, BEL or CR byte on stdout", not re.search("[\x1b\x07\r]", out), repr(out))
    t.check("no line that a variable's newline made", not re.search(r"^ucxtls: set UCX_TLS=fake", out, re.M), out)
    lib = run(["/bin/sh", "-c", "true"], env_for("dgx", UCX_TLS=nasty, UCXTLS_DEBUG="1")).stderr.decode(errors="replace")
    m = re.search(r'UCX_TLS is already set \("([^"]*)"\)', lib)
    t.check("the value is written as the library's line writes it (%s)" % (m.group(1) if m else None),
            m and m.group(1) in out, out + "\nlibrary: " + lib)


@case("doctor's text escapes control bytes too (a value, a process's UCX_TLS)")
def doctor_escapes(t):
    nasty = "tcp,\x1b[31mred\nMISSING fake\r"
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl"), "--value", nasty], env_for(None, preload=False))
    t.check("--value with ESC, newline, CR: none on stdout, no faked MISSING line",
            not re.search("[\x1b\r]", out) and not re.search(r"^MISSING fake", out, re.M), repr(out))
    h = Holder(env_for(None, preload=False, UCX_TLS=nasty))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], env_for(None, preload=False))
    finally:
        h.close()
    t.check("--pid of a process whose UCX_TLS has them: none on stdout", not re.search("[\x1b\r]", out)
            and not re.search(r"^MISSING fake", out, re.M) and "value       tcp,?[31mred?MISSING fake? (" in out, repr(out))


def fake_ucx_info(tag, transports=("tcp", "self", "sysv", "posix"), version="1.22.0"):
    """A directory with a ucx_info (an ELF program, tests/cli/fake_builds.py) whose libucp is a fake
    build of this version registering these transports, for the plain doctor where Debian's UCX is
    not the point: doctor resolves its libucp from its files and reads that build."""
    d = os.path.join(WORK, "ucx_info-" + tag)
    fake_ucx(os.path.join(d, "lib"), transports, version)
    return elf_ucx_info(d, os.path.join(d, "lib"))


@case("doctor's stdout and stderr escape control bytes (--value, --pid, --template, --ucx): one '?' each, no faked line")
def doctor_stderr_escapes(t):
    env = env_for(None, preload=False)
    env["PATH"] = fake_ucx_info("stderr") + ":" + env["PATH"]
    nasty = "tcp,ze_copy\x1b[2J\nFAKE"
    faked = re.compile(r"^FAKE", re.M)

    def clean(label, err, want):
        t.check("%s: no control byte on stdout or stderr, no line a value made, '?' for each (%r)" % (label, want),
                not re.search("[\x00-\x09\x0b-\x1f\x7f]", err) and not faked.search(err) and want in err, repr(err))

    def both(p):  # a failure after doctor's rows is on stdout (its verdict), an error before them on stderr
        return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")

    p = run([CLI, "doctor", "--value", nasty], env)
    clean("--value (the local ucx_info)", both(p), "ze_copy?[2J?FAKE")
    p = run([CLI, "doctor", "--ucx", os.path.join(FAKES, "nixl"), "--value", nasty], env)
    clean("--value with --ucx", both(p), "ze_copy?[2J?FAKE")
    h = Holder(env_for(None, preload=False, UCX_TLS=nasty))
    try:
        p = run([CLI, "doctor", "--pid", str(h.p.pid)], env)
    finally:
        h.close()
    clean("--pid of a process whose UCX_TLS has them", both(p), "ze_copy?[2J?FAKE")
    p = run([CLI, "doctor", "--template", "{cop\x1b[2J\nFAKE}"], env)
    clean("--template that is not valid (named in the error)", p.stderr.decode(errors="replace"), "'{cop?[2J?FAKE}'")
    p = run([CLI, "doctor", "--ucx", "/nonexist\x1b[31m\nFAKE"], env)
    clean("--ucx PATH that does not exist", p.stderr.decode(errors="replace"), "/nonexist?[31m?FAKE")
    t.equal("... exit 2 (usage) for it, as before", p.returncode, 2)


# ---------------------------------------------------------------------------------------------
# A kept value of another GPU family: the case the library exists for, named in explain and doctor
@case("doctor names a value of another GPU family with explain's warning, and no advice to build UCX for it")
def doctor_foreign_family(t):
    value = "rc,cuda_copy"
    env = env_for("intel-xe", preload=False, UCX_TLS=value)
    ex = run([CLI, "explain"], env).stdout.decode(errors="replace")
    m = re.search(r"^warning +(.*)$", ex, re.M)
    if not t.check("control: explain warns about UCX_TLS=%s on intel-xe" % value, m, ex):
        return
    warning = m.group(1)
    cuda_advice = re.compile(r"^build .*(CUDA|cuda_copy|--with-cuda)", re.M)
    # A build with a CUDA module (that does not load here) and no ze: CUDA is not this node's family.
    build = os.path.join(FAKES, "cuda-module")
    runs = [("--ucx with UCX_TLS=%s" % value, ["--ucx", build], env),
            ("--ucx --value %s" % value, ["--ucx", build, "--value", value], env_for("intel-xe", preload=False))]
    for label, args, e in runs:
        rc, out, missing, err = doctor(args, e)
        t.check("%s: explain's warning, word for word, under the value line" % label,
                re.search(r"^value .*\n%s$" % re.escape("warning     " + warning), out, re.M), out + err)
        t.check("... no build line about CUDA on an Intel node", not cuda_advice.search(out), out)
        t.check("... the node's own family named: built without Level Zero", "built without Level Zero (ze) support" in out, out)
        t.check("... cuda_copy MISSING still (UCX warns about it), exit 1", "cuda_copy" in missing and rc == 1, out + err)
    # A process started with that value and no libucxtls.so in it (its UCX_TLS as it started).
    h = Holder(env_for("intel-xe", preload=False, UCX_TLS=value), os.path.join(build, "libucp.so.0"))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], env_for("intel-xe", preload=False))
    finally:
        h.close()
    t.check("--pid of a process without the library: the warning", ("warning     " + warning) in out, out + err)
    t.check("... the Level Zero line alone, no CUDA line", not cuda_advice.search(out) and "without Level Zero" in out, out)
    # The plain doctor (ucx_info) too.
    e = env_for("intel-xe", preload=False, UCX_TLS=value)
    e["PATH"] = fake_ucx_info("foreign", ("rc_verbs", "ud_verbs", "tcp", "self")) + ":" + e["PATH"]
    rc, out, missing, err = doctor([], e)
    t.check("plain doctor: the warning", ("warning     " + warning) in out, out + err)
    # Controls: a node without GPUs still hears which families the value needs (a login node checking
    # a build for the compute nodes); the node's own family on a CUDA node.
    rc, out, missing, err = doctor(["--ucx", build, "--value", value], env_for("no-gpu", preload=False))
    t.check("control: no-gpu, --value %s: no warning, the CUDA module line (the value asks for CUDA)" % value,
            "warning" not in out and "this UCX has CUDA support (libuct_cuda.so.0), but the module does not load here" in out, out)
    rc, out, missing, err = doctor(["--ucx", build, "--value", "rc,ze_copy"], env_for("dgx", preload=False))
    t.check("control: dgx, --value rc,ze_copy: the CUDA module line, no Level Zero line, the warning",
            "this UCX has CUDA support" in out and "Level Zero" not in out and re.search(r"^warning +UCX_TLS names ze_copy", out, re.M),
            out)


# ---------------------------------------------------------------------------------------------
# Could not check is not "missing": exit 2
@case("doctor --ucx: a build that could not be read (not an ELF object, not a libucp) exits 2, not 1 (1 is 'missing')")
def ucx_not_checked(t):
    env = env_for(None, preload=False)
    paths = [("/etc/passwd", "not an ELF object"), (os.path.join(FAKES, "not-ucx", "libucp.so.0"), "it is not a UCX libucp")]
    libm = "/lib/x86_64-linux-gnu/libm.so.6"
    if os.path.exists(libm):
        paths.append((libm, "it is not a UCX libucp"))
    for path, words in paths:
        p = run([CLI, "doctor", "--ucx", path, "--value", "tcp"], env)
        err = p.stderr.decode(errors="replace")
        t.check("--ucx %s: exit 2, one line (%s), nothing on stdout" % (path, words),
                p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1 and words in err, "%d %r" % (p.returncode, err))


@case("doctor: an empty value is named by where it came from (--value: a usage error, UCX_TLS)")
def empty_value_source(t):
    for label, args, extra in (("--value ''", ["--value", ""], {}), ("UCX_TLS=''", [], {"UCX_TLS": ""})):
        for where in ("ucx_info", "--ucx"):
            env = env_for(None, preload=False, **extra)
            env["PATH"] = fake_ucx_info("empty-%s-%s" % (len(args), where.strip("-"))) + ":" + env["PATH"]
            more = ["--ucx", os.path.join(FAKES, "nixl")] if where == "--ucx" else []
            p = run([CLI, "doctor"] + args + more, env)
            err = p.stderr.decode(errors="replace")
            last = (p.stdout.decode(errors="replace").splitlines() or [""])[-1]
            want = "(--value)" if args else "(UCX_TLS as set)"
            # --value '': the one stderr line; UCX_TLS='': after the rows, the verdict, stderr silent.
            said = ("ucxtls: doctor: the value is empty %s:" % want) in err if args else (
                err == "" and last.startswith("verdict     FAIL (exit 1): the value is empty %s:" % want))
            t.check("%s (%s): exit %d, the error says the value is empty %s" % (label, where, 2 if args else 1, want),
                    p.returncode == (2 if args else 1) and said
                    and (args == [] or (p.stdout == b"" and err.count("\n") == 1))  # --value '': one line, no row
                    and (args == [] or "UCX_TLS is empty" not in err), "%d %r" % (p.returncode, err))


@case("doctor --ucx /: paths without a doubled slash")
def ucx_root(t):
    p = run([CLI, "doctor", "--ucx", "/", "--value", "tcp"], env_for(None, preload=False))
    text = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
    t.check("no '//' in what it prints (exit %d)" % p.returncode, "//" not in text, text)


@case("doctor --pid of a process that has exited: it says it exited")
def pid_exited(t):
    z = subprocess.Popen(["/bin/true"])
    wait_for(lambda: open("/proc/%d/stat" % z.pid).read().rsplit(")", 1)[1].split()[0] == "Z", 5)
    try:
        p = run([CLI, "doctor", "--pid", str(z.pid)], env_for(None, preload=False))
    finally:
        z.wait()
    err = p.stderr.decode()
    t.check("exit 2, one line: the process has exited (not 'has not loaded UCX yet')",
            p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1 and "has exited" in err
            and "not loaded UCX yet" not in err, err)


# ---------------------------------------------------------------------------------------------
# the build lines on the nodes a mutation found untested
@case("doctor --ucx: 'built without verbs' wherever the node's RDMA runs rc, a ConnectX or not")
def without_verbs(t):
    for machine in ("broadcom-roce", "rxe", "omnipath", "dgx"):
        rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids"), "--value", "tcp"], env_for(machine, preload=False))
        t.check("%s, a build without verbs, --value tcp: 'built without verbs', exit 1" % machine,
                rc == 1 and "this UCX was built without verbs: no rc transport, although this node's RDMA runs rc" in out,
                out + err)
    # tcp,cuda_copy: a value that carries the NVIDIA GPUs' memory (tcp alone does not: exit 1 for it).
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids"), "--value", "tcp,cuda_copy"],
                                   env_for("aws-p5", preload=False))
    t.check("aws-p5 (EFA: no rc), --value tcp,cuda_copy: no verbs line, exit 0", rc == 0 and "verbs" not in out, out + err)


@case("doctor --ucx: no 'built without DC' line for a build with no rc at all")
def no_dc_line_without_rc(t):
    for value in (None, "rc_x,rc,dc_x,dc,cuda_copy", "dc"):
        args = ["--ucx", os.path.join(FAKES, "rapids")] + (["--value", value] if value else [])
        rc, out, missing, err = doctor(args, env_for("dgx", preload=False))
        t.check("dgx, a build without verbs, %s: 'built without verbs', no DC line" % (value or "the default value"),
                "built without verbs" in out and "built without DC" not in out, out + err)
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl"), "--value", "dc"], env_for("dgx", preload=False))
    t.check("control: dgx, a build with rc but no DC, --value dc: the DC line", "built without DC (no dc_mlx5)" in out, out)


# ---------------------------------------------------------------------------------------------
# ucxtls run and LD_PRELOAD
def preload_libs():
    """Two tiny preload libraries that say on stderr that they were loaded."""
    libs = {}
    for name in ("first", "second"):
        out = os.path.join(WORK, "lib%s.so" % name)
        compile_c(out, '#include <unistd.h>\n__attribute__((constructor)) static void c(void) '
                  '{ write(2, "loaded %s\\n", %d); }\n' % (name, len("loaded %s\n" % name)), ["-shared", "-fPIC"], check=True)
        libs[name] = out
    return libs


def env_lines(stdout):
    return [x for x in stdout.decode().split("\n") if x.startswith("LD_PRELOAD=")]


@case("ucxtls run: LD_PRELOAD set but empty: the child gets exactly the library")
def run_empty_preload(t):
    lib = os.path.realpath(LIB)
    for value in ("", " ", ":"):
        p = run([CLI, "run", "/usr/bin/env"], env_for(None, preload=False, LD_PRELOAD=value))
        t.equal("LD_PRELOAD=%r: the child's LD_PRELOAD" % value, env_lines(p.stdout), ["LD_PRELOAD=" + lib])


@case("ucxtls run: two LD_PRELOAD entries: the one ld.so uses (the last) is kept, once")
def run_two_preloads(t):
    if not have("cc"):
        t.skip("two LD_PRELOAD entries", "no C compiler")
        return
    libs = preload_libs()
    lib = os.path.realpath(LIB)
    base = ["PATH=/usr/bin:/bin", "HOME=" + WORK]
    both = ["LD_PRELOAD=" + libs["first"], "LD_PRELOAD=" + libs["second"]]
    p = run([EXEC_ENV] + base + both + ["--", "/bin/true"], {})
    t.equal("control: ld.so itself loads the last entry's library (glibc, measured)", p.stderr.decode(), "loaded second\n")
    p = run([EXEC_ENV] + base + both + ["--", CLI, "run", "/usr/bin/env"], {})
    t.equal("the child's environment: one LD_PRELOAD, the last entry's list with the library after it",
            env_lines(p.stdout), ["LD_PRELOAD=%s:%s" % (libs["second"], lib)])
    t.equal("... and what ld.so loaded in the child is what it would have loaded without run, plus the library "
            "(the command itself loads 'second' too)", p.stderr.decode(), "loaded second\nloaded second\n")


@case("ucxtls run: an ASan program started with nothing preloaded runs (its runtime first)")
def run_asan(t):
    if not t.needs("gcc", "ASan"):
        return
    exe = os.path.join(WORK, "asan")
    p = compile_c(exe, '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
                  'int main(int c, char **v) { const char *s = getenv("UCX_TLS"); printf("UCX_TLS=%s\\n", s ? s : "<unset>");'
                  ' fflush(stdout); if (c > 1) { volatile char *p = malloc(4); p[4] = 1; free((void *)p); } return 0; }\n',
                  ["-fsanitize=address", "-g"], cc="gcc")
    if not t.check("compile with gcc -fsanitize=address", p.returncode == 0, p.stdout.decode()):
        return
    env = env_for("intel-xe", preload=False, **ALWAYS)
    p = run([CLI, "run", exe], env)
    t.check("starts under ucxtls run and gets UCX_TLS", p.returncode == 0 and p.stdout.decode() == "UCX_TLS=%s\n" % Z,
            "%d %r %r" % (p.returncode, p.stdout, p.stderr[-600:]))
    p = run([CLI, "run", exe, "overflow"], env)
    t.check("... and ASan still reports a heap overflow", p.returncode != 0 and b"heap-buffer-overflow" in p.stderr,
            p.stderr[-600:].decode(errors="replace"))
    p = run([CLI, "run", "/usr/bin/env"], env)
    t.equal("control: a program without ASan gets the library alone", env_lines(p.stdout), ["LD_PRELOAD=" + os.path.realpath(LIB)])


@case("doctor --ucx: a Level Zero module present but not loaded (UCX_MODULES): 'has Level Zero support', never 'rebuild'")
def ze_module_not_loaded(t):
    if not t.needs("cc", "ze module"):
        return
    d = os.path.join(WORK, "ze-module")
    os.makedirs(os.path.join(d, "ucx"))
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
    # libucp (libucs, libuct) without ze; a module libuct_ze.so.0 with ze_copy that loads here, and
    # that UCX_MODULES=^ze leaves out.
    for out, defs in ((os.path.join(d, "libucp.so.0"), ["-DFAKE_UCX_TLS_NONE=1"]),
                      (os.path.join(d, "ucx", "libuct_ze.so.0"), ["-DFAKE_UCX_NOT_UCX=1", "-DFAKE_UCX_TLS_ZE_MODULE=1"])):
        subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-o", out, src] + defs, check=True)
    rc, out, missing, err = doctor(["--ucx", d, "--value", "tcp"], env_for("intel-xe", preload=False,
                                                                            UCX_MODULES="^ze"))
    t.check("the module is named as left out by UCX_MODULES", re.search(r"^module +\S*libuct_ze.so.0 is not loaded: UCX_MODULES=\^ze \(environment\) leaves it out", out, re.M), out)
    t.check("'has Level Zero (ze) support (libuct_ze.so.0), but the module does not load here', exit 1",
            rc == 1 and "this UCX has Level Zero (ze) support (libuct_ze.so.0), but the module does not load here" in out, out + err)
    t.check("... never 'built without Level Zero' nor 'rebuild UCX with --with-ze'",
            "built without Level Zero" not in out and "--with-ze" not in out, out)


@case("doctor: the UCX 1.22 boundary of its verdicts, at 1.21, 1.22, 1.23, 2.0 and 0.23 (a denied absent name; a GPU-only value)")
def version_boundary(t):
    for version, newer in (("1.21.0", False), ("1.22.0", True), ("1.23.0", True), ("2.0.0", True), ("0.23.0", False)):
        e = env_for(None, preload=False)
        # --ucx: the build's registered transports (the plain doctor keeps those with a device here).
        build = os.path.join(fake_ucx_info("v" + version, ("tcp", "self", "cuda_copy"), version), "lib")
        rc, out, missing, err = doctor(["--ucx", build, "--value", "^ze_copy"], e)
        t.check("%s, --value ^ze_copy (denied, not in this UCX): %s" % (version, "harmless, exit 0" if newer else "MISSING, exit 1"),
                (rc == 0 and not missing and "does not warn about a denied name" in out) if newer
                else (rc == 1 and missing == {"ze_copy"}), "%d %r %r" % (rc, out, err))
        rc, out, missing, err = doctor(["--ucx", build, "--value", "cuda_copy"], e)
        t.check("%s, --value cuda_copy (served, GPU only): %s" % (version, "refused, exit 1" if newer else "ok, exit 0"),
                (rc == 1 and re.search(r"^refused ", out, re.M)) if newer else (rc == 0 and "refused" not in out),
                "%d %r %r" % (rc, out, err))


@case("doctor --json: an empty UCX_TLS is a set, empty value (\"\"), not null")
def json_empty_value(t):
    import json
    for label, args in (("ucx_info", []), ("--ucx", ["--ucx", os.path.join(FAKES, "nixl")])):
        env = env_for(None, preload=False, UCX_TLS="")
        env["PATH"] = fake_ucx_info("json-empty-" + label.strip("-")) + ":" + env["PATH"]
        p = run([CLI, "doctor", "--json"] + args, env)
        j = json.loads(p.stdout.decode())
        t.check("%s: value \"\" (the library keeps it), source UCX_TLS as set, status 1" % label,
                j["value"] == "" and j["source"] == "UCX_TLS as set" and j["status"] == 1, p.stdout.decode())
    env = env_for(None, preload=False)
    env.pop("UCX_TLS", None)
    env["PATH"] = fake_ucx_info("json-unset") + ":" + env["PATH"]
    j = json.loads(run([CLI, "doctor", "--json"], env).stdout.decode())
    t.check("control: UCX_TLS unset on a node without GPUs: value null", j["value"] is None, repr(j))


@case("doctor --pid of a process mapping two builds: the first that fails decides the status (exit 1), not the last")
def two_builds(t):
    rapids, nixl = (os.path.join(FAKES, b, "libucp.so.0") for b in ("rapids", "nixl"))
    hold = "import ctypes, sys; [ctypes.CDLL(a) for a in sys.argv[1:]]; print('ready', flush=True); sys.stdin.read()"
    p = subprocess.Popen([sys.executable, "-c", hold, rapids, nixl], env=env_for(None, preload=False),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    try:
        maps = open("/proc/%d/maps" % p.pid).read()
        first_rapids = maps.find(os.path.realpath(rapids)) < maps.find(os.path.realpath(nixl))
        # A name the first build doctor judges lacks and the last one serves (with tcp: not GPU-only).
        name = "rc_verbs" if first_rapids else "gdr_copy"
        rc, out, missing, err = doctor(["--pid", str(p.pid), "--value", name + ",tcp"], env_for(None, preload=False))
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    t.check("two UCX lines, the first MISSING %s, the second ok" % name,
            out.count("\nUCX ") + out.startswith("UCX ") == 2 and missing == {name} and re.search(r"^ok +%s$" % name, out, re.M), out)
    t.equal("exit 1 (the first build's), though the last is fine", rc, 1, out + err)
    t.check("... and the last build's verdict alone would be 0 (no refused, no second MISSING line)",
            out.count("MISSING ") == 1 and "refused" not in out, out)


@case("ucxtls run: a FIFO with an x bit first in PATH, or named, never blocks it (as env: passed over, or 126)")
def run_fifo(t):
    d = os.path.join(WORK, "fifo-bin")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "python3"))
    os.chmod(os.path.join(d, "python3"), 0o755)
    env = env_for(None, preload=False)
    env["PATH"] = d + ":" + os.path.dirname(os.path.realpath(sys.executable)) + ":" + env["PATH"]

    def bounded(argv, cwd=None):
        try:
            p = run(argv, env, cwd=cwd, timeout=10)
            return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return None, "", "blocked: killed after 10 s"

    t.equal("control: env python3 runs the python3 after the FIFO", bounded(["/usr/bin/env", "python3", "-c", "print(7)"])[:2], (0, "7\n"))
    t.equal("ucxtls run python3: the same python3, exit 0", bounded([CLI, "run", "python3", "-c", "print(7)"])[:2], (0, "7\n"))
    want = bounded(["/usr/bin/env", "./python3"], cwd=d)[0]
    rc, out, err = bounded([CLI, "run", "./python3"], cwd=d)
    t.check("ucxtls run ./FIFO: exit %s at once, as env's, one line" % want, rc == want == 126 and err.count("\n") == 1, "%s %r" % (rc, err))


if __name__ == "__main__":
    main("the command meets its users in a failure")
