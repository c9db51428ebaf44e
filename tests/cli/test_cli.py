#!/usr/bin/env python3
"""The `ucxtls` command in real processes: explain (text and JSON), env, run, --help, --version,
errors; and explain agreeing with what the preloaded library actually does in /bin/sh on every
row of the fixture-machine table (tests/e2e/test_fixtures.py)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import LIB, SOURCE_DIR, Checks, env_for, run, sh_value  # noqa: E402
import test_fixtures  # noqa: E402  (its ROWS: the machine/variable table)

CLI = os.environ.get("UCXTLS_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
ACTIONS = {"set", "keep", "skip", "clear"}
FAMILIES = {"cuda", "rocm", "ze", "none"}
COPY = {"cuda": "cuda_copy", "rocm": "rocm_copy", "ze": "ze_copy"}


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


def check_shape(t, label, j):
    ok = (isinstance(j, dict) and j.get("action") in ACTIONS and j.get("family") in FAMILIES
          and (j.get("value") is None or isinstance(j.get("value"), str))
          and isinstance(j.get("reasons"), list) and j["reasons"]
          and all(isinstance(r, str) and r for r in j["reasons"])
          and isinstance(j.get("family_decided"), bool)
          and set(j.get("evidence", {})) >= {"rdma", "ucx_conf", "cuda", "rocm", "ze"}
          and isinstance(j.get("variables"), dict) and isinstance(j.get("line"), str))
    return t.check(label + ": JSON shape (action, value, family, reasons, evidence, variables)", ok,
                   json.dumps(j, indent=1))


def main():
    t = Checks("the ucxtls command")
    if not os.access(CLI, os.X_OK):
        t.check("the command is built", False, CLI)
        t.exit()

    # --- explain agrees with the library on every fixture row, plus re-derivation rows.
    rows = list(test_fixtures.ROWS)
    for machine in ("dgx", "no-rdma", "intel-xe", "no-gpu"):
        stale = "rc_x,rc,dc_x,dc,rocm_copy"  # written on another node
        rows.append((machine, {"UCX_TLS": stale, "UCXTLS_DERIVED": stale}, None))
        rows.append((machine, {"UCXTLS_ACCEL": "bogus"}, None))
    shapes_ok = agree = 0
    for machine, extra, _ in rows:
        env = env_for(machine, preload=False, **extra)
        label = "%s %s" % (machine, " ".join("%s=%r" % kv for kv in extra.items()) or "(defaults)")
        j, p = explain_json(t, label, env)
        if j is None:
            continue
        shapes_ok += check_shape(t, label, j)
        action, value, err = library_action(env_for(machine, **extra))
        agree += t.equal(label + ": explain == library (action, UCX_TLS)", (j["action"], j["value"]),
                         (action, value), "library: " + err + "\nexplain: " + j["line"])
        # family: the value is composed for it when decided; otherwise what the probe sees.
        if j["action"] == "set" and j["family_decided"] and j["family"] != "none":
            t.check(label + ": family's copy transport is in the value", COPY[j["family"]] in j["value"].split(","),
                    json.dumps(j))
        if j["action"] == "set":
            t.check(label + ": the library line is explain's line", err.startswith("ucxtls: set UCX_TLS=" + j["value"]),
                    err + "\n" + j["line"])
        want_rc = 1 if j["error"] else 0
        t.equal(label + ": exit status", p.returncode, want_rc, p.stderr.decode())
    t.check("explain agreed with the library on all %d rows" % len(rows), agree == len(rows) == shapes_ok)

    # family when the decision did not need it (UCX_TLS set by the user, no RDMA): the probe's.
    for machine, extra, fam in [("dgx", {"UCX_TLS": "tcp"}, "cuda"), ("intel-xe", {"UCX_TLS": "tcp"}, "ze"),
                                ("no-rdma", {}, "cuda"), ("hybrid-laptop", {}, "cuda"),
                                ("hybrid-laptop", {"CUDA_VISIBLE_DEVICES": ""}, "ze"),
                                ("dgx", {"UCXTLS_DISABLE": "1"}, "cuda"), ("dgx", {"UCXTLS_ACCEL": "rocm", "UCX_TLS": "x"}, "rocm"),
                                ("no-gpu", {"UCX_TLS": "tcp"}, "none")]:
        j, _ = explain_json(t, machine, env_for(machine, preload=False, **extra))
        if j:
            t.equal("%s %s: family %s shown, family_decided false" % (machine, extra, fam),
                    (j["family"], j["family_decided"]), (fam, False))

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

    # Text explain: the sections an operator reads.
    p = cli(["explain"], env_for("mi300x", preload=False))
    out = p.stdout.decode()
    t.check("explain (text) on mi300x: action, value, family, evidence, variables, library line",
            p.returncode == 0 and "action    set" in out and "rc_x,rc,dc_x,dc,rocm_copy" in out
            and "family    rocm" in out and "KFD GPU node" in out and "UCXTLS_SYSROOT=" in out
            and "ucxtls: set UCX_TLS=rc_x,rc,dc_x,dc,rocm_copy" in out, out + p.stderr.decode())

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

    # Under the preloaded library the command still explains the caller's environment (the
    # constructor changed the command's own environ first).
    stale = {"UCX_TLS": "a", "UCXTLS_DERIVED": "a"}
    j, _ = explain_json(t, "preloaded", env_for("no-rdma", **stale))
    t.check("explain under LD_PRELOAD=libucxtls.so reports clear for an inherited value on a no-RDMA node",
            j is not None and j["action"] == "clear" and j["value"] is None, json.dumps(j))

    # --- env: eval in /bin/sh gives what the library gives.
    show = 'eval "$("$0" env)" && printf "%s|%s" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"'
    for machine, extra in [("dgx", {}), ("intel-xe", {}), ("no-rdma", {}), ("no-rdma", stale), ("dgx", {"UCX_TLS": "it's mine"}),
                           ("no-gpu", {"UCXTLS_TEMPLATE": "\\tcp,self,{copy}"}), ("dgx", {"UCXTLS_DISABLE": "1"}),
                           ("mi300x", {"UCXTLS_TEMPLATE": "^cuda_ipc,{copy}:aux"})]:
        p = run(["/bin/sh", "-c", show, CLI], env_for(machine, preload=False, **extra))
        tls, derived, err = sh_value(env_for(machine, **extra))
        t.equal("env: eval \"$(ucxtls env)\" on %s %s == library" % (machine, extra),
                p.stdout.decode(), "%s|%s" % (tls, derived), p.stderr.decode())
    p = cli(["env"], env_for("no-rdma", preload=False, **stale))
    t.equal("env prints unset for an inherited value that must go", p.stdout.decode(), "unset UCX_TLS UCXTLS_DERIVED\n")
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS="tcp"))
    t.equal("env prints nothing when UCX_TLS is the user's", (p.stdout, p.returncode), (b"", 0))
    p = cli(["env"], env_for("dgx", preload=False, UCXTLS_ACCEL="foo"))
    t.check("env with an invalid setting: nothing on stdout, the library's one line on stderr, exit 1",
            p.stdout == b"" and p.returncode == 1 and p.stderr.decode().startswith("ucxtls: UCXTLS_ACCEL=")
            and p.stderr.count(b"\n") == 1, repr(p))

    p = cli(["env"], env_for("intel-xe", preload=False, UCXTLS_ACCEL="foo", **stale))
    t.check("env with an invalid setting and an inherited value: unset on stdout (as the library removes it), exit 1",
            p.stdout == b"unset UCX_TLS UCXTLS_DERIVED\n" and p.returncode == 1, repr(p))
    p = cli(["env"], env_for("dgx", preload=False))
    derived = p.stdout.decode().split("'")[1] if "'" in p.stdout.decode() else "?"
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS=derived, UCXTLS_DERIVED=derived))
    t.equal("env prints nothing when the shell already has the value it would derive", (p.stdout, p.returncode), (b"", 0))

    # --- run: the library from beside the command, LD_PRELOAD kept, status passed through.
    p = cli(["run", "sh", "-c", 'printf "%s|%s" "$UCX_TLS" "$LD_PRELOAD"'], env_for("intel-xe", preload=False))
    t.equal("run: the command gets the library's value and LD_PRELOAD", p.stdout.decode(),
            "rc_x,rc,dc_x,dc,ze_copy|" + os.path.realpath(LIB), p.stderr.decode())
    other = "/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libm.so.6") else "libm.so.6"
    p = cli(["run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"; exit 7'], env_for("dgx", preload=False, LD_PRELOAD=other))
    t.equal("run: existing LD_PRELOAD entries kept; exit status passes through", (p.stdout.decode(), p.returncode),
            (os.path.realpath(LIB) + ":" + other, 7), p.stderr.decode())
    p = cli(["run", "sh", "-c", 'printf "%s" "$LD_PRELOAD"'], env_for("dgx", preload=False, LD_PRELOAD=os.path.realpath(LIB)))
    t.equal("run: the library is not added twice", p.stdout.decode(), os.path.realpath(LIB))
    p = cli(["run", "sh", "-c", "kill -TERM $$"], env_for("dgx", preload=False))
    t.equal("run: a signal death passes through (it is an exec)", p.returncode, -15)
    for args, rc in ((["run"], 2), (["run", "--"], 2), (["run", "/nonexistent/prog"], 127)):
        p = cli(args, env_for("dgx", preload=False))
        t.check("run %s: exit %d, one stderr line, nothing on stdout" % (args[1:], rc),
                p.returncode == rc and p.stdout == b"" and p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"ucxtls: "),
                repr(p))

    # --- help, version, errors.
    p = cli(["--help"], env_for(None, preload=False))
    out = p.stdout.decode()
    names = re.findall(r'^\s*\{"([A-Z_]+)",', open(os.path.join(SOURCE_DIR, "shim", "options.cc")).read(), re.M)
    t.check("--help lists every variable of the kOptions table (%d)" % len(names),
            p.returncode == 0 and len(names) >= 8 and all(re.search(r"^  %s\b" % n, out, re.M) for n in names), out)
    # The README's variable table and --help come from the same table: names and defaults agree.
    readme = open(os.path.join(SOURCE_DIR, "README.md")).read()
    table = dict(re.findall(r"^\| `(UCXTLS_[A-Z_]+)` \| ([^|]+) \|", readme, re.M))
    shown = dict(re.findall(r"^  (UCXTLS_[A-Z_]+)\s+default (\S+)$", out, re.M))
    norm = {k: v.strip().strip("`").replace("—", "-") for k, v in table.items()}
    t.equal("README variable table == --help (names and defaults)", norm, shown)
    version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
    p = cli(["--version"], env_for(None, preload=False))
    t.equal("--version prints the project version", (p.stdout.decode(), p.returncode), ("ucxtls %s\n" % version, 0))
    for args in (["frobnicate"], [], ["explain", "--yaml"], ["env", "x"], ["doctor", "--bogus"]):
        p = cli(args, env_for(None, preload=False))
        t.check("%s: non-zero exit, one stderr line, nothing on stdout" % (args or "no command"),
                p.returncode != 0 and p.stdout == b"" and p.stderr.count(b"\n") == 1, repr(p))
    t.exit()


if __name__ == "__main__":
    main()
