#!/usr/bin/env python3
"""Differential test: `ucxtls doctor` against the real glibc loader and a fake UCX that follows
UCX's own module and configuration rules (fake_libucs.c), on seeded random layouts.

Each layout (generators.py) is laid out in a private root with its own /etc and ld.so.cache
(layout.py); the program (ucx_info, needing libucp) starts in it under bubblewrap, where the real
ld.so loads the build and the fake libucs loads its modules with dlopen and reports what loaded,
the dlerror of each module file that did not, and the transports registered. Then doctor judges
the same build in its three modes: --pid of the waiting process (from outside the root),
--ucx DIR and plain (its ucx_info on PATH), both inside the root with the program's environment.
--pid and plain are compared with the program's loading; --ucx, which names a build and no
program, with that libucp opened by its path from a program without RPATH (fake_parts.c's
opener). Compared: libucp (its file), version, transports, the modules that load, and each
failing module's missing library. Nothing under this machine's /etc is touched.

Environment (docs/testing.md):
  UCXTLSTEST_DIFF_SEED       seed (default 48)
  UCXTLSTEST_DIFF_COUNT      layouts (default 200)
  UCXTLSTEST_DIFF_GENERATOR  grid (default) or heldout
  UCXTLSTEST_DIFF_FEATURE    grid only: layouts with this one feature (generators.FEATURES), or
                             none: with none of them
  UCXTLSTEST_DIFF_ONLY       comma-separated indices to run alone (reproduce a disagreement)
  UCXTLSTEST_DIFF_KEEP       1: keep each layout's root and print where
  UCXTLSTEST_CLI             the ucxtls to judge
Exit: 0 every layout agrees, 1 not, 77 SKIP (not root, no bwrap, patchelf, ldconfig or cc)."""
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generators  # noqa: E402
import generators_heldout  # noqa: E402
from layout import build_parts, materialize  # noqa: E402

BUILD_DIR = os.environ.get("UCXTLSTEST_BUILD_DIR", os.path.join(os.path.dirname(os.path.dirname(HERE)), "build"))
CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(BUILD_DIR, "ucxtls"))
FIELDS = ("libucp", "version", "transports", "loads", "fails")
MODES = ("pid", "ucx", "plain")
# doctor --json has no module state: a module that does not load for an error names it in ld.so's
# or the file's words (or says doctor could not tell); one that UCX does not try says why not.
LOAD_ERROR = re.compile(r"cannot open shared object|ELF|not a regular file|could not tell|no such file|permission denied|"
                        r"invalid|too short|error", re.I)
IN_ROOT_CLI = "/.ucxtls/ucxtls"
IN_ROOT_OPENER = "/.ucxtls/opener"


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


def system_files():
    """The files the program and doctor need from this machine (glibc, the C++ runtime), bound
    read-only into each root at their paths: nothing else of the machine, no UCX of its own."""
    out = subprocess.run(["ldd", CLI], stdout=subprocess.PIPE, check=True).stdout.decode()
    files = set(re.findall(r"=> (/\S+)", out)) | {os.path.realpath("/lib64/ld-linux-x86-64.so.2")}
    binds = []
    for f in sorted(files):
        real = os.path.realpath(f)
        binds += ["--ro-bind", real, "/usr/lib/x86_64-linux-gnu/" + os.path.basename(f)]
    return binds + ["--ro-bind", os.path.realpath("/lib64/ld-linux-x86-64.so.2"), "/lib64/ld-linux-x86-64.so.2"]


def bwrap(root, layout, argv, binds):
    env = dict(layout.env)
    env["PATH"] = os.path.dirname(app_path(layout))
    cmd = ["bwrap", "--bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys",
           "--ro-bind", CLI, IN_ROOT_CLI, "--chdir", layout.cwd, "--die-with-parent", "--clearenv"] + binds
    for k, v in sorted(env.items()):
        cmd += ["--setenv", k, v]
    return cmd + ["--"] + argv


def app_path(layout):
    return next(o.path for o in layout.objs if o.src == "app")


def missing_lib(why):
    """The library a load error names ("libdepa.so.1: cannot open ..." -> libdepa.so.1); "other" else."""
    m = re.search(r"([^ :/]+): cannot open shared object file", why or "")
    return m.group(1) if m else "other"


class Rooted:
    """Paths inside a root, resolved as the root sees them (its links relative), for comparison."""

    def __init__(self, root):
        self.root = root

    def real(self, p):
        if not p:
            return p
        p = re.sub(r"^/proc/\d+/root(?=/)", "", p)
        r = os.path.realpath(os.path.join(self.root, p.lstrip("/")))
        return r[len(self.root):] if r.startswith(self.root) else p


def oracle(lines, rooted):
    """What loading found, from the program's report."""
    o = {"name": "", "libucp": None, "version": None, "transports": set(), "loads": set(), "fails": {}}
    for line in lines:
        w = line.split("\t")
        if w[0] == "libucp":
            o["libucp"], o["name"] = rooted.real(w[1]), w[1]
        elif w[0] == "version":
            o["version"] = w[1]
        elif w[0] == "tl":
            o["transports"].add(w[1])
        elif w[0] == "load":
            o["loads"].add(rooted.real(w[1]))
        elif w[0] == "fail":
            o["fails"][rooted.real(w[1])] = missing_lib(w[2] if len(w) > 2 else "")
    return o


def doctor_reading(stdout, rooted):
    """What doctor --json read of the build; None and why when it read none."""
    try:
        j = json.loads(stdout)
    except ValueError:
        return None, "no JSON: %r" % stdout[-200:]
    if not j.get("ucx"):
        return None, "no build read: %s" % "; ".join(j.get("messages", []))[:300]
    u = j["ucx"][0]
    d = {"said": stdout, "libucp": rooted.real(u["libucp"]), "version": u["version"], "transports": set(u["transports"]), "loads": set(), "fails": {}}
    for m in u["modules"]:
        if m["loads"]:
            d["loads"].add(rooted.real(m["path"]))
        elif LOAD_ERROR.search(m["why"] or ""):  # else a module UCX does not try (UCX_MODULES, its list)
            d["fails"][rooted.real(m["path"])] = missing_lib(m["why"])
    return d, None


def read_report(fd, deadline):
    """The program's report lines up to its "ready" line, read from fd until the deadline (a program
    that hangs is not waited for)."""
    data = b""
    while not re.search(rb"(^|\n)ready\t[^\n]*\n", data) and select.select([fd], [], [], max(0, deadline - time.time()))[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").splitlines()


def run_layout(layout, parts, binds, keep):
    """({mode: what loading found}, {mode: (reading or None, why)}); (None, why) where the program
    did not start. --pid and plain stand for the program; --ucx for the build opened by its path."""
    opener_bind = ["--ro-bind", parts["opener"], IN_ROOT_OPENER]
    root = tempfile.mkdtemp(prefix="ucxtls-diff-")
    os.chmod(root, 0o755)
    try:
        materialize(layout, parts, root)
        rooted = Rooted(root)
        p = subprocess.Popen(bwrap(root, layout, [app_path(layout)], binds), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        lines = read_report(p.stdout.fileno(), time.time() + 20)
        if not lines or not lines[-1].startswith("ready\t"):
            p.kill()
            err = p.communicate(timeout=10)[1].decode(errors="replace").strip()
            return None, "the program did not start: %s" % err[-300:], root
        pid = lines[-1].split("\t")[1]
        truth = oracle(lines, rooted)
        opener = subprocess.run(bwrap(root, layout, [IN_ROOT_OPENER, truth["name"]], binds + opener_bind), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=60).stdout.decode(errors="replace")
        errors = [line.split("\t", 1)[1] for line in opener.splitlines() if line.startswith("error\t")]
        # The library dlopen names first: the one it could not find, or the file it could not take.
        failed = {"error": os.path.basename(errors[0].split(":")[0])} if errors else None
        truths = {"pid": truth, "plain": truth, "ucx": failed or oracle(opener.splitlines(), rooted)}
        dir_of_libucp = os.path.dirname(truth["libucp"] or "/")
        argvs = {"pid": [CLI, "doctor", "--json", "--value", "tcp", "--pid", pid],
                 "ucx": bwrap(root, layout, [IN_ROOT_CLI, "doctor", "--json", "--value", "tcp", "--ucx", dir_of_libucp], binds),
                 "plain": bwrap(root, layout, [IN_ROOT_CLI, "doctor", "--json", "--value", "tcp"], binds)}
        readings = {}
        for mode, argv in argvs.items():
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60)
            readings[mode] = doctor_reading(r.stdout.decode(errors="replace"), rooted)
        p.stdin.close()
        p.wait(timeout=10)
        return truths, readings, root
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def differ(truth, reading):
    """What differs between doctor's reading and loading; [] where they agree. Where loading failed
    (truth "error": the library it could not find), doctor must name that library."""
    d, why = reading
    if "error" in truth:
        said = why if d is None else d["said"]
        return [] if truth["error"] in said else ["loading fails for want of %s; doctor never names it" % truth["error"]]
    if d is None:
        return ["read nothing (%s)" % why]
    out = []
    for f in FIELDS:
        if d[f] != truth[f]:
            show = (lambda v: sorted(v.items()) if isinstance(v, dict) else sorted(v) if isinstance(v, set) else v)
            out.append("%s: doctor %r, loading %r" % (f, show(d[f]), show(truth[f])))
    return out


def main():
    if os.geteuid() != 0:
        skip("not root (bubblewrap binds a private root; doctor --pid reads another root)")
    for tool in ("bwrap", "patchelf", "ldconfig", "cc", "ldd"):
        if not shutil.which(tool):
            skip("no %s (Debian: bubblewrap, patchelf, libc-bin, gcc)" % tool)
    probe = subprocess.run(["bwrap", "--bind", "/", "/", "--", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if probe.returncode:  # a sandbox that allows no mount namespace
        skip("bubblewrap cannot make a root here: %s" % probe.stderr.decode(errors="replace").strip()[:200])
    if not os.access(CLI, os.X_OK):
        print("FAIL: no ucxtls at %s (UCXTLSTEST_CLI)" % CLI)
        return 1
    seed = os.environ.get("UCXTLSTEST_DIFF_SEED", "48")
    count = int(os.environ.get("UCXTLSTEST_DIFF_COUNT", "200"))
    gen_name = os.environ.get("UCXTLSTEST_DIFF_GENERATOR", "grid")
    gen = {"grid": generators.grid, "heldout": generators_heldout.heldout}[gen_name]
    only = [int(i) for i in os.environ.get("UCXTLSTEST_DIFF_ONLY", "").split(",") if i.strip()]
    keep = os.environ.get("UCXTLSTEST_DIFF_KEEP") == "1"
    work = tempfile.mkdtemp(prefix="ucxtls-diff-parts-")
    try:
        parts = build_parts(work)
        binds = system_files()
        return compare_all(gen, gen_name, seed, only or range(count), parts, binds, keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compare_all(gen, gen_name, seed, indices, parts, binds, keep):
    start = time.time()
    agree, total, no_start, not_opened = 0, 0, 0, 0
    per_mode = {m: 0 for m in MODES}
    by_tag, by_field = {}, {}
    for i in indices:
        layout = gen(random.Random("%s:%s:%d" % (gen_name, seed, i)))
        truth, readings, root = run_layout(layout, parts, binds, keep)
        name = "layout %s seed %s index %d" % (gen_name, seed, i)
        if truth is None:  # the program itself could not start: nothing to compare
            no_start += 1
            print("%s: not compared: %s\n%s" % (name, readings, layout.describe()))
            continue
        total += 1
        diffs = {m: differ(truth[m], readings[m]) for m in MODES}
        for m in MODES:
            per_mode[m] += not diffs[m]
            not_opened += m == "ucx" and "error" in truth[m]
        bad = any(diffs.values())
        agree += not bad
        for t in layout.tags:
            n = by_tag.setdefault(t, [0, 0])
            n[0] += 1
            n[1] += bad
        if bad:
            print("DISAGREE %s%s\n%s" % (name, " (root kept: %s)" % root if keep else "", layout.describe()))
            for m in MODES:
                for d in diffs[m]:
                    print("  --%s %s" % (m, d))
                    key = "%s %s" % (m, d.split(":")[0])
                    by_field[key] = by_field.get(key, 0) + 1
    print("\nby mode: " + ", ".join("--%s agrees on %d of %d" % (m, per_mode[m], total) for m in MODES))
    print("by field (mode field: layouts differing): " + ", ".join("%s: %d" % kv for kv in sorted(by_field.items())))
    print("by tag (tag: disagreeing of layouts): " + ", ".join("%s: %d of %d" % (t, n[1], n[0]) for t, n in sorted(by_tag.items())))
    print("--ucx: the build opened by its path failed to load in %d layouts (doctor must name the library)" % not_opened)
    if no_start:
        print("%d layouts not compared: their program did not start" % no_start)
    print("agree %d of %d (generator %s, seed %s, %.0f s)" % (agree, total, gen_name, seed, time.time() - start))
    return 0 if agree == total and total else 1


if __name__ == "__main__":
    sys.exit(main())
