#!/usr/bin/env python3
"""`doctor --pid` and `--ucx` against a hostile build, as root would run them on a shared node: a
libucp (tests/cli/fake_ucx.c plus a constructor compiled here) that would record what it can reach
in any process of ucxtls's that ran it: the caller's terminal (it tries /dev/tty and TIOCSTI), the
caller's environment (SECRET_TOKEN), its euid. Doctor reads builds and never runs them: files a
user other than root can change (the module directory, an LD_LIBRARY_PATH entry, a parent
directory, the file's owner) are judged and no record is ever made; FIFOs and a mount that never
answers do not hold doctor past its bound; the target's strings reach the terminal without
control bytes. Run as root (setpriv); SKIP otherwise."""
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, env_for, main  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_build import (CLI, HOLD, WORK, as_nobody, build, doctor, hold, needs_root, judged,  # noqa: E402
                           rec_dir, records, release)


@case("a nobody process's libucp cannot reach doctor's terminal (no /dev/tty, no TIOCSTI) nor its environment")
def terminal_and_environment(t):
    if not needs_root(t):
        return
    record = rec_dir("tty-rec")
    lib = build(os.path.join(WORK, "tty", "libucp.so.0"), record)
    p, _ = hold(as_nobody([sys.executable, "-c", HOLD, lib]), env_for(None, preload=False, TARGET_VAR="theirs"))
    master, slave = os.openpty()

    def own_terminal():  # doctor in a session whose controlling terminal is the pty, as in root's shell
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    try:
        d = subprocess.Popen([CLI, "doctor", "--pid", str(p.pid), "--value", "tcp"], stdin=slave, stdout=slave, stderr=slave,
                             env=env_for(None, preload=False, SECRET_TOKEN="root-secret-42"), preexec_fn=own_terminal)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            try:
                chunk = os.read(master, 4096) if ready else b""
            except OSError:  # EIO: every end of the slave is closed
                chunk = b""
            if not chunk:
                break
            seen += chunk
        rc = d.wait(timeout=30)
    finally:
        os.close(master)
        release(p)
    got = records(record)
    t.check("doctor read the build (exit 0, its UCX line on the terminal)", rc == 0 and b"UCX " in seen, seen.decode(errors="replace"))
    t.equal("no constructor of the build ran in a process of ucxtls's", got, [])
    t.check("nothing it would write or push reached the terminal", b"TTYWRITE" not in seen and b"INJECTED" not in seen, repr(seen))


def root_case(t, name, lib):
    """doctor's answer on a root process holding lib."""
    p, line = hold([sys.executable, "-c", HOLD, lib], env_for(None, preload=False))
    try:
        if not t.equal("control (%s): the process holds its build" % name, line, b"ready\n"):
            return None
        return doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)


@case("a root process whose UCX module directory nobody can write: nobody's module is not loaded as root")
def module_dir(t):
    if not needs_root(t):
        return
    record = rec_dir("mod-rec")
    d = os.path.join(WORK, "moddir")
    lib = build(os.path.join(d, "libucp.so.0"), record, who="libucp-unused", ucx=True)
    os.makedirs(os.path.join(d, "ucx"))
    os.chmod(os.path.join(d, "ucx"), 0o777)
    mod = build(os.path.join(d, "ucx", "libuct_evil.so.0"), record, who="module", ucx=False)
    os.chown(mod, 65534, 65534)
    got = root_case(t, "module", lib)
    if got:
        judged(t, "judged from its files (exit 0), though the module directory is another user's to change", got)
        t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])


@case("a root process whose LD_LIBRARY_PATH starts with a directory nobody can write: not loaded as root")
def library_path(t):
    if not needs_root(t):
        return
    record = rec_dir("llp-rec")
    open_dir, root_dir = os.path.join(WORK, "llp-open"), os.path.join(WORK, "llp-root")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)
    ucs = build(os.path.join(root_dir, "libucs.so.0"), record, who="root-libucs", ucx=False)
    lib = build(os.path.join(root_dir, "libucp.so.0"), record, who="libucp", libs=["-Wl,--no-as-needed", "-L" + root_dir, "-l:libucs.so.0"])
    llp = {"LD_LIBRARY_PATH": open_dir + ":" + root_dir}
    p, line = hold([sys.executable, "-c", HOLD, lib], env_for(None, preload=False, **llp))
    try:
        # nobody plants libucs.so.0 where the process's LD_LIBRARY_PATH looks first
        shutil.copy(ucs, os.path.join(open_dir, "libucs.so.0"))
        os.chown(os.path.join(open_dir, "libucs.so.0"), 65534, 65534)
        got = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    judged(t, "judged from its files (exit 0), though the directory of its LD_LIBRARY_PATH is another user's to change", got)
    t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])


@case("a root process's libucp in a root directory whose parent nobody owns: not loaded as root")
def parent_dir(t):
    if not needs_root(t):
        return
    record = rec_dir("parent-rec")
    parent = os.path.join(WORK, "parent")
    lib = build(os.path.join(parent, "root", "libucp.so.0"), record)
    os.chown(parent, 65534, 65534)
    got = root_case(t, "parent", lib)
    if got:
        judged(t, "judged from its files (exit 0), though the parent is another user's to change", got)
        t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])


@case("a root process whose libucp has an RPATH with $LIB (ld.so's own expansion): not loaded as root")
def rpath_token(t):
    if not needs_root(t):
        return
    record = rec_dir("token-rec")
    lib = build(os.path.join(WORK, "token", "libucp.so.0"), record, libs=["-Wl,-rpath,/opt/ucxtls-none/$LIB"])
    got = root_case(t, "token", lib)
    if got:
        judged(t, "judged from its files (exit 0), though the directory is another user's to change", got)
        t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])


@case("a root process mapping a libucp that nobody owns (0644, in a root 0755 directory): refused, nothing loaded")
def owner_not_mode(t):
    if not needs_root(t):
        return
    record = rec_dir("owner-rec")
    lib = build(os.path.join(WORK, "owner", "libucp.so.0"), record)
    os.chmod(lib, 0o644)
    os.chown(lib, 65534, 65534)
    got = root_case(t, "owner", lib)
    if got:
        judged(t, "judged from its files (exit 0), though the file and its owner is another user's to change", got)
        t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])


@case("a set-user-ID-root program started by nobody: the helper loads its build as nobody (65534), never as root")
def setuid_nobody(t):
    if not needs_root(t):
        return
    record = rec_dir("suid-rec")
    lib = build(os.path.join(WORK, "suid", "libucp.so.0"), record)
    exe = os.path.join(WORK, "suid-holder")
    harness.compile_c(exe, '#include <dlfcn.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(int c, char **v) { (void)c;'
                      ' if (!dlopen(v[1], RTLD_NOW)) return 3; printf("ready %d %d\\n", (int)getuid(), (int)geteuid());'
                      ' fflush(stdout); char b; while (read(0, &b, 1) > 0) {} return 0; }\n', ["-ldl"], check=True)
    os.chmod(exe, 0o4755)
    p, line = hold(as_nobody([exe, lib]), env_for(None, preload=False))
    try:
        if not t.equal("control: it runs as nobody with euid 0 (set-user-ID)", line, b"ready 65534 0\n"):
            return
        rc, out, err = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    got = records(record)
    t.check("doctor asked the build (exit 0)", rc == 0 and "UCX " in out, out + err)
    t.equal("no constructor of it ran in a process of ucxtls's", got, [])


@case("doctor --ucx as root of a build that nobody owns: judged, never run (control: a process named ucxtls that loads it records)")
def ucx_as_root(t):
    if not needs_root(t):
        return
    record = rec_dir("ucx-rec")
    d = os.path.join(WORK, "ucx-nobody")
    lib = build(os.path.join(d, "libucp.so.0"), record)
    os.chown(d, 65534, 65534)
    os.chown(lib, 65534, 65534)
    judged(t, "--ucx of a build nobody owns: judged from its files (exit 0)", doctor(["--ucx", d, "--value", "tcp"]))
    t.equal("no constructor of it ran in a process of ucxtls's", records(record), [])
    # The record would have caught a run: a process named like ours that loads it records once.
    subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(None).prctl(15, b'ucxtls', 0, 0, 0); ctypes.CDLL(sys.argv[1])", lib],
                   env=env_for(None, preload=False), check=False)
    t.check("control: a process named ucxtls that loads it made its record (euid=0)",
            [r.split()[1] for r in records(record)] == ["euid=0"], repr(records(record)))


@case("doctor --ucx DIR holding FIFOs named libucp.so.0 and libucp.so: an answer at once, nothing opened for reading")
def fifos(t):
    d = os.path.join(WORK, "fifos")
    os.makedirs(d)
    for name in ("libucp.so.0", "libucp.so"):
        os.mkfifo(os.path.join(d, name))
    start = time.time()
    try:
        rc, out, err = doctor(["--ucx", d, "--value", "tcp"], timeout=10)
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "killed at 10 s"
    took = time.time() - start
    t.check("exit 2 within 5 s, one line: no libucp there", rc == 2 and took < 5 and "no libucp in" in err, "%d %.1fs %r" % (rc, took, err))
    start = time.time()
    try:
        rc, out, err = doctor(["--ucx", os.path.join(d, "libucp.so.0"), "--value", "tcp"], timeout=10)
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "killed at 10 s"
    t.check("--ucx FIFO: exit 2 within 5 s, not a regular file", rc == 2 and time.time() - start < 5 and "not a regular file" in err,
            "%d %r" % (rc, err))


def hung_mount_class():
    """tests/hardening/test_limits.py's HungMount, without its cases."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hardening"))
    n = len(harness.CASES)
    from test_limits import HungMount
    del harness.CASES[n:]
    return HungMount


def doctor_on_hung_config_dir(t, stop_across_deadline):
    """doctor --pid --timeout-ms 2000 of a process whose UCX_CONFIG_DIR never answers: (rc, seconds,
    stderr), or None (skipped). stop_across_deadline: doctor is stopped from 1.7 s to 2.5 s, as a
    busy node schedules it late."""
    if not needs_root(t, ("cc",)):
        return None
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(harness.BUILD_DIR, "tests", "cli", "fakes-ucx"))
    m = hung_mount_class()()
    try:
        if m.error:
            return t.skip("a mount that never answers", m.error)
        p, _ = hold([sys.executable, "-c", HOLD, os.path.join(fakes, "nixl", "libucp.so.0")],
                    env_for("dgx", preload=False, UCX_CONFIG_DIR=m.dir))
        start = time.time()
        d = subprocess.Popen([CLI, "doctor", "--pid", str(p.pid), "--timeout-ms", "2000"],
                             env=env_for(None, preload=False), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stop_across_deadline:
            time.sleep(1.7)
            d.send_signal(signal.SIGSTOP)
            time.sleep(0.8)
            d.send_signal(signal.SIGCONT)
        try:
            _, err = d.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            d.kill()
            _, err = d.communicate()
        took = time.time() - start
        release(p)
    finally:
        m.close()
    return d.returncode, took, err.decode(errors="replace")


@case("a process whose UCX_CONFIG_DIR is a mount that never answers: doctor --pid ends at --timeout-ms, one line")
def hung_config_dir(t):
    got = doctor_on_hung_config_dir(t, False)
    if got:
        rc, took, err = got
        t.check("exit 2 within 6 s, one line saying what gave no answer", rc == 2 and took < 6 and
                err.count("\n") == 1 and "ucx.conf places" in err and "2000 ms" in err, "%d %.1fs %r" % got)


@case("hung UCX_CONFIG_DIR, doctor itself late at its deadline (stopped across it): still one line")
def hung_config_dir_late(t):
    # doctor's reader child decides in a grandchild; were both bounded by the same deadline, a
    # doctor scheduled late would let the child's own "no answer" line out instead of its own.
    got = doctor_on_hung_config_dir(t, True)
    if got:
        rc, took, err = got
        t.check("exit 2, one line: doctor's own 'could not tell'", rc == 2 and err.count("\n") == 1 and
                "could not tell: reading the ucx.conf places of process" in err, "%d %.1fs %r" % got)


@case("a process named with an escape sequence, a build whose version string holds one: printed with '?' for them")
def control_bytes(t):
    if not needs_root(t, ("cc",)):
        return
    record = os.path.join(WORK, "ctl-record")
    lib = build(os.path.join(WORK, "ctl", "libucp.so.0"), record, defines=["-DFAKE_UCX_NOT_UCX",
                                                                           '-DHOSTILE_VERSION="1.22\\033]0;owned\\007"'])
    name = "import ctypes; ctypes.CDLL(None).prctl(15, b'py\\x1b[2Jx', 0, 0, 0); "
    p, _ = hold([sys.executable, "-c", name + HOLD, lib], env_for(None, preload=False))
    try:
        rc, out, err = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        release(p)
    t.check("control: the version and the name are printed (exit 0)", rc == 0 and "1.22?]0;owned?" in out and "py?[2Jx" in out, out + err)
    t.check("no ESC or BEL reaches the terminal", "\x1b" not in out + err and "\x07" not in out + err, repr(out + err))


def terminal_safe(text):
    """No C0 control but the newline, no DEL, no C1 (raw or as UTF-8): bytes that decode as UTF-8."""
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError as e:
        return "not UTF-8: %s" % e
    bad = [c for c in s if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    return "control characters %r" % bad if bad else ""


@case("C1 controls (UTF-8 and raw), DEL, bytes that are not UTF-8, quotes, backslashes in a process's name and a build's "
      "path and version: '?' in the text, valid JSON")
def c1_and_json(t):
    if not needs_root(t, ("cc",)):
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fake_builds import fake_ucx
    d = os.fsdecode(os.path.join(os.fsencode(WORK), b'ucx-\x1b\xc2\x9b\x9b"q\\\x7f\xe9'))
    lib = fake_ucx(d, version=r'1.22\302\233x\233y\177\"q\\')
    comm = os.fsdecode(b'p\x9b\xc2\x9b\x7f"\\\xe9')
    holder = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(15, os.fsencode(sys.argv[2]), 0, 0, 0); ctypes.CDLL(sys.argv[1]); "
              "print('ready', flush=True); sys.stdin.read()")
    p, line = hold([sys.executable, "-c", holder, lib, comm], env_for(None, preload=False))
    outs = {}
    try:
        if not t.equal("control: the process holds the build", line, b"ready\n"):
            return
        for label, args in (("--pid", ["--pid", str(p.pid)]), ("--ucx", ["--ucx", lib])):
            for form in ([], ["--json"]):
                r = harness.run([CLI, "doctor", "--value", "tcp"] + args + form, env_for(None, preload=False))
                outs[label + " " + " ".join(form)] = (r.returncode, r.stdout, r.stderr)
    finally:
        release(p)
    for label, (rc, out, err) in outs.items():
        if "--json" in label:
            try:
                j = json.loads(out)
            except ValueError as e:
                t.check("%s: valid JSON" % label, False, "%s: %r" % (e, out))
                continue
            t.check("%s: the JSON text itself is safe for a terminal (C1 escaped too)" % label, not terminal_safe(out), terminal_safe(out))
            u = j["ucx"][0]
            t.equal("%s: the version, C1 and DEL escaped, the raw byte U+FFFD" % label, u["version"], '1.22\x9bx\ufffdy\x7f"q\\')
            t.check("%s: the path, its ESC, C1 and DEL escaped, raw bytes U+FFFD" % label,
                    u["libucp"].endswith('ucx-\x1b\x9b\ufffd"q\\\x7f\ufffd/libucp.so.0'), repr(u["libucp"]))
        else:
            t.check("%s: exit 0, nothing unsafe for a terminal on stdout or stderr" % label,
                    rc == 0 and not terminal_safe(out) and not terminal_safe(err), "%d %s %s %r" % (rc, terminal_safe(out), terminal_safe(err), out))
            text = out.decode(errors="replace")
            t.check("%s: the version and path with '?' for each" % label,
                    '(version 1.22?x?y?"q\\)' in text and 'ucx-???"q\\??/libucp.so.0' in text, text)
            if label.startswith("--pid"):
                t.check("--pid: the process's name with '?' for each", '(p???"\\?)' in text, text)


if __name__ == "__main__":
    main("doctor --pid and --ucx against a hostile build")
