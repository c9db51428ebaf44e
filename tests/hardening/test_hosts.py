#!/usr/bin/env python3
"""Every host sees the decision (docs/design.md, "Editing the environment"): a matrix of real hosts started directly with the library.

bash, dash, zsh, mksh, ksh93, busybox sh, perl and python3 are each exec'd by this script with
LD_PRELOAD in their environment, nothing preloaded in front of them (a preloaded `env` or
`timeout` would derive the value first and hide a host that keeps its own environment: bash
exports its own setenv/unsetenv, and builds its variables from main's envp). For each case (set,
re-derive another node's pair, re-derive over a stale marker, clear, keep) the host prints its own
view of UCX_TLS and UCXTLS_DERIVED, removes LD_PRELOAD and starts `/usr/bin/env`, a child without
the library: both views must show the decision. A missing host is a SKIP with the reason
(scripts/test.sh installs them all).
"""
import os
import shutil
import sys

from common import C, UNSET, Z, add_case, env_for, main, run  # Z: also another node's value, inherited


SH = 'printf "%s|%s\\n" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"; unset LD_PRELOAD; exec /usr/bin/env'
PERL = ('$| = 1; printf("%s|%s\\n", $ENV{UCX_TLS} // "<unset>", $ENV{UCXTLS_DERIVED} // "<unset>"); '
        'delete $ENV{LD_PRELOAD}; exec("/usr/bin/env") or die "exec: $!";')
PY = ('import os; print("%s|%s" % (os.environ.get("UCX_TLS", "<unset>"), os.environ.get("UCXTLS_DERIVED", "<unset>")), '
      'flush=True); env = dict(os.environ); env.pop("LD_PRELOAD", None); os.execve("/usr/bin/env", ["env"], env)')

# case, machine, inherited variables, (UCX_TLS, UCXTLS_DERIVED) every view must show
CASES = [
    ("set", "dgx", {}, (C, C)),
    ("re-derive another node's pair", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, (C, C)),
    ("re-derive over a stale marker", "dgx", {"UCXTLS_DERIVED": Z}, (C, C)),
    ("clear another node's pair (no GPU here)", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, (UNSET, UNSET)),
    ("set all (a GPU node without RDMA: EFA)", "aws-p5", {}, ("all", "all")),
    ("all from another node's pair (no RDMA here)", "no-rdma", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}, ("all", "all")),
    ("repair a kept value of another family (UCXTLS_REPAIR=1)", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"}, (C, UNSET)),
    ("keep the user's value", "dgx", {"UCX_TLS": "tcp"}, ("tcp", UNSET)),
]


def elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def python_binary():
    """A real python3 executable (a pyenv shim is a script: bash would be the host)."""
    for p in ("/usr/bin/python3", os.path.realpath(sys.executable)):
        if elf(os.path.realpath(p)):
            return p
    return None


def hosts():
    """(label, argv or None, why missing), in the order of HOSTS."""
    out = []
    for label, name, extra in [("bash", "bash", []), ("dash", "dash", []), ("zsh", "zsh", []),
                               ("mksh", "mksh", []), ("ksh93", "ksh93", []), ("busybox sh", "busybox", ["sh"])]:
        path = shutil.which(name)
        out.append((label, [path] + extra + ["-c", SH] if path else None, "%s not installed" % name))
    perl = shutil.which("perl")
    out.append(("perl", [perl, "-e", PERL] if perl else None, "perl not installed"))
    py = python_binary()
    out.append(("python3", [py, "-c", PY] if py else None, "no python3 executable (ELF) found"))
    return out


def child_view(text):
    """(UCX_TLS, UCXTLS_DERIVED, how many UCX_TLS= lines, LD_PRELOAD present) in `env` output."""
    lines = text.splitlines()

    def value(name):
        found = [l[len(name) + 1:] for l in lines if l.startswith(name + "=")]
        return found[0] if found else UNSET, len(found)

    tls, n = value("UCX_TLS")
    derived, _ = value("UCXTLS_DERIVED")
    return tls, derived, n, any(l.startswith("LD_PRELOAD=") for l in lines)


def host_case(t, label, index, case, machine, inherited, want):
    name, argv, why = hosts()[index]
    if name != label:
        raise AssertionError("hosts() and HOSTS differ at %d: %s, %s" % (index, name, label))
    if argv is None:
        t.skip(label, why)
        return
    p = run(argv, env_for(machine, **inherited))
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    first, _, rest = out.partition("\n")
    detail = "stdout:\n%s\nstderr:\n%s" % (out[:2000], err[:1000])
    if not t.equal("%s, %s: exit status" % (label, case), p.returncode, 0, detail):
        return
    t.equal("%s, %s: the host's own view" % (label, case), tuple(first.split("|")), want, detail)
    tls, derived, n, preload = child_view(rest)
    t.equal("%s, %s: a child started without the library" % (label, case), (tls, derived), want, detail)
    t.check("%s, %s: the child has no LD_PRELOAD and UCX_TLS at most once" % (label, case),
            not preload and n <= 1, detail)
    t.equal("%s, %s: stderr empty" % (label, case), err, "")


HOSTS = ["bash", "dash", "zsh", "mksh", "ksh93", "busybox sh", "perl", "python3"]  # the order of hosts()
for _index, _label in enumerate(HOSTS):
    for _case, _machine, _inherited, _want in CASES:
        add_case("%s: %s" % (_label, _case), host_case, _label, _index, _case, _machine, _inherited, _want,
                 tags=(_label.split()[0],))  # busybox sh: busybox


if __name__ == "__main__":
    main("hosts started directly with the library: the host and a child without it see the decision")
