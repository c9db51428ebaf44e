#!/usr/bin/env python3
"""Real consumers of UCX_TLS, nothing mocked.

- `ucx_info -c`: UCX's own parser prints the value the library derived.
- `ucx_info -e`: a real UCP context, worker and endpoint are created with a value the library
  wrote: all on a GPU node without rc (replayed), where the hard-coded trainer value fails with
  "no usable transports/devices", and each recommended template composed there; on this
  machine (no GPU) the library leaves UCX_TLS unset, so UCX's default stands.
- UCX's shipped ucp_client_server example exchanges a message over the value the library wrote.
- Python: the trainer's os.environ.setdefault path, and a subprocess child that inherits it.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

from harness import ALL, C, NONE, R, Z, add_case, case, env_for, have, main, run

HARDCODED = C  # the list trainers hard-code (the CUDA value)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def no_ucx_info(t):
    """True (after a SKIP) when ucx_info is missing."""
    if have("ucx_info"):
        return False
    t.skip("ucx_info", "ucx_info not installed (Debian ucx-utils); scripts/test.sh installs it")
    return True


def ucx_info_config(t, machine, extra, want):
    if no_ucx_info(t):
        return
    p = run(["ucx_info", "-c"], env_for(machine, **extra))
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("UCX_TLS=")]
    t.equal("ucx_info -c on %s %s prints the derived UCX_TLS" % (machine, extra or ""), lines, ["UCX_TLS=" + want])


for _machine, _extra, _want in (("dgx", {}, HARDCODED), ("intel-xe", {}, Z),
                                ("mi300x", {}, R),
                                ("no-gpu", {"UCXTLS_ACCEL": "none"}, NONE),
                                ("aws-p5", {}, "all"), ("no-rdma", {}, "all"),
                                ("intel-xe", {"UCX_TLS": HARDCODED, "UCXTLS_REPAIR": "1"}, Z)):
    add_case("ucx_info -c on %s %s" % (_machine, _extra or ""), ucx_info_config, _machine, _extra, _want,
             tags=("ucx_info",))


@case("ucx_info -e: a UCP endpoint with a value the library wrote", tags=("ucx_info",))
def ucx_info_endpoint(t):
    if no_ucx_info(t):
        return
    # A real context with a value the library wrote (template tcp,self,{copy}).
    p = run(["ucx_info", "-e", "-u", "t"], env_for("no-gpu", UCXTLS_TEMPLATE="tcp,self,{copy}"))
    out = p.stdout.decode()
    t.check("ucx_info -e creates a UCP endpoint with UCX_TLS=tcp,self written by the library",
            p.returncode == 0 and "UCP endpoint" in out and "WARN" not in out, out + p.stderr.decode())


@case("ucx_info: the portable template composed here and on broadcom-roce", tags=("ucx_info",))
def ucx_info_portable(t):
    if no_ucx_info(t):
        return
    # Values composed from placeholder templates: a portable template on this machine (no RDMA,
    # no GPU: {rdma}, {ipc} and {copy} all empty) gives UCX a list it serves without a warning...
    portable = "{rdma},tcp,sm,self,{ipc},{copy}"
    p = run(["ucx_info", "-e", "-u", "t"], env_for(None, UCXTLS_TEMPLATE=portable, UCXTLS_DEBUG="1"))
    out = p.stdout.decode()
    t.check("ucx_info -e with %s composed on this machine (tcp,sm,self): endpoint, no WARN" % portable,
            p.returncode == 0 and "UCP endpoint" in out and "WARN" not in out
            and "set UCX_TLS=tcp,sm,self:" in p.stderr.decode(), out + p.stderr.decode())
    # ...and on a Broadcom RoCE replay ({rdma} = rc, {ipc} = cuda_ipc) UCX's own parser reads
    # exactly the composed list (this UCX has neither RDMA nor CUDA, so it warns about those).
    p = run(["ucx_info", "-c"], env_for("broadcom-roce", UCXTLS_TEMPLATE=portable))
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("UCX_TLS=")]
    t.equal("ucx_info -c on broadcom-roce with %s" % portable, lines, ["UCX_TLS=rc,tcp,sm,self,cuda_ipc,cuda_copy"])
    p = run(["ucx_info", "-e", "-u", "t"], env_for("broadcom-roce", UCXTLS_TEMPLATE=portable))
    out = p.stdout.decode()
    t.check("ucx_info -e on broadcom-roce's composed value: a context over tcp, and UCX names rc, cuda_ipc, cuda_copy unavailable",
            p.returncode == 0 and "UCP endpoint" in out and "not available" in out and "'rc'" in out, out)


# The recommended templates (README.md "Values", docs/recipes.md): what each composes to on a GPU
# node without rc (an EFA replay), and UCX must create an endpoint with it (this UCX has no CUDA:
# it names cuda_ipc/cuda_copy unavailable, and runs over the rest).
RECOMMENDED = [
    ("inference servers and MPI jobs", "{rdma},sm,self,tcp,{ipc},{copy}", "sm,self,tcp,cuda_ipc,cuda_copy"),
    ("the default template", "{rdma},{copy}", "all"),
]


def recommended_endpoint(t, what, template, composed):
    if no_ucx_info(t):
        return
    env = env_for("aws-p5", UCXTLS_DEBUG="1", **({} if template == "{rdma},{copy}" else {"UCXTLS_TEMPLATE": template}))
    p = run(["ucx_info", "-e", "-u", "t"], env)
    out, err = p.stdout.decode(), p.stderr.decode()
    t.check("%s (%s) on aws-p5 (no rc): composed %s, and ucx_info -e creates a UCP endpoint" % (what, template, composed),
            p.returncode == 0 and "UCP endpoint" in out and ("set UCX_TLS=%s:" % composed) in err, out + err)


for _what, _template, _composed in RECOMMENDED:
    add_case("ucx_info -e: %s on a node without rc" % _what, recommended_endpoint, _what, _template, _composed,
             tags=("ucx_info",))


@case("ucx_info -e, a GPU node without rc (aws-p5 replayed): all works, the hard-coded value fails", tags=("ucx_info",))
def ucx_info_all(t):
    if no_ucx_info(t):
        return
    p = run(["ucx_info", "-e", "-u", "t"], env_for("aws-p5"))
    out = p.stdout.decode()
    t.check("aws-p5: UCX_TLS=all written, and a UCP endpoint is created", p.returncode == 0 and "UCP endpoint" in out
            and "WARN" not in out, out + p.stderr.decode())
    trainer = run([sys.executable, "-c", "import os, subprocess; os.environ.setdefault('UCX_TLS', %r); "
                   "print(subprocess.run(['ucx_info', '-e', '-u', 't'], capture_output=True, text=True).stdout)"
                   % HARDCODED], env_for("aws-p5"))
    t.check("aws-p5: a trainer's setdefault of the rc list is a no-op, and its UCX child creates an endpoint",
            "UCP endpoint" in trainer.stdout.decode(), trainer.stdout.decode() + trainer.stderr.decode())


@case("ucx_info -e on this machine (no GPU): unset works, the hard-coded value fails", tags=("ucx_info",))
def ucx_info_here(t):
    if no_ucx_info(t):
        return
    # This machine: no GPU, so the library leaves UCX_TLS unset and UCX's default works...
    p = run(["ucx_info", "-e", "-u", "t"], env_for(None, UCXTLS_DEBUG="1"))
    out = p.stdout.decode()
    t.check("on this machine (no GPU) UCX_TLS stays unset and a UCP endpoint is created",
            p.returncode == 0 and "UCP endpoint" in out and "skip" in p.stderr.decode(),
            out + p.stderr.decode())
    # ...where the hard-coded trainer value fails outright (why the RDMA rule exists).
    p = run(["ucx_info", "-e", "-u", "t"], env_for(None, UCX_TLS=HARDCODED))
    out = p.stdout.decode() + p.stderr.decode()
    t.check("the hard-coded %s fails here with 'no usable transports'" % HARDCODED,
            "no usable transports" in out, out)


@case("ucp_client_server: UCX's example exchanges a message", tags=("client_server",))
def client_server(t):
    example = "/usr/share/doc/libucx-dev/examples/ucp_client_server.c"
    if not (os.path.exists(example) and have("gcc")):
        t.skip("ucp_client_server", "UCX examples not installed (Debian libucx-dev); scripts/test.sh installs them")
        return
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "ucp_client_server")
        subprocess.run(["gcc", "-o", exe, example, "-I" + os.path.dirname(example), "-lucp", "-lucs"], check=True)
        port = str(free_port())
        env = env_for("no-gpu", UCXTLS_TEMPLATE="tcp,{copy}")
        server = subprocess.Popen([exe, "-p", port], env=env, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            client = None
            for _ in range(50):  # wait for the server to listen
                time.sleep(0.1)
                client = run([exe, "-a", "127.0.0.1", "-p", port], env, cwd=d, timeout=30)
                if client.returncode == 0:
                    break
            out = client.stdout.decode()
            t.check("ucp_client_server exchanges a message over UCX_TLS=tcp written by the library",
                    client.returncode == 0 and "ABCDEFGHIJKLMNO" in out, out + client.stderr.decode())
        finally:
            server.kill()
            server.wait()


@case("python: a trainer's setdefault and a subprocess child")
def python(t):
    # Python: the trainer's setdefault sees the library's value; a child inherits it.
    py = sys.executable
    trainer = ("import os\n"
               "os.environ.setdefault('UCX_TLS', %r)\n"
               "print(os.environ['UCX_TLS'])\n" % HARDCODED)
    for machine, want in (("intel-max-i915", Z), ("dgx", C),
                          ("mi300x", R), ("no-rdma", ALL), ("aws-p5", ALL),
                          ("no-gpu", HARDCODED)):  # a GPU node without rc: all, a no-op for UCX; a CPU node: untouched
        p = run([py, "-c", trainer], env_for(machine))
        t.equal("python setdefault trainer on %s sees" % machine, p.stdout.decode().strip(), want, p.stderr.decode())
    child = ("import subprocess, sys\n"
             "print(subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"UCX_TLS\"))'],"
             " capture_output=True, text=True).stdout.strip())\n")
    p = run([py, "-c", child], env_for("intel-xe"))
    t.equal("a python subprocess child inherits the value", p.stdout.decode().strip(), Z,
            p.stderr.decode())


if __name__ == "__main__":
    main("real consumers: ucx_info, a UCX client/server, Python")
