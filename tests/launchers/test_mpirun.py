#!/usr/bin/env python3
"""The mpirun recipes, for real. The blocks `mpirun` and `mpirun-tcp` are taken from README.md
and docs/recipes.md and run as printed (recipes.py: /opt/ucxtls installed in a private mount namespace, a
`hosts` file with 16 slots on this machine, `./app` the MPI program of mpi.py): on this machine
without RDMA the RDMA recipe fails as the recipe says (the UCX PML cannot be selected; forced past
that, {rdma} is empty and every rank gets sm,self,tcp, with no warning), and the TCP recipe runs 16
ranks over UCX.

The rest is the mechanism behind them: Open MPI over its UCX PML, two ranks on this machine,
each launched with the library (`mpirun -x LD_PRELOAD=... -x UCXTLS_...`), each rank's UCX context
created with the value the library derived in that rank.

A template (`tcp,self,{copy}`, `sm,self,tcp,{copy}`) and UCXTLS_SYSROOT fixtures make it run
without RDMA. Evidence per rank: the MPI program prints getenv("UCX_TLS") after MPI_Init (the PML
created its UCX context inside MPI_Init) and passes a token over the UCX PML; a rank whose value
names a copy transport Debian's UCX lacks gets UCX's own "not available" warning, tagged with
that rank by --tag-output, which shows that UCX read the value in that rank; and the hard-coded
trainer list makes the same launch fail, which shows the ranks' UCX honours UCX_TLS.

Open MPI 4.1's UCX PML only selects itself where UCX offers an RDMA transport on an mlx* device
(pml_ucx_tls, pml_ucx_devices); with no RDMA here, `--mca pml_ucx_tls any --mca pml_ucx_devices any`
lets it run over tcp/shared memory (without them: "PML ucx cannot be selected")."""
import os
import re

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
import harness  # noqa: E402
from harness import LIB, Checks, case, env_for, fixture, have, main, run  # noqa: E402
from mpi import PML, mpirun, program  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))

TITLE = "mpirun recipes: Open MPI over UCX, ranks with the library"


def start():
    # The README blocks need the namespace (root); the other cases need none: a run of those alone
    # does not enter one where it cannot (and so does not print the namespace's SKIP).
    if os.geteuid() == 0 or "as_root" in harness.SELECTED_TAGS:
        return R.start(TITLE, optional=True)
    t = Checks(TITLE)
    t.ns = False
    return t




@case("as root: the README's mpirun blocks, as printed", tags=("as_root",))
def readme_case(t):
    if not t.ns:  # before the program: its build check would pass
        t.skip("the README's recipes as printed", "no private mount/PID namespace (needs root)")
        return
    d, prog = program(t)
    if R.install_opt(t):
        readme_blocks(t, d, prog)


@case("MPMD: two ranks on two fixtures derive different values")
def mpmd(t):
    d, prog = program(t)
    lib = os.path.realpath(LIB)
    env = env_for(None, preload=False)  # mpirun itself runs without the library
    pre = ["-x", "LD_PRELOAD=" + lib, "-x", "UCXTLS_TEMPLATE=tcp,self,{copy}"]
    # 1. MPMD: two ranks given different machine fixtures, so different values. Open MPI 4.1
    # applies an -x to its own app context only (measured: given once, before the first
    # context, the second rank got nothing), so each context repeats them.
    p, out, ranks, warns = mpirun(["-np", "1"] + pre + ["-x", "UCXTLS_SYSROOT=" + fixture("no-gpu"), prog, ":",
                                   "-np", "1"] + pre + ["-x", "UCXTLS_SYSROOT=" + fixture("intel-xe"), prog], env)
    t.check("MPMD launch over the UCX PML succeeds, the token crosses", p.returncode == 0 and
            ranks.get(1, {}).get("token") == 42, out)
    t.equal("rank 0 (no-gpu fixture) derived UCX_TLS", ranks.get(0, {}).get("tls"), "tcp,self", out)
    t.equal("rank 1 (intel-xe fixture) derived UCX_TLS", ranks.get(1, {}).get("tls"), "tcp,self,ze_copy", out)
    t.check("each rank was launched with the library", all(r.get("preload") == lib for r in ranks.values())
            and len(ranks) == 2, out)
    t.equal("UCX read each rank's value: only rank 1 warns, about ze_copy alone", warns, {1: {"ze_copy"}}, out)



@case("-np 2 on one fixture, shared memory first: no UCX warning")
def shared_memory(t):
    d, prog = program(t)
    lib = os.path.realpath(LIB)
    env = env_for(None, preload=False)
    # 2. Both ranks on one fixture with shared memory first: a clean run, no UCX warning.
    p, out, ranks, warns = mpirun(["-x", "LD_PRELOAD=" + lib, "-x", "UCXTLS_TEMPLATE=sm,self,tcp,{copy}",
                                   "-x", "UCXTLS_SYSROOT=" + fixture("no-gpu"), "-np", "2", prog], env)
    t.check("-np 2 on the no-gpu fixture: both ranks UCX_TLS=sm,self,tcp, token crosses, no UCX warning",
            p.returncode == 0 and {r: v["tls"] for r, v in ranks.items()} == {0: "sm,self,tcp", 1: "sm,self,tcp"}
            and ranks[1]["token"] == 42 and not warns, out)



@case("ucxtls run mpirun: ranks derive again for their own fixture")
def ucxtls_run_mpirun(t):
    d, prog = program(t)
    # 3. `ucxtls run mpirun ...`: mpirun gets the value for its own machine (no-gpu); the
    # ranks inherit it marked as derived and derive again for theirs (-x UCXTLS_SYSROOT).
    if not os.access(CLI, os.X_OK):
        t.skip("ucxtls run mpirun", "the command is not built")
    else:
        env3 = env_for("no-gpu", preload=False, UCXTLS_TEMPLATE="tcp,self,{copy}")
        argv = [CLI, "run", "mpirun", "--oversubscribe", "--tag-output"] + PML + \
            ["-x", "UCXTLS_SYSROOT=" + fixture("mi300x"), "-np", "2", prog]
        if os.geteuid() == 0:
            argv.insert(3, "--allow-run-as-root")
        p = run(argv, env3, timeout=120)
        out = p.stdout.decode() + p.stderr.decode()
        got = dict(re.findall(r"rank=(\d+) token=\d+ UCX_TLS=(\S*)", out))
        t.equal("ucxtls run mpirun: ranks re-derive for their own fixture (mi300x)", got,
                {"0": "tcp,self,rocm_copy", "1": "tcp,self,rocm_copy"}, out)



@case("control: the hard-coded trainer list fails the UCX PML")
def control(t):
    d, prog = program(t)
    env = env_for(None, preload=False)
    # 4. Control: the hard-coded trainer list (no library) makes the UCX PML fail here.
    p, out, ranks, _ = mpirun(["-x", "UCX_TLS=rc_x,rc,dc_x,dc,cuda_copy", "-np", "2", prog], env)
    t.check("control: UCX_TLS=rc_x,rc,dc_x,dc,cuda_copy fails the UCX PML ('no usable transports')",
            p.returncode != 0 and "no usable transports" in out and not ranks, out)


def readme_blocks(t, d, prog):
    """The README's two mpirun blocks, as printed, in a directory with `hosts` and `./app`."""
    try:
        rdma, tcp = R.block("mpirun"), R.block("mpirun-tcp")
    except LookupError as e:
        t.check("README mpirun blocks present", False, str(e))
        return
    job = os.path.join(d, "job")
    os.makedirs(job)
    os.link(prog, os.path.join(job, "app"))
    with open(os.path.join(job, "hosts"), "w") as f:
        f.write("localhost slots=16\n")
    # As root, as printed: the blocks' own --allow-run-as-root lets mpirun start; nothing else of the
    # caller's reaches the ranks but -x.
    env = env_for(None, preload=False)

    def bash(script, **extra):
        p = run(["/bin/bash", "-c", script], dict(env, **extra), cwd=job, timeout=240)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    if have("setpriv"):  # the flag the blocks carry for root does nothing for another user
        p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mpirun", "--allow-run-as-root",
                 "-np", "1", "/bin/true"], dict(env, HOME="/tmp"), cwd="/tmp", timeout=120)
        t.check("as a user (uid 65534), mpirun --allow-run-as-root -np 1 /bin/true: exit 0", p.returncode == 0, repr(p))
    rc, out, err = bash(tcp)
    got = re.findall(r"^rank=(\d+) token=(\d+) UCX_TLS=(\S*) LD_PRELOAD=(\S*)$", out, re.M)
    t.check("mpirun-tcp as printed: 16 ranks over the UCX PML, each UCX_TLS=sm,self,tcp from the library, "
            "the token crosses, no UCX warning", rc == 0 and sorted(int(r[0]) for r in got) == list(range(16))
            and all(r[1] == "42" and r[2] == "sm,self,tcp" and r[3] == R.OPT_LIB for r in got)
            and not re.search(r"UCX +WARN", out + err), out + err)

    rc, out, err = bash(rdma)
    t.check("mpirun as printed, on this machine without RDMA: fails, 'PML ucx cannot be selected' (README)",
            rc != 0 and "PML ucx cannot be selected" in out + err and "rank=" not in out, out + err)
    # Forced past the PML's own RDMA test: the portable template's {rdma} is empty here, so each
    # rank gets sm,self,tcp (no UCX warning): tcp carries across nodes as well.
    forced = rdma.replace("--mca pml ucx", "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any", 1)
    forced = forced.replace("-np 16", "-np 2", 1)
    rc, out, err = bash(forced)
    got = re.findall(r"^rank=(\d+) token=(\d+) UCX_TLS=(\S*) ", out, re.M)
    t.check("mpirun block forced with pml_ucx_tls any, -np 2: {rdma} is empty here, each rank UCX_TLS=sm,self,tcp, no UCX warning",
            forced != rdma and rc == 0 and sorted(r[0] for r in got) == ["0", "1"]
            and all(r[2] == "sm,self,tcp" for r in got) and not re.search(r"UCX +WARN", out + err), out + err)

    # A site's own preload (XALT's, a user's libasan.so) already in LD_PRELOAD: both blocks append,
    # so every rank gets it first and the library after it.
    other = R.build_other_preload(d)
    if not other:
        t.skip("the mpirun blocks with an existing LD_PRELOAD", "no C compiler for the other preload library")
        return
    for name, script in (("mpirun-tcp", tcp), ("mpirun (forced as above)", forced)):
        two = script.replace("-np 16", "-np 2", 1)
        rc, out, err = bash(two, LD_PRELOAD=other)
        got = re.findall(r"^rank=(\d+) token=(\d+) UCX_TLS=(\S*) LD_PRELOAD=(\S*)$", out, re.M)
        t.check("%s as printed, -np 2, with LD_PRELOAD=<another library> already set: every rank's LD_PRELOAD is "
                "that entry first, then the library; the value sm,self,tcp from the library" % name,
                rc == 0 and sorted(r[0] for r in got) == ["0", "1"]
                and all(r[3] == other + ":" + R.OPT_LIB and r[2] == "sm,self,tcp" for r in got), out + err)


if __name__ == "__main__":
    main(TITLE, start)
