#!/usr/bin/env python3
"""What `explain` and `doctor` say about the node beside the decision, on replayed machines: a
ConnectX RoCE port without a usable GID that UCX 1.21+'s rc_gda opens (named beside working rc
devices, where nothing is written), NIXL_UCX_TLS overriding UCX_TLS inside NIXL agents, a
UCX_NET_DEVICES of RDMA ports alone (no active-message lane for NIXL), AMD GPUs beside a ConnectX
under a UCX before 1.23 (ROCm memory registered through the peer-memory module), and kept values
that are right staying silent. doctor reads a fake build of the version wanted
(tests/cli/fake_builds.py), never runs it."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import LIB, case, env_for, main, run, sh_value  # noqa: E402
import fake_builds  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-findings-")


def explain(machine, **extra):
    p = run([CLI, "explain", "--json"], env_for(machine, preload=False, **extra))
    return json.loads(p.stdout.decode())


def doctor(machine, version, *args, **extra):
    """doctor --json with --ucx naming a fake build of this version: (its JSON, its text)."""
    d = os.path.join(SCRATCH, "ucx-" + version)
    if not os.path.exists(os.path.join(d, "libucp.so.0")):  # "-norocm": a build without rocm_copy
        tls = ("tcp", "self", "sysv", "posix", "rc_mlx5", "rc_verbs", "cuda_copy") + (() if "norocm" in version else ("rocm_copy",))
        fake_builds.fake_ucx(d, tls, version.split("-")[0])
    env = env_for(machine, preload=False, **extra)
    js = json.loads(run([CLI, "doctor", "--json", "--ucx", d] + list(args), env).stdout.decode())
    text = run([CLI, "doctor", "--ucx", d] + list(args), env).stdout.decode()
    return js, text


def tags(findings):
    return sorted(f["tag"] if isinstance(f, dict) else f.split(":")[0] for f in findings)


@case("rc_gda: a GID-less ConnectX beside working ConnectX ports is named, with the fix; nothing is written")
def rc_gda_beside(t):
    tls, _, err = sh_value(env_for("roce-gid-less-beside-ib"))
    t.equal("roce-gid-less-beside-ib: UCX_TLS stays unset (rc runs)", tls, "<unset>", err)
    e = explain("roce-gid-less-beside-ib")
    t.equal("explain --json: one finding, rc_gda", tags(e["findings"]), ["rc_gda"], json.dumps(e))
    text = e["findings"][0]["text"] if e["findings"] else ""
    t.check("... it names mlx5_4:1 and the fix (UCX_TLS=^rc_gda, UCX_NET_DEVICES)",
            "mlx5_4:1" in text and "UCX_TLS=^rc_gda" in text and "UCX_NET_DEVICES" in text, text)
    out = run([CLI, "explain"], env_for("roce-gid-less-beside-ib", preload=False)).stdout.decode()
    t.check("explain's text: a warning line naming the port", "\nwarning   ConnectX RoCE port mlx5_4:1 has no usable GID" in out, out)
    js, text = doctor("roce-gid-less-beside-ib", "1.22.0")
    t.equal("doctor --json: the rc_gda finding", tags(js["findings"]), ["rc_gda"], json.dumps(js))
    t.check("doctor's text: a warning line naming the port", "\nwarning     ConnectX RoCE port mlx5_4:1" in text, text)
    # A value that leaves rc_gda out is not told to leave it out.
    for value in ("^rc_gda", "^ib", "rc_x,rc,dc_x,dc,cuda_copy"):
        t.equal("UCX_TLS=%s: no rc_gda finding" % value, tags(explain("roce-gid-less-beside-ib", UCX_TLS=value)["findings"]), [])
    t.equal("UCX_TLS=^tcp (rc_gda still in it): named", tags(explain("roce-gid-less-beside-ib", UCX_TLS="^tcp")["findings"]),
            ["rc_gda"])
    # Where no other device runs rc the library writes ^ib itself: no finding beside its own fix.
    e = explain("roce-zero-gids")
    t.equal("roce-zero-gids: ^ib written, no finding", (e["value"], tags(e["findings"])), ("^ib", []), json.dumps(e))
    t.check("... its reason names the port and rc_gda", any("mlx5_0:1" in r and "rc_gda" in r for r in e["reasons"]), json.dumps(e["reasons"]))


@case("NIXL_UCX_TLS: shown as an override of what the library wrote or kept")
def nixl_override(t):
    for machine, extra, what in [("dgx", {}, "UCX's default (UCX_TLS unset)"), ("intel-xe", {}, "UCX_TLS='all'"),
                                 ("dgx", {"UCX_TLS": "^tcp"}, "UCX_TLS='^tcp'")]:
        e = explain(machine, NIXL_UCX_TLS="rc,cuda_copy", **extra)
        text = " ".join(f["text"] for f in e["findings"])
        t.check("%s %s: explain names NIXL_UCX_TLS='rc,cuda_copy' overriding %s" % (machine, extra, what),
                tags(e["findings"]) == ["nixl"] and "NIXL_UCX_TLS='rc,cuda_copy' overrides " + what in text, json.dumps(e["findings"]))
    t.equal("unset: no finding", tags(explain("dgx")["findings"]), [])
    t.equal("empty: no finding (NIXL's own code skips an empty one)", tags(explain("dgx", NIXL_UCX_TLS="")["findings"]), [])
    js, text = doctor("intel-xe", "1.22.0", NIXL_UCX_TLS="rc,ze_copy")
    t.check("doctor: the nixl finding, as a warning line", "nixl" in tags(js["findings"]) and
            "\nwarning     NIXL_UCX_TLS='rc,ze_copy' overrides UCX_TLS='all'" in text, text)


@case("UCX_NET_DEVICES of RDMA ports alone: doctor names it and the fix (add lo or an Ethernet device)")
def net_devices(t):
    for value, named in [("mlx5_0:1,mlx5_1:1", True), ("mlx5_0:1", True), ("mlx5_0:1,lo", False), ("eth0", False),
                         ("all", False), ("^mlx5_0:1", False)]:
        js, text = doctor("dgx", "1.22.0", UCX_NET_DEVICES=value)
        t.equal("UCX_NET_DEVICES=%s: %s" % (value, "named" if named else "not named"), "net-devices" in tags(js["findings"]),
                named, text)
        if named:
            t.check("... the line says why and the fix", "no active messages transport" in text and "add lo or an Ethernet device" in text,
                    text)


@case("AMD GPUs beside a ConnectX, UCX before 1.23: doctor names the EFAULT and UCX_ROCM_COPY_DMABUF")
def rocm_dmabuf(t):
    for machine, version, extra, named in [("mi300x", "1.22.0", {}, True), ("mi300x", "1.20.0", {}, True),
                                           ("mi300x", "1.23.0", {}, False),
                                           ("mi300x", "1.22.0", {"UCX_ROCM_COPY_DMABUF": "y"}, False),
                                           ("dgx", "1.22.0", {}, False), ("intel-xe", "1.22.0", {}, False),
                                           ("mi300x", "1.22.0-norocm", {}, False)]:
        js, text = doctor(machine, version, **extra)
        t.equal("%s, UCX %s %s: %s" % (machine, version, extra, "named" if named else "not named"),
                "rocm-dmabuf" in tags(js["findings"]), named, text)
        if named:
            t.check("... with EFAULT and the fix", "EFAULT" in text and "UCX_ROCM_COPY_DMABUF=y" in text, text)


@case("kept values that are right stay silent; prime-rl's list is repaired on Intel")
def kept_silent(t):
    for value in ("^ib,gdr_copy", "^tcp"):
        tls, derived, err = sh_value(env_for("dgx", UCX_TLS=value))
        t.equal("dgx UCX_TLS=%s: kept, no marker, stderr silent" % value, (tls, derived, err), (value, "<unset>", ""))
        e = explain("dgx", UCX_TLS=value)
        t.equal("dgx UCX_TLS=%s: explain keeps it without a warning or a finding" % value,
                (e["action"], e["warning"], e["findings"]), ("keep", None, []), json.dumps(e))
        tls, _, err = sh_value(env_for("dgx", UCX_TLS=value, UCXTLS_DEBUG="1"))
        t.check("... the debug line says only that it is kept", err.startswith('ucxtls: keep UCX_TLS="%s": ' % value) and
                "names" not in err and "lacks" not in err, err)
    tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS="rc_mlx5,ud,cuda_copy", UCXTLS_REPAIR="1"))
    t.equal("intel-xe prime-rl's rc_mlx5,ud,cuda_copy, UCXTLS_REPAIR=1: rc_mlx5,ud,ze_copy, no marker",
            (tls, derived, err), ("rc_mlx5,ud,ze_copy", "<unset>", ""))


if __name__ == "__main__":
    main("explain and doctor: what the node adds beside the decision")
