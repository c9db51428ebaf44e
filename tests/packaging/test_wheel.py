#!/usr/bin/env python3
"""The Python wheel (README "Install", docs/install.md "Python wheel"), built and used as a user
does: the README's `wheel` block run as printed in a copy of the checkout (offline: Debian's
python3-setuptools and python3-wheel, no build isolation), installed into a fresh venv with
`pip install --no-index`, then `ucxtls run` and `python -m ucxtls run` on a replayed Intel node
(all, the default there), through a symlink from another directory, and the other commands.

The tag is checked the way auditwheel checks it, independently of the code that chose it: every
ELF file of the wheel, read with binutils' objdump, may need only the libraries every manylinux
system has, and no symbol version newer than the tag's glibc (and C++ runtime, per the table of
packaging/wheel_tag.py) provides.

The isolated build (`pip install .` where a registry is reachable) is run with the registry
replaced by a directory of the same wheels: Debian's python3-setuptools-whl and python3-wheel-whl.
"""
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, HELPER_DIR, HELPERS, SOURCE_DIR, ALL, case, env_for, have, main, run  # noqa: E402
from recipes import block, commands  # noqa: E402

CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
WHEELHOUSE = os.environ.get("UCXTLSTEST_WHEELHOUSE", "/usr/share/python-wheels")  # Debian's *-whl packages
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-wheel-")
_state = {}


def wheel_tag_table():
    spec = importlib.util.spec_from_file_location("wheel_tag", os.path.join(SOURCE_DIR, "packaging", "wheel_tag.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_python():
    """A python3 that can build the wheel offline and make a venv: the tests' own, else Debian's."""
    for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import setuptools, wheel, pip, venv, ensurepip"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return os.path.realpath(py)
    return None


def tools_path(python):
    """PATH for the build: a directory whose python3 is `python`, then CMake's, then the system's."""
    pybin = os.path.join(SCRATCH, "python-bin")
    if not os.path.isdir(pybin):
        os.makedirs(pybin)
        os.symlink(python, os.path.join(pybin, "python3"))
    cmake_dir = os.path.dirname(shutil.which(CMAKE) or CMAKE)
    return ":".join([pybin, cmake_dir, "/usr/local/bin:/usr/bin:/bin"])


def checkout_copy(name):
    """A copy of the source tree without build outputs, as a fresh clone has it."""
    dest = os.path.join(SCRATCH, name)
    skip = re.compile(r"^(build.*|dist|\.git|.*\.egg-info|__pycache__)$")
    shutil.copytree(SOURCE_DIR, dest, ignore=lambda d, names: [n for n in names if skip.match(n)], symlinks=True)
    return dest


def sh(line, env, cwd):
    p = subprocess.run(["/bin/sh", "-c", line], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=900)
    return p.returncode, p.stdout.decode(errors="replace")


def need_python(t):
    py = build_python()
    if not py:
        t.skip("the wheel", "no python3 with pip, setuptools, wheel and venv (Debian python3-pip, python3-setuptools, "
               "python3-wheel, python3-venv; scripts/test.sh installs them)")
        t.exit()
    return py


def built(t):
    """(wheel path, venv dir): the README's block run once per test process; exits the case on failure."""
    if "venv" in _state:
        return _state["wheel"], _state["venv"]
    py = need_python(t)
    lines = commands("wheel")
    t.check("the README's wheel block: the offline build, then the install into a venv",
            len(lines) == 2 and "--no-build-isolation" in lines[0] and "--no-index" in lines[1], repr(lines))
    src = checkout_copy("checkout")
    code, out = sh(lines[0], dict(env_for(None, preload=False), PATH=tools_path(py)), src)
    wheels = glob.glob(os.path.join(src, "dist", "*.whl"))
    if not t.check("%s: exit 0, one wheel in dist/" % lines[0], code == 0 and len(wheels) == 1, out[-3000:]):
        t.exit()
    # A venv where a user might have one: a deep directory whose name has dots and dashes.
    venv = os.path.join(SCRATCH, "home", "me", "venvs", "ml-env.v1")
    p = subprocess.run([py, "-m", "venv", venv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t.check("python3 -m venv makes a fresh venv", p.returncode == 0, p.stdout.decode())
    activated = dict(env_for(None, preload=False), PATH=os.path.join(venv, "bin") + ":/usr/bin:/bin", VIRTUAL_ENV=venv)
    code, out = sh(lines[1], activated, src)
    if not t.check("%s (venv activated): exit 0" % lines[1], code == 0, out[-3000:]):
        t.exit()
    _state.update(wheel=wheels[0], venv=venv, python=py)
    return wheels[0], venv


def objdump_needs(path):
    """([NEEDED], {version name}) of an ELF file as binutils' objdump -p prints them."""
    out = subprocess.run(["objdump", "-p", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    needed = re.findall(r"^\s+NEEDED\s+(\S+)$", out, re.M)
    refs = out.split("Version References:", 1)[1] if "Version References:" in out else ""
    return needed, set(re.findall(r"^\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)$", refs, re.M))


def number(v):
    return tuple(int(x) for x in v.split("."))


@case("wheel: the README's offline build gives a py3-none-manylinux wheel")
def wheel_built(t):
    wheel, _ = built(t)
    name = os.path.basename(wheel)
    version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
    t.check("the file name: ucxtls-<project version>-py3-none-manylinux_2_N_<arch>.whl",
            re.match(r"^ucxtls-%s-py3-none-manylinux_2_\d+_x86_64\.whl$" % re.escape(version), name), name)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        wheel_meta = z.read("ucxtls-%s.dist-info/WHEEL" % version).decode()
        entry = z.read("ucxtls-%s.dist-info/entry_points.txt" % version).decode()
        meta = z.read("ucxtls-%s.dist-info/METADATA" % version).decode()
    description = re.search(r'DESCRIPTION "([^"]*)"', open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
    t.check("METADATA: the project's description (CMakeLists.txt) and licence",
            ("\nSummary: %s\n" % description) in meta and "\nLicense: BSD-3-Clause\n" in meta, meta[:600])
    tag = name[:-4].split("-", 2)[2]
    t.check("WHEEL: Root-Is-Purelib false, the same tag as the file name",
            "Root-Is-Purelib: false" in wheel_meta and ("Tag: %s\n" % tag) in wheel_meta, wheel_meta)
    t.check("it holds the library, the command, its helpers beside it, the launcher and the man page",
            {"ucxtls/_bin/libucxtls.so", "ucxtls/_bin/ucxtls", "ucxtls/__main__.py",
             "ucxtls-%s.data/data/share/man/man1/ucxtls.1" % version} | {"ucxtls/_bin/" + h for h in HELPERS} <= names,
            repr(sorted(names)))
    t.check("entry point: ucxtls = ucxtls.__main__:main", re.search(r"^ucxtls = ucxtls\.__main__:main$", entry, re.M), entry)


@case("wheel: the README's offline build with a Python that lacks wheel (setuptools < 70.1): one line, no traceback; "
      "the README's remedy, then the build")
def wheel_without_wheel(t):
    # A venv made by the tests' python3 (on Debian 12: pip 23 and setuptools 66 from ensurepip, no
    # wheel) is the Python a pyenv user has: setuptools before 70.1 has no bdist_wheel of its own.
    py = need_python(t)
    venv = os.path.join(SCRATCH, "no-wheel-venv")
    subprocess.run([py, "-m", "venv", venv], check=True, stdout=subprocess.DEVNULL)
    vpy = os.path.join(venv, "bin", "python3")
    probe = subprocess.run([vpy, "-c", "import importlib.util, setuptools; print(setuptools.__version__, "
                            "importlib.util.find_spec('wheel') is not None)"], stdout=subprocess.PIPE)
    version, has_wheel = (probe.stdout.decode().split() + ["?", "?"])[:2]
    old = re.match(r"(\d+)\.(\d+)", version) and tuple(int(x) for x in version.split(".")[:2]) < (70, 1)
    if not old or has_wheel != "False":
        t.skip("a Python without wheel", "the venv %s makes has setuptools %s and wheel %s: setuptools >= 70.1 or "
               "wheel present, so the build cannot fail this way here" % (py, version, has_wheel))
        return
    line = commands("wheel")[0]
    src = checkout_copy("checkout-no-wheel")
    env = dict(env_for(None, preload=False), PATH=os.path.join(venv, "bin") + ":" + tools_path(py), VIRTUAL_ENV=venv)
    code, out = sh(line, env, src)
    ours = [l.strip() for l in out.splitlines() if l.strip().startswith("ucxtls: ")]
    t.check("%s with setuptools %s and no wheel: fails, no wheel in dist/" % (line, version),
            code != 0 and not glob.glob(os.path.join(src, "dist", "*.whl")), out[-3000:])
    t.check("no Python traceback in the output", "Traceback" not in out, out[-3000:])
    t.check("one ucxtls line naming the Python, its setuptools version, and what to do (wheel, setuptools >= 70.1, "
            "or /usr/bin/python3 with Debian's python3-wheel)",
            len(ours) == 1 and vpy in ours[0] and ("setuptools %s" % version) in ours[0] and "70.1" in ours[0]
            and "install wheel" in ours[0] and "/usr/bin/python3" in ours[0] and "python3-wheel" in ours[0], out[-3000:])
    # The README's block says which python3 it needs, and the remedy for a pyenv/conda/venv one: run
    # as printed there, with Debian's wheels standing in for the registry (no network here).
    remedy = re.findall(r"python3 -m pip install setuptools wheel", block("wheel"))
    if not t.check("the README's wheel block names the remedy `python3 -m pip install setuptools wheel`", len(remedy) == 1,
                   block("wheel")):
        return
    registry = dict(env, PIP_NO_INDEX="1", PIP_FIND_LINKS=WHEELHOUSE)
    code, fix = sh(remedy[0], registry, src)
    code2, out = sh(line, env, src) if code == 0 else (code, "")
    t.check("%s (Debian's wheels as the registry), then %s: exit 0, one wheel in dist/" % (remedy[0], line),
            code == 0 and code2 == 0 and len(glob.glob(os.path.join(src, "dist", "*.whl"))) == 1,
            fix[-1500:] + out[-1500:])


@case("wheel: every ELF file needs no more than its tag allows (auditwheel's check, with objdump)")
def wheel_tag(t):
    wheel, _ = built(t)
    if not have("objdump"):
        t.skip("the tag against the ELF files", "objdump (binutils) is not installed")
        return
    table = wheel_tag_table()
    m = re.search(r"-manylinux_2_(\d+)_(\w+)\.whl$", wheel)
    minor = int(m.group(1))
    runtime = [has for row_minor, has in table.CXX_RUNTIME if row_minor <= minor][-1]  # the tag's C++ runtime
    unpacked = os.path.join(SCRATCH, "unpacked")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked)
    elves, newest = [], {}
    for d, _, files in os.walk(unpacked):
        for f in files:
            path = os.path.join(d, f)
            with open(path, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            rel = os.path.relpath(path, unpacked)
            elves.append(rel)
            needed, versions = objdump_needs(path)
            t.check("%s: needs only system libraries (%s)" % (rel, ", ".join(needed)),
                    set(needed) <= table.SYSTEM_LIBRARIES, repr(needed))
            too_new = []
            for v in versions:
                prefix, _, num = v.partition("_")
                if prefix == "GLIBC" and re.match(r"^\d+(\.\d+)+$", num):
                    newest[rel] = max(newest.get(rel, (2, 0)), number(num))
                    if number(num)[:2] > (2, minor):
                        too_new.append(v)
                elif prefix in runtime and number(num) > runtime[prefix]:
                    too_new.append(v)
            t.check("%s: no symbol version newer than manylinux_2_%d allows (newest GLIBC_%s)" % (
                rel, minor, ".".join(map(str, newest.get(rel, ())))), not too_new, repr(sorted(too_new)))
    # What `cmake --install` puts in the libdir (the library) and in libexec/ucxtls (the helpers), and the command.
    prefix = os.path.join(SCRATCH, "installed")
    subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.DEVNULL, check=True)
    libdir = [d for d in ("lib", "lib64") if os.path.exists(os.path.join(prefix, d, "libucxtls.so"))]
    want = sorted(["ucxtls"] + [n for d in (libdir[0], HELPER_DIR) for n in os.listdir(os.path.join(prefix, d))
                                if n != "pkgconfig"])
    t.equal("the ELF files are the command and what cmake --install puts in the libdir and %s" % HELPER_DIR,
            sorted(os.path.basename(e) for e in elves), want)
    lib = [e for e in elves if e.endswith("libucxtls.so")]
    t.check("the wheel's library keeps the library's floor: GLIBC_2.17 at most",
            lib and newest.get(lib[0], (2, 0)) <= (2, 17), repr(newest))
    t.equal("the tag is the oldest the files allow (the newest GLIBC_ any of them needs, at least 2.17)",
            minor, max([17] + [v[1] for v in newest.values()]))


@case("wheel: ucxtls and python -m ucxtls in the venv, also through a symlink")
def wheel_commands(t):
    _, venv = built(t)
    bindir = os.path.join(venv, "bin")
    site_lib = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "ucxtls", "_bin", "libucxtls.so"))
    if not t.check("the library is inside the venv's site-packages", len(site_lib) == 1, repr(site_lib)):
        return
    lib = os.path.realpath(site_lib[0])
    show = 'printf "%s|%s|" "$UCX_TLS" "$LD_PRELOAD"; grep -qF "$LD_PRELOAD" /proc/self/maps && echo mapped; grep ^SigIgn /proc/self/status'
    link_dir = os.path.join(SCRATCH, "elsewhere", "bin")
    os.makedirs(link_dir)
    os.symlink(os.path.join(bindir, "ucxtls"), os.path.join(link_dir, "ucxtls"))
    direct = run(["/bin/sh", "-c", "grep ^SigIgn /proc/self/status"], env_for(None, preload=False)).stdout.decode()
    for label, argv, path in (
            ("ucxtls run (the venv's command)", [os.path.join(bindir, "ucxtls"), "run"], bindir),
            ("python -m ucxtls run", [os.path.join(bindir, "python"), "-m", "ucxtls", "run"], bindir),
            ("ucxtls run through a symlink in another directory, venv not on PATH",
             [os.path.join(link_dir, "ucxtls"), "run"], link_dir)):
        p = run(argv + ["/bin/sh", "-c", show], env_for("intel-xe", preload=False, PATH=path + ":/usr/bin:/bin"))
        t.equal("%s on the intel-xe machine: all (the default there), LD_PRELOAD the wheel's library, mapped, "
                "signals as a shell starts them" % label, p.stdout.decode(), "%s|%s|mapped\n%s" % (ALL, lib, direct),
                p.stderr.decode())
    env = env_for("intel-xe", preload=False, PATH=bindir + ":/usr/bin:/bin")
    p = run(["ucxtls", "lib"], env)
    q = run(["python", "-c", "import ucxtls; print(ucxtls.library_path())"], env)
    t.equal("ucxtls lib and ucxtls.library_path() print the wheel's library", (p.stdout.decode(), q.stdout.decode()),
            (lib + "\n", lib + "\n"), p.stderr.decode() + q.stderr.decode())
    p = run(["ucxtls", "explain"], env)
    t.check("ucxtls explain: exit 0, all written (the default on intel-xe)",
            p.returncode == 0 and "\nUCX_TLS   all (written with UCXTLS_DERIVED)\n" in p.stdout.decode(), repr(p))
    p = run(["ucxtls", "env"], env)
    t.equal("ucxtls env: the export lines", (p.stdout.decode(), p.returncode),
            ("export UCX_TLS='%s'\nexport UCXTLS_DERIVED='%s'\n" % (ALL, ALL), 0), p.stderr.decode())
    p = run(["python", "-m", "ucxtls", "run", "--help"], env)
    t.check("python -m ucxtls run --help: usage on stdout, exit 0",
            p.returncode == 0 and p.stdout.startswith(b"usage: ucxtls run"), repr(p))
    if have("ucx_info"):
        p = run(["ucxtls", "doctor", "--value", "tcp,self"], env_for(None, preload=False, PATH=bindir + ":/usr/bin:/bin"))
        t.check("ucxtls doctor --value tcp,self (the local ucx_info): exit 0", p.returncode == 0, repr(p))
    else:
        t.skip("ucxtls doctor from the venv", "ucx_info is not installed (Debian ucx-utils)")
    if have("man"):
        p = run(["man", "-w", "ucxtls"], env)
        t.equal("man -w ucxtls, the venv's bin on PATH: the wheel's page in <venv>/share/man (found from PATH)",
                p.stdout.decode().strip(), os.path.join(venv, "share", "man", "man1", "ucxtls.1"), p.stderr.decode())
    # A venv whose path has a space: pip copes, LD_PRELOAD cannot; the command says so.
    spaced = os.path.join(SCRATCH, "my venvs", "a")
    subprocess.run([_state["python"], "-m", "venv", spaced], check=True, stdout=subprocess.DEVNULL)
    p = subprocess.run([os.path.join(spaced, "bin", "pip"), "install", "-q", "--no-index", _state["wheel"]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    q = run([os.path.join(spaced, "bin", "ucxtls"), "lib"], env_for(None, preload=False))
    t.check("a venv path with a space: ucxtls lib exits 2 with one stderr line saying LD_PRELOAD cannot hold it",
            p.returncode == 0 and q.returncode == 2 and q.stdout == b"" and q.stderr.count(b"\n") == 1
            and b"space or colon" in q.stderr, p.stdout.decode() + repr(q))


@case("wheel: isolated build (pip install . with setuptools and wheel from an index)", tags=("isolated",))
def wheel_isolated(t):
    py = need_python(t)
    have_whl = all(glob.glob(os.path.join(WHEELHOUSE, n + "-*.whl")) for n in ("setuptools", "wheel"))
    if not have_whl:
        t.skip("the isolated build", "no setuptools and wheel wheels in %s (Debian python3-setuptools-whl, "
               "python3-wheel-whl; scripts/test.sh installs them)" % WHEELHOUSE)
        return
    src = checkout_copy("checkout-isolated")
    venv = os.path.join(SCRATCH, "isolated-venv")
    subprocess.run([py, "-m", "venv", venv], check=True, stdout=subprocess.DEVNULL)
    env = dict(env_for(None, preload=False), PATH=os.path.join(venv, "bin") + ":" + tools_path(py), VIRTUAL_ENV=venv)
    code, out = sh("pip install --no-index --find-links %s ." % WHEELHOUSE, env, src)
    t.check("pip install . (build isolation on, the index a directory of Debian's wheels): exit 0, "
            "build requirements installed from it", code == 0 and "Installing build dependencies" in out
            and re.search(r"Successfully installed ucxtls-", out), out[-3000:])
    p = run([os.path.join(venv, "bin", "ucxtls"), "run", "/bin/sh", "-c", 'printf %s "$UCX_TLS"'],
            env_for("intel-xe", preload=False))
    t.equal("the installed command: ucxtls run on the intel-xe machine gives all (the default there)", p.stdout.decode(), ALL,
            p.stderr.decode())


if __name__ == "__main__":
    try:
        main("the Python wheel: built as the README says, installed, used")
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
