#!/usr/bin/env python3
"""valgrind memcheck runs the library's constructor on the fixture machines with no error.

`valgrind --error-exitcode=99 /bin/sh -c 'printf ... "$UCX_TLS"'` with LD_PRELOAD set and
UCXTLS_SYSROOT on a fixture machine: the constructor runs inside the guest (the launcher stages get
LD_PRELOAD too). Each run must report "ERROR SUMMARY: 0 errors", exit 0, and print the same
UCX_TLS as the same run without valgrind (so the constructor did run in the guest); rows cover
setting a value, keeping, clearing an inherited value, the debug line, an invalid setting, the
broken/empty machines and the driver tier: no saved answer, and the answer `ucxtls probe --save`
saved (with the fake drivers of tests/driver) read, parsed in place and narrowed by the visibility
variables.
"""
import atexit
import os
import re
import tempfile

from common import BUILD_DIR, C, LIB, Timer, add_case, env_for, have, main, run

ROWS = [
    ("dgx", {}),
    ("dgx", {"UCXTLS_DEBUG": "1", "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c05,3"}),
    ("mi300x", {"UCXTLS_DEBUG": "1", "ROCR_VISIBLE_DEVICES": "7"}),
    ("intel-max-i915", {"UCXTLS_DEBUG": "1"}),
    ("masked-proc", {}),
    ("broken", {"UCXTLS_DEBUG": "1"}),
    ("no-gpu", {"UCX_TLS": C, "UCXTLS_DERIVED": C}),  # inherited value removed (unsetenv)
    ("no-rdma", {}),  # all written
    ("intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "1"}),  # a kept value repaired
    ("dgx", {"UCX_TLS": C, "UCXTLS_DERIVED": C}),        # re-derived to the same value
    ("dgx", {"UCXTLS_ACCEL": "bogus"}),                  # the error line
    ("empty", {"UCXTLS_TEMPLATE": "tcp,{copy}"}),
    ("dgx", {"UCXTLS_PROBE": "driver", "UCXTLS_DEBUG": "1", "UCXTLS_CACHE_DIR": "/nonexistent"}),  # none saved
]


def saved_driver_answer():
    """A cache directory with what `ucxtls probe --save` stored on fixture dgx (fake drivers: 2 CUDA
    GPUs with UUIDs, 1 Level Zero GPU), or None when the command or the fakes are not built."""
    fakes = os.path.join(BUILD_DIR, "tests", "driver", "fakes")
    ucxtls = os.path.join(os.path.dirname(LIB), "ucxtls")
    if not os.path.exists(ucxtls) or not os.path.isdir(fakes):
        return None
    cache = tempfile.mkdtemp(prefix="ucxtls-valgrind-cache-")
    env = env_for("dgx", preload=False, UCXTLS_CACHE_DIR=cache, FAKE_CUDA_COUNT="2", FAKE_ZE_DEVICES="gpu",
                  LD_LIBRARY_PATH=os.path.join(fakes, "cuda") + ":" + os.path.join(fakes, "ze-new"))
    return cache if run([ucxtls, "probe", "--save"], env).returncode == 0 else None


_saved = []


def saved_once():
    if not _saved:
        _saved.append(saved_driver_answer())
    return _saved[0]


def memcheck(t, machine, extra):
    if not have("valgrind"):
        t.skip("valgrind", "valgrind not installed (Debian: valgrind; scripts/test.sh installs it)")
        return
    if extra.get("UCXTLS_CACHE_DIR") == "saved":
        cache = saved_once()
        if not cache:
            t.check("ucxtls probe --save (fake drivers) saved an answer for the driver tier's rows", False,
                    "build the ucxtls command and tests/driver's fakes")
            return
        extra = dict(extra, UCXTLS_CACHE_DIR=cache)
    label = "%s %s" % (machine, " ".join("%s=%s" % kv for kv in extra.items() if kv[1] is not None) or "(defaults)")
    env = env_for(machine, **extra)
    show = ["/bin/sh", "-c", 'printf "%s" "${UCX_TLS-<unset>}"']
    plain = run(show, env)
    p = TIMER.run(label, ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=no",
                          "--trace-children=no"] + show, env, timeout=120)
    err = p.stderr.decode(errors="replace")
    summary = re.findall(r"ERROR SUMMARY: (\d+) errors", err)
    t.check(label + ": memcheck reports 0 errors", p.returncode == 0 and summary and
            all(s == "0" for s in summary), "rc %d\n%s" % (p.returncode, err[-3000:]))
    t.equal(label + ": the guest saw UCX_TLS=%s" % plain.stdout.decode(), p.stdout, plain.stdout)


TIMER = Timer()
atexit.register(TIMER.report)
# The driver tier: the answer `ucxtls probe --save` saved (made once, when a case needs it).
for _cvd in (None, "GPU-10111213,0", "1,7"):
    ROWS.append(("dgx", {"UCXTLS_PROBE": "driver", "UCXTLS_DEBUG": "1", "UCXTLS_CACHE_DIR": "saved",
                         "CUDA_VISIBLE_DEVICES": _cvd}))
for _machine, _extra in ROWS:
    add_case("memcheck %s %s" % (_machine, " ".join("%s=%s" % kv for kv in _extra.items() if kv[1] is not None)
                                 or "(defaults)"), memcheck, _machine, _extra)


if __name__ == "__main__":
    main("valgrind memcheck of the constructor")
