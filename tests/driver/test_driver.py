#!/usr/bin/env python3
"""The driver tier (UCXTLS_PROBE=driver) through the real command, helper and library, in real
processes.

`ucxtls probe --save` runs the helper ucxtls-probe as its own child; the helper asks fake
libcuda.so.1 / libze_loader.so.1 (built by tests/driver/CMakeLists.txt; they answer from FAKE_*
variables and log every call to FAKE_LOG), and the answer is saved per node. Hosts with the library
then read that file. Fixture machines make the kernel's and the driver's answers differ, so each
test sees which tier answered. Then the real libraries where they exist: Debian's Level Zero loader
(libze1) and the CUDA toolkit's stub libcuda.so.
"""
import os
import re
import shutil
import signal
import stat
import sys

from driver_common import (C, CUDA, HELPER, LIB, NO_FORK, R, REMEDY, SCRATCH, SHOW, SYSROOT_NOTE, U0, U1,
                           UCXTLS, UNSET, Z, ZE_NEW, ZE_OLD, add_case, boot_of, case, env_for,
                           fixture, have, host_env, log_lines, machine, main, new_dir, new_log, once, probe,
                           run, saved, start, still_alive, system_has, tls_of, without_sysroot_note)


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


# A cache that must not be trusted, or is not this boot's, or is damaged: ignored, with the
# reason and the remedy in the one debug line; the kernel's answer stands.
def corrupted(change):
    cache, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    change(cache, os.path.join(cache, "driver"))
    return cache

def rewrite(path, text):
    os.unlink(path)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


@once
def good():
    return open(os.path.join(corrupted(lambda c, f: None), "driver")).read()


CORRUPTIONS = [
    ("file mode 0664", lambda c, f: os.chmod(f, 0o664), "driver ignored: it is writable by group or others (mode 0664)"),
    ("file mode 0646", lambda c, f: os.chmod(f, 0o646), "driver ignored: it is writable by group or others (mode 0646)"),
    ("directory mode 0775", lambda c, f: os.chmod(c, 0o775),
     "driver ignored: its directory is writable by group or others (mode 0775)"),
    ("directory mode 1777 (like /tmp)", lambda c, f: os.chmod(c, 0o1777), "its directory is writable by group or others"),
    ("another boot", lambda c, f: rewrite(f, good().replace(boot_of("dgx"), "00000000-1111-2222-3333-444444444444")),
     "driver ignored: saved in another boot"),
    ("no boot line", lambda c, f: rewrite(f, good().replace("boot %s\n" % boot_of("dgx"), "")), "malformed: no boot line"),
    ("truncated", lambda c, f: rewrite(f, good()[:len(good()) // 2]), "driver ignored: malformed: incomplete"),
    ("cut before its end line", lambda c, f: rewrite(f, good()[:-4]), "malformed: incomplete (no end line"),
    ("garbage", lambda c, f: rewrite(f, "\x00\x01garbage\nend\n"), "driver ignored: malformed: not a driver report"),
    ("empty", lambda c, f: rewrite(f, ""), "driver ignored: malformed: empty"),
    ("huge", lambda c, f: rewrite(f, good()[:-4] + "x" * 20000 + "\nend\n"), "larger than any answer"),
    ("a symbolic link", lambda c, f: (os.rename(f, f + ".real"), os.symlink(f + ".real", f)),
     "driver ignored: it is a symbolic link"),
    ("a FIFO", lambda c, f: (os.unlink(f), os.mkfifo(f, 0o644)), "driver ignored: it is not a regular file"),
    ("a directory", lambda c, f: (os.unlink(f), os.mkdir(f, 0o755)), "driver ignored: it is not a regular file"),
]
AS_ROOT = [
    ("owned by another user (uid 65534)", lambda c, f: os.chown(f, 65534, 65534),
     "driver ignored: it is owned by uid 65534, neither root nor you (uid 0)"),
    ("directory owned by another user", lambda c, f: os.chown(c, 65534, 65534), "its directory is owned by uid 65534"),
]


DIR_REMEDY = "use a directory only root or you can write"


def untrusted(t, label, change, why):
    cache = corrupted(change)
    tls, err = tls_of(host_env("dgx", cache))
    remedy, wrong = (DIR_REMEDY, REMEDY) if "its directory" in why else (REMEDY, DIR_REMEDY)  # --save cannot fix a directory
    t.check("cache %s: ignored, the kernel's answer, '%s', and what fixes it" % (label, why),
            tls == C and why in err and remedy in err and wrong not in err and err.count("\n") == 1, err)


def untrusted_as_root(t, label, change, why):
    if os.geteuid() != 0:
        t.skip("a cache owned by another user", "not root: cannot chown (CI runs as root)")
        return
    untrusted(t, label, change, why)


for _label, _change, _why in CORRUPTIONS:
    add_case("cache ignored: " + _label, untrusted, _label, _change, _why)
for _label, _change, _why in AS_ROOT:
    add_case("as root: cache ignored: " + _label, untrusted_as_root, _label, _change, _why, tags=("as_root",))


@case("as root: a root-written cache is trusted by another user", tags=("as_root",))
def root_cache_for_nobody(t):
    if not (os.geteuid() == 0 and have("setpriv")):  # root's file, read by another user: trusted
        t.skip("a root-written cache read by another user", "not root, or no setpriv")
        return
    cache = new_dir()
    p, _ = probe(["--save"], None, cache, FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")  # this machine's boot id
    for d in (SCRATCH, cache):
        os.chmod(d, 0o755)
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", SHOW],
            env_for(None, UCXTLS_PROBE="driver", UCXTLS_DEBUG="1", UCXTLS_CACHE_DIR=cache, UCXTLS_TEMPLATE="tcp,{copy}"),
            cwd="/")
    t.check("a root-written cache is trusted by another user (nobody)",
            p.stdout.decode().startswith("tcp,ze_copy|") and "answer saved by ucxtls probe" in p.stderr.decode(), repr(p))


@case("no boot id under the sysroot")
def no_boot_id(t):
    # The boot id is read under the sysroot, as every probe path.
    cache, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    boot_file = os.path.join(machine("dgx"), "proc/sys/kernel/random/boot_id")
    boot_text = open(boot_file).read()
    os.unlink(boot_file)
    tls, err = tls_of(host_env("dgx", cache))
    with open(boot_file, "w") as f:  # put it back
        f.write(boot_text)
    t.check("no boot id under the sysroot: ignored, 'cannot be read'", tls == C and "cannot be read" in err, err)


@case("saved before a driver was loaded: stale")
def stale_answer(t):
    # Saved before a driver was loaded: its device node is newer than the file.
    for name, node, want in (("dgx", "dev/nvidiactl", C), ("intel-xe", "dev/dri", Z)):
        cache, _ = saved(name, FAKE_CUDA_INIT="100", FAKE_ZE_INIT="0x78000001")
        target = os.path.join(machine(name), node)
        before = os.stat(target)
        later = os.stat(os.path.join(cache, "driver")).st_mtime + 5
        os.utime(target, (later, later))
        tls, err = tls_of(host_env(name, cache))
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        t.check("%s: /%s newer than the saved answer (a driver loaded after it): stale, the kernel's answer" % (name, node),
                tls == want and "ignored: stale, /%s is newer" % node in err and REMEDY in err, err)


@case("no saved answer: the debug line names the file and the remedy")
def no_saved_answer(t):
    tls, err = tls_of(host_env("dgx", "/nonexistent/ucxtls"))
    t.check("no cache: the kernel's answer; the debug line names the file and the remedy",
            tls == C and "driver tier: no saved answer at /nonexistent/ucxtls/driver; run ucxtls probe --save" in err, err)


@case("the default places, in order (no /run/ucxtls/driver on this machine)", tags=("default_places",))
def default_places(t):
    xdg = new_dir("xdg-")
    if os.path.exists("/run/ucxtls/driver"):
        t.skip("the default places, in order", "this machine has a /run/ucxtls/driver")
        return
    tls, err = tls_of(host_env("dgx", None, XDG_RUNTIME_DIR=xdg))
    t.check("UCXTLS_CACHE_DIR unset: $XDG_RUNTIME_DIR/ucxtls, then /run/ucxtls",
            tls == C and "no saved answer at %s/ucxtls/driver or /run/ucxtls/driver" % xdg in err, err)
    tls, err = tls_of(host_env("dgx", None, XDG_RUNTIME_DIR=None))
    t.check("neither set: /run/ucxtls alone", tls == C and "no saved answer at /run/ucxtls/driver;" in err, err)


@case("--save without UCXTLS_CACHE_DIR writes $XDG_RUNTIME_DIR/ucxtls")
def save_xdg(t):
    xdg = new_dir("xdg-")
    p, _ = probe(["--save"], "dgx", None, XDG_RUNTIME_DIR=xdg, FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    tls, err = tls_of(host_env("dgx", None, XDG_RUNTIME_DIR=xdg))
    t.check("--save without UCXTLS_CACHE_DIR writes $XDG_RUNTIME_DIR/ucxtls/driver (mode 0755 directory), and a process reads it",
            p.returncode == 0 and stat.S_IMODE(os.stat(os.path.join(xdg, "ucxtls")).st_mode) == 0o755
            and tls == Z and "answer saved by ucxtls probe at %s/ucxtls/driver" % xdg in err, p.stderr.decode() + err)


@case("explain: the driver evidence")
def explain_evidence(t):
    env = host_env("dgx", "/nonexistent/ucxtls")
    env.pop("UCXTLS_DEBUG")
    p = run([UCXTLS, "explain"], env)
    out = p.stdout.decode()
    t.check("ucxtls explain: the driver evidence says why and how to create it",
            re.search(r"^  driver\s+none\s+no saved answer at /nonexistent/ucxtls/driver; run ucxtls probe --save$", out, re.M)
            and "`ucxtls probe --save` asks the drivers and saves their answer for this node" in out, out)


@case("--save: parent directories, a world-writable or relative directory")
def save_where(t):
    p, _ = probe(["--save"], "dgx", os.path.join(SCRATCH, "deep", "er", "cache"), FAKE_CUDA_COUNT="1")
    t.check("--save creates missing parent directories", p.returncode == 0, p.stderr.decode())
    bad = new_dir()
    os.chmod(bad, 0o777)
    p, _ = probe(["--save"], "dgx", bad, FAKE_CUDA_COUNT="1")
    t.check("--save into a world-writable directory: refused (exit 2), saying every process would ignore it",
            p.returncode == 2 and b"every process would ignore" in p.stderr and not os.listdir(bad), repr(p))
    p, _ = probe(["--save"], "dgx", "relative/dir", FAKE_CUDA_COUNT="1")
    t.check("--save with a relative UCXTLS_CACHE_DIR: exit 1, the variable named",
            p.returncode == 1 and b"UCXTLS_CACHE_DIR" in p.stderr, repr(p))


@case("the saved answer is read only when the decision needs it")
def read_when_needed(t):
    cache, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")
    for label, name, extra in (("kernel tier", "dgx", {"UCXTLS_PROBE": "kernel"}), ("UCXTLS_ACCEL=ze", "dgx", {"UCXTLS_ACCEL": "ze"}),
                               ("UCX_TLS already set", "dgx", {"UCX_TLS": "tcp"}),
                               ("a template without {copy} or {ipc}", "dgx", {"UCXTLS_TEMPLATE": "{rdma},tcp"})):
        _, err = tls_of(host_env(name, cache, **extra))
        t.check(label + ": the saved answer is not read", "driver tier" not in err, err)


@case("real Level Zero loader (Debian's libze1)", tags=("real_ze",))
def real_ze(t):
    if not system_has("libze_loader.so.1"):
        t.skip("Debian's Level Zero loader", "no libze_loader.so.1 in the ld.so cache (apt-get install libze1)")
        return
    cache = new_dir()
    p, _ = probe(["--save"], "intel-xe", cache, [CUDA], FAKE_CUDA_INIT="100")
    print("     real Level Zero loader, via ucxtls probe: " + p.stdout.decode().replace("\n", " | "))
    t.check("real libze_loader.so.1 (no GPU driver here): an answer, 0 GPUs, ZE_RESULT_ERROR_UNINITIALIZED",
            re.search(r"^ze\s+0 device\(s\) \(ZE_RESULT_ERROR_UNINITIALIZED\)$", p.stdout.decode(), re.M), p.stdout.decode())
    t.check("real loader, CUDA NO_DEVICE: no driver initialised, exit 1", p.returncode == 1 and b"no driver initialised" in p.stderr,
            repr(p))
    tls, err = tls_of(host_env("intel-xe", cache))
    t.check("real loader on an Intel fixture: the saved answer says no ze device, so none",
            tls == UNSET and "ze: driver API: 0 device(s) (ZE_RESULT_ERROR_UNINITIALIZED)" in err, err)


@case("libcuda.so.1 absent from this system", tags=("no_libcuda",))
def no_libcuda(t):
    if system_has("libcuda.so.1"):
        t.skip("libcuda.so.1 absent", "this system has a libcuda.so.1 in the ld.so cache")
        return
    cache = new_dir()
    p, _ = probe(["--save"], "dgx", cache, [ZE_NEW], FAKE_ZE_DEVICES="gpu")
    tls, err = tls_of(host_env("dgx", cache))
    t.check("libcuda.so.1 absent: saved as no answer for cuda; the kernel's cuda stands (the fake ze GPU is second)",
            tls == C and "cuda: driver API gave no answer (libcuda.so.1 not found), kernel: " in err, err)


@case("the CUDA toolkit's stub libcuda.so", tags=("cuda_stub",))
def cuda_stub(t):
    stub = next((s for s in ("/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so",
                             "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so") if os.path.exists(s)), None)
    if not stub:
        t.skip("CUDA toolkit stub libcuda.so", "no /usr/local/cuda/lib*/stubs/libcuda.so here")
        return
    sd = new_dir("stub-")
    os.symlink(stub, os.path.join(sd, "libcuda.so.1"))
    cache = new_dir()
    p, _ = probe(["--save"], "dgx", cache, [sd, ZE_NEW])
    t.check("the toolkit's stub libcuda: an answer, 0 devices, CUDA_ERROR_STUB_LIBRARY",
            "(CUDA_ERROR_STUB_LIBRARY)" in p.stdout.decode(), p.stdout.decode())
    tls, err = tls_of(host_env("dgx", cache))
    t.check("stub first in LD_LIBRARY_PATH when saved: no CUDA for the processes", tls == UNSET, err)


if __name__ == "__main__":
    main("driver tier: ucxtls probe --save, the helper, the saved answer read by every process", start)
