#!/usr/bin/env python3
"""Fixture machines replayed through the real libucxtls.so in a real /bin/sh process.

Each row: a machine (tests/fixtures/machines.py), the variables a user or launcher would set, and
the UCX_TLS that /bin/sh must see (or <unset>).
"""
import os
import shutil
import subprocess
import tempfile

from harness import (ALL, ALWAYS, C, LIB, NONE, R, UNSET, Z, add_case, case, env_for, fixture, have, main, run, sh_value,
                     skip_closed_to_others)

PORTABLE = "{rdma},sm,self,{ipc},{copy}"

ROWS = [
    # machine, variables, expected UCX_TLS. **ALWAYS (UCXTLS_WRITE=always): the default template
    # composed on every GPU node, for the rows about what it is composed from; the default's own
    # answers follow them.
    ("dgx", {**ALWAYS}, C),
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "7"}, C),
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "8"}, UNSET),              # out of range: no GPU, nothing to fix
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": ""}, UNSET),               # empty: none
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "-1"}, UNSET),
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "NoDevFiles"}, UNSET),     # Slurm without a GPU
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c05"}, C),       # unique UUID prefix
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c0"}, UNSET),    # ambiguous prefix
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "GPU-deadbeef"}, UNSET),   # no such UUID
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "MIG-GPU-5c3f4c00-1a2b/1/0"}, C),
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "0,9,1"}, C),             # the list ends at 9: device 0 stays
    ("dgx", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "9,0"}, UNSET),            # ends before its first entry: none
    ("dgx", {**ALWAYS, "NVIDIA_VISIBLE_DEVICES": "none"}, C),             # ignored: CUDA does not read it
    ("container-one-of-eight", {**ALWAYS}, C),
    ("container-one-of-eight", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "0"}, C),
    ("container-one-of-eight", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "3"}, UNSET),  # the container has 1 GPU
    ("container-one-of-eight", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c03"}, C),
    ("container-one-of-eight", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "GPU-5c3f4c00"}, UNSET),  # not its GPU
    ("nvidia-vfio", {**ALWAYS}, UNSET),                                 # sysfs alone never counts
    ("intel-max-i915", {**ALWAYS}, Z),
    ("intel-max-i915", {**ALWAYS, "ZE_AFFINITY_MASK": ""}, Z),            # empty = all
    ("intel-max-i915", {**ALWAYS, "ZE_AFFINITY_MASK": "0.1"}, Z),
    ("intel-max-i915", {**ALWAYS, "ZE_AFFINITY_MASK": "bogus"}, UNSET),
    ("intel-max-i915", {**ALWAYS, "CUDA_VISIBLE_DEVICES": ""}, Z),        # CUDA's variable: not Intel's
    ("intel-xe", {**ALWAYS}, Z),
    ("mi300x", {**ALWAYS}, R),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": ""}, UNSET),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "-1"}, UNSET),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "7"}, R),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "8"}, UNSET),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, UNSET),
    ("mi300x", {**ALWAYS, "HIP_VISIBLE_DEVICES": "3"}, R),
    ("mi300x", {**ALWAYS, "CUDA_VISIBLE_DEVICES": ""}, UNSET),            # HIP reads CUDA's when its own is unset
    ("mi300x", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "0"}, R),
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "GPU-505ff276f021952c"}, R),  # unique_id 5791614238470542636 in hex
    ("mi300x", {**ALWAYS, "ROCR_VISIBLE_DEVICES": "GPU-ffff"}, UNSET),
    ("hybrid-laptop", {}, ALL),                                 # GPUs, no RDMA: UCX's default, written
    ("hybrid-laptop", {"UCXTLS_TEMPLATE": "tcp,{copy}"}, "tcp,cuda_copy"),  # NVIDIA beats the iGPU
    ("hybrid-laptop", {"UCXTLS_TEMPLATE": "tcp,{copy}", "CUDA_VISIBLE_DEVICES": ""}, "tcp,ze_copy"),
    ("gaudi", {**ALWAYS}, UNSET),                                       # habanalabs is not ze
    ("no-gpu", {}, UNSET),                                      # a CPU node on InfiniBand: MPI keeps sm, self
    ("no-rdma", {}, ALL),                                       # a TCP-only GPU node
    ("no-rdma", {"UCXTLS_TEMPLATE": "tcp,{copy}"}, "tcp,cuda_copy"),
    ("rdma-sysfs-only", {}, ALL),
    ("broken", {**ALWAYS}, UNSET),
    ("dgx-excluded", {**ALWAYS}, UNSET),
    ("masked-proc", {**ALWAYS}, C),
    ("masked-proc", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "1"}, C),
    ("masked-proc", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "2"}, UNSET),
    ("nvidia-and-amd", {**ALWAYS}, C),
    ("nvidia-and-amd", {**ALWAYS, "CUDA_VISIBLE_DEVICES": ""}, UNSET),    # hides NVIDIA and (via HIP) AMD
    ("nvidia-and-amd", {**ALWAYS, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "0"}, R),
    ("amd-and-intel", {**ALWAYS}, R),
    ("amd-and-intel", {**ALWAYS, "ROCR_VISIBLE_DEVICES": ""}, Z),
    ("empty", {}, UNSET),
    ("empty", {"UCXTLS_TEMPLATE": "tcp,{copy}"}, "tcp"),
    # RDMA as UCX's rc transport sees it: the default value only where rc can run
    ("aws-p5", {}, ALL),                                        # EFA has no RC: all, not the trainer's rc list
    ("aws-p5", {"UCXTLS_TEMPLATE": "{rdma},tcp,{copy}"}, "tcp,cuda_copy"),  # a user template as written
    ("aws-p6-b200", {**ALWAYS}, C),                                     # EFA first, then a ConnectX
    ("iwarp", {}, ALL),                                         # cxgb4, irdma in iWARP mode
    ("siw", {}, ALL),
    ("connectx-down", {}, ALL),                                 # every port DOWN
    ("connectx-init", {}, ALL),                                 # no subnet manager
    ("roce-down", {}, ALL),                                     # 64 Broadcom functions, every port DOWN
    ("connectx-two-port", {**ALWAYS}, Z),                               # port 2 ACTIVE
    ("broadcom-roce", {**ALWAYS}, "rc,cuda_copy"),                      # rc_verbs only: no mlx5 transports
    ("broadcom-then-connectx", {**ALWAYS}, C),                          # the second device, a ConnectX, decides
    ("rxe", {**ALWAYS}, "rc,ze_copy"),
    ("omnipath", {**ALWAYS}, "rc,rocm_copy"),
    ("container-efa-and-mlx5", {**ALWAYS}, C),                          # its one node is a ConnectX
    # RoCE ports by their GIDs (UCX's GID selection: shim/probe_rdma.cc check_roce)
    ("roce-connectx", {}, UNSET),                               # GIDs on its net device, here: rc runs
    ("roce-connectx", {**ALWAYS}, C),
    ("roce-zero-gids", {}, "^ib"),                              # no GID: rc_gda (UCX 1.21+, in all) fails there
    ("roce-zero-gids", {**ALWAYS}, "^ib"),
    ("roce-zero-gids", {"UCXTLS_ACCEL": "rocm"}, ALL),          # rc_gda lists CUDA GPUs alone
    ("roce-gid-less-beside-ib", {}, UNSET),                     # rc runs: nothing written, explain names mlx5_4
    # UCX_IB_GID_INDEX names the GID UCX's port check tests (0 for auto): a pod's macvlan GIDs are 4-7
    ("roce-macvlan-pod", {}, ALL),                              # auto: GID 0 zero, not listed; rc_gda finds 4-7
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "auto"}, ALL),
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "AUTO"}, ALL),
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "5"}, UNSET),     # net1's GID: rc runs
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "7", **ALWAYS}, C),
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "3"}, "^ib"),     # zero: not listed, and rc_gda fails on it
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "300"}, "^ib"),   # past the table
    ("roce-macvlan-pod", {"UCX_IB_GID_INDEX": "x"}, UNSET),     # could not tell which GID: nothing written
    ("roce-connectx", {"UCX_IB_GID_INDEX": "3"}, UNSET),
    ("roce-connectx", {"UCX_IB_GID_INDEX": "9"}, "^ib"),
    ("roce-bond-elsewhere", {}, "^ib"),                         # bond0 not here: UCX cannot open the port
    ("roce-bond-elsewhere", {**ALWAYS}, "^ib"),
    ("roce-bond-elsewhere", {"UCXTLS_ACCEL": "rocm"}, ALL),     # AMD and Intel: the default reads no network
    ("roce-bond-elsewhere", {**ALWAYS, "UCXTLS_ACCEL": "ze"}, "^ib"),
    ("roce-bond-elsewhere", {"UCXTLS_TEMPLATE": "{rdma},tcp,{copy}"}, "tcp,cuda_copy"),  # a user template as written
    ("roce-bond-elsewhere", {"UCXTLS_ACCEL": "none"}, UNSET),   # no GPU: nothing to fix
    ("kfd-without-topology", {**ALWAYS}, Z),                            # no KFD topology: no ROCm GPU
    ("container-one-of-eight", {"UCXTLS_TEMPLATE": "{rdma},{copy}"}, C),
    # The portable intra-node template: {ipc} is cuda_ipc / rocm_ipc, nothing on Intel
    ("dgx", {"UCXTLS_TEMPLATE": PORTABLE}, "rc_x,rc,dc_x,dc,sm,self,cuda_ipc,cuda_copy"),
    ("mi300x", {"UCXTLS_TEMPLATE": PORTABLE}, "rc_x,rc,dc_x,dc,sm,self,rocm_ipc,rocm_copy"),
    ("intel-xe", {"UCXTLS_TEMPLATE": PORTABLE}, "rc_x,rc,dc_x,dc,sm,self,ze_copy"),
    ("broadcom-roce", {"UCXTLS_TEMPLATE": PORTABLE}, "rc,sm,self,cuda_ipc,cuda_copy"),
    ("hybrid-laptop", {"UCXTLS_TEMPLATE": PORTABLE}, "sm,self,cuda_ipc,cuda_copy"),
    ("aws-p5", {"UCXTLS_TEMPLATE": PORTABLE}, "sm,self,cuda_ipc,cuda_copy"),
    # Forcing a family, disabling, templates
    ("dgx", {**ALWAYS, "UCXTLS_ACCEL": "ze"}, Z),
    ("dgx", {"UCXTLS_ACCEL": "none"}, UNSET),                  # told it has no GPU: what a CPU node gets
    ("intel-xe", {"UCXTLS_ACCEL": "none"}, UNSET),
    ("dgx", {**ALWAYS, "UCXTLS_ACCEL": "none"}, NONE),         # composed on request: {rdma}
    ("no-gpu", {**ALWAYS, "UCXTLS_ACCEL": "rocm"}, R),
    ("dgx", {**ALWAYS, "UCXTLS_ACCEL": "auto"}, C),
    ("no-rdma", {"UCXTLS_ACCEL": "cuda"}, ALL),                 # forcing a family keeps the RDMA rule
    ("no-gpu", {"UCXTLS_ACCEL": "none"}, UNSET),                # MPI keeps sm, self
    ("no-gpu", {**ALWAYS, "UCXTLS_ACCEL": "none"}, NONE),       # the template without {copy}
    ("no-rdma", {**ALWAYS, "UCXTLS_ACCEL": "none"}, UNSET),     # none and no RDMA: an empty value is never written
    ("aws-p5", {"UCXTLS_ACCEL": "ze"}, ALL),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "1"}, UNSET),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "0"}, C),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": ""}, C),
    # The toggles' boolean words, any case (as UCX reads its own: ucs_config_sscanf_bool, _on_off)
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "false"}, C),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "No"}, C),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "OFF"}, C),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "TRUE"}, UNSET),
    ("dgx", {**ALWAYS, "UCXTLS_DISABLE": "y"}, UNSET),
    ("intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "false"}, C),
    ("intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "n"}, C),
    ("intel-xe", {"UCX_TLS": "^cuda_ipc,cuda_copy", "UCXTLS_REPAIR": "1"}, "^cuda_ipc,cuda_copy"),  # a deny list stands
    ("dgx", {"UCXTLS_TEMPLATE": "{copy},rc"}, "cuda_copy,rc"),
    ("dgx", {"UCXTLS_TEMPLATE": "rc,{copy},tcp"}, "rc,cuda_copy,tcp"),
    ("no-gpu", {"UCXTLS_TEMPLATE": "rc,{copy},tcp"}, "rc,tcp"),
    ("no-gpu", {"UCXTLS_TEMPLATE": "{copy}"}, UNSET),           # an empty result is never written
    ("dgx", {"UCXTLS_TEMPLATE": "^cuda_ipc"}, "^cuda_ipc"),
    # The default (UCXTLS_WRITE unset): all where a hard-coded rc_x,rc,dc_x,dc,cuda_copy would be
    # wrong for the node (other GPUs than NVIDIA's, or no rc device), nothing elsewhere
    ("dgx", {}, UNSET),                                         # NVIDIA and rc: UCX's default stands
    ("dgx", {"UCXTLS_WRITE": "needed"}, UNSET),
    ("dgx", {"CUDA_VISIBLE_DEVICES": "7"}, UNSET),
    ("dgx", {"UCXTLS_ACCEL": "cuda"}, UNSET),
    ("dgx", {"UCXTLS_ACCEL": "ze"}, ALL),                       # told its GPUs are Intel's: all
    ("container-one-of-eight", {}, UNSET),
    ("container-efa-and-mlx5", {}, UNSET),
    ("masked-proc", {}, UNSET),
    ("aws-p6-b200", {}, UNSET),
    ("broadcom-roce", {}, UNSET),                               # rc_verbs: the CUDA list runs
    ("nvidia-and-amd", {}, UNSET),
    ("nvidia-and-amd", {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "0"}, ALL),
    ("intel-xe", {}, ALL),                                      # ze GPUs: all whatever the network
    ("intel-max-i915", {}, ALL),
    ("intel-max-i915", {"ZE_AFFINITY_MASK": "bogus"}, UNSET),   # no visible GPU: nothing to fix
    ("mi300x", {}, ALL),
    ("mi300x", {"ROCR_VISIBLE_DEVICES": "7"}, ALL),
    ("mi300x", {"ROCR_VISIBLE_DEVICES": ""}, UNSET),
    ("amd-and-intel", {}, ALL),
    ("connectx-two-port", {}, ALL),
    ("rxe", {}, ALL),
    ("omnipath", {}, ALL),
    ("kfd-without-topology", {}, ALL),
    ("no-gpu", {"UCXTLS_ACCEL": "rocm"}, ALL),
    ("intel-xe", {"UCXTLS_DISABLE": "1"}, UNSET),
    ("intel-xe", {"UCXTLS_DISABLE": "false"}, ALL),
    ("nvidia-vfio", {}, UNSET),
    # The user's own value always stands
    ("dgx", {"UCX_TLS": "tcp"}, "tcp"),
    ("dgx", {"UCX_TLS": ""}, ""),
    ("intel-xe", {"UCX_TLS": "rc_x,rc,dc_x,dc,cuda_copy"}, "rc_x,rc,dc_x,dc,cuda_copy"),
]


def label_of(machine, extra):
    """A row's name: the machine and the variables set (the case name, and the check names)."""
    return "%s %s" % (machine, " ".join("%s=%r" % kv for kv in extra.items()) or "(defaults)")


def row(t, machine, extra, want):
    tls, derived, err = sh_value(env_for(machine, **extra))
    label = label_of(machine, extra)
    t.equal(label, tls, want, "stderr: " + err)
    if want not in (UNSET,) and "UCX_TLS" not in extra:
        t.equal(label + ": UCXTLS_DERIVED marks the value", derived, want)
    t.equal(label + ": stderr silent without UCXTLS_DEBUG", err, "")


for _machine, _extra, _want in ROWS:
    add_case(label_of(_machine, _extra), row, _machine, _extra, _want)


# Invalid settings: one line on stderr naming the variable; nothing written.
def invalid(t, var, value):
    tls, derived, err = sh_value(env_for("intel-xe", **{var: value}))  # valid, it would write all
    t.equal("invalid %s=%r leaves UCX_TLS unset" % (var, value), tls, UNSET)
    lines = err.splitlines()
    t.check("invalid %s=%r: one stderr line naming it" % (var, value),
            len(lines) == 1 and lines[0].startswith("ucxtls: " + var + "="), repr(err))


for _var, _value in [("UCXTLS_ACCEL", "foo"), ("UCXTLS_TEMPLATE", "rc, {copy}"), ("UCXTLS_TEMPLATE", "all,{copy}"),
                     ("UCXTLS_PROBE", "nvml"), ("UCXTLS_TEMPLATE", "rc,,tcp"), ("UCXTLS_DISABLE", "maybe"),
                     ("UCXTLS_DISABLE", "00"), ("UCXTLS_REPAIR", "always"), ("UCXTLS_DEBUG", "2"),
                     ("UCXTLS_WRITE", "bogus"), ("UCXTLS_WRITE", "Always")]:
    add_case("invalid %s=%r" % (_var, _value), invalid, _var, _value)


@case("UCXTLS_ACCEL=none removes an inherited value of ours: UCX_TLS and UCXTLS_DERIVED unset")
def accel_none_inherited(t):
    for machine in ("dgx", "intel-xe"):
        tls, derived, err = sh_value(env_for(machine, UCX_TLS=C, UCXTLS_DERIVED=C, UCXTLS_ACCEL="none"))
        t.equal("%s: an inherited %s with UCXTLS_ACCEL=none" % (machine, C), (tls, derived, err), (UNSET, UNSET, ""))


@case("UCXTLS_REPAIR takes boolean words in any case: Yes, TRUE, on repair")
def repair_words(t):
    for word in ("Yes", "TRUE", "on"):
        tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_REPAIR=word))
        t.equal("intel-xe UCX_TLS=%s UCXTLS_REPAIR=%s: repaired, no marker" % (C, word), (tls, derived, err), (Z, UNSET, ""))


@case("UCXTLS_DEBUG takes boolean words: off and No print nothing, ON prints the line")
def debug_words(t):
    for word, lines in (("off", 0), ("No", 0), ("ON", 1)):
        tls, _, err = sh_value(env_for("intel-xe", UCXTLS_DEBUG=word))
        t.equal("intel-xe UCXTLS_DEBUG=%s: set, %d stderr line(s)" % (word, lines), (tls, err.count("\n")), (ALL, lines), err)


@case("a Broadcom function first, a ConnectX second: the ConnectX decides, and the debug line names it")
def broadcom_then_connectx(t):
    tls, _, err = sh_value(env_for("broadcom-then-connectx", UCXTLS_DEBUG="1", **ALWAYS))
    t.equal("broadcom-then-connectx: the mlx5 list (UCXTLS_WRITE=always)", tls, C, err)
    t.check("broadcom-then-connectx: the debug line names the ConnectX that decided, and the other",
            "rdma: mlx5_1 (mlx5_core): port 1 ACTIVE, uverbs1 and 1 more" in err, err)


@case("several HCAs, the ConnectX on uverbs3 not readable and writable by the process: it does not count")
def uverbs3_closed(t):
    # Each device's own node is checked (UCX's uct_ib_device_is_accessible opens that one), not
    # uverbs0's: here uverbs0..2 are EFA devices whose nodes anyone may open.
    if os.geteuid() != 0:
        t.skip("a node the process cannot open", "needs root, to run the process as uid 65534")
        return
    if skip_closed_to_others(t, "a node the process cannot open", LIB):
        return
    import machines
    top = tempfile.mkdtemp(prefix="ucxtls-uverbs3-")
    try:
        os.chmod(top, 0o755)
        for mode in (0o600, 0o666):
            root = os.path.join(top, "m%o" % mode)
            m = machines.Tree(root)
            m.common()
            m.nvidia_driver()
            m.nvidia_gpus(1)
            m.efas(3)
            m.hca(3, machines.HCA_BUSES[0])
            os.chmod(os.path.join(root, "dev/infiniband/uverbs3"), mode)
            env = dict(env_for(None, UCXTLS_DEBUG="1", **ALWAYS), UCXTLS_SYSROOT=root)
            p = subprocess.run(["/bin/sh", "-c", SHOW_TLS], env=env, cwd="/", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                               preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
            if mode == 0o600:
                t.check("uverbs3 0600 (root's), the process uid 65534: no rc device, %s" % ALL, p.stdout == ALL,
                        p.stdout + p.stderr)
            else:
                t.check("control, uverbs3 0666: the ConnectX counts (%s)" % C, p.stdout == C, p.stdout + p.stderr)
    finally:
        shutil.rmtree(top, True)


SHOW_TLS = 'printf "%s" "${UCX_TLS-<unset>}"'


@case("an invalid toggle's line names the boolean words it takes")
def invalid_toggle_words(t):
    for var in ("UCXTLS_DISABLE", "UCXTLS_REPAIR", "UCXTLS_DEBUG"):
        _, _, err = sh_value(env_for("dgx", **{var: "maybe"}))
        t.check("%s=maybe: the line names y, yes, on, 1, true and n, no, off, 0, false" % var,
                err.count("\n") == 1 and var in err and
                "y, yes, on, 1, true; n, no, off, 0, false; any case" in err, repr(err))


@case("an invalid setting beside a kept UCX_TLS: the value stands, unrepaired, and one line names the variable")
def invalid_beside_kept(t):
    # UCXTLS_REPAIR=enable matters only where UCX_TLS is kept: silence would leave the user's CUDA
    # list on an Intel node without a word (bad input: one line naming the variable).
    for machine, extra in [("dgx", {"UCX_TLS": "tcp", "UCXTLS_ACCEL": "bogus"}),
                           ("intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "enable"}),
                           ("intel-xe", {"UCX_TLS": C, "UCXTLS_DISABLE": "maybe"})]:
        tls, derived, err = sh_value(env_for(machine, **extra))
        var = [k for k in extra if k != "UCX_TLS"][0]
        t.equal(label_of(machine, extra) + ": the value stands as written", (tls, derived), (extra["UCX_TLS"], UNSET), err)
        t.check(label_of(machine, extra) + ": one stderr line naming %s" % var,
                err.count("\n") == 1 and err.startswith("ucxtls: %s=" % var) and "UCX_TLS left unchanged" in err, repr(err))


@case("a bad UCXTLS_PROBE_TIMEOUT_MS is the command's business, not the library's")
def timeout_is_the_commands(t):
    # It bounds `ucxtls probe` alone (the library never runs the helper): the library carries on,
    # naming it in one line as any invalid setting, and `ucxtls probe` refuses it (tests/driver).
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_PROBE_TIMEOUT_MS="5s"))
    t.equal("UCXTLS_PROBE_TIMEOUT_MS=5s: the library still sets UCX_TLS, and names it in one line", (tls, err),
            (ALL, 'ucxtls: UCXTLS_PROBE_TIMEOUT_MS="5s" is not a whole number of milliseconds from 1 to 600000; '
                  "ignored here (only `ucxtls probe` reads it)\n"))


@case("a relative UCXTLS_CACHE_DIR is the driver tier's business, not the kernel tier's")
def cache_dir_is_the_driver_tiers(t):
    # Only the driver tier (and `ucxtls probe --save`, tests/driver) reads it: the library names it
    # in one line and carries on; with the driver tier no saved answer is read, so the kernel probe
    # answers, as for every other driver-tier failure.
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_CACHE_DIR="relative/dir"))
    t.equal("UCXTLS_CACHE_DIR=relative/dir, kernel tier: the library still sets UCX_TLS, and names it in one line",
            (tls, err), (ALL, 'ucxtls: UCXTLS_CACHE_DIR="relative/dir" is not an absolute path; ignored\n'))
    tls, derived, err = sh_value(env_for("intel-xe", UCXTLS_CACHE_DIR="relative/dir", UCXTLS_PROBE="driver"))
    t.equal("UCXTLS_CACHE_DIR=relative/dir, driver tier: the kernel probe's value and one line naming it",
            (tls, err), (ALL, 'ucxtls: UCXTLS_CACHE_DIR="relative/dir" is not an absolute path; no saved driver answer '
                            "is read: the kernel probe answers\n"))


@case("invalid setting with a value inherited from another node")
def invalid_inherited(t):
    # An invalid setting where the value was inherited from another node: the stale value goes.
    tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_DERIVED=C, UCXTLS_ACCEL="bad"))
    t.equal("invalid setting with a value inherited from a CUDA node: both variables removed", (tls, derived), (UNSET, UNSET), err)
    t.check("... and one stderr line naming UCXTLS_ACCEL", err.count("\n") == 1 and err.startswith("ucxtls: UCXTLS_ACCEL="), repr(err))


# A sysroot that does not exist (or is relative) is an error, not an empty machine.
def bad_sysroot(t, root):
    tls, _, err = sh_value(env_for(None, UCXTLS_SYSROOT=root))
    t.check("UCXTLS_SYSROOT=%s: UCX_TLS unset and one line naming UCXTLS_SYSROOT" % root,
            tls == UNSET and err.count("\n") == 1 and err.startswith("ucxtls: UCXTLS_SYSROOT="), repr(err))


for _root in ("/nonexistent/ucxtls-machine", "relative/dir", "/etc/hostname"):
    add_case("invalid UCXTLS_SYSROOT=%s" % _root, bad_sysroot, _root)


@case("debug line names the replayed sysroot")
def debug_sysroot(t):
    _, _, err = sh_value(env_for("dgx", UCXTLS_DEBUG="1"))
    t.check("the debug line names the replayed sysroot", "UCXTLS_SYSROOT=" in err and "a replayed machine" in err, err)


# Why the value is all, or why UCX_TLS stays unset, in a user's words.
def says_why(t, machine, action, words):
    # On AMD and Intel nodes the default writes all without reading the network: UCXTLS_WRITE=always
    # reads it, for the RDMA rows.
    rdma_words = action == "set UCX_TLS=all" and "FAMILY" not in words
    extra = ALWAYS if rdma_words and machine in ("connectx-init", "iwarp") else {}
    _, _, err = sh_value(env_for(machine, UCXTLS_DEBUG="1", **extra))
    words = words.replace("FAMILY", machine == "mi300x" and "rocm" or "ze")
    t.check("UCXTLS_DEBUG=1 on %s says why: %r" % (machine, words),
            err.count("\n") == 1 and err.startswith("ucxtls: " + action) and words in err, err)


for _machine, _action, _words in [
        ("aws-p5", "set UCX_TLS=all", "EFA has no RC transport"),
        ("connectx-down", "set UCX_TLS=all", "every port is DOWN"),
        ("connectx-init", "set UCX_TLS=all", "INIT"),
        ("iwarp", "set UCX_TLS=all", "iWARP"),
        ("no-rdma", "set UCX_TLS=all", "no /dev/infiniband/uverbs* node"),
        ("no-rdma", "set UCX_TLS=all", "a hard-coded rc list cannot break this node"),
        ("no-gpu", "skip (UCX_TLS stays unset)", "no GPU family found"),
        ("dgx", "skip (UCX_TLS stays unset)", "NVIDIA GPUs and an rc device: UCX's own default stands (all), and a "
         "hard-coded rc_x,rc,dc_x,dc,cuda_copy fits this node"),
        ("broadcom-roce", "skip (UCX_TLS stays unset)", "UCX's own default stands"),
        ("intel-xe", "set UCX_TLS=all", "all (UCX's own default, with FAMILY's copy transport), so a hard-coded "
         "rc_x,rc,dc_x,dc,cuda_copy cannot displace it"),
        ("mi300x", "set UCX_TLS=all", "all (UCX's own default, with FAMILY's copy transport)")]:
    add_case("debug line on %s says why: %s" % (_machine, _words), says_why, _machine, _action, _words)


# UCXTLS_DEBUG: exactly one line with the action and the reasons.
def debug_line(t, machine, extra, action):
    _, _, err = sh_value(env_for(machine, UCXTLS_DEBUG="1", **extra))
    lines = err.splitlines()
    t.check("UCXTLS_DEBUG=1 on %s %s: one line, '%s'" % (machine, extra, action),
            len(lines) == 1 and lines[0].startswith("ucxtls: " + action), repr(err))


for _machine, _extra, _action in [("dgx", ALWAYS, "set UCX_TLS=" + C), ("dgx", {}, "skip"),
                                  ("intel-xe", {}, "set UCX_TLS=all"), ("no-rdma", {}, "set UCX_TLS=all"), ("no-gpu", {}, "skip"),
                                  ("dgx", {"UCX_TLS": "tcp"}, "keep"), ("dgx", {"UCXTLS_DISABLE": "1"}, "skip")]:
    add_case("debug line: %s: one line, '%s'" % (label_of(_machine, _extra), _action.split("=")[0]), debug_line,
             _machine, _extra, _action)


# ucx.conf in each place UCX reads it: UCX_TLS stays unset so that UCX reads the file.
def ucx_conf(t, label):
    with tempfile.TemporaryDirectory() as d:
        conf_dir = os.path.join(d, "confdir")
        home = os.path.join(d, "home")
        cwd = os.path.join(d, "cwd")
        for p in (conf_dir, home, cwd):
            os.makedirs(p)
        root = os.path.join(d, "root")
        shutil.copytree(fixture("dgx"), root, symlinks=True)
        os.makedirs(os.path.join(root, "etc/ucx"))
        line = "[Grace Hopper]\nCPU model=Grace\nUCX_TLS=rc,cuda_copy\n"
        path, extra = {
            "/etc/ucx/ucx.conf (under UCXTLS_SYSROOT)": (os.path.join(root, "etc/ucx/ucx.conf"), {}),
            "$HOME/ucx.conf": (os.path.join(home, "ucx.conf"), {"HOME": home}),
            "$UCX_CONFIG_DIR/ucx.conf": (os.path.join(conf_dir, "ucx.conf"), {"UCX_CONFIG_DIR": conf_dir}),
            "./ucx.conf": (os.path.join(cwd, "ucx.conf"), {}),
        }[label]
        with open(path, "w") as f:
            f.write(line)
        env = env_for(None, UCXTLS_SYSROOT=root, **ALWAYS, **extra)  # the template written on this dgx
        tls, _, err = sh_value(env, cwd=cwd)
        t.equal("ucx.conf at %s assigning UCX_TLS: left unset" % label, tls, UNSET, err)
        with open(path, "w") as f:
            f.write("# UCX_TLS=rc\nUCX_TLS_EXTRA=1\nUCX_IB_GPU_DIRECT_RDMA=y\n")
        tls, _, err = sh_value(env, cwd=cwd)
        t.equal("ucx.conf at %s without a UCX_TLS line: value set" % label, tls, C, err)


for _label in ("/etc/ucx/ucx.conf (under UCXTLS_SYSROOT)", "$HOME/ucx.conf", "$UCX_CONFIG_DIR/ucx.conf", "./ucx.conf"):
    add_case("ucx.conf at " + _label, ucx_conf, _label)


@case("strace: a ./ucx.conf that links to a device or a procfs stream is never opened", tags=("strace",))
def ucx_conf_links(t):
    # A ./ucx.conf that is a link to a device or a procfs stream is never opened: opening /dev/ptmx
    # allocates a pty in the host, reading /proc/kmsg takes the kernel log from its reader.
    if not have("strace"):
        t.skip("./ucx.conf -> /dev/ptmx is never opened", "strace not installed (scripts/test.sh installs it)")
        return
    with tempfile.TemporaryDirectory() as cwd:
        for target in ("/dev/ptmx", "/proc/kmsg", "/dev/zero"):
            link = os.path.join(cwd, "ucx.conf")
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
            p = run(["strace", "-f", "-e", "trace=openat,open", "/bin/true"], env_for("dgx", **ALWAYS), cwd=cwd)
            trace = p.stderr.decode()
            # O_PATH names the file without opening it (no driver's open runs); anything else is an open.
            looked = [l for l in trace.splitlines() if "ucx.conf" in l or target in l]
            opened = [l for l in looked if "O_PATH" not in l]
            t.check("./ucx.conf -> %s: never opened (strace: O_PATH only), the value still written" % target,
                    p.returncode == 0 and looked and not opened and sh_value(env_for("dgx", **ALWAYS), cwd=cwd)[0] == C,
                    "\n".join(looked))


# UCX_IB_GID_INDEX in a ucx.conf, read as UCX reads it: the environment first, then the files in
# UCX's order, a later one overriding an earlier one; a value in a [section] cannot be told.
def gid_index_conf(t, label, files, env, want, words):
    with tempfile.TemporaryDirectory() as d:
        home = os.path.join(d, "home")
        os.makedirs(home)
        root = os.path.join(d, "root")
        shutil.copytree(fixture("roce-macvlan-pod"), root, symlinks=True)
        os.makedirs(os.path.join(root, "etc/ucx"))
        for where, text in files:
            with open(os.path.join(root, "etc/ucx/ucx.conf") if where == "etc" else os.path.join(home, "ucx.conf"), "w") as f:
                f.write(text)
        tls, _, err = sh_value(env_for(None, UCXTLS_SYSROOT=root, HOME=home, UCXTLS_DEBUG="1", **env), cwd=d)
        t.equal(label, tls, want, err)
        t.check(label + ": the debug line says %r" % words, words in err, err)


for _label, _files, _env, _want, _words in [
        ("/etc/ucx/ucx.conf UCX_IB_GID_INDEX=5: rc runs", [("etc", "UCX_IB_GID_INDEX = 5\n")], {}, UNSET, "NVIDIA GPUs and an rc device"),
        ("$HOME/ucx.conf overrides /etc/ucx/ucx.conf", [("etc", "UCX_IB_GID_INDEX=5\n"), ("home", "UCX_IB_GID_INDEX=3\n")], {},
         "^ib", 'GID 3 (UCX_IB_GID_INDEX="3" of ' ),
        ("the environment overrides the files", [("etc", "UCX_IB_GID_INDEX=3\n")], {"UCX_IB_GID_INDEX": "5"}, UNSET,
         "NVIDIA GPUs and an rc device"),
        ("a value in a [section]: could not tell", [("etc", "[Grace]\nCPU model=Grace\nUCX_IB_GID_INDEX=5\n")], {}, UNSET,
         "could not tell which GID UCX tests"),
        ("the environment's value that is not a number: could not tell", [], {"UCX_IB_GID_INDEX": "x"}, UNSET,
         'could not tell which GID UCX tests: UCX_IB_GID_INDEX="x" is not a number or auto'),
]:
    add_case("UCX_IB_GID_INDEX: " + _label, gid_index_conf, _label, _files, _env, _want, _words)


@case("machines.py --list: each machine's whole description on its line")
def machines_list(t):
    import subprocess
    import sys
    import machines
    p = subprocess.run([sys.executable, machines.__file__, "--list"], stdout=subprocess.PIPE, check=True)
    lines = dict(line.split(None, 1) for line in p.stdout.decode().splitlines())
    t.equal("one line per machine", sorted(lines), sorted(machines.MACHINES))
    multi = [n for n, m in machines.MACHINES.items() if len((m.__doc__ or "").strip().splitlines()) > 1]
    t.check("some descriptions span several lines (%d)" % len(multi), multi)
    for name in multi:
        last = machines.MACHINES[name].__doc__.strip().splitlines()[-1].strip()
        t.check("%s: the listed line ends with its description's last line" % name, lines[name].rstrip().endswith(last),
                lines[name])


@case("a value exported to another node is derived again")
def across_nodes(t):
    # Across nodes: a value derived on an NVIDIA node (UCXTLS_WRITE=always writes it there), exported
    # to another node, is derived again there, by that node's UCXTLS_WRITE.
    tls, derived, _ = sh_value(env_for("dgx", **ALWAYS))
    t.equal("dgx, UCXTLS_WRITE=always: the CUDA list, marked", (tls, derived), (C, C))
    exported = {"UCX_TLS": tls, "UCXTLS_DERIVED": derived}
    t.equal("exported NVIDIA value re-derived on an Intel node, UCXTLS_WRITE=always",
            sh_value(env_for("intel-xe", **ALWAYS, **exported))[0], Z)
    t.equal("exported NVIDIA value re-derived on an Intel node, the default: all",
            sh_value(env_for("intel-xe", **exported))[:2], (ALL, ALL))
    t.equal("exported value re-derived on a GPU node without RDMA: all",
            sh_value(env_for("no-rdma", **exported))[:2], (ALL, ALL))
    t.equal("exported value re-derived on a CPU node: removed",
            sh_value(env_for("no-gpu", **exported))[:2], (UNSET, UNSET))
    t.equal("exported value on an NVIDIA node with rc, the default: removed (UCX's default stands)",
            sh_value(env_for("dgx", **exported))[:2], (UNSET, UNSET))
    t.equal("all exported from an EFA node, re-derived on a ConnectX node, UCXTLS_WRITE=always",
            sh_value(env_for("dgx", UCX_TLS=ALL, UCXTLS_DERIVED=ALL, **ALWAYS))[:2], (C, C))
    t.equal("all exported from an EFA node, re-derived on a ConnectX node, the default: removed",
            sh_value(env_for("dgx", UCX_TLS=ALL, UCXTLS_DERIVED=ALL))[:2], (UNSET, UNSET))
    t.equal("exported value on the same kind of node, UCXTLS_WRITE=always: unchanged",
            sh_value(env_for("dgx", **ALWAYS, **exported))[:2], (C, C))
    t.equal("a user value that differs from the marker is kept",
            sh_value(env_for("intel-xe", UCX_TLS="tcp", UCXTLS_DERIVED=C))[0], "tcp")


@case("a ucx.conf that assigns UCX_TLS beats all on a GPU node without RDMA")
def ucx_conf_beats_all(t):
    with tempfile.TemporaryDirectory() as home:
        with open(os.path.join(home, "ucx.conf"), "w") as f:
            f.write("[global]\nUCX_TLS=tcp,cuda_copy\n")
        t.equal("aws-p5 with $HOME/ucx.conf: UCX_TLS left for UCX to read",
                sh_value(env_for("aws-p5", HOME=home))[0], UNSET)
        t.equal("... and an inherited all of ours is removed",
                sh_value(env_for("aws-p5", HOME=home, UCX_TLS=ALL, UCXTLS_DERIVED=ALL))[:2], (UNSET, UNSET))


# A kept value of another family: named in the debug line; rewritten with UCXTLS_REPAIR=1. One
# without the node's copy transport: named; UCXTLS_REPAIR=1 appends it.
REPAIR_ROWS = [
    # machine, kept UCX_TLS, UCX_TLS the host sees with UCXTLS_REPAIR=1
    ("intel-xe", C, Z),
    ("mi300x", C, R),
    ("dgx", Z, C),
    ("intel-xe", "rc_x,rc,dc_x,dc,tcp,cuda_copy,cuda_ipc", "rc_x,rc,dc_x,dc,tcp,ze_copy"),  # no ze_ipc: removed
    ("mi300x", "sm,self,cuda,gdr_copy", "sm,self,rocm"),             # the alias; gdr_copy has no ROCm counterpart
    ("intel-xe", "tcp,\\cuda_copy", "tcp,\\ze_copy"),
    ("intel-xe", "^cuda_ipc", "^cuda_ipc"),                             # an exclusion list: left alone
    # No copy transport of the node's family at all: {copy} appended, nothing removed
    ("intel-xe", "rc,tcp", "rc,tcp,ze_copy"),
    ("dgx", "tcp", "tcp,cuda_copy"),                                    # Slurm's UCX_TLS=tcp on an NVIDIA node
    ("mi300x", "sm,self,tcp", "sm,self,tcp,rocm_copy"),
    ("dgx", "sm,self,tcp,cuda_ipc", "sm,self,tcp,cuda_ipc,cuda_copy"),
    ("dgx", "^cuda_copy", "^cuda_copy"),                                # a deny list: named, never repaired
    ("dgx", "tcp,cuda", "tcp,cuda"),                                    # the alias holds it
    ("no-gpu", "tcp", "tcp"),                                           # no GPU: nothing to carry
    ("intel-xe", "cuda_copy,ze_copy", "cuda_copy,ze_copy"),             # this node's is there: left alone
    ("no-gpu", C, C),                                                   # no known family here: left alone
    ("intel-xe", "cuda_ipc", "cuda_ipc"),                               # nothing would remain: kept
]


def repair_row(t, machine, kept, want):
    label = "%s UCX_TLS=%s" % (machine, kept)
    tls, derived, err = sh_value(env_for(machine, UCX_TLS=kept, UCXTLS_REPAIR="1"))
    t.equal(label + " UCXTLS_REPAIR=1", tls, want, err)
    t.equal(label + ": no UCXTLS_DERIVED (a child on another node repairs again)", derived, UNSET)
    t.equal(label + ": silent without UCXTLS_DEBUG", err, "")
    again, _, _ = sh_value(env_for(machine, UCX_TLS=tls, UCXTLS_REPAIR="1"))
    t.equal(label + ": repairing again changes nothing", again, tls)
    t.equal(label + ": without UCXTLS_REPAIR the value stands", sh_value(env_for(machine, UCX_TLS=kept))[0], kept)


for _machine, _kept, _want in REPAIR_ROWS:
    add_case("repair: %s UCX_TLS=%s" % (_machine, _kept), repair_row, _machine, _kept, _want)


@case("repair never adopts the marker: a stale UCXTLS_DERIVED equal to the repaired value goes")
def repair_drops_stale_marker(t):
    # A job exports the user's CUDA list beside a stale marker of ours that happens to equal what the
    # repair gives on an Intel node. Kept beside it, the next node would take the repaired value for
    # ours and re-derive it (the CUDA node would get the default list, not the user's).
    tls, derived, err = sh_value(env_for("intel-xe", UCX_TLS="rc,cuda_copy", UCXTLS_DERIVED="rc,ze_copy",
                                         UCXTLS_REPAIR="1"))
    t.equal("intel-xe: the user's rc,cuda_copy repaired to rc,ze_copy, the stale marker removed",
            (tls, derived, err), ("rc,ze_copy", UNSET, ""))
    exported = {"UCX_TLS": tls, "UCXTLS_REPAIR": "1"}
    if derived != UNSET:
        exported["UCXTLS_DERIVED"] = derived
    t.equal("the next node (dgx) repairs the user's value again, never re-derives it",
            sh_value(env_for("dgx", **exported))[:2], ("rc,cuda_copy", UNSET))
    _, _, err = sh_value(env_for("intel-xe", UCX_TLS="rc,cuda_copy", UCXTLS_DERIVED="tcp", UCXTLS_REPAIR="1",
                                 UCXTLS_DEBUG="1"))
    t.check("the debug line says the stale marker was removed", "UCXTLS_DERIVED (a stale marker) removed" in err, err)


@case("a kept value too long to repair is kept, with the true reason")
def repair_too_long(t):
    kept = "cuda_copy" + ",tcp" * 1100  # 4409 bytes: the repair would not fit in 4095
    tls, _, err = sh_value(env_for("intel-xe", UCX_TLS=kept, UCXTLS_REPAIR="1", UCXTLS_DEBUG="1"))
    t.equal("kept as it was", tls, kept)
    t.check("the debug line says it would be too long, not that nothing would remain",
            "would be longer than 4095 bytes, so it is kept" in err and "nothing would remain" not in err, err[-300:])


@case("a kept value of another family is named in the debug line, with the way out")
def mismatch_named(t):
    _, _, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_DEBUG="1"))
    t.check("the debug line names cuda_copy, this node's family and UCXTLS_REPAIR=1",
            err.startswith("ucxtls: keep") and "it names cuda_copy but this node's GPUs are ze" in err
            and "UCXTLS_REPAIR=1" in err and "unset UCX_TLS" in err and err.count("\n") == 1, err)
    _, _, err = sh_value(env_for("intel-xe", UCX_TLS=C, UCXTLS_DEBUG="1", UCXTLS_REPAIR="1"))
    t.check("with UCXTLS_REPAIR=1 it says repair and the new value",
            err.startswith("ucxtls: repair UCX_TLS=" + Z) and "rewritten" in err, err)
    _, _, err = sh_value(env_for("dgx", UCX_TLS=C, UCXTLS_DEBUG="1"))
    t.check("this node's own family: no mismatch named", "it names" not in err, err)


@case("a kept value without the node's copy transport is named in the debug line, with what it lacks")
def lacks_copy_named(t):
    for machine, kept, copy in (("dgx", "tcp", "cuda_copy"), ("intel-xe", "sm,self,tcp", "ze_copy"),
                                ("mi300x", "^rocm", "rocm_copy")):
        tls, _, err = sh_value(env_for(machine, UCX_TLS=kept, UCXTLS_DEBUG="1"))
        t.check("%s UCX_TLS=%s: kept, and the line says it lacks %s, NIXL's words and the way out" % (machine, kept, copy),
                tls == kept and err.startswith("ucxtls: keep") and copy in err
                and "VRAM memory is detected as host by UCX." in err and err.count("\n") == 1
                and ("take %s out of the ^ list" % copy if kept.startswith("^") else "UCXTLS_REPAIR=1 appends it") in err, err)
    _, _, err = sh_value(env_for("dgx", UCX_TLS="tcp,cuda_copy", UCXTLS_DEBUG="1"))
    t.check("dgx UCX_TLS=tcp,cuda_copy: nothing named", "VRAM" not in err and err.startswith("ucxtls: keep"), err)


if __name__ == "__main__":
    main("fixture machines through the real library in /bin/sh")
