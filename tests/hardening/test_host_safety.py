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
import os

from common import C, LIB, R, Z, case, env_for, have, include, main, run
from host_programs import broken_pipe_run, programs

SETENV_LIB = os.environ.get("UCXTLSTEST_SETENV_LIB", "")
RUNS = 300


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
    include("host_safety_signals")
    main("no host is hurt: threads, the host's own environment calls, signals, errno, unknown variables")
