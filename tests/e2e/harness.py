"""Shared helpers for the end-to-end tests: run real processes with the real libucxtls.so.

Every test script is run by CTest with UCXTLS_LIB (the built library), UCXTLS_BUILD_DIR and
UCXTLS_SOURCE_DIR in its environment. Output: one line per check ("ok", "FAIL" or "SKIP" with
the reason) and a closing "N passed, N failed, N skipped" line; the exit status is 1 on any
failure.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("UCXTLS_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD_DIR = os.environ.get("UCXTLS_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
LIB = os.environ.get("UCXTLS_LIB", os.path.join(BUILD_DIR, "libucxtls.so"))

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "fixtures"))
import machines  # noqa: E402

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


def env_for(machine=None, preload=True, **extra):
    """An environment for a child: base variables, the library preloaded, the fixture as
    sysroot. extra: NAME=value to add, NAME=None to leave out."""
    env = dict(BASE_ENV)
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


class Checks:
    """Counts and prints results; `exit()` prints the closing line and sets the status."""

    def __init__(self, title):
        self.title = title
        self.passed = self.failed = self.skipped = 0
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

    def exit(self):
        print("%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped), flush=True)
        sys.exit(1 if self.failed else 0)


def have(tool):
    from shutil import which
    return which(tool) is not None
