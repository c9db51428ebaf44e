"""test_command_cases.py's text a terminal can trust (control bytes escaped), and the errors that
name what doctor could not check or where an empty value came from."""
import os
import re

from harness import case, env_for, run
from command_common import CLI, FAKES, Holder, doctor, fake_ucx_info


@case("explain's text escapes control bytes from variables, as the library's line does")
def explain_escapes(t):
    nasty = "a\x1b[2J\nucxtls: set UCX_TLS=fake\rb\x07"
    env = env_for("dgx", preload=False, UCX_TLS=nasty, UCXTLS_TEMPLATE="rc,\x1b]0;title\x07{copy}")
    p = run([CLI, "explain"], env)
    out = p.stdout.decode(errors="replace")
    t.check("no ESC, BEL or CR byte on stdout", not re.search("[\x1b\x07\r]", out), repr(out))
    t.check("no line that a variable's newline made", not re.search(r"^ucxtls: set UCX_TLS=fake", out, re.M), out)
    lib = run(["/bin/sh", "-c", "true"], env_for("dgx", UCX_TLS=nasty, UCXTLS_DEBUG="1")).stderr.decode(errors="replace")
    m = re.search(r'UCX_TLS is already set \("([^"]*)"\)', lib)
    t.check("the value is written as the library's line writes it (%s)" % (m.group(1) if m else None),
            m and m.group(1) in out, out + "\nlibrary: " + lib)


@case("doctor's text escapes control bytes too (a value, a process's UCX_TLS)")
def doctor_escapes(t):
    nasty = "tcp,\x1b[31mred\nMISSING fake\r"
    rc, out, missing, err = doctor(["--ucx", os.path.join(FAKES, "nixl"), "--value", nasty], env_for(None, preload=False))
    t.check("--value with ESC, newline, CR: none on stdout, no faked MISSING line",
            not re.search("[\x1b\r]", out) and not re.search(r"^MISSING fake", out, re.M), repr(out))
    h = Holder(env_for(None, preload=False, UCX_TLS=nasty))
    try:
        rc, out, missing, err = doctor(["--pid", str(h.p.pid)], env_for(None, preload=False))
    finally:
        h.close()
    t.check("--pid of a process whose UCX_TLS has them: none on stdout", not re.search("[\x1b\r]", out)
            and not re.search(r"^MISSING fake", out, re.M) and "value       tcp,?[31mred?MISSING fake? (" in out, repr(out))


@case("doctor's stdout and stderr escape control bytes (--value, --pid, --template, --ucx): one '?' each, no faked line")
def doctor_stderr_escapes(t):
    env = env_for(None, preload=False)
    env["PATH"] = fake_ucx_info("stderr") + ":" + env["PATH"]
    nasty = "tcp,ze_copy\x1b[2J\nFAKE"
    faked = re.compile(r"^FAKE", re.M)

    def clean(label, err, want):
        t.check("%s: no control byte on stdout or stderr, no line a value made, '?' for each (%r)" % (label, want),
                not re.search("[\x00-\x09\x0b-\x1f\x7f]", err) and not faked.search(err) and want in err, repr(err))

    def both(p):  # a failure after doctor's rows is on stdout (its verdict), an error before them on stderr
        return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")

    p = run([CLI, "doctor", "--value", nasty], env)
    clean("--value (the local ucx_info)", both(p), "ze_copy?[2J?FAKE")
    p = run([CLI, "doctor", "--ucx", os.path.join(FAKES, "nixl"), "--value", nasty], env)
    clean("--value with --ucx", both(p), "ze_copy?[2J?FAKE")
    h = Holder(env_for(None, preload=False, UCX_TLS=nasty))
    try:
        p = run([CLI, "doctor", "--pid", str(h.p.pid)], env)
    finally:
        h.close()
    clean("--pid of a process whose UCX_TLS has them", both(p), "ze_copy?[2J?FAKE")
    p = run([CLI, "doctor", "--template", "{cop\x1b[2J\nFAKE}"], env)
    clean("--template that is not valid (named in the error)", p.stderr.decode(errors="replace"), "'{cop?[2J?FAKE}'")
    p = run([CLI, "doctor", "--ucx", "/nonexist\x1b[31m\nFAKE"], env)
    clean("--ucx PATH that does not exist", p.stderr.decode(errors="replace"), "/nonexist?[31m?FAKE")
    t.equal("... exit 2 (usage) for it, as before", p.returncode, 2)


# Could not check is not "missing": exit 2
@case("doctor --ucx: a build that could not be read (not an ELF object, not a libucp) exits 2, not 1 (1 is 'missing')")
def ucx_not_checked(t):
    env = env_for(None, preload=False)
    paths = [("/etc/passwd", "not an ELF object"), (os.path.join(FAKES, "not-ucx", "libucp.so.0"), "it is not a UCX libucp")]
    libm = "/lib/x86_64-linux-gnu/libm.so.6"
    if os.path.exists(libm):
        paths.append((libm, "it is not a UCX libucp"))
    for path, words in paths:
        p = run([CLI, "doctor", "--ucx", path, "--value", "tcp"], env)
        err = p.stderr.decode(errors="replace")
        t.check("--ucx %s: exit 2, one line (%s), nothing on stdout" % (path, words),
                p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1 and words in err, "%d %r" % (p.returncode, err))


@case("doctor: an empty value is named by where it came from (--value: a usage error, UCX_TLS)")
def empty_value_source(t):
    for label, args, extra in (("--value ''", ["--value", ""], {}), ("UCX_TLS=''", [], {"UCX_TLS": ""})):
        for where in ("ucx_info", "--ucx"):
            env = env_for(None, preload=False, **extra)
            env["PATH"] = fake_ucx_info("empty-%s-%s" % (len(args), where.strip("-"))) + ":" + env["PATH"]
            more = ["--ucx", os.path.join(FAKES, "nixl")] if where == "--ucx" else []
            p = run([CLI, "doctor"] + args + more, env)
            err = p.stderr.decode(errors="replace")
            last = (p.stdout.decode(errors="replace").splitlines() or [""])[-1]
            want = "(--value)" if args else "(UCX_TLS as set)"
            # --value '': the one stderr line; UCX_TLS='': after the rows, the verdict, stderr silent.
            said = ("ucxtls: doctor: the value is empty %s:" % want) in err if args else (
                err == "" and last.startswith("verdict     FAIL (exit 1): the value is empty %s:" % want))
            t.check("%s (%s): exit %d, the error says the value is empty %s" % (label, where, 2 if args else 1, want),
                    p.returncode == (2 if args else 1) and said
                    and (args == [] or (p.stdout == b"" and err.count("\n") == 1))  # --value '': one line, no row
                    and (args == [] or "UCX_TLS is empty" not in err), "%d %r" % (p.returncode, err))


@case("doctor --ucx /: paths without a doubled slash")
def ucx_root(t):
    p = run([CLI, "doctor", "--ucx", "/", "--value", "tcp"], env_for(None, preload=False))
    text = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
    t.check("no '//' in what it prints (exit %d)" % p.returncode, "//" not in text, text)


@case("doctor --json: an empty UCX_TLS is a set, empty value (\"\"), not null")
def json_empty_value(t):
    import json
    for label, args in (("ucx_info", []), ("--ucx", ["--ucx", os.path.join(FAKES, "nixl")])):
        env = env_for(None, preload=False, UCX_TLS="")
        env["PATH"] = fake_ucx_info("json-empty-" + label.strip("-")) + ":" + env["PATH"]
        p = run([CLI, "doctor", "--json"] + args, env)
        j = json.loads(p.stdout.decode())
        t.check("%s: value \"\" (the library keeps it), source UCX_TLS as set, status 1" % label,
                j["value"] == "" and j["source"] == "UCX_TLS as set" and j["status"] == 1, p.stdout.decode())
    env = env_for(None, preload=False)
    env.pop("UCX_TLS", None)
    env["PATH"] = fake_ucx_info("json-unset") + ":" + env["PATH"]
    j = json.loads(run([CLI, "doctor", "--json"], env).stdout.decode())
    t.check("control: UCX_TLS unset on a node without GPUs: value null", j["value"] is None, repr(j))
