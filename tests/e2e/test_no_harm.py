#!/usr/bin/env python3
"""No harm: preloaded into every process of a node (as /etc/ld.so.preload, a module or a
TaskProlog put it there), the library leaves every real UCX consumer that sets no UCX_TLS working,
with the transports UCX's own default gives it, on every replayed node shape.

The consumers, each with UCX_TLS unset, run once without the library and once with it (exec'd
directly with LD_PRELOAD in their exec environment; mpirun hands it to its ranks with -x):
- UCXX 0.52 itself (a listener and an endpoint over loopback, tests/e2e/ucxx_echo.py) on the
  RAPIDS' UCX 1.21 it pins, and a UCXX-style client and server on RAPIDS' UCX 1.22 (UCX's
  ucp_client_server example compiled against the libucx-cu12 wheel), both built without verbs;
- two NIXL agents on NIXL's UCX (nixl 1.5.1 from PyPI), moving VRAM of the fake CUDA driver on the
  NVIDIA nodes, host memory elsewhere (an inference server that sets nothing);
- ucp_client_server, ucx_perftest (tag_bw, two processes) and Open MPI over its UCX PML (two
  ranks) on Debian's UCX 1.13.
The library decides from the fixture (UCXTLS_SYSROOT); the consumers move their bytes over the
paths this machine has (loopback tcp, shared memory). What each got is read from the library's
debug line (UCXTLS_DEBUG=1) or printed by the program itself. The last case prints the table of
docs/usage.md ("No harm, measured") and checks that the doc holds exactly the rows measured.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
import harness  # noqa: E402
from harness import SOURCE_DIR, add_case, case, env_for, main, ucx_build  # noqa: E402

sys.path.insert(0, os.path.join(harness.TESTS_DIR, "nixl"))
sys.path.insert(0, os.path.join(harness.TESTS_DIR, "ze"))
import datapath  # noqa: E402
import mpi  # noqa: E402  (tests/launchers, on the harness's path)
import nixl_pair  # noqa: E402
import ucp_example  # noqa: E402

MACHINES = ("dgx", "broadcom-roce", "aws-p5", "intel-xe", "mi300x", "no-gpu")
NVIDIA = ("dgx", "broadcom-roce", "aws-p5")
UNSET = "unset"
DOC = os.path.join(SOURCE_DIR, "docs", "usage.md")
ROWS = []  # (program, machine, (got, worked) without, (got, worked) with)


def got_from_debug(text):
    """UCX_TLS as the library left it, from its debug line: the value it set, or unset."""
    m = re.search(r"ucxtls: set UCX_TLS=(\S+?):", text)
    return m.group(1) if m else UNSET


def cell(got, worked):
    return "`%s`: %s" % (got, "works" if worked else "FAILS")


def judge(t, program, machine, without, with_lib, detail):
    ROWS.append((program, machine, without, with_lib))
    t.check("%s on %s without the library: works (UCX_TLS unset)" % (program, machine), without[1], detail)
    t.check("%s on %s with the library: works, as without it" % (program, machine), with_lib[1], detail)
    t.check("%s on %s with the library: UCX_TLS %s, UCX's own default (all transport classes it would use)"
            % (program, machine, with_lib[0]), with_lib[0] in (UNSET, "all"), detail)


# --------------------------------------------------------------------------- the consumers
_built = {}


def client_server_exe(t, which):
    """ucp_client_server built against `which` ("rapids" or "debian"): (exe, LD_LIBRARY_PATH), or
    (None, None) after a SKIP."""
    if which not in _built:
        why = ucp_example.missing()
        build, why = (None, why) if why or which == "debian" else ucx_build("rapids")
        if why:
            _built[which] = (None, why)
        else:
            d = tempfile.mkdtemp(prefix="ucxtls-noharm-", dir=harness._scratch)
            exe = ucp_example.build(d, os.path.join(build.prefix, "include") if build else None,
                                    build.libdir if build else None)
            _built[which] = ((exe, build.libdir if build else None), None)
    built, why = _built[which]
    if not built:
        t.skip("ucp_client_server (%s)" % which, why)
        return None, None
    return built


def client_server(t, which, machine):
    exe, libdir = client_server_exe(t, which)
    if not exe:
        return
    extra = {"LD_LIBRARY_PATH": libdir} if libdir else {}
    results, detail = [], ""
    for preload in (False, True):
        status, client, server = ucp_example.exchange(exe, env_for(machine, preload=preload, UCXTLS_DEBUG="1", **extra),
                                                      harness.EMPTY_HOME)
        results.append((got_from_debug(client) if preload else UNSET, status == 0 and "ABCDEFGHIJKLMNO" in client))
        detail += "--- %s the library:\n%s\n%s" % ("with" if preload else "without", client, server)
    name = "UCXX-style client/server, RAPIDS' UCX 1.22" if which == "rapids" else "ucp_client_server, Debian's UCX 1.13"
    judge(t, name, machine, results[0], results[1], detail)


def ucxx(t, machine):
    python, why = harness.ucxx_python()
    if not python:
        t.skip("UCXX", why)
        return
    echo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ucxx_echo.py")
    results, detail = [], ""
    for preload in (False, True):
        p = harness.run([python, echo], env_for(machine, preload=preload), timeout=120)
        out = p.stdout.decode() + p.stderr.decode()
        m = re.search(r"^UCX_TLS=(\S+) echo=True$", out, re.M)
        results.append(((m.group(1).replace("<unset>", UNSET) if m else got_from_debug(out)), p.returncode == 0 and m is not None))
        detail += out[-1500:]
    judge(t, "UCXX 0.52 echo, RAPIDS' UCX 1.21", machine, results[0], results[1], detail)


def nixl_agents(t, machine):
    memory = "VRAM" if machine in NVIDIA else "DRAM"
    results, detail = [], ""
    for preload in (False, True):
        res = nixl_pair.run_pair(t, machine, "-", preload, memory=memory, UCXTLS_DEBUG="1")
        results.append((nixl_pair.seen(res).replace("<unset>", UNSET), nixl_pair.both(res, nixl_pair.OK)))
        detail += nixl_pair.outcome(res) + "\n"
    judge(t, "NIXL agents (%s), NIXL's UCX 1.23" % memory, machine, results[0], results[1], detail)


def perftest(t, machine):
    if not os.access("/usr/bin/ucx_perftest", os.X_OK):
        t.skip("ucx_perftest", "not installed (Debian ucx-utils); scripts/test.sh installs it")
        return
    results, detail = [], ""
    for preload in (False, True):
        env = env_for(machine, preload=preload, UCXTLS_DEBUG="1")
        status, sstatus, out, final = datapath.perftest_pair("/usr", env, harness.EMPTY_HOME, "tag_bw", "host")
        results.append((got_from_debug(out) if preload else UNSET, status == 0 and sstatus == 0 and bool(final)))
        detail += out[-1500:]
    judge(t, "ucx_perftest tag_bw, Debian's UCX 1.13", machine, results[0], results[1], detail)


def open_mpi(t, machine):
    _, prog = mpi.program(t)
    results, detail = [], ""
    for preload in (False, True):
        args = ["-x", "UCXTLS_SYSROOT=" + harness.fixture(machine)]
        if preload:
            args += ["-x", "LD_PRELOAD=" + harness.LIB]
        p, out, ranks, _ = mpi.mpirun(args + ["-np", "2", prog], env_for(None, preload=False))
        got = sorted({r["tls"] for r in ranks.values()})
        worked = p.returncode == 0 and len(ranks) == 2 and all(r["token"] == 42 for r in ranks.values())
        results.append((",".join(got).replace("<unset>", UNSET) if got else "?", worked))
        detail += out[-1500:]
    judge(t, "Open MPI, 2 ranks over the UCX PML, Debian's UCX 1.13", machine, results[0], results[1], detail)


for _machine in MACHINES:
    add_case("UCXX on RAPIDS' UCX 1.21, %s" % _machine, ucxx, _machine)
    add_case("UCXX-style client/server on RAPIDS' UCX, %s" % _machine, client_server, "rapids", _machine)
    add_case("NIXL agents on NIXL's UCX, %s" % _machine, nixl_agents, _machine)
    add_case("ucp_client_server on Debian's UCX, %s" % _machine, client_server, "debian", _machine)
    add_case("ucx_perftest on Debian's UCX, %s" % _machine, perftest, _machine)
    add_case("Open MPI on Debian's UCX, %s" % _machine, open_mpi, _machine)


# --------------------------------------------------------------------------- the table
def table_lines():
    head = ["| program | node | without the library | with the library |", "|---|---|---|---|"]
    return head + ["| %s | %s | %s | %s |" % (program, machine, cell(*without), cell(*with_lib))
                   for program, machine, without, with_lib in ROWS]


@case("the table, as measured, is docs/usage.md's")
def table(t):
    if not ROWS:
        t.skip("the table", "no consumer ran")
        return
    lines = table_lines()
    print("\n".join(lines), flush=True)
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    m = re.search(r"<!-- no-harm table: tests/e2e/test_no_harm.py -->\n(.*?)\n\n", doc, re.S)
    if not t.check("docs/usage.md has the table's block", m is not None):
        return
    documented = m.group(1).split("\n")
    measured, rows = lines[2:], documented[2:]
    t.check("every row measured here is in docs/usage.md as measured (%d rows)" % len(measured),
            set(measured) <= set(rows), "\n".join(r for r in measured if r not in rows))
    if len(ROWS) == len(MACHINES) * 6:  # every consumer ran: the doc holds these rows and no other
        t.equal("docs/usage.md's rows are exactly those measured, in order", rows, measured)


if __name__ == "__main__":
    main("no harm: real UCX consumers with UCX_TLS unset, with and without the library")
