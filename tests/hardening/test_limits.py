#!/usr/bin/env python3
"""The library's limits, measured (README "Limits"; docs/how-it-decides.md, "Limits").

1. A library linked into the program (DT_NEEDED) whose constructor applies its own default
   (`setenv("UCX_TLS", CUDA list, 0)`) runs before any preloaded constructor (glibc runs a
   program's dependencies' constructors first): its value is in the environment when ours runs,
   so it is kept as the user's. UCXTLS_REPAIR=1 repairs it on a node of another family.
2. A thread started by a linked library's constructor may be editing the environment while the
   constructors run (unsetenv and setenv of an existing variable edit the array in place; glibc
   before 2.41 frees the arrays setenv replaces). The library writes only while the process has
   one thread (/proc/self/task's link count), and reads an array other than the exec's only then:
   asserted with a thread that waits for main (nothing written, the line says why), and with a
   thread that runs unsetenv of 48 inherited variables, setenv of 48 existing ones, or one
   setenv(OMP_NUM_THREADS) during the constructors, on the set, re-derive and clear paths: never
   hurt (every name once, every edit there, nothing brought back) and the debug line true. The stress program (a linked library whose constructor starts a thread
   adding 64 variables; main joins it and counts them) is run RUNS times on the set, re-derive and
   clear paths with no preload, an empty preload and the library. Asserted: without the library
   and with the empty one the host is never hurt (the setup is sound). Measured and printed, not
   asserted (a race): how often the library's runs die by a signal or lose a variable of the host.
3. A mount that never answers (a hard-mounted NFS home whose server is down; here a FUSE mount
   whose server never reads /dev/fuse, mounted with a raw mount(2): root only, else SKIP) as
   $HOME or $UCX_CONFIG_DIR: on a node without a GPU the answer does not depend on ucx.conf and
   the family is asked first, so /bin/true finishes (asserted, 5 runs each, 3 s timeout). On a GPU
   node the ucx.conf lookup there blocks, as UCX's own would: measured and printed (a limit).
"""
import ctypes
import os
import subprocess
import sys
import tempfile

from common import C, LIB, Z, case, compile_c, env_for, have, linked_host, main, run, scratch_dir

RUNS = int(os.environ.get("UCXTLSTEST_LIMIT_RUNS", "300"))

DEFAULT_LIB = r"""
#include <stdlib.h>
/* A trainer's library: applies its CUDA default when nobody configured UCX_TLS. */
__attribute__((constructor)) static void own_default(void) { setenv("UCX_TLS", "rc_x,rc,dc_x,dc,cuda_copy", 0); }
void linked_default(void) {}
"""
DEFAULT_HOST = linked_host("linked_default")
SETENV_THREAD_LIB = r"""
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
static volatile int started;
static pthread_t th;
static void *writer(void *arg) {
  char name[32];
  (void)arg;
  started = 1;
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "STRESS_%02d", i);
    setenv(name, "x", 1);  /* each adds one: glibc moves the array and frees the one it replaced */
  }
  return 0;
}
/* Runs before any preloaded library's constructor; returns once the writer runs. */
__attribute__((constructor)) static void start_writer(void) {
  if (pthread_create(&th, 0, writer, 0) == 0)
    while (!started) sched_yield();
}
void join_writer(void) { pthread_join(th, 0); }
"""
SETENV_THREAD_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
void join_writer(void);
int main(void) {
  char name[32];
  int missing = 0;
  join_writer();
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "STRESS_%02d", i);
    missing += getenv(name) == NULL;
  }
  printf("%d\n", missing);
  return 0;
}
"""
EMPTY_LIB = "void ucxtls_test_empty(void) {}\n"

# A linked library's constructor starts a thread that edits the environment in place, which
# leaves __environ as it was: STRESS_MODE=unset removes the 48 inherited DROP_nn, =replace gives
# the 48 inherited REPL_nn a new value, =omp adds OMP_NUM_THREADS=8 once (moving the array). Each
# operation is followed by a short spin, and the whole starts after a delay of STRESS_DELAY spins,
# so that over the runs the edits overlap every part of the preloaded constructor.
EDIT_THREAD_LIB = r"""
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static volatile int started;
static pthread_t th;
static int mode, delay;
static void spin(int n) { for (volatile int i = 0; i < n; i++) {} }
static void *editor(void *arg) {
  char name[32];
  (void)arg;
  started = 1;
  spin(delay);
  if (mode == 'o') { setenv("OMP_NUM_THREADS", "8", 1); return 0; }
  for (int i = 0; i < 48; i++) {
    snprintf(name, sizeof name, mode == 'u' ? "DROP_%02d" : "REPL_%02d", i);
    if (mode == 'u') unsetenv(name); else setenv(name, "new", 1);
    spin(300);
  }
  return 0;
}
__attribute__((constructor)) static void start_editor(void) {
  const char *m = getenv("STRESS_MODE"), *d = getenv("STRESS_DELAY");
  mode = m ? m[0] : 'u';
  delay = d ? atoi(d) : 0;
  if (pthread_create(&th, 0, editor, 0) == 0)
    while (!started) sched_yield();
}
void join_editor(void) { pthread_join(th, 0); }
"""
# main joins the thread, then checks the whole environment: every name once, the thread's edits
# all there, nothing brought back; prints "ok" or what is wrong, then UCX_TLS.
EDIT_THREAD_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern char **environ;
void join_editor(void);
int main(void) {
  join_editor();
  const char *m = getenv("STRESS_MODE");
  int bad = 0;
  for (char **e = environ; *e; e++)
    for (char **f = e + 1; *f; f++) {
      size_t n = strcspn(*e, "=");
      if (!strncmp(*e, *f, n + 1)) { printf("duplicate %.*s; ", (int)n, *e); bad = 1; }
    }
  char name[32];
  for (int i = 0; i < 48; i++) {
    snprintf(name, sizeof name, "DROP_%02d", i);
    const char *v = getenv(name);
    if (m[0] == 'u' ? v != NULL : (v == NULL || strcmp(v, "old"))) { printf("%s %s; ", name, v ? "brought back" : "lost"); bad = 1; }
    snprintf(name, sizeof name, "REPL_%02d", i);
    v = getenv(name);
    if (!v || strcmp(v, m[0] == 'r' ? "new" : "old")) { printf("%s=%s; ", name, v ? v : "<lost>"); bad = 1; }
  }
  const char *omp = getenv("OMP_NUM_THREADS");
  if (m[0] == 'o' && (!omp || strcmp(omp, "8"))) { printf("OMP_NUM_THREADS lost; "); bad = 1; }
  const char *t = getenv("UCX_TLS");
  printf("%s|%s\n", bad ? "hurt" : "ok", t ? t : "<unset>");
  return 0;
}
"""

# A linked library's constructor that calls setenv (the array is then glibc's) and, when asked,
# starts a thread that waits for main: the library then writes nothing, and says why.
WAITER_LIB = r"""
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_t th;
static int fds[2];
static void *waiter(void *arg) { char c; (void)arg; return (void *)(long)read(fds[0], &c, 1); }
__attribute__((constructor)) static void start(void) {
  setenv("SET_BY_LINKED_LIBRARY", "1", 1);
  if (getenv("START_WAITER") && pipe(fds) == 0) pthread_create(&th, 0, waiter, 0);
}
void stop_waiter(void) { if (getenv("START_WAITER")) { if (write(fds[1], "x", 1) < 0) abort(); pthread_join(th, 0); } }
"""
WAITER_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
void stop_waiter(void);
int main(void) {
  stop_waiter();
  const char *t = getenv("UCX_TLS"), *d = getenv("UCXTLS_DERIVED"), *l = getenv("SET_BY_LINKED_LIBRARY");
  printf("%s|%s|%s\n", t ? t : "<unset>", d ? d : "<unset>", l ? l : "<unset>");
  return 0;
}
"""

_built = {}


def built(t):
    if not have("gcc"):
        t.skip("limits", "gcc not installed")
        t.exit()
    if not _built:
        work = scratch_dir("ucxtls-limits-")
        rpath = ["-L" + work, "-Wl,-rpath," + work]
        for name, src, flags in [("liblinked_default.so", DEFAULT_LIB, ["-shared", "-fPIC"]),
                                 ("default_host", DEFAULT_HOST, ["-Wl,--no-as-needed", "-llinked_default"] + rpath),
                                 ("libsetenv_thread.so", SETENV_THREAD_LIB, ["-shared", "-fPIC", "-pthread"]),
                                 ("setenv_thread_host", SETENV_THREAD_HOST, ["-lsetenv_thread", "-pthread"] + rpath),
                                 ("libempty_preload.so", EMPTY_LIB, ["-shared", "-fPIC"]),
                                 ("libwaiter.so", WAITER_LIB, ["-shared", "-fPIC", "-pthread"]),
                                 ("libedit_thread.so", EDIT_THREAD_LIB, ["-shared", "-fPIC", "-pthread"]),
                                 ("edit_thread_host", EDIT_THREAD_HOST, ["-ledit_thread", "-pthread"] + rpath),
                                 ("waiter_host", WAITER_HOST, ["-lwaiter", "-pthread"] + rpath)]:
            path, err = compile_c(work, name, src, flags=flags)
            if not t.check("compile %s" % name, path is not None, err or ""):
                t.exit()
            _built[name] = path
    return _built


@case("a linked library's own default runs first and is kept; UCXTLS_REPAIR=1 repairs it")
def linked_default(t):
    host = built(t)["default_host"]
    for machine, extra, want, why in [
            ("intel-xe", {}, (C, "<unset>"), "its CUDA default is kept as the user's (it ran before ours)"),
            ("intel-xe", {"UCXTLS_REPAIR": "1"}, (Z, "<unset>"), "UCXTLS_REPAIR=1 rewrites it to this node's family"),
            ("dgx", {}, (C, "<unset>"), "on its own family's node it stands, unmarked"),
            ("no-gpu", {}, (C, "<unset>"), "on a node without a GPU it stands")]:
        p = run([host], env_for(machine, **extra))
        got = tuple(p.stdout.decode().strip().split("|"))
        t.equal("%s %s: %s" % (machine, " ".join("%s=%s" % kv for kv in extra.items()) or "(defaults)", why),
                (p.returncode, got), (0, want), p.stderr.decode())
    p = run([host], env_for("intel-xe", preload=False))
    t.equal("the control without the library: the linked default", p.stdout.decode().strip(), C + "|<unset>")


def stress(host, lib, machine, inherited, runs):
    """{outcome: runs}: ok, 'signal N', 'status N', 'lost' (a variable the thread set is missing)."""
    out = {}
    for i in range(runs):
        env = env_for(machine, preload=False, **inherited)
        if lib:
            env["LD_PRELOAD"] = lib
        for k in range(20 + i % 7):  # environment sizes: glibc's realloc moves the array or not
            env["PAD_%02d" % k] = "x"
        p = run([host], env)
        if p.returncode < 0:
            key = "signal %d" % -p.returncode
        elif p.returncode:
            key = "status %d" % p.returncode
        else:
            key = "ok" if p.stdout.strip() == b"0" else "lost"
        out[key] = out.get(key, 0) + 1
    return out


@case("after a setenv by a linked library, another thread running: nothing read or written, and the line says why")
def shared_environment(t):
    host = built(t)["waiter_host"]
    for machine, inherited, want in [("dgx", {}, C), ("dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, C),
                                     ("no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, "<unset>")]:
        label = "%s %s" % (machine, "(inherited pair)" if inherited else "(nothing inherited)")
        p = run([host], env_for(machine, **inherited))
        t.equal("%s, the one thread (a setenv ran before): written as usual" % label,
                (p.returncode, p.stdout.decode()), (0, "%s|%s|1\n" % (want, want)), p.stderr.decode())
        p = run([host], env_for(machine, START_WAITER="1", UCXTLS_DEBUG="1", **inherited))
        before = inherited.get("UCX_TLS", "<unset>")
        err = p.stderr.decode()
        t.equal("%s, another thread runs: nothing written, the host's own variable kept" % label,
                (p.returncode, p.stdout.decode()), (0, "%s|%s|1\n" % (before, inherited.get("UCXTLS_DERIVED", "<unset>"))), err)
        # The array setenv made may be freed by the thread's next setenv: not even read. The exec's
        # array (stable then) asks for the line.
        t.check("%s: the debug line says nothing was read or written, and why" % label,
                err.startswith("ucxtls: skip (UCX_TLS left as it is): a setenv ran before the library and another "
                               "thread runs") and err.count("\n") == 1, err)


@case("a setenv thread started by a linked library's constructor: the host with and without the library")
def setenv_thread(t):
    b = built(t)
    host = b["setenv_thread_host"]
    paths = [("set", "dgx", {}), ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
             ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}), ("keep", "dgx", {"UCX_TLS": "tcp"})]
    for path, machine, inherited in paths:
        for label, lib in [("no preload", None), ("an empty preload", b["libempty_preload.so"])]:
            got = stress(host, lib, machine, inherited, RUNS)
            t.equal("%s, %s: %d runs, the host never hurt (the setup is sound)" % (path, label, RUNS), got, {"ok": RUNS})
        got = stress(host, env_for()["LD_PRELOAD"], machine, inherited, RUNS)
        hurt = RUNS - got.get("ok", 0)
        print("info %s, the library: %d of %d runs hurt (%.1f%%): %s" % (path, hurt, RUNS, 100.0 * hurt / RUNS,
              ", ".join("%s %d" % kv for kv in sorted(got.items()))), flush=True)


def edit_run(host, lib, machine, inherited, mode, i):
    """One run of the in-place editor: (outcome, detail). outcome: ok, hurt, 'signal N', 'status N',
    'line false' (the debug line says what the host does not see)."""
    env = env_for(machine, preload=False, STRESS_MODE=mode, STRESS_DELAY=str((i * 37) % 4000), **inherited)
    if lib:
        env["LD_PRELOAD"] = lib
        env["UCXTLS_DEBUG"] = "1"
    for k in range(48):
        env["DROP_%02d" % k] = env["REPL_%02d" % k] = "old"
    p = run([host], env)
    out, err = p.stdout.decode(), p.stderr.decode()
    if p.returncode < 0:
        return "signal %d" % -p.returncode, err
    if p.returncode or "|" not in out:
        return "status %d" % p.returncode, out + err
    verdict, seen = out.strip().rsplit("|", 1)
    if verdict != "ok":
        return "hurt", out
    if lib:
        line = err.splitlines()[-1] if err else ""
        before = inherited.get("UCX_TLS", "<unset>")
        want = (line[len("ucxtls: set UCX_TLS="):].split(":", 1)[0] if line.startswith("ucxtls: set UCX_TLS=")
                else "<unset>" if line.startswith("ucxtls: clear ")
                else before if line.startswith(("ucxtls: failed to ", "ucxtls: skip (UCX_TLS left as it is)"))
                else None)
        if want != seen:
            return "line false", "line %r, the host sees %r" % (line, seen)
    return "ok", ""


@case("a thread editing the environment in place (unsetenv, setenv of a variable that exists, one setenv) "
      "during the constructors: never hurt, the debug line true")
def edit_thread(t):
    b = built(t)
    host = b["edit_thread_host"]
    runs = max(RUNS // 2, 20)
    for mode, what in [("u", "unsetenv of 48 inherited variables"), ("r", "setenv of 48 inherited variables"),
                       ("o", "one setenv(OMP_NUM_THREADS)")]:
        for path, machine, inherited in [("set", "dgx", {}), ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
                                         ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z})]:
            control = {}
            for i in range(runs // 4):
                k = edit_run(host, None, machine, inherited, mode, i)[0]
                control[k] = control.get(k, 0) + 1
            t.equal("%s, %s, no preload: %d runs never hurt (the setup is sound)" % (what, path, runs // 4), control,
                    {"ok": runs // 4})
            got, first = {}, None
            for i in range(runs):
                k, detail = edit_run(host, LIB, machine, inherited, mode, i)
                got[k] = got.get(k, 0) + 1
                if k != "ok" and first is None:
                    first = "%s: %s" % (k, detail)
            t.equal("%s, %s, the library: %d runs never hurt, the debug line true in each" % (what, path, runs),
                    got, {"ok": runs}, first or "")


class HungMount:
    """A FUSE mount whose server never answers: every lookup under it blocks (killably)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ucxtls-hung-")
        self.fd, self.error = -1, None
        try:
            self.fd = os.open("/dev/fuse", os.O_RDWR)
        except OSError as e:
            self.error = "/dev/fuse: %s" % e.strerror
            return
        libc = ctypes.CDLL(None, use_errno=True)
        opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % self.fd
        if libc.mount(b"ucxtls-hung", self.dir.encode(), b"fuse", 0, opts.encode()) != 0:
            self.error = "mount -t fuse: %s (root and /dev/fuse needed)" % os.strerror(ctypes.get_errno())

    def close(self):
        if not self.error:
            ctypes.CDLL(None).umount2(self.dir.encode(), 2)  # MNT_DETACH
        if self.fd >= 0:
            os.close(self.fd)  # aborts the connection: anything still waiting gets ENOTCONN
        os.rmdir(self.dir)


def timed_true(env, timeout=3):
    """'exit N' or 'killed at N s' for /bin/true exec'd with env."""
    try:
        p = subprocess.run(["/bin/true"], env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=timeout)
        return "exit %d" % p.returncode
    except subprocess.TimeoutExpired:
        return "killed at %d s" % timeout


@case("a mount that never answers as $HOME or $UCX_CONFIG_DIR: a node without a GPU never touches it")
def hung_mount(t):
    m = HungMount()
    try:
        if m.error:
            t.skip("a mount that never answers", m.error)
            return
        for var in ("HOME", "UCX_CONFIG_DIR"):
            for machine, extra in (("no-gpu", {}), ("empty", {}), ("no-gpu", {"UCXTLS_DEBUG": "1"})):
                got = [timed_true(env_for(machine, **dict(extra, **{var: m.dir}))) for _ in range(5)]
                t.equal("%s on a hung mount, %s %s: /bin/true finishes, 5 runs" % (var, machine, extra or ""),
                        got, ["exit 0"] * 5)
        got = timed_true(env_for("dgx", HOME=m.dir))
        print("info HOME on a hung mount, a GPU node (dgx): %s (the ucx.conf lookup there blocks, as UCX's "
              "own does: a limit)" % got, flush=True)
    finally:
        m.close()


if __name__ == "__main__":
    main("limits: a linked library's own default; a setenv thread during the constructors")
