"""The data path on an Intel GPU node, without one (DESIGN §4, issue 24).

A fake GPU driver (fake_gpu_driver.c) under Debian's real Level Zero loader (libze1, through
ZE_ENABLE_ALT_DRIVERS), whose device memory the host cannot touch; UCX 1.22.0 built twice by
tests/ucx/build_ucx.sh (--with-ze, --with-ze=no; scripts/test.sh exports the prefixes as
UCXTLSTEST_UCX122_ZE / UCXTLSTEST_UCX122_NOZE); the NIXL-like consumer (nixl_like.c) called
in-process by a Python trainer (trainer.py) that applies prime-rl's setdefault; the library
deciding from the replayed `iwarp` fixture: Intel GPUs on the xe driver, NICs UCX's rc cannot run on
(iWARP), so the library writes `all`, and the trainer's rc list has nothing to run on.

Cases without a tag need the loader alone; the `ucx122` cases need the UCX 1.22 builds and print
SKIP with the reason without them. Every process is bounded (the consumer's own waits by
NIXL_LIKE_TIMEOUT, each process by a kill after PROCESS_TIMEOUT); UCX's output of every run is
printed into the test log, indented under the run's command line.
"""
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import BUILD_DIR, LIB, add_case, case, env_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_GPU = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))
ZE_CHECK = os.environ.get("UCXTLSTEST_ZE_CHECK", os.path.join(BUILD_DIR, "tests", "ze", "ze_check"))
CLI = os.path.join(os.path.dirname(LIB), "ucxtls")
CC = os.environ.get("UCXTLSTEST_CC") or "cc"
MACHINE = "iwarp"  # an Intel GPU node without rc: tests/fixtures/machines.py
TRAINER_LIST = "rc_x,rc,dc_x,dc,cuda_copy"  # prime-rl's trainer (transports/weights/nixl/agent.py)
CONSUMER_TIMEOUT = 20  # NIXL_LIKE_TIMEOUT: the consumer's bound on each wait for its peer
PROCESS_TIMEOUT = 90  # each process is killed after this
# nixl_like.h's codes
NL_OK, NL_INIT, NL_DETECTED_AS_HOST, NL_TRANSFER, NL_DATA, NL_PEER, NL_GPU = 0, 10, 20, 30, 31, 40, 50
CODE_NAMES = {0: "registered and moved", 10: "ucp_init failed", 11: "ucp_mem_map failed",
              20: "refused: VRAM detected as host", 30: "transfer failed", 31: "data wrong",
              40: "peer failure", 50: "GPU driver failure", 2: "usage"}
NIXL_WORDS = "VRAM memory is detected as host by UCX"
MATRIX = []  # (cell, value UCX saw, memory type, outcome, UCX's words): printed by the last case


def log(text, indent="     | "):
    for line in text.rstrip("\n").split("\n"):
        print(indent + line, flush=True)


def gpu_env(env=None, **extra):
    """env (default: a clean one without the library) with the fake GPU visible to the loader."""
    env = dict(env if env is not None else env_for(preload=False))
    env["ZE_ENABLE_ALT_DRIVERS"] = FAKE_GPU
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def run_logged(argv, env, timeout=PROCESS_TIMEOUT):
    """Runs argv (exec'd directly); prints the command and its output; returns (status, output).
    status is the exit code, -SIGNAL when killed by a signal, or None when it hung."""
    print("     $ " + " ".join(argv), flush=True)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=harness.EMPTY_HOME)
    status, text = finish(p, timeout)
    log(text)
    print("     (%s)" % describe(status), flush=True)
    return status, text


def finish(p, timeout=PROCESS_TIMEOUT):
    """(status, output) of Popen p, killed after timeout: status None then."""
    try:
        out, _ = p.communicate(timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        status = None
    return status, out.decode(errors="replace")


def describe(status):
    if status is None:
        return "hung: killed after %d s" % PROCESS_TIMEOUT
    if status < 0:
        return "killed by %s" % signal.Signals(-status).name
    return "exit %d" % status


# --------------------------------------------------------------------------- the UCX builds
def ucx122(variant):
    """(prefix, None) of the UCX 1.22.0 build `variant` ("ze" or "noze"), or (None, why).
    scripts/test.sh exports UCXTLSTEST_UCX122_ZE / _NOZE (or _ZE_SKIP / _NOZE_SKIP: why not)."""
    var = "UCXTLSTEST_UCX122_" + variant.upper()
    prefix = os.environ.get(var)
    if not prefix:
        return None, os.environ.get(var + "_SKIP") or (
            "%s is unset: scripts/test.sh builds UCX 1.22 (tests/ucx/build_ucx.sh %s) and sets it" % (var, variant))
    if not os.access(os.path.join(prefix, "bin", "ucx_info"), os.X_OK):
        return None, "%s=%s holds no bin/ucx_info" % (var, prefix)
    return prefix, None


def need_ucx(t, variant):
    prefix, why = ucx122(variant)
    if not prefix:
        t.skip("UCX 1.22 %s build" % variant, why)
        t.exit()
    return prefix


def ucx_env(prefix, env):
    """env running the UCX at prefix (its libraries first; UCX then loads its modules from
    prefix/lib/ucx, beside libucs). UCX_HANDLE_ERRORS=bt: a crash prints UCX's backtrace."""
    env = dict(env)
    env["LD_LIBRARY_PATH"] = os.path.join(prefix, "lib")
    env["UCX_HANDLE_ERRORS"] = "bt"
    return env


_consumers = {}


def consumer(t, prefix):
    """libnixl_like.so compiled against the UCX at prefix (its headers, its libraries), once."""
    if prefix not in _consumers:
        out = os.path.join(harness._scratch, "nixl_like-%d" % len(_consumers))
        os.makedirs(out)
        lib = os.path.join(out, "libnixl_like.so")
        argv = [CC, "-std=gnu11", "-O1", "-g", "-shared", "-fPIC", "-fvisibility=hidden",
                "-I" + os.path.join(prefix, "include"), "-o", lib, os.path.join(HERE, "nixl_like.c"),
                "-L" + os.path.join(prefix, "lib"), "-lucp", "-lucs", "-lze_loader", "-ldl"]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if not t.check("the NIXL-like consumer compiles against %s" % prefix, p.returncode == 0,
                       " ".join(argv) + "\n" + p.stdout.decode(errors="replace")):
            t.exit()
        _consumers[prefix] = lib
    return _consumers[prefix]


# --------------------------------------------------------------------------- the trainer, twice
def run_pair(lib, env, size=4096, force=False):
    """The target and the initiator: two trainer processes (python3 exec'd directly with env,
    LD_PRELOAD included when the cell preloads the library), joined by a socket pair. Returns
    {role: (status, output)}; every process bounded."""
    a, b = socket.socketpair()
    procs = {}
    try:
        for role, s in (("target", a), ("initiator", b)):
            argv = [sys.executable, os.path.join(HERE, "trainer.py"), lib, role, str(s.fileno()), str(size)]
            if force:
                argv.append("force")
            procs[role] = (argv, subprocess.Popen(argv, env=env, pass_fds=[s.fileno()], stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, cwd=harness.EMPTY_HOME))
    finally:
        a.close()
        b.close()
    results = {}
    for role, (argv, p) in procs.items():
        results[role] = finish(p)
    for role, (argv, _) in procs.items():
        print("     $ %s   [%s]" % (" ".join(argv[1:]), role), flush=True)
        log(results[role][1])
        print("     (%s: %s)" % (role, describe(results[role][0]) + (
            " = " + CODE_NAMES.get(results[role][0], "?") if results[role][0] is not None and results[role][0] >= 0 else "")),
              flush=True)
    return results


def mem_types(output):
    return [line.split("memory type ", 1)[1].strip() for line in output.split("\n") if "ucp_mem_query: memory type" in line]


def ucx_words(output):
    """UCX's own WARN/ERROR lines, without the timestamp and host prefix."""
    words = []
    for line in output.split("\n"):
        for level in ("UCX  WARN  ", "UCX  ERROR "):
            if level in line:
                words.append(level.strip().replace("  ", " ") + " " + line.split(level, 1)[1].strip())
    return words


def seen_value(output):
    for line in output.split("\n"):
        if line.startswith("trainer ") and "UCX_TLS=" in line:
            return line.split("UCX_TLS=", 1)[1].strip()
    return "?"


def matrix_env(prefix, preload, **extra):
    env = gpu_env(env_for(MACHINE if preload else None, preload=preload, NIXL_LIKE_TIMEOUT=str(CONSUMER_TIMEOUT)))
    if preload:
        env["UCXTLS_DEBUG"] = "1"  # the library's decision line, in the log
    env.update({k: v for k, v in extra.items() if v is not None})
    return ucx_env(prefix, env)


def record(cell, res, outcome):
    out = res["initiator"][1] + res["target"][1]
    types = sorted(set(mem_types(out))) or ["(no context)"]
    words = sorted(set(ucx_words(out)))
    MATRIX.append((cell, seen_value(res["initiator"][1]), "/".join(types), outcome, words))


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
@case("ucx_info -d of the --with-ze build lists ze_copy on the fake GPU; not without the driver, never in the --with-ze=no build",
      tags=("ucx122",))
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
    noze, why = ucx122("noze")
    if not noze:
        t.skip("the --with-ze=no build", why)
        return
    status, out = run_logged([os.path.join(noze, "bin", "ucx_info"), "-d"], ucx_env(noze, gpu_env()))
    t.check("--with-ze=no build with the fake GPU: no ze_copy, no ze_cpy domain",
            status == 0 and "ze_copy" not in out and "ze_cpy" not in out, out[-2000:])


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
    env = matrix_env(ze, preload=True)
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    t.equal("the library set UCX_TLS=all before the trainer's setdefault (which then kept it)",
            seen_value(res["initiator"][1]), "all")
    t.check("the library's debug line names the node: no RDMA device UCX's rc runs on",
            "ucxtls: set UCX_TLS=all" in out and "UCX does not run on iWARP" in out, out)
    t.equal("ucp_mem_query reports ze-device on both sides", sorted(set(mem_types(out))), ["ze-device"])
    t.check("put and get move the data: every byte checked through the driver on both sides",
            all(res[r][0] == NL_OK for r in res), "%s / %s" % (describe(res["initiator"][0]), describe(res["target"][0])))
    record("trainer + library (`all`)", res, "registered, put+get verified" if all(res[r][0] == NL_OK for r in res) else "FAILED")


def cell_value(t, value, expect_ok, force_sizes=()):
    """UCX_TLS=value (set by the launcher: the trainer's setdefault keeps it), no library."""
    ze = need_ucx(t, "ze")
    env = matrix_env(ze, preload=False, UCX_TLS=value)
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    if expect_ok:
        t.equal("ucp_mem_query reports ze-device", sorted(set(mem_types(out))), ["ze-device"])
        ok = all(res[r][0] == NL_OK for r in res)
        t.check("put and get move the data, checked through the driver", ok, describe(res["initiator"][0]))
        record("UCX_TLS=" + value, res, "registered, put+get verified" if ok else "FAILED")
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
    ok = all(res[r][0] == NL_OK for r in res)
    t.check("put and get move the data, checked through the driver", ok, describe(res["initiator"][0]))
    t.check("UCX prints no warning", not ucx_words(out), "\n".join(ucx_words(out)))
    record("library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", res, "registered, put+get verified" if ok else "FAILED")


def cell_repair(t):
    ze = need_ucx(t, "ze")
    env = matrix_env(ze, preload=True, UCX_TLS="tcp,cuda_copy", UCXTLS_REPAIR="1")
    res = run_pair(consumer(t, ze), env)
    out = res["initiator"][1] + res["target"][1]
    t.equal("UCXTLS_REPAIR=1 rewrote the kept tcp,cuda_copy to tcp,ze_copy", seen_value(res["initiator"][1]), "tcp,ze_copy")
    t.check("the library's line says why", "ucxtls: repair UCX_TLS=tcp,ze_copy" in out, out)
    t.equal("ucp_mem_query reports ze-device", sorted(set(mem_types(out))), ["ze-device"])
    ok = all(res[r][0] == NL_OK for r in res)
    t.check("put and get move the data over tcp, checked through the driver", ok, describe(res["initiator"][0]))
    record("library, UCXTLS_REPAIR=1, UCX_TLS=tcp,cuda_copy", res, "registered, put+get verified" if ok else "FAILED")


def cell_noze(t):
    noze = need_ucx(t, "noze")
    lib = consumer(t, noze)
    rows = (("trainer + library (`all`)", dict(preload=True), "all"),
            ("library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", dict(preload=True, UCXTLS_TEMPLATE="sm,self,tcp,{copy}"),
             "sm,self,tcp,ze_copy"),
            ("trainer, no library", dict(preload=False), TRAINER_LIST))
    for name, kw, value in rows:
        print("     -- --with-ze=no: %s" % name, flush=True)
        res = run_pair(lib, matrix_env(noze, **kw))
        out = res["initiator"][1] + res["target"][1]
        t.equal("--with-ze=no, %s: UCX_TLS=%s" % (name, value), seen_value(res["initiator"][1]), value)
        statuses = [res[r][0] for r in res]
        if value == TRAINER_LIST:
            t.check("--with-ze=no, %s: ucp_init fails" % name, statuses == [NL_INIT, NL_INIT], str(statuses))
            outcome = "ucp_init fails"
        else:
            t.equal("--with-ze=no, %s: ucp_mem_query reports host" % name, sorted(set(mem_types(out))), ["host"])
            t.check("--with-ze=no, %s: the registration is refused (%r)" % (name, NIXL_WORDS),
                    statuses == [NL_DETECTED_AS_HOST] * 2 and NIXL_WORDS in out, str(statuses))
            outcome = "NIXL refuses: " + NIXL_WORDS
        if "ze_copy" in value:
            t.check("--with-ze=no, %s: UCX warns that ze_copy is not available" % name,
                    "transport 'ze_copy' is not available" in out, out)
        record("--with-ze=no: " + name, res, outcome)


add_case("matrix: the trainer without the library (its literal rc list; no rc here) fails at ucp_init",
         cell_trainer_without_library, tags=("ucx122",))
add_case("matrix: the trainer with the library (`all` on this GPU node without rc) registers and moves GPU memory",
         cell_trainer_with_library, tags=("ucx122",))
add_case("matrix: sm,self,tcp,cuda_copy (the CUDA family's copy transport): host; NIXL refuses; forced, the transfer fails and the crash is reported",
         cell_value, "sm,self,tcp,cuda_copy", False, (4096, 1 << 20), tags=("ucx122",))
add_case("matrix: sm,self,tcp,ze_copy set by hand: ze-device; the transfer works", cell_value, "sm,self,tcp,ze_copy", True,
         tags=("ucx122",))
add_case("matrix: sm,self,tcp,ze_copy composed by UCXTLS_TEMPLATE='sm,self,tcp,{copy}': ze-device; the transfer works",
         cell_template, tags=("ucx122",))
add_case("matrix: UCXTLS_REPAIR=1 on a kept tcp,cuda_copy repairs it to tcp,ze_copy; the transfer works", cell_repair,
         tags=("ucx122",))
add_case("matrix: the --with-ze=no build fails whatever the value (all, sm,self,tcp,ze_copy, the trainer's list)", cell_noze,
         tags=("ucx122",))


# --------------------------------------------------------------------------- doctor, perftest
@case("ucxtls doctor --ucx: the --with-ze=no build lacks Level Zero support for this Intel node; the --with-ze build serves ze_copy",
      tags=("ucx122",))
def doctor(t):
    ze = need_ucx(t, "ze")
    env = env_for(MACHINE, preload=False)
    status, out = run_logged([CLI, "doctor", "--ucx", ze], env)
    t.check("ze build, the value in effect here (all): exit 0, version 1.22.0, ze_copy among the build's transports",
            status == 0 and "(version 1.22.0)" in out and "ze_copy" in out.split("this UCX", 1)[-1].split("\n", 1)[0], out)
    status, out = run_logged([CLI, "doctor", "--ucx", ze, "--template", "sm,self,tcp,{copy}"], env)
    t.check("ze build, sm,self,tcp,{copy}: 'ok ze_copy'", status == 0 and "ok          ze_copy" in out, out)
    noze, why = ucx122("noze")
    if not noze:
        t.skip("the --with-ze=no build", why)
        return
    for extra in ([], ["--template", "sm,self,tcp,{copy}"]):
        status, out = run_logged([CLI, "doctor", "--ucx", noze] + extra, env)
        t.check("--with-ze=no build%s: exit 1, and the missing Level Zero support named (ze_copy)" % (
            ", " + " ".join(extra) if extra else ""), status == 1 and "ze_copy" in out and (
                "Level Zero" in out or "without ze" in out or "no ze_copy" in out), out)


def perftest(t, test):
    ze = need_ucx(t, "ze")
    perf = os.path.join(ze, "bin", "ucx_perftest")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = str(s.getsockname()[1])
    s.close()
    env = ucx_env(ze, gpu_env(env_for(MACHINE, preload=True, UCXTLS_DEBUG="1")))
    server = subprocess.Popen([perf, "-p", port, "-m", "ze-device"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, cwd=harness.EMPTY_HOME)
    status, out = None, ""
    try:
        import time
        time.sleep(1)
        status, out = run_logged([perf, "127.0.0.1", "-p", port, "-t", test, "-m", "ze-device", "-s", "65536",
                                  "-n", "200", "-w", "20"], env)
    finally:
        sstatus, sout = finish(server, 30)
        print("     [the server, ucx_perftest -p %s -m ze-device: %s]" % (port, describe(sstatus)), flush=True)
        log(sout)
    final = [line for line in out.split("\n") if line.startswith("Final:")]
    t.check("the library, preloaded into ucx_perftest (exec'd directly), set UCX_TLS=all", "ucxtls: set UCX_TLS=all" in out, out)
    t.check("ucx_perftest -t %s -m ze-device under the library's value (all), two processes: completes with a Final line" % test,
            status == 0 and final and sstatus == 0, describe(status))
    MATRIX.append(("ucx_perftest -t %s -m ze-device, library (`all`)" % test, "all", "ze-device",
                   ("Final: %s MB/s (64 KiB, fake GPU: a copy engine that is memcpy)" % final[0].split()[5]) if final else "FAILED",
                   []))
    # The failing side, as far as perftest shows it: it allocates through UCX, so no "treated as host".
    env = ucx_env(ze, gpu_env(env_for(preload=False, UCX_TLS="sm,self,tcp,cuda_copy")))
    status, out = run_logged([perf, "-l", "-t", test, "-m", "ze-device", "-s", "65536", "-n", "10"], env, timeout=60)
    t.check("control: under sm,self,tcp,cuda_copy perftest cannot even allocate ze-device memory (loopback -l)",
            status not in (0, None) and "failed to allocate memory" in out.lower(), out)
    MATRIX.append(("ucx_perftest -t %s -m ze-device, sm,self,tcp,cuda_copy" % test, "sm,self,tcp,cuda_copy", "-",
                   "fails: " + "; ".join(w for w in ucx_words(out) if "allocat" in w.lower())[:120], []))


add_case("ucx_perftest -m ze-device ucp_put_bw under the library's value", perftest, "ucp_put_bw", tags=("ucx122",))
add_case("ucx_perftest -m ze-device tag_bw under the library's value", perftest, "tag_bw", tags=("ucx122",))


@case("the matrix, as measured (printed for docs/which-ucx.md)", tags=("ucx122",))
def print_matrix(t):
    if not MATRIX:
        t.skip("the matrix", "no cell ran (the UCX 1.22 builds are absent, or the cells were not selected)")
        return
    print("| cell | UCX_TLS as UCX saw it | ucp_mem_query | outcome | UCX's words |")
    print("|---|---|---|---|---|")
    for cell, value, types, outcome, words in MATRIX:
        print("| %s | `%s` | %s | %s | %s |" % (cell, value, types, outcome, "<br>".join("`%s`" % w for w in words)))
    t.check("every cell recorded an outcome", all(row[3] for row in MATRIX))


if __name__ == "__main__":
    harness.main("the data path on a (fake) Intel GPU: Level Zero, UCX 1.22, NIXL's registration")
