#!/usr/bin/env python3
"""Every host sees the decision (docs/design.md, "Editing the environment"): a matrix of real hosts started directly with the library.

bash, dash, zsh, mksh, ksh93, busybox sh, perl and python3 are each exec'd by this script with
LD_PRELOAD in their environment, nothing preloaded in front of them (a preloaded `env` or
`timeout` would derive the value first and hide a host that keeps its own environment: bash
exports its own setenv/unsetenv, and builds its variables from main's envp). For each case (set,
re-derive another node's pair, re-derive over a stale marker, clear, repair, keep) the host prints
its own view of UCX_TLS and UCXTLS_DERIVED, removes LD_PRELOAD and starts `/usr/bin/env`, a child
without the library: both views must show the decision. A library preloaded in front of ours
(`LD_PRELOAD=reader.so:libucxtls.so`: its constructor runs after ours) reads a variable of the
host's and UCX_TLS with getenv (bash's own, which bash exports): it must see both, as without the
library. A missing host is a SKIP with the reason (scripts/test.sh installs them all).

bash is exactly bash (the library calls no function of the host: docs/design.md, "Editing the environment"):
on every path, with POSIXLY_CORRECT set, bash run with the library prints what it prints without
it: a function with a non-identifier name (BASH_FUNC_foo-bar%%) is not imported, an interactive
shell's MAILCHECK is 600, a login shell with HOME unset does not take HOME from the password file.
Hosts nobody had tried: a C program that defines its own `environ` (old C) and one that exports a
setenv of its own (-rdynamic, which aborts when called) see the decision through getenv, exit 0.
"""
import os
import re
import shutil
import subprocess
import sys

from common import C, UNSET, Z, add_case, compile_c, env_for, have, main, run, scratch_dir  # Z: also another node's value, inherited


SH = 'printf "%s|%s\\n" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"; unset LD_PRELOAD; exec /usr/bin/env'
PERL = ('$| = 1; printf("%s|%s\\n", $ENV{UCX_TLS} // "<unset>", $ENV{UCXTLS_DERIVED} // "<unset>"); '
        'delete $ENV{LD_PRELOAD}; exec("/usr/bin/env") or die "exec: $!";')
PY = ('import os; print("%s|%s" % (os.environ.get("UCX_TLS", "<unset>"), os.environ.get("UCXTLS_DERIVED", "<unset>")), '
      'flush=True); env = dict(os.environ); env.pop("LD_PRELOAD", None); os.execve("/usr/bin/env", ["env"], env)')

# A library preloaded in front of ours: its constructor runs after ours (glibc runs the preloads'
# constructors last to first) and reads with getenv, which binds to the host's own where the host
# exports one (bash). It writes one stderr line.
READER_LIB = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void put(const char *s) { if (write(2, s, strlen(s)) < 0) return; }
__attribute__((constructor)) static void reader(void) {
  const char *seen = getenv("READER_SEEN"), *tls = getenv("UCX_TLS");
  put("reader: READER_SEEN="); put(seen ? seen : "<unset>");
  put(" UCX_TLS="); put(tls ? tls : "<unset>"); put("\n");
}
"""

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


_built = {}


def built(t, name, source, flags=()):
    """A test program or library compiled once per run; None (after a SKIP or FAIL) when not."""
    if not have("gcc"):
        t.skip("compile " + name, "gcc not installed")
        return None
    if "dir" not in _built:
        _built["dir"] = scratch_dir("ucxtls-hosts-")
    if name not in _built:
        path, err = compile_c(_built["dir"], name, source, flags=flags)
        t.check("compile %s" % name, path is not None, err or "")
        _built[name] = path
    return _built[name]


def host_case(t, label, index, case, machine, inherited, want):
    name, argv, why = hosts()[index]
    if name != label:
        raise AssertionError("hosts() and HOSTS differ at %d: %s, %s" % (index, name, label))
    if argv is None:
        t.skip(label, why)
        return
    reader = built(t, "libreader.so", READER_LIB, ["-shared", "-fPIC"])
    if reader is None:
        return
    env = env_for(machine, READER_SEEN="yes", **inherited)
    env["LD_PRELOAD"] = reader + ":" + env["LD_PRELOAD"]
    p = run(argv, env)
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
    # One line per process the reader is preloaded into (mksh runs printf as a program of its own).
    lines = err.splitlines()
    t.check("%s, %s: stderr: the co-preloaded constructor's line alone, seeing the host's variable and UCX_TLS"
            % (label, case), lines and set(lines) == {"reader: READER_SEEN=yes UCX_TLS=%s" % want[0]}, detail)


HOSTS = ["bash", "dash", "zsh", "mksh", "ksh93", "busybox sh", "perl", "python3"]  # the order of hosts()
for _index, _label in enumerate(HOSTS):
    for _case, _machine, _inherited, _want in CASES:
        add_case("%s: %s" % (_label, _case), host_case, _label, _index, _case, _machine, _inherited, _want,
                 tags=(_label.split()[0],))  # busybox sh: busybox


# --- bash is exactly bash: with POSIXLY_CORRECT, what bash prints with the library on each path
# equals what it prints without it (the reference, run here, not written down).
POSIX_PATHS = [  # path, machine, inherited variables (the decision is checked by the matrix above)
    ("add", "dgx", {}),
    ("re-derive", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
    ("clear", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z}),
    ("repair", "dgx", {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"}),
]
# what, argv (argv[0] as given: "-bash" is a login shell), variables added, variables removed
POSIX_RUNS = [
    ("posix mode from the start: BASH_FUNC_foo-bar%% is not imported", ["bash", "-c", "declare -F; echo end"],
     {"BASH_FUNC_foo-bar%%": "() { echo imported; }"}, ()),
    ("an interactive shell's MAILCHECK default (600 in posix mode)", ["bash", "--norc", "-i", "-c", "echo MAILCHECK=$MAILCHECK"],
     {}, ()),
    ("a login shell with HOME unset does not take HOME from the password file",
     ["-bash", "--noprofile", "-c", 'echo "HOME=${HOME-<unset>}"'], {}, ("HOME",)),
]


def bash_posix_case(t, path, machine, inherited):
    bash = "/bin/bash" if os.path.exists("/bin/bash") else shutil.which("bash")
    if not bash:
        t.skip("bash, %s" % path, "bash not installed")
        return
    for what, argv, extra, removed in POSIX_RUNS:
        views = []
        for preload in (True, False):
            env = env_for(machine, preload=preload, POSIXLY_CORRECT="1", **dict(inherited, **extra))
            for k in removed:
                env.pop(k, None)
            p = subprocess.run(argv, executable=bash, env=env, cwd=env.get("HOME", "/"), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            views.append((p.returncode, p.stdout.decode(errors="replace"),
                          re.sub(r"\(\d+\)", "(PID)", p.stderr.decode(errors="replace"))))
        t.equal("bash, %s: %s: as without the library (status, stdout, stderr)" % (path, what), views[0], views[1])


for _path, _machine, _inherited in POSIX_PATHS:
    add_case("bash is exactly bash (POSIXLY_CORRECT): %s" % _path, bash_posix_case, _path, _machine, _inherited,
             tags=("bash",))


# --- Hosts nobody had tried: each prints getenv's view; an old C program's own `environ` must
# stay as the program left it (NULL: glibc never writes it).
OWN_ENVIRON_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
char **environ;  /* old C: the program defines it; glibc's getenv reads __environ */
int main(void) {
  const char *t = getenv("UCX_TLS"), *d = getenv("UCXTLS_DERIVED"), *h = getenv("READER_SEEN");
  printf("%s|%s|%s|environ %s\n", t ? t : "<unset>", d ? d : "<unset>", h ? h : "<unset>", environ ? "written" : "NULL");
  return 0;
}
"""
OWN_SETENV_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* Exported (-rdynamic): a call from a library binds here. Nobody may call it before main. */
int setenv(const char *n, const char *v, int o) {
  (void)n; (void)v; (void)o;
  if (write(2, "host setenv called\n", 19) < 0) _exit(3);
  abort();
}
int main(void) {
  const char *t = getenv("UCX_TLS"), *d = getenv("UCXTLS_DERIVED"), *h = getenv("READER_SEEN");
  printf("%s|%s|%s\n", t ? t : "<unset>", d ? d : "<unset>", h ? h : "<unset>");
  return 0;
}
"""
ODD_HOSTS = [("a program that defines its own environ (old C)", "own_environ", OWN_ENVIRON_HOST, [], "|environ NULL"),
             ("a program that exports its own setenv (-rdynamic)", "own_setenv", OWN_SETENV_HOST, ["-rdynamic"], "")]


def odd_host_case(t, label, name, source, flags, tail, case, machine, inherited, want):
    exe = built(t, name, source, flags)
    if exe is None:
        return
    p = run([exe], env_for(machine, READER_SEEN="yes", **inherited))
    detail = "stdout: %r\nstderr: %r" % (p.stdout[:500], p.stderr[:500])
    t.equal("%s, %s: exit status" % (label, case), p.returncode, 0, detail)
    t.equal("%s, %s: getenv sees the decision and the host's variable" % (label, case),
            p.stdout.decode(errors="replace"), "%s|%s|yes%s\n" % (want[0], want[1], tail), detail)
    t.equal("%s, %s: stderr empty" % (label, case), p.stderr.decode(errors="replace"), "")


for _label, _name, _source, _flags, _tail in ODD_HOSTS:
    for _case, _machine, _inherited, _want in CASES:
        add_case("%s: %s" % (_label, _case), odd_host_case, _label, _name, _source, _flags, _tail, _case, _machine,
                 _inherited, _want)


if __name__ == "__main__":
    main("hosts started directly with the library: the host and a child without it see the decision")
