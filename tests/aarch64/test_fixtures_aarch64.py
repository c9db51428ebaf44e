#!/usr/bin/env python3
"""The fixture machines replayed through the aarch64 build under qemu-user: on every row of
tests/e2e/test_fixtures.py, the aarch64 `ucxtls explain --json` is the x86_64 one, object for
object, and names the row's UCX_TLS; the aarch64 library's debug line names the value the x86_64
library's names.

The aarch64 library's write itself cannot be seen here: qemu-user runs a thread of its own, so the
library's one-thread rule (shim/preload.cc why_environment_shared) refuses it, and its line says
"failed to set UCX_TLS=V (another thread runs ...)". That refusal is read as the x86_64 line's
"set UCX_TLS=V"; the write on an aarch64 kernel is test_kernel_aarch64.py's.
"""
import json
import re

from lane import CLI, HOST_CLI, HOST_LIB, LIB, emulated, missing_inputs
from harness import UNSET, add_case, env_for, main, run
from fixture_rows import ROWS, label_of

# The refusal under qemu-user, and what the same line says where the write is made.
REFUSED = re.compile(r"^ucxtls: failed to set (UCX_TLS=\S+?) \(another thread runs: it may be changing the "
                     r"environment\): UCX_TLS stays [^:]*: ")


def debug_line(stderr):
    lines = [l for l in stderr.decode().splitlines() if l.startswith("ucxtls: ")]
    return lines[-1] if lines else "(no ucxtls line: %r)" % stderr.decode()[:300]


def row(t, machine, extra, want):
    why = missing_inputs()
    if why:
        return t.skip("aarch64 replay", why)
    env = env_for(machine, preload=False, **extra)
    a = run(emulated([CLI, "explain", "--json"]), env)
    x = run([HOST_CLI, "explain", "--json"], env)
    try:
        aj, xj = json.loads(a.stdout), json.loads(x.stdout)
    except ValueError:
        return t.check("explain --json prints one JSON object", False, repr(a.stdout[:300]) + repr(a.stderr[:300]))
    diff = sorted(k for k in set(aj) | set(xj) if aj.get(k) != xj.get(k))
    t.check("aarch64 explain --json is the x86_64 one", not diff,
            "\n".join("%s: aarch64 %r, x86_64 %r" % (k, aj.get(k), xj.get(k)) for k in diff)[:3000])
    # The value a process runs with: the one written, kept or repaired; none where UCX_TLS stays unset.
    t.equal("aarch64 explain: UCX_TLS %s" % want, aj.get("value"), None if want == UNSET else want)
    dbg = dict(env, UCXTLS_DEBUG="1")
    a = run(emulated([CLI, "--version"], LD_PRELOAD=LIB), dbg)
    x = run(["/bin/true"], dict(dbg, LD_PRELOAD=HOST_LIB))
    got = REFUSED.sub(r"ucxtls: set \1: ", debug_line(a.stderr))
    t.equal("aarch64 debug line names what the x86_64 line names", got, debug_line(x.stderr))


for _machine, _extra, _want in ROWS:
    add_case(label_of(_machine, _extra), row, _machine, _extra, _want)


if __name__ == "__main__":
    main("fixture replays through the aarch64 build (qemu-user) against the x86_64 build")
