"""Shared helpers for the end-to-end tests: run real processes with the real libucxtls.so.

Every test script is run by CTest with UCXTLSTEST_LIB (the built library), UCXTLSTEST_BUILD_DIR and
UCXTLSTEST_SOURCE_DIR in its environment (run by hand from the source tree, they default to build/).
A script is a list of named cases (`@case("name", tags=(...))` or `add_case(name, fn, *args,
tags=(...))`), run by `main(title)`; a long script keeps some in modules it `include`s. The work
of a case runs only when it is selected. Output: "-- NAME" before each case, one line per check
("ok", "FAIL" or "SKIP" with the reason), then "N cases; N passed, N failed, N skipped". Exit
status: 1 on any failure, 77 (CTest's SKIP_RETURN_CODE: shown as "Skipped") when every selected
case was skipped, else 0. A case that raises fails alone.

A tag names what a case needs that a machine may lack (a tool, root, a kernel feature: `strace`,
`as_root`, `m32_process`). CTest selects by tag, never by name, so a case can be renamed freely:
    python3 tests/e2e/test_fixtures.py --list                   the case names (and tags), one a line
    python3 tests/e2e/test_fixtures.py --tag strace             the cases tagged strace
    python3 tests/e2e/test_fixtures.py --not-tag strace         all the others
    python3 tests/e2e/test_fixtures.py -k 'dgx and not UCX_TLS' by name (by hand only), as pytest's -k
    ctest --test-dir build -N                       the CTest tests (a script, or a part of one)
    ctest --test-dir build -R '^fixtures$' -V       one CTest test with its output
A part of a script that can be skipped (a missing tool, not root, opt-in) is a CTest test of its
own (`--tag` in tests/*/CMakeLists.txt), so that `ctest` prints "Skipped" for it; the
case_partition test checks that the CTest tests of each script select every case exactly once,
and by tags alone.

The expected values and the import path of every script are here too: a script outside tests/e2e
starts with the one line that finds this file (see docs/testing.md), and imports from it.
"""
import atexit
import contextlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)
# The modules the scripts share, beside this one: the fixture machines, the install helpers
# (tests/cli/install_checks.py), the launcher recipes (tests/launchers/recipes.py).
for _area in ("fixtures", "cli", "launchers"):
    if os.path.join(TESTS_DIR, _area) not in sys.path:
        sys.path.append(os.path.join(TESTS_DIR, _area))
SOURCE_DIR = os.environ.get("UCXTLSTEST_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD_DIR = os.environ.get("UCXTLSTEST_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
LIB = os.environ.get("UCXTLSTEST_LIB", os.path.join(BUILD_DIR, "libucxtls.so"))

import machines  # noqa: E402
from selection import USAGE, Selection  # noqa: E402

# What the library writes for UCX_TLS on an RDMA node (docs/how-it-decides.md): the RDMA
# transports, then the copy transport of the GPU family found; "all" where RDMA is not usable.
RDMA = "rc_x,rc,dc_x,dc"
C = RDMA + ",cuda_copy"  # NVIDIA
R = RDMA + ",rocm_copy"  # AMD
Z = RDMA + ",ze_copy"  # Intel (Level Zero)
NONE = RDMA  # no GPU family (UCXTLS_ACCEL=none)
ALL = "all"
UNSET = "<unset>"  # how SHOW and the C hosts print a variable that is not set
# The values above are the default template's, composed on every GPU node with UCXTLS_WRITE=always
# (the default before 0.2.0): the tests of the mechanism (families, visibility, {rdma}, re-derive)
# set it. The default (UCXTLS_WRITE=needed) writes all only where a hard-coded CUDA rc list would
# be wrong for the node (GPUs of another family; NVIDIA GPUs without an rc device), nothing
# elsewhere: its answer on the node shapes the tests name most.
ALWAYS = {"UCXTLS_WRITE": "always"}
DEFAULT_ANSWER = {"dgx": UNSET, "broadcom-roce": UNSET, "aws-p5": ALL, "intel-xe": ALL, "mi300x": ALL, "no-gpu": UNSET}

# The programs only the command runs, and where an install puts them (UCXTLS_INSTALL_HELPERDIR,
# below the prefix); a build tree and the wheel's ucxtls/_bin keep them beside the command.
HELPERS = ("ucxtls-probe",)
HELPER_DIR = "libexec/ucxtls"

# A clean, small environment: the tests control every variable the library reads.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}

_scratch = tempfile.mkdtemp(prefix="ucxtls-test-")
atexit.register(shutil.rmtree, _scratch, True)  # fixtures and homes go with the test process
EMPTY_HOME = os.path.join(_scratch, "home")  # no ucx.conf in $HOME or the working directory
os.makedirs(EMPTY_HOME)
_built = {}


def fixture(name):
    """The root of fixture machine `name`, built once per test run."""
    if name not in _built:
        _built[name] = machines.build(name, os.path.join(_scratch, "machines", name))
    return _built[name]


_LOADING = {}  # what harness.loading(build) adds to every env_for while it is in force


@contextlib.contextmanager
def loading(build):
    """Within it, every env_for also holds build.env (a UcxBuild's LD_LIBRARY_PATH), so that the
    build's own programs exec'd by path load the build's libraries, not the system's."""
    _LOADING.update(build.env if build else {})
    try:
        yield
    finally:
        _LOADING.clear()


def env_for(machine=None, preload=True, **extra):
    """An environment for a child: base variables, the library preloaded, the fixture as
    sysroot. extra: NAME=value to add, NAME=None to leave out."""
    env = dict(BASE_ENV)
    env.update(_LOADING)
    env["HOME"] = EMPTY_HOME
    if preload:
        env["LD_PRELOAD"] = LIB
    if machine:
        env["UCXTLS_SYSROOT"] = fixture(machine)
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(argv, env, cwd=None, timeout=60, input=None):
    """Runs argv; returns CompletedProcess with bytes stdout/stderr."""
    return subprocess.run(argv, env=env, cwd=cwd or EMPTY_HOME, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, input=input)


SHOW = 'printf "%s|%s" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"'


def sh_value(env, cwd=None):
    """(UCX_TLS, UCXTLS_DERIVED, stderr) as /bin/sh sees them under env."""
    p = run(["/bin/sh", "-c", SHOW], env, cwd=cwd)
    tls, derived = p.stdout.decode().split("|")
    return tls, derived, p.stderr.decode()


class EndCase(Exception):
    """Raised by Checks.exit() inside a case: the rest of that case is not run."""


class Checks:
    """Counts and prints results. Inside a case (run by main) `exit()` ends the case; outside it
    prints the closing line and sets the status."""

    def __init__(self, title):
        self.title = title
        self.passed = self.failed = self.skipped = 0
        self.in_case = False
        print("== " + title, flush=True)

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   %s" % name, flush=True)
        else:
            self.failed += 1
            print("FAIL %s%s" % (name, ("\n     " + detail.replace("\n", "\n     ")) if detail else ""), flush=True)
        return ok

    def equal(self, name, got, want, detail=""):
        return self.check(name, got == want, "got  %r\nwant %r%s" % (got, want, ("\n" + detail) if detail else ""))

    def skip(self, name, why):
        self.skipped += 1
        print("SKIP %s: %s" % (name, why), flush=True)

    def needs(self, tool, name):
        """True when tool is on PATH; else name is a SKIP that says the tool is missing."""
        if have(tool):
            return True
        self.skip(name, "%s not installed" % tool)
        return False

    def status(self):
        """1 on any failure; 77 (SKIP_RETURN_CODE) when nothing passed and something was skipped."""
        if self.failed:
            return 1
        return SKIPPED if self.skipped and not self.passed else 0

    def exit(self):
        if self.in_case:
            raise EndCase()
        print("%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped), flush=True)
        sys.exit(self.status())


# Names this run gives shared things (Podman images, runc containers): unique even where two suites
# run at once, each test in a PID namespace of its own where every test is the same small PID.
RUN_ID = "%s-%d" % (os.urandom(4).hex(), os.getpid())
SKIPPED = 77  # the exit status CTest's SKIP_RETURN_CODE names (set on every Python test)
CASES = []  # (name, function, args, tags): run in this order
_INCLUDED = set()  # the modules include() imported: their cases register
ARGS = []  # the script's own arguments (positional), once main() has taken the selection and --list
SELECTED = []  # the names of the cases main() runs (known when `start` is called)
SELECTED_TAGS = set()  # the tags of those cases


def add_case(name, fn, *args, tags=()):
    """Registers fn(t, *args) as the case `name` (names are unique within a script), with its
    tags. Only the cases of the script run as __main__ (and of the modules it includes) run:
    another script may import one for its tables (ROWS)."""
    _register(sys._getframe(1).f_globals.get("__name__"), name, fn, args, tags)


def case(name, tags=()):
    """Decorator: registers fn(t) as the case `name`, with its tags."""
    module = sys._getframe(1).f_globals.get("__name__")

    def register(fn):
        _register(module, name, fn, (), tags)
        return fn
    return register


def include(*modules):
    """Imports the modules that hold more of the running script's cases (a script split by theme):
    their cases are the script's own, after those registered so far. Call it from the script's
    `if __name__ == "__main__":` block, so that a script imported for its tables registers none."""
    for name in modules:
        _INCLUDED.add(name)
        importlib.import_module(name)


def _register(module, name, fn, args, tags):
    if isinstance(tags, str) or not all(isinstance(g, str) and re.fullmatch(r"[a-z0-9_]+", g) for g in tags):
        raise ValueError("case %r: tags are a tuple of words of [a-z0-9_]: %r" % (name, tags))
    if module != "__main__" and module not in _INCLUDED:
        return
    if any(name == c[0] for c in CASES):
        raise ValueError("two cases named %r" % name)
    CASES.append((name, fn, args, tuple(tags)))


def main(title, start=None):
    """Runs the selected cases of this script with one Checks and exits with its status. start:
    a function that returns the Checks (the launcher tests enter their namespace there); it is
    called only when a case is to run."""
    try:
        sel = Selection(sys.argv[1:])
    except ValueError as e:
        sys.stderr.write("%s\n" % e)
        sys.exit(2)
    if sel.help:
        sys.stdout.write(USAGE % os.path.basename(sys.argv[0]))
        sys.exit(0)
    ARGS.extend(sel.rest)
    unknown = sel.unknown_tags(CASES)
    if unknown:
        sys.stderr.write("no case is tagged %s; --list shows the tags\n" % ", ".join(unknown))
        sys.exit(2)
    selected = [c for c in CASES if sel.chooses(c[0], c[3])]
    if sel.listing:
        for name, _, _, tags in selected:
            print(name + ("\t" + " ".join(tags) if tags else ""), flush=True)
        sys.exit(0)
    if not selected:
        sys.stderr.write("no case is selected by %s; --list shows the names and tags\n" % " ".join(sys.argv[1:]))
        sys.exit(2)
    SELECTED.extend(c[0] for c in selected)
    SELECTED_TAGS.update(g for c in selected for g in c[3])
    t = start() if start else Checks(title)
    outcome = {"failed": [], "skipped": []}
    for name, fn, args, _ in selected:
        print("-- " + name, flush=True)
        before = (t.passed, t.failed, t.skipped)
        t.in_case = True
        try:
            fn(t, *args)
        except EndCase:
            pass
        except Exception:  # a broken case fails alone; the other cases still run
            t.check(name + ": runs to its end", False, traceback.format_exc())
        finally:
            t.in_case = False
        passed, failed, skipped = (t.passed - before[0], t.failed - before[1], t.skipped - before[2])
        if not (passed or failed or skipped):
            t.check(name + ": makes a check", False, "the case ran no check and skipped nothing")
            failed = 1
        if failed:
            outcome["failed"].append(name)
        elif skipped and not passed:
            outcome["skipped"].append(name)
    for what in ("skipped", "failed"):
        if outcome[what]:
            print("cases %s: %s" % (what, "; ".join(outcome[what])), flush=True)
    print("%d cases; %d passed, %d failed, %d skipped" % (len(selected), t.passed, t.failed, t.skipped), flush=True)
    sys.exit(t.status())


def have(tool):
    from shutil import which
    return which(tool) is not None


def closed_to_others(*paths):
    """The first directory on the way to any of paths that users other than its owner cannot enter
    (a clone in root's 0700 home), or None: a test that runs something as nobody SKIPs on it."""
    for path in paths:
        d = os.path.dirname(os.path.abspath(path))
        while True:
            try:
                if not os.stat(d).st_mode & 0o001:
                    return d
            except OSError:
                return d
            if d == "/":
                break
            d = os.path.dirname(d)
    return None


def skip_closed_to_others(t, what, *paths):
    """SKIPs `what` (True returned) where nobody cannot reach paths (closed_to_others)."""
    closed = closed_to_others(*paths)
    if closed:
        t.skip(what, "%s is closed to other users (mode %o), and this runs as nobody: run the tests from a "
               "clone others can enter" % (closed, os.stat(closed).st_mode & 0o777 if os.path.exists(closed) else 0))
    return closed is not None


def compile_c(path, source, flags=(), cc="cc", check=False):
    """Writes source to path + ".c" and compiles it to path with cc and flags (after the source:
    libraries go there); returns the CompletedProcess, its output on stdout. check: a failed
    compile raises."""
    with open(path + ".c", "w") as f:
        f.write(source)
    return subprocess.run([cc, "-o", path, path + ".c"] + list(flags), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=check)


# The UCX builds users load, from the registries (tests/wheels/install_wheels.sh, run by
# scripts/test.sh, which exports the venv as UCXTLSTEST_WHEELS, or why there is none as
# UCXTLSTEST_WHEELS_SKIP). Each build, by name:
#   "rapids"  RAPIDS' libucx-cu12 1.22.0 (site-packages/libucx: bin/ucx_info, lib/, include/),
#             built --with-cuda --without-verbs --without-rdmacm: what UCXX and Dask load
#   "nixl"    the UCX bundled in NIXL 1.5.1's nixl-cu12, 1.23.0 (site-packages/nixl_cu12.libs:
#             auditwheel-renamed libucp-<hash>.so.0.0.0 and ucx/ modules); no ucx_info is shipped
#   "ze"      a UCX with Level Zero given as a prefix in UCXTLSTEST_UCX_ZE (a site's own build:
#             no registry serves one)
class UcxBuild:
    """One UCX build: `name`, `prefix` (the directory holding it), `libucp` (its libucp's path),
    `ucx_info` (None where the build ships none) and `env` (what a program needs in its
    environment to load this build rather than the system's: the wheel's bin/ucx_info names the
    wheel's CI build directory as its RUNPATH, so without LD_LIBRARY_PATH it loads Debian's
    libucs; RAPIDS' own Python code preloads the libraries, libucx.load_library())."""

    def __init__(self, name, prefix, libdir, ucx_info):
        self.name, self.prefix, self.libdir, self.ucx_info = name, prefix, libdir, ucx_info
        self.libucp = next((os.path.join(libdir, f) for f in sorted(os.listdir(libdir))
                            if re.match(r"libucp(-[0-9a-f]+)?\.so\.0", f)), None)
        self.env = {"LD_LIBRARY_PATH": libdir}


def wheels():
    """(venv, None) for the venv scripts/test.sh installed the registry wheels into, or
    (None, why) to print as the SKIP reason."""
    venv = os.environ.get("UCXTLSTEST_WHEELS")
    if not venv:
        return None, os.environ.get("UCXTLSTEST_WHEELS_SKIP") or (
            "UCXTLSTEST_WHEELS is unset: scripts/test.sh installs the pinned wheels and sets it; by "
            "hand: export UCXTLSTEST_WHEELS=$(tests/wheels/install_wheels.sh)")
    if not os.access(os.path.join(venv, "bin", "python"), os.X_OK):
        return None, "UCXTLSTEST_WHEELS=%s is not a venv (no bin/python)" % venv
    return venv, None


def ucxx_python():
    """(the python of the UCXX venv beside the wheels' venv, None), or (None, why)."""
    venv, why = wheels()
    if not venv:
        return None, why
    python = venv + "-ucxx/bin/python"
    if not os.access(python, os.X_OK):
        return None, "no UCXX venv beside UCXTLSTEST_WHEELS (%s-ucxx): tests/wheels/install_wheels.sh makes it" % venv
    return python, None


def site_packages(venv):
    lib = os.path.join(venv, "lib")
    return os.path.join(lib, next(d for d in sorted(os.listdir(lib)) if d.startswith("python")), "site-packages")


def ucx_build(name):
    """(UcxBuild, None) for the build `name` ("rapids", "nixl", "ze"), or (None, why)."""
    if name == "ze":
        prefix = os.environ.get("UCXTLSTEST_UCX_ZE")
        if not prefix:
            return None, ("no UCX with Level Zero: no registry serves one (Debian's is 1.13 without it; "
                          "NIXL's and RAPIDS' wheels are built without it); give a site's own build as "
                          "UCXTLSTEST_UCX_ZE=PREFIX")
        if not os.access(os.path.join(prefix, "bin", "ucx_info"), os.X_OK):
            return None, "UCXTLSTEST_UCX_ZE=%s holds no bin/ucx_info" % prefix
        return UcxBuild("ze", prefix, os.path.join(prefix, "lib"), os.path.join(prefix, "bin", "ucx_info")), None
    venv, why = wheels()
    if not venv:
        return None, why
    site = site_packages(venv)
    if name == "rapids":
        prefix = os.path.join(site, "libucx")
        return UcxBuild(name, prefix, os.path.join(prefix, "lib"), os.path.join(prefix, "bin", "ucx_info")), None
    prefix = os.path.join(site, "nixl_cu12.libs")
    return UcxBuild(name, prefix, prefix, None), None


def ucx_build_or_skip(t, name, what=None):
    """The UcxBuild `name`, or None after a SKIP of `what` (by default "UCX build NAME") saying why."""
    build, why = ucx_build(name)
    if not build:
        t.skip(what or "UCX build %s" % name, why)
    return build


# The fake Intel GPU (tests/ze/fake_gpu_driver.c), which Level Zero's loader loads through
# ZE_ENABLE_ALT_DRIVERS.
FAKE_ZE_GPU = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))


def ze_build_with_gpu(t, what):
    """The UcxBuild "ze" with the fake GPU built, or None after a SKIP of `what` saying which is missing."""
    build = ucx_build_or_skip(t, "ze")
    if build and not os.path.exists(FAKE_ZE_GPU):
        t.skip(what, "the fake Level Zero GPU driver (tests/ze) is not built: %s" % FAKE_ZE_GPU)
        return None
    return build
