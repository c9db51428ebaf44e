#!/usr/bin/env python3
"""The Spack recipe packaging/spack/package.py, without Spack (not packaged in Debian; the tests
have no network): it compiles, and imported against a stand-in `spack` made here (the directives
recorded; CMakePackage.define formatting -D options as Spack's CMakeBuilder.define does) its
cmake_args() are the arguments a real configure accepts: the project is configured with Spack's
standard arguments plus those, and CMake must not report any of them unused; then built and
installed, and the recipe's run environment (LD_PRELOAD), its install check and its
determine_version (`spack external find`) are run against the installed files.

What the stand-in cannot show: Spack's concretizer, its compiler wrappers and its fetching.
"""
import os
import py_compile
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import HELPER_DIR, HELPERS, SOURCE_DIR, case, main  # noqa: E402

RECIPE = os.path.join(SOURCE_DIR, "packaging", "spack", "package.py")
CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-spack-")

# The stand-in: what the recipe imports, with the behaviour the recipe relies on.
STUB_PACKAGE = r'''
import os
import subprocess

DIRECTIVES = []


def _directive(name):
    def record(*args, **kwargs):
        DIRECTIVES.append((name, args, kwargs))
    return record


for _name in ("version", "variant", "depends_on", "license", "maintainers", "conflicts", "patch", "provides"):
    globals()[_name] = _directive(_name)


class InstallError(Exception):
    pass


class Prefix(str):
    """Spack's Prefix: attribute access joins a path component."""
    def __getattr__(self, name):
        return Prefix(os.path.join(self, name))


def join_path(*parts):
    return os.path.join(*parts)


class Executable:
    def __init__(self, path):
        self.path = str(path)

    def __call__(self, *args, output=None, error=None):
        p = subprocess.run([self.path] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if p.returncode:
            raise InstallError("%s %s: exit %d: %s" % (self.path, " ".join(args), p.returncode, p.stderr.decode()))
        return p.stdout.decode() if output is str else None


def run_after(phase):
    def mark(fn):
        fn.run_after = phase
        return fn
    return mark


def on_package_attributes(**attrs):
    def mark(fn):
        fn.on_package_attributes = attrs
        return fn
    return mark
'''

STUB_CMAKE = r'''
class Spec:
    def __init__(self, variants):
        self.variants = variants

    def satisfies(self, constraint):
        sign, name = constraint[0], constraint[1:]
        return self.variants.get(name) == (sign == "+")


class CMakePackage:
    """The part of Spack's CMakePackage the recipe uses; define() as CMakeBuilder.define."""
    def __init__(self, prefix, variants, run_tests=False):
        from spack.package import Prefix
        self.prefix = Prefix(prefix)
        self.spec = Spec(variants)
        self.run_tests = run_tests

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            return "-D%s:BOOL=%s" % (name, "ON" if value else "OFF")
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value)
        return "-D%s:STRING=%s" % (name, value)
'''


class RunEnv:
    """Spack's EnvironmentModifications, the calls the recipe makes."""
    def __init__(self):
        self.calls = []

    def prepend_path(self, name, path, separator=":"):
        self.calls.append(("prepend_path", name, path))

    def append_path(self, name, path, separator=":"):
        self.calls.append(("append_path", name, path))

    def set(self, name, value):
        self.calls.append(("set", name, value))


def stubs():
    root = os.path.join(SCRATCH, "stubs")
    if not os.path.isdir(root):
        for rel, text in (("spack/__init__.py", ""), ("spack/package.py", STUB_PACKAGE),
                          ("spack_repo/__init__.py", ""), ("spack_repo/builtin/__init__.py", ""),
                          ("spack_repo/builtin/build_systems/__init__.py", ""),
                          ("spack_repo/builtin/build_systems/cmake.py", STUB_CMAKE)):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    sys.path.insert(0, root)
    import importlib.util
    spec = importlib.util.spec_from_file_location("ucxtls_spack_recipe", RECIPE)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    import spack.package
    return recipe, spack.package


def cmake_text():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        return f.read()


@case("spack: the recipe compiles, and its directives")
def directives(t):
    try:
        py_compile.compile(RECIPE, cfile=os.path.join(SCRATCH, "package.pyc"), doraise=True)
        t.check("python3 -m py_compile packaging/spack/package.py", True)
    except py_compile.PyCompileError as e:
        t.check("python3 -m py_compile packaging/spack/package.py", False, str(e))
        t.exit()
    recipe, spack = stubs()
    t.check("it defines class Ucxtls(CMakePackage)", issubclass(recipe.Ucxtls, recipe.CMakePackage))
    d = {}
    for name, args, kwargs in spack.DIRECTIVES:
        d.setdefault(name, []).append((args, kwargs))
    t.equal("license BSD-3-Clause, as LICENSE", d.get("license"), [(("BSD-3-Clause",), {})])
    want_cmake = re.search(r"cmake_minimum_required\(VERSION (\S+)\)", cmake_text()).group(1)
    t.check("depends on c and cxx (build) and cmake@%s: (CMakeLists.txt's minimum)" % want_cmake,
            ((("c",), {"type": "build"}) in d.get("depends_on", []) and (("cxx",), {"type": "build"}) in d["depends_on"]
             and (("cmake@%s:" % want_cmake,), {"type": "build"}) in d["depends_on"]), repr(d.get("depends_on")))
    t.check("a version from the git branch", any(a == ("main",) and k.get("branch") == "main"
                                                 for a, k in d.get("version", [])), repr(d.get("version")))


@case("spack: cmake_args configure, build and install the project; the run environment and checks")
def build(t):
    recipe, spack = stubs()
    prefix = os.path.join(SCRATCH, "prefix")
    pkg = recipe.Ucxtls(prefix, {"preload": True}, run_tests=True)
    args = pkg.cmake_args()
    names = [re.match(r"^-D([A-Za-z_0-9]+):", a).group(1) for a in args]
    text = cmake_text()
    own = [n for n in names if not n.startswith("CMAKE_")]
    t.check("each UCXTLS_* option it passes is an option or cache variable of CMakeLists.txt (%s)" % ", ".join(own),
            all(re.search(r"(option\(%s\b|set\(%s\b[^)]*CACHE)" % (n, n), text, re.S) for n in own), repr(own))
    # Spack's standard arguments (CMakeBuilder.std_args), then the recipe's.
    std = ["-G", "Unix Makefiles", "-DCMAKE_INSTALL_PREFIX:STRING=" + prefix, "-DCMAKE_BUILD_TYPE:STRING=Release"]
    build_dir = os.path.join(SCRATCH, "build")
    p = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", build_dir] + std + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    out = p.stdout.decode()
    t.check("cmake with Spack's standard arguments and cmake_args() %s: exit 0, no argument unused" % args,
            p.returncode == 0 and "not used by the project" not in out, out[-3000:])
    for step in ([CMAKE, "--build", build_dir, "-j2"], [CMAKE, "--install", build_dir]):
        p = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if not t.check(" ".join(step[:2]) + ": exit 0", p.returncode == 0, p.stdout.decode()[-3000:]):
            t.exit()
    t.check("the recipe's library path exists after the install: %s" % pkg.library, os.path.isfile(pkg.library))
    t.check("the helpers are in <prefix>/%s, where the installed command looks" % HELPER_DIR,
            all(os.access(os.path.join(prefix, HELPER_DIR, h), os.X_OK) for h in HELPERS))
    env = RunEnv()
    pkg.setup_run_environment(env)
    t.equal("+preload: the run environment appends the library to LD_PRELOAD (what is there stays first)", env.calls,
            [("append_path", "LD_PRELOAD", pkg.library)])
    env = RunEnv()
    recipe.Ucxtls(prefix, {"preload": False}).setup_run_environment(env)
    t.equal("~preload: it changes nothing (PATH, MANPATH come from the prefix)", env.calls, [])
    check = recipe.Ucxtls.check_installed
    t.check("check_installed runs after install, with --test", getattr(check, "run_after", None) == "install"
            and getattr(check, "on_package_attributes", None) == {"run_tests": True})
    try:
        check(pkg)
        t.check("check_installed passes on the installed prefix (--version, explain, lib)", True)
    except spack.InstallError as e:
        t.check("check_installed passes on the installed prefix (--version, explain, lib)", False, str(e))
    version = re.search(r"project\(ucxtls VERSION (\S+)", cmake_text()).group(1)
    exe = os.path.join(prefix, "bin", "ucxtls")
    t.check("executables matches the command's name", any(re.match(e, "ucxtls") for e in recipe.Ucxtls.executables))
    t.equal("determine_version (spack external find) reads the installed command's version",
            recipe.Ucxtls.determine_version(exe), version)


if __name__ == "__main__":
    try:
        main("the Spack recipe, against a stand-in spack")
    finally:
        import shutil
        shutil.rmtree(SCRATCH, ignore_errors=True)
