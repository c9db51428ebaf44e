"""test_command_cases.py's `ucxtls run`: the LD_PRELOAD ld.so would use, an ASan program, a FIFO
on PATH."""
import os
import subprocess
import sys

from harness import ALWAYS, BUILD_DIR, LIB, Z, case, compile_c, env_for, have, run
from command_common import CLI, WORK

EXEC_ENV = os.path.join(BUILD_DIR, "tests", "ucxtls_exec_env")


def preload_libs():
    """Two tiny preload libraries that say on stderr that they were loaded."""
    libs = {}
    for name in ("first", "second"):
        out = os.path.join(WORK, "lib%s.so" % name)
        compile_c(out, '#include <unistd.h>\n__attribute__((constructor)) static void c(void) '
                  '{ write(2, "loaded %s\\n", %d); }\n' % (name, len("loaded %s\n" % name)), ["-shared", "-fPIC"], check=True)
        libs[name] = out
    return libs


def env_lines(stdout):
    return [x for x in stdout.decode().split("\n") if x.startswith("LD_PRELOAD=")]


@case("ucxtls run: LD_PRELOAD set but empty: the child gets exactly the library")
def run_empty_preload(t):
    lib = os.path.realpath(LIB)
    for value in ("", " ", ":"):
        p = run([CLI, "run", "/usr/bin/env"], env_for(None, preload=False, LD_PRELOAD=value))
        t.equal("LD_PRELOAD=%r: the child's LD_PRELOAD" % value, env_lines(p.stdout), ["LD_PRELOAD=" + lib])


@case("ucxtls run: two LD_PRELOAD entries: the one ld.so uses (the last) is kept, once")
def run_two_preloads(t):
    if not have("cc"):
        t.skip("two LD_PRELOAD entries", "no C compiler")
        return
    libs = preload_libs()
    lib = os.path.realpath(LIB)
    base = ["PATH=/usr/bin:/bin", "HOME=" + WORK]
    both = ["LD_PRELOAD=" + libs["first"], "LD_PRELOAD=" + libs["second"]]
    p = run([EXEC_ENV] + base + both + ["--", "/bin/true"], {})
    t.equal("control: ld.so itself loads the last entry's library (glibc, measured)", p.stderr.decode(), "loaded second\n")
    p = run([EXEC_ENV] + base + both + ["--", CLI, "run", "/usr/bin/env"], {})
    t.equal("the child's environment: one LD_PRELOAD, the last entry's list with the library after it",
            env_lines(p.stdout), ["LD_PRELOAD=%s:%s" % (libs["second"], lib)])
    t.equal("... and what ld.so loaded in the child is what it would have loaded without run, plus the library "
            "(the command itself loads 'second' too)", p.stderr.decode(), "loaded second\nloaded second\n")


@case("ucxtls run: an ASan program started with nothing preloaded runs (its runtime first)")
def run_asan(t):
    if not t.needs("gcc", "ASan"):
        return
    exe = os.path.join(WORK, "asan")
    p = compile_c(exe, '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
                  'int main(int c, char **v) { const char *s = getenv("UCX_TLS"); printf("UCX_TLS=%s\\n", s ? s : "<unset>");'
                  ' fflush(stdout); if (c > 1) { volatile char *p = malloc(4); p[4] = 1; free((void *)p); } return 0; }\n',
                  ["-fsanitize=address", "-g"], cc="gcc")
    if not t.check("compile with gcc -fsanitize=address", p.returncode == 0, p.stdout.decode()):
        return
    env = env_for("intel-xe", preload=False, **ALWAYS)
    p = run([CLI, "run", exe], env)
    t.check("starts under ucxtls run and gets UCX_TLS", p.returncode == 0 and p.stdout.decode() == "UCX_TLS=%s\n" % Z,
            "%d %r %r" % (p.returncode, p.stdout, p.stderr[-600:]))
    p = run([CLI, "run", exe, "overflow"], env)
    t.check("... and ASan still reports a heap overflow", p.returncode != 0 and b"heap-buffer-overflow" in p.stderr,
            p.stderr[-600:].decode(errors="replace"))
    p = run([CLI, "run", "/usr/bin/env"], env)
    t.equal("control: a program without ASan gets the library alone", env_lines(p.stdout), ["LD_PRELOAD=" + os.path.realpath(LIB)])


@case("ucxtls run: a FIFO with an x bit first in PATH, or named, never blocks it (as env: passed over, or 126)")
def run_fifo(t):
    d = os.path.join(WORK, "fifo-bin")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "python3"))
    os.chmod(os.path.join(d, "python3"), 0o755)
    env = env_for(None, preload=False)
    env["PATH"] = d + ":" + os.path.dirname(os.path.realpath(sys.executable)) + ":" + env["PATH"]

    def bounded(argv, cwd=None):
        try:
            p = run(argv, env, cwd=cwd, timeout=10)
            return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return None, "", "blocked: killed after 10 s"

    t.equal("control: env python3 runs the python3 after the FIFO", bounded(["/usr/bin/env", "python3", "-c", "print(7)"])[:2], (0, "7\n"))
    t.equal("ucxtls run python3: the same python3, exit 0", bounded([CLI, "run", "python3", "-c", "print(7)"])[:2], (0, "7\n"))
    want = bounded(["/usr/bin/env", "./python3"], cwd=d)[0]
    rc, out, err = bounded([CLI, "run", "./python3"], cwd=d)
    t.check("ucxtls run ./FIFO: exit %s at once, as env's, one line" % want, rc == want == 126 and err.count("\n") == 1, "%s %r" % (rc, err))
