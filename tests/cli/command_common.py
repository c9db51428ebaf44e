"""What the command's tests share (test_cli.py, test_command_cases.py): the command, the fake UCX
builds (tests/cli/fake_ucx.c), a python3 holding a libucp, doctor's output read back."""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import BUILD_DIR, LIB, run
from fake_builds import elf_ucx_info, fake_ucx

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
STALE = {"UCX_TLS": "a", "UCXTLS_DERIVED": "a"}  # an inherited pair of ours
WORK = tempfile.mkdtemp(prefix="ucxtls-cmd-")
atexit.register(shutil.rmtree, WORK, True)


def cli(args, env, **kw):
    return run([CLI] + args, env, **kw)


# python3 with a libucp loaded (the fake NIXL-like build: cuda_copy, verbs, no ze, no DC), holding.
HOLD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"


class Holder:
    def __init__(self, env, libucp=None):
        self.p = subprocess.Popen([sys.executable, "-c", HOLD, libucp or os.path.join(FAKES, "nixl", "libucp.so.0")],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.p.stdout.readline()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def doctor(args, env):
    p = run([CLI, "doctor"] + args, env)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    return p.returncode, out, set(re.findall(r"^MISSING +(\S+)", out, re.M)), err


def value_line(out):
    m = re.search(r"^value +(\S*) \((.*)\)$", out, re.M)
    return (m.group(1), m.group(2)) if m else (None, None)


def wait_for(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def fake_ucx_info(tag, transports=("tcp", "self", "sysv", "posix"), version="1.22.0"):
    """A directory with a ucx_info (an ELF program, tests/cli/fake_builds.py) whose libucp is a fake
    build of this version registering these transports, for the plain doctor where Debian's UCX is
    not the point: doctor resolves its libucp from its files and reads that build."""
    d = os.path.join(WORK, "ucx_info-" + tag)
    fake_ucx(os.path.join(d, "lib"), transports, version)
    return elf_ucx_info(d, os.path.join(d, "lib"))
