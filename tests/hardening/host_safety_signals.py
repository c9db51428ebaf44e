"""test_host_safety.py's signals (its item 3): the stderr line on a broken or full pipe, on a
tostop pty, in a file at RLIMIT_FSIZE, never kills, stops or blocks the host."""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

from common import C, case, env_for
from host_programs import PTY_LEADER, blocking, broken_pipe_run, programs


def full_pipe_run(argv, env, timeout=10):
    """argv with stderr on a pipe that is full (its reader is there, reading later): the completed
    process, or None when it did not finish within timeout (it hung)."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    try:
        return subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=w, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        os.close(w)
        os.close(r)


# The three stderr lines the library writes.
LINES = [("debug line", "dgx", {"UCXTLS_DEBUG": "1"}),
         ("invalid setting", "dgx", {"UCXTLS_ACCEL": "foo"}),
         ("unknown variable", "dgx", {"UCXTLS_ACCELL": "ze"})]


@case("signals: the stderr line cannot kill or stop the host")
def signals(t):
    prog = programs(t)
    work = prog.work
    lines = LINES
    sh = ["/bin/sh", "-c", "echo hello; exit 3"]
    for label, machine, extra in lines:
        plain = broken_pipe_run(sh, env_for(machine, preload=False, **extra))
        pre = broken_pipe_run(sh, env_for(machine, **extra))
        t.equal("broken-pipe stderr, %s: sh's stdout and status as without the library" % label,
                (pre.stdout, pre.returncode), (plain.stdout, plain.returncode))
    # The control: an unguarded line kills the same host.
    ctl = broken_pipe_run(sh, env_for(None, preload=False, LD_PRELOAD=prog.plain_writer))
    t.equal("control: an unguarded stderr line kills sh with SIGPIPE", ctl.returncode, -signal.SIGPIPE)

    # stderr a full pipe (a launcher that collects many processes' output and reads it late): the
    # line is dropped rather than wait; the host runs as without the library.
    for label, machine, extra in lines:
        plain = full_pipe_run(sh, env_for(machine, preload=False, **extra))
        pre = full_pipe_run(sh, env_for(machine, **extra))
        t.check("full-pipe stderr, %s: sh finishes, stdout and status as without the library" % label,
                pre is not None and plain is not None and (pre.stdout, pre.returncode) == (plain.stdout, plain.returncode),
                "with: %r\nwithout: %r" % (pre and (pre.stdout, pre.returncode), plain and (plain.stdout, plain.returncode)))
    ctl = full_pipe_run(sh, env_for(None, preload=False, LD_PRELOAD=prog.plain_writer), timeout=3)
    t.check("control: an unguarded stderr line on a full pipe hangs sh (killed after 3 s)", ctl is None)

    for how, preexec in [("default mask", None), ("SIGPIPE blocked by the parent", blocking(signal.SIGPIPE)),
                         ("SIGPIPE blocked and one of the host's own pending", blocking(signal.SIGPIPE, True))]:
        for label, machine, extra in lines:
            plain = broken_pipe_run([prog.signal_host], env_for(machine, preload=False, **extra), preexec)
            pre = broken_pipe_run([prog.signal_host], env_for(machine, **extra), preexec)
            t.check("broken-pipe stderr, %s, %s: exit 3, the signal mask and pending SIGPIPE as without the library"
                    % (how, label), pre.returncode == 3 and plain.returncode == 3 and
                    pre.stdout.replace(b"UCX_TLS=" + C.encode(), b"UCX_TLS=<unset>") == plain.stdout,
                    "with: %r (%d)\nwithout: %r (%d)" % (pre.stdout, pre.returncode, plain.stdout, plain.returncode))

    # tostop: a background job on a real pty.
    leader = os.path.join(work, "pty_leader.py")
    with open(leader, "w") as f:
        f.write(PTY_LEADER)

    def on_pty(env):
        p = subprocess.run([sys.executable, leader, json.dumps(sh), json.dumps(env)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=90, env={"PATH": env["PATH"]})
        try:
            res = json.loads(p.stdout.decode())
            res.update(json.loads(p.stderr.decode().strip().splitlines()[-1]))
        except (ValueError, IndexError):
            return None, p.stdout.decode() + p.stderr.decode()
        return res, ""

    ctl, err = on_pty(env_for(None, preload=False, LD_PRELOAD=prog.plain_writer))
    if t.check("control on a tostop pty: the pty leader reports", ctl is not None, err):
        t.check("control: an unguarded line stops the background job (SIGTTOU)", ctl["stopped"], str(ctl))
    plain, err1 = on_pty(env_for("dgx", preload=False, UCXTLS_DEBUG="1"))
    pre, err2 = on_pty(env_for("dgx", UCXTLS_DEBUG="1"))
    if t.check("tostop pty: the pty leader reports", plain is not None and pre is not None, err1 + err2):
        t.check("tostop pty, debug line: the background job is not stopped, exit 3 as without the library",
                not pre["stopped"] and pre["status"] == 3 == plain["status"], "with %r\nwithout %r" % (pre, plain))
        t.equal("tostop pty: stdout as without the library", pre["stdout"], plain["stdout"])
        t.check("tostop pty: the line is printed on the terminal", "ucxtls: set UCX_TLS=" + C in pre["tty"], repr(pre))


def capped_file_run(argv, env, room, preexec=None):
    """argv with stderr a regular file at RLIMIT_FSIZE (room bytes left below the cap): the
    completed process and the file's size afterwards, with the cap."""
    fd, path = tempfile.mkstemp(prefix="ucxtls-capped-")
    cap = 4096
    os.write(fd, b"x" * (cap - room))
    os.close(fd)
    w = os.open(path, os.O_WRONLY | os.O_APPEND)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        if preexec:
            preexec()
    try:
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=w, timeout=60, preexec_fn=limit)
    finally:
        os.close(w)
    size = os.path.getsize(path)
    os.unlink(path)
    return p, size, cap


@case("signals: a regular-file stderr at RLIMIT_FSIZE (SIGXFSZ)")
def file_size_limit(t):
    prog = programs(t)
    lines = LINES
    ctl, size, cap = capped_file_run(["/bin/echo", "hello"], env_for(None, preload=False, LD_PRELOAD=prog.plain_writer), 0)
    t.equal("control: an unguarded stderr line at the file size limit kills /bin/echo with SIGXFSZ",
            ctl.returncode, -signal.SIGXFSZ)
    hosts = [("/bin/echo", ["/bin/echo", "hello"]),
             ("python3", [sys.executable, "-c", "import os; print('hello', os.environ.get('UCX_TLS'))"])]
    for room in (0, 10):
        where = "at its cap" if not room else "%d bytes below its cap" % room
        for host, argv in hosts:
            for label, machine, extra in lines:
                plain, _, _ = capped_file_run(argv, env_for(machine, preload=False, **extra), room)
                pre, size, cap = capped_file_run(argv, env_for(machine, **extra), room)
                t.check("stderr a file %s, %s, %s: exit 0 and stdout as without the library (the value aside)"
                        % (where, host, label), pre.returncode == 0 == plain.returncode and
                        pre.stdout.replace(C.encode(), b"None") == plain.stdout,
                        "with: %r (%d)\nwithout: %r (%d)" % (pre.stdout, pre.returncode, plain.stdout, plain.returncode))
                t.check("stderr a file %s, %s, %s: not written past its cap" % (where, host, label), size <= cap,
                        "%d bytes, cap %d" % (size, cap))
    for how, preexec in [("default mask", None), ("SIGXFSZ blocked by the parent", blocking(signal.SIGXFSZ)),
                         ("SIGXFSZ blocked and one of the host's own pending", blocking(signal.SIGXFSZ, True))]:
        for label, machine, extra in lines:
            plain, _, _ = capped_file_run([prog.signal_host], env_for(machine, preload=False, **extra), 0, preexec)
            pre, _, _ = capped_file_run([prog.signal_host], env_for(machine, **extra), 0, preexec)
            t.check("stderr a file at its cap, %s, %s: exit 3, the signal mask and pending SIGXFSZ as without the "
                    "library" % (how, label), pre.returncode == 3 and plain.returncode == 3 and
                    pre.stdout.replace(b"UCX_TLS=" + C.encode(), b"UCX_TLS=<unset>") == plain.stdout,
                    "with: %r (%d)\nwithout: %r (%d)" % (pre.stdout, pre.returncode, plain.stdout, plain.returncode))
