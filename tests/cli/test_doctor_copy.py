#!/usr/bin/env python3
"""`ucxtls doctor` on a value that cannot carry the node's GPU memory, whoever set it: an allow
list without the family's copy transport (Slurm's `UCX_TLS=tcp` on an NVIDIA node) or a deny list
that removes it (`^cuda_copy`, `^cuda`). NIXL then fails with "VRAM memory is detected as host by
UCX." The doctor names it with that consequence and the fix, exit 1, in every mode (the
`ucx_info` on PATH, `--ucx`, `--pid`) and in `--json`; a value that holds it (`tcp,cuda_copy`, the
alias `cuda`, `all`) stays ok. The UCX is RAPIDS' libucx-cu12 1.22 wheel (tag wheels) with the
fake CUDA driver of tests/cuda, so that its cuda_copy is served; the words for ROCm and Level Zero
nodes are checked against Debian's UCX 1.13 on replayed machines (tag ucx_info)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, case, env_for, have, main, run, ucx_build_or_skip  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
FAKE_CUDA_DIR = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))
VRAM = "VRAM memory is detected as host by UCX."
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"

# value, can it carry an NVIDIA GPU's memory
VALUES = [("tcp", False), ("^cuda_copy", False), ("^cuda", False), ("sm,self,tcp,cuda_ipc", False),
          ("tcp,\\cuda", False),  # \cuda is a transport named cuda (none), not the alias
          ("tcp,cuda_copy", True), ("tcp,cuda", True), ("all", True), ("^ib", True), ("^cuda_ipc", True)]


def rapids_env(t, **extra):
    """(env, build) to run doctor with RAPIDS' UCX on an NVIDIA node (UCXTLS_ACCEL=cuda) whose
    fake driver lets libuct_cuda load; (None, None) after a SKIP."""
    build = ucx_build_or_skip(t, "rapids")
    if not build:
        return None, None
    if not os.path.exists(os.path.join(FAKE_CUDA_DIR, "libcuda.so.1")):
        t.skip("cuda_copy served", "tests/cuda's fake libcuda.so.1 is not built: %s" % FAKE_CUDA_DIR)
        return None, None
    env = env_for(None, preload=False, UCXTLS_ACCEL="cuda", **extra)
    env["LD_LIBRARY_PATH"] = FAKE_CUDA_DIR + ":" + build.env["LD_LIBRARY_PATH"]
    env["PATH"] = os.path.dirname(build.ucx_info) + ":" + env["PATH"]
    return env, build


def judged(t, what, value, carries, p):
    out, err = p.stdout.decode(), p.stderr.decode()
    if carries:
        t.check("%s: UCX_TLS=%s carries GPU memory: exit 0, no copy line" % (what, value),
                p.returncode == 0 and VRAM not in out + err, out + err)
    else:
        last = (out.splitlines() or [""])[-1]  # the verdict quotes it; stderr is for errors
        t.check("%s: UCX_TLS=%s named with NIXL's words and the fix in the verdict, exit 1, stderr silent" % (what, value),
                p.returncode == 1 and err == "" and VRAM in last and "cuda_copy" in last
                and ("take cuda_copy out of the ^ list" if value.startswith("^") else "add cuda_copy") in last, out + err)


@case("--ucx RAPIDS' UCX 1.22 on an NVIDIA node: a value without cuda_copy, or denying it, fails", tags=("wheels",))
def ucx_mode(t):
    for value, carries in VALUES:
        env, build = rapids_env(t, UCX_TLS=value)
        if not env:
            return
        judged(t, "--ucx", value, carries, run([CLI, "doctor", "--ucx", build.libucp], env))


@case("plain doctor (the wheel's ucx_info on PATH) and --json: the same verdicts", tags=("wheels",))
def plain_and_json(t):
    for value, carries in VALUES:
        env, _ = rapids_env(t, UCX_TLS=value)
        if not env:
            return
        judged(t, "plain", value, carries, run([CLI, "doctor"], env))
        p = run([CLI, "doctor", "--json"], env)
        lines = p.stdout.decode().splitlines()
        if not t.check("--json %s: one line" % value, len(lines) == 1, p.stdout.decode() + p.stderr.decode()):
            continue
        j = json.loads(lines[0])
        named = any(VRAM in m for m in j["messages"])
        t.check("--json UCX_TLS=%s: status %d, value, family cuda, %s" % (value, 0 if carries else 1, "no copy message" if carries else "the message names it"),
                j["status"] == (0 if carries else 1) == p.returncode and j["value"] == value and j["family"] == "cuda"
                and named == (not carries), lines[0])


@case("--pid: a process that mapped RAPIDS' libucp with UCX_TLS=tcp in its environment", tags=("wheels",))
def pid_mode(t):
    for value, carries in (("tcp", False), ("tcp,cuda_copy", True)):
        env, build = rapids_env(t, UCX_TLS=value)
        if not env:
            return
        # The caller's environment says nothing: --pid judges the process's own.
        caller = env_for(None, preload=False)
        p = subprocess.Popen([sys.executable, "-c", HOLD, build.libucp], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if not t.check("the process mapped the wheel's libucp", p.stdout.readline().strip() == b"ready"):
                continue
            judged(t, "--pid", value, carries, run([CLI, "doctor", "--pid", str(p.pid)], caller))
        finally:
            p.stdin.close()
            p.wait(timeout=30)


@case("ROCm and Level Zero nodes (Debian's UCX): the value names no rocm_copy / ze_copy", tags=("ucx_info",))
def other_families(t):
    if not have("ucx_info"):
        t.skip("doctor", "ucx_info not installed (Debian ucx-utils); scripts/test.sh installs it")
        return
    for machine, copy, alias in (("mi300x", "rocm_copy", "rocm"), ("intel-xe", "ze_copy", "ze")):
        for value, lacks in (("tcp", True), ("^" + copy, True), ("^" + alias, True), ("tcp," + alias, False),
                             ("tcp," + copy, False)):
            p = run([CLI, "doctor", "--value", value], env_for(machine, preload=False))
            out = p.stdout.decode()
            named = any(VRAM in w and copy in w for w in re.findall(r"^warning +(.*)$", out, re.M))
            # Debian's UCX has neither family: exit 1 for its build whatever the value; the line is the value's.
            t.check("%s --value %s: %s, exit 1" % (machine, value, "the copy line names %s" % copy if lacks else "no copy line"),
                    named == lacks and p.returncode == 1 and p.stderr == b"" and (VRAM in out.splitlines()[-1]) == lacks,
                    out + p.stderr.decode())


if __name__ == "__main__":
    main("ucxtls doctor: a value that cannot carry the node's GPU memory")
