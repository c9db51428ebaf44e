"""The launcher recipes of README.md, docs/recipes.md and docs/containers.md, run as printed.

One source: a recipe is a fenced block preceded by `<!-- recipe: NAME -->`, in README.md (the short
forms) or docs/recipes.md (the rest); a test takes it from there with block(NAME) and runs it
unchanged, so an edit of either file changes what CI runs, and a block that disappears, appears
twice (in one file or across both) or changes shape fails the test.

The recipes name the install paths (/opt/ucxtls/bin/ucxtls, /opt/ucxtls/lib/libucxtls.so). So
that they run byte for byte, a test re-executes itself in private mount and PID namespaces
(enter_namespace): a tmpfs over /opt that only this test sees, the build installed there with the
README's install step, `cmake --install <the tests' build> --prefix /opt/ucxtls`. The machine's /opt and /etc are never
written. The PID namespace is the cleanup guarantee: when the test's process tree ends in any way
(an exception, CTest's timeout killing it), the kernel kills everything started inside it, Slurm
daemons and job steps included.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, SOURCE_DIR, Checks  # noqa: E402

README = os.path.join(SOURCE_DIR, "README.md")
# Where recipe blocks live: the README's short forms, then the full recipes.
RECIPE_FILES = [README, os.path.join(SOURCE_DIR, "docs", "recipes.md"), os.path.join(SOURCE_DIR, "docs", "containers.md")]
PREFIX = "/opt/ucxtls"
OPT_LIB = PREFIX + "/lib/libucxtls.so"
OPT_CLI = PREFIX + "/bin/ucxtls"
MARK = "UCXTLSTEST_LAUNCHERS_NS"

# The values (docs/design.md, "Values") for the fixture machines the launcher tests replay.


def block(name):
    """The text of block `name` (without its fences) from one of RECIPE_FILES; raises if it is
    absent, or marked more than once across them."""
    found, where = [], []
    pattern = r"^<!-- recipe: %s -->\n```[A-Za-z]*\n(.*?)^```$" % re.escape(name)
    for path in RECIPE_FILES:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            hits = re.findall(pattern, f.read(), re.M | re.S)
        found += hits
        where += [os.path.relpath(path, SOURCE_DIR)] * len(hits)
    if len(found) != 1:
        raise LookupError("%d blocks marked '<!-- recipe: %s -->' in %s%s" % (
            len(found), name, ", ".join(os.path.relpath(p, SOURCE_DIR) for p in RECIPE_FILES),
            " (%s)" % ", ".join(where) if where else ""))
    return found[0]


def commands(name):
    """The command lines of block `name`: every line but blank ones and whole-line comments."""
    return [l for l in block(name).splitlines() if l.strip() and not l.lstrip().startswith("#")]


def _mnt_ns():
    return os.readlink("/proc/self/ns/mnt")


def start(title, optional=False):
    """Called first by each launcher test. Outside: re-runs this script as PID 1's child in new
    mount and PID namespaces and exits with its status. Inside: returns the test's Checks, with
    /opt private to the namespace (t.ns is True). Where no namespace can be had (not root, no
    unshare, a container that forbids it) it SKIPs and exits, or with optional=True returns
    Checks with t.ns False, for a test whose other parts need no namespace."""
    if os.environ.get(MARK):
        if os.environ[MARK] == _mnt_ns():
            raise SystemExit("launchers: refusing to run: the mount namespace is the machine's own")
        t = Checks(title)
        t.ns = True
        return t
    ns = ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child", "--propagation", "private"]
    why = None
    if os.geteuid() != 0:
        why = "needs root (private mount and PID namespaces, /opt/ucxtls, daemons)"
    elif not shutil.which("unshare"):
        why = "unshare (util-linux) is not installed"
    else:
        probe = subprocess.run(ns + ["true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if probe.returncode != 0:
            why = "no private mount/PID namespace here: " + probe.stdout.decode().strip()
    if why:
        t = Checks(title)
        t.ns = False
        t.skip("the README's recipes as printed", why)
        if optional:
            return t
        t.exit()
    env = dict(os.environ)
    env[MARK] = _mnt_ns()
    sys.stdout.flush()
    # exec, so that whoever stops this process (CTest's timeout) stops unshare itself, and
    # --kill-child then takes the namespace's PID 1, and with it every process inside. PID 1 is a
    # shell that waits for the test: it reaps the orphans (job steps) while it waits.
    os.execvpe(ns[0], ns + ["/bin/sh", "-c", '"$0" "$@"; exit $?', sys.executable] + sys.argv, env)


def mounted(point, fstype):
    """True when this namespace has a mount of `fstype` exactly at `point`."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[4] == point and fields[sep + 1] == fstype:
                return True
    return False


def install_opt(t):
    """The README's install step into the namespace's private /opt. Returns True when installed."""
    if not os.path.isdir("/opt"):
        t.skip("install to /opt/ucxtls", "this machine has no /opt to mount over")
        return False
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "ucxtls-launchers", "/opt"], check=True)
    if not mounted("/opt", "tmpfs"):
        raise SystemExit("launchers: /opt is not this namespace's tmpfs; not installing")
    cmake = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
    p = subprocess.run([cmake, "--install", BUILD_DIR, "--prefix", PREFIX], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    return t.check("cmake --install %s --prefix %s (the README's step) gives %s and %s" % (BUILD_DIR, PREFIX, OPT_LIB, OPT_CLI),
                   p.returncode == 0 and os.path.isfile(OPT_LIB) and os.access(OPT_CLI, os.X_OK), p.stdout.decode())


def overlay_etc(scratch):
    """/etc of this namespace becomes an overlay whose writes land in scratch; returns when it is."""
    upper, work = os.path.join(scratch, "etc-upper"), os.path.join(scratch, "etc-work")
    os.makedirs(upper)
    os.makedirs(work)
    subprocess.run(["mount", "-t", "overlay", "ucxtls-launchers-etc", "-o",
                    "lowerdir=/etc,upperdir=%s,workdir=%s" % (upper, work), "/etc"], check=True)
    if not mounted("/etc", "overlay"):
        raise SystemExit("launchers: /etc is not this namespace's overlay; not writing to it")
    return upper


# A task's report, printed by the test's stand-in for the user's program (`./train.sh`, ...): what
# its own shell sees, what a child started without the library sees (LD_PRELOAD emptied for that
# one command: its environment is exactly what the shell exports), and whether the library (and
# the test's other preload library) is mapped into the shell itself.
REPORT_SH = r"""loaded=no; /bin/grep -q /libucxtls.so /proc/$$/maps && loaded=yes
other=no; /bin/grep -q /libother-preload.so /proc/$$/maps && other=yes
child=$(LD_PRELOAD= /bin/sh -c 'printf %s "${UCX_TLS-<unset>}|${UCXTLS_DERIVED-<unset>}"')
echo "REPORT node=${SLURMD_NODENAME-${OMPI_COMM_WORLD_RANK-local}} shell=${UCX_TLS-<unset>}|${UCXTLS_DERIVED-<unset>} child=$child loaded=$loaded other=$other"
"""

# The same report from a Python program (`train.py`); node is torchrun's LOCAL_RANK where set.
REPORT_PY = r'''import os, re, subprocess
maps = open("/proc/self/maps").read()
child = subprocess.run(["/bin/sh", "-c", 'printf %s "${UCX_TLS-<unset>}|${UCXTLS_DERIVED-<unset>}"'],
                       env=dict(os.environ, LD_PRELOAD=""), stdout=subprocess.PIPE).stdout.decode()
print("REPORT node=%s shell=%s|%s child=%s loaded=%s other=%s" % (
    os.environ.get("LOCAL_RANK", "local"), os.environ.get("UCX_TLS", "<unset>"),
    os.environ.get("UCXTLS_DERIVED", "<unset>"), child,
    "yes" if "/libucxtls.so" in maps else "no", "yes" if "/libother-preload.so" in maps else "no"), flush=True)
'''

REPORT_RE = re.compile(r"REPORT node=(\S+) shell=(\S+) child=(\S+) loaded=(\S+) other=(\S+)")


def reports(text):
    """{node: {"shell": "V|D", "child": "V|D", "loaded": bool, "other": bool}} from REPORT lines."""
    out = {}
    for node, shell, child, loaded, other in REPORT_RE.findall(text):
        out[node] = {"shell": shell, "child": child, "loaded": loaded == "yes", "other": other == "yes"}
    return out


def write_script(path, body, shebang="#!/bin/bash"):
    with open(path, "w") as f:
        f.write(shebang + "\n" + body)
    os.chmod(path, 0o755)


def build_other_preload(scratch):
    """A second, harmless preload library (a user's own LD_PRELOAD entry); None without cc."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(scratch, "other.c")
    so = os.path.join(scratch, "libother-preload.so")
    with open(src, "w") as f:
        f.write("int ucxtls_test_other_preload;\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", so, src], check=True)
    return so


__all__ = ["block", "commands", "start", "install_opt", "overlay_etc", "reports", "write_script",
           "build_other_preload", "REPORT_SH", "REPORT_PY", "OPT_LIB", "OPT_CLI", "PREFIX", "LIB"]
