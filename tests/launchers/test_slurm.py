#!/usr/bin/env python3
"""The README's Slurm recipes, run as printed on a real Slurm cluster started by this test: munged,
slurmctld and two slurmd on this machine (slurm_cluster.py), node n1 replaying a DGX (CUDA) and n2
an Intel xe node, both with ConnectX HCAs, through a TaskProlog that exports UCXTLS_SYSROOT and
UCXTLS_WRITE=always (the template written on every GPU node, so that each node's value names its
family; the default leaves UCX_TLS unset on n1 and writes all on n2: tests/e2e/test_fixtures.py). The
submit host is this machine (no RDMA: the library leaves UCX_TLS unset here).

Every task runs the test's `./train.sh`, a bash script that reports what its own shell sees, what
a child started without the library sees, and whether the library is mapped into the shell: a
value forwarded from the submit host cannot pass for one derived on the node.

Blocks (recipes.block): slurm-srun (each line), slurm-sbatch (with and without --export=NONE),
slurm-env, slurm-check, slurm-taskprolog, and slurm-doctor (every node's `ucxtls doctor --json`,
grouped: two groups on the mixed cluster, one when both nodes replay a DGX). Each is run in four caller environments: plain, an
existing LD_PRELOAD, an empty LD_PRELOAD, and a forwarded pair (UCX_TLS = UCXTLS_DERIVED = the
CUDA list, as a CUDA submit host running the library would send). The pitfalls the README states
are asserted too.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
import slurm_cluster  # noqa: E402
from harness import ALL, ALWAYS, C, Z, case, env_for, fixture, main  # noqa: E402

NODE_MACHINE = {"n1": "dgx", "n2": "intel-xe"}
WANT = {"n1": C, "n2": Z}
PAIR_FROM_CUDA_HOST = {"UCX_TLS": C, "UCXTLS_DERIVED": C}


def pair(v):
    return "%s|%s" % (v, v) if v else "<unset>|<unset>"


class Slurm:
    def __init__(self, t, cluster, job_dir, other):
        self.t, self.c, self.job, self.other = t, cluster, job_dir, other

    def caller(self, extra):
        return self.c.env(env_for(None, preload=False, **extra))

    def run(self, argv, extra, timeout=120):
        p = subprocess.run(argv, env=self.caller(extra), cwd=self.job, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        return p.returncode, out, err

    def alloc(self, script, extra):
        """script (bash text) run on the submit host in a two-node allocation, one task per node,
        as a user's `salloc` session or batch script would run it."""
        return self.run(["salloc", "-N2", "--ntasks-per-node=1", "/bin/bash", "-c", script], extra)

    def tasks(self, label, rc, out, err, want=None, loaded=True, other=False):
        """One check per node: the task's shell and a child without the library see `want`, and
        the library (and the other preload library) is mapped as expected."""
        want = WANT if want is None else want
        got = R.reports(out)
        detail = "exit %d\n%s%s" % (rc, out, err)
        for node, r in got.items():
            if r["loaded"] and node in want and want[node] and r["shell"] != pair(want[node]) and \
                    r["shell"] == pair(PAIR_FROM_CUDA_HOST["UCX_TLS"]):
                detail += ("\n(the task's bash, the first process with the library, kept the inherited pair the "
                           "library re-derived: see docs/design.md, 'Editing the environment')")
                break
        for node in sorted(want):
            r = got.get(node)
            what = "%s: task on %s (%s): shell and child see %s, library %s%s" % (
                label, node, NODE_MACHINE[node], pair(want[node]), "mapped" if loaded else "not mapped",
                ", other preload kept" if other else "")
            self.t.check(what, rc == 0 and r is not None and r["shell"] == pair(want[node]) and
                         r["child"] == pair(want[node]) and r["loaded"] == loaded and (r["other"] or not other),
                         detail)
        return got


def sbatch(s, script_text, options, extra, name):
    """Submits script_text with `sbatch --wait options`, returns (rc, job output, sbatch stderr)."""
    path = os.path.join(s.job, name + ".sh")
    with open(path, "w") as f:
        f.write(script_text)
    out = os.path.join(s.job, name + ".out")
    return ("sbatch --wait %s-o %s %s" % (options + " " if options else "", out, path),
            subprocess.Popen(["sbatch", "--wait"] + options.split() + ["-o", out, path], env=s.caller(extra),
                             cwd=s.job, stdout=subprocess.PIPE, stderr=subprocess.PIPE), out)


def finish(proc_tuple, timeout=120):
    cmd, p, out = proc_tuple
    _, err = p.communicate(timeout=timeout)
    text = open(out).read() if os.path.exists(out) else ""
    return p.returncode, text, "$ %s\n%s" % (cmd, err.decode(errors="replace"))


def leftover_processes():
    """Processes left in this PID namespace besides PID 1, this test and its own children now."""
    me = os.getpid()
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[1].split()[0]
        if state != "Z":
            left.append("%s %s" % (pid, cmd))
    return left


def format_checks(t):
    """`ucxtls env --format=slurm` itself, on fixture machines (no cluster needed)."""
    def env_out(machine, **extra):
        env = env_for(machine, preload=False, **dict(ALWAYS, **extra))
        p = subprocess.run([R.OPT_CLI, "env", "--format=slurm"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        return p.returncode, p.stdout.decode(), p.stderr.decode()
    t.equal("env --format=slurm on intel-xe: unquoted export lines", env_out("intel-xe"),
            (0, "export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n" % (Z, Z), ""))
    t.equal("env --format=slurm, an inherited pair on a node without a GPU: one unset per line",
            env_out("no-gpu", **PAIR_FROM_CUDA_HOST), (0, "unset UCX_TLS\nunset UCXTLS_DERIVED\n", ""))
    t.equal("env --format=slurm, an inherited pair on a GPU node without RDMA: all",
            env_out("no-rdma", **PAIR_FROM_CUDA_HOST), (0, "export UCX_TLS=all\nexport UCXTLS_DERIVED=all\n", ""))
    t.equal("env --format=slurm, the pair already right for this node: nothing", env_out("dgx", **PAIR_FROM_CUDA_HOST),
            (0, "", ""))
    t.equal("env --format=slurm on intel-xe, the default: all", env_out("intel-xe", UCXTLS_WRITE=None),
            (0, "export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n" % (ALL, ALL), ""))
    t.equal("env --format=slurm, the default: the CUDA pair forwarded to a DGX goes (UCX's default stands)",
            env_out("dgx", UCXTLS_WRITE=None, **PAIR_FROM_CUDA_HOST), (0, "unset UCX_TLS\nunset UCXTLS_DERIVED\n", ""))
    rc, out, err = env_out("dgx", UCXTLS_ACCEL="foo", **PAIR_FROM_CUDA_HOST)
    t.check("env --format=slurm, invalid setting: unset lines, one stderr line, exit 1",
            rc == 1 and out == "unset UCX_TLS\nunset UCXTLS_DERIVED\n" and err.count("\n") == 1
            and "UCXTLS_ACCEL" in err, repr((rc, out, err)))


TITLE = "Slurm recipes, as printed in README.md and docs/recipes.md, on a two-node Slurm cluster"
_installed = []


def installed(t):
    """The README's install into the namespace's /opt, once per process (or the case ends)."""
    if not _installed:
        _installed.append(R.install_opt(t))
    if not _installed[0]:
        t.exit()


@case("ucxtls env --format=slurm", tags=("slurm_format",))
def format_case(t):
    installed(t)
    format_checks(t)


@case("Slurm cluster: the README's recipes on two nodes", tags=("slurm_cluster",))
def cluster_case(t):
    installed(t)
    missing = slurm_cluster.missing_tools()
    if missing:
        t.skip("Slurm cluster", "not installed: %s (Debian slurm-wlm munge; scripts/test.sh installs them)"
               % " ".join(missing))
        t.exit()
    try:
        srun_lines = R.commands("slurm-srun")
        blocks = {n: R.block(n) for n in ("slurm-sbatch", "slurm-env", "slurm-check", "slurm-taskprolog", "slurm-doctor")}
    except LookupError as e:
        t.check("README recipe blocks present", False, str(e))
        t.exit()
    t.equal("slurm-srun has the two lines the tests expect (with and without --export=NONE)",
            [("--export=NONE" in l) for l in srun_lines], [False, True], "\n".join(srun_lines))

    scratch = tempfile.mkdtemp(prefix="ucxtls-slurm-")
    os.chmod(scratch, 0o755)  # munged: its socket's directories must be searchable by all
    try:
        job = os.path.join(scratch, "job")
        os.makedirs(job)
        R.write_script(os.path.join(job, "train.sh"), R.REPORT_SH)
        other = R.build_other_preload(scratch)
        machines = {n: fixture(m) for n, m in NODE_MACHINE.items()}
        t0 = time.monotonic()
        cluster = slurm_cluster.Cluster(scratch, machines)
        try:
            with cluster:
                print("     cluster up in %.2f s (munged, slurmctld, slurmd n1 and n2)" % cluster.timings["start_s"],
                      flush=True)
                run_all(t, Slurm(t, cluster, job, other), blocks, srun_lines)
        except RuntimeError as e:
            t.check("the Slurm cluster runs", False, str(e))
        left = leftover_processes()
        t.check("nothing is left running after the cluster stops (munged, slurmctld, slurmd, steps)", not left,
                "\n".join(left))
        print("     Slurm part took %.1f s" % (time.monotonic() - t0), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_all(t, s, blocks, srun_lines):
    variants = [("plain caller", {}, False),
                ("caller with LD_PRELOAD=<other lib>", {"LD_PRELOAD": s.other}, True),
                ("caller with LD_PRELOAD empty", {"LD_PRELOAD": ""}, False),
                ("caller with a pair forwarded from a CUDA host", PAIR_FROM_CUDA_HOST, False)]
    if s.other is None:
        t.skip("an existing LD_PRELOAD", "no C compiler to build the other preload library")
        variants.pop(1)

    # 1. The users' recipes, each in each caller environment.
    for vname, extra, has_other in variants:
        for line in srun_lines:
            keeps_env = "--export=NONE" not in line
            s.tasks("`%s`, %s" % (line.split("  #")[0].rstrip(), vname), *s.alloc(line, extra),
                    other=has_other and keeps_env)
        s.tasks("slurm-env block, %s" % vname, *s.alloc(blocks["slurm-env"], extra), other=has_other)

    # 2. The batch script, with and without --export=NONE (the srun inside inherits NONE).
    extra = {"LD_PRELOAD": s.other} if s.other else {}
    jobs = [("sbatch", sbatch(s, blocks["slurm-sbatch"], "", extra, "recipe-all"), bool(s.other)),
            ("sbatch --export=NONE", sbatch(s, blocks["slurm-sbatch"], "--export=NONE", extra, "recipe-none"), False)]
    # Pitfall: a script that exports LD_PRELOAD and runs a plain srun, under --export=NONE; and
    # the slurm-env block (srun --export=ALL) as the fix in the same job shape.
    lines = blocks["slurm-env"].splitlines()
    plain = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n%s\nsrun ./train.sh\n" % lines[0]
    fixed = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" + blocks["slurm-env"]
    pit = sbatch(s, plain, "--export=NONE", {}, "pitfall-none")
    fix = sbatch(s, fixed, "--export=NONE", {}, "env-none")
    for label, j, other in jobs:
        rc, out, err = finish(j)
        s.tasks("slurm-sbatch block, `%s job.sh`" % label, rc, out, err, other=other)
    rc, out, err = finish(pit)
    s.tasks("pitfall: under sbatch --export=NONE, a plain srun after `export LD_PRELOAD` (README)", rc, out, err,
            want={"n1": None, "n2": None}, loaded=False)
    rc, out, err = finish(fix)
    s.tasks("slurm-env block as a batch script under sbatch --export=NONE (srun --export=ALL)", rc, out, err)

    # 3. Pitfalls of --export, as the README states them.
    lib = R.OPT_LIB
    s.tasks("pitfall: `srun --export=ALL,LD_PRELOAD=...` with the caller's LD_PRELOAD empty: not loaded",
            *s.alloc("srun --export=ALL,LD_PRELOAD=%s ./train.sh" % lib, {"LD_PRELOAD": ""}),
            want={"n1": None, "n2": None}, loaded=False)
    if s.other:
        s.tasks("pitfall: `srun --export=ALL,LD_PRELOAD=...` with another LD_PRELOAD: the caller's wins",
                *s.alloc("srun --export=ALL,LD_PRELOAD=%s ./train.sh" % lib, {"LD_PRELOAD": s.other}),
                want={"n1": None, "n2": None}, loaded=False, other=True)
    s.tasks("pitfall: `srun --export=NONE,LD_PRELOAD=...` drops the named variable: not loaded",
            *s.alloc("srun --export=NONE,LD_PRELOAD=%s ./train.sh" % lib, {}),
            want={"n1": None, "n2": None}, loaded=False)
    rc, out, err = s.alloc("srun --export=UCX_TLS %s run ./train.sh" % R.OPT_CLI, PAIR_FROM_CUDA_HOST)
    got = R.reports(out)
    t.check("pitfall: an --export list naming UCX_TLS alone: every task keeps the submit host's list as a user's",
            rc == 0 and {n: (r["shell"], r["loaded"]) for n, r in got.items()} ==
            {"n1": (C + "|<unset>", True), "n2": (C + "|<unset>", True)}, out + err)
    env_line = blocks["slurm-env"].splitlines()[0]
    rc, out, err = s.alloc("%s\nUCXTLS_DEBUG=1 srun --export=ALL /usr/bin/true" % env_line, {})
    lines = [l for l in err.splitlines() if l.startswith("ucxtls:")]
    t.check("UCXTLS_DEBUG=1 srun: srun's own line (the submit host: no sysroot) plus one per task",
            rc == 0 and len(lines) == 3 and sum("UCXTLS_SYSROOT" not in l for l in lines) == 1
            and sum(Z in l for l in lines) == 1 and sum(C in l for l in lines) == 1, err)

    # 4. "Is it working in my job?": the check as printed, and in a task with no library.
    check = blocks["slurm-check"].strip()
    rc, out, err = s.alloc(check, {})
    t.equal("slurm-check as printed: each task says loaded, with its node's value",
            sorted(l for l in out.splitlines() if "ucxtls" in l),
            ["0: ucxtls loaded, UCX_TLS=" + C, "1: ucxtls loaded, UCX_TLS=" + Z], out + err)
    rc, out, err = s.alloc(check, {"UCXTLSTEST_MACHINE_n2": fixture("no-gpu")})
    t.equal("slurm-check as printed, n2 replaying a CPU node: its task says UCX_TLS is unset, not empty",
            sorted(l for l in out.splitlines() if "ucxtls" in l),
            ["0: ucxtls loaded, UCX_TLS=" + C, "1: ucxtls loaded, UCX_TLS=(unset)"], out + err)
    prefix = R.OPT_CLI + " run "
    bare = check.replace(prefix, "", 1)
    rc, out, err = s.alloc("srun -l printenv UCX_TLS UCXTLS_DERIVED", PAIR_FROM_CUDA_HOST)
    t.equal("the old check is fooled: with no library, the n2 task prints the forwarded CUDA pair",
            sorted(l for l in out.splitlines() if l.startswith("1: ")), ["1: " + C, "1: " + C], out + err)
    rc, out, err = s.alloc(bare, PAIR_FROM_CUDA_HOST)
    t.check("slurm-check without `ucxtls run`, the same forwarded pair: every task says NOT loaded",
            prefix in check and sorted(l for l in out.splitlines() if "ucxtls" in l) ==
            ["0: ucxtls NOT loaded", "1: ucxtls NOT loaded"], out + err)

    # 5. The site TaskProlog, as printed, run by the test's TaskProlog after UCXTLS_SYSROOT.
    site = os.path.join(s.c.dir, "site-prolog.sh")
    flag = os.path.join(s.c.dir, "site-prolog-on")

    def prolog(text):
        with open(site, "w") as f:
            f.write(text)
        open(flag, "w").close()
    prolog(blocks["slurm-taskprolog"])
    try:
        s.tasks("slurm-taskprolog, `srun --export=NONE ./train.sh`: the prolog's value, no library",
                *s.alloc("srun --export=NONE ./train.sh", {}), loaded=False)
        s.tasks("slurm-taskprolog, forwarded CUDA pair: n2 re-derived, n1 already right",
                *s.alloc("srun ./train.sh", PAIR_FROM_CUDA_HOST), loaded=False)
        s.tasks("slurm-taskprolog, forwarded pair, n2 replaying a CPU node (no GPU): unset there",
                *s.alloc("srun ./train.sh", dict(PAIR_FROM_CUDA_HOST, UCXTLSTEST_MACHINE_n2=fixture("no-gpu"))),
                want={"n1": C, "n2": None}, loaded=False)
        s.tasks("slurm-taskprolog, forwarded pair, n2 replaying a GPU node without RDMA (EFA): all there",
                *s.alloc("srun ./train.sh", dict(PAIR_FROM_CUDA_HOST, UCXTLSTEST_MACHINE_n2=fixture("aws-p5"))),
                want={"n1": C, "n2": "all"}, loaded=False)
        s.tasks("slurm-taskprolog, an invalid UCXTLS_ACCEL: the task still runs, the inherited pair is removed",
                *s.alloc("srun ./train.sh", dict(PAIR_FROM_CUDA_HOST, UCXTLS_ACCEL="foo")),
                want={"n1": None, "n2": None}, loaded=False)
        s.tasks("slurm-taskprolog with `%s` as well: both agree" % srun_lines[0],
                *s.alloc(srun_lines[0], {}), loaded=True)
        # Controls that show why the recipe reads as it does.
        prolog("#!/bin/sh\nexec %s env\n" % R.OPT_CLI)
        rc, out, err = s.alloc("srun ./train.sh", {})
        got = R.reports(out)
        t.equal("control: `ucxtls env` (shell quoting) in a TaskProlog: Slurm does not unquote",
                got.get("n2", {}).get("shell"), "'%s'|'%s'" % (Z, Z), out + err)
        prolog(blocks["slurm-taskprolog"].replace("exit 0\n", ""))
        rc, out, err = s.alloc("srun ./train.sh", {"UCXTLS_ACCEL": "foo"})
        t.check("control: without `exit 0`, an invalid setting fails every task (TaskProlog failed)",
                rc != 0 and "TaskProlog failed" in err and not R.reports(out), out + err)
    finally:
        os.unlink(flag)

    # 6. Every node's doctor in one view (docs/recipes.md), as printed, in the allocation.
    doctor_view(t, s, blocks["slurm-doctor"])


def groups(out):
    """{nodes: answer} of the slurm-doctor recipe's output: a `---- n1,n2 (2 nodes)` line, then the
    answer (one line of JSON)."""
    lines, found = out.splitlines(), {}
    for i, line in enumerate(lines):
        m = re.match(r"^---- (\S+) \((\d+) nodes?\)$", line)
        if m and i + 1 < len(lines):
            try:
                found[m.group(1)] = json.loads(lines[i + 1])
            except ValueError:
                found[m.group(1)] = lines[i + 1]
    return found


def doctor_view(t, s, recipe):
    # n1 replays a DGX, n2 an Intel xe node; this machine's UCX is Debian's: no CUDA, no Level Zero.
    rc, out, err = s.alloc(recipe, {})
    got = groups(out)
    t.check("slurm-doctor, a DGX and an Intel node: two groups, n1 and n2", rc == 0 and sorted(got) == ["n1", "n2"],
            out + err)
    n1, n2 = got.get("n1"), got.get("n2")
    t.check("... n2 (Intel): family ze, this UCX named as built without Level Zero, status 1",
            isinstance(n2, dict) and n2["family"] == "ze" and n2["status"] == 1
            and any("built without Level Zero (ze) support" in p for p in n2["problems"]), out)
    t.check("... n1 (DGX): family cuda, this UCX named as built without CUDA, status 1",
            isinstance(n1, dict) and n1["family"] == "cuda" and n1["status"] == 1
            and any("built without CUDA support" in p for p in n1["problems"]), out)
    t.check("... each node's own value (the TaskProlog's UCXTLS_WRITE=always: its template)",
            isinstance(n1, dict) and isinstance(n2, dict) and n1["value"] == C and n2["value"] == Z, out)
    rc, out, err = s.alloc(recipe, {"UCXTLSTEST_MACHINE_n2": fixture("dgx")})
    got = groups(out)
    t.check("slurm-doctor, both nodes DGX: one group of the two nodes", rc == 0 and list(got) == ["n1,n2"]
            and "(2 nodes)" in out, out + err)
    rc, out, err = s.alloc(recipe, {"UCXTLSTEST_MACHINE_n2": fixture("no-gpu")})
    got = groups(out)
    t.check("slurm-doctor, n2 without GPUs: its group says nothing to check, status 0",
            rc == 0 and isinstance(got.get("n2"), dict) and got["n2"]["status"] == 0 and got["n2"]["value"] is None
            and "nothing to check" in got["n2"]["source"], out + err)


if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
