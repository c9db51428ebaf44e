#!/usr/bin/env python3
"""One decision (docs/design.md, "Architecture"): whatever the command says a process gets is
what the library decides in that process. For every fixture machine (tests/fixtures/machines.py),
every hostile machine of tests/hardening/test_hostile.py, and the odd machines built here (a
Broadcom node whose second adapter cannot be read; an Intel node whose uevent files cannot be
read), under each set of variables below (defaults, an inherited pair, a kept value of another
family with and without UCXTLS_REPAIR=1, a template, an invalid setting, visibility variables that
hide every GPU), the real library runs in /bin/sh (exec'd directly with LD_PRELOAD) and its
UCX_TLS, UCXTLS_DERIVED and stderr line are compared with:
- `ucxtls explain --json`: its value and its "line" (the library's debug line);
- `ucxtls env` (eval'd by /bin/sh) and `ucxtls env --format=slurm` (applied as slurmstepd does);
- `ucxtls doctor`'s verdict line (the value it judges, or that UCX_TLS stays unset), against a
  fake ucx_info (an ELF program over a fake build) on PATH; an invalid setting: its stderr line is the library's.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, C, LIB, TESTS_DIR, UNSET, Z, add_case, case, env_for, fixture, machines, main, run, sh_value  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_builds import elf_ucx_info, fake_ucx  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
PORTABLE = "{rdma},sm,self,{ipc},{copy}"
ELSEWHERE = "rc_x,rc,dc_x,dc,rocm_copy"
UCX_CONF = "@ucx.conf"  # replaced by a directory whose ucx.conf assigns UCX_TLS (environment())  # a pair derived on another node (not this value anywhere here)

VARIABLE_SETS = [
    {},
    {"UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE},
    {"UCX_TLS": C},
    {"UCX_TLS": C, "UCXTLS_REPAIR": "1"},
    {"UCX_TLS": Z, "UCXTLS_REPAIR": "1"},
    {"UCX_TLS": C, "UCXTLS_DERIVED": ELSEWHERE, "UCXTLS_REPAIR": "yes"},  # a repair drops a stale marker
    {"UCX_TLS": C, "UCXTLS_REPAIR": "false"},  # boolean words: false is off
    {"UCXTLS_DISABLE": "maybe"},  # not a boolean word: an invalid setting
    {"UCXTLS_TEMPLATE": PORTABLE},
    {"UCXTLS_ACCEL": "bogus"},
    {"UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE, "UCXTLS_ACCEL": "bogus"},
    {"CUDA_VISIBLE_DEVICES": "", "ROCR_VISIBLE_DEVICES": "", "ZE_AFFINITY_MASK": "9"},
    {"UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE, "ZE_AFFINITY_MASK": "9"},
    {"UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE, "ZE_AFFINITY_MASK": "bogus"},  # names no device
    {"UCXTLS_ACCEL": "ze", "UCXTLS_DISABLE": "0"},
    {"UCXTLS_DISABLE": "1", "UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE},
    {"UCX_CONFIG_DIR": UCX_CONF},  # a ucx.conf that assigns UCX_TLS
    {"UCX_CONFIG_DIR": UCX_CONF, "UCX_TLS": ELSEWHERE, "UCXTLS_DERIVED": ELSEWHERE},
]

TOO_LONG = "x" * 300  # a symlink target no file system holds: ENAMETOOLONG, even for root
_work = []


def work():
    if not _work:
        d = tempfile.mkdtemp(prefix="ucxtls-one-")
        _work.append(d)
        import atexit
        atexit.register(lambda: (chmod_all(d), shutil.rmtree(d, ignore_errors=True)))
        # A ucx_info for doctor's plain mode (an ELF program, tests/cli/fake_builds.py) whose build
        # registers every transport the values here name.
        tls = "rc_mlx5 ud_mlx5 dc_mlx5 rc_verbs ud_verbs tcp posix sysv self cma cuda_copy cuda_ipc rocm_copy rocm_ipc ze_copy"
        fake_ucx(os.path.join(d, "lib"), tls.split(), "1.22.0-fake")
        elf_ucx_info(os.path.join(d, "bin"), os.path.join(d, "lib"))
    return _work[0]


def chmod_all(d):
    for sub, dirs, files in os.walk(d):
        for x in dirs:
            try:
                os.chmod(os.path.join(sub, x), 0o755)
            except OSError:
                pass


def broadcom_second_unreadable():
    """broadcom-roce with a third adapter (bnxt_re, uverbs2) whose IB device name cannot be read
    (a symlink to a name longer than NAME_MAX: ENAMETOOLONG, for root too; a loop would read as
    "not there"). The library stops at its driver link (an rc device was
    found, and only a ConnectX could change the answer); a full listing reads on and fails."""
    root = os.path.join(work(), "broadcom-second-unreadable")
    t = machines.Tree(root)
    machines.broadcom_roce(t)
    t.rdma(2, "0000:c1:00.0", "bnxt_re2", "bnxt_en", link_layer="Ethernet", pci_id=(0x14E4, 0x1760, 0x020000))
    ibdev = os.path.join(root, "sys/devices/pci0000:00/0000:c1:00.0/infiniband_verbs/uverbs2/ibdev")
    os.unlink(ibdev)
    os.symlink(TOO_LONG, ibdev)
    return root


def intel_uevent_unreadable():
    """intel-xe whose GPUs' uevent files cannot be read (ENAMETOOLONG, as above). With ZE_AFFINITY_MASK
    naming no device the library never reads them (the mask alone answers); a full listing does."""
    root = os.path.join(work(), "intel-uevent-unreadable")
    machines.intel_xe(machines.Tree(root))
    for sub, dirs, files in os.walk(os.path.join(root, "sys/devices")):
        if "uevent" in files and os.path.exists(os.path.join(sub, "drm")):
            p = os.path.join(sub, "uevent")
            os.unlink(p)
            os.symlink(TOO_LONG, p)
    return root


def hostile_machines():
    """tests/hardening/damaged_machines.py's machines, those of test_hostile.py."""
    sys.path.insert(0, os.path.join(TESTS_DIR, "hardening"))
    import damaged_machines  # noqa: E402
    top = os.path.join(work(), "hostile")
    os.makedirs(top)
    return damaged_machines.build_machines(top)


ODD = {}


def root_of(name):
    if name in machines.MACHINES:
        return fixture(name)
    if not ODD:
        ODD["broadcom-second-unreadable"] = broadcom_second_unreadable()
        ODD["intel-uevent-unreadable"] = intel_uevent_unreadable()
        for k, v in hostile_machines().items():
            ODD["hostile-" + k] = v
    return ODD[name]


def environment(root, extra, preload):
    env = env_for(None, preload=preload, UCXTLS_SYSROOT=root, **extra)
    if env.get("UCX_CONFIG_DIR") == UCX_CONF:
        d = os.path.join(work(), "ucx-conf")
        if not os.path.isdir(d):
            os.makedirs(d)
            with open(os.path.join(d, "ucx.conf"), "w") as f:
                f.write("[global]\nUCX_TLS=tcp,self\n")
        env["UCX_CONFIG_DIR"] = d
    env["PATH"] = os.path.join(work(), "bin") + ":" + env["PATH"]
    return env


SHOW = 'printf "%s|%s" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"'


def slurm_apply(env, text):
    """What slurmstepd does with a TaskProlog's stdout: `export NAME=value`, `unset NAME`."""
    env = dict(env)
    for line in text.split("\n"):
        if line.startswith("export ") and "=" in line:
            k, v = line[7:].split("=", 1)
            env[k] = v
        elif line.startswith("unset "):
            env.pop(line[6:], None)
    return env.get("UCX_TLS", UNSET), env.get("UCXTLS_DERIVED", UNSET)


def compare(t, name, extra):
    root = root_of(name)
    label = "%s %s" % (name, " ".join("%s=%r" % kv for kv in extra.items()) or "(defaults)")
    # The library, in a real process exec'd directly.
    dbg = dict(extra, UCXTLS_DEBUG="1")
    p = run(["/bin/sh", "-c", SHOW], environment(root, dbg, True))
    lib_tls, lib_derived = p.stdout.decode().split("|")
    lib_err = p.stderr.decode(errors="replace")
    lib_line = lib_err.rstrip("\n").split("\n")[-1]  # the decision's line (after any unknown-variable line)
    cmd_env = environment(root, extra, False)
    # explain --json
    p = run([CLI, "explain", "--json"], environment(root, dbg, False))
    try:
        doc = json.loads(p.stdout.decode())
    except ValueError:
        t.check(label + ": explain --json parses", False, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        return
    value = doc["value"] if doc["value"] is not None else UNSET
    t.equal(label + ": explain's value is the library's", value, lib_tls, "explain: %s %r; library: %r" % (doc["action"], doc["reasons"], lib_err))
    t.equal(label + ": explain's library line is the library's", doc["line"], lib_line)
    # env, eval'd by a shell that starts without the library
    p = run(["/bin/sh", "-c", 'out=$("$0" env) ; eval "$out"; ' + SHOW, CLI], cmd_env)
    env_tls, env_derived = p.stdout.decode().split("|")
    t.equal(label + ": eval \"$(ucxtls env)\" gives the library's pair", (env_tls, env_derived), (lib_tls, lib_derived),
            p.stderr.decode(errors="replace"))
    p = run([CLI, "env", "--format=slurm"], cmd_env)
    base = {k: v for k, v in cmd_env.items()}
    t.equal(label + ": ucxtls env --format=slurm applied gives the library's pair", slurm_apply(base, p.stdout.decode()),
            (lib_tls, lib_derived), p.stdout.decode() + p.stderr.decode(errors="replace"))
    # doctor's verdict
    p = run([CLI, "doctor"], cmd_env)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if doc["error"]:
        t.check(label + ": doctor of an invalid setting: exit 1, the library's line on stderr",
                p.returncode == 1 and err.rstrip("\n").split("\n")[-1] == lib_line, "%r\nlibrary: %r" % (err, lib_line))
        return
    m = re.search(r"^value +(.*) \(([^()]*)\)$", out, re.M)
    if m:
        judged = m.group(1)
    elif re.search(r"^UCX_TLS (stays unset here|is not in the environment)", out, re.M):
        judged = UNSET
    else:
        t.check(label + ": doctor prints a verdict", False, out + err)
        return
    t.equal(label + ": doctor judges the library's value", judged, lib_tls, out + err)


def all_machines():
    names = sorted(machines.MACHINES) + ["broadcom-second-unreadable", "intel-uevent-unreadable"]
    # The hostile machines' names, without building them (they are built when a case runs).
    names += ["hostile-" + n for n in ("random-bytes", "empty-files", "directories-for-files", "symlink-loops",
                                       "symlink-loops-inside", "huge-files", "sparse-files", "many-entries",
                                       "many-dev-entries", "fifos")]
    return names


def machine_case(t, name):
    for extra in VARIABLE_SETS:
        compare(t, name, extra)


for _name in all_machines():
    # The damaged machines are a CTest test of their own (tag odd_machine), so that each half runs
    # well within CTest's time limit.
    add_case("one decision: %s" % _name, machine_case, _name,
             tags=() if _name in machines.MACHINES else ("odd_machine",))


@case("a running process: /proc/PID/environ (ps e) keeps its start environment, its child shows the write; recipes.md says so")
def proc_environ(t):
    env = dict(env_for("intel-xe"), UCXTLS_DEBUG="0")
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $!; wait"], env=env, stdout=subprocess.PIPE)
    try:
        child = int(p.stdout.readline())
        for _ in range(500):  # until the child has exec'd sleep (before, it shows its parent's block)
            with open("/proc/%d/comm" % child) as f:
                if f.read().strip() == "sleep":
                    break
            time.sleep(0.01)
        def start_env(pid):
            with open("/proc/%d/environ" % pid, "rb") as f:
                return dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        t.check("the preloaded shell's /proc/PID/environ has no UCX_TLS (the library wrote all into its copy)",
                b"UCX_TLS" not in start_env(p.pid), repr(start_env(p.pid)))
        t.equal("its child's /proc/PID/environ has the value it was started with", start_env(child).get(b"UCX_TLS"), b"all")
        os.kill(child, 15)
    finally:
        p.wait(timeout=60)
    with open(os.path.join(os.path.dirname(TESTS_DIR), "docs", "recipes.md")) as f:
        text = f.read()
    t.check("recipes.md tells a user checking a rank that ps e and /proc/PID/environ never show it",
            "`ps e PID` and `/proc/PID/environ` never show the value the library wrote" in text)


@case("env of a repair: export UCX_TLS=<repaired> and nothing else; Slurm's form refuses a line break")
def env_repair(t):
    env = env_for("intel-xe", preload=False, UCX_TLS=C, UCXTLS_REPAIR="1")
    p = run([CLI, "env"], env)
    t.equal("sh form: the repaired value alone (no UCXTLS_DERIVED: a child elsewhere repairs again)",
            (p.returncode, p.stdout.decode(), p.stderr.decode()), (0, "export UCX_TLS='%s'\n" % Z, ""))
    p = run([CLI, "env", "--format=slurm"], env)
    t.equal("slurm form: one export line", (p.returncode, p.stdout.decode(), p.stderr.decode()),
            (0, "export UCX_TLS=%s\n" % Z, ""))
    broken = "tcp\nrc," + "cuda_copy"
    env = env_for("intel-xe", preload=False, UCX_TLS=broken, UCXTLS_REPAIR="1")
    tls, _, _ = sh_value(env_for("intel-xe", UCX_TLS=broken, UCXTLS_REPAIR="1"))
    t.equal("the library repairs a value with a line break in another entry", tls, "tcp\nrc,ze_copy")
    p = run([CLI, "env", "--format=slurm"], env)
    t.check("slurm form of that repair: exit 1, nothing on stdout, one line naming the line break",
            p.returncode == 1 and p.stdout == b"" and p.stderr.decode().count("\n") == 1 and "line break" in p.stderr.decode(),
            p.stdout.decode() + p.stderr.decode())
    p = run(["/bin/sh", "-c", 'eval "$("$0" env)"; ' + SHOW, CLI], env)
    t.equal("sh form of that repair, eval'd: the library's value, quoted", p.stdout.decode(), "tcp\nrc,ze_copy|" + UNSET)


if __name__ == "__main__":
    main("the command and the library decide the same, on every machine")
