#!/usr/bin/env python3
"""docs/which-ucx.md's tested recipe for a UCX with Level Zero support, checked against the two
UCX 1.22.0 builds that scripts/test.sh makes (tests/ucx/build_ucx.sh ze|noze).

The doc's blocks marked `<!-- checked: NAME -->` are read from the doc: the configure line it
prints is the one the builds were configured with (ucx_info -v), the extra options it says the
tests add are exactly the rest, and every output line it quotes is a line that the command printed
here (`$ ` lines are the commands, `... ` stands for the start of a log line; /opt/ucx-1.22-ze and
/opt/ucx-1.22-noze stand for the builds' prefixes). Every case needs the builds and prints SKIP
with the reason without them; the `ucx_info -d` block needs the fake Level Zero GPU driver too
(tests/ze, UCXTLSTEST_ZE_FAKE_GPU).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, SOURCE_DIR, case, env_for, main, run, ucx122_or_skip  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
DOC = os.path.join(SOURCE_DIR, "docs", "which-ucx.md")
FAKE_GPU = os.environ.get("UCXTLSTEST_ZE_FAKE_GPU", os.path.join(BUILD_DIR, "tests", "ze", "libze_fake_gpu.so"))
DOC_PREFIX = {"ze": "/opt/ucx-1.22-ze", "noze": "/opt/ucx-1.22-noze"}
INTEL = "intel-xe"  # the replayed Intel node the doc's doctor lines are for


def doc_text():
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def block(name):
    """The text of the fenced block marked `<!-- checked: NAME -->` (exactly one)."""
    found = re.findall(r"^<!-- checked: %s -->\n```[a-z]*\n(.*?)^```$" % re.escape(name), doc_text(), re.M | re.S)
    if len(found) != 1:
        raise LookupError("%d blocks marked '<!-- checked: %s -->' in docs/which-ucx.md" % (len(found), name))
    return found[0]


def quoted(name):
    """The output lines of block NAME: its lines but the commands (`$ `), as a list."""
    return [l for l in block(name).splitlines() if l.strip() and not l.startswith("$ ")]


def builds(t, *variants):
    """{variant: prefix} for the builds asked for, or None after a SKIP naming the reason."""
    out = {}
    for v in variants:
        prefix = ucx122_or_skip(t, v)
        if not prefix:
            return None
        out[v] = prefix
    return out


def real(text, prefixes):
    """text with the doc's stand-in prefixes replaced by the builds' real ones."""
    for v, p in prefixes.items():
        text = text.replace(DOC_PREFIX[v], p)
    return text


def has_lines(t, what, want, got, detail=""):
    """Every line of want is a line of got (a `... ` line: the end of one)."""
    lines = got.splitlines()
    absent = [w for w in want if not (any(l.endswith(w[4:]) for l in lines) if w.startswith("... ") else w in lines)]
    return t.check(what, not absent, "not printed: %r\n%s" % (absent, detail or got))


def options(line):
    return line.split()


@case("the configure line: the doc's is the builds', and the options the tests add are the ones it names")
def configure_line(t):
    b = builds(t, "ze", "noze")
    if not b:
        return
    text = block("ucx-ze-build")
    doc = [l for l in text.splitlines() if l.startswith("../configure ")]
    if not t.equal("one configure line in the doc's build block", len(doc), 1, text):
        return
    doc_opts = [o for o in options(doc[0])[1:] if not o.startswith("--prefix=")]
    extra = re.search(r"adding\s+`([^`]+)`", doc_text())
    if not t.check("the doc names the options the tests add (`adding `...``)", extra):
        return
    extra = options(extra.group(1))
    for v, flag_from, flag_to in (("ze", None, None), ("noze", "--with-ze", "--with-ze=no")):
        out = run([os.path.join(b[v], "bin", "ucx_info"), "-v"], env_for(None, preload=False)).stdout.decode()
        conf = re.search(r"^# Configured with: (.*)$", out, re.M)
        if not t.check("ucx_info -v of the %s build prints its configure line" % v, conf, out):
            continue
        got = [o for o in options(conf.group(1)) if not o.startswith("--prefix=")]
        want = [flag_to if o == flag_from else o for o in doc_opts]
        t.equal("the %s build was configured with the doc's line%s plus the options the doc says the tests add"
                % (v, "" if v == "ze" else " (--with-ze=no for --with-ze)"), sorted(got), sorted(want + extra), out)
    # The packages the recipe installs are among those scripts/test.sh installs.
    apt = [l for l in text.splitlines() if l.startswith("apt-get install ")]
    with open(os.path.join(SOURCE_DIR, "scripts", "test.sh"), encoding="utf-8") as f:
        script = f.read()
    packages = re.search(r"^PACKAGES=\((.*?)\)", script, re.M | re.S).group(1).split()
    t.check("the recipe's apt-get line names packages scripts/test.sh installs",
            len(apt) == 1 and all(p in packages for p in apt[0].split()[2:]), "%r\n%r" % (apt, packages))


@case("ucx_info -v: the doc's lines are what the --with-ze build prints")
def version(t):
    b = builds(t, "ze")
    if not b:
        return
    out = run([os.path.join(b["ze"], "bin", "ucx_info"), "-v"], env_for(None, preload=False)).stdout.decode()
    want = quoted("ucx-ze-version")
    has_lines(t, "ucx_info -v prints the doc's version line", [w for w in want if "Configured" not in w], out)


@case("ucx_info -d with a Level Zero driver: ze_cpy and ze_copy on GPU0, as the doc quotes")
def devices(t):
    b = builds(t, "ze", "noze")
    if not b:
        return
    if not os.path.exists(FAKE_GPU):
        t.skip("ucx_info -d with a driver", "the fake Level Zero GPU driver (tests/ze) is not built: %s" % FAKE_GPU)
        return
    env = env_for(None, preload=False, ZE_ENABLE_ALT_DRIVERS=FAKE_GPU)
    out = run([os.path.join(b["ze"], "bin", "ucx_info"), "-d"], env).stdout.decode()
    has_lines(t, "the --with-ze build's ucx_info -d with the fake GPU prints the doc's lines", quoted("ucx-ze-devices"), out)
    out = run([os.path.join(b["noze"], "bin", "ucx_info"), "-d"], env).stdout.decode()
    t.check("control: the --with-ze=no build's ucx_info -d with the same driver has no ze_copy",
            "Transport: ze_copy" not in out and "Transport: tcp" in out, out)


@case("without a driver: no ze_copy, the debug line and the ze_cpy component as the doc quotes; none in --with-ze=no")
def no_driver(t):
    b = builds(t, "ze", "noze")
    if not b:
        return
    info = os.path.join(b["ze"], "bin", "ucx_info")
    env = env_for(None, preload=False)
    out = run([info, "-d"], env).stdout.decode()
    t.check("the --with-ze build's ucx_info -d without a driver: no ze_cpy, no ze_copy (tcp listed)",
            "ze_c" not in out and "Transport: tcp" in out, out)
    want = quoted("ucx-ze-no-driver")
    p = run([info, "-d"], env_for(None, preload=False, UCX_LOG_LEVEL="debug"))
    debug = p.stdout.decode() + p.stderr.decode()
    has_lines(t, "UCX_LOG_LEVEL=debug ucx_info -d prints the doc's 'failure to initialize ze library' line",
              [w for w in want if "ze library" in w], debug, "\n".join(l for l in debug.splitlines() if "ze" in l))
    comp = run([info, "-epw", "-u", "t"], env).stdout.decode()
    has_lines(t, "ucx_info -epw -u t lists the doc's ze_cpy component line", [w for w in want if "component" in w], comp)
    noze = run([os.path.join(b["noze"], "bin", "ucx_info"), "-epw", "-u", "t"], env).stdout.decode()
    t.check("the --with-ze=no build: no ze_cpy component, no libuct_ze in lib/ucx",
            "ze_cpy" not in noze and "component" in noze
            and not [f for f in os.listdir(os.path.join(b["noze"], "lib", "ucx")) if f.startswith("libuct_ze")], noze)


@case("ucxtls doctor --ucx on an Intel node: the --with-ze build serves ze_copy, the --with-ze=no build is named")
def doctor_ucx(t):
    b = builds(t, "ze", "noze")
    if not b:
        return
    text = block("ucx-ze-doctor")
    runs = re.split(r"^\$ ", text, flags=re.M)[1:]
    if not t.equal("the doc quotes two doctor --ucx runs", len(runs), 2, text):
        return
    env = env_for(INTEL, preload=False)
    for chunk, (v, status) in zip(runs, (("ze", 0), ("noze", 1))):
        cmd, *want = chunk.rstrip("\n").split("\n")
        argv = real(cmd, b).split()
        if not t.check("the doc's command is ucxtls doctor --ucx <the %s build>" % v,
                       argv[:3] == ["ucxtls", "doctor", "--ucx"] and argv[3:] == [b[v]], cmd):
            continue
        p = run([CLI] + argv[1:], env)
        out = p.stdout.decode()
        has_lines(t, "doctor --ucx on the %s build (%s replayed) prints the doc's lines" % (v, INTEL), want, out,
                  out + p.stderr.decode())
        t.equal("... and exits %d" % status, p.returncode, status, out + p.stderr.decode())


@case("plain ucxtls doctor with the --with-ze build first in PATH: version 1.22.0, ze_copy missing without a driver, ok with one")
def doctor_node(t):
    b = builds(t, "ze")
    if not b:
        return
    text = block("ucx-ze-doctor-node")
    want = [real(l, b) for l in quoted("ucx-ze-doctor-node")]
    env = env_for(INTEL, preload=False, PATH=os.path.join(b["ze"], "bin") + ":" + env_for(None)["PATH"])
    p = run([CLI, "doctor"], env)
    out = p.stdout.decode()
    has_lines(t, "doctor (ucx_info -d of the 1.22 build) prints the doc's lines, the version read from 1.22's "
                 "'Library version:'", want, out, text + "\n" + out + p.stderr.decode())
    t.equal("... and exits 1", p.returncode, 1, out)
    if not os.path.exists(FAKE_GPU):
        t.skip("doctor with a driver", "the fake Level Zero GPU driver (tests/ze) is not built: %s" % FAKE_GPU)
        return
    env["ZE_ENABLE_ALT_DRIVERS"] = FAKE_GPU
    p = run([CLI, "doctor", "--value", "tcp,ze_copy"], env)
    out = p.stdout.decode()
    t.check("with the fake GPU driver: ok ze_copy, exit 0", re.search(r"^ok +ze_copy$", out, re.M) and p.returncode == 0,
            out + p.stderr.decode())


if __name__ == "__main__":
    main("docs/which-ucx.md: a UCX with Level Zero support, checked against the UCX 1.22 builds")
