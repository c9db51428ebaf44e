#!/usr/bin/env python3
"""docs/troubleshooting.md, entry by entry: each error reproduced, each command run as printed.

The page's blocks are marked `<!-- trouble: NAME -->`. An error block (`*-error`, `vram-debug`)
holds the line a program prints, `...` standing for the part that varies (a timestamp, a path);
the test makes the program print it and finds each line in what it printed. The other blocks are
transcripts (tests/cli/doc_blocks.py), run by bash and compared whole, on the fixture machine
their name ends with (`-dgx`, `-intel-xe`). Stand-ins: `<site-packages>` is the registry wheels'
venv (tests/wheels), `/opt/ucxtls` an install of this build (`cmake --install`), and the fake CUDA
driver of tests/cuda is the NVIDIA node's driver, but for the page's outputs without one
(`-nodriver-dgx`), run without it. What cannot be reproduced here prints SKIP and why: the dma-buf
registration needs an Intel GPU and a ConnectX HCA; an output with (without) a CUDA driver needs
the fake one built (a machine without a real one).
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import BUILD_DIR, LIB, SOURCE_DIR, case, env_for, have, main, run, site_packages  # noqa: E402
from doc_blocks import not_whole, transcript  # noqa: E402

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "nixl"))
sys.path.insert(0, os.path.join(harness.TESTS_DIR, "ze"))
import nixl_pair  # noqa: E402

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "cuda"))
import test_cuda  # noqa: E402  (its NIXL_REGISTER script; its cases run only as its own __main__)

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "driver"))
import driver_common  # noqa: E402  (system_has: whether this machine has a driver library)

DOC = os.path.join(SOURCE_DIR, "docs", "troubleshooting.md")
CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
FAKE_CUDA = nixl_pair.FAKE_CUDA_DIR
SITE = "<site-packages>"
OPT = "/opt/ucxtls"
LMOD_INIT = "/etc/profile.d/lmod.sh"
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-trouble-")
atexit.register(shutil.rmtree, SCRATCH, True)


def block(name):
    with open(DOC, encoding="utf-8") as f:
        found = re.findall(r"^<!-- trouble: %s -->\n```[a-z]*\n(.*?)^```$" % re.escape(name), f.read(), re.M | re.S)
    if len(found) != 1:
        raise LookupError("%d blocks marked '<!-- trouble: %s -->' in docs/troubleshooting.md" % (len(found), name))
    return found[0]


def quoted(t, name, printed, subs=(), where="printed"):
    """Each line of error block `name` (with subs applied; `...`: any text) is a line of printed."""
    lines = printed.splitlines()
    for want in block(name).splitlines():
        for a, b in subs:
            want = want.replace(a, b)
        pattern = re.compile(".*".join(re.escape(p) for p in want.split("...")) + r"\Z")
        t.check("[%s] %s: %s" % (name, where, want), any(pattern.match(l) for l in lines), printed)


_prefix = []


def install(t):
    """This build installed to a scratch prefix (the page's /opt/ucxtls), once; None after a FAIL."""
    if not _prefix:
        prefix = os.path.join(SCRATCH, "opt-ucxtls")
        p = subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if not t.check("cmake --install %s --prefix %s" % (BUILD_DIR, prefix), p.returncode == 0, p.stdout.decode()):
            return None
        _prefix.append(prefix)
    return _prefix[0]


def wheels(t):
    """The wheels' venv, or None after a SKIP saying why."""
    venv, why = harness.wheels()
    if not venv:
        t.skip("the registry wheels (tests/wheels)", why)
    return venv


def transcript_of(t, name, stand_ins, env, absent=()):
    """Runs block `name`'s commands by bash with the stand-ins replaced; each prints its lines,
    whole, and none of `absent`."""
    for command, want in transcript(block(name)):
        real = command
        for a, b in stand_ins.items():
            real = real.replace(a, b)
            want = [w.replace(a, b) for w in want]
        p = run(["/bin/bash", "--noprofile", "--norc", "-c", real], env, timeout=120)
        out = p.stdout.decode()
        differs = not_whole(want, out)
        t.check("[%s] `%s` prints the page's block, whole" % (name, command), not differs,
                "%s\n--- stdout:\n%s--- stderr:\n%s" % (differs, out, p.stderr.decode()))
        for text in absent:
            t.check("[%s] ... and not %r" % (name, text), text not in out, out)


def machine_of(name):
    return next((m for m in ("dgx", "intel-xe", "roce-bond-elsewhere", "roce-zero-gids", "roce-gid-less-beside-ib",
                             "roce-macvlan-pod") if name.endswith("-" + m)), None)


def node_env(name, venv=None, **extra):
    """The command's environment on the block's node: the built ucxtls first in PATH, the venv's
    python3 next, and on the NVIDIA node the fake CUDA driver (its cuda_copy then loads), unless
    the block is one of the page's outputs without a driver (`-nodriver-dgx`)."""
    machine = machine_of(name)
    path = [os.path.dirname(CLI)] + ([os.path.join(venv, "bin")] if venv else []) + [env_for(None)["PATH"]]
    if machine == "dgx":
        extra.setdefault("LD_LIBRARY_PATH", None if "-nodriver-" in name else FAKE_CUDA)
    return env_for(machine, preload=False, PATH=":".join(path), **extra)


def no_driver_here(t, name):
    """Whether the NVIDIA node's driver cannot be had as block `name` wants it (a SKIP saying why):
    a block with the driver needs the fake one built, a `-nodriver-` block a machine without one."""
    if machine_of(name) != "dgx":
        return False
    if "-nodriver-" in name and driver_common.system_has("libcuda.so.1"):
        t.skip("[%s] the output without a CUDA driver" % name, "this machine has one (libcuda.so.1 in ld.so's cache)")
        return True
    if "-nodriver-" not in name and not os.path.exists(os.path.join(FAKE_CUDA, "libcuda.so.1")):
        t.skip("[%s] the output with a CUDA driver" % name, "the fake CUDA driver (tests/cuda) is not built: %s" % FAKE_CUDA)
        return True
    return False


def wheel_transcripts(t, names, absent=None):
    venv = wheels(t)
    if venv:
        for name in names:
            if not no_driver_here(t, name):
                transcript_of(t, name, {SITE: site_packages(venv)}, node_env(name, venv), (absent or {}).get(name, ()))
    return venv


@case("VRAM memory is detected as host: NIXL's words, UCX's debug line, UCX_MEMTYPE_CACHE=n; the Intel check",
      tags=("wheels",))
def vram(t):
    venv = wheel_transcripts(t, ["vram-check-intel-xe"])
    if not venv:
        return
    if not os.path.exists(os.path.join(FAKE_CUDA, "libcuda.so.1")):
        t.skip("NIXL registering VRAM", "the fake CUDA driver (tests/cuda) is not built: %s" % FAKE_CUDA)
        return
    # NIXL's Python API registers cuMemAlloc'd memory as VRAM, with no CUDA runtime loaded.
    script = test_cuda.NIXL_REGISTER
    python = os.path.join(venv, "bin", "python")
    env = env_for(None, preload=False, LD_LIBRARY_PATH=FAKE_CUDA, UCX_TLS="cuda_copy,tcp", UCX_LOG_LEVEL="debug")
    p = run([python, "-c", script], env, timeout=120)
    out = p.stdout.decode() + p.stderr.decode()
    t.check("UCX_TLS=cuda_copy,tcp, no CUDA runtime: NIXL refuses the VRAM registration", "register VRAM: nixlBackendError" in out, out)
    quoted(t, "vram-error", out, where="NIXL printed")
    quoted(t, "vram-debug", out, where="UCX's debug log has")
    env = env_for(None, preload=False, LD_LIBRARY_PATH=FAKE_CUDA, UCX_TLS="cuda_copy,tcp", UCX_MEMTYPE_CACHE="n")
    p = run([python, "-c", script], env, timeout=120)
    t.check("the fix: UCX_MEMTYPE_CACHE=n, and NIXL registers it", "register VRAM: ok" in p.stdout.decode(),
            p.stdout.decode() + p.stderr.decode())


@case("no usable transports/devices: RAPIDS' UCX 1.22 on the trainers' list; doctor's check and fix", tags=("wheels",))
def no_usable(t):
    # Both outputs: with the NVIDIA node's CUDA driver (cuda_copy loads: refused) and without one.
    names = ["nousable-check-dgx", "nousable-check-nodriver-dgx", "nousable-fix-dgx", "nousable-fix-nodriver-dgx"]
    if not wheel_transcripts(t, names, {"nousable-fix-dgx": ["refused"], "nousable-check-nodriver-dgx": ["refused"],
                                        "nousable-fix-nodriver-dgx": ["refused"]}):
        return
    build = harness.ucx_build_or_skip(t, "rapids", "RAPIDS' ucx_info")
    if not build:
        return
    libs = build.env.get("LD_LIBRARY_PATH", "") + ":" + FAKE_CUDA
    for value, fails in (("rc_x,rc,dc_x,dc,cuda_copy", True), ("sm,self,tcp,cuda_ipc,cuda_copy", False)):
        p = run([build.ucx_info, "-e", "-u", "t"], env_for(None, preload=False, LD_LIBRARY_PATH=libs, UCX_TLS=value))
        out = p.stdout.decode() + p.stderr.decode()
        if fails:
            t.check("UCX_TLS=%s: no context (exit %d)" % (value, p.returncode), p.returncode != 0, out)
            quoted(t, "nousable-error", out, where="UCX 1.22 printed")
        else:
            t.check("the fix's value %s: an endpoint" % value, p.returncode == 0 and "UCP endpoint" in out, out)


@case("Invalid UCX_TLS=...: explain's check and fixes on dgx")
def invalid(t):
    for name in ("invalid-check-dgx", "invalid-repair-dgx", "invalid-write-dgx"):
        transcript_of(t, name, {}, node_env(name))


@case("Invalid UCX_TLS=...: NIXL's check refusing the Intel trainer's list on dgx, and the fix", tags=("wheels",))
def invalid_nixl(t):
    # Two trainer processes with NIXL (tests/nixl): no RDMA here, so `tcp` plays rc_x,rc,dc_x,dc.
    res = nixl_pair.run_pair(t, "dgx", nixl_pair.INTEL_LIST, preload=False)
    out = res["initiator"][1] + res["target"][1]
    t.check("the Intel trainer's list, no library: NIXL creates no agent", nixl_pair.both(res, nixl_pair.AGENT), out)
    quoted(t, "invalid-error", out, [("rc_x,rc,dc_x,dc,", "tcp,")], where="NIXL printed (tcp for rc_x,rc,dc_x,dc)")
    res = nixl_pair.run_pair(t, "dgx", nixl_pair.INTEL_LIST, preload=True, UCXTLS_WRITE="always",
                             UCXTLS_TEMPLATE=nixl_pair.HERE_TEMPLATE)
    t.check("the fix, UCXTLS_WRITE=always (the template %s standing for the default): VRAM registered and moved"
            % nixl_pair.HERE_TEMPLATE, nixl_pair.both(res, nixl_pair.OK), nixl_pair.outcome(res))


@case("ibv_reg_dmabuf_mr: explain's check and fix on intel-xe")
def dmabuf(t):
    for name in ("dmabuf-check-intel-xe", "dmabuf-fix-intel-xe"):
        transcript_of(t, name, {}, node_env(name))
    block("dmabuf-error")
    t.skip("the dma-buf registration failure itself",
           "needs an Intel GPU and a ConnectX HCA (UCX registering GPU memory with the NIC); neither is here")


@case("transport 'dc_x' is not available: on stdout from Debian's UCX 1.13; doctor's check and fix on NIXL's wheel")
def dc_x(t):
    if have("ucx_info"):
        p = run(["ucx_info", "-e", "-u", "t"], env_for(None, preload=False, UCX_TLS="dc_x,tcp"))
        quoted(t, "dcx-error", p.stdout.decode(), where="Debian's ucx_info printed on stdout")
        t.check("... and not on stderr", "dc_x" not in p.stderr.decode(), p.stderr.decode())
    else:
        t.skip("UCX's warning", "ucx_info not installed (Debian ucx-utils)")


@case("transport 'dc_x': doctor's check and fix on NIXL's wheel", tags=("wheels",))
def dc_x_wheel(t):
    wheel_transcripts(t, ["dcx-check-dgx", "dcx-fix-dgx"], {"dcx-fix-dgx": ["without DC"]})


@case("ld.so cannot be preloaded: a path the process cannot see, a 32-bit process; ucxtls lib")
def ld_so(t):
    prefix = install(t)
    if not prefix:
        return
    transcript_of(t, "ldso-check", {OPT: prefix}, env_for(None, preload=False, PATH=prefix + "/bin:/usr/bin:/bin"))
    absent = os.path.join(SCRATCH, "not-mounted")
    p = run(["/bin/true"], env_for(None, preload=False, LD_PRELOAD=absent + "/lib/libucxtls.so"))
    quoted(t, "ldso-error", p.stderr.decode(), [(OPT, absent)], where="ld.so printed on stderr")
    p = run(["/bin/sh", "-c", "true"], env_for(None, preload=False, LD_PRELOAD=prefix + "/lib/libucxtls.so"))
    t.equal("the fix: the installed path, no ld.so line", p.stderr.decode(), "")
    exe = os.path.join(SCRATCH, "m32")
    with open(exe + ".c", "w") as f:
        f.write("int main(void) { return 0; }\n")
    built = subprocess.run(["cc", "-m32", "-o", exe, exe + ".c"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ran = built.returncode == 0 and run([exe], env_for(None, preload=False)).returncode == 0
    if not ran:
        t.skip("a 32-bit process", "cc -m32 cannot build or this kernel cannot run one (gcc-multilib): %s"
               % built.stdout.decode().strip()[:200])
        return
    p = run([exe], env_for(None, preload=False, LD_PRELOAD=prefix + "/lib/libucxtls.so"))
    quoted(t, "ldso-error-32", p.stderr.decode(), [(OPT, prefix)], where="ld.so printed for a 32-bit process")


@case("module: command not found in a plain bash -c; Lmod's init first")
def module(t):
    p = run(["bash", "--noprofile", "--norc", "-c", "module use /nowhere"], env_for(None, preload=False))
    quoted(t, "module-error", p.stderr.decode(), where="bash -c printed")
    if not os.path.exists(LMOD_INIT):
        t.skip("the fix", "%s is missing (Debian lmod)" % LMOD_INIT)
        return
    prefix = install(t)
    if prefix:
        transcript_of(t, "module-fix", {OPT: prefix}, env_for(None, preload=False, HOME=SCRATCH))


@case("VRAM memory is detected as host, a UCX_TLS without cuda_copy: explain's check and repair on dgx")
def vram_tls(t):
    for name in ("vram-tls-check-dgx", "vram-tls-repair-dgx"):
        transcript_of(t, name, {}, node_env(name))


@case("VRAM memory is detected as host, a UCX_TLS without cuda_copy: NIXL's words under tcp, fixed by cuda_copy",
      tags=("wheels",))
def vram_tls_nixl(t):
    venv = wheels(t)
    if not venv:
        return
    if not os.path.exists(os.path.join(FAKE_CUDA, "libcuda.so.1")):
        t.skip("NIXL registering VRAM", "the fake CUDA driver (tests/cuda) is not built: %s" % FAKE_CUDA)
        return
    # UCX_MEMTYPE_CACHE=n rules the entry's other cause out: only the value differs.
    python = os.path.join(venv, "bin", "python")
    for value, ok in (("tcp", False), ("tcp,cuda_copy", True)):
        env = env_for(None, preload=False, LD_LIBRARY_PATH=FAKE_CUDA, UCX_TLS=value, UCX_MEMTYPE_CACHE="n")
        p = run([python, "-c", test_cuda.NIXL_REGISTER], env, timeout=120)
        out = p.stdout.decode() + p.stderr.decode()
        if ok:
            t.check("UCX_TLS=%s: NIXL registers the VRAM" % value, "register VRAM: ok" in out, out)
        else:
            t.check("UCX_TLS=%s: NIXL refuses the VRAM registration" % value, "register VRAM: nixlBackendError" in out, out)
            quoted(t, "vram-error", out, where="NIXL printed under UCX_TLS=tcp")


@case("Address not valid on a RoCE port: explain's check on the replayed container given mlx5_bond_0")
def roce(t):
    transcript_of(t, "roce-check-roce-bond-elsewhere", {}, node_env("roce-check-roce-bond-elsewhere"))
    block("roce-error")
    t.skip("UCX failing uct_iface_open itself", "needs a RoCE device whose net device is in another network namespace; "
           "none is here")


@case("rc_gda on a ConnectX RoCE port without a usable GID: ^ib written alone, named beside working ports")
def rc_gda(t):
    for name in ("rcgda-check-roce-zero-gids", "rcgda-beside-roce-gid-less-beside-ib"):
        transcript_of(t, name, {}, node_env(name))
    block("rcgda-error")
    t.skip("UCX's worker failing on rc_gda", "needs UCX 1.21+ with rc_gda, a CUDA GPU and a ConnectX; none is here")


@case("no active messages transport: doctor names a UCX_NET_DEVICES of RDMA ports alone")
def no_am(t):
    if not have("ucx_info"):
        t.skip("doctor's UCX_NET_DEVICES line", "no ucx_info in PATH (apt-get install ucx-utils)")
    else:
        transcript_of(t, "noam-check-dgx", {}, node_env("noam-check-dgx"))
    block("noam-error")
    t.skip("NIXL's self endpoint failing", "needs NIXL over a UCX with RDMA ports to pin; none is here")


@case("failed to select lane, network device not available, ibv_create_ah: explain's checks and fixes")
def lanes_and_gids(t):
    for name in ("lane-check-dgx", "netdev-check-roce-macvlan-pod", "netdev-fix-roce-macvlan-pod",
                 "ah-check-roce-bond-elsewhere"):
        transcript_of(t, name, {}, node_env(name))
    for name in ("lane-error", "netdev-error", "ah-error", "rocm-efault-error"):
        block(name)
    t.skip("UCX printing them", "needs NIXL EP on GB200, a pod's macvlan on a shared RoCE port, a RoCE GID "
           "elsewhere, AMD GPUs with a ConnectX; none is here (cli_node_findings checks doctor's ROCm line)")


@case("software emulation on AMD GPUs: UCX 1.22's RMA_PPLN_ENABLE default", tags=("wheels",))
def ppln(t):
    build = harness.ucx_build_or_skip(t, "rapids", "RAPIDS' ucx_info (UCX 1.22)")
    if not build:
        return
    env = env_for(None, preload=False, PATH=os.path.dirname(build.ucx_info) + ":" + env_for(None)["PATH"], **build.env)
    transcript_of(t, "ppln-check", {}, env)
    block("ppln-error")
    t.skip("the software-emulation lane itself", "needs a UCX built with ROCm and AMD GPUs; neither is here")


@case("scripts/run.sh without cmake: the line it prints now (as nobody, a PATH without cmake)")
def run_sh(t):
    if os.geteuid() != 0 or not have("setpriv"):
        t.skip("run.sh as nobody", "needs root and setpriv")
        return
    if harness.skip_closed_to_others(t, "run.sh as nobody", os.path.join(SOURCE_DIR, "scripts", "run.sh")):
        return
    bindir = os.path.join(SCRATCH, "runsh-bin")
    os.makedirs(bindir, exist_ok=True)
    for tool in ("bash", "sh", "dirname", "find", "head", "id", "nproc", "apt-get"):
        if not os.path.lexists(os.path.join(bindir, tool)):
            os.symlink(shutil.which(tool), os.path.join(bindir, tool))
    os.chmod(SCRATCH, 0o755)
    argv = [shutil.which("setpriv"), "--reuid=nobody", "--regid=nogroup", "--clear-groups",
            os.path.join(SOURCE_DIR, "scripts", "run.sh")]
    p = subprocess.run(argv, env={"PATH": bindir, "RUN_BUILD_DIR": os.path.join(SCRATCH, "runsh-build")},
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    t.check("exit 2", p.returncode == 2, p.stderr.decode())
    quoted(t, "runsh-error", p.stderr.decode(), where="scripts/run.sh printed")


if __name__ == "__main__":
    main("docs/troubleshooting.md: each error reproduced, each command run as printed")
