#!/usr/bin/env python3
"""A failed probe is not a "no", and a failed write is not a "set": processes that start with
their fd table (nearly) full, or with malloc starved (`ulimit -d`).

A launcher that leaked descriptors, or `ulimit -n` set tiny, makes the probe's opens fail with
EMFILE. Before, a CUDA node then counted 0 GPUs and wrote the value without cuda_copy. Now each
starved start either gets the right value or leaves UCX_TLS alone (the fact is "unknown" and the
debug line says so); it never gets a value without the copy transport.

With RLIMIT_DATA swept from 96 KiB to 512 KiB: the debug line must say `set` exactly when the
host sees the value, and otherwise `failed to set` with what the host does see (unset, or the
inherited value); a clear is done in place and never fails. The environment edit's one block is a
page of its own (mmap, not malloc): wherever ld.so could start the C host under the limit, that
page fitted too (measured in 4 KiB steps, also under RLIMIT_AS), so every start of the C host that
ran must say `set`; with malloc (before) the starts from 96 to about 200 KiB failed to write. Hosts: a C program that allocates nothing (it survives
where the library's malloc fails) and /bin/sh. `ucxtls explain` under the same sweep prints its
answer or exits 2 with `ucxtls: out of memory`, never an abort.

The host is /bin/sh exec'd directly with the library: the fds are taken, and the limit set, in
the child between fork and exec, so the constructor is the first code to meet them.
"""
import os
import resource
import subprocess

from harness import ALL, ALWAYS, C, EMPTY_HOME, LIB, R, UNSET, Z, add_case, case, env_for, have, main

# (machine, variables, the value when every fact was read). UCXTLS_WRITE=always reads every fact
# (the network too) and writes the template; the default on an Intel node writes all without the
# network fact.
MACHINES = [("dgx", ALWAYS, C), ("mi300x", ALWAYS, R), ("intel-xe", ALWAYS, Z), ("intel-xe", {}, ALL)]
SHOW = 'printf "%s" "${UCX_TLS-<unset>}"'


def starved(free, limit, leak):
    """A preexec function: RLIMIT_NOFILE=limit; when leak, every fd below it but `free` is taken."""
    def pre():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
        if leak:
            for fd in range(3, limit - free):
                try:
                    os.dup2(0, fd)
                except OSError:
                    pass
    return pre


def run_starved(env, free, limit, leak):
    p = subprocess.run(["/bin/sh", "-c", SHOW], env=env, cwd=EMPTY_HOME, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=starved(free, limit, leak), close_fds=False,
                       stdin=subprocess.DEVNULL, timeout=60)
    return p.stdout.decode(), p.stderr.decode()


def starved_machine(t, machine, extra, want):
    unknown_seen = right_seen = 0
    # A leaked fd table with 1..6 free slots under a limit of 64; then ulimit -n 5..11. (ld.so
    # itself needs one free fd to load the library and libc: with none, no program starts; the
    # test's own pipes take fds 3 and up under a plain limit.)
    cases = [(free, 64, True) for free in range(1, 7)] + [(0, limit, False) for limit in range(5, 12)]
    for free, limit, leak in cases:
        label = "%s, %s" % (machine, "%d free fd(s) of 64" % free if leak else "ulimit -n %d" % limit)
        tls, err = run_starved(env_for(machine, UCXTLS_DEBUG="1", **extra), free, limit, leak)
        if tls == want:
            right_seen += 1
            t.check(label + ": the right value", err.startswith("ucxtls: set"), err)
        else:
            unknown_seen += 1
            t.check(label + ": UCX_TLS left alone, and the debug line says which fact was unknown",
                    tls == "<unset>" and err.startswith("ucxtls: skip") and "cannot tell" in err
                    and "EMFILE" in err, "UCX_TLS=%r\n%s" % (tls, err))
    # Both outcomes must occur, or the test did not reach the failure path (or the success one).
    t.check("%s: some starved starts could not tell (%d) and some got the value (%d)" % (
        machine, unknown_seen, right_seen), unknown_seen > 0 and right_seen > 0)
    # An inherited value of ours stays when a fact is unknown (removing it would be a guess too).
    tls, err = run_starved(env_for(machine, UCXTLS_DEBUG="1", UCX_TLS="tcp", UCXTLS_DERIVED="tcp", **extra), 1, 64, True)
    t.check("%s, one free fd, inherited derived value: it stays" % machine,
            tls == "tcp" and "cannot tell" in err, err)


for _machine, _extra, _want in MACHINES:
    add_case("starved fd tables on %s%s" % (_machine, " UCXTLS_WRITE=always" if _extra else ", the default"),
             starved_machine, _machine, _extra, _want)


# ---------------------------------------------------------------------------------------------
# malloc starved: RLIMIT_DATA (ulimit -d) swept

KIB = list(range(96, 520, 8))
NO_MALLOC_HOST = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {  /* no allocation: it runs where the library's malloc fails */
  const char *v = getenv("UCX_TLS");
  if (!v) v = "<unset>";
  return write(1, v, strlen(v)) < 0;
}
"""
_hosts = []


def hosts(t):
    """[(label, argv)]: the C host that allocates nothing (compiled once), and /bin/sh."""
    if not _hosts:
        exe = os.path.join(EMPTY_HOME, "..", "no_malloc_host")
        p = subprocess.run(["gcc", "-O1", "-x", "c", "-o", exe, "-"], input=NO_MALLOC_HOST.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT) if have("gcc") else None
        if p is not None and p.returncode == 0:
            _hosts.append(("a C host that allocates nothing", [exe]))
        else:
            t.skip("the C host", "gcc not installed" if p is None else p.stdout.decode())
        _hosts.append(("/bin/sh", ["/bin/sh", "-c", SHOW]))
    return _hosts


def run_data_limited(argv, env, kib):
    def pre():
        resource.setrlimit(resource.RLIMIT_DATA, (kib * 1024, resource.RLIM_INFINITY))
    p = subprocess.run(argv, env=env, cwd=EMPTY_HOME, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=pre, stdin=subprocess.DEVNULL, timeout=60)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


# (label, machine, inherited variables, the value when the write succeeds, when it fails)
WRITES = [("set", "dgx", ALWAYS, C, UNSET),
          ("set all, the default", "intel-xe", {}, ALL, UNSET),
          ("re-derive", "dgx", dict(ALWAYS, UCX_TLS=Z, UCXTLS_DERIVED=Z), C, Z),
          ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, UNSET, None)]


def starved_malloc(t, label, machine, inherited, want, kept):
    for host, argv in hosts(t):
        ran = said_set = said_failed = 0
        wrong = []
        for kib in KIB:
            rc, tls, err = run_data_limited(argv, env_for(machine, UCXTLS_DEBUG="1", **inherited), kib)
            if rc != 0:
                continue  # the host itself (or ld.so) could not start under this limit
            ran += 1
            if label == "clear":
                ok = tls == "<unset>" and err.startswith("ucxtls: clear UCX_TLS and UCXTLS_DERIVED")
            elif err.startswith("ucxtls: set UCX_TLS=" + want + ":"):
                said_set += 1
                ok = tls == want
            elif err.startswith("ucxtls: failed to set UCX_TLS=%s (no memory): UCX_TLS " % want):
                said_failed += 1
                now = err.split("): UCX_TLS ", 1)[1]
                ok = tls == kept and now.startswith("stays unset:" if kept == "<unset>" else 'is "%s":' % kept)
            else:
                ok = False
            if not ok:
                wrong.append("ulimit -d %d: host sees %r, line %r" % (kib, tls, err[:160]))
        claim = ("the line says clear and the host sees UCX_TLS unset" if label == "clear" else
                 "the line says set exactly when the host sees the value (else failed, with what it sees)")
        t.check("%s, %s: in %d starts that ran under ulimit -d %d..%d KiB, %s" % (label, host, ran, KIB[0], KIB[-1], claim),
                ran and not wrong, "\n".join(wrong[:8]))
        if label != "clear" and host != "/bin/sh":
            t.check("%s, %s: every start that ran set the value (%d of %d; failed: %d)" % (label, host, said_set, ran, said_failed),
                    ran > 0 and said_set == ran)


for _label, _machine, _inherited, _want, _kept in WRITES:
    add_case("malloc starved: " + _label, starved_malloc, _label, _machine, _inherited, _want, _kept)


@case("malloc starved: ucxtls explain answers or says out of memory")
def starved_explain(t):
    cli = os.path.join(os.path.dirname(LIB), "ucxtls")
    if not os.path.exists(cli):
        t.skip("explain", "the ucxtls command is not built")
        return
    outcomes, wrong = {}, []
    for kib in range(96, 1024, 8):
        rc, out, err = run_data_limited([cli, "explain"], env_for("dgx", preload=False, **ALWAYS), kib)
        if rc == 0 and out.startswith("action    set\nUCX_TLS   rc_x,rc,dc_x,dc,cuda_copy "):
            outcomes["answered"] = outcomes.get("answered", 0) + 1
        elif rc == 2 and out == "" and err == "ucxtls: out of memory\n":
            outcomes["out of memory"] = outcomes.get("out of memory", 0) + 1
        elif rc == 127 and ("error while loading shared libraries" in err or "cannot allocate TLS" in err):
            outcomes["ld.so could not load it"] = outcomes.get("ld.so could not load it", 0) + 1
        else:
            wrong.append("ulimit -d %d: status %d, stdout %r, stderr %r" % (kib, rc, out[:80], err[:160]))
    t.check("ucxtls explain under ulimit -d 96..1016 KiB: the answer, or exit 2 with 'out of memory' (%s)"
            % ", ".join("%s %d" % kv for kv in sorted(outcomes.items())),
            not wrong and "out of memory" in outcomes and "answered" in outcomes, "\n".join(wrong[:8]))


if __name__ == "__main__":
    main("starved fd tables and malloc: the answer is right or unknown, never a guess")
