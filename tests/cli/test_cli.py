#!/usr/bin/env python3
"""The `ucxtls` command in real processes: explain (text and JSON) agreeing with what the preloaded
library actually does in /bin/sh on every row of the fixture-machine table (tests/e2e/fixture_rows.py);
env, run, --help, --version and errors in cli_commands.py."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALWAYS, DEFAULT_ANSWER, Checks, add_case, case, env_for, include, main, sh_value  # noqa: E402
import fixture_rows  # noqa: E402  (its ROWS: the machine/variable table)
from fixture_rows import label_of  # noqa: E402
from command_common import CLI, STALE, cli  # noqa: E402

ACTIONS = {"set", "keep", "skip", "clear"}


FAMILIES = {"cuda", "rocm", "ze", "none"}


COPY = {"cuda": "cuda_copy", "rocm": "rocm_copy", "ze": "ze_copy"}


def explain_json(t, label, env):
    p = cli(["explain", "--json"], env)
    try:
        return json.loads(p.stdout.decode()), p
    except ValueError as e:
        t.check(label + ": explain --json parses", False, "%s\n%r\n%r" % (e, p.stdout, p.stderr))
        return None, p


def library_action(env):
    """(action, UCX_TLS) the real library produces in /bin/sh: its UCXTLS_DEBUG line names the
    action; an invalid setting's line names the variable instead (the library then skips)."""
    tls, _, err = sh_value(dict(env, UCXTLS_DEBUG="1"))
    m = re.match(r"ucxtls: (set|keep|skip|clear)\b", err)
    return (m.group(1) if m else "skip"), (None if tls == "<unset>" else tls), err


def shape_ok(j):
    return bool(isinstance(j, dict) and j.get("action") in ACTIONS and j.get("family") in FAMILIES
          and (j.get("value") is None or isinstance(j.get("value"), str))
          and isinstance(j.get("reasons"), list) and j["reasons"]
          and all(isinstance(r, str) and r for r in j["reasons"])
          and isinstance(j.get("family_decided"), bool)
          and set(j.get("evidence", {})) >= {"rdma", "ucx_conf", "cuda", "rocm", "ze"}
          and isinstance(j.get("variables"), dict) and isinstance(j.get("line"), str))


def check_shape(t, label, j):
    return t.check(label + ": JSON shape (action, value, family, reasons, evidence, variables)", shape_ok(j),
                   json.dumps(j, indent=1))


def start():
    t = Checks("the ucxtls command")
    if not os.access(CLI, os.X_OK):
        t.check("the command is built", False, CLI)
        t.exit()
    return t


# --- explain agrees with the library on every fixture row, plus re-derivation rows.
ROWS = [(machine, extra) for machine, extra, _ in fixture_rows.ROWS]


for _machine in ("dgx", "no-rdma", "intel-xe", "no-gpu"):
    _stale = "rc_x,rc,dc_x,dc,rocm_copy"  # written on another node
    ROWS.append((_machine, {"UCX_TLS": _stale, "UCXTLS_DERIVED": _stale}))
    ROWS.append((_machine, {"UCX_TLS": _stale, "UCXTLS_DERIVED": _stale, **ALWAYS}))
    ROWS.append((_machine, {"UCXTLS_ACCEL": "bogus"}))
    ROWS.append((_machine, {"UCXTLS_WRITE": "bogus"}))


_compared = {}


def compared(machine, extra):
    """(explain's JSON or None, its process, the library's action, UCX_TLS, stderr) for a row; each
    row runs once per process (the agreement case reuses what the row cases ran)."""
    key = (machine, tuple(sorted(extra.items())))
    if key not in _compared:
        env = env_for(machine, preload=False, **extra)
        p = cli(["explain", "--json"], env)
        try:
            j = json.loads(p.stdout.decode())
        except ValueError:
            j = None
        _compared[key] = (j, p) + library_action(env_for(machine, **extra))
    return _compared[key]


def explain_row(t, machine, extra):
    label = label_of(machine, extra)
    j, p, action, value, err = compared(machine, extra)
    if j is None:
        t.check(label + ": explain --json parses", False, "%r\n%r" % (p.stdout, p.stderr))
        return
    check_shape(t, label, j)
    t.equal(label + ": explain == library (action, UCX_TLS)", (j["action"], j["value"]),
            (action, value), "library: " + err + "\nexplain: " + j["line"])
    # family: the value is composed for it when decided; otherwise what the probe sees.
    if j["action"] == "set" and j["family_decided"] and j["family"] != "none":
        t.check(label + ": family's copy transport is in the value (all, ^ib: UCX's default has it)",
                j["value"] in ("all", "^ib") or COPY[j["family"]] in j["value"].split(","), json.dumps(j))
    # explain's "line" is the line the library itself prints (same probes, same counts), whole.
    lib_lines = [l for l in err.splitlines() if not l.startswith("ucxtls: unknown variable")]
    if lib_lines:
        t.equal(label + ": explain's library line is the library's own line, byte for byte", j["line"], lib_lines[-1])
    want_rc = 1 if j["error"] else 0
    t.equal(label + ": exit status", p.returncode, want_rc, p.stderr.decode())


for _machine, _extra in ROWS:
    add_case("explain == library: " + label_of(_machine, _extra), explain_row, _machine, _extra)


@case("explain == library on every row (the count)")
def explain_all_rows(t):
    results = [compared(machine, extra) for machine, extra in ROWS]
    shapes_ok = sum(1 for r in results if r[0] is not None and shape_ok(r[0]))
    agree = sum(1 for j, _, action, value, _ in results if j is not None and (j["action"], j["value"]) == (action, value))
    t.check("explain agreed with the library on all %d rows" % len(ROWS), agree == len(ROWS) == shapes_ok,
            "%d rows agree, %d have the JSON shape" % (agree, shapes_ok))


@case("explain: family when the decision did not need it")
def family_undecided(t):
    # family when the decision did not need it (UCX_TLS set by the user, no RDMA): the probe's.
    for machine, extra, fam in [("dgx", {"UCX_TLS": "tcp"}, "cuda"), ("intel-xe", {"UCX_TLS": "tcp"}, "ze"),
                                ("no-rdma", {"UCX_TLS": "tcp"}, "cuda"), ("hybrid-laptop", {"UCX_TLS": "tcp"}, "cuda"),
                                ("hybrid-laptop", {"CUDA_VISIBLE_DEVICES": "", "UCX_TLS": "tcp"}, "ze"),
                                ("dgx", {"UCXTLS_DISABLE": "1"}, "cuda"), ("dgx", {"UCXTLS_ACCEL": "rocm", "UCX_TLS": "x"}, "rocm"),
                                ("no-gpu", {"UCX_TLS": "tcp"}, "none")]:
        j, _ = explain_json(t, machine, env_for(machine, preload=False, **extra))
        if j:
            t.equal("%s %s: family %s shown, family_decided false" % (machine, extra, fam),
                    (j["family"], j["family_decided"]), (fam, False))


@case("explain: evidence of every family, and a visibility variable applied")
def evidence(t):
    # Evidence: every family listed, exhaustively (the library stops at the first GPU).
    j, _ = explain_json(t, "dgx", env_for("dgx", preload=False))
    if j:
        ev = j["evidence"]
        t.check("dgx evidence: 8 CUDA GPUs counted, rocm and ze probed too",
                ev["cuda"]["present"] == 8 and ev["cuda"]["visible_count"] == 8 and ev["rocm"]["visible"] is False
                and ev["ze"]["visible"] is False and ev["rdma"]["usable"] is True and "uverbs" in ev["rdma"]["evidence"],
                json.dumps(ev, indent=1))
    j, _ = explain_json(t, "dgx cvd", env_for("dgx", preload=False, CUDA_VISIBLE_DEVICES="1,3"))
    if j:
        t.check("visibility variable applied: CUDA_VISIBLE_DEVICES=1,3 gives 2 of 8 visible",
                j["evidence"]["cuda"]["visible_count"] == 2 and "CUDA_VISIBLE_DEVICES" in j["evidence"]["cuda"]["evidence"],
                json.dumps(j["evidence"]["cuda"]))


@case("explain: a reason counts the GPUs as the evidence does")
def reason_counts(t):
    # The library stops counting at the first GPU it needs (its line says 1+); explain lists every
    # device, and its reasons give that count too, not 1+ beside an evidence row of 8.
    for machine, fam in (("dgx", "cuda"), ("mi300x", "rocm"), ("intel-busy", "ze")):
        j, _ = explain_json(t, machine, env_for(machine, preload=False))
        if not j:
            continue
        said = [r for r in j["reasons"] if r.startswith(fam + ": ")]
        shown = fam + ": " + j["evidence"][fam]["evidence"]
        t.check("%s: the %s reason is the %s evidence row, with 8 counted" % (machine, fam, fam),
                said == [shown] and "8 " in shown and "+" not in shown, json.dumps([said, shown]))


@case("explain (text): the sections an operator reads")
def explain_text(t):
    # Text explain: the sections an operator reads (the template composed: UCXTLS_WRITE=always).
    p = cli(["explain"], env_for("mi300x", preload=False, **ALWAYS))
    out = p.stdout.decode()
    t.check("explain (text) on mi300x: action, value, summary, family, evidence, variables, library line",
            p.returncode == 0 and "action    set" in out and "rc_x,rc,dc_x,dc,rocm_copy" in out
            and "\nsummary   a process here runs with UCX_TLS=rc_x,rc,dc_x,dc,rocm_copy, written by ucxtls: "
                "the template {rdma},{copy} composed for rocm (UCXTLS_WRITE=always)\n" in out
            and "family    rocm" in out and "KFD GPU node" in out and "UCXTLS_SYSROOT=" in out
            and "  UCXTLS_WRITE='always'" in out
            and "ucxtls: set UCX_TLS=rc_x,rc,dc_x,dc,rocm_copy" in out, out + p.stderr.decode())


# What a process that sets no UCX_TLS runs with on each node shape, and why, in one line.
SUMMARY = {
    "dgx": "UCX's own default (UCX_TLS unset: all): NVIDIA GPUs and an rc device: UCX's own default stands (all), "
           "and a hard-coded rc_x,rc,dc_x,dc,cuda_copy fits this node; UCXTLS_WRITE=always writes the template here",
    "broadcom-roce": "UCX's own default (UCX_TLS unset: all): NVIDIA GPUs and an rc device: UCX's own default stands "
                     "(all), and a hard-coded rc_x,rc,dc_x,dc,cuda_copy fits this node; UCXTLS_WRITE=always writes the "
                     "template here",
    "aws-p5": "UCX_TLS=all, UCX's own default, written by ucxtls: no RDMA device UCX's rc transport runs on: all "
              "(UCX's own default), so a hard-coded rc list cannot break this node",
    "intel-xe": "UCX_TLS=all, UCX's own default, written by ucxtls: all (UCX's own default, with ze's copy transport), "
                "so a hard-coded rc_x,rc,dc_x,dc,cuda_copy cannot displace it on these GPUs",
    "mi300x": "UCX_TLS=all, UCX's own default, written by ucxtls: all (UCX's own default, with rocm's copy transport), "
              "so a hard-coded rc_x,rc,dc_x,dc,cuda_copy cannot displace it on these GPUs",
    "no-gpu": "UCX's own default (UCX_TLS unset: all): no GPU family found: nothing to fix here, UCX's default stands",
}


def summary_row(t, machine):
    p = cli(["explain"], env_for(machine, preload=False))
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("summary   ")]
    want = "summary   a process here runs with " + SUMMARY[machine]
    t.equal("explain on %s: one summary line, what a process with UCX_TLS unset runs with and why" % machine,
            lines, [want], p.stdout.decode())
    j, _ = explain_json(t, machine, env_for(machine, preload=False))
    t.equal("explain --json on %s: the same summary" % machine, j and j["summary"], want[len("summary   "):])
    tls, _, err = sh_value(env_for(machine))
    t.equal("%s: the library leaves UCX_TLS as the summary says" % machine, tls, DEFAULT_ANSWER[machine], err)


for _machine in SUMMARY:
    add_case("explain: the summary line on " + _machine, summary_row, _machine)


@case("explain --json: strings escaped")
def json_escapes(t):
    # JSON strings escaped: quotes, backslashes, control bytes, UTF-8, invalid bytes.
    weird = "a\"b\\c\nd\te\x01f ü€😀"
    j, _ = explain_json(t, "weird", env_for("dgx", preload=False, UCX_TLS=weird))
    t.check("JSON escapes quotes, backslash, control bytes and keeps UTF-8", j is not None and j["value"] == weird,
            repr(j and j["value"]))
    p = cli(["explain", "--json"], env_for("dgx", preload=False, UCX_TLS=b"x\xff\xfey"))
    try:
        v = json.loads(p.stdout.decode("utf-8"))["value"]
    except ValueError as e:
        v = "not JSON: %s" % e
    t.equal("JSON replaces bytes that are not UTF-8 with U+FFFD", v, "x\ufffd\ufffdy")


@case("explain: a kept UCX_TLS of another family is named; misspelt variables are in the JSON")
def kept_and_unknown(t):
    hard = "rc_x,rc,dc_x,dc,cuda_copy"  # the list trainers hard-code
    j, _ = explain_json(t, "intel-xe, the CUDA list kept", env_for("intel-xe", preload=False, UCX_TLS=hard))
    t.check("intel-xe with UCX_TLS=%s: keep, and a warning naming cuda_copy and ze_copy" % hard,
            j is not None and j["action"] == "keep" and j["warning"] and "cuda_copy" in j["warning"]
            and "ze_copy" in j["warning"], json.dumps(j))
    # A value without ze_copy at all: named too, with NIXL's words (repair.h copy_verdict).
    j, _ = explain_json(t, "intel-xe, tcp,self kept", env_for("intel-xe", preload=False, UCX_TLS="tcp,self"))
    t.check("intel-xe with UCX_TLS=tcp,self: keep, and a warning that it names no ze_copy",
            j is not None and j["action"] == "keep" and j["warning"] and "names no ze_copy" in j["warning"]
            and "VRAM memory is detected as host by UCX." in j["warning"], json.dumps(j))
    for machine, value in [("dgx", hard), ("intel-xe", "rc,ze_copy"), ("no-gpu", hard), ("intel-xe", "^cuda_copy")]:
        j, _ = explain_json(t, machine, env_for(machine, preload=False, UCX_TLS=value))
        t.check("%s with UCX_TLS=%s: no warning" % (machine, value), j is not None and j["warning"] is None,
                json.dumps(j))
    p = cli(["explain"], env_for("intel-xe", preload=False, UCX_TLS="tcp,cuda"))
    t.check("explain (text): the warning line for the alias cuda on an Intel node",
            re.search(r"^warning   UCX_TLS names cuda but the GPUs this process can use are ze", p.stdout.decode(), re.M),
            p.stdout.decode())
    j, _ = explain_json(t, "intel-xe, repaired", env_for("intel-xe", preload=False, UCX_TLS=hard, UCXTLS_REPAIR="1"))
    t.check("intel-xe with UCX_TLS=%s UCXTLS_REPAIR=1: repair, the repaired value, where it came from" % hard,
            j is not None and j["action"] == "repair" and j["value"] == "rc_x,rc,dc_x,dc,ze_copy"
            and j["repaired_from"] == hard and j["warning"] is None and j["family_decided"], json.dumps(j))
    j, _ = explain_json(t, "dgx, the default list", env_for("dgx", preload=False, **ALWAYS))
    t.check("dgx UCXTLS_WRITE=always: the default list's note names what it leaves out of UCX's default, in one line",
            j is not None and j["left_out"] and "leaves out sm, self, tcp, cuda_ipc, gdr_copy" in j["left_out"]
            and "\n" not in j["left_out"], json.dumps(j))
    for machine, extra in [("aws-p5", {}), ("intel-xe", {}), ("dgx", {}),
                           ("dgx", {"UCXTLS_TEMPLATE": "{rdma},sm,self,tcp,{ipc},{copy}"}), ("dgx", {"UCX_TLS": "tcp"})]:
        j, _ = explain_json(t, machine, env_for(machine, preload=False, **extra))
        t.check("%s %s: no left-out note (all, nothing written, a user template, a kept value)" % (machine, extra),
                j is not None and j["left_out"] is None, json.dumps(j))
    p = cli(["explain"], env_for("dgx", preload=False, **ALWAYS))
    t.check("explain (text), UCXTLS_WRITE=always: one note line for the default list",
            len(re.findall(r"^note      compared with UCX's default \(all\), this value leaves out ", p.stdout.decode(), re.M)) == 1,
            p.stdout.decode())
    j, _ = explain_json(t, "typos", env_for("dgx", preload=False, UCXTLS_ACCELL="ze", UCXTLS_FOO="1"))
    t.check("explain --json: the first misspelt variable by name, and the count",
            j is not None and j["unknown_variable"] == "UCXTLS_ACCELL" and j["unknown_variables"] == 2, json.dumps(j))
    j, _ = explain_json(t, "no typo", env_for("dgx", preload=False))
    t.check("explain --json: no misspelt variable: null and 0",
            j is not None and j["unknown_variable"] is None and j["unknown_variables"] == 0, json.dumps(j))


@case("explain under the preloaded library")
def explain_preloaded(t):
    # Under the preloaded library the command still explains the caller's environment (the
    # constructor changed the command's own environ first).
    j, _ = explain_json(t, "preloaded", env_for("no-gpu", **STALE))
    t.check("explain under LD_PRELOAD=libucxtls.so reports clear for an inherited value on a node without a GPU",
            j is not None and j["action"] == "clear" and j["value"] is None, json.dumps(j))


if __name__ == "__main__":
    include("cli_commands")
    main("the ucxtls command", start)
