"""test_command_cases.py's build lines: a value of another GPU family, builds without verbs, DC or
a loaded Level Zero module, and the UCX 1.22 boundary of doctor's verdicts."""
import os
import re
import subprocess

from harness import case, env_for, run
from command_common import CLI, FAKES, WORK, Holder, doctor, fake_ucx_info


# A kept value of another GPU family: the case the library exists for, named in explain and doctor
@case("doctor names a value of another GPU family with explain's warning, and no advice to build UCX for it")
def doctor_foreign_family(t):
    value = "rc,cuda_copy"
    env = env_for("intel-xe", preload=False, UCX_TLS=value)
    ex = run([CLI, "explain"], env).stdout.decode(errors="replace")
    m = re.search(r"^warning +(.*)$", ex, re.M)
    if not t.check("control: explain warns about UCX_TLS=%s on intel-xe" % value, m, ex):
        return
    warning = m.group(1)
    cuda_advice = re.compile(r"^build .*(CUDA|cuda_copy|--with-cuda)", re.M)
    # A build with a CUDA module (that does not load here) and no ze: CUDA is not this node's family.
    build = os.path.join(FAKES, "cuda-module")
    runs = [("--ucx with UCX_TLS=%s" % value, ["--ucx", build], env),
            ("--ucx --value %s" % value, ["--ucx", build, "--value", value], env_for("intel-xe", preload=False))]
    for label, args, e in runs:
        rc, out, missing, err = doctor(args, e)
        t.check("%s: explain's warning, word for word, under the value line" % label,
                re.search(r"^value .*\n%s$" % re.escape("warning     " + warning), out, re.M), out + err)
        t.check("... no build line about CUDA on an Intel node", not cuda_advice.search(out), out)
        t.check("... the node's own family named: built without Level Zero", "built without Level Zero (ze) support" in out, out)
        t.check("... cuda_copy MISSING still (UCX warns about it), exit 1", "cuda_copy" in missing and rc == 1, out + err)
    # A process started with that value and no libucxtls.so in it (its UCX_TLS as it started).
    h = Holder(env_for("intel-xe", preload=False, UCX_TLS=value), os.path.join(build, "libucp.so.0"))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], env_for("intel-xe", preload=False))
    finally:
        h.close()
    t.check("--pid of a process without the library: the warning", ("warning     " + warning) in out, out + err)
    t.check("... the Level Zero line alone, no CUDA line", not cuda_advice.search(out) and "without Level Zero" in out, out)
    # The plain doctor (ucx_info) too.
    e = env_for("intel-xe", preload=False, UCX_TLS=value)
    e["PATH"] = fake_ucx_info("foreign", ("rc_verbs", "ud_verbs", "tcp", "self")) + ":" + e["PATH"]
    rc, out, missing, err = doctor([], e)
    t.check("plain doctor: the warning", ("warning     " + warning) in out, out + err)
    # Controls: a node without GPUs still hears which families the value needs (a login node checking
    # a build for the compute nodes); the node's own family on a CUDA node.
    rc, out, missing, err = doctor(["--ucx", build, "--value", value], env_for("no-gpu", preload=False))
    t.check("control: no-gpu, --value %s: no warning, the CUDA module line (the value asks for CUDA)" % value,
            "warning" not in out and "this UCX has CUDA support (libuct_cuda.so.0), but the module does not load here" in out, out)
    rc, out, missing, err = doctor(["--ucx", build, "--value", "rc,ze_copy"], env_for("dgx", preload=False))
    t.check("control: dgx, --value rc,ze_copy: the CUDA module line, no Level Zero line, the warning",
            "this UCX has CUDA support" in out and "Level Zero" not in out and re.search(r"^warning +UCX_TLS names ze_copy", out, re.M),
            out)


# the build lines on the nodes a mutation found untested
@case("doctor --ucx: 'built without verbs' wherever the node's RDMA runs rc, a ConnectX or not")
def without_verbs(t):
    for machine in ("broadcom-roce", "rxe", "omnipath", "dgx"):
        rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids"), "--value", "tcp"], env_for(machine, preload=False))
        t.check("%s, a build without verbs, --value tcp: 'built without verbs', exit 1" % machine,
                rc == 1 and "this UCX was built without verbs: no rc transport, although this node's RDMA runs rc" in out,
                out + err)
    # tcp,cuda_copy: a value that carries the NVIDIA GPUs' memory (tcp alone does not: exit 1 for it).
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "rapids"), "--value", "tcp,cuda_copy"],
                                   env_for("aws-p5", preload=False))
    t.check("aws-p5 (EFA: no rc), --value tcp,cuda_copy: no verbs line, exit 0", rc == 0 and "verbs" not in out, out + err)


@case("doctor --ucx: no 'built without DC' line for a build with no rc at all")
def no_dc_line_without_rc(t):
    for value in (None, "rc_x,rc,dc_x,dc,cuda_copy", "dc"):
        args = ["--ucx", os.path.join(FAKES, "rapids")] + (["--value", value] if value else [])
        rc, out, missing, err = doctor(args, env_for("dgx", preload=False))
        t.check("dgx, a build without verbs, %s: 'built without verbs', no DC line" % (value or "the default value"),
                "built without verbs" in out and "built without DC" not in out, out + err)
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl"), "--value", "dc"], env_for("dgx", preload=False))
    t.check("control: dgx, a build with rc but no DC, --value dc: the DC line", "built without DC (no dc_mlx5)" in out, out)


@case("doctor --ucx: a Level Zero module present but not loaded (UCX_MODULES): 'has Level Zero support', never 'rebuild'")
def ze_module_not_loaded(t):
    if not t.needs("cc", "ze module"):
        return
    d = os.path.join(WORK, "ze-module")
    os.makedirs(os.path.join(d, "ucx"))
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
    # libucp (libucs, libuct) without ze; a module libuct_ze.so.0 with ze_copy that loads here, and
    # that UCX_MODULES=^ze leaves out.
    for out, defs in ((os.path.join(d, "libucp.so.0"), ["-DFAKE_UCX_TLS_NONE=1"]),
                      (os.path.join(d, "ucx", "libuct_ze.so.0"), ["-DFAKE_UCX_NOT_UCX=1", "-DFAKE_UCX_TLS_ZE_MODULE=1"])):
        subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-o", out, src] + defs, check=True)
    rc, out, missing, err = doctor(["--ucx", d, "--value", "tcp"], env_for("intel-xe", preload=False,
                                                                            UCX_MODULES="^ze"))
    t.check("the module is named as left out by UCX_MODULES", re.search(r"^module +\S*libuct_ze.so.0 is not loaded: UCX_MODULES=\^ze \(environment\) leaves it out", out, re.M), out)
    t.check("'has Level Zero (ze) support (libuct_ze.so.0), but the module does not load here', exit 1",
            rc == 1 and "this UCX has Level Zero (ze) support (libuct_ze.so.0), but the module does not load here" in out, out + err)
    t.check("... never 'built without Level Zero' nor 'rebuild UCX with --with-ze'",
            "built without Level Zero" not in out and "--with-ze" not in out, out)


@case("doctor: the UCX 1.22 boundary of its verdicts, at 1.21, 1.22, 1.23, 2.0 and 0.23 (a denied absent name; a GPU-only value)")
def version_boundary(t):
    for version, newer in (("1.21.0", False), ("1.22.0", True), ("1.23.0", True), ("2.0.0", True), ("0.23.0", False)):
        e = env_for(None, preload=False)
        # --ucx: the build's registered transports (the plain doctor keeps those with a device here).
        build = os.path.join(fake_ucx_info("v" + version, ("tcp", "self", "cuda_copy"), version), "lib")
        rc, out, missing, err = doctor(["--ucx", build, "--value", "^ze_copy"], e)
        t.check("%s, --value ^ze_copy (denied, not in this UCX): %s" % (version, "harmless, exit 0" if newer else "MISSING, exit 1"),
                (rc == 0 and not missing and "does not warn about a denied name" in out) if newer
                else (rc == 1 and missing == {"ze_copy"}), "%d %r %r" % (rc, out, err))
        rc, out, missing, err = doctor(["--ucx", build, "--value", "cuda_copy"], e)
        t.check("%s, --value cuda_copy (served, GPU only): %s" % (version, "refused, exit 1" if newer else "ok, exit 0"),
                (rc == 1 and re.search(r"^refused ", out, re.M)) if newer else (rc == 0 and "refused" not in out),
                "%d %r %r" % (rc, out, err))
