#!/usr/bin/env python3
"""Every `ucxtls` subcommand that prints exits non-zero when its output cannot be written, as
coreutils do (their close_stdout): stdout /dev/full (the write fails at the flush) and a closed
stdout (`>&-`). Each command is first run to a pipe (the control): it prints something and exits
0 there, so the failure seen is the lost output's. A command with nothing to print (`env` when
the environment is already right) exits 0 on /dev/full: no output was lost. `run`'s COMMAND gets
the closed stdout as the caller gave it (its own write fails, not ucxtls's)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import LIB, EMPTY_HOME, add_case, env_for, have, main  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))

# (label, arguments, extra variables, what it needs); each prints on this fixture machine.
# The dgx writes with UCXTLS_WRITE=always (the default leaves UCX_TLS unset there: nothing to print).
PRINTING = [("env", ["env"], {"UCXTLS_WRITE": "always"}, None),
            ("env --format=slurm", ["env", "--format=slurm"], {"UCXTLS_WRITE": "always"}, None),
            ("env (unset lines)", ["env"], {"UCX_TLS": "a", "UCXTLS_DERIVED": "a", "UCXTLS_ACCEL": "none"}, None),
            ("explain", ["explain"], {}, None),
            ("explain --json", ["explain", "--json"], {}, None),
            ("--help", ["--help"], {}, None),
            ("--version", ["--version"], {}, None),
            ("--man", ["--man"], {}, None),
            # This machine's facts (no GPU): Debian's UCX, without CUDA, fails a DGX whatever the value.
            ("doctor --value tcp", ["doctor", "--value", "tcp"], {"UCXTLS_SYSROOT": None}, "ucx_info"),
            # the fake libcuda.so.1 of tests/driver: a driver that initialises (exit 0)
            ("probe", ["probe"], {"LD_LIBRARY_PATH": os.path.join(os.path.dirname(LIB), "tests", "driver", "fakes", "cuda"),
                                  "FAKE_CUDA_COUNT": "1"}, None)]


def cli(args, env, stdout):
    """(status, stderr) of ucxtls args with stdout 'pipe', 'full' (/dev/full) or 'closed'."""
    kw = {"stdout": subprocess.PIPE}
    if stdout == "full":
        kw["stdout"] = open("/dev/full", "w")
    elif stdout == "closed":
        kw = {"stdout": subprocess.DEVNULL, "preexec_fn": lambda: os.close(1)}
    try:
        p = subprocess.run([CLI] + args, env=env, cwd=EMPTY_HOME, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=60, **kw)
    finally:
        if stdout == "full":
            kw["stdout"].close()
    return p.returncode, p.stderr.decode(errors="replace"), p.stdout if stdout == "pipe" else b""


def printing(t, label, args, extra, needs):
    if needs and not have(needs):
        t.skip(label, "%s not installed" % needs)
        return
    env = env_for("dgx", preload=False, **extra)
    rc, err, out = cli(args, env, "pipe")
    if not t.check("%s to a pipe: exit 0 and something printed (the control)" % label, rc == 0 and out, "%d %r" % (rc, err)):
        return
    for how in ("full", "closed"):
        rc, err, _ = cli(args, env, how)
        t.check("%s, stdout %s: exit 2 with one line naming the write error" % (label, "/dev/full" if how == "full" else "closed"),
                rc == 2 and err.endswith("ucxtls: write error on stdout: %s\n" %
                                        ("No space left on device" if how == "full" else "Bad file descriptor")),
                "status %d, stderr %r" % (rc, err))


for _label, _args, _extra, _needs in PRINTING:
    add_case("stdout cannot be written: " + _label, printing, _label, _args, _extra, _needs,
             tags=(_needs,) if _needs else ())


def nothing_to_print(t):
    env = env_for("dgx", preload=False, UCX_TLS="tcp")
    rc, _, out = cli(["env"], env, "pipe")
    t.check("env with UCX_TLS set by the user: prints nothing (the control)", rc == 0 and out == b"", "%d %r" % (rc, out))
    rc, err, _ = cli(["env"], env, "full")
    t.check("env with nothing to print, stdout /dev/full: exit 0 (no output was lost)", rc == 0 and err == "", err)


def run_passes_closed_stdout(t):
    rc, err, _ = cli(["run", "/bin/sh", "-c", "test -e /proc/self/fd/1 && echo open || echo closed >&2"],
                     env_for("dgx", preload=False), "closed")
    t.check("run with stdout closed: COMMAND finds descriptor 1 closed, as the caller gave it",
            rc == 0 and err == "closed\n", "status %d, stderr %r" % (rc, err))


add_case("stdout cannot be written: env with nothing to print", nothing_to_print)
add_case("stdout closed: run passes it through", run_passes_closed_stdout)

if __name__ == "__main__":
    main("ucxtls: output that cannot be written is an error")
