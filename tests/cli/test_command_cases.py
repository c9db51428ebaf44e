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
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALWAYS, BUILD_DIR, C, Z, case, env_for, include, main, run  # noqa: E402
from command_common import CLI, FAKES, WORK, Holder, doctor, value_line, wait_for  # noqa: E402


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


if __name__ == "__main__":
    include("command_cases_text", "command_cases_builds", "command_cases_run")
    main("the command meets its users in a failure")
