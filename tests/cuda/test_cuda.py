"""A fake NVIDIA GPU for the UCX builds users load, on a machine without a GPU.

The fake driver (fake_cuda.c, fake_cuda_memory.c: libcuda.so.1; fake_nvml.c: libnvidia-ml.so.1,
both in <build>/tests/cuda/lib) is found first through LD_LIBRARY_PATH; its device memory faults
on a host load or store (tests/common/fake_device_memory.c). Cases without a tag drive the
driver alone (cuda_check.c). The `wheels` cases run the real UCX of the wheels users install
(tests/wheels/install_wheels.sh: RAPIDS' libucx-cu12 with UCX 1.22.0, NIXL's nixl-cu12 with its
bundled UCX): the venv is $UCXTLSTEST_WHEELS (scripts/test.sh sets it), else they print SKIP with
the reason. Every process is bounded and its output printed into the log under its command line.
"""
import itertools
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))  # harness.py
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ze"))  # datapath.py: run_logged, describe
import harness  # noqa: E402
from harness import BUILD_DIR, case, env_for  # noqa: E402
from datapath import describe  # noqa: E402
import datapath  # noqa: E402

FAKE_DIR = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))
CUDA_CHECK = os.environ.get("UCXTLSTEST_CUDA_CHECK", os.path.join(BUILD_DIR, "tests", "cuda", "cuda_check"))
CC = os.environ.get("UCXTLSTEST_CC") or "cc"
PY_SITE = os.path.join("lib", "python3.11", "site-packages")


def run_logged(argv, env, timeout=120):
    return datapath.run_logged(argv, env, harness.EMPTY_HOME, timeout=timeout)


def fake_env(trace=None, fake=True, **extra):
    """A clean environment (no ucxtls) with the fake driver first, or (fake=False) without it."""
    env = env_for(preload=False)
    libs = [FAKE_DIR] if fake else []
    libs += [extra.pop("LIBS")] if extra.get("LIBS") else []
    if libs:
        env["LD_LIBRARY_PATH"] = ":".join(libs)
    if trace:
        env["FAKECUDA_TRACE"] = trace
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def facts(text):
    """cuda_check's and ucp_cuda's "name: value" lines, as a dict."""
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line and not line.startswith("["))


def trace_counts(path):
    """How many times each trace line was written."""
    counts = {}
    if os.path.exists(path):
        for line in open(path).read().splitlines():
            counts[line] = counts.get(line, 0) + 1
    return counts


def scratch(name):
    return os.path.join(harness._scratch, name)


# --------------------------------------------------------------------------- the driver alone
@case("the driver alone: devices, memory the host cannot touch, copies, pointer attributes")
def driver_alone(t):
    trace = scratch("check.trace")
    status, out = run_logged([CUDA_CHECK], fake_env(trace))
    f = facts(out)
    t.equal("cuda_check exits 0 and reaches its end", (status, f.get("end")), (0, "reached"))
    t.equal("one GPU by default", f.get("devices"), "1")
    t.equal("GPU 0: a name, a PCI bus id, the same in the attributes, a UUID", f.get("device 0"),
            "name=Fake NVIDIA GPU pci=00000000:41:00.0 attributes=0000:41:00 uuid=FAKECUDA")
    t.equal("the primary context is inactive, active once retained, inactive once released",
            [f.get("primary context active %s" % w) for w in ("before retain", "after retain", "after release")],
            ["0", "1", "0"])
    t.equal("cuMemAlloc without a current context", f.get("cuMemAlloc without a current context"),
            "CUDA_ERROR_INVALID_CONTEXT")
    t.equal("a host load of device memory dies of SIGSEGV", f.get("host load of device memory"), "signal 11")
    t.equal("a host store to device memory dies of SIGSEGV", f.get("host store to device memory"), "signal 11")
    t.equal("process_vm_readv of device memory fails with EFAULT", f.get("process_vm_readv of device memory"), "EFAULT")
    t.equal("control: cuMemAllocHost memory is readable by a load and by process_vm_readv",
            (f.get("host load of cuMemAllocHost memory"), f.get("process_vm_readv of cuMemAllocHost memory")),
            ("exit 0", "ok"))
    t.equal("HtoD, DtoD on a stream, DtoH: the bytes come back", f.get("HtoD, DtoD, DtoH round trip"), "same bytes")
    t.equal("cuMemsetD8 fills its range alone", f.get("memset"), "6c ab 53")
    t.equal("an inner pointer's attributes name its allocation",
            f.get("inner pointer"), "memory_type=2 device_ordinal=0 context_is_primary=1 is_managed=0 "
            "buffer_ids_differ=1 range_start_is_base=1 range_size=8192")
    t.equal("cuMemGetAddressRange of an inner pointer", f.get("cuMemGetAddressRange of inner pointer"),
            "base_is_alloc=1 size=8192")
    t.equal("cuPointerGetAttributes of an inner pointer", f.get("cuPointerGetAttributes of inner pointer"),
            "memory_type=2 is_managed=0 device_ordinal=0")
    t.equal("a host pointer is no CUDA pointer (cuPointerGetAttribute, cuMemGetAddressRange)",
            (f.get("cuPointerGetAttribute of a host pointer"), f.get("cuMemGetAddressRange of a host pointer")),
            ("CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_FOUND"))
    t.equal("cuPointerGetAttributes of a host pointer: success, zeros (as the API reference says)",
            f.get("cuPointerGetAttributes of a host pointer"), "memory_type=0 context_is_null=1")
    t.equal("a freed allocation is no CUDA pointer", f.get("cuPointerGetAttribute after cuMemFree"),
            "CUDA_ERROR_INVALID_VALUE")
    t.equal("cuGetProcAddress: cuMemAlloc is the driver's cuMemAlloc_v2; an unknown name is NOT_FOUND",
            (f.get("cuGetProcAddress cuMemAlloc"), f.get("cuGetProcAddress cuNoSuchFunction")),
            ("cuMemAlloc_v2", "CUDA_ERROR_NOT_FOUND fn_is_null=1 status=1"))
    counts = trace_counts(trace)
    t.equal("FAKECUDA_TRACE: the copies and fills the driver did, one line each",
            {k: v for k, v in counts.items() if k.startswith(("copy", "memset"))},
            {"copy HtoD 8192": 1, "copy DtoD 8192": 1, "copy DtoH 8192": 1, "copy DtoH 64": 1, "memset D 32": 1})


@case("FAKECUDA_DEVICES: a count of GPUs; 0 is no GPU; a bad value is named on stderr")
def device_count(t):
    status, out = run_logged([CUDA_CHECK], fake_env(FAKECUDA_DEVICES="3"))
    f = facts(out)
    t.equal("3 GPUs, each its own PCI address", [f.get("devices")] + [f.get("device %d" % i, "").split()[-3] for i in range(3)],
            ["3", "pci=00000000:41:00.0", "pci=00000000:42:00.0", "pci=00000000:43:00.0"])
    status, out = run_logged([CUDA_CHECK], fake_env(FAKECUDA_DEVICES="0"))
    t.equal("FAKECUDA_DEVICES=0: cuInit answers CUDA_ERROR_NO_DEVICE", (status, facts(out).get("cuInit")),
            (0, "CUDA_ERROR_NO_DEVICE"))
    p = harness.run([CUDA_CHECK], fake_env(FAKECUDA_DEVICES="two"))
    err = p.stderr.decode()
    t.equal("FAKECUDA_DEVICES=two: cuInit answers CUDA_ERROR_UNKNOWN (a broken driver, not an absent GPU)",
            facts(p.stdout.decode()).get("cuInit"), "CUDA_ERROR_UNKNOWN")
    t.check("... and one line on stderr names the variable", err.count("\n") == 1 and "FAKECUDA_DEVICES" in err, err)


def dynamic_symbols(path, defined):
    p = subprocess.run(["nm", "-D", "--defined-only" if defined else "--undefined-only", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return {line.split()[-1].split("@")[0] for line in p.stdout.decode().splitlines() if line.strip()}


@case("the fakes export their cu*/nvml* entry points alone, under NVIDIA's sonames")
def exports(t):
    for name, prefix in (("libcuda.so.1", "cu"), ("libnvidia-ml.so.1", "nvml")):
        path = os.path.join(FAKE_DIR, name)
        syms = dynamic_symbols(path, True)
        t.check("%s exports %d symbols, all %s*" % (name, len(syms), prefix),
                syms and all(s.startswith(prefix) for s in syms), " ".join(sorted(syms)))
        soname = subprocess.run(["readelf", "-d", path], stdout=subprocess.PIPE).stdout.decode()
        t.check("%s: its soname is %s" % (name, name), "Library soname: [%s]" % name in soname, soname)


# --------------------------------------------------------------------------- the wheels' UCX
def wheels_or_skip(t, what):
    """The site-packages of the wheels' venv ($UCXTLSTEST_WHEELS); else a SKIP of what ends the case."""
    venv = os.environ.get("UCXTLSTEST_WHEELS")
    if not venv:
        why = os.environ.get("UCXTLSTEST_WHEELS_SKIP") or (
            "UCXTLSTEST_WHEELS is unset: scripts/test.sh installs the wheels and sets it; by hand: "
            "export UCXTLSTEST_WHEELS=$(tests/wheels/install_wheels.sh)")
        t.skip(what, why)
        t.exit()
    site = os.path.join(venv, PY_SITE)
    if not os.path.isdir(os.path.join(site, "libucx")) or not os.path.isdir(os.path.join(site, "nixl_cu12.libs")):
        t.skip(what, "UCXTLSTEST_WHEELS=%s holds no libucx and nixl_cu12.libs in %s" % (venv, PY_SITE))
        t.exit()
    return site


def venv_python(site):
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(site))), "bin", "python")


def nixl_lib(site, stem):
    libs = os.path.join(site, "nixl_cu12.libs")
    return os.path.join(libs, next(n for n in sorted(os.listdir(libs)) if n.startswith(stem + "-")))


@case("every cu*/nvml* symbol the wheels' CUDA modules link is exported by the fakes", tags=("wheels",))
def imports_covered(t):
    site = wheels_or_skip(t, "the wheels' CUDA modules")
    exported = dynamic_symbols(os.path.join(FAKE_DIR, "libcuda.so.1"), True) | \
        dynamic_symbols(os.path.join(FAKE_DIR, "libnvidia-ml.so.1"), True)
    for module in ("libucx/lib/ucx/libuct_cuda.so", "libucx/lib/ucx/libucm_cuda.so",
                   "nixl_cu12.libs/ucx/libuct_cuda.so.0.0.0", "nixl_cu12.libs/ucx/libucm_cuda.so.0.0.0"):
        wanted = {s for s in dynamic_symbols(os.path.join(site, module), False) if re.match(r"(cu|nvml)[A-Z]", s)}
        t.check("%s: its %d cu*/nvml* imports are all exported" % (module, len(wanted)),
                wanted and wanted <= exported, "missing: %s" % " ".join(sorted(wanted - exported)))


@case("RAPIDS' ucx_info -d: cuda_copy and the cuda_cpy domain with the fake driver, none without", tags=("wheels",))
def rapids_ucx_info(t):
    site = wheels_or_skip(t, "RAPIDS' UCX 1.22")
    libucx = os.path.join(site, "libucx")
    argv = [os.path.join(libucx, "bin", "ucx_info"), "-d"]
    # The binaries' RUNPATH names RAPIDS' CI: their lib directory goes on the path, as
    # libucx.load_library() achieves by preloading.
    lib = os.path.join(libucx, "lib")
    status, out = run_logged(argv, fake_env(LIBS=lib))
    t.check("with the fake driver (%s): Memory domain cuda_cpy, Transport cuda_copy" % describe(status),
            status == 0 and "# Memory domain: cuda_cpy" in out and "#      Transport: cuda_copy" in out)
    t.check("... cuda_cpy says it detects and registers cuda memory",
            re.search(r"memory types: .*cuda \(access,alloc,reg,detect\)", out) is not None)
    status, out = run_logged(argv, fake_env(fake=False, LIBS=lib))
    t.check("control, without it (%s): no cuda transport or domain" % describe(status),
            status == 0 and "# Memory domain: tcp" in out and "cuda" not in out)


@case("NIXL's bundled UCX, read by doctor --ucx: libuct_cuda loads with the fake driver, not without", tags=("wheels",))
def nixl_query(t):
    site = wheels_or_skip(t, "NIXL's bundled UCX")
    cli = os.path.join(BUILD_DIR, "ucxtls")
    argv = [cli, "doctor", "--json", "--ucx", nixl_lib(site, "libucp"), "--value", "tcp"]

    def cuda_module(env):
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        j = json.loads(p.stdout.decode())
        mods = [m for u in j["ucx"] for m in u["modules"] if os.path.basename(m["path"]).startswith("libuct_cuda.")]
        return mods, [tl for u in j["ucx"] for tl in u["transports"]]
    mods, tls = cuda_module(fake_env())
    t.check("with the fake driver on LD_LIBRARY_PATH: libuct_cuda loads, cuda_copy registered",
            mods and all(m["loads"] for m in mods) and "cuda_copy" in tls, repr((mods, tls)))
    mods, tls = cuda_module(fake_env(fake=False))
    t.check("control, without it: libuct_cuda does not load (libcuda.so.1), no cuda_copy",
            mods and not any(m["loads"] for m in mods) and "cuda_copy" not in tls
            and all((m["why"] or "").startswith("libcuda.so.1: cannot open") for m in mods), repr((mods, tls)))


def compile_ucp_cuda(t, site, which):
    """ucp_cuda.c compiled against RAPIDS' UCX headers and `which` UCX's libraries (rapids/nixl);
    a failed compile ends the case."""
    exe = scratch("ucp_cuda-" + which)
    if os.path.exists(exe):
        return exe
    argv = [CC, "-std=gnu11", "-O1", "-w", "-o", exe, os.path.join(HERE, "ucp_cuda.c"),
            "-I" + os.path.join(site, "libucx", "include"), "-L" + FAKE_DIR, "-l:libcuda.so.1"]
    if which == "rapids":
        argv += ["-L" + os.path.join(site, "libucx", "lib"), "-lucp", "-lucs"]
    else:  # the auditwheel-renamed libraries, found again through their directory
        argv += [nixl_lib(site, "libucp"), nixl_lib(site, "libucs"),
                 "-Wl,-rpath," + os.path.join(site, "nixl_cu12.libs")]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if not t.check("ucp_cuda.c compiles against the %s UCX" % which, p.returncode == 0, p.stdout.decode()):
        t.exit()
    return exe


_runs = itertools.count()


def ucp_run(t, exe, lib, tls, *args, **extra):
    """ucp_cuda [args] under UCX_TLS=tls (None: unset): (status, its facts, the trace's counts, its output)."""
    trace = scratch("ucp-%d.trace" % next(_runs))
    env = fake_env(trace, LIBS=lib, UCX_TLS=tls, UCX_HANDLE_ERRORS="none", **extra)
    print("     UCX_TLS=%s %s" % (tls if tls is not None else "<unset>",
                                  " ".join("%s=%s" % kv for kv in extra.items())), flush=True)
    status, out = run_logged([exe] + list(args), env)
    return status, facts(out), trace_counts(trace), out




# ucp_cuda's own copies, in either mode: zeros into both buffers (2 HtoD), two read-backs (2 DtoH).
OWN_HTOD, OWN_DTOH = 2, 2
# What a mode's run must print: (fact, value) pairs.
DELIVERED = {
    "two processes": [("target ucp_mem_map of device memory", "Success"), ("target ucp_mem_query memory type", "cuda"),
                      ("initiator put host -> device", "Success"), ("target bytes after the initiator's put", "same"),
                      ("initiator get device -> device", "Success"), ("initiator get bytes read through the driver", "same"),
                      ("target process", "exit 0"), ("initiator end", "reached")],
    "one process": [("ucp_mem_map of device memory", "Success"), ("ucp_mem_query memory type", "cuda"),
                    ("put host -> device", "Success"), ("put bytes read through the driver", "same"),
                    ("get device -> device", "Success"), ("get bytes read through the driver", "same"), ("end", "reached")],
}
MODE_ARGS = {"two processes": ["two-process"], "one process": []}


@case("UCP put/get of device memory, RAPIDS' UCX: a target and an initiator process over tcp (and one process)",
      tags=("wheels",))
def rapids_ucp(t):
    site = wheels_or_skip(t, "RAPIDS' UCX 1.22")
    exe = compile_ucp_cuda(t, site, "rapids")
    lib = os.path.join(site, "libucx", "lib")
    for mode, tls in (("two processes", "cuda_copy,tcp"), ("two processes", None), ("one process", "cuda_copy,tcp")):
        label = "%s, UCX_TLS=%s" % (mode, tls or "<unset>")
        status, f, counts, out = ucp_run(t, exe, lib, tls, *MODE_ARGS[mode], UCX_MEM_LOG_LEVEL="info")
        # As on a real node, libucm_cuda patches the driver's allocation functions (bistro), so
        # UCX's memory-type cache learns of each cuMemAlloc.
        t.check("%s: libucm_cuda loads (RAPIDS bundles libcudart) and hooks the driver's allocation functions" % label,
                "cuda memory hooks mode bistro: installed 6 on driver API" in out)
        t.equal("%s: ucp_mem_map'd cuMemAlloc memory typed cuda; put host->device, get device->device deliver "
                "(bytes read through cuMemcpyDtoH)" % label,
                [status] + [f.get(k) for k, _ in DELIVERED[mode]], [0] + [v for _, v in DELIVERED[mode]])
        htod, dtoh = counts.get("copy HtoD 4096", 0) - OWN_HTOD, counts.get("copy DtoH 4096", 0) - OWN_DTOH
        t.check("%s: UCX moved the device bytes through the driver (%d HtoD, %d DtoH of its own)" % (label, htod, dtoh),
                htod >= 1 and dtoh >= 1, repr(counts))
    status, f, counts, _ = ucp_run(t, exe, lib, "tcp,sm,self", "two-process")
    t.equal("two processes, UCX_TLS=tcp,sm,self: registration succeeds, the memory is typed host",
            (f.get("target ucp_mem_map of device memory"), f.get("target ucp_mem_query memory type")), ("Success", "host"))
    t.check("... and tcp, reading it as host memory, cannot move it (put: %s, get: %s, %s)"
            % (f.get("initiator put host -> device"), f.get("initiator get device -> device"), describe(status)),
            f.get("target bytes after the initiator's put") != "same" and
            f.get("initiator get bytes read through the driver") != "same")


# Seen with and without the fake driver, in a program that only calls ucp_init and ucp_cleanup
# too: the libnl-route-3 that nixl-cu12 bundles (loaded by UCX's libuct_ib) faults in its
# destructor (rtnl_tc_unregister) at exit. So NIXL's runs are judged by their output, not status.
EXIT_FAULT = "an exit status of NIXL's UCX is not judged: its bundled libnl-route-3 may fault at exit"


@case("UCP put/get of device memory, NIXL's bundled UCX: typed host without libcudart.so.12", tags=("wheels",))
def nixl_ucp(t):
    site = wheels_or_skip(t, "NIXL's bundled UCX")
    exe = compile_ucp_cuda(t, site, "nixl")
    # NIXL's libucm_cuda needs libcudart.so.12, which the wheel does not ship: UCX's memory-type
    # cache (UCX_MEMTYPE_CACHE) then types device memory as host and tcp reads it as host memory.
    status, f, _, out = ucp_run(t, exe, None, "cuda_copy,tcp", UCX_LOG_LEVEL="debug")
    t.check("UCX_TLS=cuda_copy,tcp: UCX says libucm_cuda cannot load libcudart.so.12",
            re.search(r"libucm_cuda\.so\S*', mode=\S+\) failed: libcudart\.so\.12: cannot open", out) is not None)
    t.equal("UCX_TLS=cuda_copy,tcp: cuMemAlloc memory typed host (libucm_cuda unloadable)",
            f.get("ucp_mem_query memory type"), "host")
    t.check("... and the put does not deliver (%s)" % describe(status), f.get("put bytes read through the driver") != "same")
    # Two ways out: no memory-type cache, or a libcudart.so.12 on the path (a CUDA program's, as
    # torch's; here RAPIDS' bundled one under its soname), so that libucm_cuda loads and hooks.
    cudart_dir = scratch("cudart")
    os.makedirs(cudart_dir, exist_ok=True)
    rapids_libs = os.path.join(site, "libucx_cu12.libs")
    cudart = [n for n in os.listdir(rapids_libs) if n.startswith("libcudart")]
    if cudart and not os.path.exists(os.path.join(cudart_dir, "libcudart.so.12")):
        os.symlink(os.path.join(rapids_libs, cudart[0]), os.path.join(cudart_dir, "libcudart.so.12"))
    for label, lib, extra in (("UCX_MEMTYPE_CACHE=n", None, {"UCX_MEMTYPE_CACHE": "n"}),
                              ("a libcudart.so.12 on LD_LIBRARY_PATH", cudart_dir, {})):
        status, f, _, _ = ucp_run(t, exe, lib, "cuda_copy,tcp", **extra)
        t.equal("%s: typed cuda; put and get deliver (then %s: %s)" % (label, describe(status), EXIT_FAULT),
                [f.get("ucp_mem_query memory type"), f.get("put bytes read through the driver"),
                 f.get("get bytes read through the driver"), f.get("end")], ["cuda", "same", "same", "reached"])


NIXL_REGISTER = r"""
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
ctx, ptr = ctypes.c_void_p(), ctypes.c_ulonglong()
assert cuda.cuInit(0) == 0 and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxPushCurrent_v2(ctx) == 0 and cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(4096)) == 0
from nixl._api import nixl_agent, nixl_agent_config
agent = nixl_agent("fakecuda", nixl_agent_config(backends=["UCX"]))
try:
    agent.register_memory([(ptr.value, 4096, 0, "")], "VRAM")
    print("register VRAM: ok")
except Exception as e:
    print("register VRAM: %s" % type(e).__name__)
"""


@case("NIXL's Python API registers cuMemAlloc memory as VRAM with the fake driver", tags=("wheels",))
def nixl_python(t):
    site = wheels_or_skip(t, "NIXL's Python API")
    python = venv_python(site)
    argv = [python, "-c", NIXL_REGISTER]
    status, out = run_logged(argv, fake_env(UCX_TLS="cuda_copy,tcp"))
    t.check("UCX_TLS=cuda_copy,tcp: NIXL refuses, in its words: VRAM memory is detected as host by UCX",
            "register VRAM: nixlBackendError" in out and datapath.NIXL_WORDS in out)
    status, out = run_logged(argv, fake_env(UCX_TLS="cuda_copy,tcp", UCX_MEMTYPE_CACHE="n"))
    t.check("UCX_TLS=cuda_copy,tcp UCX_MEMTYPE_CACHE=n: registered (then %s: %s)" % (describe(status), EXIT_FAULT),
            "register VRAM: ok" in out)


@case("NIXL counts NVIDIA GPUs in /sys/bus/pci/devices: none here, one in a bind-mounted fake", tags=("wheels",))
def nixl_pci(t):
    site = wheels_or_skip(t, "NIXL's hardware check")
    python = venv_python(site)
    agent = [python, "-c", "from nixl._api import nixl_agent, nixl_agent_config\n"
             "nixl_agent('fakecuda', nixl_agent_config(backends=['UCX']))"]
    count = re.compile(r"hwInfo \{ numNvidiaGpus=(\d+)")
    warning = "NVIDIA GPU(s) were detected, but UCX CUDA support was not found"
    status, out = run_logged(agent, fake_env(NIXL_LOG_LEVEL="TRACE"))
    t.equal("this machine: NIXL finds no NVIDIA GPU", count.findall(out), ["0"])
    if not harness.have("bwrap") or harness.run(["bwrap", "--dev-bind", "/", "/", "true"], env_for(preload=False)).returncode:
        t.skip("a fake /sys/bus/pci/devices", "bwrap is missing or cannot make a namespace here (Debian bubblewrap)")
        return
    pci = scratch("pci")
    gpu = os.path.join(pci, "0000:41:00.0")  # the fake driver's GPU 0
    os.makedirs(gpu, exist_ok=True)
    for name, value in (("vendor", "0x10de"), ("class", "0x030200"), ("device", "0x2330")):
        with open(os.path.join(gpu, name), "w") as f:
            f.write(value + "\n")
    bwrap = ["bwrap", "--dev-bind", "/", "/", "--bind", pci, "/sys/bus/pci/devices"]
    status, out = run_logged(bwrap + agent, fake_env(NIXL_LOG_LEVEL="TRACE"))
    t.check("fake /sys, fake driver: NIXL finds one NVIDIA GPU and UCX's CUDA support (no warning)",
            count.findall(out) == ["1"] and warning not in out)
    status, out = run_logged(bwrap + agent, fake_env(fake=False, NIXL_LOG_LEVEL="TRACE"))
    t.check("fake /sys, no driver: NIXL finds one GPU and warns: %s" % warning,
            count.findall(out) == ["1"] and warning in out)


if __name__ == "__main__":
    harness.main("a fake NVIDIA GPU (libcuda.so.1, libnvidia-ml.so.1) under the wheels' real UCX")
