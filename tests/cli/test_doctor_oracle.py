#!/usr/bin/env python3
"""Fidelity: what `ucxtls doctor --ucx X --json` reads of a build (ucx[0].transports, and modules:
whether each loads, the missing library in why) against what loading it finds. The oracle
(tests/cli/ucx_oracle.cc, a test program) dlopens the build as nobody (setpriv), lets UCX load its
modules, reads the uct_<name>_tl definitions of every mapped object in memory, and dlopens each
module UCX left out for dlerror. Every build the tests have: Debian's UCX 1.13, RAPIDS' libucx
1.22.0 and NIXL 1.5.1's UCX 1.23 (copied where nobody can read them), each with and without the
fake CUDA driver (tests/cuda) on LD_LIBRARY_PATH, the fake builds of tests/cli (a Level Zero module
too) and hostile ones. Where the two differ for a reason (loading hangs or crashes, so the oracle
has no answer), the line says why. SKIP: not root, no setpriv, no wheels (those rows)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, env_for, main  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(harness.LIB), "ucxtls"))
ORACLE = os.environ.get("UCXTLSTEST_ORACLE", os.path.join(harness.BUILD_DIR, "tests", "cli", "ucx_oracle"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(harness.BUILD_DIR, "tests", "cli", "fakes-ucx"))
FAKE_CUDA = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(harness.BUILD_DIR, "tests", "cuda", "lib"))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
DEBIAN = "/usr/lib/x86_64-linux-gnu/libucp.so.0"
WORK = tempfile.mkdtemp(prefix="ucxtls-oracle-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
ROWS = []  # (build, transports agree, modules agree): printed as docs/testing.md's table


def oracle(libucp, extra, load_modules=False):
    """What loading found, as nobody: (transports set, {module realpath: (loads, missing)}, None),
    or (None, None, why it has no answer)."""
    argv = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", ORACLE] + (["--load-modules"] if load_modules else []) + [libucp]
    try:
        p = subprocess.run(argv, env=env_for(None, preload=False, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=20)
    except subprocess.TimeoutExpired:
        return None, None, "loading it hangs (killed at 20 s)"
    lines = p.stdout.decode(errors="replace").splitlines()
    if p.returncode < 0:
        return None, None, "loading it dies of signal %d" % -p.returncode
    if "end" not in lines:
        return None, None, "the oracle gave no answer: %r" % (lines[-3:] + [p.stderr.decode(errors="replace")[-300:]])
    tls, mods = set(), {}
    for line in lines:
        w = line.split(" ", 3)
        if w[0] == "transport":
            tls.add(w[1])
        elif w[0] == "module":
            mods[os.path.realpath(w[1])] = (w[2] == "loaded", missing_lib(w[3] if len(w) > 3 else ""))
        elif w[0] == "error":
            return None, None, line
    return tls, mods, None


def missing_lib(why):
    """The library a load error names ("libcuda.so.1: cannot open ..." -> libcuda.so.1); "" for another error."""
    if ": cannot open shared object file" in why:
        return why.split(": cannot open shared object file")[0].split(": ")[-1]
    return ""


def doctor(libucp, extra):
    p = subprocess.run([CLI, "doctor", "--json", "--ucx", libucp, "--value", "tcp"], env=env_for(None, preload=False, **extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return None, None, "doctor --json gave no JSON (exit %d): %r" % (p.returncode, p.stderr[-300:])
    if not j.get("ucx"):
        return None, None, "doctor read no build: %r" % j.get("messages")
    u = j["ucx"][0]
    mods = {os.path.realpath(m["path"]): (m["loads"], missing_lib(m["why"] or "")) for m in u["modules"]}
    return set(u["transports"]), mods, None


def compare(t, name, libucp, extra=None, reason=None, fake_loader=False):
    """One row: doctor's reading against the oracle's loading. reason: why they may differ.
    fake_loader: the libucp is a fake without UCX's module loader: the oracle loads each module."""
    extra = extra or {}
    o_tls, o_mods, o_why = oracle(libucp, extra, fake_loader)
    d_tls, d_mods, d_why = doctor(libucp, extra)
    if o_why and d_why and "not a UCX libucp" in o_why and "not a UCX libucp" in d_why:
        t.check("%s: neither reading nor loading takes it for a UCX libucp" % name, True)
        ROWS.append((name, "yes (neither: not a UCX libucp)", "yes (neither)"))
        return
    if not t.check("%s: doctor read it" % name, d_why is None, d_why or ""):
        return
    if o_why:
        # No answer from loading: only a known reason counts, and doctor must have answered anyway.
        t.check("%s: the oracle has no answer (%s), for the reason the row gives: %s" % (name, o_why, reason),
                reason is not None and reason.split(":")[0] in o_why,
                "doctor: %r %r" % (d_tls, d_why))
        ROWS.append((name, "no oracle: " + reason, "no oracle: " + reason))
        return
    tls_ok = t.check("%s: transports agree (%s)" % (name, ", ".join(sorted(o_tls)) or "none"), d_tls == o_tls,
                     "doctor %s, loading %s" % (sorted(d_tls), sorted(o_tls)))
    # Modules: every one doctor lists is one loading tried, with the same outcome and missing library.
    # Loading lists too the modules of a framework whose own module did not load, which UCX never tries.
    same = all(o_mods.get(p) is not None and (d[0] == o_mods[p][0] and (d[0] or d[1] == o_mods[p][1]))
               for p, d in d_mods.items())
    untried = [p for p in o_mods if p not in d_mods]
    parents_failed = all(any(os.path.basename(p).startswith(os.path.basename(q).split(".")[0] + "_") and not d_mods[q][0]
                             for q in d_mods) for p in untried)
    mods_ok = t.check("%s: modules agree (%d: %d load)" % (name, len(d_mods), sum(1 for d in d_mods.values() if d[0])),
                      same and parents_failed,
                      "doctor %r\nloading %r" % (sorted(d_mods.items()), sorted(o_mods.items())))
    if fake_loader:
        name += " (a fake libucp: the oracle loads its modules as UCX's loader would)"
    ROWS.append((name, "yes" if tls_ok else "NO", ("yes" if mods_ok else "NO") +
                 (" (%d more that UCX never tries: their framework's module does not load)" % len(untried) if untried else "")))


def needs(t):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        t.skip("the oracle as nobody", "not root" if os.geteuid() else "no setpriv")
        return False
    if harness.skip_closed_to_others(t, "the oracle as nobody", ORACLE):
        return False
    return t.check("the oracle is built", os.access(ORACLE, os.X_OK), ORACLE)


def cuda_env():
    return {"LD_LIBRARY_PATH": FAKE_CUDA}


@case("Debian's UCX 1.13: doctor's reading agrees with loading it")
def debian(t):
    if not needs(t):
        return
    if not os.path.exists(DEBIAN):
        t.skip("Debian's UCX 1.13", "no %s (Debian: apt-get install libucx0)" % DEBIAN)
        return
    compare(t, "Debian's UCX 1.13", DEBIAN)


def wheel_copy(t, what):
    """The wheels' builds, copied where nobody can read them (the venv is under /root): {name: libucp}."""
    venv, why = harness.wheels()
    if not venv:
        t.skip(what, why)
        return None
    site = harness.site_packages(venv)
    dest = os.path.join(WORK, "site-packages")
    if not os.path.isdir(dest):
        skip = shutil.ignore_patterns("*.a", "*.la", "include", "bin", "*.h", "__pycache__", "pkgconfig", "cmake")
        for d in ("libucx", "libucx_cu12.libs", "nixl_cu12.libs"):
            if os.path.isdir(os.path.join(site, d)):
                shutil.copytree(os.path.join(site, d), os.path.join(dest, d), symlinks=True, ignore=skip)
    nixl = [f for f in os.listdir(os.path.join(dest, "nixl_cu12.libs")) if f.startswith("libucp-")]
    return {"RAPIDS' libucx 1.22.0": os.path.join(dest, "libucx", "lib", "libucp.so.0"),
            "NIXL 1.5.1's UCX 1.23": os.path.join(dest, "nixl_cu12.libs", nixl[0])}


@case("RAPIDS' and NIXL's UCX, with and without the fake CUDA driver: doctor's reading agrees with loading them")
def wheels(t):
    if not needs(t):
        return
    builds = wheel_copy(t, "the wheels' UCX builds")
    if not builds:
        return
    for name, lib in builds.items():
        compare(t, name, lib)
        compare(t, name + ", fake CUDA driver on LD_LIBRARY_PATH", lib, cuda_env())


def fake(name, *defines, module=None, module_libs=()):
    """A fake build in WORK/name (fake_ucx.c), with a module ucx/<module> when given."""
    d = os.path.join(WORK, "fakes", name)
    os.makedirs(os.path.join(d, "ucx"), exist_ok=True)
    lib = os.path.join(d, "libucp.so.0")
    subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-o", lib, SRC] + ["-D%s=1" % x for x in defines], check=True)
    if module:
        subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-o", os.path.join(d, "ucx", module), SRC,
                        "-DFAKE_UCX_NOT_UCX=1", "-DFAKE_UCX_TLS_ZE_MODULE=1", "-Wl,--no-as-needed"] + list(module_libs), check=True)
    return lib


@case("the fake and hostile builds of tests/cli: doctor's reading agrees with loading them, or the row says why not")
def fakes(t):
    if not needs(t):
        return
    for build in ("nixl", "rapids", "cuda-module", "not-ucx"):
        compare(t, "fake %s" % build, os.path.join(FAKES, build, "libucp.so.0"), fake_loader=True)
    compare(t, "fake cuda-module, fake CUDA driver on LD_LIBRARY_PATH", os.path.join(FAKES, "cuda-module", "libucp.so.0"),
            cuda_env(), fake_loader=True)
    compare(t, "fake hang", os.path.join(FAKES, "hang", "libucp.so.0"), reason="loading it hangs: its constructor never returns")
    compare(t, "fake crash", os.path.join(FAKES, "crash", "libucp.so.0"),
            reason="loading it dies of signal 11: uct_query_components raises SIGSEGV")
    compare(t, "fake Level Zero (libuct_ze loads)", fake("ze", "FAKE_UCX_TLS_NONE", module="libuct_ze.so.0"), fake_loader=True)
    compare(t, "fake Level Zero, its module needing the Level Zero loader",
            fake("ze-loader", "FAKE_UCX_TLS_NONE", module="libuct_ze.so.0", module_libs=["-l:libze_loader.so.1"]),
            fake_loader=True)
    stub = os.path.join(WORK, "libze_intel_gpu_none.so.1")
    subprocess.run(["cc", "-shared", "-o", stub, "-Wl,-soname,libze_intel_gpu_none.so.1", "-x", "c", "/dev/null"], check=True)
    lib = fake("ze-missing", "FAKE_UCX_TLS_NONE", module="libuct_ze.so.0", module_libs=[stub])
    os.unlink(stub)
    compare(t, "fake Level Zero, its module needing a library that is not here", lib, fake_loader=True)
    # -z nodefaultlib: ld.so looks for its libraries neither in ld.so.cache's default directories nor in them.
    compare(t, "fake build, its module marked nodefaultlib needing libz.so.1 (found only in the defaults)",
            fake("nodeflib", "FAKE_UCX_TLS_NONE", module="libuct_ze.so.0", module_libs=["-lz", "-Wl,-z,nodefaultlib"]),
            fake_loader=True)
    # Hostile module files beside a fake build: cut short, 32-bit, not ELF, a link to itself.
    d = os.path.dirname(fake("hostile-modules", "FAKE_UCX_TLS_NIXL"))
    good = os.path.join(FAKES, "cuda-module", "ucx", "libuct_cuda.so.0")
    with open(good, "rb") as f, open(os.path.join(d, "ucx", "libuct_cut.so.0"), "wb") as g:
        g.write(f.read(100))
    with open(os.path.join(d, "ucx", "libuct_text.so.0"), "w") as f:
        f.write("INPUT(libc.so.6)\n")
    subprocess.run(["cc", "-m32", "-shared", "-o", os.path.join(d, "ucx", "libuct_m32.so.0"), "-x", "c", "/dev/null"], check=False)
    compare(t, "fake build with hostile modules (cut short, a linker script, 32-bit)", os.path.join(d, "libucp.so.0"), fake_loader=True)


@case("the table: build, transports agree, modules agree (docs/testing.md)")
def table(t):
    print("| Build | Transports agree | Modules agree |\n|---|---|---|")
    for r in ROWS:
        print("| %s | %s | %s |" % r)
    t.check("every row compared or said why not", all(r[1] != "NO" and not r[2].startswith("NO") for r in ROWS), repr(ROWS))


if __name__ == "__main__":
    main("doctor's reading of each build against loading it (the oracle)")
