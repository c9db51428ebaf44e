#!/usr/bin/env python3
"""valgrind memcheck runs the library's constructor on the fixture machines with no error.

`valgrind --error-exitcode=99 /bin/sh -c 'printf ... "$UCX_TLS"'` with LD_PRELOAD set and
UCXTLS_SYSROOT on a fixture machine: the constructor runs inside the guest (the launcher stages get
LD_PRELOAD too). Each run must report "ERROR SUMMARY: 0 errors", exit 0, and print the same
UCX_TLS as the same run without valgrind (so the constructor did run in the guest); rows cover
setting a value, keeping, clearing an inherited value, the debug line, an invalid setting, the
broken/empty machines and the driver tier (the library's side; the helper is not traced).
"""
import re

from common import Checks, Timer, env_for, have, run

C = "rc_x,rc,dc_x,dc,cuda_copy"
ROWS = [
    ("dgx", {}),
    ("dgx", {"UCXTLS_DEBUG": "1", "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c05,3"}),
    ("mi300x", {"UCXTLS_DEBUG": "1", "ROCR_VISIBLE_DEVICES": "7"}),
    ("intel-max-i915", {"UCXTLS_DEBUG": "1"}),
    ("masked-proc", {}),
    ("broken", {"UCXTLS_DEBUG": "1"}),
    ("no-rdma", {"UCX_TLS": C, "UCXTLS_DERIVED": C}),  # inherited value removed (unsetenv)
    ("dgx", {"UCX_TLS": C, "UCXTLS_DERIVED": C}),        # re-derived to the same value
    ("dgx", {"UCXTLS_ACCEL": "bogus"}),                  # the error line
    ("empty", {"UCXTLS_TEMPLATE": "tcp,{copy}"}),
    ("dgx", {"UCXTLS_PROBE": "driver", "UCXTLS_DEBUG": "1"}),  # the driver tier's client side
]


def main():
    t = Checks("valgrind memcheck of the constructor")
    if not have("valgrind"):
        t.skip("valgrind", "valgrind not installed (Debian: valgrind; scripts/test.sh installs it)")
        t.exit()
    timer = Timer()
    for machine, extra in ROWS:
        label = "%s %s" % (machine, " ".join("%s=%s" % kv for kv in extra.items()) or "(defaults)")
        env = env_for(machine, **extra)
        show = ["/bin/sh", "-c", 'printf "%s" "${UCX_TLS-<unset>}"']
        plain = run(show, env)
        p = timer.run(label, ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=no",
                              "--trace-children=no"] + show, env, timeout=120)
        err = p.stderr.decode(errors="replace")
        summary = re.findall(r"ERROR SUMMARY: (\d+) errors", err)
        t.check(label + ": memcheck reports 0 errors", p.returncode == 0 and summary and
                all(s == "0" for s in summary), "rc %d\n%s" % (p.returncode, err[-3000:]))
        t.equal(label + ": the guest saw UCX_TLS=%s" % plain.stdout.decode(), p.stdout, plain.stdout)
    timer.report()
    t.exit()


if __name__ == "__main__":
    main()
