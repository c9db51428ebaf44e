"""The fixture-machine table: a machine (tests/fixtures/machines.py), the variables a user or
launcher would set, and the UCX_TLS that /bin/sh must see (or <unset>). test_fixtures.py replays
each row through the library; tests/cli/test_cli.py checks that explain agrees on every row."""
from harness import ALL, ALWAYS, C, NONE, R, UNSET, Z

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
