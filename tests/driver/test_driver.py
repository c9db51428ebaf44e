#!/usr/bin/env python3
"""The driver tier (UCXTLS_PROBE=driver) through the real command, helper and library, in real
processes.

`ucxtls probe --save` runs the helper ucxtls-probe as its own child; the helper asks fake
libcuda.so.1 / libze_loader.so.1 (built by tests/driver/CMakeLists.txt; they answer from FAKE_*
variables and log every call to FAKE_LOG), and the answer is saved per node. Hosts with the library
then read that file. Fixture machines make the kernel's and the driver's answers differ, so each
test sees which tier answered. Then the real libraries where they exist: Debian's Level Zero loader
(libze1) and the CUDA toolkit's stub libcuda.so. The saved answer's trust, places and the real
drivers: driver_saved.py.
"""
import os
import re
import shutil
import signal
import stat
import sys

from driver_common import (C, CUDA, HELPER, LIB, NO_FORK, R, SCRATCH, SHOW, SYSROOT_NOTE, U0, U1, UCXTLS, UNSET, Z,
                           ZE_NEW, ZE_OLD, add_case, boot_of, case, env_for, have, host_env, include, log_lines,
                           main, new_dir, new_log, once, probe, run, saved, start, still_alive, tls_of,
                           without_sysroot_note)


@case("the helper by hand: its report on stdout")
def helper_by_hand(t):
    p = run([HELPER], dict(env_for(None, preload=False), LD_LIBRARY_PATH=CUDA + ":" + ZE_NEW, FAKE_CUDA_COUNT="2",
                           FAKE_CUDA_UUIDS=U0 + "," + U1, FAKE_ZE_DEVICES="gpu,vpu;gpu"))
    t.equal("ucxtls-probe by hand prints its report, with the CUDA UUIDs and the Level Zero GPUs in order", p.stdout.decode(),
            "ucxtls-driver 2\ncuda answer 2 0 CUDA_SUCCESS\n"
            "cuda-device 0 %s Fake CUDA device 0\ncuda-device 1 %s Fake CUDA device 1\n"
            "ze answer 2 0 ZE_RESULT_SUCCESS\n"
            "ze-device 0 a0a1a2a3a4a5a6a7a8a9aaabacadaeaf Fake Level Zero device 0.0\n"
            "ze-device 1 b0b1b2b3b4b5b6b7b8b9babbbcbdbebf Fake Level Zero device 1.0\nend\n" % (U0, U1))
    t.check("ucxtls-probe rejects an unknown argument", run([HELPER, "--bogus"], env_for(None, preload=False)).returncode == 2)


@case("ucxtls probe prints the answer per family")
def probe_prints(t):
    # --- `ucxtls probe` prints the answer per family, asked with the visibility variables unset.
    cache = new_dir()
    p, _ = probe([], "dgx", cache, FAKE_CUDA_COUNT="2", FAKE_CUDA_UUIDS=U0 + "," + U1, FAKE_ZE_DEVICES="gpu",
                 CUDA_VISIBLE_DEVICES="", ZE_AFFINITY_MASK="x")
    out = p.stdout.decode()
    t.check("ucxtls probe: both CUDA devices with their UUIDs although CUDA_VISIBLE_DEVICES='' here (unset for the helper)",
            p.returncode == 0 and re.search(r"^cuda\s+2 device\(s\) \(CUDA_SUCCESS\)$", out, re.M) and U0 in out and U1 in out,
            out + p.stderr.decode())
    t.check("ucxtls probe: the ze GPU although ZE_AFFINITY_MASK=x here; ROCm is the kernel probe's",
            re.search(r"^ze\s+1 device\(s\) \(ZE_RESULT_SUCCESS\)$", out, re.M) and re.search(r"^rocm\s+not asked", out, re.M), out)
    t.check("ucxtls probe without --save saves nothing and says where --save would",
            not os.listdir(cache) and "ucxtls probe --save stores it as %s/driver" % cache in out, out)
    p, _ = probe(["--bogus"], None, cache)
    t.check("ucxtls probe --bogus: exit 2, one stderr line, nothing on stdout",
            p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1, repr(p))
    p, _ = probe([], None, cache, UCXTLS_PROBE_TIMEOUT_MS="soon")
    t.check("ucxtls probe with UCXTLS_PROBE_TIMEOUT_MS=soon: exit 1, the variable named",
            p.returncode == 1 and b"UCXTLS_PROBE_TIMEOUT_MS" in p.stderr, repr(p))


@case("ucxtls probe --save: the file")
def save_file(t):
    cache = new_dir()
    p, _ = probe(["--save"], "dgx", cache, FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu,gpu")
    path = os.path.join(cache, "driver")
    st = os.stat(path) if os.path.exists(path) else None
    t.check("--save: exit 0, saved as CACHE/driver, mode 0644, and the library's own reader accepts it",
            p.returncode == 0 and st and stat.S_IMODE(st.st_mode) == 0o644
            and "reader answer saved by ucxtls probe at %s" % path in p.stdout.decode(), p.stdout.decode() + p.stderr.decode())
    t.check("--save: the file names this boot (the replayed machine's boot id)",
            st and ("boot %s\n" % boot_of("dgx")) in open(path).read())
    t.equal("--save: no temporary file left beside it", sorted(os.listdir(cache)), ["driver"])


# `ucxtls probe --save`, then a process reads it: which tier answers.
ROWS = [
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu,gpu"}, {}, Z,
     ["driver tier: answer saved by ucxtls probe at ", "cuda: driver API: 0 device(s) (CUDA_ERROR_NO_DEVICE)",
      "ze: driver API: 2 device(s) (ZE_RESULT_SUCCESS)"]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu,gpu"}, {"UCXTLS_PROBE": "kernel"}, C,
     ["; cuda: 1+ GPU(s) in /proc/driver/nvidia/gpus", "!driver tier"]),  # the kernel tier ignores it
    ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "2"}, {}, C, ["cuda: driver API: 2 device(s) (CUDA_SUCCESS)"]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "1", "FAKE_ZE_DEVICES": "gpu"}, {}, C, []),  # both: CUDA wins
    ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu"}, {}, UNSET,
     ["ze: driver API: 0 device(s)"]),  # an NPU is not ze_copy's
    ("intel-xe", [CUDA, ZE_OLD], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu"}, {}, UNSET,
     ["ze: driver API: 0 device(s)"]),
    ("intel-xe", [CUDA, ZE_OLD], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "vpu;cpu,gpu"}, {}, Z,
     ["ze: driver API: 1 device(s)"]),  # a second driver with a GPU
    ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x78000001"}, {}, UNSET,
     ["(ZE_RESULT_ERROR_UNINITIALIZED)"]),
    ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x70010000"}, {}, UNSET,
     ["(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)"]),  # a cgroup-blocked /dev/dri
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "34"}, {}, UNSET, ["(CUDA_ERROR_STUB_LIBRARY)"]),
    # Broken drivers: no answer, the kernel's stands, with the driver's own name.
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "803"}, {}, C,
     ["cuda: driver API gave no answer (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH), kernel: "]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "802"}, {}, C, ["(CUDA_ERROR_SYSTEM_NOT_READY)"]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT_RC": "999", "FAKE_CUDA_COUNT": "3"}, {}, C, ["(CUDA_ERROR_UNKNOWN)"]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "4242"}, {}, C, ["(CUresult 4242)"]),  # cuGetErrorName fails
    ("intel-xe", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu", "FAKE_ZE_PROPS_RC": "0x70000001"},
     {}, Z, ["ze: driver API gave no answer (ZE_RESULT_ERROR_DEVICE_LOST), kernel: "]),
    ("dgx", [CUDA, ZE_NEW], {"FAKE_CUDA_COUNT": "2", "FAKE_CUDA_UUID_RC": "999"}, {}, C,
     ["cuda: driver API: 2 device(s) (CUDA_SUCCESS)"]),  # devices without UUIDs still count
    # ROCm is always the kernel's.
    ("mi300x", [CUDA, ZE_NEW], {"FAKE_CUDA_INIT": "100"}, {}, R, ["rocm: 1+ KFD GPU node(s)"]),
]


def row_label(name, libs, fake, extra):
    return "%s, %s %s%s" % (name, "+".join(os.path.basename(l) for l in libs),
                            " ".join("%s=%s" % kv for kv in fake.items()),
                            "".join(" %s=%s" % kv for kv in extra.items()))


def tier_row(t, name, libs, fake, extra, want, fragments):
    label = row_label(name, libs, fake, extra)
    cache, p = saved(name, libs, **fake)
    tls, err = tls_of(host_env(name, cache, **extra))
    t.equal(label + ": UCX_TLS", tls, want, "stderr: " + err + "\nprobe: " + p.stdout.decode() + p.stderr.decode())
    lines = err.splitlines()
    t.check(label + ": one debug line with " + repr(fragments),
            len(lines) == 1 and all((f[1:] not in lines[0]) if f[0] == "!" else (f in lines[0]) for f in fragments), err)


for _row in ROWS:
    add_case("which tier answers: " + row_label(*_row[:4]), tier_row, *_row)


# Each process applies its own visibility variables to the saved devices.
@once
def saved_for_visibility():
    return saved("intel-xe", FAKE_CUDA_COUNT="2", FAKE_CUDA_UUIDS=U0 + "," + U1, FAKE_ZE_DEVICES="gpu")[0]


VISIBILITY = [
    ({}, C, "cuda: driver API: 2 device(s) (CUDA_SUCCESS)"),
    ({"CUDA_VISIBLE_DEVICES": "1"}, C, "cuda: driver API: 2 device(s), 1 visible (CUDA_SUCCESS)"),
    ({"CUDA_VISIBLE_DEVICES": "2"}, Z, "cuda: driver API: 2 device(s), 0 visible"),  # out of range: none
    ({"CUDA_VISIBLE_DEVICES": "0,2,1"}, C, "1 visible"),  # the list ends at the first invalid entry
    ({"CUDA_VISIBLE_DEVICES": U1[:12]}, C, "1 visible"),  # a GPU- prefix of a saved UUID
    ({"CUDA_VISIBLE_DEVICES": "GPU-ffff"}, Z, "0 visible"),  # no saved device has it
    ({"CUDA_VISIBLE_DEVICES": ""}, Z, "0 visible"),
    ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, Z, "0 visible"),
    ({"CUDA_VISIBLE_DEVICES": "", "ZE_AFFINITY_MASK": "x"}, UNSET, "ze: driver API: 1 device(s), 0 visible"),
    ({"CUDA_VISIBLE_DEVICES": "", "ZE_AFFINITY_MASK": ""}, Z, "ze: driver API: 1 device(s) (ZE_RESULT_SUCCESS)"),
]


def visibility(t, extra, want, fragment):
    cache = saved_for_visibility()
    tls, err = tls_of(host_env("intel-xe", cache, **extra))
    t.check("saved 2 CUDA (UUIDs) + 1 ze, %s: %s, '%s'" % (extra or "no visibility variable", want, fragment),
            tls == want and fragment in err, "%s %s" % (tls, err))


for _extra, _want, _fragment in VISIBILITY:
    add_case("visibility on the saved devices: %s" % (" ".join("%s=%r" % kv for kv in _extra.items()) or "none set"),
             visibility, _extra, _want, _fragment)


@case("the helper asks each loader the right way")
def loader_calls(t):
    for libs, want in (([CUDA, ZE_NEW], ["cuda cuInit", "ze zeInitDrivers stype=0x20021 flags=1",
                                         "ze zeInitDrivers stype=0x20021 flags=1", "ze zeDeviceGetProperties stype=0x3"]),
                       ([CUDA, ZE_OLD], ["cuda cuInit", "ze zeInit flags=1", "ze zeDriverGet", "ze zeDriverGet",
                                         "ze zeDeviceGetProperties stype=0x3"])):
        log = new_log()
        p, _ = probe(["--save"], "intel-xe", new_dir(), libs, FAKE_LOG=log, FAKE_ZE_DEVICES="gpu")
        lines = log_lines(log)
        t.equal("%s: the helper's calls" % os.path.basename(libs[1]), [l.split(" pid=")[0] for l in lines], want)
        t.check("... made by ucxtls-probe, holding only stdio and its report fd (0-3)",
                lines and all("exe=" + os.path.realpath(HELPER) in l and l.endswith("fds=0,1,2,3,") for l in lines),
                "\n".join(lines))


@case("a driver that hangs, crashes, leaves a child or prints")
def driver_misbehaves(t):
    # --- The driver misbehaves: `ucxtls probe --save` ends within the timeout, records "no answer"
    # with the reason, and a process then has the kernel's answer and says why.
    for label, fake, why, short in (
            ("cuda hangs", {"FAKE_CUDA_HANG": "30000"}, "gave no answer within UCXTLS_PROBE_TIMEOUT_MS=400 ms: killed",
             "ucxtls-probe timed out after 400 ms"),
            ("ze hangs", {"FAKE_ZE_HANG": "30000"}, "gave no answer within UCXTLS_PROBE_TIMEOUT_MS=400 ms: killed",
             "ucxtls-probe timed out after 400 ms"),
            ("cuda aborts", {"FAKE_CUDA_CRASH": "abort"}, "died of signal 6", "ucxtls-probe died of signal 6"),
            ("cuda segfaults", {"FAKE_CUDA_CRASH": "segv"}, "died of signal 11", "ucxtls-probe died of signal 11"),
            ("ze aborts", {"FAKE_ZE_CRASH": "abort"}, "died of signal 6", "ucxtls-probe died of signal 6")):
        log = new_log()
        cache = new_dir()
        p, secs = probe(["--save"], "dgx", cache, FAKE_LOG=log, UCXTLS_PROBE_TIMEOUT_MS="400", **fake)
        err = p.stderr.decode()
        t.check("%s: ucxtls probe --save exits 1 in %.2f s (timeout 0.4 s) and says '%s'" % (label, secs, why),
                p.returncode == 1 and secs < 1.9 and why in err and without_sysroot_note(err).count("\n") == 1
                and SYSROOT_NOTE in err, err + p.stdout.decode())
        pids = sorted(set(l.split(" pid=")[1].split()[0] for l in log_lines(log) if " pid=" in l))
        left = still_alive(pids)
        t.check("%s: no helper left running (within 10 s of the command's exit)" % label, pids and not left,
                "helper pids %s, still running %s" % (pids, left))
        tls, herr = tls_of(host_env("dgx", cache))
        t.check("%s: a process then has the kernel's answer, and its debug line says why" % label,
                tls == C and "cuda: driver API gave no answer (%s), kernel: " % short in herr, herr)
    # A child the driver started in the helper's group goes with it; a detached daemon (setsid)
    # keeps no pipe of ours open, so the command returns at once.
    log = new_log()
    p, secs = probe(["--save"], "dgx", new_dir(), FAKE_LOG=log, FAKE_CUDA_CHILD="20000")
    kids = [l.split(" child=")[1].split()[0] for l in log_lines(log) if " child=" in l]
    t.check("a driver that leaves a child: the command answers and the child is killed with the helper's group (gone within 10 s)",
            p.returncode == 0 and len(kids) == 1 and not still_alive(kids), "%s %s" % (kids, p.stderr.decode()))
    p, secs = probe(["--save"], "dgx", new_dir(), FAKE_CUDA_DAEMON="3000", FAKE_CUDA_COUNT="1")
    t.check("a driver that leaves a setsid daemon: the command returns at once (%.2f s)" % secs,
            p.returncode == 0 and secs < 1.5, p.stderr.decode())
    p, _ = probe([], "dgx", new_dir(), FAKE_CUDA_NOISE="FAKE NOISE", FAKE_ZE_NOISE="ZE NOISE", FAKE_CUDA_COUNT="1")
    t.check("a driver printing on stdout/stderr: nothing of it reaches the command's output",
            p.returncode == 0 and b"NOISE" not in p.stdout + p.stderr, repr(p))


@case("a stand-in helper: its environment and every way it fails")
def stand_in_helper(t):
    # --- A stand-in helper beside a copy of the command: its environment, and every way it fails.
    d = new_dir("cmd-")
    exe = os.path.join(d, "ucxtls")
    shutil.copy(UCXTLS, exe)
    fake_helper = os.path.join(d, "ucxtls-probe")

    def helper_script(body):
        with open(fake_helper, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(fake_helper, 0o755)

    envdump = os.path.join(d, "env")
    helper_script("env > %s; printf 'ucxtls-driver 2\\ncuda answer 0 100 X\\nze answer 0 0 Y\\nend\\n' >&3" % envdump)
    p, _ = probe([], None, d, exe=exe, LD_PRELOAD=LIB, UCXTLS_PROBE="driver", UCXTLS_DISABLE="0",
                 CUDA_VISIBLE_DEVICES="0", ZE_AFFINITY_MASK="0", ROCR_VISIBLE_DEVICES="0")
    with open(envdump) as f:
        henv = dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)
    t.check("the helper's environment: visibility variables unset, UCXTLS_DISABLE=1, no UCXTLS_PROBE, the rest kept",
            p.returncode == 0 and "CUDA_VISIBLE_DEVICES" not in henv and "ZE_AFFINITY_MASK" not in henv
            and henv.get("UCXTLS_DISABLE") == "1" and "UCXTLS_PROBE" not in henv and henv.get("LD_PRELOAD") == LIB
            and henv.get("ROCR_VISIBLE_DEVICES") == "0", repr(henv))
    failures = [
        ("exit 5", "ucxtls-probe exited with status 5 without a report"),
        ("echo garbage >&3", "ucxtls-probe wrote a malformed report (not a driver report"),
        ("printf 'ucxtls-driver 2\\ncuda answer 0 0 A\\n' >&3", "ucxtls-probe wrote a malformed report (incomplete"),
        ("kill -KILL $$", "ucxtls-probe died of signal 9"),
        ("exec sleep 30", "ucxtls-probe gave no answer within UCXTLS_PROBE_TIMEOUT_MS=300 ms: killed"),
    ]
    for body, why in failures:
        helper_script(body)
        cache = new_dir()
        p, secs = probe(["--save"], "dgx", cache, exe=exe, UCXTLS_PROBE_TIMEOUT_MS="300")
        tls, herr = tls_of(host_env("dgx", cache))
        t.check("helper `%s`: exit 1, '%s', saved as no answer, the kernel's answer stands" % (body, why),
                p.returncode == 1 and why in p.stderr.decode() and tls == C and "driver API gave no answer" in herr,
                "%s\n%s %s" % (p.stderr.decode(), tls, herr))
    os.chmod(fake_helper, 0o644)
    p, _ = probe([], "dgx", new_dir(), exe=exe)
    t.check("helper not executable: exit 1, 'cannot execute'", p.returncode == 1 and b"cannot execute " in p.stderr, repr(p))
    os.unlink(fake_helper)
    p, _ = probe([], "dgx", new_dir(), exe=exe)
    t.check("helper missing: exit 1, names the path", p.returncode == 1 and fake_helper.encode() in p.stderr, repr(p))


# The host never creates a process and never loads a library.
@once
def host_with_saved_answer():
    cache, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    return host_env("dgx", cache)


@case("strace: a host with the driver tier creates no process, loads no driver library", tags=("strace",))
def host_strace(t):
    env = host_with_saved_answer()
    cache = env["UCXTLS_CACHE_DIR"]
    if not have("strace"):
        t.skip("strace -f of a host", "strace is not installed")
        return
    def trace(env):
        out = os.path.join(SCRATCH, "strace.out")
        p = run(["strace", "-f", "-qq", "-o", out, "-e", "trace=process,open,openat,stat,newfstatat,fstat",
                 "/bin/sh", "-c", SHOW], env)
        return p, open(out).read().splitlines()
    p, lines = trace(env)
    _, base = trace(dict(env, UCXTLS_PROBE="kernel"))
    made = [l for l in lines if re.search(r"\b(clone|clone3|fork|vfork)\(", l)]
    execs = [l for l in lines if re.search(r"\bexecve\(", l)]
    libs = lambda ls: sorted(set(m.group(1) for l in ls for m in [re.search(r'open(?:at)?\(.*?"([^"]+\.so[^"]*)"', l)]
                                 if m and "ENOENT" not in l))
    t.check("strace -f: a host with the driver tier creates no process (no clone/fork/vfork, one execve)",
            p.stdout.decode().startswith(Z + "|") and not made and len(execs) == 1, "\n".join(made + execs))
    t.equal("strace -f: it opens the same libraries as with the kernel tier (none of a driver)", libs(lines), libs(base))
    t.check("strace -f: it read the saved answer", any(os.path.join(cache, "driver") in l or '"driver"' in l for l in lines),
            "\n".join(lines[-30:]))


@case("a python host: the saved answer, no driver library mapped")
def python_host(t):
    env = host_with_saved_answer()
    p = run([sys.executable, "-c", "import os\nprint(os.environ.get('UCX_TLS'))\n"
             "print(sorted(set(l.split()[-1] for l in open('/proc/self/maps') if l.split()[-1].startswith('/'))))"], env)
    out = p.stdout.decode().splitlines()
    t.check("python host: the saved answer is used, and /proc/self/maps shows no driver library",
            out[:1] == [Z] and len(out) > 1 and "libcuda" not in out[1] and "libze" not in out[1] and "libucxtls.so" in out[1],
            p.stdout.decode() + p.stderr.decode())


@case("no_fork: a host under a seccomp filter that kills on fork runs unchanged")
def no_fork(t):
    env = host_with_saved_answer()
    # Under a seccomp filter that kills on clone, clone3, fork and vfork, the host runs unchanged.
    p = run([NO_FORK, "/bin/sh", "-c", "/bin/true; /bin/true"], env_for(None, preload=False))
    t.check("control: no_fork kills a shell that forks (SIGSYS)", p.returncode in (-signal.SIGSYS, 128 + signal.SIGSYS),
            "status %d" % p.returncode)
    p = run([NO_FORK, "/bin/sh", "-c", SHOW + "; echo; echo done"], env)
    t.check("no_fork: a host with the driver tier runs unchanged and gets the saved answer",
            p.returncode == 0 and p.stdout.decode() == "%s|%s\ndone\n" % (Z, Z) and "driver tier: answer saved" in p.stderr.decode(),
            repr(p))


if __name__ == "__main__":
    include("driver_saved")
    main("driver tier: ucxtls probe --save, the helper, the saved answer read by every process", start)
