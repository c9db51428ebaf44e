#!/usr/bin/env python3
"""`ucxtls doctor`'s last line, `verdict`, agrees with its exit status in every mode (the ucx_info
on PATH, `--ucx`, `--pid`) and with `--json`'s status: `ok (exit 0)`, or `FAIL (exit 1): ` and the
first failure's words; each failure is on stdout once (the verdict's quote apart), and stderr stays
empty. "nothing to check" is printed only where nothing else is checked: a replayed NVIDIA node (UCX_TLS stays unset) whose UCX, Debian's 1.13, has
no CUDA, is a FAIL that says why. An error before any row is its one stderr line alone. The UCX is
Debian's 1.13 (tag ucx_info: SKIP without ucx_info) on replayed machines; --pid reads a python3
that has it loaded, with and without the library preloaded."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, case, env_for, have, main, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
OK = "verdict     ok (exit 0)"
FAIL = "verdict     FAIL (exit 1): "


def debian_libucp(t):
    """The libucp Debian's ucx_info loads (ldd's answer), or None after a SKIP."""
    if not have("ucx_info"):
        t.skip("doctor with Debian's UCX", "no ucx_info in PATH (apt-get install ucx-utils)")
        return None
    p = run(["ldd", "/usr/bin/ucx_info"], env_for(None, preload=False))
    m = re.search(r"^\s*libucp\S* => (/\S+)", p.stdout.decode(), re.M)
    t.check("ldd names the libucp of /usr/bin/ucx_info", m is not None, p.stdout.decode())
    return m.group(1) if m else None


def doctor(args, env):
    p = run([CLI, "doctor"] + args, env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def agrees(t, what, rc, out, err):
    """The verdict is the last line, and says what the exit status says; a FAIL quotes a failure,
    which stdout shows nowhere else unless a row has its words, and nothing is on stderr."""
    last = out.splitlines()[-1] if out else ""
    if rc == 0:
        return t.check("%s: exit 0, last line %r, stderr empty" % (what, OK), last == OK and err == "", "%d\n%s%s" % (rc, out, err))
    m = re.match(re.escape(FAIL) + r"(.*?)(?: \(and \d+ more above\))?$", last)
    return t.check("%s: exit %d, last line 'verdict     FAIL (exit 1): <a failure>', stderr empty" % (what, rc),
                   rc == 1 and m and m.group(1) and err == "", "%d\n%s%s" % (rc, out, err))


@case("a replayed NVIDIA node, UCX_TLS unset, Debian's UCX without CUDA: FAIL and why, not 'nothing to check'")
def dgx_unset(t):
    if not debian_libucp(t):
        return
    rc, out, err = doctor([], env_for("dgx", preload=False))
    t.check("exit 1, and stdout never says 'nothing to check'", rc == 1 and "nothing to check" not in out, out + err)
    t.check("... it says there is no value to check, only the build",
            re.search(r"^UCX_TLS stays unset here \(skip\): .*; no value to check, only the build$", out, re.M), out)
    t.equal("... its last line says it failed and why", out.splitlines()[-1:],
            [FAIL + "this UCX was built without CUDA support: NIXL cannot register NVIDIA GPU memory whatever UCX_TLS "
             "says; rebuild UCX with --with-cuda"], out)


@case("a replayed Intel node: `ok all`, then the build without Level Zero: the verdict is FAIL")
def intel_all(t):
    if not debian_libucp(t):
        return
    rc, out, err = doctor([], env_for("intel-xe", preload=False))
    t.check("control: `ok all` and the build line", re.search(r"^ok +all$", out, re.M) and "without Level Zero" in out, out)
    agrees(t, "intel-xe, all", rc, out, err)
    t.check("... FAIL names Level Zero", "without Level Zero" in (out.splitlines() or [""])[-1], out)


@case("every mode and value: the verdict agrees with the exit status and with --json's status")
def every_mode(t):
    libucp = debian_libucp(t)
    if not libucp:
        return
    holders = {}
    try:
        for machine in ("dgx", "intel-xe", "no-gpu"):
            for preload in (False, True):  # --pid: a process without and with the library
                p = subprocess.Popen([sys.executable, "-c", HOLD, libucp], env=env_for(machine, preload=preload),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                p.stdout.readline()
                holders[(machine, preload)] = p
        for machine in ("dgx", "intel-xe", "no-gpu"):
            modes = [("plain", [])]
            modes += [("--ucx", ["--ucx", libucp])]
            modes += [("--pid (library %s)" % ("loaded" if pre else "not loaded"), ["--pid", str(holders[(machine, pre)].pid)])
                      for pre in (False, True)]
            for mode, args in modes:
                for value in ([], ["--value", "tcp"], ["--value", "tcp,foo"], ["--value", "all"]):
                    what = "%s, doctor %s" % (machine, " ".join([mode] + value))
                    rc, out, err = doctor(args + value, env_for(machine, preload=False))
                    agrees(t, what, rc, out, err)
                    t.check("... 'nothing to check' only with exit 0 and no build line",
                            "nothing to check" not in out or (rc == 0 and not re.search(r"^build ", out, re.M)), out)
                    q = run([CLI, "doctor", "--json"] + args + value, env_for(machine, preload=False))
                    got = json.loads(q.stdout.decode() or "null") or {}
                    t.check("... --json: status %d, exit %d" % (rc, rc), got.get("status") == rc == q.returncode,
                            q.stdout.decode())
    finally:
        for p in holders.values():
            p.stdin.close()
            p.wait(timeout=30)


@case("two failures: each is shown once, on stdout; the verdict quotes the first and counts the other")
def first_failure(t):
    # A replayed Intel node and a fake NIXL-like build (no ze_copy): `tcp,foo` cannot carry the
    # node's GPU memory (the first failure, its `warning` row first), and names a transport the
    # build lacks (the second, which no row shows in its words). --json's messages are the two.
    lib = os.path.join(FAKES, "nixl", "libucp.so.0")
    args = ["--ucx", lib, "--value", "tcp,foo"]
    rc, out, err = doctor(args, env_for("intel-xe", preload=False))
    q = run([CLI, "doctor", "--json"] + args, env_for("intel-xe", preload=False))
    failed = [m[len("doctor: "):] for m in (json.loads(q.stdout.decode() or "null") or {}).get("messages", [])]
    if not t.check("control: exit 1, --json names two failures, the value's copy transport first, then foo",
                   rc == 1 and len(failed) == 2 and "foo" not in failed[0] and "foo" in failed[1], "%d %r %r" % (rc, out, failed)):
        return
    t.equal("stderr is empty: no error, only failures", err, "", err)
    t.check("--json: stdout is the object alone, stderr empty", len(q.stdout.splitlines()) == 1 and q.stderr == b"",
            repr(q.stdout + q.stderr))
    lines = out.splitlines()
    for m in failed:
        t.equal("shown once on stdout apart from the verdict's quote: %s" % m[:60],
                sum(m in line for line in lines[:-1] + err.splitlines()), 1, out + err)
    t.equal("the verdict quotes the first and counts the other, above it", lines[-1:],
            [FAIL + failed[0] + " (and 1 more above)"], out + err)


@case("an error before any row: its one stderr line, no verdict")
def error_first(t):
    for args in (["--value", ""], ["--pid", "x"], ["--bogus"]):
        rc, out, err = doctor(args, env_for(None, preload=False))
        t.check("doctor %s: exit 2, stdout empty, one stderr line" % " ".join(args),
                rc == 2 and out == "" and err.count("\n") == 1, "%d %r %r" % (rc, out, err))


if __name__ == "__main__":
    main("doctor's verdict line agrees with its exit status")
