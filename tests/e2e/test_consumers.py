#!/usr/bin/env python3
"""Real consumers of UCX_TLS, nothing mocked.

Each `ucx_info` case runs against Debian's UCX 1.13 (the `ucx_info` on PATH; tag ucx_info) and
against UCX 1.22.0 as users install it from PyPI, RAPIDS' libucx-cu12 wheel (tests/wheels,
installed by scripts/test.sh; tag wheels; built with CUDA, without verbs): the wheel's `ucx_info`
is exec'd directly, by its path, with the library preloaded and the wheel's lib/ in
LD_LIBRARY_PATH (as RAPIDS' libucx.load_library() arranges). Where 1.22 behaves differently, the
case says so and asserts what each does. The cases that need a UCX with Level Zero (tag ucx_ze)
run against a site's own build given as UCXTLSTEST_UCX_ZE, and SKIP without one: no registry
serves such a build.

- `ucx_info -c`: UCX's own parser prints the value the library derived.
- `ucx_info -e`: a real UCP context, worker and endpoint are created with a value the library
  wrote: all on a GPU node without rc (replayed), where the hard-coded trainer value fails with
  "no usable transports/devices", and each recommended template composed there; on this
  machine (no GPU) the library leaves UCX_TLS unset, so UCX's default stands.
- UCX's shipped ucp_client_server example exchanges a message over the value the library wrote.
- Python: the trainer's os.environ.setdefault path, and a subprocess child that inherits it.
"""
import os
import re
import subprocess
import sys
import tempfile

import ucp_example

from harness import (ALL, ALWAYS, BUILD_DIR, C, NONE, R, Z, add_case, case, env_for, have, loading, main, run,
                     ucx_build_or_skip, ucxx_python, FAKE_ZE_GPU, ze_build_with_gpu)

HARDCODED = C  # the list trainers hard-code (the CUDA value)


# The UCXes the ucx_info cases run against: (label in the case name, build, tag). build None is
# Debian's UCX 1.13 (ucx_info found in PATH); "rapids" RAPIDS' libucx-cu12 1.22.0 wheel
# (harness.ucx_build).
UCXES = (("", None, "ucx_info"), (" [UCX 1.22, RAPIDS' wheel]", "rapids", "wheels"))


def add_ucx_case(name, fn, *args, builds=(None, "rapids")):
    """Registers fn(t, ucx_info, *args) once per UCX of UCXES that `builds` names."""
    for label, ucx, tag in UCXES:
        if ucx in builds:
            add_case(name + label, lambda t, *a, _ucx=ucx: _run_with(t, _ucx, fn, *a), *args, tags=(tag,))


def _run_with(t, ucx, fn, *args):
    if ucx is None:
        if have("ucx_info"):
            fn(t, "ucx_info", *args)
        else:
            t.skip("ucx_info", "ucx_info not installed (Debian ucx-utils); scripts/test.sh installs it")
        return
    build = ucx_build_or_skip(t, ucx)
    if build:
        with loading(build):
            fn(t, build.ucx_info, *args)


def ucx_case(name):
    """Decorator: add_ucx_case for a function without further arguments."""
    def register(fn):
        add_ucx_case(name, fn)
        return fn
    return register


def ucx_info_config(t, ucx_info, machine, extra, want):
    p = run([ucx_info, "-c"], env_for(machine, **extra))
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("UCX_TLS=")]
    t.equal("ucx_info -c on %s %s prints the UCX_TLS the library left (unset: UCX's default, all)" % (machine, extra or ""),
            lines, ["UCX_TLS=" + want])


# UCX's own parser reads what the library left: nothing on dgx (UCX prints its default, all), all
# on AMD and Intel nodes; the template's values with UCXTLS_WRITE=always.
for _machine, _extra, _want in (("dgx", {}, ALL), ("intel-xe", {}, ALL), ("mi300x", {}, ALL),
                                ("dgx", ALWAYS, C), ("intel-xe", ALWAYS, Z), ("mi300x", ALWAYS, R),
                                ("dgx", {"UCXTLS_ACCEL": "none"}, ALL),
                                ("no-gpu", {**ALWAYS, "UCXTLS_ACCEL": "none"}, NONE),
                                ("aws-p5", {}, "all"), ("no-rdma", {}, "all"),
                                ("roce-bond-elsewhere", {}, "^ib"),  # a deny list of UCX's alias ib
                                ("intel-xe", {"UCX_TLS": HARDCODED, "UCXTLS_REPAIR": "1"}, Z)):
    add_ucx_case("ucx_info -c on %s %s" % (_machine, _extra or ""), ucx_info_config, _machine, _extra, _want)


@ucx_case("ucx_info -e: a UCP endpoint with a value the library wrote")
def ucx_info_endpoint(t, ucx_info):
    # A real context with a value the library wrote (template tcp,self,{copy}).
    p = run([ucx_info, "-e", "-u", "t"], env_for("no-gpu", UCXTLS_TEMPLATE="tcp,self,{copy}"))
    out = p.stdout.decode()
    t.check("ucx_info -e creates a UCP endpoint with UCX_TLS=tcp,self written by the library",
            p.returncode == 0 and "UCP endpoint" in out and "WARN" not in out, out + p.stderr.decode())


@ucx_case("ucx_info: the portable template composed here and on broadcom-roce")
def ucx_info_portable(t, ucx_info):
    # Values composed from placeholder templates: a portable template on this machine (no RDMA,
    # no GPU: {rdma}, {ipc} and {copy} all empty) gives UCX a list it serves without a warning...
    portable = "{rdma},tcp,sm,self,{ipc},{copy}"
    p = run([ucx_info, "-e", "-u", "t"], env_for(None, UCXTLS_TEMPLATE=portable, UCXTLS_DEBUG="1"))
    out = p.stdout.decode()
    t.check("ucx_info -e with %s composed on this machine (tcp,sm,self): endpoint, no WARN" % portable,
            p.returncode == 0 and "UCP endpoint" in out and "WARN" not in out
            and "set UCX_TLS=tcp,sm,self:" in p.stderr.decode(), out + p.stderr.decode())
    # ...and on a Broadcom RoCE replay ({rdma} = rc, {ipc} = cuda_ipc) UCX's own parser reads
    # exactly the composed list (this UCX has neither RDMA nor CUDA, so it warns about those).
    p = run([ucx_info, "-c"], env_for("broadcom-roce", UCXTLS_TEMPLATE=portable))
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("UCX_TLS=")]
    t.equal("ucx_info -c on broadcom-roce with %s" % portable, lines, ["UCX_TLS=rc,tcp,sm,self,cuda_ipc,cuda_copy"])
    p = run([ucx_info, "-e", "-u", "t"], env_for("broadcom-roce", UCXTLS_TEMPLATE=portable))
    out = p.stdout.decode()
    t.check("ucx_info -e on broadcom-roce's composed value: a context over tcp, and UCX names rc, cuda_ipc, cuda_copy unavailable",
            p.returncode == 0 and "UCP endpoint" in out and "not available" in out and "'rc'" in out, out)


# The recommended templates (docs/usage.md "Values", docs/recipes.md): what each composes to on a GPU
# node without rc (an EFA replay), and UCX must create an endpoint with it (this UCX has no CUDA:
# it names cuda_ipc/cuda_copy unavailable, and runs over the rest).
RECOMMENDED = [
    ("inference servers and MPI jobs", "{rdma},sm,self,tcp,{ipc},{copy}", "sm,self,tcp,cuda_ipc,cuda_copy"),
    ("the default template", "{rdma},{copy}", "all"),
]


def recommended_endpoint(t, ucx_info, what, template, composed):
    env = env_for("aws-p5", UCXTLS_DEBUG="1", **({} if template == "{rdma},{copy}" else {"UCXTLS_TEMPLATE": template}))
    p = run([ucx_info, "-e", "-u", "t"], env)
    out, err = p.stdout.decode(), p.stderr.decode()
    t.check("%s (%s) on aws-p5 (no rc): composed %s, and ucx_info -e creates a UCP endpoint" % (what, template, composed),
            p.returncode == 0 and "UCP endpoint" in out and ("set UCX_TLS=%s:" % composed) in err, out + err)


for _what, _template, _composed in RECOMMENDED:
    add_ucx_case("ucx_info -e: %s on a node without rc" % _what, recommended_endpoint, _what, _template, _composed)


@ucx_case("ucx_info -e, a GPU node without rc (aws-p5 replayed): all works, the hard-coded value fails")
def ucx_info_all(t, ucx_info):
    p = run([ucx_info, "-e", "-u", "t"], env_for("aws-p5"))
    out = p.stdout.decode()
    t.check("aws-p5: UCX_TLS=all written, and a UCP endpoint is created", p.returncode == 0 and "UCP endpoint" in out
            and "WARN" not in out, out + p.stderr.decode())
    trainer = run([sys.executable, "-c", "import os, subprocess; os.environ.setdefault('UCX_TLS', %r); "
                   "print(subprocess.run([%r, '-e', '-u', 't'], capture_output=True, text=True).stdout)"
                   % (HARDCODED, ucx_info)], env_for("aws-p5"))
    t.check("aws-p5: a trainer's setdefault of the rc list is a no-op, and its UCX child creates an endpoint",
            "UCP endpoint" in trainer.stdout.decode(), trainer.stdout.decode() + trainer.stderr.decode())


@ucx_case("ucx_info -e on this machine (no GPU): unset works, the hard-coded value fails")
def ucx_info_here(t, ucx_info):
    # This machine: no GPU, so the library leaves UCX_TLS unset and UCX's default works...
    p = run([ucx_info, "-e", "-u", "t"], env_for(None, UCXTLS_DEBUG="1"))
    out = p.stdout.decode()
    t.check("on this machine (no GPU) UCX_TLS stays unset and a UCP endpoint is created",
            p.returncode == 0 and "UCP endpoint" in out and "skip" in p.stderr.decode(),
            out + p.stderr.decode())
    # ...where the hard-coded trainer value fails outright (why the RDMA rule exists).
    p = run([ucx_info, "-e", "-u", "t"], env_for(None, UCX_TLS=HARDCODED))
    out = p.stdout.decode() + p.stderr.decode()
    t.check("the hard-coded %s fails here with 'no usable transports'" % HARDCODED,
            "no usable transports" in out, out)


def ucx_version(ucx_info):
    """(major, minor) of the UCX that ucx_info runs: 1.13 prints "# Version 1.13.1", 1.22
    "# Library version: 1.22.0"."""
    out = run([ucx_info, "-v"], env_for(None, preload=False)).stdout.decode()
    m = re.search(r"^# (?:Library version:|Version) (\d+)\.(\d+)", out, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


@ucx_case("ucx_info -e: a deny list naming transports this UCX lacks (1.13 warns, 1.22 does not)")
def ucx_info_deny(t, ucx_info):
    # A user's ^ list is kept by the library (UCX_TLS set: keep) and UCX runs over the rest; 1.13
    # also warns that the denied names are not available, 1.22 does not (ucxtls doctor reports
    # such a name as "MISSING ... (denied, and not in this UCX: some UCX releases warn about it)").
    version = ucx_version(ucx_info)
    if not t.check("ucx_info -v names the version", version is not None):
        return
    p = run([ucx_info, "-e", "-u", "t"], env_for(None, UCX_TLS="^cuda_copy,rc", UCXTLS_DEBUG="1"))
    out, err = p.stdout.decode(), p.stderr.decode()
    warns = "not available" in out
    t.check("UCX %d.%d: UCX_TLS=^cuda_copy,rc kept by the library, a UCP endpoint created, and %s"
            % (version + ("a warning on stdout naming cuda_copy and rc" if version < (1, 22) else "no warning",)),
            p.returncode == 0 and "UCP endpoint" in out and "keep" in err
            and (warns and "'cuda_copy'" in out and "'rc'" in out if version < (1, 22) else not warns), out + err)


FAKE_GPU = FAKE_ZE_GPU


@case("ucx_info -e [UCX 1.22 with Level Zero, a Level Zero GPU]: a value whose only usable transport is ze_copy is refused",
      tags=("ucx_ze",))
def ucx_info_accelerator_only(t):
    # New in 1.22 (openucx/ucx #11373): a context whose usable transports are all accelerator ones
    # is refused, although UCX serves the name (no "not available" for it). So the trainer's rc
    # list with the copy transport fails at ucp_init on a node without rc.
    build = ze_build_with_gpu(t, "a Level Zero GPU")
    if not build:
        return
    info = build.ucx_info
    gpu = dict(build.env, ZE_ENABLE_ALT_DRIVERS=FAKE_GPU)
    d = run([info, "-d"], env_for(None, **gpu)).stdout.decode()
    if not t.check("control: ucx_info -d lists ze_copy with the fake GPU", "Transport: ze_copy" in d, d):
        return
    for value, ok in (("ze_copy", False), ("ze", False), ("ze_copy,rc", False), ("ze_copy,tcp", True)):
        p = run([info, "-e", "-u", "t"], env_for(None, UCX_TLS=value, **gpu))
        out = p.stdout.decode()
        served = "'ze_copy'" not in out and "'ze'" not in out  # UCX does not call the ze names unavailable
        if ok:
            t.check("UCX_TLS=%s: a UCP endpoint" % value, p.returncode == 0 and "UCP endpoint" in out and served, out)
        else:
            t.check("UCX_TLS=%s: ze_copy served, yet 'no usable transports/devices' and no context" % value,
                    p.returncode != 0 and "no usable transports/devices" in out and "Failed to create UCP context" in out
                    and served, out)


@case("ucp_client_server: UCX's example exchanges a message", tags=("client_server",))
def client_server(t):
    if ucp_example.missing():
        t.skip("ucp_client_server", ucp_example.missing())
        return
    with tempfile.TemporaryDirectory() as d:
        exe = ucp_example.build(d)
        status, client, server = ucp_example.exchange(exe, env_for("no-gpu", UCXTLS_TEMPLATE="tcp,{copy}"), d)
        t.check("ucp_client_server exchanges a message over UCX_TLS=tcp written by the library",
                status == 0 and "ABCDEFGHIJKLMNO" in client, client + server)


FAKE_CUDA_DIR = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))


@case("ucp_client_server on RAPIDS' UCX 1.22 wheel (no verbs), a replayed NVIDIA node with ConnectX, UCX_TLS unset: "
      "works without the library and with its default; UCXTLS_WRITE=always's list leaves this build no usable transport",
      tags=("wheels",))
def client_server_rapids(t):
    # What a UCXX or Dask-over-UCX process meets on such a node: RAPIDS' UCX has no verbs, so of the
    # CUDA list rc_x,rc,dc_x,dc,cuda_copy (the default before 0.2.0, UCXTLS_WRITE=always now) only
    # cuda_copy remains, and UCX 1.22 refuses a context of accelerator transports alone; the
    # default leaves UCX_TLS unset there. Measured with and without a CUDA driver (the fake one of
    # tests/cuda), since cuda_copy is only served where one answers.
    build = ucx_build_or_skip(t, "rapids")
    if not build:
        return
    if ucp_example.missing():
        t.skip("ucp_client_server", ucp_example.missing())
        return
    with tempfile.TemporaryDirectory() as d:
        exe = ucp_example.build(d, os.path.join(build.prefix, "include"), build.libdir)
        drivers = [("no CUDA driver", build.libdir)]
        if os.path.exists(os.path.join(FAKE_CUDA_DIR, "libcuda.so.1")):
            drivers.append(("the fake CUDA driver", FAKE_CUDA_DIR + ":" + build.libdir))
        else:
            t.skip("with a CUDA driver", "the fake CUDA driver (tests/cuda) is not built: %s" % FAKE_CUDA_DIR)
        for what, path in drivers:
            status, client, server = ucp_example.exchange(exe, env_for("dgx", preload=False, LD_LIBRARY_PATH=path), d)
            t.check("%s, no library (UCX_TLS unset: UCX's all): the message is exchanged" % what,
                    status == 0 and "ABCDEFGHIJKLMNO" in client, client + server)
            status, client, server = ucp_example.exchange(exe, env_for("dgx", LD_LIBRARY_PATH=path, UCXTLS_DEBUG="1"), d)
            t.check("%s, library, the default: UCX_TLS left unset, the message is exchanged" % what,
                    status == 0 and "ABCDEFGHIJKLMNO" in client and "ucxtls: skip (UCX_TLS stays unset)" in client,
                    client + server)
            status, client, server = ucp_example.exchange(
                exe, env_for("dgx", LD_LIBRARY_PATH=path, UCXTLS_DEBUG="1", **ALWAYS), d)
            t.check("%s, library, UCXTLS_WRITE=always: it sets %s and both sides fail at ucp_init: "
                    "'no usable transports/devices'" % (what, C),
                    status != 0 and ("ucxtls: set UCX_TLS=%s:" % C) in client and "no usable transports/devices" in client
                    and "failed to ucp_init" in server, client + server)


@case("UCXX 0.52 (RAPIDS' UCX 1.21) client and server on a replayed NVIDIA node with ConnectX, UCX_TLS unset: "
      "works without the library and with its default; the old default (UCXTLS_WRITE=always) leaves it no context",
      tags=("wheels",))
def ucxx_echo(t):
    python, why = ucxx_python()
    if not python:
        t.skip("UCXX", why)
        return
    echo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ucxx_echo.py")
    for what, preload, extra, works in (("no library", False, {}, True), ("the library's default", True, {}, True),
                                        ("UCXTLS_WRITE=always", True, {"UCXTLS_WRITE": "always"}, False)):
        p = run([python, echo], env_for("dgx", preload=preload, UCXTLS_DEBUG="1", **extra), timeout=120)
        out = p.stdout.decode() + p.stderr.decode()
        if works:
            t.check("%s: UCX_TLS unset, the message echoed" % what,
                    p.returncode == 0 and "UCX_TLS=<unset> echo=True" in out, out)
        else:
            t.check("%s: %s written, and UCXX cannot create its UCX context ('No such device')" % (what, C),
                    p.returncode != 0 and ("ucxtls: set UCX_TLS=%s:" % C) in out and "UCXXNoDeviceError" in out, out)


@case("python: a trainer's setdefault and a subprocess child")
def python(t):
    # Python: the trainer's setdefault sees the library's value where it wrote one (all where the
    # trainer's CUDA list would be wrong), and applies its own list, byte-identical, elsewhere; a
    # child inherits the value.
    py = sys.executable
    trainer = ("import os\n"
               "os.environ.setdefault('UCX_TLS', %r)\n"
               "print(os.environ['UCX_TLS'])\n" % HARDCODED)
    for machine, extra, want in (("intel-max-i915", {}, ALL), ("dgx", {}, HARDCODED), ("broadcom-roce", {}, HARDCODED),
                                 ("mi300x", {}, ALL), ("no-rdma", {}, ALL), ("aws-p5", {}, ALL),
                                 ("no-gpu", {}, HARDCODED),  # a CPU node: untouched
                                 ("intel-max-i915", ALWAYS, Z), ("dgx", ALWAYS, C), ("mi300x", ALWAYS, R)):
        p = run([py, "-c", trainer], env_for(machine, **extra))
        t.equal("python setdefault trainer on %s %s sees" % (machine, extra or ""), p.stdout.decode().strip(), want,
                p.stderr.decode())
    child = ("import subprocess, sys\n"
             "print(subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"UCX_TLS\"))'],"
             " capture_output=True, text=True).stdout.strip())\n")
    p = run([py, "-c", child], env_for("intel-xe"))
    t.equal("a python subprocess child inherits the value", p.stdout.decode().strip(), ALL,
            p.stderr.decode())


if __name__ == "__main__":
    main("real consumers: ucx_info, a UCX client/server, Python")
