"""Two NIXL agents in two trainer processes (trainer.py) on a replayed node, as the nixl and
no_harm tests run them: NIXL 1.5.1 from PyPI (tests/wheels), the fake CUDA driver of tests/cuda,
the fixture's PCI devices shown to NIXL through a mount namespace (bubblewrap), the library handed
to the trainer alone."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import BUILD_DIR, LIB, env_for, fixture, have  # noqa: E402

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "ze"))
import datapath  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "trainer.py")
FAKE_CUDA_DIR = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))
CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
# trainer.py's exit codes
CODES = {0: "registered, WRITE+READ verified", 3: "nixl_agent refused", 4: "register_memory refused",
         5: "transfer failed", 6: "data wrong", 7: "peer failed", 8: "GPU driver failed", 9: "registered"}
OK, AGENT, REGISTER = 0, 3, 4
INTEL_LIST = "tcp,ze_copy"  # stands for rc_x,rc,dc_x,dc,ze_copy (no RDMA here)
CUDA_LIST = "tcp,cuda_copy"  # stands for rc_x,rc,dc_x,dc,cuda_copy
HERE_TEMPLATE = "tcp,{copy}"  # stands for the default {rdma},{copy} on a ConnectX node
NIXL_INVALID = "NVIDIA GPU(s) are present, but this setting does not enable CUDA memory support"
MATRIX = []  # (cell, UCX_TLS as the trainer saw it, outcome, NIXL's and UCX's words)


# UCXTLSTEST_NIXL_REAL=1 (scripts/gpu-check.sh on a lent machine): this node as it is, its real
# CUDA driver and /sys, the library deciding from the real node; only the cells tagged `node`,
# which mean the same on any NVIDIA node, are run so.
REAL = os.environ.get("UCXTLSTEST_NIXL_REAL") == "1"


def setup(t):
    """(python of the wheels' venv, CUDA runtime path), or t.exit() after a SKIP saying why."""
    venv, why = harness.wheels()
    if not venv:
        t.skip("NIXL from PyPI", why)
        t.exit()
    if REAL:
        pass
    elif not os.path.exists(os.path.join(FAKE_CUDA_DIR, "libcuda.so.1")):
        t.skip("a CUDA GPU", "the fake CUDA driver (tests/cuda) is not built: %s" % FAKE_CUDA_DIR)
        t.exit()
    elif not have("bwrap"):
        t.skip("NIXL on a replayed node", "bwrap not installed (Debian bubblewrap): NIXL counts GPUs in /sys")
        t.exit()
    cudart = os.path.join(harness.site_packages(venv), "nvidia", "cuda_runtime", "lib", "libcudart.so.12")
    return os.path.join(venv, "bin", "python"), cudart


def namespace(machine):
    """bwrap's arguments that show NIXL the fixture's PCI devices (and the directories their
    links point into) in place of this machine's."""
    sys_dir = os.path.join(fixture(machine), "sys")
    argv = ["bwrap", "--dev-bind", "/", "/", "--bind", os.path.join(sys_dir, "bus", "pci", "devices"),
            "/sys/bus/pci/devices"]
    for d in sorted(os.listdir(os.path.join(sys_dir, "devices"))):
        if d.startswith("pci"):
            argv += ["--bind", os.path.join(sys_dir, "devices", d), "/sys/devices/" + d]
    return argv


def run_pair(t, machine, hardcoded, preload, trace=None, memory="VRAM", **extra):
    """The target and the initiator on `machine`, each hard-coding `hardcoded` ("-": nothing),
    moving `memory` (VRAM or DRAM): {role: (status, output)}."""
    python, cudart = setup(t)
    if REAL:  # exec'd directly, the library in its exec environment
        env = env_for(None, preload=preload, NIXL_TRAINER_CUDART=cudart, **extra)
        ns = ["--"]
    else:
        env = env_for(machine, preload=False, LD_LIBRARY_PATH=FAKE_CUDA_DIR, NIXL_TRAINER_CUDART=cudart,
                      FAKECUDA_TRACE=trace, **extra)
        ns = namespace(machine) + (["--setenv", "LD_PRELOAD", LIB] if preload else []) + ["--"]
    return datapath.run_roles(
        lambda role, fd: ns + [python, TRAINER, role, str(fd), hardcoded, "4096", memory], env, harness.EMPTY_HOME,
        lambda argv: ("LD_PRELOAD=libucxtls.so " if preload else "") + " ".join(argv[argv.index(python):]),
        lambda status: CODES.get(status, datapath.describe(status)))


def seen(res):
    return datapath.seen_value(res["initiator"][1])


def words(res):
    """NIXL's and UCX's own error and warning lines, without their prefixes (timestamps, pids)."""
    out = set()
    for role in res:
        for line in res[role][1].split("\n"):
            m = re.match(r"^[EW]\d{4} [\d:.]+ +\d+ (\S+)\] (.*)$", line)
            said = re.sub(r"(nixlUcxContext|Failed to create UCX context) (target|initiator)", r"\1", m.group(2)) if m else ""
            # NIXL repeats a refusal as it unwinds (engine, then agent); its first words are kept
            if m and not said.startswith(("Failed to create engine", "createBackend", "registerMem")) \
                    and "IB device(s) were detected" not in said:
                out.add("NIXL " + said)
    return sorted(out | set(datapath.ucx_words(res["initiator"][1] + res["target"][1])))


def outcome(res):
    statuses = sorted({res[r][0] for r in res})
    return " / ".join(CODES.get(s, datapath.describe(s)) for s in statuses)


def record(cell, res):
    MATRIX.append((cell, seen(res), outcome(res), words(res)))


def both(res, code):
    return all(res[r][0] == code for r in res)


def copies(trace):
    """The copies the fake driver did into or out of device memory."""
    if not os.path.exists(trace):
        return 0
    with open(trace) as f:
        return sum(1 for line in f if line.startswith("copy ") and "HtoH" not in line)


def trace_file(name):
    return os.path.join(harness._scratch, "nixl-%s.trace" % name)
