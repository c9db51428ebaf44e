#!/usr/bin/env python3
"""The library's stderr lines and marks where the process is not an ordinary one: a host whose
linked library's constructor starts a thread (the UCXTLS_SAID mark is not written), a /proc hidden
by a tmpfs (the thread count is unknown: nothing is written, and the debug line says why), and a
program started through pyenv's shims (a line per process of the shim's tree, the program's last).
"""
import os
import re
import shutil
import subprocess

from common import C, LIB, UNSET, case, compile_c, env_for, have, main, printing_host, run, scratch_dir
from harness import SHOW

THREAD_LIB = r"""
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
/* A linked library whose constructor starts a thread (it waits on a pipe) with START_THREAD set. */
static pthread_t th;
static int fds[2], started;
static void *waiter(void *arg) { char c; (void)arg; return (void *)(long)read(fds[0], &c, 1); }
__attribute__((constructor)) static void start(void) {
  if (getenv("START_THREAD") && pipe(fds) == 0 && pthread_create(&th, 0, waiter, 0) == 0) started = 1;
}
void stop_thread(void) { if (started) { if (write(fds[1], "x", 1) < 0) abort(); pthread_join(th, 0); } }
"""
THREAD_HOST = printing_host("stop_thread", "UCXTLS_SAID")
UNKNOWN = "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n"


@case("a linked library's constructor starts a thread, a UCXTLS_* name misspelt: the line, and no UCXTLS_SAID written")
def said_with_thread(t):
    if not have("gcc"):
        t.skip("a threaded host", "gcc not installed")
        return
    work = scratch_dir("ucxtls-lines-")
    lib, err = compile_c(work, "libthread_ctor.so", THREAD_LIB, flags=["-shared", "-fPIC", "-pthread"])
    host, err2 = compile_c(work, "thread_host", THREAD_HOST, flags=["-L" + work, "-Wl,-rpath," + work, "-lthread_ctor", "-pthread"])
    if not t.check("compile the threaded host", lib and host, (err or "") + (err2 or "")):
        return
    for machine in ("dgx", "intel-xe"):  # nothing to write, and all to write (not written: a thread runs)
        p = run([host], env_for(machine, UCXTLS_ACCELL="ze"))
        t.equal("%s, one thread: the line once, and its mark written for the children" % machine,
                (p.stderr.decode(), bool(re.match(r"^[0-9a-f]{16}\n$", p.stdout.decode()))), (UNKNOWN, True), p.stdout.decode())
        p = run([host], env_for(machine, UCXTLS_ACCELL="ze", START_THREAD="1"))
        t.equal("%s, another thread runs: the line once, UCXTLS_SAID not written" % machine,
                (p.returncode, p.stderr.decode(), p.stdout.decode()), (0, UNKNOWN, UNSET + "\n"))


@case("/proc hidden (a tmpfs over it): the thread count is unknown, nothing is written, the debug line says why")
def proc_hidden(t):
    if os.geteuid() != 0 or not have("unshare"):
        t.skip("a private mount namespace with /proc hidden", "needs root and unshare")
        return
    # The library is preloaded only into the last shell: unshare and the shell that mounts run
    # without it (they would write the value first, and the last shell would derive it again).
    hide = 'mount -t tmpfs none /proc && LD_PRELOAD="$LIB" exec /bin/sh -c "$SHOW"'
    for machine, inherited in (("dgx", {}), ("intel-xe", {}), ("intel-xe", {"UCX_TLS": C, "UCXTLS_DERIVED": C})):
        env = env_for(machine, preload=False, LIB=LIB, SHOW=SHOW, UCXTLS_WRITE="always", UCXTLS_DEBUG="1", **inherited)
        label = "%s%s" % (machine, " (an inherited pair)" if inherited else "")
        shown = run(["/bin/sh", "-c", 'LD_PRELOAD="$LIB" exec /bin/sh -c "$SHOW"'], env)
        t.check("%s, /proc mounted: written (the control)" % label,
                shown.stdout.decode().split("|")[0] not in (UNSET, inherited.get("UCX_TLS")), shown.stdout.decode())
        p = run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", hide], env)
        err = p.stderr.decode()
        want = "%s|%s" % (inherited.get("UCX_TLS", UNSET), inherited.get("UCXTLS_DERIVED", UNSET))
        t.equal("%s, /proc hidden: nothing written" % label, (p.returncode, p.stdout.decode()), (0, want), err)
        t.check("%s, /proc hidden: one debug line, 'whether another thread runs cannot be told'" % label,
                err.startswith("ucxtls: failed to ") and "whether another thread runs cannot be told" in err
                and err.count("\n") == 1, err)


def pyenv_shim():
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    shim = os.path.join(root, "shims", "python3")
    return shim if os.path.exists(shim) and b"pyenv" in open(shim, "rb").read(4096) else None


@case("UCXTLS_DEBUG=1 through pyenv's python3 shim: one line per process of its tree, python's the last")
def pyenv_lines(t):
    shim = pyenv_shim()
    if not shim or not have("strace"):
        t.skip("pyenv's python3 shim under strace -f", "no pyenv shim here" if not shim else "strace not installed")
        return
    env = env_for("intel-xe", UCXTLS_DEBUG="1")
    real = subprocess.run([shim, "-c", "import sys, os; print(os.path.realpath(sys.executable))"],
                          env={k: v for k, v in env.items() if k not in ("LD_PRELOAD", "UCXTLS_DEBUG")},
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().strip()
    out = os.path.join(scratch_dir("ucxtls-lines-"), "trace")
    plain = {k: v for k, v in env.items() if k != "LD_PRELOAD"}  # strace itself runs without the library
    p = run(["strace", "-f", "-qq", "-s", "16", "-o", out, "-e", "trace=execve,write", "-E", "LD_PRELOAD=" + env["LD_PRELOAD"],
             shim, "-c", "print('main')"], plain)
    # Each program a process runs (an execve that succeeded: bash execs pyenv, pyenv python) loads
    # the library again; the line written to stderr belongs to the program its process runs then.
    image, lines, pending = {}, [], {}  # pid -> (its execve count, the program); (pid, count, program) per line
    for l in open(out).read().splitlines():
        m = re.match(r'^(\d+) +(execve\("([^"]*)"|<\.\.\. execve resumed>)', l)
        if m and not l.endswith("<unfinished ...>") and " = -1 " not in l:
            n, prog = image.get(m.group(1), (0, None))
            image[m.group(1)] = (n + 1, m.group(3) or pending.get(m.group(1)))
        if m and l.endswith("<unfinished ...>"):
            pending[m.group(1)] = m.group(3)
        m = re.match(r'^(\d+) +write\(2, "ucxtls: ', l)
        if m:
            lines.append((m.group(1),) + image.get(m.group(1), (0, "?")))
    err = p.stderr.decode()
    programs = {l[:2] for l in lines}
    print("info through %s: %d programs in %d processes printed %d lines; the last by %s"
          % (shim, len(programs), len({l[0] for l in lines}), len(lines), lines[-1][2] if lines else "-"), flush=True)
    t.check("python3 through the shim runs (its own output alone on stdout)", p.stdout == b"main\n", repr(p))
    # Some of them have stderr sent to /dev/null by pyenv's scripts: fewer lines reach the user.
    shown = err.splitlines()
    t.check("several programs print a line, each one line; %d reach stderr, each a whole line" % len(shown),
            len(programs) == len(lines) and 1 < len(shown) <= len(lines) and all(l.startswith("ucxtls: ") for l in shown),
            "%s\n%s" % (lines, err))
    t.check("the last line is the interpreter's (%s)" % real,
            bool(lines) and os.path.realpath(lines[-1][2] or "?") == real, "%s\n%s" % (lines[-3:], err))
    # The remedy the docs give: the interpreter itself, `$(pyenv which python3)`: one line.
    q = run([real, "-c", "print('main')"], env)
    t.check("the interpreter started itself: one line", q.stdout == b"main\n" and q.stderr.decode().count("\n") == 1
            and q.stderr.startswith(b"ucxtls: "), repr(q))


if __name__ == "__main__":
    main("the library's lines and marks in threaded hosts, under a hidden /proc, and behind pyenv's shims")
