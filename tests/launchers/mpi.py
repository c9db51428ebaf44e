"""Open MPI over UCX on one machine, as the mpirun recipe test and the no-harm table run it: a small
MPI program whose ranks report their UCX_TLS after MPI_Init and pass a token over the UCX PML."""
import atexit
import os
import re
import shutil
import subprocess
import tempfile

from harness import have, run

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* After MPI_Init (where the UCX PML created its UCX context): this rank's UCX_TLS, and a token
   passed from rank 0 to every other rank over the PML. */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, token = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    token = 42;
    for (int r = 1; r < size; r++) MPI_Send(&token, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  const char *tls = getenv("UCX_TLS"), *pre = getenv("LD_PRELOAD");
  printf("rank=%d token=%d UCX_TLS=%s LD_PRELOAD=%s\n", rank, token, tls ? tls : "<unset>", pre ? pre : "<unset>");
  MPI_Finalize();
  return 0;
}
"""

PML = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"]


def mpirun(args, env):
    argv = ["mpirun", "--oversubscribe", "--tag-output"] + PML
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    p = run(argv + args, env, timeout=120)
    out = p.stdout.decode() + p.stderr.decode()
    ranks = {}
    warns = {}
    for m in re.finditer(r"^\[\d+,(\d+)\]<std(?:out|err)>:(.*)$", out, re.M):
        rank, line = int(m.group(1)), m.group(2)
        r = re.match(r"rank=(\d+) token=(\d+) UCX_TLS=(\S*) LD_PRELOAD=(\S*)$", line)
        if r:
            ranks[rank] = {"token": int(r.group(2)), "tls": r.group(3), "preload": r.group(4)}
        w = re.search(r"UCX +WARN +transports? ((?:'[^']*',?)+) (?:is|are) not available", line)
        if w:
            warns.setdefault(rank, set()).update(re.findall(r"'([^']*)'", w.group(1)))
    return p, out, ranks, warns



_prog = []


def program(t):
    """The MPI program, built once per process; SKIP (and the case ends) without Open MPI's UCX PML."""
    if not have("mpirun") or not have("mpicc"):
        t.skip("mpirun", "Open MPI not installed (Debian openmpi-bin libopenmpi-dev); scripts/test.sh installs it")
        t.exit()
    if not _prog:
        info = subprocess.run(["ompi_info"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode()
        d = tempfile.mkdtemp(prefix="ucxtls-mpirun-")
        atexit.register(shutil.rmtree, d, True)
        prog = os.path.join(d, "ranks")
        src = prog + ".c"
        with open(src, "w") as f:
            f.write(PROGRAM)
        p = subprocess.run(["mpicc", "-std=c99", "-o", prog, src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        _prog.append((re.search(r"MCA pml: ucx", info), d, prog, p))
    has_pml, d, prog, p = _prog[0]
    if not has_pml:
        t.skip("mpirun", "this Open MPI has no UCX PML (ompi_info lists no 'MCA pml: ucx')")
        t.exit()
    if not t.check("the MPI program builds (mpicc)", p.returncode == 0, p.stdout.decode()):
        t.exit()
    return d, prog
