#!/usr/bin/env python3
"""A failed probe is not a "no": processes that start with their fd table (nearly) full.

A launcher that leaked descriptors, or `ulimit -n` set tiny, makes the probe's opens fail with
EMFILE. Before, a CUDA node then counted 0 GPUs and wrote the value without cuda_copy. Now each
starved start either gets the right value or leaves UCX_TLS alone (the fact is "unknown" and the
debug line says so); it never gets a value without the copy transport.

The host is /bin/sh exec'd directly with the library: the fds are taken, and the limit set, in
the child between fork and exec, so the constructor is the first code to meet them.
"""
import os
import resource
import subprocess

from harness import EMPTY_HOME, add_case, env_for, main

MACHINES = [("dgx", "rc_x,rc,dc_x,dc,cuda_copy"), ("mi300x", "rc_x,rc,dc_x,dc,rocm_copy"),
            ("intel-xe", "rc_x,rc,dc_x,dc,ze_copy")]
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


def starved_machine(t, machine, want):
    unknown_seen = right_seen = 0
    # A leaked fd table with 1..6 free slots under a limit of 64; then ulimit -n 5..11. (ld.so
    # itself needs one free fd to load the library and libc: with none, no program starts; the
    # test's own pipes take fds 3 and up under a plain limit.)
    cases = [(free, 64, True) for free in range(1, 7)] + [(0, limit, False) for limit in range(5, 12)]
    for free, limit, leak in cases:
        label = "%s, %s" % (machine, "%d free fd(s) of 64" % free if leak else "ulimit -n %d" % limit)
        tls, err = run_starved(env_for(machine, UCXTLS_DEBUG="1"), free, limit, leak)
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
    tls, err = run_starved(env_for(machine, UCXTLS_DEBUG="1", UCX_TLS="tcp", UCXTLS_DERIVED="tcp"), 1, 64, True)
    t.check("%s, one free fd, inherited derived value: it stays" % machine,
            tls == "tcp" and "cannot tell" in err, err)


for _machine, _want in MACHINES:
    add_case("starved fd tables on " + _machine, starved_machine, _machine, _want)


if __name__ == "__main__":
    main("starved fd tables: the answer is right or unknown, never a guess")
