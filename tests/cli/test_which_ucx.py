#!/usr/bin/env python3
"""docs/which-ucx.md against the UCX builds it quotes.

The doc's blocks marked `<!-- checked: NAME -->` are read from the doc and run as printed: each
`$ ` line is a command (run by bash, the stand-ins replaced), the lines after it are lines it must
print, in that order (`... ` stands for the start of a line); a doctor block is what doctor
prints, whole (a `...` line marks lines the doc leaves out). The registry builds (tag `wheels`:
NIXL 1.5.1's UCX and RAPIDS' libucx-cu12 1.22.0 from tests/wheels, `<site-packages>` standing for
the venv's) and the doc's words about their files; `ucxtls doctor --ucx` on each, on the fixture
machine the block's name ends with (`-dgx`, `-intel-xe`) replayed. The Level Zero blocks (tag
`ucx_ze`) need a UCX with Level Zero given as UCXTLSTEST_UCX_ZE (`/opt/ucx-ze` stands for it: no
registry serves one), and the `ucx_info -d` block the fake Level Zero GPU driver of tests/ze too.
Without what a case needs it prints SKIP with the reason.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import (LIB, SOURCE_DIR, add_case, case, env_for, main, run, site_packages,  # noqa: E402
                     FAKE_ZE_GPU, ucx_build_or_skip, wheels, ze_build_with_gpu)
from doc_blocks import not_whole, transcript  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
DOC = os.path.join(SOURCE_DIR, "docs", "which-ucx.md")
FAKE_GPU = FAKE_ZE_GPU
SITE = "<site-packages>"  # the doc's stand-in for the wheels' site-packages
ZE_PREFIX = "/opt/ucx-ze"  # the doc's stand-in for UCXTLSTEST_UCX_ZE
MACHINES = ("dgx", "intel-xe")


def doc_text():
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def block(name):
    """The text of the fenced block marked `<!-- checked: NAME -->` (exactly one)."""
    found = re.findall(r"^<!-- checked: %s -->\n```[a-z]*\n(.*?)^```$" % re.escape(name), doc_text(), re.M | re.S)
    if len(found) != 1:
        raise LookupError("%d blocks marked '<!-- checked: %s -->' in docs/which-ucx.md" % (len(found), name))
    return found[0]


def runs(name):
    """The block's commands, each with the lines it must print: [(command, [line, ...])]."""
    return transcript(block(name))


def comparable(line, any_component):
    return re.sub(r"component \d+ ", "component N ", line) if any_component else line


def printed_in_order(want, got, any_component=False):
    """The lines of want not found in got in that order (a `... ` line: the end of a line)."""
    lines = [comparable(l, any_component) for l in got.splitlines()]
    i, absent = 0, []
    for w in want:
        w2 = comparable(w, any_component)
        match = (lambda l: l.endswith(w2[4:])) if w2.startswith("... ") else (lambda l: l == w2)
        j = next((k for k in range(i, len(lines)) if match(lines[k])), None)
        if j is None:
            absent.append(w)
        else:
            i = j + 1
    return absent


def shell(command, env):
    """The doc's command as printed, by bash: (exit status, stdout, stderr)."""
    p = run(["/bin/bash", "-c", command], env, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check_block(t, name, stand_ins, env, status=None, any_component=False, version=None, whole=False):
    """Runs every command of block `name` with the stand-ins replaced; its lines must be printed
    (whole: exactly those lines, `...` marking what the doc leaves out). version: (the doc's, the
    build's) release, where the doc quotes a version the build may differ in."""
    for command, want in runs(name):
        real = command
        for stand_in, path in stand_ins.items():
            real = real.replace(stand_in, path)
            want = [w.replace(stand_in, path) for w in want]
        if version:
            want = [w.replace(version[0], version[1]) for w in want]
        rc, out, err = shell(real, env)
        if whole:
            differs = not_whole(want, out)
            t.check("[%s] `%s` prints the doc's block, whole" % (name, command), not differs,
                    "%s\n--- stdout:\n%s--- stderr:\n%s" % (differs, out, err))
        else:
            absent = printed_in_order(want, out, any_component)
            t.check("[%s] `%s` prints the doc's %d lines, in order" % (name, command, len(want)), not absent,
                    "not printed: %r\n--- stdout:\n%s--- stderr:\n%s" % (absent, out, err))
        if status is not None:
            t.equal("[%s] ... and exits %d" % (name, status), rc, status, out + err)


def wheel_env(machine, venv, **extra):
    """PATH with the built ucxtls first, then the venv's python3 (as where the wheels are installed)."""
    path = os.path.dirname(CLI) + ":" + os.path.join(venv, "bin") + ":" + env_for(None)["PATH"]
    return env_for(machine, preload=False, PATH=path, **extra)


def the_wheels(t):
    """(rapids, nixl) UcxBuilds, or None after a SKIP saying why."""
    rapids = ucx_build_or_skip(t, "rapids", "the registry wheels")
    nixl = rapids and ucx_build_or_skip(t, "nixl", "the registry wheels")
    return (rapids, nixl) if nixl else None


def venv_of(build):
    return wheels()[0]


def check_wheel_block(t, name):
    """Checks the doc's block `name` against the registry wheels' venv; (builds, venv), or None
    after a SKIP."""
    b = the_wheels(t)
    if not b:
        return None
    venv = venv_of(b[0])
    check_block(t, name, {SITE: site_packages(venv)}, wheel_env(None, venv), status=0)
    return b, venv


@case("RAPIDS' ucx_info -v: the release and configure line the doc quotes", tags=("wheels",))
def rapids_version(t):
    got = check_wheel_block(t, "rapids-version")
    if not got:
        return
    b = got[0]
    # Why the doc says LD_LIBRARY_PATH: without it the wheel's ucx_info loads the system's libucs.
    p = run([b[0].ucx_info, "-v"], env_for(None, preload=False, LD_LIBRARY_PATH=None))
    out = p.stdout.decode()
    t.check("without LD_LIBRARY_PATH the wheel's ucx_info does not load the wheel's libucs (its RUNPATH is RAPIDS' CI)",
            not re.search(r"^# Library path: %s/" % re.escape(b[0].libdir), out, re.M), out + p.stderr.decode())


@case("NIXL's UCX: ucp_get_version_string says what the doc quotes", tags=("wheels",))
def nixl_version(t):
    check_wheel_block(t, "nixl-version")


@case("a build without Level Zero: no ze_cpy component, no libuct_ze module (both wheels)", tags=("wheels",))
def no_ze_component(t):
    b = the_wheels(t)
    if not b:
        return
    rapids, nixl = b
    venv = venv_of(rapids)
    check_block(t, "rapids-components", {SITE: site_packages(venv)}, wheel_env(None, venv))
    got = run([rapids.ucx_info, "-epw", "-u", "t"], env_for(None, preload=False, **rapids.env)).stdout.decode()
    listed = re.findall(r"^#\s+component \d+\s+:\s+(\S+)", got, re.M)
    quoted = [l.split()[-1] for _, want in runs("rapids-components") for l in want]
    t.equal("the doc quotes RAPIDS' whole component list (none left out)", listed, quoted, got)
    for build, moddir in ((rapids, os.path.join(rapids.libdir, "ucx")), (nixl, os.path.join(nixl.libdir, "ucx"))):
        mods = sorted(os.listdir(moddir))
        t.check("%s: modules in %s, none libuct_ze" % (build.name, moddir),
                mods and not [m for m in mods if m.startswith("libuct_ze")], "%r" % mods)


def needed(path):
    """The DT_NEEDED entries of an ELF file (objdump -p)."""
    p = run(["objdump", "-p", path], env_for(None, preload=False))
    return re.findall(r"^\s+NEEDED\s+(\S+)", p.stdout.decode(), re.M)


@case("the doc's words on the wheels' files: libucp copies, CUDA runtime, no ucx_info in NIXL's, nixl needs both backends",
      tags=("wheels",))
def wheel_files(t):
    b = the_wheels(t)
    if not b:
        return
    rapids, nixl = b
    site = site_packages(venv_of(rapids))
    copies = [os.path.join(rapids.libdir, n) for n in ("libucp.so", "libucp.so.0", "libucp.so.0.0.0")]
    data = [open(c, "rb").read() if os.path.isfile(c) and not os.path.islink(c) else None for c in copies]
    t.check("RAPIDS' lib/ holds libucp.so, .so.0 and .so.0.0.0 as three identical files (no symlinks)",
            data[0] is not None and data.count(data[0]) == 3, "%r" % copies)
    t.check("RAPIDS' libcudart is bundled (libucx_cu12.libs/libcudart-*.so.12.9.79)",
            glob.glob(os.path.join(site, "libucx_cu12.libs", "libcudart-*.so.12.9.79")), os.path.join(site, "libucx_cu12.libs"))
    ucm = os.path.join(nixl.libdir, "ucx", "libucm_cuda.so.0.0.0")
    t.check("NIXL's libucm_cuda needs libcudart.so.12 and the wheel ships none",
            "libcudart.so.12" in needed(ucm) and not glob.glob(os.path.join(nixl.libdir, "libcudart*")), "%r" % needed(ucm))
    cuda = needed(os.path.join(nixl.libdir, "ucx", "libuct_cuda.so.0.0.0"))
    t.check("NIXL's libuct_cuda needs libcuda.so.1 and libnvidia-ml.so.1",
            "libcuda.so.1" in cuda and "libnvidia-ml.so.1" in cuda, "%r" % cuda)
    t.check("NIXL's wheel ships no ucx_info", not glob.glob(os.path.join(site, "nixl*", "**", "ucx_info"), recursive=True))
    meta = open(glob.glob(os.path.join(site, "nixl-*.dist-info", "METADATA"))[0], encoding="utf-8").read()
    requires = re.findall(r"^Requires-Dist: (\S+)$", meta, re.M)
    t.check("the nixl package requires both nixl-cu12 and nixl-cu13 (no extra needed)",
            "nixl-cu12==1.5.1" in requires and "nixl-cu13==1.5.1" in requires, meta[:2000])


def doctor_block(t, which, machine):
    b = the_wheels(t)
    if not b:
        return
    venv = venv_of(b[0])
    check_block(t, "%s-doctor-%s" % (which, machine), {SITE: site_packages(venv)}, wheel_env(machine, venv), status=1,
                whole=True)


for _which in ("nixl", "rapids"):
    for _machine in MACHINES:
        add_case("ucxtls doctor --ucx on %s's wheel, %s replayed: the doc's block, whole, exit 1" % (_which, _machine),
                 doctor_block, _which, _machine, tags=("wheels",))


# The Level Zero blocks: a site's build given as UCXTLSTEST_UCX_ZE.
def ze_env(build, machine=None, **extra):
    path = os.path.dirname(CLI) + ":" + env_for(None)["PATH"]
    return env_for(machine, preload=False, PATH=path, **dict(build.env, **extra))


def ze_version(build):
    out = run([build.ucx_info, "-v"], env_for(None, preload=False, **build.env)).stdout.decode()
    m = re.search(r"^# (?:Library version:|Version) (\S+)", out, re.M)
    return m.group(1) if m else None


@case("ucx_info -d with a Level Zero driver: ze_cpy and ze_copy on GPU0, as the doc quotes", tags=("ucx_ze",))
def ze_devices(t):
    build = ze_build_with_gpu(t, "ucx_info -d with a driver")
    if not build:
        return
    check_block(t, "ucx-ze-devices", {ZE_PREFIX: build.prefix}, ze_env(build, ZE_ENABLE_ALT_DRIVERS=FAKE_GPU), status=0)


@case("without a driver: no ze_copy, the debug line and the ze_cpy component the doc quotes", tags=("ucx_ze",))
def ze_no_driver(t):
    build = ucx_build_or_skip(t, "ze")
    if not build:
        return
    env = ze_env(build)
    out = run([build.ucx_info, "-d"], env).stdout.decode()
    t.check("ucx_info -d without a driver: no ze_cpy, no ze_copy (tcp listed)",
            "ze_c" not in out and "Transport: tcp" in out, out)
    check_block(t, "ucx-ze-no-driver", {ZE_PREFIX: build.prefix}, env, any_component=True)
    t.check("the build has a libuct_ze module in lib/ucx",
            glob.glob(os.path.join(build.libdir, "ucx", "libuct_ze*.so*")), os.path.join(build.libdir, "ucx"))


@case("ucxtls doctor --ucx on an Intel node: the build serves ze_copy, exit 0", tags=("ucx_ze",))
def ze_doctor_ucx(t):
    build = ucx_build_or_skip(t, "ze")
    if build:
        check_block(t, "ucx-ze-doctor", {ZE_PREFIX: build.prefix}, ze_env(build, "intel-xe"), status=0)


@case("plain ucxtls doctor with the build first in PATH: its version, ze_copy missing without a driver, ok with one",
      tags=("ucx_ze",))
def ze_doctor_node(t):
    build = ucx_build_or_skip(t, "ze")
    if not build:
        return
    version = ze_version(build)
    if not t.check("ucx_info -v names the build's version", version):
        return
    env = ze_env(build, "intel-xe")
    check_block(t, "ucx-ze-doctor-node", {ZE_PREFIX: build.prefix}, env, status=1, version=("1.22.0", version))
    if not os.path.exists(FAKE_GPU):
        t.skip("doctor with a driver", "the fake Level Zero GPU driver (tests/ze) is not built: %s" % FAKE_GPU)
        return
    env.update(ZE_ENABLE_ALT_DRIVERS=FAKE_GPU, PATH=os.path.join(build.prefix, "bin") + ":" + env["PATH"])
    p = run([CLI, "doctor", "--value", "tcp,ze_copy"], env)
    out = p.stdout.decode()
    t.check("with the fake GPU driver: ok ze_copy, exit 0", re.search(r"^ok +ze_copy$", out, re.M) and p.returncode == 0,
            out + p.stderr.decode())


if __name__ == "__main__":
    main("docs/which-ucx.md: the registry UCX builds and a UCX with Level Zero, as the doc quotes them")
