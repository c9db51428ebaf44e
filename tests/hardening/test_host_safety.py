#!/usr/bin/env python3
"""No host is hurt by the decision or by the line (docs/design.md, "Editing the environment").

1. Threads: a program whose linked library's constructor starts a thread that calls getenv in a
   loop (constructors of linked libraries run before preloaded ones), run hundreds of times with
   even and odd environment sizes on the set, re-derive and clear paths: no crash. The library
   cannot tell a reading thread from one inside unsetenv, so it writes nothing while another
   thread runs: main sees the environment as it was, and the debug line says why. A control
   library that makes the two setenv calls the library used to make (tests/perf/setenv_preload.c)
   is run the same way and its crashes are reported (a race: not asserted).
2. The host's own environment calls after the library: setenv, unsetenv, putenv, clearenv on
   every path (under memcheck when valgrind is installed: no invalid free, no invalid read).
3. The stderr line cannot kill or stop the host: stderr a pipe whose reader has gone (debug line,
   invalid setting, unknown variable): stdout and exit status as without the library; the host's
   signal mask and pending set as without it, also when the host starts with SIGPIPE blocked, and
   with a SIGPIPE of its own already pending. A background job on a real pty with `stty tostop`:
   not stopped, the line printed. A control preload library that writes a line without the guard
   is killed (SIGPIPE) and stopped (SIGTTOU), so the setups do provoke both.
   stderr a regular file at RLIMIT_FSIZE (a job log at its cap), full or with room for part of the
   line: /bin/echo, python3 and a C host run as without the library, its mask and pending set too
   (SIGXFSZ unblocked, blocked, blocked with one of its own pending), the file not written past
   its cap; the unguarded control is killed by SIGXFSZ.
4. errno as the host left it: a linked library's constructor sets errno; main sees the same value
   with the library on every path (set, re-derive, keep, skip, clear, invalid setting, debug line,
   unknown variable, a broken-pipe line).
5. An unknown UCXTLS_* variable: one stderr line with the closest name; the library carries on.
6. The host's own functions: the loader binds a library's imports to the executable's definitions
   first, before the executable's constructors run. A host whose malloc works only after its own
   constructor set it up, and a host with its own syscall, sigprocmask and getauxval that print
   on stdout (exported with --export-dynamic): on the set, re-derive and debug-line paths, 20 runs
   each, none died, stdout holds main's line alone, and main sees the library's value.
7. A read-only environment array: a linked library's constructor points environ at a copy of
   the environment in read-only pages (as a `static const` array would be): on the set,
   re-derive and clear paths, 20 runs each, none died, main sees what the debug line says.
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

from common import C, LIB, R, Z, case, compile_c, env_for, have, linked_host, main, printing_host, run, scratch_dir

SETENV_LIB = os.environ.get("UCXTLSTEST_SETENV_LIB", "")
RUNS = 300

GETENV_THREAD_LIB = r"""
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
static volatile int stop, started;
static pthread_t reader_thread;
static void *reader(void *arg) {
  (void)arg;
  unsigned long seen = 0;
  started = 1;
  while (!stop) {
    if (getenv("UCX_TLS")) seen++;
    if (getenv("ZZZ_NOT_THERE")) seen++;
  }
  return (void *)seen;
}
/* Runs before any preloaded library's constructor; returns once the reader is reading. */
__attribute__((constructor)) static void start_reader(void) {
  if (pthread_create(&reader_thread, 0, reader, 0) == 0)
    while (!started) sched_yield();
}
void stop_reader(void) { stop = 1; pthread_join(reader_thread, 0); }
"""

GETENV_THREAD_HOST = printing_host("stop_reader", "UCX_TLS")

ERRNO_LIB = r"""
#include <errno.h>
__attribute__((constructor)) static void set_errno(void) { errno = 4242; }
"""

# Prints errno first (before anything can change it), then the signal state, then works.
SIGNAL_HOST = r"""
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
void errno_lib_linked(void);
int main(void) {
  int e = errno;
  sigset_t blocked, pending;
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  sigpending(&pending);
  printf("errno=%d blocked_pipe=%d blocked_ttou=%d blocked_xfsz=%d pending_pipe=%d pending_xfsz=%d UCX_TLS=%s\n", e,
         sigismember(&blocked, SIGPIPE), sigismember(&blocked, SIGTTOU), sigismember(&blocked, SIGXFSZ),
         sigismember(&pending, SIGPIPE), sigismember(&pending, SIGXFSZ), getenv("UCX_TLS") ? getenv("UCX_TLS") : "<unset>");
  puts("hello");
  return 3;
}
"""

ENV_API_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char put_entry[] = "PUT_BY_HOST=1";
int main(void) {
  const char *v = getenv("UCX_TLS");
  printf("start UCX_TLS=%s\n", v ? v : "<unset>");
  if (setenv("UCX_TLS", "host,value", 1) || setenv("NEW_BY_HOST", "x", 1) || unsetenv("UCXTLS_DERIVED") ||
      putenv(put_entry) || setenv("UCX_TLS", "host,again", 1))
    return 10;
  printf("after UCX_TLS=%s DERIVED=%s PUT=%s\n", getenv("UCX_TLS"), getenv("UCXTLS_DERIVED") ? "set" : "unset",
         getenv("PUT_BY_HOST"));
  for (int i = 0; i < 200; i++) {  /* grow the array glibc owns: it must never free ours */
    char name[32];
    snprintf(name, sizeof name, "GROW_%d", i);
    if (setenv(name, "y", 1)) return 11;
  }
  if (unsetenv("UCX_TLS") || clearenv() || setenv("AFTER_CLEARENV", "1", 1)) return 12;
  printf("end AFTER_CLEARENV=%s UCX_TLS=%s\n", getenv("AFTER_CLEARENV"), getenv("UCX_TLS") ? "set" : "unset");
  return 0;
}
"""

# Writes one line on stderr in its constructor, unguarded: the control for the signal tests.
PLAIN_WRITER_LIB = r"""
#include <unistd.h>
__attribute__((constructor)) static void say(void) { (void)!write(2, "plain: a line\n", 14); }
"""

# The pty leader: a session on a new pty with tostop, the host in a background process group,
# stderr on the terminal, stdout on a pipe. Prints one JSON object.
PTY_LEADER = r"""
import fcntl, json, os, pty, select, sys, termios, time
argv, env = json.loads(sys.argv[1]), json.loads(sys.argv[2])
master, slave = pty.openpty()
attrs = termios.tcgetattr(slave)
attrs[3] |= termios.TOSTOP
termios.tcsetattr(slave, termios.TCSANOW, attrs)
out_r, out_w = os.pipe()
leader = os.fork()
if leader == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)  # the session's terminal; this group is in front
    host = os.fork()
    if host == 0:
        os.setpgid(0, 0)  # a background job
        os.dup2(slave, 2)
        os.dup2(out_w, 1)
        os.execve(argv[0], argv, env)
    os.setpgid(host, host)
    deadline, stopped, status = time.time() + 20, False, None
    while time.time() < deadline:
        pid, st = os.waitpid(host, os.WNOHANG | os.WUNTRACED)
        if pid and os.WIFSTOPPED(st):
            stopped = True
            os.kill(host, 9)
            os.waitpid(host, 0)
            break
        if pid:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.01)
    os.write(out_w, b"")
    print(json.dumps({"stopped": stopped, "status": status}), file=sys.stderr)
    os._exit(0)
os.close(out_w)
os.close(slave)
out, tty = b"", b""
while True:
    r, _, _ = select.select([out_r, master], [], [], 25)
    if not r:
        break
    if out_r in r:
        d = os.read(out_r, 4096)
        if not d:
            break
        out += d
    if master in r:
        try:
            tty += os.read(master, 4096)
        except OSError:
            pass
_, st = os.waitpid(leader, 0)
time.sleep(0.05)
while select.select([master], [], [], 0.2)[0]:
    try:
        d = os.read(master, 4096)
    except OSError:
        break
    if not d:
        break
    tty += d
print(json.dumps({"stdout": out.decode(errors="replace"), "tty": tty.decode(errors="replace")}))
"""


# A host whose allocator exists only after its own constructor ran (a program with an arena of its
# own): a malloc before that touches page zero.
OWN_MALLOC_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *arena;
static size_t used;
__attribute__((constructor)) static void set_up_arena(void) {
  static char mem[1 << 22];
  arena = mem;
}
void *malloc(size_t n) {
  if (!arena) *(volatile char *)0 = 1; /* not set up yet */
  size_t *p = (size_t *)(arena + used);
  used += (n + 2 * sizeof(size_t) + 15) & ~(size_t)15;
  p[0] = n;
  return p + 2;
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { void *p = malloc(a * b); return memset(p, 0, a * b); }
void *realloc(void *old, size_t n) {
  void *p = malloc(n);
  if (old) memcpy(p, old, ((size_t *)old)[-2] < n ? ((size_t *)old)[-2] : n);
  return p;
}
int main(void) {
  const char *v = getenv("UCX_TLS");
  printf("main UCX_TLS=%s\n", v ? v : "<unset>");
  return 0;
}
"""

# A host with functions of libc's names of its own, which say on stdout that they were called.
OWN_FUNCTIONS_HOST = r"""
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void say(const char *what) { write(1, what, __builtin_strlen(what)); }
long syscall(long nr, ...) { (void)nr; say("host syscall\n"); errno = ENOSYS; return -1; }
int sigprocmask(int how, const sigset_t *set, sigset_t *old) { (void)how, (void)set, (void)old; say("host sigprocmask\n"); return 0; }
unsigned long getauxval(unsigned long type) { (void)type; say("host getauxval\n"); return 0; }
int main(void) {
  const char *v = getenv("UCX_TLS");
  printf("main UCX_TLS=%s\n", v ? v : "<unset>");
  return 0;
}
"""


# A linked library that points environ at a read-only copy of the environment (what a
# `static const char *env[]` in .rodata is), holding the inherited pair when there is one.
RO_ENV_LIB = r"""
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
extern char **environ;
__attribute__((constructor)) static void read_only_environ(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **ro = mmap(0, (n + 1) * sizeof(char *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ro == MAP_FAILED) abort();
  memcpy(ro, environ, (n + 1) * sizeof(char *));
  if (mprotect(ro, (n + 1) * sizeof(char *), PROT_READ)) abort();
  environ = ro;
}
void read_only_linked(void) {}
"""
RO_ENV_HOST = linked_host("read_only_linked")


class Programs:
    def __init__(self, t, work):
        self.ok = True
        self.work = work
        self.lib_thread = self._c(t, "libgetenv_thread.so", GETENV_THREAD_LIB, ["-shared", "-fPIC", "-pthread"])
        self.thread_host = self._c(t, "getenv_thread_host", GETENV_THREAD_HOST,
                                   ["-L" + work, "-lgetenv_thread", "-Wl,-rpath," + work, "-pthread"])
        self.lib_errno = self._c(t, "liberrno_first.so", ERRNO_LIB, ["-shared", "-fPIC"])
        self.signal_host = self._c(t, "signal_host", SIGNAL_HOST.replace("void errno_lib_linked(void);\n", ""),
                                   ["-Wl,--no-as-needed", "-L" + work, "-lerrno_first", "-Wl,-rpath," + work])
        self.env_api_host = self._c(t, "env_api_host", ENV_API_HOST)
        self.plain_writer = self._c(t, "libplain_writer.so", PLAIN_WRITER_LIB, ["-shared", "-fPIC"])
        self.lib_ro_env = self._c(t, "libro_env.so", RO_ENV_LIB, ["-shared", "-fPIC"])
        self.ro_env_host = self._c(t, "ro_env_host", RO_ENV_HOST,
                                   ["-Wl,--no-as-needed", "-L" + work, "-lro_env", "-Wl,-rpath," + work])
        self.own_malloc_host = self._c(t, "own_malloc_host", OWN_MALLOC_HOST, ["-Wl,--export-dynamic"])
        self.own_functions_host = self._c(t, "own_functions_host", OWN_FUNCTIONS_HOST, ["-Wl,--export-dynamic"])

    def _c(self, t, name, source, flags=()):
        path, err = compile_c(self.work, name, source, flags=flags)
        if not t.check("compile %s" % name, path is not None, err or ""):
            self.ok = False
        return path


_built = []


def programs(t):
    """The test programs, compiled once per process (the compile checks print where they are
    built); a case ends here without gcc (SKIP) or when one does not compile (FAIL)."""
    if not have("gcc"):
        t.skip("all", "gcc not installed")
        t.exit()
    if not _built:
        work = scratch_dir("ucxtls-safety-")
        _built.append(Programs(t, work))
    if not _built[0].ok:
        t.check("the test programs compiled", False, "see the compile lines above")
        t.exit()
    return _built[0]


def crashes(host, lib, machine, inherited, runs):
    """(runs that died by a signal, first unexpected output or None)."""
    dead, odd = 0, None
    for i in range(runs):
        env = env_for(machine, preload=False, **inherited)
        env["LD_PRELOAD"] = lib
        for k in range(20 + i % 2):  # even and odd environment sizes: glibc's realloc moves either
            env["PAD_%02d" % k] = "x"
        p = run([host], env)
        if p.returncode < 0:
            dead += 1
        elif p.returncode != 0 and odd is None:
            odd = "status %d: %r %r" % (p.returncode, p.stdout[:200], p.stderr[:200])
    return dead, odd


@case("threads: a getenv thread in the host while the library edits the environment")
def threads(t):
    prog = programs(t)
    for case, machine, inherited in [("set", "dgx", {}), ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                     ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                     ("repair", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"})]:
        env = env_for(machine, **inherited)
        p = run([prog.thread_host], dict(env, UCXTLS_DEBUG="1"))
        err = p.stderr.decode()
        t.equal("getenv thread, %s: nothing written, main sees UCX_TLS as it was" % case, p.stdout.decode().strip(),
                inherited.get("UCX_TLS", "<unset>"), err)
        t.check("getenv thread, %s: the debug line says failed, another thread runs" % case,
                err.startswith("ucxtls: failed to ") and "another thread runs" in err, err)
        dead, odd = crashes(prog.thread_host, env["LD_PRELOAD"], machine, inherited, RUNS)
        t.equal("getenv thread, %s: %d runs (even and odd environment sizes), none died by a signal" % (case, RUNS),
                dead, 0)
        t.check("getenv thread, %s: every run exits 0" % case, odd is None, odd or "")
    if SETENV_LIB and os.path.exists(SETENV_LIB):
        dead, _ = crashes(prog.thread_host, SETENV_LIB, "dgx", {}, RUNS)
        print("info control: the two setenv calls the library once made (setenv_preload): "
              "%d of %d runs died by a signal (a race; not asserted)" % (dead, RUNS), flush=True)


def env_api(t, memcheck):
    if memcheck and not have("valgrind"):  # before the programs: their compile checks would pass
        t.skip("host environment calls under memcheck", "valgrind not installed")
        return
    prog = programs(t)
    for case, machine, inherited in [("set", "dgx", {}), ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                     ("stale marker", "dgx", {"UCXTLS_DERIVED": Z}),
                                     ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                     ("repair", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"})]:
        env = env_for(machine, **inherited)
        argv = [prog.env_api_host]
        if memcheck:  # valgrind itself runs without the library; --trace-children is not needed
            argv = ["valgrind", "-q", "--error-exitcode=99", "--tool=memcheck"] + argv
        p = run(argv, env, timeout=120)
        out = p.stdout.decode()
        t.equal("host setenv/unsetenv/putenv/clearenv after the library, %s: exit 0%s"
                % (case, " under memcheck, no error" if memcheck else ""), p.returncode, 0,
                out + p.stderr.decode()[-3000:])
        t.check("host environment calls, %s: each took effect%s" % (case, " (memcheck)" if memcheck else ""),
                "after UCX_TLS=host,again DERIVED=unset PUT=1" in out and "end AFTER_CLEARENV=1 UCX_TLS=unset" in out, out)


@case("the host's own environment calls after the library")
def env_api_plain(t):
    env_api(t, False)


@case("memcheck: the host's own environment calls after the library", tags=("memcheck",))
def env_api_memcheck(t):
    env_api(t, True)


def broken_pipe_run(argv, env, preexec=None):
    r, w = os.pipe()
    os.close(r)  # the reader has gone
    try:
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=w, timeout=60, preexec_fn=preexec)
    finally:
        os.close(w)
    return p


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


def blocking(sig, raise_one=False):
    """A preexec_fn: the host starts with sig blocked (and, with raise_one, one of its own
    pending across exec)."""
    def preexec():
        signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
        if raise_one:
            os.kill(os.getpid(), sig)
    return preexec


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


@case("errno as the host left it")
def errno_paths(t):
    prog = programs(t)
    paths = [("set", "dgx", {}), ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
             ("keep", "dgx", {"UCX_TLS": "tcp"}), ("skip: disabled", "dgx", {"UCXTLS_DISABLE": "1"}),
             ("skip: no GPU", "no-gpu", {}), ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
             ("set all: no RDMA", "no-rdma", {}), ("repair", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"}),
             ("invalid setting", "dgx", {"UCXTLS_ACCEL": "foo"}), ("debug line", "dgx", {"UCXTLS_DEBUG": "1"}),
             ("unknown variable", "dgx", {"UCXTLS_ACCELL": "ze"}), ("missing sysroot", None,
                                                                   {"UCXTLS_SYSROOT": "/nonexistent-ucxtls"})]
    plain = run([prog.signal_host], env_for("dgx", preload=False))
    if not t.check("errno control: main sees the linked library's errno without the preload",
                   plain.stdout.startswith(b"errno=4242 "), plain.stdout.decode()):
        return
    for label, machine, extra in paths:
        p = run([prog.signal_host], env_for(machine, **extra))
        t.check("errno, %s: main sees errno=4242 as the linked library left it" % label,
                p.returncode == 3 and p.stdout.startswith(b"errno=4242 "), p.stdout.decode() + p.stderr.decode())
    p = broken_pipe_run([prog.signal_host], env_for("dgx", UCXTLS_DEBUG="1"))
    t.check("errno, a line on a broken pipe: main sees errno=4242", p.stdout.startswith(b"errno=4242 "),
            p.stdout.decode())


@case("an unknown UCXTLS_ variable: one line, the library carries on")
def unknown_variables(t):
    line = "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n"
    p = run(["/bin/sh", "-c", 'printf %s "$UCX_TLS"'], env_for("dgx", UCXTLS_ACCELL="ze"))
    t.equal("unknown UCXTLS_ACCELL: one stderr line with the closest name", p.stderr.decode(), line)
    t.equal("unknown UCXTLS_ACCELL: ignored, the library carries on (probe: cuda)", p.stdout.decode(), C)
    p = run(["/bin/sh", "-c", "exit 0"], env_for("dgx", UCXTLS_ACCELL="ze", UCXTLS_DISABLE="1"))
    t.equal("unknown variable with UCXTLS_DISABLE=1: nothing printed", p.stderr.decode(), "")
    p = run(["/bin/sh", "-c", "exit 0"], env_for("dgx", UCXTLS_WHATEVER="1", UCXTLS_DEBUG="1"))
    lines = p.stderr.decode().splitlines()
    t.check("unknown variable and the debug line: two lines, the unknown one first",
            len(lines) == 2 and lines[0] == "ucxtls: unknown variable UCXTLS_WHATEVER; ignored"
            and lines[1].startswith("ucxtls: set UCX_TLS="), p.stderr.decode())


@case("one line per process tree: a child whose parent printed the same lines stays silent")
def one_line_per_tree(t):
    tree = "/bin/true; /bin/true; /bin/sh -c '/bin/true; /bin/true'"  # 6 processes with the library
    for extra, line in [({"UCXTLS_ACCELL": "ze"}, "ucxtls: unknown variable UCXTLS_ACCELL (did you mean UCXTLS_ACCEL?); ignored\n"),
                        ({"UCXTLS_ACCEL": "foo"}, 'ucxtls: UCXTLS_ACCEL="foo" is not one of auto, cuda, rocm, ze, none; '
                                                   "UCX_TLS left unchanged\n"),
                        ({"UCXTLS_PROBE_TIMEOUT_MS": "abc"}, 'ucxtls: UCXTLS_PROBE_TIMEOUT_MS="abc" is not a whole number '
                         "of milliseconds from 1 to 600000; ignored here (only `ucxtls probe` reads it)\n")]:
        label = " ".join("%s=%s" % kv for kv in extra.items())
        p = run(["/bin/sh", "-c", tree], env_for("dgx", **extra))
        t.equal("%s: a tree of 6 processes prints the line once" % label, p.stderr.decode(), line)
        p = run(["/bin/sh", "-c", tree], env_for("dgx", UCXTLS_SAID="0123456789abcdef", **extra))
        t.equal("%s: a mark of other lines inherited: printed once, then silent" % label, p.stderr.decode(), line)
        p = run(["/bin/sh", "-c", tree], env_for("dgx", UCXTLS_DEBUG="1", **extra))
        t.equal("%s with UCXTLS_DEBUG=1: asked for in every process, 6 times" % label,
                p.stderr.decode().count(line), 6, p.stderr.decode())
        # A line that never reached stderr (the parent's stderr closed) is not marked as said:
        # the first child with a stderr prints it.
        p = run(["/bin/sh", "-c", 'exec 2>&-; LD_PRELOAD="$LIB" exec /bin/sh -c "/bin/sh -c /bin/true 2>&1"'],
                env_for("dgx", preload=False, LIB=LIB, **extra))
        t.equal("%s: the parent's stderr closed: its children still print the line once" % label,
                p.stdout.decode(), line, p.stderr.decode())


@case("an invalid setting of one command or tier: one line naming it, nothing switched off")
def ignored_settings(t):
    cli = os.path.join(os.path.dirname(LIB), "ucxtls")
    for extra, line in [
            ({"UCXTLS_PROBE_TIMEOUT_MS": "abc"}, 'ucxtls: UCXTLS_PROBE_TIMEOUT_MS="abc" is not a whole number of '
             "milliseconds from 1 to 600000; ignored here (only `ucxtls probe` reads it)\n"),
            ({"UCXTLS_CACHE_DIR": "rel/dir"}, 'ucxtls: UCXTLS_CACHE_DIR="rel/dir" is not an absolute path; ignored\n'),
            ({"UCXTLS_CACHE_DIR": "rel", "UCXTLS_PROBE": "driver"}, 'ucxtls: UCXTLS_CACHE_DIR="rel" is not an absolute '
             "path; no saved driver answer is read: the kernel probe answers\n")]:
        label = " ".join("%s=%s" % kv for kv in sorted(extra.items()))
        p = run(["/bin/sh", "-c", 'printf %s "$UCX_TLS"'], env_for("dgx", **extra))
        t.equal("%s: the value is set (the kernel probe answers)" % label, p.stdout.decode(), C, p.stderr.decode())
        t.equal("%s: one line naming it" % label, p.stderr.decode(), line)
        p = run(["/bin/sh", "-c", "exit 0"], env_for("dgx", UCXTLS_DEBUG="1", **extra))
        lines = p.stderr.decode().splitlines(True)
        t.check("%s with UCXTLS_DEBUG=1: the line, then the debug line saying set" % label,
                len(lines) == 2 and lines[0] == line and lines[1].startswith("ucxtls: set UCX_TLS=" + C), p.stderr.decode())
        p = run(["/bin/sh", "-c", "exit 0"], env_for("dgx", UCXTLS_DISABLE="1", **extra))
        t.equal("%s with UCXTLS_DISABLE=1: nothing printed" % label, p.stderr.decode(), "")
        if os.path.exists(cli):
            p = run([cli, "explain"], env_for("dgx", preload=False, **extra))
            t.check("%s: explain shows the line among the library's lines" % label,
                    ("library line\n  " + line) in p.stdout.decode(), p.stdout.decode()[-600:])


@case("the host's own malloc, syscall, sigprocmask, getauxval: never called by the library")
def own_functions(t):
    prog = programs(t)
    runs = 20
    for host in (prog.own_malloc_host, prog.own_functions_host):
        name = os.path.basename(host)
        plain = run([host], env_for("dgx", preload=False))
        if not t.equal("%s control: without the library, main's line alone" % name, plain.stdout.decode(),
                       "main UCX_TLS=<unset>\n", plain.stderr.decode()):
            continue
        for case, inherited in [("set", {}), ("re-derive", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                ("debug line", {"UCXTLS_DEBUG": "1"})]:
            dead, wrong = 0, None
            for _ in range(runs):
                p = run([host], env_for("dgx", **inherited))
                dead += p.returncode < 0
                if wrong is None and (p.returncode != 0 or p.stdout.decode() != "main UCX_TLS=%s\n" % C):
                    wrong = "status %d, stdout %r, stderr %r" % (p.returncode, p.stdout[:300], p.stderr[:300])
            t.equal("%s, %s: %d runs, none died by a signal" % (name, case, runs), dead, 0)
            t.check("%s, %s: stdout is main's line alone, with the library's value" % (name, case), wrong is None,
                    wrong or "")


@case("a read-only environment array (a linked library points environ at one): edited in a copy")
def read_only_environ(t):
    prog = programs(t)
    runs = 20
    for case, machine, inherited, want in [("set", "dgx", {}, (C, C)),
                                           ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, (C, C)),
                                           ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, ("<unset>", "<unset>")),
                                           ("repair", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"}, (C, "<unset>")),
                                           # the stale marker removed in a copy, the repair written in that copy
                                           ("repair over a stale marker", "dgx",
                                            {"UCX_TLS": Z, "UCXTLS_DERIVED": R, "UCXTLS_REPAIR": "1"}, (C, "<unset>"))]:
        plain = run([prog.ro_env_host], env_for(machine, preload=False, **inherited))
        if not t.equal("read-only environ, %s, control without the library: exit 0" % case, plain.returncode, 0,
                       plain.stderr.decode()):
            continue
        outcomes = {}
        for _ in range(runs):
            p = run([prog.ro_env_host], env_for(machine, UCXTLS_DEBUG="1", **inherited))
            got = tuple(p.stdout.decode().strip().split("|")) if p.returncode == 0 else ("status %d" % p.returncode,)
            key = "ok" if got == want else "%r (line %r)" % (got, p.stderr.decode()[:200])
            outcomes[key] = outcomes.get(key, 0) + 1
        t.equal("read-only environ, %s: %d runs, none died, main sees the decided pair %s" % (case, runs, "|".join(want)),
                outcomes, {"ok": runs})


if __name__ == "__main__":
    main("no host is hurt: threads, the host's own environment calls, signals, errno, unknown variables")
