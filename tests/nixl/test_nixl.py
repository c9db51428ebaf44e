#!/usr/bin/env python3
"""The seed's mechanism end to end, through real NIXL: NIXL 1.5.1 from PyPI (its Python API and
the UCX bundled in its wheel, tests/wheels), on replayed NVIDIA nodes, with the project's fake CUDA
driver (tests/cuda: device memory the host cannot touch, copies done by the driver).

Each cell runs two trainer processes (tests/nixl/trainer.py: os.environ.setdefault of a hard-coded
list, nixl_agent with the UCX backend, register_memory of cuMemAlloc'd memory as VRAM, a WRITE and
a READ to the other process's agent over loopback, every byte checked through the driver), exec'd
directly with the library in LD_PRELOAD of their exec environment when the cell preloads it.

What is replayed, and how:
- for the library: the fixture machine (UCXTLS_SYSROOT), so it decides as on that node;
- for NIXL: the fixture's PCI devices, bind-mounted over /sys/bus/pci/devices in a mount namespace
  (bubblewrap), since NIXL counts NVIDIA GPUs there for its UCX_TLS check; bwrap is exec'd without
  the library and hands LD_PRELOAD to the trainer alone (--setenv), so nothing derives in front;
- for UCX: the fake CUDA driver (libcuda.so.1, libnvidia-ml.so.1) first in LD_LIBRARY_PATH, and
  the CUDA runtime torch ships (PyPI's nvidia-cuda-runtime-cu12) loaded globally first, as torch
  does before a trainer imports NIXL.

This machine has no RDMA device, so a list that must move bytes here stands in for a real node's
with `tcp` in place of the RDMA transports: the Intel trainer's `rc_x,rc,dc_x,dc,ze_copy` is played
as `tcp,ze_copy`, the CUDA trainer's as `tcp,cuda_copy`, and the default template `{rdma},{copy}`
of a ConnectX node as UCXTLS_TEMPLATE=`tcp,{copy}`; every other difference between the cells is
the copy transport. The values the library writes on NVIDIA nodes are also given to NIXL as they
are (the rc lists then fail here for lack of rc, after NIXL's own check has accepted them).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import ALWAYS, C, add_case, case, env_for  # noqa: E402

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "ze"))
import datapath  # noqa: E402
import nixl_pair  # noqa: E402
from nixl_pair import (AGENT, CLI, CUDA_LIST, FAKE_CUDA_DIR, HERE_TEMPLATE, INTEL_LIST, MATRIX, NIXL_INVALID, OK, REGISTER,  # noqa: E402
                       both, copies, outcome, record, run_pair, seen, setup, trace_file)

# --------------------------------------------------------------------------- the seed's mirror
@case("seed mirror, dgx: the Intel trainer without the library: NIXL refuses its list (NVIDIA GPUs, no CUDA transport)",
      tags=("wheels", "node"))
def intel_trainer_without(t):
    res = run_pair(t, "dgx", INTEL_LIST, preload=False, UCXTLS_TEMPLATE=HERE_TEMPLATE)
    t.equal("the trainer's setdefault applied its literal list", seen(res), INTEL_LIST)
    out = res["initiator"][1] + res["target"][1]
    t.check("both agents refused by NIXL's UCX_TLS check: %r" % NIXL_INVALID,
            both(res, AGENT) and ("Invalid UCX_TLS=%s for NIXL UCX backend: %s" % (INTEL_LIST, NIXL_INVALID)) in out, out)
    record("Intel trainer (`setdefault` of the ze list), no library", res)


@case("seed mirror, dgx: the Intel trainer with the library's list (a template; UCXTLS_WRITE=always on a real rc node): "
      "the library's value wins over setdefault, VRAM moves",
      tags=("wheels", "node"))
def intel_trainer_with(t):
    trace = trace_file("intel-with")
    res = run_pair(t, "dgx", INTEL_LIST, preload=True, trace=trace, UCXTLS_TEMPLATE=HERE_TEMPLATE, UCXTLS_DEBUG="1")
    t.equal("the library wrote the node's value before the trainer's setdefault (a no-op then)", seen(res), CUDA_LIST)
    t.check("the library's debug line says so", "ucxtls: set UCX_TLS=%s" % CUDA_LIST in res["initiator"][1],
            res["initiator"][1])
    t.check("both register VRAM, WRITE and READ complete, every byte checked through the driver", both(res, OK),
            outcome(res))
    if not nixl_pair.REAL:
        t.check("the driver did the copies (FAKECUDA_TRACE: %d device copies; the trainers' own are 4)" % copies(trace),
                copies(trace) > 4)
    record("Intel trainer, library (`%s` on dgx)" % HERE_TEMPLATE, res)


@case("seed mirror with the default: on aws-p5 (no rc) all makes the Intel trainer's list a no-op; on dgx (rc) "
      "nothing is written and NIXL refuses the list as without the library", tags=("wheels",))
def intel_trainer_default(t):
    res = run_pair(t, "aws-p5", C.replace("cuda_copy", "ze_copy"), preload=True)
    t.equal("aws-p5: the library wrote all (no rc device), the trainer's setdefault a no-op", seen(res), "all")
    t.check("aws-p5: VRAM registered and moved, every byte checked", both(res, OK), outcome(res))
    record("Intel trainer's literal list on aws-p5, library (the default: all)", res)
    res = run_pair(t, "dgx", INTEL_LIST, preload=True, UCXTLS_DEBUG="1")
    t.equal("dgx: the default writes nothing there, so the trainer's list applies", seen(res), INTEL_LIST)
    t.check("dgx: NIXL refuses it, as without the library (UCXTLS_WRITE=always or a template fixes it: above)",
            both(res, AGENT) and NIXL_INVALID in res["initiator"][1], outcome(res))
    record("Intel trainer on dgx, library (the default: nothing written)", res)


@case("seed mirror, dgx: the CUDA trainer works without the library, and with it gets the same list", tags=("wheels", "node"))
def cuda_trainer(t):
    for preload in (False, True):
        res = run_pair(t, "dgx", CUDA_LIST, preload=preload, UCXTLS_TEMPLATE=HERE_TEMPLATE)
        what = "with" if preload else "without"
        t.equal("%s the library: UCX_TLS=%s, byte-identical to the trainer's own" % (what, CUDA_LIST), seen(res), CUDA_LIST)
        t.check("%s the library: VRAM registered and moved, every byte checked" % what, both(res, OK), outcome(res))
        record("CUDA trainer (`setdefault` of the CUDA list), %s" % ("library" if preload else "no library"), res)


# --------------------------------------------------------------------------- a kept value of another family
@case("a kept UCX_TLS of another family on dgx: fails, the debug line names the mismatch, UCXTLS_REPAIR=1 makes it work",
      tags=("wheels", "node"))
def kept_other_family(t):
    res = run_pair(t, "dgx", CUDA_LIST, preload=True, UCX_TLS=INTEL_LIST, UCXTLS_DEBUG="1")
    out = res["initiator"][1]
    t.equal("the job's exported value is kept", seen(res), INTEL_LIST)
    t.check("NIXL refuses it (both agents)", both(res, AGENT) and NIXL_INVALID in out, outcome(res))
    t.check("the debug line names the mismatch: ze_copy on a CUDA node, and UCXTLS_REPAIR",
            'ucxtls: keep UCX_TLS="%s"' % INTEL_LIST in out and "names ze_copy but this node's GPUs are cuda: "
            "UCXTLS_REPAIR=1 rewrites them" in out, out)
    record("launcher exports `%s`, library (kept)" % INTEL_LIST, res)
    res = run_pair(t, "dgx", CUDA_LIST, preload=True, UCX_TLS=INTEL_LIST, UCXTLS_REPAIR="1")
    t.equal("UCXTLS_REPAIR=1 rewrote it to the node's family", seen(res), CUDA_LIST)
    t.check("... and VRAM is registered and moved, every byte checked", both(res, OK), outcome(res))
    record("the same, `UCXTLS_REPAIR=1`", res)


# --------------------------------------------------------------------------- NIXL on every value the library writes
# (machine, settings, the value the library writes there, what it stands for, whether it moves bytes here)
VALUES = [
    ("dgx", ALWAYS, C, "UCXTLS_WRITE=always on a ConnectX node", False),
    ("broadcom-roce", ALWAYS, "rc,cuda_copy", "UCXTLS_WRITE=always on another rc node", False),
    ("aws-p5", {}, "all", "the default on a GPU node without rc (EFA)", True),
    ("dgx", {"UCXTLS_TEMPLATE": "{rdma},sm,self,tcp,{ipc},{copy}"}, "rc_x,rc,dc_x,dc,sm,self,tcp,cuda_ipc,cuda_copy",
     "the inference-server and MPI template", True),
    ("aws-p5", {"UCXTLS_TEMPLATE": "{rdma},sm,self,tcp,{ipc},{copy}"}, "sm,self,tcp,cuda_ipc,cuda_copy",
     "the same template without rc", True),
    ("dgx", {"UCXTLS_TEMPLATE": "rc_x,rc,{copy}"}, "rc_x,rc,cuda_copy", "the template without DC for NIXL's wheel", False),
]


def nixl_on_value(t, machine, settings, value, what, moves):
    res = run_pair(t, machine, C, preload=True, **settings)
    out = res["initiator"][1] + res["target"][1]
    t.equal("the library wrote %s on %s (%s)" % (value, machine, what), seen(res), value)
    t.check("NIXL's UCX_TLS check accepts it (no 'Invalid UCX_TLS')", "Invalid UCX_TLS" not in out, out)
    if moves:
        t.check("VRAM registered and moved, every byte checked", both(res, OK), outcome(res))
    else:
        t.check("only the missing RDMA device stops it here: UCX says 'no usable transports/devices' (rc runs on the node)",
                both(res, AGENT) and "no usable transports/devices" in out, out)
    record("library on %s, %s" % (machine, what), res)


for _m, _s, _v, _what, _moves in VALUES:
    add_case("NIXL on the library's value on %s: %s" % (_m, _what), nixl_on_value, _m, _s, _v, _what, _moves,
             tags=("wheels",))


def nixl_default_unset(t, machine):
    # NVIDIA GPUs beside an rc device: the default writes nothing, so the trainer's hard-coded list
    # applies byte-identical, as without the library (only the missing RDMA device stops it here).
    res = run_pair(t, machine, C, preload=True, UCXTLS_DEBUG="1")
    out = res["initiator"][1] + res["target"][1]
    t.check("the default on %s: the library writes nothing (its debug line says skip)" % machine,
            "ucxtls: skip (UCX_TLS stays unset)" in out and "ucxtls: set" not in out, out)
    t.equal("the trainer's own %s applies, byte-identical" % C, seen(res), C)
    plain = run_pair(t, machine, C, preload=False)
    t.equal("... and NIXL ends as without the library (%s)" % outcome(plain), outcome(res), outcome(plain))
    record("library on %s, the default (nothing written)" % machine, res)


for _m in ("dgx", "broadcom-roce"):
    add_case("NIXL on %s with the library's default: nothing written, the trainer's list applies" % _m,
             nixl_default_unset, _m, tags=("wheels",))


@case("aws-p5 (NVIDIA, EFA, no rc): the trainer's literal CUDA list fails without the library, works with it",
      tags=("wheels",))
def efa_trainer(t):
    res = run_pair(t, "aws-p5", C, preload=False)
    out = res["initiator"][1]
    t.check("without the library: %s leaves UCX 'no usable transports/devices', NIXL creates no agent" % C,
            both(res, AGENT) and "no usable transports/devices" in out, out)
    record("CUDA trainer's literal list on aws-p5, no library", res)
    res = run_pair(t, "aws-p5", C, preload=True)
    t.equal("with the library: all", seen(res), "all")
    t.check("with the library: VRAM registered and moved", both(res, OK), outcome(res))
    record("CUDA trainer's literal list on aws-p5, library", res)


@case("UCXTLS_ACCEL=none UCXTLS_WRITE=always on dgx (a list without a copy transport, asked for): NIXL refuses it",
      tags=("wheels",))
def accel_none(t):
    res = run_pair(t, "dgx", C, preload=True, UCXTLS_ACCEL="none", **ALWAYS)
    t.equal("the library wrote the RDMA transports alone, as asked", seen(res), "rc_x,rc,dc_x,dc")
    t.check("NIXL refuses: %r" % NIXL_INVALID, both(res, AGENT) and NIXL_INVALID in res["initiator"][1], outcome(res))
    record("`UCXTLS_ACCEL=none UCXTLS_WRITE=always` on dgx (asked for)", res)


FAKE_ZE = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(harness.BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))


@case("intel-xe with the fake Level Zero GPU: NIXL's UCX (no Level Zero) takes its memory for host under every value; "
      "doctor names the build", tags=("wheels",))
def intel_node(t):
    # The prime-rl --with-ze=no case on the binaries users install: NIXL's wheel has no ze_copy.
    if not os.path.exists(FAKE_ZE):
        t.skip("an Intel GPU", "the fake Level Zero GPU driver (tests/ze) is not built: %s" % FAKE_ZE)
        return
    for what, hardcoded, preload, extra in (
            ("the trainer's CUDA list (tcp for rc), no library", CUDA_LIST, False, {}),
            ("the library's value (all: UCX's own default on a node whose GPUs are not NVIDIA's)", CUDA_LIST, True, {}),
            ("the library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", CUDA_LIST, True, {"UCXTLS_TEMPLATE": "sm,self,tcp,{copy}"})):
        res = run_pair(t, "intel-xe", hardcoded, preload, memory="ZE", ZE_ENABLE_ALT_DRIVERS=FAKE_ZE, **extra)
        out = res["initiator"][1] + res["target"][1]
        t.check("%s (UCX_TLS=%s): register_memory of Level Zero memory refused in NIXL's words (%r)"
                % (what, seen(res), datapath.NIXL_WORDS), both(res, REGISTER) and datapath.NIXL_WORDS in out, outcome(res))
        record("intel-xe, NIXL's UCX, Level Zero memory: " + what, res)
    nixl_ucx = os.path.dirname(harness.ucx_build("nixl")[0].libucp)
    for extra, named in (([], "ok          all"), (["--template", "sm,self,tcp,{copy}"], "MISSING     ze_copy")):
        d = harness.run([CLI, "doctor", "--ucx", nixl_ucx] + extra, env_for("intel-xe", preload=False))
        out = d.stdout.decode()
        t.check("doctor --ucx on NIXL's UCX, intel-xe%s: '%s', the build named as the cause, exit 1"
                % (" " + " ".join(extra) if extra else " (the default's all)", named),
                d.returncode == 1 and ("\n%s\n" % named) in out
                and "this UCX was built without Level Zero (ze) support" in out, out + d.stderr.decode())


@case("Debian's UCX 1.13 (no CUDA module) on dgx: the device memory is host to it whatever the value; doctor says why",
      tags=("wheels",))
def debian_ucx(t):
    # NIXL's wheel loads its own UCX only, so the NIXL-like consumer of tests/ze (NIXL's UCX
    # backend's calls, compiled against Debian's UCX) stands in for NIXL here, on the same fake GPU.
    setup(t)
    if not os.path.exists("/usr/include/ucp/api/ucp.h"):
        t.skip("Debian's UCX", "libucx-dev is not installed; scripts/test.sh installs it")
        return
    lib, err = datapath.compile_consumer(os.environ.get("UCXTLSTEST_CC") or "cc", "/usr", harness._scratch)
    if not t.check("the NIXL-like consumer compiles against Debian's UCX", lib is not None, err or ""):
        return
    for machine, settings, value in (("dgx", {"UCXTLS_TEMPLATE": HERE_TEMPLATE}, CUDA_LIST), ("aws-p5", {}, "all")):
        env = env_for(machine, LD_LIBRARY_PATH=FAKE_CUDA_DIR, UCX_HANDLE_ERRORS="bt", **settings)
        res = datapath.run_pair(lib, env, harness.EMPTY_HOME, gpu="cuda")
        out = res["initiator"][1] + res["target"][1]
        t.equal("%s: the library wrote %s" % (machine, value), datapath.seen_value(res["initiator"][1]), value)
        t.check("%s: UCX 1.13 takes the device memory for host, and it is refused in NIXL's words (%r)"
                % (machine, datapath.NIXL_WORDS), all(res[r][0] == datapath.NL_DETECTED_AS_HOST for r in res)
                and datapath.NIXL_WORDS in out and "memory type host" in out, out)
        MATRIX.append(("Debian's UCX 1.13, library on %s (NIXL-like consumer)" % machine, value,
                       "refused: " + datapath.NIXL_WORDS, datapath.ucx_words(out)))
    d = harness.run([CLI, "doctor", "--ucx", "/usr"], env_for("dgx", preload=False, **ALWAYS))
    out = d.stdout.decode()
    t.check("doctor --ucx /usr on dgx, UCXTLS_WRITE=always (the CUDA list): MISSING cuda_copy, and the build named as the cause, exit 1",
            d.returncode == 1 and re.search(r"^MISSING +cuda_copy$", out, re.M) is not None
            and "this UCX was built without CUDA support: NIXL cannot register NVIDIA GPU memory whatever UCX_TLS says" in out,
            out + d.stderr.decode())


@case("ucxtls doctor --pid of a trainer that loaded NIXL's wheel: its bundled UCX, judged with the process's environment",
      tags=("wheels",))
def doctor_pid(t):
    python, cudart = setup(t)
    code = ("import os, sys, time\n"
            "os.environ.setdefault('UCX_TLS', %r)\n"
            "from nixl._api import nixl_agent, nixl_agent_config\n"
            "agent = nixl_agent('trainer', nixl_agent_config(backends=['UCX']))\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n"
            "os._exit(0)\n" % INTEL_LIST)
    env = env_for("dgx", LD_LIBRARY_PATH=FAKE_CUDA_DIR, NIXL_TRAINER_CUDART=cudart, UCXTLS_TEMPLATE=HERE_TEMPLATE)
    p = subprocess.Popen([python, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, cwd=harness.EMPTY_HOME)
    try:
        said = ""
        while not said.endswith("ready\n"):  # NIXL's own log lines come first
            line = p.stdout.readline().decode()
            if not line:
                break
            said += line
        if not t.check("the trainer created its NIXL agent", said.endswith("ready\n"), said):
            return
        d = harness.run([CLI, "doctor", "--pid", str(p.pid)], env_for("dgx", preload=False), timeout=60)
        out = d.stdout.decode()
        print("\n".join("     | " + l for l in out.splitlines()), flush=True)
        t.check("doctor names NIXL's bundled libucp and its version (1.23.0)",
                re.search(r"^UCX +\S+/nixl_cu12\.libs/libucp-[0-9a-f]+\.so\.0\.0\.0 \(version 1\.23\.0\)$", out, re.M)
                is not None, out + d.stderr.decode())
        t.check("... the value the process's libucxtls.so derived from its start environment",
                "value       %s (derived by its libucxtls.so" % CUDA_LIST in out, out)
        t.check("... asked with the process's environment (the fake driver in its LD_LIBRARY_PATH): ok cuda_copy, exit 0",
                re.search(r"^ok +cuda_copy$", out, re.M) is not None and d.returncode == 0, out + d.stderr.decode())
    finally:
        p.stdin.close()
        p.wait(timeout=30)


@case("the matrix, as measured", tags=("wheels", "node"))
def print_matrix(t):
    if not MATRIX:
        t.skip("the matrix", "no cell ran")
        return
    print("| cell | UCX_TLS as the trainer saw it | outcome | NIXL's and UCX's words |")
    print("|---|---|---|---|")
    for cell, value, result, said in MATRIX:
        print("| %s | `%s` | %s | %s |" % (cell, value, result, "<br>".join("`%s`" % w for w in said)), flush=True)
    t.check("every cell recorded an outcome", all(r[2] for r in MATRIX))


if __name__ == "__main__":
    harness.main("the seed's mechanism through real NIXL, on a fake NVIDIA GPU")
