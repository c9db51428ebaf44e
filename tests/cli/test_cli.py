#!/usr/bin/env python3
"""The `ucxtls` command in real processes: explain (text and JSON), env, run, --help, --version,
errors; and explain agreeing with what the preloaded library actually does in /bin/sh on every
row of the fixture-machine table (tests/e2e/test_fixtures.py)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALL, ALWAYS, DEFAULT_ANSWER, LIB, SOURCE_DIR, Checks, add_case, case, env_for, main, run, sh_value  # noqa: E402
import test_fixtures  # noqa: E402  (its ROWS: the machine/variable table)

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
ACTIONS = {"set", "keep", "skip", "clear"}
FAMILIES = {"cuda", "rocm", "ze", "none"}
COPY = {"cuda": "cuda_copy", "rocm": "rocm_copy", "ze": "ze_copy"}
STALE = {"UCX_TLS": "a", "UCXTLS_DERIVED": "a"}  # an inherited pair of ours


def cli(args, env, **kw):
    return run([CLI] + args, env, **kw)


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


def options_table():
    """The variable names of the kOptions table, from the shim source that defines it."""
    shim = os.path.join(SOURCE_DIR, "shim")
    for name in sorted(os.listdir(shim)):
        if name.endswith((".cc", ".c", ".h")):
            text = open(os.path.join(shim, name), encoding="utf-8").read()
            m = re.search(r"^const Option kOptions\[[^]]*\] = \{\n(.*?)^\};", text, re.M | re.S)
            if m:
                return re.findall(r'^\s*\{"([A-Z_]+)",', m.group(1), re.M)
    return []


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
ROWS = [(machine, extra) for machine, extra, _ in test_fixtures.ROWS]
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


def row_label(machine, extra):
    return "%s %s" % (machine, " ".join("%s=%r" % kv for kv in extra.items()) or "(defaults)")


def explain_row(t, machine, extra):
    label = row_label(machine, extra)
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
    add_case("explain == library: " + row_label(_machine, _extra), explain_row, _machine, _extra)


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


@case("env: eval in /bin/sh gives what the library gives")
def env_eval(t):
    # --- env: eval in /bin/sh gives what the library gives.
    show = 'eval "$("$0" env)" && printf "%s|%s" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"'
    for machine, extra in [("dgx", {}), ("intel-xe", {}), ("no-rdma", {}), ("no-rdma", STALE), ("no-gpu", STALE), ("dgx", {"UCX_TLS": "it's mine"}),
                           ("no-gpu", {"UCXTLS_TEMPLATE": "\\tcp,self,{copy}"}), ("dgx", {"UCXTLS_DISABLE": "1"}),
                           ("mi300x", {"UCXTLS_TEMPLATE": "^cuda_ipc,{copy}:aux"})]:
        p = run(["/bin/sh", "-c", show, CLI], env_for(machine, preload=False, **extra))
        tls, derived, err = sh_value(env_for(machine, **extra))
        t.equal("env: eval \"$(ucxtls env)\" on %s %s == library" % (machine, extra),
                p.stdout.decode(), "%s|%s" % (tls, derived), p.stderr.decode())


@case("env: unset, nothing, errors")
def env_prints(t):
    p = cli(["env"], env_for("no-gpu", preload=False, **STALE))
    t.equal("env prints unset for an inherited value that must go", p.stdout.decode(), "unset UCX_TLS UCXTLS_DERIVED\n")
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS="tcp"))
    t.equal("env prints nothing when UCX_TLS is the user's", (p.stdout, p.returncode), (b"", 0))
    p = cli(["env"], env_for("dgx", preload=False, UCXTLS_ACCEL="foo"))
    t.check("env with an invalid setting: nothing on stdout, the library's one line on stderr, exit 1",
            p.stdout == b"" and p.returncode == 1 and p.stderr.decode().startswith("ucxtls: UCXTLS_ACCEL=")
            and p.stderr.count(b"\n") == 1, repr(p))

    p = cli(["env", "--format=csh"], env_for("dgx", preload=False))
    t.check("env --format=csh: exit 2, one line naming the format as unknown (not the argument)",
            p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
            and b"unknown format 'csh'" in p.stderr and b"unknown argument" not in p.stderr, repr(p))
    p = cli(["env"], env_for("intel-xe", preload=False, UCXTLS_ACCEL="foo", **STALE))
    t.check("env with an invalid setting and an inherited value: unset on stdout (as the library removes it), exit 1",
            p.stdout == b"unset UCX_TLS UCXTLS_DERIVED\n" and p.returncode == 1, repr(p))
    p = cli(["env"], env_for("dgx", preload=False))
    t.equal("env prints nothing on dgx (UCX's default stands)", (p.stdout, p.returncode), (b"", 0))
    p = cli(["env"], env_for("dgx", preload=False, **ALWAYS))
    derived = p.stdout.decode().split("'")[1] if "'" in p.stdout.decode() else "?"
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS=derived, UCXTLS_DERIVED=derived, **ALWAYS))
    t.equal("env prints nothing when the shell already has the value it would derive", (p.stdout, p.returncode), (b"", 0))


@case("run: the library from beside the command")
def run_command(t):
    # --- run: the library from beside the command, LD_PRELOAD kept, status passed through.
    p = cli(["run", "sh", "-c", 'printf "%s|%s" "$UCX_TLS" "$LD_PRELOAD"'], env_for("intel-xe", preload=False))
    t.equal("run: the command gets the library's value and LD_PRELOAD", p.stdout.decode(),
            ALL + "|" + os.path.realpath(LIB), p.stderr.decode())
    other = "/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libm.so.6") else "libm.so.6"
    p = cli(["run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"; exit 7'], env_for("dgx", preload=False, LD_PRELOAD=other))
    t.equal("run: existing LD_PRELOAD entries kept, first (the library appended); exit status passes through",
            (p.stdout.decode(), p.returncode), (other + ":" + os.path.realpath(LIB), 7), p.stderr.decode())
    p = cli(["run", "sh", "-c", 'printf "%s" "$LD_PRELOAD"'], env_for("dgx", preload=False, LD_PRELOAD=os.path.realpath(LIB)))
    t.equal("run: the library is not added twice", p.stdout.decode(), os.path.realpath(LIB))
    p = cli(["run", "sh", "-c", "kill -TERM $$"], env_for("dgx", preload=False))
    t.equal("run: a signal death passes through (it is an exec)", p.returncode, -15)
    for args, rc in ((["run"], 2), (["run", "--"], 2), (["run", "/nonexistent/prog"], 127)):
        p = cli(args, env_for("dgx", preload=False))
        t.check("run %s: exit %d, one stderr line, nothing on stdout" % (args[1:], rc),
                p.returncode == rc and p.stdout == b"" and p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"ucxtls: "),
                repr(p))


@case("--help: every variable of the options table")
def help_variables(t):
    # --- help, version, errors.
    p = cli(["--help"], env_for(None, preload=False))
    out = p.stdout.decode()
    names = options_table()
    t.check("--help lists every variable of the kOptions table (%d)" % len(names),
            p.returncode == 0 and len(names) >= 8 and all(re.search(r"^  %s\b" % n, out, re.M) for n in names), out)


@case("README variable table == --help")
def readme_table(t):
    out = cli(["--help"], env_for(None, preload=False)).stdout.decode()
    # The README's variable table and --help come from the same table: names and defaults agree.
    readme = open(os.path.join(SOURCE_DIR, "README.md")).read()
    table = dict(re.findall(r"^\| `(UCXTLS_[A-Z_]+)` \| ([^|]+) \|", readme, re.M))
    shown = dict(re.findall(r"^  (UCXTLS_[A-Z_]+)\s+default (\S+)$", out, re.M))
    norm = {k: v.strip().strip("`").replace("—", "-") for k, v in table.items()}
    t.equal("README variable table == --help (names and defaults)", norm, shown)


def subcommands():
    """The subcommands ucxtls --help lists (its table, kCommands)."""
    out = cli(["--help"], env_for(None, preload=False)).stdout.decode()
    return re.findall(r"^  ([a-z]+) ", out.split("commands:\n", 1)[1].split("\n\n", 1)[0], re.M)


def help_case(t, name):
    p = cli([name, "--help"], env_for("intel-xe", preload=False))
    out = p.stdout.decode()
    t.check("%s --help: usage on stdout, exit 0, nothing on stderr" % name,
            p.returncode == 0 and out.startswith("usage: ucxtls %s" % name) and "\noptions:\n" in out
            and re.search(r"^  -h, --help ", out, re.M) and p.stderr == b"", repr(p))
    for form in ([name, "-h"], ["help", name]):
        q = cli(form, env_for("intel-xe", preload=False))
        t.equal("%s: the same text as %s --help" % (" ".join(form), name), (q.stdout, q.returncode), (p.stdout, 0))


for _name in ("explain", "env", "run", "doctor", "probe", "lib"):
    add_case("--help: ucxtls %s --help" % _name, help_case, _name)


@case("--help: every subcommand has a row above")
def help_rows(t):
    t.equal("the subcommands --help lists == those with a --help row",
            subcommands(), ["explain", "env", "run", "doctor", "probe", "lib"])


@case("a misspelt command: exit 2, one line naming the closest command, as a misspelt variable's does")
def misspelt_command(t):
    env = env_for("intel-xe", preload=False)
    for argv, want in ((["explian"], "explain"), (["dcotor", "--json"], "doctor"), (["help", "lbi"], "lib"), (["prboe"], "probe")):
        p = cli(argv, env)
        t.check("ucxtls %s: exit 2, nothing on stdout, one line: did you mean %s?" % (" ".join(argv), want),
                p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
                and ("did you mean %s?" % want).encode() in p.stderr, repr(p))
    p = cli(["frobnicate"], env)
    t.check("ucxtls frobnicate (no command close): exit 2, one line, no guess",
            p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"did you mean" not in p.stderr, repr(p))

@case("--help: run --help is help, run -- --help runs --help; flags with a value in both forms")
def help_forms(t):
    env = env_for("intel-xe", preload=False)
    p = cli(["run", "--help", "sh", "-c", "echo RAN"], env)
    t.check("run --help sh -c ...: the help, nothing run", p.returncode == 0 and b"RAN" not in p.stdout
            and p.stdout.startswith(b"usage: ucxtls run"), repr(p))
    p = cli(["run", "--", "--help"], env)
    t.check("run -- --help: tries to run a program named --help (exit 127, one stderr line)",
            p.returncode == 127 and p.stdout == b"" and b"'--help'" in p.stderr, repr(p))
    p = cli(["run", "sh", "-c", 'printf %s "$1"', "sh", "--help"], env)
    t.equal("run COMMAND --help: --help is COMMAND's argument", (p.stdout, p.returncode), (b"--help", 0), repr(p))
    eq = cli(["env", "--format=slurm"], env)
    sp = cli(["env", "--format", "slurm"], env)
    t.check("env --format slurm == env --format=slurm (the export lines, exit 0)",
            eq.returncode == sp.returncode == 0 and eq.stdout == sp.stdout
            and eq.stdout.startswith(b"export UCX_TLS=all\n"), repr((eq, sp)))
    p = cli(["env", "--format", "--help"], env)
    t.check("env --format --help: --help is the value of --format (refused as a format, exit 2)",
            p.returncode == 2 and p.stdout == b"" and b"--format=--help" in p.stderr, repr(p))
    for args in (["env", "--format"], ["doctor", "--value"], ["doctor", "--template"]):
        p = cli(args, env)
        t.check("%s without its value: exit 2, one stderr line naming the flag" % " ".join(args),
                p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
                and (" %s needs a value" % args[-1]).encode() in p.stderr, repr(p))
    p = cli(["probe", "--help"], env)
    t.check("probe --help: the helper where it is (<libexecdir>/ucxtls as installed, beside the command in a build tree)",
            b"<prefix>/libexec/ucxtls/ucxtls-probe" in p.stdout.replace(b"\n", b" ")
            and b"beside the command in a build tree" in p.stdout.replace(b"\n", b" ")
            and b"beside the library" not in p.stdout.replace(b"\n", b" "), repr(p))
    p = cli(["lib"], env)
    t.equal("lib: the library beside the command, one line", (p.stdout.decode(), p.returncode),
            (os.path.realpath(LIB) + "\n", 0), repr(p))


@case("README quick start: the number of Debian packages scripts/test.sh installs")
def readme_packages(t):
    readme = open(os.path.join(SOURCE_DIR, "README.md")).read()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    said = [int(n) for n in re.findall(r"\b(\d+) Debian packages", quick)]
    # The list as bash reads it (the script's own array, with the build's packages it sources).
    p = run(["bash", "-c", '. "$2"; eval "$(sed -n "/^PACKAGES=(/,/)/p" "$1")"; echo ${#PACKAGES[@]}', "bash",
             os.path.join(SOURCE_DIR, "scripts", "test.sh"), os.path.join(SOURCE_DIR, "scripts", "build-packages.sh")],
            env_for(None, preload=False))
    count = int(p.stdout.decode().strip() or -1)
    t.check("the quick start says %s Debian packages; scripts/test.sh's PACKAGES has %d" % (said, count),
            said and all(n == count for n in said), quick)


@case("--version, and errors: one stderr line")
def version_errors(t):
    version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
    p = cli(["--version"], env_for(None, preload=False))
    t.equal("--version prints the project version", (p.stdout.decode(), p.returncode), ("ucxtls %s\n" % version, 0))
    news = re.search(r"^## (\S+)", open(os.path.join(SOURCE_DIR, "NEWS.md")).read(), re.M).group(1)
    t.equal("NEWS.md's newest section is that version (no 'Unreleased' changes under an older number)", news, version)
    for args in (["frobnicate"], [], ["explain", "--yaml"], ["env", "x"], ["doctor", "--bogus"], ["lib", "x"],
                 ["help", "frobnicate"]):
        p = cli(args, env_for(None, preload=False))
        t.check("%s: non-zero exit, one stderr line, nothing on stdout" % (args or "no command"),
                p.returncode != 0 and p.stdout == b"" and p.stderr.count(b"\n") == 1, repr(p))


if __name__ == "__main__":
    main("the ucxtls command", start)
