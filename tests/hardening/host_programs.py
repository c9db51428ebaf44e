"""The programs test_host_safety.py runs as hosts (C sources compiled once per process, a pty
leader in Python), and the ways it runs them with a hostile stderr or signal mask."""
import os
import signal
import subprocess

from common import compile_c, have, linked_host, printing_host, scratch_dir

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


def broken_pipe_run(argv, env, preexec=None):
    r, w = os.pipe()
    os.close(r)  # the reader has gone
    try:
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=w, timeout=60, preexec_fn=preexec)
    finally:
        os.close(w)
    return p


def blocking(sig, raise_one=False):
    """A preexec_fn: the host starts with sig blocked (and, with raise_one, one of its own
    pending across exec)."""
    def preexec():
        signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
        if raise_one:
            os.kill(os.getpid(), sig)
    return preexec
