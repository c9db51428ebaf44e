#!/usr/bin/env python3
"""`ucxtls doctor --ucx PATH` and `--pid PID`: the value judged against the UCX a program really
loads. The real parts: Debian's UCX, and a copy of it laid out the way NIXL's wheel lays its own
out (built here with patchelf: renamed libraries with their SONAME and NEEDED rewritten, $ORIGIN
run paths, modules in ucx/ beside them, a compiled-in module directory that does not exist, no
ucx_info), with the cma module left out; a real Python process that loads each through ctypes and
creates a UCX context, as NIXL's binding does, so that UCX itself says which names it lacks. The
fakes (tests/cli/fake_ucx.c) stand for builds that cannot exist here: NIXL's without DC, RAPIDS'
without verbs, a CUDA module whose libcuda.so.1 is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALWAYS, BUILD_DIR, HELPER_DIR, LIB, add_case, case, env_for, have, main, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
HERE_ENV = env_for(None, preload=False)


def doctor(args, env=HERE_ENV, timeout=60):
    p = run([CLI, "doctor"] + args, env, timeout=timeout)
    out = p.stdout.decode()
    return p, out, set(re.findall(r"^MISSING +(\S+)", out, re.M)), p.stderr.decode()


def system_libucp():
    """Debian's libucp.so.0 (package libucx0), or None."""
    p = subprocess.run(["dpkg", "-L", "libucx0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for line in p.stdout.decode().split("\n"):
        if line.endswith("/libucp.so.0"):
            return line
    return None


SYSTEM = system_libucp()
SYSTEM_DIR = os.path.dirname(SYSTEM) if SYSTEM else None


def needs_system_ucx(fn):
    def run_case(t, *args):
        if not SYSTEM:
            t.skip("doctor --ucx", "Debian's UCX (libucx0) is not installed; scripts/test.sh installs it")
            return
        fn(t, *args)
    return run_case


# ---------------------------------------------------------------------------------------------
# The copy of Debian's UCX laid out like NIXL's wheel (site-packages/nixl_cu12.libs).
RENAMED = {"libucp.so.0": "libucp-nixl.so.0", "libuct.so.0": "libuct-nixl.so.0",
           "libucs.so.0": "libucs-nixl.so.0", "libucm.so.0": "libucm-nixl.so.0"}
MODULES = ["libuct_ib.so.0", "libuct_rdmacm.so.0"]  # libuct_cma.so.0 left out
PREFIX = b"/opt/nixl-ucx-build/lib/ucx"  # the wheel builder's prefix: not on this machine
_copy = []


def patchelf(*args):
    subprocess.run(["patchelf"] + list(args), check=True)


def needed(path):
    out = subprocess.run(["readelf", "-d", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out), out


def nixl_like_copy():
    """site-packages/nixl_cu12.libs with the renamed libraries and ucx/ (built once)."""
    if _copy:
        return _copy[0]
    libs = os.path.join(tempfile.mkdtemp(prefix="ucxtls-nixl-"), "site-packages", "nixl_cu12.libs")
    os.makedirs(os.path.join(libs, "ucx"))
    files = [(name, new, "$ORIGIN") for name, new in RENAMED.items()]
    files += [("ucx/" + m, "ucx/" + m, "$ORIGIN/..:$ORIGIN") for m in MODULES]
    for name, new, runpath in files:
        dst = os.path.join(libs, new)
        shutil.copy(os.path.join(SYSTEM_DIR, name), dst)
        os.chmod(dst, 0o755)
        if name in RENAMED:
            patchelf("--set-soname", new, dst)
        for old in needed(dst)[0]:
            if old in RENAMED:
                patchelf("--replace-needed", old, RENAMED[old], dst)
        patchelf("--set-rpath", runpath, dst)
    # UCX also looks in the module directory compiled into libucs (Debian's exists here; a wheel's
    # build prefix does not exist on the user's machine): the string rewritten in place, same
    # length, its "ucx" tail kept where it is (the linker shares it with the "ucx" subdirectory
    # name UCX appends to libucs's own directory).
    ucs = os.path.join(libs, "libucs-nixl.so.0")
    data = open(ucs, "rb").read()
    old = b"\0" + os.path.join(SYSTEM_DIR, "ucx").encode() + b"\0"
    head = os.path.dirname(PREFIX)
    assert data.count(old) == 1 and len(head) + 6 <= len(old), "libucs's module directory is not where expected"
    data = data.replace(old, b"\0" + head.ljust(len(old) - 6, b"/") + b"/ucx\0")
    open(ucs, "wb").write(data)
    _copy.append(libs)
    return libs


def needs_copy(fn):
    def run_case(t, *args):
        if not SYSTEM:
            t.skip("copy", "Debian's UCX (libucx0) is not installed; scripts/test.sh installs it")
            return
        if not have("patchelf"):
            t.skip("copy", "patchelf is not installed (Debian patchelf); scripts/test.sh installs it")
            return
        fn(t, nixl_like_copy(), *args)
    return run_case


# A real process that loads a UCX through ctypes and creates a context with UCX_TLS, as NIXL's
# binding does (ucp_config_read, ucp_init); UCX prints its "not available" warning on stdout.
LOADER = r"""
import ctypes, os, sys
ucp = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)
major, minor, release = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
ucp.ucp_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(release))
config = ctypes.c_void_p()
assert ucp.ucp_config_read(None, None, ctypes.byref(config)) == 0
class Params(ctypes.Structure):  # ucp_params_t: field_mask, features, the rest unread here
    _fields_ = [("field_mask", ctypes.c_uint64), ("features", ctypes.c_uint64), ("rest", ctypes.c_char * 512)]
params = Params(1, 1)  # UCP_PARAM_FIELD_FEATURES, UCP_FEATURE_TAG
context = ctypes.c_void_p()
status = ucp.ucp_init_version(major, minor, ctypes.byref(params), config, ctypes.byref(context))
ctypes.CDLL(None).fflush(None)  # UCX's warnings, in C's stdout buffer
print("ready %d" % status, flush=True)
sys.stdin.read()
"""


class Loaded:
    """python3 with libucp loaded and a context created under UCX_TLS=tls; its UCX warnings."""

    def __init__(self, libucp, tls):
        env = env_for(None, preload=False, UCX_TLS=tls)
        self.p = subprocess.Popen([sys.executable, "-c", LOADER, libucp], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.said = ""
        while True:
            line = self.p.stdout.readline().decode()
            self.said += line
            if not line or line.startswith("ready"):
                break
        self.unavailable = set()
        for m in re.finditer(r"transports? ((?:'[^']*',?)+) (?:is|are) not available", self.said):
            self.unavailable |= set(re.findall(r"'([^']*)'", m.group(1)))

    def maps(self):
        return open("/proc/%d/maps" % self.p.pid).read()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


# ---------------------------------------------------------------------------------------------
@case("copy: the fixture is laid out like NIXL's wheel", tags=("nixl_copy",))
@needs_copy
def copy_layout(t, libs):
    names, dyn = needed(os.path.join(libs, "libucp-nixl.so.0"))
    t.check("libucp-nixl.so.0: SONAME and NEEDED renamed, RUNPATH $ORIGIN",
            "[libucp-nixl.so.0]" in dyn and "libuct-nixl.so.0" in names and "libucs-nixl.so.0" in names
            and "libuct.so.0" not in names and re.search(r"RUNPATH.*\[\$ORIGIN\]", dyn), dyn)
    names, dyn = needed(os.path.join(libs, "ucx", "libuct_ib.so.0"))
    t.check("ucx/libuct_ib.so.0 needs the renamed libraries, RUNPATH $ORIGIN/..:$ORIGIN",
            "libucs-nixl.so.0" in names and "libucs.so.0" not in names and "$ORIGIN/..:$ORIGIN" in dyn, dyn)
    t.check("the cma module is left out, no ucx_info, the build prefix is not on this machine",
            not os.path.exists(os.path.join(libs, "ucx", "libuct_cma.so.0"))
            and not any(f.startswith("ucx_info") for f in os.listdir(libs))
            and not os.path.exists(os.path.dirname(PREFIX.decode())))
    proc = Loaded(os.path.join(libs, "libucp-nixl.so.0"), "tcp")
    maps = proc.maps()
    proc.close()
    ucx_files = set(re.findall(r"(/\S*/lib(?:ucp|uct|ucs|ucm)\S*)", maps))
    t.check("a process that loads the copy maps only the copy's UCX files (none of the system's)",
            ucx_files and all(f.startswith(libs) for f in ucx_files), "\n".join(sorted(ucx_files)) + proc.said)


@case("copy: --ucx judges the system UCX and the copy differently, as UCX itself does", tags=("nixl_copy",))
@needs_copy
def copy_versus_system(t, libs):
    copy_ucp = os.path.join(libs, "libucp-nixl.so.0")
    for where, arg, libucp, want_missing in (("the system UCX", "/usr", SYSTEM, set()),
                                             ("the copy", libs, copy_ucp, {"cma"})):
        p, out, missing, err = doctor(["--ucx", arg, "--value", "tcp,cma,sm,self"])
        first = out.split("\n")[0]
        t.check("%s: the first line names it (%s) and its version 1.13.1" % (where, os.path.basename(libucp)),
                re.match(r"^UCX +%s \(version 1\.13\.1\)$" % re.escape(libucp), first), out + err)
        t.equal("%s: MISSING" % where, missing, want_missing, out + err)
        t.equal("%s: exit status" % where, p.returncode, 1 if want_missing else 0, out + err)
        proc = Loaded(libucp, "tcp,cma,sm,self")
        proc.close()
        t.equal("%s: doctor's MISSING are the names UCX itself calls not available" % where, missing,
                proc.unavailable, proc.said)
    p, out, _, _ = doctor(["--ucx", libs, "--value", "tcp"])
    t.check("the copy: sm still served by posix and sysv; its transports come from libuct and ucx/ (rc_verbs from libuct_ib)",
            re.search(r"^this UCX .*\brc_verbs\b.*%s" % re.escape(os.path.join(libs, "ucx")), out, re.M)
            and " cma" not in out.split("\n")[2], out)


@case("copy: --pid of a real process that loaded the copy, and of one that loaded the system UCX", tags=("nixl_copy",))
@needs_copy
def copy_pid(t, libs):
    copy_ucp = os.path.join(libs, "libucp-nixl.so.0")
    for where, libucp, want_missing in (("system", SYSTEM, set()), ("copy", copy_ucp, {"cma"})):
        proc = Loaded(libucp, "tcp,cma")
        try:
            p, out, missing, err = doctor(["--pid", str(proc.p.pid)])
        finally:
            proc.close()
        lines = out.split("\n")
        first = re.match(r"^UCX +(\S+) \(version 1\.13\.1\)$", lines[0])
        t.check("--pid on the process with the %s UCX: first line names it (the file it maps), then the process" % where,
                first and os.path.realpath(first.group(1)) == os.path.realpath(libucp)
                and lines[1].startswith("process     %d (python" % proc.p.pid), out + err)
        t.check("--pid judges the process's own UCX_TLS (tcp,cma, from its start environment; no libucxtls.so "
                "in it changed it)", "value       tcp,cma (UCX_TLS in the environment process %d started with; no "
                "libucxtls.so in it changed it)" % proc.p.pid in out, out)
        t.equal("--pid (%s): MISSING is what UCX said in that process" % where, (missing, p.returncode),
                (proc.unavailable, 1 if proc.unavailable else 0), out + err + proc.said)
        t.equal("--pid (%s): MISSING" % where, missing, want_missing, out)


@case("copy: on a replayed Intel node, ze_copy is MISSING and the missing Level Zero support named", tags=("nixl_copy",))
@needs_copy
def copy_intel(t, libs):
    p, out, missing, err = doctor(["--ucx", libs], env_for("intel-xe", preload=False, **ALWAYS))
    t.check("intel-xe, UCXTLS_WRITE=always: the derived value names ze_copy, and the copy lacks it: MISSING ze_copy, exit 1",
            "(derived by ucxtls)" in out and "ze_copy" in missing and p.returncode == 1, out + err)
    t.check("... and the build problem in words",
            "build       this UCX was built without Level Zero (ze) support: NIXL cannot register Intel GPU "
            "memory whatever UCX_TLS says; rebuild UCX with --with-ze" in out, out)
    p, out, missing, err = doctor(["--ucx", libs, "--value", "all"], env_for("intel-xe", preload=False))
    t.check("... with UCX_TLS=all too (nothing MISSING, still exit 1: the value cannot fix the build)",
            not missing and p.returncode == 1 and "without Level Zero" in out.splitlines()[-1] and err == "", out + err)
    p, out, missing, err = doctor(["--ucx", libs, "--value", "tcp,self"], env_for("no-gpu", preload=False))
    t.check("on a node without GPUs, tcp,self: nothing to say about GPUs, exit 0",
            p.returncode == 0 and "build " not in out, out + err)


# ---------------------------------------------------------------------------------------------
@case("locating: a directory with several builds, a file that is not UCX, no libucp")
@needs_system_ucx
def locating(t):
    d = tempfile.mkdtemp(prefix="ucxtls-two-")
    for sub in ("a.libs", "b.libs"):
        os.makedirs(os.path.join(d, sub))
        shutil.copy(os.path.join(FAKES, "nixl", "libucp.so.0"), os.path.join(d, sub, "libucp-%s.so.0" % sub[0]))
    p, out, _, err = doctor(["--ucx", d, "--value", "tcp"])
    t.check("a site-packages with two wheels' UCX: exit 2, both named, nothing on stdout",
            p.returncode == 2 and out == "" and "a.libs/libucp-a.so.0" in err and "b.libs/libucp-b.so.0" in err
            and err.count("\n") == 1, err)
    p, out, _, err = doctor(["--ucx", os.path.join(d, "a.libs"), "--value", "tcp"])
    t.check("a wheel's .libs directory: its libucp-a.so.0 is the one", p.returncode == 0 and
            out.startswith("UCX         %s (version 1.22.0-fake)" % os.path.join(d, "a.libs", "libucp-a.so.0")), out + err)
    p, out, _, err = doctor(["--ucx", "/nonexistent/ucx"])
    t.check("a path that does not exist: exit 2, one line", p.returncode == 2 and err.count("\n") == 1
            and "/nonexistent/ucx" in err, err)
    p, out, _, err = doctor(["--ucx", tempfile.mkdtemp()])
    t.check("a directory without libucp: exit 2, one line saying where it looked",
            p.returncode == 2 and "no libucp in" in err and err.count("\n") == 1, err)
    p, out, _, err = doctor(["--ucx", os.path.join(FAKES, "not-ucx", "libucp.so.0"), "--value", "tcp"])
    t.check("a shared object that is not UCX: exit 2 (not checked), named", p.returncode == 2 and
            "it is not a UCX libucp: it has no ucp_get_version_string" in err, err)
    p, out, _, err = doctor(["--ucx", "/usr/bin", "--value", "tcp"])
    t.check("a directory of programs: no libucp", p.returncode == 2 and "no libucp in /usr/bin" in err, err)


@case("--pid: a process with no UCX, a process that does not exist, a bad PID")
def pid_errors(t):
    proc = subprocess.Popen(["sleep", "30"])
    try:
        p, out, _, err = doctor(["--pid", str(proc.pid)])
    finally:
        proc.kill()
        proc.wait()
    t.check("a process with no UCX mapped: exit 2 (nothing was checked), one line that says so, nothing on stdout",
            p.returncode == 2 and out == "" and err.count("\n") == 1 and "(sleep) has no UCX mapped" in err, err)
    p, out, _, err = doctor(["--pid", str(proc.pid)])
    t.check("a process that is gone: exit 2, 'no process'", p.returncode == 2 and "no process %d" % proc.pid in err, err)
    for bad in ("abc", "0", "-3", ""):
        p, out, _, err = doctor(["--pid", bad])
        t.check("--pid %r: exit 2, usage" % bad, p.returncode == 2 and "--pid wants a process id" in err, err)
    p, out, _, err = doctor(["--pid", "1", "--ucx", "/usr"])
    t.check("--ucx and --pid together: exit 2", p.returncode == 2 and "alternatives" in err, err)
    for bad in ("0", "600001", "1s", ""):
        p, out, _, err = doctor(["--timeout-ms", bad])
        t.check("--timeout-ms %r: exit 2, usage" % bad, p.returncode == 2 and "--timeout-ms wants" in err, err)


@case("builds that cannot exist here: NIXL's without DC, RAPIDS' without verbs, a CUDA module without libcuda.so.1")
def fake_builds(t):
    # The CUDA list (what trainers hard-code; the library's with UCXTLS_WRITE=always) judged against
    # each build; the default leaves UCX_TLS unset on a DGX, which every build serves.
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids")], env_for("dgx", preload=False))
    t.check("RAPIDS-like on a DGX, the default (UCX_TLS unset): no value to judge, nothing MISSING; the build "
            "without verbs still named (exit 1)", p.returncode == 1 and not missing and "UCX_TLS stays unset here (skip)" in out
            and "this UCX was built without verbs" in out, out + err)
    dgx = env_for("dgx", preload=False, **ALWAYS)
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl")], dgx)
    t.check("NIXL-like on a DGX: the CUDA list is served (dc_x, dc as ud_mlx5 auxiliaries, as UCX counts "
            "them), exit 0", p.returncode == 0 and not missing
            and re.search(r"^ok +dc_x -> ud_mlx5:aux$", out, re.M), out + err)
    t.check("... and the missing DC is named, with what to do",
            "this UCX was built without DC (no dc_mlx5)" in out and "UCXTLS_TEMPLATE=rc_x,rc,{copy}" in out, out)
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids")], dgx)
    t.check("RAPIDS-like on a DGX, the CUDA list: rc_x, rc, dc_x, dc MISSING, and 'built without verbs', exit 1",
            missing == {"rc_x", "rc", "dc_x", "dc"} and p.returncode == 1
            and "this UCX was built without verbs: no rc transport, although this node's RDMA runs rc" in out, out + err)
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids"), "--value", "tcp,cuda_copy"],
                                  env_for("no-rdma", preload=False))
    t.check("RAPIDS-like on a node without RDMA, tcp,cuda_copy: served, no verbs complaint, exit 0",
            p.returncode == 0 and not missing and "verbs" not in out, out + err)
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "cuda-module"), "--value", "tcp,cuda_copy"], dgx)
    module = os.path.join(FAKES, "cuda-module", "ucx", "libuct_cuda.so.0")
    t.check("a CUDA module that needs the missing libcuda.so.1: the module line with the loader's reason",
            re.search(r"^module +%s does not load here: libcuda\.so\.1: cannot open shared object file" % re.escape(module),
                      out, re.M), out)
    t.check("... cuda_copy MISSING, and the problem named as the module, not as a build without CUDA",
            "cuda_copy" in missing and "this UCX has CUDA support (libuct_cuda.so.0), but the module does not load here"
            in out and "built without CUDA" not in out and p.returncode == 1, out + err)
    p, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl")], env_for("mi300x", preload=False, **ALWAYS))
    t.check("NIXL-like on an MI300X, UCXTLS_WRITE=always: rocm_copy MISSING and 'built without ROCm support ... --with-rocm'",
            "rocm_copy" in missing and "built without ROCm support: NIXL cannot register AMD GPU memory" in out
            and "--with-rocm" in out, out + err)


@case("doctor without --ucx names the UCX that ucx_info runs on its first line")
def first_line_ucx_info(t):
    if not have("ucx_info"):
        t.skip("ucx_info", "not installed (Debian ucx-utils); scripts/test.sh installs it")
        return
    p, out, _, err = doctor(["--value", "tcp"])
    version = re.search(r"Version (\S+)", run(["ucx_info", "-v"], HERE_ENV).stdout.decode()).group(1)
    t.check("first line: UCX, the ucx_info path and its version", re.match(
        r"^UCX +the one %s runs \(version %s\)\n" % (re.escape(shutil.which("ucx_info")), re.escape(version)), out), out)


@case("an installed tree: doctor --ucx needs no helper (none is installed) and reads the build")
def installed(t):
    cmake = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
    with tempfile.TemporaryDirectory() as prefix:
        p = subprocess.run([cmake, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        helpers = [os.path.join(dp, f) for dp, _, fs in os.walk(prefix) for f in fs if f == "ucxtls-ucx-query"]
        t.check("cmake --install installs no ucxtls-ucx-query", p.returncode == 0 and helpers == [], p.stdout.decode()[-2000:])
        r = run([os.path.join(prefix, "bin", "ucxtls"), "doctor", "--ucx", os.path.join(FAKES, "nixl"), "--value", "tcp"],
                HERE_ENV)
        t.check("... and the installed ucxtls reads the build (exit 0, its UCX line)",
                r.returncode == 0 and r.stdout.startswith(b"UCX "), r.stdout.decode() + r.stderr.decode())


if __name__ == "__main__":
    main("ucxtls doctor --ucx / --pid: the UCX a program really loads")
