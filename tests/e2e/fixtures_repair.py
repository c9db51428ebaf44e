"""test_fixtures.py's kept values: of another GPU family or without the node's copy transport
(named, repaired with UCXTLS_REPAIR=1), and values of ours derived again on another node."""
from harness import ALL, ALWAYS, C, R, UNSET, Z, add_case, case, env_for, sh_value


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
