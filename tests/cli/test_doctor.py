#!/usr/bin/env python3
"""`ucxtls doctor` against the real UCX on this machine (Debian's UCX 1.13: no ze_copy, no CUDA):
it must fail for a ze value and pass for `tcp,self`, and its verdict on every name must be the one
UCX itself gives, which is read from UCX's own "not available" warning when a real context is
created with the value (`ucx_info -e`). The same comparison runs against UCX 1.22 as users install
it, RAPIDS' libucx-cu12 wheel (tag wheels: tests/wheels), with the fake CUDA driver of tests/cuda
when it is built, so that cuda_copy is served; and against a UCX with Level Zero where one is given
(tag ucx_ze: UCXTLSTEST_UCX_ZE), with the fake GPU driver of tests/ze. There the verdict on the
whole value must also be UCX's: 1.22 refuses a context whose only usable transports are
accelerator ones."""
import os
import json
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALWAYS, BUILD_DIR, LIB, add_case, case, env_for, have, main, run, ucx_build_or_skip  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))


def doctor(args, env):
    p = run([CLI, "doctor"] + args, env)
    out = p.stdout.decode()
    missing = set(re.findall(r"^MISSING +(\S+)", out, re.M))
    return p, out, missing


def ucx_unavailable(value, ucx_info="ucx_info", env=None):
    """The names UCX warns about when a context is created with UCX_TLS=value, whether the
    context was created, and UCX's output."""
    p = run([ucx_info, "-e", "-u", "t"], dict(env or env_for(None, preload=False), UCX_TLS=value))
    text = p.stdout.decode() + p.stderr.decode()
    names = set()
    for m in re.finditer(r"transports? ((?:'[^']*',?)+) (?:is|are) not available", text):
        names |= set(re.findall(r"'([^']*)'", m.group(1)))
    return names, text, "UCP endpoint" in text


def needs_ucx_info(fn):
    """Every case compares with the real ucx_info: without it, the case SKIPs."""
    def run_case(t, *args):
        if not have("ucx_info"):
            t.skip("doctor", "ucx_info not installed (Debian ucx-utils); scripts/test.sh installs it")
            return
        fn(t, *args)
    return run_case


HERE_ENV = env_for(None, preload=False)


@case("a ze value fails, tcp,self passes")
@needs_ucx_info
def ze_and_tcp(t):
    env = HERE_ENV
    p, out, missing = doctor(["--value", "rc_x,rc,dc_x,dc,ze_copy"], env)
    err = p.stderr.decode()
    t.check("a ze value fails: exit 1, ze_copy MISSING, the verdict naming it, stderr silent",
            p.returncode == 1 and "ze_copy" in missing and err == "" and "ze_copy" in out.splitlines()[-1], out + err)
    p, out, missing = doctor(["--value", "tcp,self"], env)
    t.check("tcp,self passes: exit 0, nothing missing, stderr silent",
            p.returncode == 0 and not missing and p.stderr == b"" and re.search(r"^ok +tcp$", out, re.M), out + p.stderr.decode())
    t.check("the transports are read from its build, and those with a device here named",
            re.search(r"^this UCX .*\btcp\b.*\(registered by its libuct", out, re.M) and re.search(r"^here +.*\btcp\b", out, re.M), out)



@case("the value in effect, derived on fixture machines")
@needs_ucx_info
def derived_value(t):
    # The value in effect, as explain derives it (a template so that it is written without RDMA).
    tmpl = "tcp,self,{copy}"
    for machine, rc, want_missing in (("intel-xe", 1, {"ze_copy"}), ("mi300x", 1, {"rocm_copy"}), ("no-gpu", 0, set())):
        p, out, missing = doctor([], env_for(machine, preload=False, UCXTLS_TEMPLATE=tmpl))
        t.check("doctor on %s checks the derived value: exit %d, missing %s" % (machine, rc, sorted(want_missing)),
                p.returncode == rc and missing == want_missing and "(derived by ucxtls)" in out, out + p.stderr.decode())


@case("UCX_TLS stays unset: nothing to check")
@needs_ucx_info
def nothing_to_check(t):
    p, out, _ = doctor([], env_for("no-gpu", preload=False))
    t.check("UCX_TLS stays unset (no GPU): nothing to check, exit 0",
            p.returncode == 0 and "nothing to check" in out, out + p.stderr.decode())


@case("a ucx.conf assigns UCX_TLS: the doctor names the file")
@needs_ucx_info
def ucx_conf(t):
    with tempfile.TemporaryDirectory() as conf:
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write("UCX_TLS=tcp\n")
        p, out, _ = doctor([], env_for("dgx", preload=False, UCX_CONFIG_DIR=conf))
        t.check("a ucx.conf assigns UCX_TLS: the doctor names the file instead of checking the environment",
                os.path.join(conf, "ucx.conf") in out and "--value" in out, out)
        t.check("... and still judges the build for the node's GPUs (a DGX, this UCX without CUDA): exit 1",
                p.returncode == 1 and re.search(r"^build +this UCX was built without CUDA support", out, re.M), out)


@case("the user's UCX_TLS is checked")
@needs_ucx_info
def users_value(t):
    p, out, missing = doctor([], env_for("no-gpu", preload=False, UCX_TLS="sm,self"))
    t.check("the user's UCX_TLS=sm,self is checked and passes on a node without GPUs (sm -> posix, sysv, cma)",
            p.returncode == 0 and "(UCX_TLS as set)" in out and re.search(r"^ok +sm -> .*posix", out, re.M), out)


@case("a kept value of another family: doctor checks the repaired value")
@needs_ucx_info
def repaired_value(t):
    hard = "tcp,cuda_copy"
    p, out, missing = doctor([], env_for("intel-xe", preload=False, UCX_TLS=hard, UCXTLS_REPAIR="1"))
    t.check("intel-xe, UCX_TLS=%s UCXTLS_REPAIR=1: doctor checks tcp,ze_copy (repaired), this UCX lacks ze_copy" % hard,
            p.returncode == 1 and "tcp,ze_copy (UCX_TLS as set, repaired by UCXTLS_REPAIR=1)" in out
            and missing == {"ze_copy"}, out)


@case("templates composed as the library would")
@needs_ucx_info
def templates(t):
    # Templates: doctor composes them for this machine (or a replayed one) as the library would.
    for machine, tmpl, value, want_missing in [
            (None, "{rdma},tcp,sm,self,{ipc},{copy}", "tcp,sm,self", set()),
            ("intel-xe", "tcp,sm,self,{ipc},{copy}", "tcp,sm,self,ze_copy", {"ze_copy"}),
            # The replayed DGX's ConnectX runs Debian's rc and dc; that UCX has no CUDA (UCX here cannot
            # tell: it sees this machine's devices, not the replayed node's).
            ("dgx", "{rdma},tcp,{ipc},{copy}", "rc_x,rc,dc_x,dc,tcp,cuda_ipc,cuda_copy", {"cuda_ipc", "cuda_copy"})]:
        e = env_for(machine, preload=False)
        for args in (["--template", tmpl], ["--value", tmpl]):
            p, out, missing = doctor(args, e)
            ok = ("value       %s (composed here from %s)" % (value, tmpl)) in out
            if want_missing is not None:
                ok = ok and missing == want_missing and p.returncode == (1 if want_missing else 0)
            else:  # whatever this UCX lacks of the RDMA and CUDA names, doctor agrees with UCX
                ucx, _, _ = ucx_unavailable(value)
                ok = ok and missing == ucx and p.returncode == (1 if ucx else 0)
            t.check("doctor %s %r on %s: composes %s and checks it" % (args[0], tmpl, machine or "this machine", value),
                    ok, out + p.stderr.decode())



@case("a bad template names the option typed; a replayed machine's UCX is this machine's")
@needs_ucx_info
def option_named_and_sysroot(t):
    for args in (["--template", "{rdam},{copy}"], ["--value", "{rdam},{copy}"], ["--template={rdam},{copy}"]):
        p, out, _ = doctor(args, env_for("dgx", preload=False))
        option = args[0].split("=")[0]
        err = p.stderr.decode()
        t.check("doctor %s: exit 2 (a usage error), the error names %s '{rdam},{copy}', not UCXTLS_TEMPLATE" % (" ".join(args), option),
                p.returncode == 2 and err.startswith("ucxtls: doctor: %s '{rdam},{copy}' has a misspelt placeholder (did you mean {rdma}?)" % option)
                and "UCXTLS_TEMPLATE" not in err and out == "", repr(err))
    p, _, _ = doctor([], env_for("dgx", preload=False, UCXTLS_TEMPLATE="{rdam}"))
    t.check("doctor with UCXTLS_TEMPLATE={rdam} in the environment: the variable is named",
            p.returncode == 1 and p.stderr.decode().startswith('ucxtls: UCXTLS_TEMPLATE="{rdam}"'), repr(p.stderr))
    note = "warning     UCXTLS_SYSROOT is set: the UCX checked (ucx_info's) is this machine's, not the replayed machine's\n"
    for args in ([], ["--value", "tcp"], ["--template", "tcp,{copy}"]):
        p, out, _ = doctor(args, env_for("dgx", preload=False, **ALWAYS))  # a value in effect to check
        t.check("doctor %s under UCXTLS_SYSROOT: its first row says the UCX checked is this machine's, stderr silent"
                % (" ".join(args) or "(the value in effect)"), out.startswith(note) and p.stderr == b"", out + p.stderr.decode())
    p, out, _ = doctor(["--value", "tcp"], HERE_ENV)
    t.check("doctor without UCXTLS_SYSROOT: no such note", "UCXTLS_SYSROOT" not in out + p.stderr.decode(), out)


@case("an empty value is a usage error")
@needs_ucx_info
def empty_value(t):
    env = HERE_ENV
    p, out, _ = doctor(["--value", ""], env)
    err = p.stderr.decode()
    t.check("doctor --value '': exit 2, nothing on stdout, one line naming the empty --value and UCX's "
            "'The TLs list is empty'", p.returncode == 2 and out == "" and err.count("\n") == 1
            and "empty (--value)" in err and "The TLs list is empty" in err, out + err)

# Name by name, the doctor's verdict is UCX's own: aliases (sm, shm, mm, ib, ud, rc_x, cuda,
# rocm, ze, gga), \exact names, :aux, and a deny list (UCX 1.13 warns about denied names too).
VALUES = ["tcp,self", "sm,self", "shm,tcp", "mm,tcp", "tcp,ze_copy", "tcp,ze", "tcp,cuda", "tcp,rocm",
          "tcp,cuda_copy,rocm_copy", "tcp,rc_x,rc,dc_x,dc", "tcp,ib,ud", "tcp,\\sm", "tcp,\\posix",
          "tcp,posix:aux", "tcp,knem,xpmem,cma", "tcp,gga", "^ze_copy", "^cuda_ipc,tcp"]


@needs_ucx_info
def same_as_ucx(t, value):
    ucx, text, _ = ucx_unavailable(value)
    p, out, missing = doctor(["--value", value], HERE_ENV)
    t.equal("doctor == UCX on %r (names UCX calls 'not available')" % value, sorted(missing), sorted(ucx),
            "ucx_info -e:\n" + text + "\ndoctor:\n" + out)
    t.equal("doctor %r exits 1 exactly when a name is missing" % value, p.returncode, 1 if ucx else 0)


for _value in VALUES:
    add_case("doctor == UCX on %s" % _value, same_as_ucx, _value)


FAKE_GPU = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))
FAKE_CUDA_DIR = os.environ.get("UCXTLSTEST_FAKE_CUDA_DIR", os.path.join(BUILD_DIR, "tests", "cuda", "lib"))
# The values above, and those that only a UCX serving the GPU's copy transport can tell apart: the
# copy transport alone, the family's alias alone, the trainer's list on a node without rc, and the
# copy transport with a host transport.
GPU_VALUES = {"rapids": ["cuda_copy", "cuda", "rc_x,rc,dc_x,dc,cuda_copy", "cuda_copy,tcp", "cuda_copy,sm,self"],
              "ze": ["ze_copy", "ze", "rc_x,rc,dc_x,dc,ze_copy", "ze_copy,tcp", "ze_copy,sm,self"]}


def gpu_env(name, env):
    """Adds the fake GPU driver the build `name` can load, if built; returns its words for a check."""
    if name == "ze":
        if not os.path.exists(FAKE_GPU):
            return " (no Level Zero driver: tests/ze's is not built)"
        env["ZE_ENABLE_ALT_DRIVERS"] = FAKE_GPU
        return " (a Level Zero GPU: the fake driver)"
    if not os.path.exists(os.path.join(FAKE_CUDA_DIR, "libcuda.so.1")):
        return " (no CUDA driver: tests/cuda's is not built)"
    env["LD_LIBRARY_PATH"] = FAKE_CUDA_DIR + ":" + env["LD_LIBRARY_PATH"]
    return " (an NVIDIA GPU: the fake CUDA driver)"


def carries_copy(value, family):
    """Whether UCX_TLS=value keeps the family's copy transport: named (or through the family's alias,
    or all) in an allow list, neither of them in a deny list."""
    deny = value.startswith("^")
    names = {n.split(":")[0].lstrip("\\") for n in value.lstrip("^").split(",")}
    holds = bool(names & {family + "_copy", family, "all"})
    return not holds if deny else holds


def same_as_ucx122(t, name, value):
    build = ucx_build_or_skip(t, name)
    if not build:
        return
    env = env_for(None, preload=False, PATH=os.path.dirname(build.ucx_info) + ":" + HERE_ENV["PATH"], **build.env)
    where = gpu_env(name, env)
    if "fake" in where:  # the node has that GPU: doctor's facts cannot see a fake driver's, so it is named
        env["UCXTLS_ACCEL"] = "ze" if name == "ze" else "cuda"
    ucx, text, context = ucx_unavailable(value, build.ucx_info, env)
    p, out, missing = doctor(["--value", value], env)
    t.equal("doctor == UCX 1.22 (%s) on %r%s (names UCX calls 'not available')" % (name, value, where),
            sorted(missing), sorted(ucx), "ucx_info -e:\n" + text + "\ndoctor:\n" + out)
    # On a node with that GPU, a value that cannot carry its memory fails too (test_doctor_copy.py
    # shows NIXL's failure with such a value).
    no_copy = "fake" in where and not carries_copy(value, "ze" if name == "ze" else "cuda")
    t.equal("doctor %r exits 1 exactly when a name is missing, UCX 1.22 creates no context, or the value has no "
            "copy transport of the node's GPUs" % value, p.returncode,
            1 if ucx or not context or no_copy else 0, "ucx_info -e:\n" + text + "\ndoctor:\n" + out + p.stderr.decode())
    t.equal("... 'refused' exactly when UCX creates no context although it serves a name of the value (an 'ok' line)",
            "refused " in out, not context and re.search(r"^ok ", out, re.M) is not None, out)


for _name, _tag in (("rapids", "wheels"), ("ze", "ucx_ze")):
    for _value in VALUES + GPU_VALUES[_name]:
        add_case("doctor == UCX 1.22 (%s) on %s" % (_name, _value), same_as_ucx122, _name, _value, tags=(_tag,))


def loader_libucp(ucx_info):
    """The libucp ldd names for ucx_info (ld.so's own answer), or None."""
    p = run(["ldd", ucx_info], HERE_ENV)
    m = re.search(r"^\s*libucp\S* => (/\S+)", p.stdout.decode(), re.M)
    return m.group(1) if m else None


def real_ucx_info(t):
    """(the ucx_info in PATH, the libucp ldd names for it); a failed check and (path, None) without one."""
    ucx_info = shutil.which("ucx_info", path=HERE_ENV["PATH"])
    libucp = loader_libucp(ucx_info)
    t.check("ldd names the libucp of %s" % ucx_info, libucp, ucx_info)
    return ucx_info, libucp


# The node's family, in the words of the build line for a UCX without it.
WITHOUT = {"intel-xe": "Level Zero (ze)", "mi300x": "ROCm", "no-rdma": "CUDA", "dgx": "CUDA"}


@case("plain doctor judges the build ucx_info loads as --ucx does, whatever the value (Debian's UCX: no GPU family)")
@needs_ucx_info
def build_of_ucx_info(t):
    _, libucp = real_ucx_info(t)
    if not libucp:
        return
    # The values a node gets: the default (all on intel-xe, mi300x and no-rdma; nothing written on a
    # DGX, whose rc runs UCX's own default), a --value, a --template, and the environment's UCX_TLS.
    ways = [("the default", [], {}), ("--value tcp", ["--value", "tcp"], {}),
            ("--template tcp,{copy}", ["--template", "tcp,{copy}"], {}), ("UCX_TLS=tcp", [], {"UCX_TLS": "tcp"})]
    for machine, family in sorted(WITHOUT.items()):
        for label, args, extra in ways:
            env = env_for(machine, preload=False, **extra)
            p, out, _ = doctor(args, env)
            err = p.stderr.decode()
            q, ucx_out, _ = doctor(args + ["--ucx", libucp], env)
            named = re.search(r"^build +(this UCX was built without %s support.*)$" % re.escape(family), out, re.M)
            # The verdict: the build's words, unless names are missing (they decide), or the value
            # cannot carry the GPU memory (quoted first, the build's counted as one more above).
            t.check("%s, %s: the build line and exit 1" % (machine, label), p.returncode == 1 and named, out + err)
            last = out.splitlines()[-1]
            t.check("... the verdict quotes the build line, or counts it above; stderr silent",
                    named and err == "" and (last == "verdict     FAIL (exit 1): " + named.group(1) or last.endswith(" more above)")
                                            or re.search(r"^MISSING ", out, re.M)),
                    out + err)
            t.equal("%s, %s: the same build lines and exit status as doctor --ucx %s" % (machine, label, libucp),
                    (p.returncode, re.findall(r"^build .*$", out, re.M)), (q.returncode, re.findall(r"^build .*$", ucx_out, re.M)),
                    out + "\n--ucx:\n" + ucx_out)
            t.check("... the libucp line names it", ("libucp      %s " % libucp) in out, out)
    p, out, _ = doctor([], env_for("no-gpu", preload=False))
    t.check("no-gpu: nothing to check, its line and the verdict 'ok (exit 0)', exit 0, stderr silent",
            p.returncode == 0 and out.count("\n") == 2 and "nothing to check" in out.splitlines()[0]
            and out.splitlines()[1] == "verdict     ok (exit 0)" and p.stderr == b"", out)
    p, out, _ = doctor(["--value", "tcp"], env_for("no-gpu", preload=False))
    t.check("no-gpu, --value tcp: no build line, exit 0", p.returncode == 0 and "\nbuild " not in out, out)


@case("a ucx_info that is a script: could not tell which UCX it runs (nothing is run), one line, exit 2")
@needs_ucx_info
def script_ucx_info(t):
    real, libucp = real_ucx_info(t)
    if not libucp:
        return
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "ucx_info")
        env = env_for("intel-xe", preload=False, PATH=d + ":" + HERE_ENV["PATH"])
        # A wrapper: doctor runs nothing, so which UCX it runs cannot be read (UCX 1.14's "-v" named its
        # libucs, but asking means running it). Cautious: exit 2 and how to name the build.
        with open(script, "w") as f:
            f.write('#!/bin/sh\nexec %s "$@"\n' % real)
        os.chmod(script, 0o755)
        p, out, _ = doctor([], env)
        # After the replayed node's `warning` row, the error is the verdict (stderr stays silent).
        last = out.splitlines()[-1:] or [""]
        t.check("a wrapper: exit 2, the verdict: could not tell which UCX it runs, name it with --ucx; stderr silent",
                p.returncode == 2 and p.stderr == b"" and last[0].startswith("verdict     could not check (exit 2): ")
                and "could not tell which UCX" in last[0] and "--ucx PATH" in last[0], out + p.stderr.decode())
        p, out, _ = doctor(["--ucx", os.path.dirname(libucp)], env)
        t.check("... and --ucx naming its build judges it (built without Level Zero, exit 1)",
                p.returncode == 1 and "built without Level Zero (ze) support" in out, out + p.stderr.decode())


@case("doctor --json: one object on one line, the same findings as the text")
@needs_ucx_info
def json_findings(t):
    for machine, want_family, want_value in (("intel-xe", "ze", "all"), ("dgx", "cuda", None), ("no-gpu", "none", None)):
        env = env_for(machine, preload=False)
        p, out, _ = doctor([], env)
        j_p = run([CLI, "doctor", "--json"], env)
        lines = j_p.stdout.decode().splitlines()
        if not t.check("%s: one line of JSON" % machine, len(lines) == 1, j_p.stdout.decode()):
            continue
        j = json.loads(lines[0])
        problems = re.findall(r"^build +(.*)$", out, re.M)
        verdict = out.splitlines()[-1]
        t.check("%s: family %s, value %r, the text's build problems, its exit status, the failure its verdict quotes, "
                "stderr silent" % (machine, want_family, want_value),
                j["family"] == want_family and j["value"] == want_value and j["problems"] == problems
                and j["status"] == p.returncode == j_p.returncode and j_p.stderr == b"" and p.stderr == b""
                and bool(j["messages"]) == bool(p.returncode)
                and all(m[len("doctor: "):] in verdict or m[len("doctor: "):] in out for m in j["messages"]), lines[0] + "\n" + out)
        if machine == "intel-xe":
            t.check("intel-xe: names this UCX as without Level Zero, and the ucx_info and libucp judged",
                    any("without Level Zero" in x for x in j["problems"]) and j["ucx"]
                    and j["ucx"][0]["ucx_info"] == shutil.which("ucx_info", path=HERE_ENV["PATH"])
                    and j["ucx"][0]["libucp"] == loader_libucp(j["ucx"][0]["ucx_info"]), lines[0])
    j_p = run([CLI, "doctor", "--json", "--value", "rc_x,tcp"], HERE_ENV)  # this node's devices, as UCX here sees them
    j = json.loads(j_p.stdout.decode())
    ucx, _, _ = ucx_unavailable("rc_x,tcp")
    t.check("--value rc_x,tcp: missing is what UCX calls not available, status 1 exactly then",
            sorted(j["missing"]) == sorted(ucx) and j["status"] == (1 if ucx else 0) and j["source"] == "--value", repr(j))


@case("no ucx_info in PATH")
@needs_ucx_info
def no_ucx_info(t):
    # Errors: no ucx_info in PATH.
    p = run([CLI, "doctor", "--value", "tcp"], env_for(None, preload=False, PATH="/nonexistent"))
    t.check("no ucx_info in PATH: exit 2, one stderr line naming ucx_info, nothing on stdout",
            p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1 and b"ucx_info" in p.stderr, repr(p))


if __name__ == "__main__":
    main("ucxtls doctor against the real ucx_info")
