#!/usr/bin/env python3
"""Fixture machines replayed through the real libucxtls.so in a real /bin/sh process: the rows of
fixture_rows.py, invalid settings, the debug line's words (here); ucx.conf and node shapes
(fixtures_conf.py); values kept, repaired and derived again (fixtures_repair.py).
"""
from harness import ALL, ALWAYS, C, UNSET, Z, add_case, case, env_for, include, main, sh_value
from fixture_rows import ROWS, label_of


def row(t, machine, extra, want):
    tls, derived, err = sh_value(env_for(machine, **extra))
    label = label_of(machine, extra)
    t.equal(label, tls, want, "stderr: " + err)
    if want not in (UNSET,) and "UCX_TLS" not in extra:
        t.equal(label + ": UCXTLS_DERIVED marks the value", derived, want)
    t.equal(label + ": stderr silent without UCXTLS_DEBUG", err, "")


for _machine, _extra, _want in ROWS:
    add_case(label_of(_machine, _extra), row, _machine, _extra, _want)


# Invalid settings: one line on stderr naming the variable; nothing written.
def invalid(t, var, value):
    tls, derived, err = sh_value(env_for("intel-xe", **{var: value}))  # valid, it would write all
    t.equal("invalid %s=%r leaves UCX_TLS unset" % (var, value), tls, UNSET)
    lines = err.splitlines()
    t.check("invalid %s=%r: one stderr line naming it" % (var, value),
            len(lines) == 1 and lines[0].startswith("ucxtls: " + var + "="), repr(err))


for _var, _value in [("UCXTLS_ACCEL", "foo"), ("UCXTLS_TEMPLATE", "rc, {copy}"), ("UCXTLS_TEMPLATE", "all,{copy}"),
                     ("UCXTLS_PROBE", "nvml"), ("UCXTLS_TEMPLATE", "rc,,tcp"), ("UCXTLS_DISABLE", "maybe"),
                     ("UCXTLS_DISABLE", "00"), ("UCXTLS_REPAIR", "always"), ("UCXTLS_DEBUG", "2"),
                     ("UCXTLS_WRITE", "bogus"), ("UCXTLS_WRITE", "Always")]:
    add_case("invalid %s=%r" % (_var, _value), invalid, _var, _value)


@case("UCXTLS_ACCEL=none removes an inherited value of ours: UCX_TLS and UCXTLS_DERIVED unset")
def accel_none_inherited(t):
    for machine in ("dgx", "intel-xe"):
        tls, derived, err = sh_value(env_for(machine, UCX_TLS=C, UCXTLS_DERIVED=C, UCXTLS_ACCEL="none"))
        t.equal("%s: an inherited %s with UCXTLS_ACCEL=none" % (machine, C), (tls, derived, err), (UNSET, UNSET, ""))


@case("UCXTLS_REPAIR takes boolean words in any case: Yes, TRUE, on repair")
def repair_words(t):
    for word in ("Yes", "TRUE", "on"):
        tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_REPAIR=word))
        t.equal("intel-xe UCX_TLS=%s UCXTLS_REPAIR=%s: repaired, no marker" % (C, word), (tls, derived, err), (Z, UNSET, ""))


@case("UCXTLS_DEBUG takes boolean words: off and No print nothing, ON prints the line")
def debug_words(t):
    for word, lines in (("off", 0), ("No", 0), ("ON", 1)):
        tls, _, err = sh_value(env_for("intel-xe", UCXTLS_DEBUG=word))
        t.equal("intel-xe UCXTLS_DEBUG=%s: set, %d stderr line(s)" % (word, lines), (tls, err.count("\n")), (ALL, lines), err)


@case("an invalid toggle's line names the boolean words it takes")
def invalid_toggle_words(t):
    for var in ("UCXTLS_DISABLE", "UCXTLS_REPAIR", "UCXTLS_DEBUG"):
        _, _, err = sh_value(env_for("dgx", **{var: "maybe"}))
        t.check("%s=maybe: the line names y, yes, on, 1, true and n, no, off, 0, false" % var,
                err.count("\n") == 1 and var in err and
                "y, yes, on, 1, true; n, no, off, 0, false; any case" in err, repr(err))


@case("an invalid setting beside a kept UCX_TLS: the value stands, unrepaired, and one line names the variable")
def invalid_beside_kept(t):
    # UCXTLS_REPAIR=enable matters only where UCX_TLS is kept: silence would leave the user's CUDA
    # list on an Intel node without a word (bad input: one line naming the variable).
    for machine, extra in [("dgx", {"UCX_TLS": "tcp", "UCXTLS_ACCEL": "bogus"}),
                           ("intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "enable"}),
                           ("intel-xe", {"UCX_TLS": C, "UCXTLS_DISABLE": "maybe"})]:
        tls, derived, err = sh_value(env_for(machine, **extra))
        var = [k for k in extra if k != "UCX_TLS"][0]
        t.equal(label_of(machine, extra) + ": the value stands as written", (tls, derived), (extra["UCX_TLS"], UNSET), err)
        t.check(label_of(machine, extra) + ": one stderr line naming %s" % var,
                err.count("\n") == 1 and err.startswith("ucxtls: %s=" % var) and "UCX_TLS left unchanged" in err, repr(err))


@case("a bad UCXTLS_PROBE_TIMEOUT_MS is the command's business, not the library's")
def timeout_is_the_commands(t):
    # It bounds `ucxtls probe` alone (the library never runs the helper): the library carries on,
    # naming it in one line as any invalid setting, and `ucxtls probe` refuses it (tests/driver).
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_PROBE_TIMEOUT_MS="5s"))
    t.equal("UCXTLS_PROBE_TIMEOUT_MS=5s: the library still sets UCX_TLS, and names it in one line", (tls, err),
            (ALL, 'ucxtls: UCXTLS_PROBE_TIMEOUT_MS="5s" is not a whole number of milliseconds from 1 to 600000; '
                  "ignored here (only `ucxtls probe` reads it)\n"))


@case("a relative UCXTLS_CACHE_DIR is the driver tier's business, not the kernel tier's")
def cache_dir_is_the_driver_tiers(t):
    # Only the driver tier (and `ucxtls probe --save`, tests/driver) reads it: the library names it
    # in one line and carries on; with the driver tier no saved answer is read, so the kernel probe
    # answers, as for every other driver-tier failure.
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_CACHE_DIR="relative/dir"))
    t.equal("UCXTLS_CACHE_DIR=relative/dir, kernel tier: the library still sets UCX_TLS, and names it in one line",
            (tls, err), (ALL, 'ucxtls: UCXTLS_CACHE_DIR="relative/dir" is not an absolute path; ignored\n'))
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_CACHE_DIR="relative/dir", UCXTLS_PROBE="driver"))
    t.equal("UCXTLS_CACHE_DIR=relative/dir, driver tier: the kernel probe's value and one line naming it",
            (tls, err), (ALL, 'ucxtls: UCXTLS_CACHE_DIR="relative/dir" is not an absolute path; no saved driver answer '
                            "is read: the kernel probe answers\n"))


@case("invalid setting with a value inherited from another node")
def invalid_inherited(t):
    # An invalid setting where the value was inherited from another node: the stale value goes.
    tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_DERIVED=C, UCXTLS_ACCEL="bad"))
    t.equal("invalid setting with a value inherited from a CUDA node: both variables removed", (tls, derived), (UNSET, UNSET), err)
    t.check("... and one stderr line naming UCXTLS_ACCEL", err.count("\n") == 1 and err.startswith("ucxtls: UCXTLS_ACCEL="), repr(err))


# A sysroot that does not exist (or is relative) is an error, not an empty machine.
def bad_sysroot(t, root):
    tls, _, err = sh_value(env_for(None, UCXTLS_SYSROOT=root))
    t.check("UCXTLS_SYSROOT=%s: UCX_TLS unset and one line naming UCXTLS_SYSROOT" % root,
            tls == UNSET and err.count("\n") == 1 and err.startswith("ucxtls: UCXTLS_SYSROOT="), repr(err))


for _root in ("/nonexistent/ucxtls-machine", "relative/dir", "/etc/hostname"):
    add_case("invalid UCXTLS_SYSROOT=%s" % _root, bad_sysroot, _root)


@case("debug line names the replayed sysroot")
def debug_sysroot(t):
    _, _, err = sh_value(env_for("dgx", UCXTLS_DEBUG="1"))
    t.check("the debug line names the replayed sysroot", "UCXTLS_SYSROOT=" in err and "a replayed machine" in err, err)


# Why the value is all, or why UCX_TLS stays unset, in a user's words.
def says_why(t, machine, action, words):
    # On AMD and Intel nodes the default writes all without reading the network: UCXTLS_WRITE=always
    # reads it, for the RDMA rows.
    rdma_words = action == "set UCX_TLS=all" and "FAMILY" not in words
    extra = ALWAYS if rdma_words and machine in ("connectx-init", "iwarp") else {}
    _, _, err = sh_value(env_for(machine, UCXTLS_DEBUG="1", **extra))
    words = words.replace("FAMILY", machine == "mi300x" and "rocm" or "ze")
    t.check("UCXTLS_DEBUG=1 on %s says why: %r" % (machine, words),
            err.count("\n") == 1 and err.startswith("ucxtls: " + action) and words in err, err)


for _machine, _action, _words in [
        ("aws-p5", "set UCX_TLS=all", "EFA has no RC transport"),
        ("connectx-down", "set UCX_TLS=all", "every port is DOWN"),
        ("connectx-init", "set UCX_TLS=all", "INIT"),
        ("iwarp", "set UCX_TLS=all", "iWARP"),
        ("no-rdma", "set UCX_TLS=all", "no /dev/infiniband/uverbs* node"),
        ("no-rdma", "set UCX_TLS=all", "a hard-coded rc list cannot break this node"),
        ("no-gpu", "skip (UCX_TLS stays unset)", "no GPU family found"),
        ("dgx", "skip (UCX_TLS stays unset)", "NVIDIA GPUs and an rc device: UCX's own default stands (all), and a "
         "hard-coded rc_x,rc,dc_x,dc,cuda_copy fits this node"),
        ("broadcom-roce", "skip (UCX_TLS stays unset)", "UCX's own default stands"),
        ("intel-xe", "set UCX_TLS=all", "all (UCX's own default, with FAMILY's copy transport), so a hard-coded "
         "rc_x,rc,dc_x,dc,cuda_copy cannot displace it"),
        ("mi300x", "set UCX_TLS=all", "all (UCX's own default, with FAMILY's copy transport)")]:
    add_case("debug line on %s says why: %s" % (_machine, _words), says_why, _machine, _action, _words)


# UCXTLS_DEBUG: exactly one line with the action and the reasons.
def debug_line(t, machine, extra, action):
    _, _, err = sh_value(env_for(machine, UCXTLS_DEBUG="1", **extra))
    lines = err.splitlines()
    t.check("UCXTLS_DEBUG=1 on %s %s: one line, '%s'" % (machine, extra, action),
            len(lines) == 1 and lines[0].startswith("ucxtls: " + action), repr(err))


for _machine, _extra, _action in [("dgx", ALWAYS, "set UCX_TLS=" + C), ("dgx", {}, "skip"),
                                  ("intel-xe", {}, "set UCX_TLS=all"), ("no-rdma", {}, "set UCX_TLS=all"), ("no-gpu", {}, "skip"),
                                  ("dgx", {"UCX_TLS": "tcp"}, "keep"), ("dgx", {"UCXTLS_DISABLE": "1"}, "skip")]:
    add_case("debug line: %s: one line, '%s'" % (label_of(_machine, _extra), _action.split("=")[0]), debug_line,
             _machine, _extra, _action)


if __name__ == "__main__":
    include("fixtures_conf", "fixtures_repair")
    main("fixture machines through the real library in /bin/sh")
