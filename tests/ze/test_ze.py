"""The data path on an Intel GPU node, without one.

A fake GPU driver (fake_gpu_driver.c) under Debian's real Level Zero loader (libze1, through
ZE_ENABLE_ALT_DRIVERS), whose device memory the host cannot touch; a UCX built with Level Zero,
given as a prefix in UCXTLSTEST_UCX_ZE (a site's own build: no package registry serves one), and
RAPIDS' libucx-cu12 1.22.0 wheel from PyPI (tests/wheels), a real build without Level Zero, as
NIXL's wheels and prime-rl's --with-ze=no builds are; the NIXL-like consumer (nixl_like.c) called
in-process by a Python trainer (trainer.py) that applies prime-rl's setdefault; the library
deciding from the replayed `iwarp` fixture: Intel GPUs on the xe driver, NICs UCX's rc cannot run on
(iWARP), so the library writes `all`, and the trainer's rc list has nothing to run on.

Cases without a tag need the loader alone; the `ucx_ze` cases need UCXTLSTEST_UCX_ZE, the `wheels`
cases the registry wheels; each prints SKIP with the reason without them. Every process is bounded (the consumer's own waits by
NIXL_LIKE_TIMEOUT, each process by a kill after PROCESS_TIMEOUT); UCX's output of every run is
printed into the test log, indented under the run's command line.
"""
import functools
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import BUILD_DIR, LIB, add_case, case, env_for  # noqa: E402
from datapath import (CONSUMER_TIMEOUT, NIXL_WORDS, NL_DETECTED_AS_HOST, NL_INIT, NL_OK, NL_PEER, OK_OUTCOME,  # noqa: E402
                      TRAINER_LIST, CODE_NAMES, all_ok, compile_consumer, describe, mem_types,
                      print_table, row, seen_value, ucx_env, ucx_words)
import datapath  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_GPU = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))
ZE_CHECK = os.environ.get("UCXTLSTEST_ZE_CHECK", os.path.join(BUILD_DIR, "tests", "ze", "ze_check"))
CLI = os.path.join(os.path.dirname(LIB), "ucxtls")
CC = os.environ.get("UCXTLSTEST_CC") or "cc"
MACHINE = "iwarp"  # an Intel GPU node without rc: tests/fixtures/machines.py
MATRIX = []  # datapath.row()s: printed by the last case
run_logged = functools.partial(datapath.run_logged, cwd=harness.EMPTY_HOME)
run_pair = functools.partial(datapath.run_pair, cwd=harness.EMPTY_HOME)


def gpu_env(env=None, **extra):
    """env (default: a clean one without the library) with the fake GPU visible to the loader."""
    env = dict(env if env is not None else env_for(preload=False))
    env["ZE_ENABLE_ALT_DRIVERS"] = FAKE_GPU
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


# --------------------------------------------------------------------------- the UCX builds
# The builds by the part they play here: "ze" a UCX with Level Zero (UCXTLSTEST_UCX_ZE), "noze"
# one without it, RAPIDS' wheel (harness.ucx_build).
BUILDS = {"ze": ("ze", "a UCX built with Level Zero"), "noze": ("rapids", "a UCX without Level Zero (RAPIDS' wheel)")}
NOZE = "RAPIDS' wheel (no Level Zero)"  # how the cells name the build without Level Zero


def need_ucx(t, variant):
    name, what = BUILDS[variant]
    build = harness.ucx_build_or_skip(t, name, what)
    if not build:
        t.exit()
    return build.prefix


_consumers = {}


def consumer(t, prefix):
    """libnixl_like.so compiled against the UCX at prefix (its headers, its libraries), once."""
    if prefix not in _consumers:
        out = os.path.join(harness._scratch, "nixl_like-%d" % len(_consumers))
        os.makedirs(out)
        lib, err = compile_consumer(CC, prefix, out)
        if not t.check("the NIXL-like consumer compiles against %s" % prefix, lib is not None, err or ""):
            t.exit()
        _consumers[prefix] = lib
    return _consumers[prefix]


def matrix_env(prefix, preload, **extra):
    env = gpu_env(env_for(MACHINE if preload else None, preload=preload, NIXL_LIKE_TIMEOUT=str(CONSUMER_TIMEOUT)))
    if preload:
        env["UCXTLS_DEBUG"] = "1"  # the library's decision line, in the log
    env.update({k: v for k, v in extra.items() if v is not None})
    return ucx_env(prefix, env)


def record(cell, res, outcome):
    MATRIX.append(row(cell, res, outcome))


# --------------------------------------------------------------------------- the fake GPU
@case("the real loader (libze1) loads the fake driver through ZE_ENABLE_ALT_DRIVERS: one GPU, its PCI address")
def loader_loads_fake(t):
    status, out = run_logged([ZE_CHECK, "devices"], gpu_env())
    t.equal("ze_check devices exits 0", status, 0)
    t.check("one Intel GPU (8086:0bd5) at 0000:29:00.0, as zeDevicePciGetPropertiesExt reports it",
            "8086:0bd5, type gpu, pci 0000:29:00.0" in out and "gpu 1:" not in out, out)
    status, out = run_logged([ZE_CHECK, "devices"], gpu_env(FAKEGPU_DEVICES="0000:3a:00.0,0001:9a:00.0"))
    t.check("FAKEGPU_DEVICES=two addresses: two GPUs, each with its address",
            status == 0 and "gpu 0:" in out and "pci 0000:3a:00.0" in out and "gpu 1:" in out and "pci 0001:9a:00.0" in out, out)
    status, out = run_logged([ZE_CHECK, "devices"], env_for(preload=False))
    t.check("control: without ZE_ENABLE_ALT_DRIVERS the loader finds no GPU on this machine (exit 2)",
            status == 2 and "zeInit" in out, out)


# What libze1 1.8.12 requires of a driver (measured with Debian's loader): all 17 non-"Exp" ze getters,
# all 17 zes getters and 12 zet getters, or zeInit fails with 0x78000001.
MANDATORY_GETTERS = (
    ["ze%sProcAddrTable" % n for n in (
        "GetGlobal GetDriver GetDevice GetContext GetCommandQueue GetCommandList GetImage GetFence GetEventPool "
        "GetEvent GetModule GetModuleBuildLog GetKernel GetSampler GetPhysicalMem GetMem GetVirtualMem").split()]
    + ["zes%sProcAddrTable" % n for n in (
        "GetDriver GetDevice GetScheduler GetPerformanceFactor GetPower GetFrequency GetEngine GetStandby "
        "GetFirmware GetMemory GetFabricPort GetTemperature GetPsu GetFan GetLed GetRas GetDiagnostics").split()]
    + ["zet%sProcAddrTable" % n for n in (
        "GetDevice GetContext GetCommandList GetModule GetKernel GetMetricGroup GetMetric GetMetricStreamer "
        "GetMetricQueryPool GetMetricQuery GetTracerExp GetDebug").split()])


@case("the fake driver exports the DDI getters the loader requires, and nothing else")
def driver_exports(t):
    p = subprocess.run(["nm", "-D", "--defined-only", FAKE_GPU], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    exported = {line.split()[-1] for line in p.stdout.decode().split("\n") if line.strip()}
    t.equal("nm -D lists the driver's dynamic symbols", p.returncode, 0, p.stdout.decode())
    t.check("every mandatory getter is exported (%d)" % len(MANDATORY_GETTERS),
            not set(MANDATORY_GETTERS) - exported, "missing: %s" % sorted(set(MANDATORY_GETTERS) - exported))
    t.check("nothing but zeGet*/zesGet*/zetGet*ProcAddrTable is exported",
            all(re.fullmatch(r"ze[st]?Get\w+ProcAddrTable", name) for name in exported),
            "also: %s" % sorted(n for n in exported if not re.fullmatch(r"ze[st]?Get\w+ProcAddrTable", n)))


@case("device, host and shared allocations: their properties, address ranges, and copies and fills done by the driver")
def allocations(t):
    trace = os.path.join(harness._scratch, "roundtrip.trace")
    status, out = run_logged([ZE_CHECK, "roundtrip"], gpu_env(FAKEGPU_TRACE=trace))
    t.equal("ze_check roundtrip exits 0", status, 0)
    for kind in ("device", "host", "shared"):
        t.check("%s: zeMemGetAllocProperties says %s, zeMemGetAddressRange gives the allocation from an inner pointer" % (kind, kind),
                "%s allocation: zeMemGetAllocProperties type %s, zeMemGetAddressRange base = the allocation length 1048576: ok" % (kind, kind) in out, out)
        t.check("%s: 1 MiB copied in, filled and copied back through an immediate list and a queue" % kind,
                "%s allocation: copy and fill through the driver, read back: ok" % kind in out, out)
    t.check("memory the driver did not allocate, and a freed allocation, are ZE_MEMORY_TYPE_UNKNOWN",
            "malloc'd memory: zeMemGetAllocProperties type unknown" in out and "freed device allocation: type unknown" in out, out)
    calls = open(trace).read().split("\n") if os.path.exists(trace) else []
    t.check("the copies and fills ran in the driver (FAKEGPU_TRACE: 9 gpu copies, 3 gpu fills)",
            calls.count("gpu copy") == 9 and calls.count("gpu fill") == 3, "trace: %r" % calls)


@case("device memory is not host memory: a host load or store faults (SIGSEGV), process_vm_readv gets EFAULT; host memory is the control")
def host_access_faults(t):
    for mode in ("touch-device", "write-device"):
        status, out = run_logged([ZE_CHECK, mode], gpu_env())
        t.check("%s: the process dies of SIGSEGV before its next line" % mode,
                status == -signal.SIGSEGV and "the host" not in out.split("...", 1)[-1], describe(status) + "\n" + out)
    status, out = run_logged([ZE_CHECK, "vm-readv"], gpu_env())
    t.check("process_vm_readv (UCX's cma) of device memory fails with EFAULT", status == 0 and "Bad address" in out, out)
    status, out = run_logged([ZE_CHECK, "touch-host"], gpu_env())
    t.check("control: a host allocation (zeMemAllocHost) is read and written by the host",
            status == 0 and "the host read it" in out and "the host wrote it" in out, describe(status) + "\n" + out)


# --------------------------------------------------------------------------- UCX 1.22 sees the GPU
@case("ucx_info -d of a UCX with Level Zero lists ze_copy on the fake GPU; not without the driver", tags=("ucx_ze",))
def ucx_info_lists_ze_copy(t):
    ze = need_ucx(t, "ze")
    info = os.path.join(ze, "bin", "ucx_info")
    status, out = run_logged([info, "-d"], ucx_env(ze, gpu_env()))
    t.check("ze build with the fake GPU: 'Memory domain: ze_cpy', 'Transport: ze_copy', 'Device: GPU0', type accelerator",
            status == 0 and "# Memory domain: ze_cpy" in out and "#      Transport: ze_copy" in out
            and "#         Device: GPU0" in out and "#           Type: accelerator" in out, out[-3000:])
    t.check("ze build: ze-device memory is detected and allocated by the ze_cpy domain",
            "ze-device (access,alloc,reg,cache,detect,dmabuf)" in out, out[-3000:])
    status, out = run_logged([info, "-d"], ucx_env(ze, env_for(preload=False)))
    t.check("control: the same build without the driver lists no ze_copy", status == 0 and "ze_copy" not in out, out[-2000:])


@case("ucx_info -d of RAPIDS' wheel (no Level Zero) with the fake GPU: no ze_copy, no ze_cpy domain", tags=("wheels",))
def ucx_info_noze(t):
    noze = need_ucx(t, "noze")
    status, out = run_logged([os.path.join(noze, "bin", "ucx_info"), "-d"], ucx_env(noze, gpu_env()))
    t.check("%s with the fake GPU: no ze_copy, no ze_cpy domain, tcp listed" % NOZE,
            status == 0 and "ze_copy" not in out and "ze_cpy" not in out and "Transport: tcp" in out, out[-2000:])


# --------------------------------------------------------------------------- the matrix
def cell_trainer_without_library(t):
    ze = need_ucx(t, "ze")
    res = run_pair(consumer(t, ze), matrix_env(ze, preload=False))
    out = res["initiator"][1]
    t.equal("the trainer's setdefault applied its literal list", seen_value(out), TRAINER_LIST)
    t.check("both sides fail at ucp_init (no rc here: 'no usable transports/devices')",
            all(res[r][0] == NL_INIT for r in res) and "no usable transports/devices" in out, describe(res["initiator"][0]))
    t.check("UCX names the unavailable transports on stdout",
            "transports 'rc_x','rc','dc_x','dc','cuda_copy' are not available" in out, out)
    record("trainer, no library", res, "ucp_init fails")


def cell_trainer_with_library(t):
    ze = need_ucx(t, "ze")
    trace = os.path.join(harness._scratch, "with-library.trace")
    env = matrix_env(ze, preload=True, FAKEGPU_TRACE=trace)
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    copies = open(trace).read().split("\n").count("gpu copy") if os.path.exists(trace) else 0
    # The consumer's own copies: the target fills and checks its buffer (2), the initiator fills
    # both of its buffers and checks one (3). Any further one is UCX's ze_copy moving the data.
    t.check("UCX moved the device memory through the driver's copy engine: %d copies, the consumer's own are 5" % copies,
            copies > 5, "FAKEGPU_TRACE counted %d" % copies)
    t.equal("the library set UCX_TLS=all before the trainer's setdefault (which then kept it)",
            seen_value(res["initiator"][1]), "all")
    t.check("the library's debug line names the node: no RDMA device UCX's rc runs on",
            "ucxtls: set UCX_TLS=all" in out and "UCX does not run on iWARP" in out, out)
    t.equal("ucp_mem_query reports ze-device on both sides", sorted(set(mem_types(out))), ["ze-device"])
    t.check("put and get move the data: every byte checked through the driver on both sides",
            all_ok(res), "%s / %s" % (describe(res["initiator"][0]), describe(res["target"][0])))
    record("trainer + library (`all`)", res, OK_OUTCOME if all_ok(res) else "FAILED")


def cell_value(t, value, expect_ok, force_sizes=()):
    """UCX_TLS=value (set by the launcher: the trainer's setdefault keeps it), no library."""
    ze = need_ucx(t, "ze")
    env = matrix_env(ze, preload=False, UCX_TLS=value)
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    if expect_ok:
        t.equal("ucp_mem_query reports ze-device", sorted(set(mem_types(out))), ["ze-device"])
        ok = all_ok(res)
        t.check("put and get move the data, checked through the driver", ok, describe(res["initiator"][0]))
        record("UCX_TLS=" + value, res, OK_OUTCOME if ok else "FAILED")
        return
    t.equal("ucp_mem_query reports host for the device memory", sorted(set(mem_types(out))), ["host"])
    t.check("both sides refuse the registration, in NIXL's words (%r)" % NIXL_WORDS,
            all(res[r][0] == NL_DETECTED_AS_HOST for r in res) and NIXL_WORDS in out, describe(res["initiator"][0]))
    t.check("UCX warns that cuda_copy is not available", "transport 'cuda_copy' is not available" in out, out)
    record("UCX_TLS=" + value, res, "NIXL refuses: " + NIXL_WORDS)
    for size in force_sizes:
        print("     -- forced on (unlike NIXL): a %d-byte put and get of the memory UCX took for host" % size, flush=True)
        res = run_pair(consumer(t, ze), env, size=size, force=True)
        statuses = [res[r][0] for r in ("initiator", "target")]
        t.check("%d bytes forced: the transfer does not work (no side ends with the data moved)" % size,
                NL_OK not in statuses and None not in statuses, " / ".join(describe(s) for s in statuses))
        crashed = [r for r in res if res[r][0] is not None and res[r][0] < 0]
        peers = [r for r in res if res[r][0] == NL_PEER]
        if crashed:
            t.check("%d bytes forced: the %s's crash (%s) is reported by its peer as a peer failure, not a hang" % (
                size, crashed[0], describe(res[crashed[0]][0])), len(peers) == 1 and "peer failure" in res[peers[0]][1],
                "peer statuses: %r" % statuses)
        where = ""
        for r in crashed:
            frames = [line for line in res[r][1].split("\n") if "uct_" in line and "(" in line]
            where = frames[0].split("(", 1)[1].split("+", 1)[0] if frames else ""
        record("UCX_TLS=%s, forced, %d B" % (value, size), res,
               ("%s dies of %s%s" % (crashed[0], describe(res[crashed[0]][0]).replace("killed by ", ""),
                                     " in " + where if where else "")) if crashed else
               " / ".join(CODE_NAMES.get(s, describe(s)) for s in statuses))


def cell_template(t):
    ze = need_ucx(t, "ze")
    env = matrix_env(ze, preload=True, UCXTLS_TEMPLATE="sm,self,tcp,{copy}")
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    t.equal("UCXTLS_TEMPLATE='sm,self,tcp,{copy}' composed sm,self,tcp,ze_copy on this Intel node",
            seen_value(res["initiator"][1]), "sm,self,tcp,ze_copy")
    t.equal("ucp_mem_query reports ze-device", sorted(set(mem_types(out))), ["ze-device"])
    ok = all_ok(res)
    t.check("put and get move the data, checked through the driver", ok, describe(res["initiator"][0]))
    t.check("UCX prints no warning", not ucx_words(out), "\n".join(ucx_words(out)))
    record("library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", res, OK_OUTCOME if ok else "FAILED")


def cell_repair(t):
    ze = need_ucx(t, "ze")
    env = matrix_env(ze, preload=True, UCX_TLS="tcp,cuda_copy", UCXTLS_REPAIR="1")
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    t.equal("UCXTLS_REPAIR=1 rewrote the kept tcp,cuda_copy to tcp,ze_copy", seen_value(res["initiator"][1]), "tcp,ze_copy")
    t.check("the library's line says why", "ucxtls: repair UCX_TLS=tcp,ze_copy" in out, out)
    t.equal("ucp_mem_query reports ze-device", sorted(set(mem_types(out))), ["ze-device"])
    ok = all_ok(res)
    t.check("put and get move the data over tcp, checked through the driver", ok, describe(res["initiator"][0]))
    record("library, UCXTLS_REPAIR=1, UCX_TLS=tcp,cuda_copy", res, OK_OUTCOME if ok else "FAILED")


def cell_noze(t):
    noze = need_ucx(t, "noze")
    lib = consumer(t, noze)
    rows = (("trainer + library (`all`)", dict(preload=True), "all"),
            ("library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", dict(preload=True, UCXTLS_TEMPLATE="sm,self,tcp,{copy}"),
             "sm,self,tcp,ze_copy"),
            ("trainer, no library", dict(preload=False), TRAINER_LIST))
    for name, kw, value in rows:
        print("     -- %s: %s" % (NOZE, name), flush=True)
        res = run_pair(lib, matrix_env(noze, **kw))
        out = res["initiator"][1] + res["target"][1]
        t.equal("%s, %s: UCX_TLS=%s" % (NOZE, name, value), seen_value(res["initiator"][1]), value)
        statuses = [res[r][0] for r in res]
        if value == TRAINER_LIST:
            t.check("%s, %s: ucp_init fails" % (NOZE, name), statuses == [NL_INIT, NL_INIT], str(statuses))
            outcome = "ucp_init fails"
        else:
            t.equal("%s, %s: ucp_mem_query reports host" % (NOZE, name), sorted(set(mem_types(out))), ["host"])
            t.check("%s, %s: the registration is refused (%r)" % (NOZE, name, NIXL_WORDS),
                    statuses == [NL_DETECTED_AS_HOST] * 2 and NIXL_WORDS in out, str(statuses))
            outcome = "NIXL refuses: " + NIXL_WORDS
        if "ze_copy" in value:
            t.check("%s, %s: UCX warns that ze_copy is not available" % (NOZE, name),
                    "transport 'ze_copy' is not available" in out, out)
        record(NOZE + ": " + name, res, outcome)


add_case("matrix: the trainer without the library (its literal rc list; no rc here) fails at ucp_init",
         cell_trainer_without_library, tags=("ucx_ze",))
add_case("matrix: the trainer with the library (`all` on this GPU node without rc) registers and moves GPU memory",
         cell_trainer_with_library, tags=("ucx_ze",))
add_case("matrix: sm,self,tcp,cuda_copy (the CUDA family's copy transport): host; NIXL refuses; forced, the transfer fails and the crash is reported",
         cell_value, "sm,self,tcp,cuda_copy", False, (4096, 1 << 20), tags=("ucx_ze",))
add_case("matrix: sm,self,tcp,ze_copy set by hand: ze-device; the transfer works", cell_value, "sm,self,tcp,ze_copy", True,
         tags=("ucx_ze",))
add_case("matrix: sm,self,tcp,ze_copy composed by UCXTLS_TEMPLATE='sm,self,tcp,{copy}': ze-device; the transfer works",
         cell_template, tags=("ucx_ze",))
add_case("matrix: UCXTLS_REPAIR=1 on a kept tcp,cuda_copy repairs it to tcp,ze_copy; the transfer works", cell_repair,
         tags=("ucx_ze",))
add_case("matrix: a UCX without Level Zero (RAPIDS' wheel) fails whatever the value (all, sm,self,tcp,ze_copy, the trainer's list)",
         cell_noze, tags=("wheels",))


# --------------------------------------------------------------------------- doctor, perftest
@case("ucxtls doctor --ucx: a UCX with Level Zero serves ze_copy on this Intel node", tags=("ucx_ze",))
def doctor(t):
    ze = need_ucx(t, "ze")
    env = env_for(MACHINE, preload=False)
    status, out = run_logged([CLI, "doctor", "--ucx", ze], env)
    t.check("ze build, the value in effect here (all): exit 0, its version named, ze_copy among the build's transports",
            status == 0 and "(version 1." in out and "ze_copy" in out.split("this UCX", 1)[-1].split("\n", 1)[0], out)
    status, out = run_logged([CLI, "doctor", "--ucx", ze, "--template", "sm,self,tcp,{copy}"], env)
    t.check("ze build, sm,self,tcp,{copy}: 'ok ze_copy'", status == 0 and "ok          ze_copy" in out, out)


@case("ucxtls doctor --ucx: RAPIDS' wheel lacks Level Zero support for this Intel node", tags=("wheels",))
def doctor_noze(t):
    noze = need_ucx(t, "noze")
    env = env_for(MACHINE, preload=False)
    for extra in ([], ["--template", "sm,self,tcp,{copy}"]):
        status, out = run_logged([CLI, "doctor", "--ucx", noze] + extra, env)
        t.check("%s%s: exit 1, and its 'build' line names the missing Level Zero support" % (
            NOZE, ", " + " ".join(extra) if extra else ""), status == 1 and "\nbuild       this UCX was built without Level Zero (ze) "
            "support: NIXL cannot register Intel GPU memory whatever UCX_TLS says; rebuild UCX with --with-ze" in out, out)


def perftest(t, test):
    ze = need_ucx(t, "ze")
    env = ucx_env(ze, gpu_env(env_for(MACHINE, preload=True, UCXTLS_DEBUG="1")))
    status, sstatus, out, final = datapath.perftest_pair(ze, env, harness.EMPTY_HOME, test, "ze-device")
    t.check("the library, preloaded into ucx_perftest (exec'd directly), set UCX_TLS=all", "ucxtls: set UCX_TLS=all" in out, out)
    t.check("ucx_perftest -t %s -m ze-device under the library's value (all), two processes: completes with a Final line" % test,
            status == 0 and final and sstatus == 0, describe(status))
    MATRIX.append(("ucx_perftest -t %s -m ze-device, library (`all`)" % test, "all", "ze-device",
                   ("Final: %s MB/s (64 KiB, fake GPU: a copy engine that is memcpy)" % final) if final else "FAILED", []))
    # The failing side, as far as perftest shows it: it allocates through UCX, so no "treated as host".
    env = ucx_env(ze, gpu_env(env_for(preload=False, UCX_TLS="sm,self,tcp,cuda_copy")))
    perf = os.path.join(ze, "bin", "ucx_perftest")
    status, out = run_logged([perf, "-l", "-t", test, "-m", "ze-device", "-s", "65536", "-n", "10"], env, timeout=60)
    t.check("control: under sm,self,tcp,cuda_copy perftest cannot even allocate ze-device memory (loopback -l)",
            status not in (0, None) and "failed to allocate memory" in out.lower(), out)
    MATRIX.append(("ucx_perftest -t %s -m ze-device, sm,self,tcp,cuda_copy" % test, "sm,self,tcp,cuda_copy", "-",
                   "fails: " + "; ".join(w for w in ucx_words(out) if "allocat" in w.lower())[:120], []))


def perftest_noze(t, test):
    noze = need_ucx(t, "noze")
    env = ucx_env(noze, gpu_env(env_for(MACHINE, preload=True)))
    status, out = run_logged([os.path.join(noze, "bin", "ucx_perftest"), "-l", "-t", test, "-m", "ze-device", "-s", "65536",
                              "-n", "10"], env, timeout=60)
    t.check("%s: its perftest has no ze allocator, under the library's value too (loopback -l)" % NOZE,
            status not in (0, None) and "Unsupported memory types ze-device<->ze-device" in out, out)
    MATRIX.append(("%s: ucx_perftest -t %s -m ze-device, library (`all`)" % (NOZE, test), "all", "-",
                   "fails: Unsupported memory types ze-device<->ze-device", []))


add_case("ucx_perftest -m ze-device ucp_put_bw under the library's value", perftest, "ucp_put_bw", tags=("ucx_ze",))
add_case("ucx_perftest -m ze-device tag_bw under the library's value", perftest, "tag_bw", tags=("ucx_ze",))
for _test in ("ucp_put_bw", "tag_bw"):
    add_case("ucx_perftest -m ze-device %s: RAPIDS' wheel has no ze allocator" % _test, perftest_noze, _test, tags=("wheels",))


def print_matrix(t):
    if not MATRIX:
        t.skip("the matrix", "no cell ran (the UCX builds are absent, or the cells were not selected)")
        return
    print_table(MATRIX)
    t.check("every cell recorded an outcome", all(row[3] for row in MATRIX))


# The cells of each build run in a CTest test of their own, so each prints its part of the table.
add_case("the matrix, as measured: a UCX with Level Zero", print_matrix, tags=("ucx_ze",))
add_case("the matrix, as measured: RAPIDS' wheel (no Level Zero)", print_matrix, tags=("wheels",))


if __name__ == "__main__":
    harness.main("the data path on a (fake) Intel GPU: Level Zero, UCX 1.22, NIXL's registration")
