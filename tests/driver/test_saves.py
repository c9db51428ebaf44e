#!/usr/bin/env python3
"""`ucxtls probe`'s exit status and concurrent saves, through the real command, helper and library:
a driver that initialised or none; saves that replace each other while hosts and the saves'
read-backs read the file (held at the open with strace, so that the replacement lands there on
every run).
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time

from driver_common import (C, CUDA, EMPTY_HOME, SHOW, UCXTLS, Z, ZE_NEW, case, env_for, have, host_env,
                           main, new_dir, probe, run, saved, start, tls_of, without_sysroot_note)


# ucxtls probe's exit status: 0 when a family's driver initialised (its init call succeeded, even
# with no GPU), 1 when none did; a result that only answers "0 devices" is not a driver.
EXIT_ROWS = [
    ("cuda initialised", {"FAKE_CUDA_COUNT": "1", "FAKE_ZE_INIT": "0x78000001"}, 0),
    ("ze initialised, no GPU", {"FAKE_CUDA_INIT": "100"}, 0),
    ("ze UNINITIALIZED, cuda NO_DEVICE", {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x78000001"}, 1),
    ("ze UNINITIALIZED, cuda STUB_LIBRARY", {"FAKE_CUDA_INIT": "34", "FAKE_ZE_INIT": "0x78000001"}, 1),
    ("ze INSUFFICIENT_PERMISSIONS, cuda NO_DEVICE", {"FAKE_CUDA_INIT": "100", "FAKE_ZE_INIT": "0x70010000"}, 1),
]


@case("ucxtls probe exits 1 when no family's driver initialised, 0 when one did")
def probe_exit(t):
    for label, fake, want in EXIT_ROWS:
        for args in ([], ["--save"]):
            cache = new_dir()
            p, _ = probe(args, "dgx", cache, **fake)
            err = without_sysroot_note(p.stderr.decode())
            t.check("%s, probe %s: exit %d%s" % (label, " ".join(args), want, ", 'no driver initialised' on stderr" if want else ""),
                    p.returncode == want and (("no driver initialised" in err and err.count("\n") == 1) if want else not err),
                    "exit %d: %s" % (p.returncode, err))
            if args:
                t.check("%s: saved all the same" % label, os.listdir(cache) == ["driver"], str(os.listdir(cache)))
            if args and want:
                t.check("%s: the line says it was saved and that UCXTLS_PROBE=driver reads it" % label,
                        "saved all the same, and read with UCXTLS_PROBE=driver" in err, err)
                j = json.loads(run([UCXTLS, "explain", "--json"], env_for("dgx", preload=False, UCXTLS_PROBE="driver",
                                                                       UCXTLS_CACHE_DIR=cache)).stdout.decode())
                t.check("%s: explain with UCXTLS_PROBE=driver reads it" % label,
                        j["evidence"]["driver"]["ran"] is True and "saved by ucxtls probe" in j["evidence"]["driver"]["evidence"],
                        json.dumps(j["evidence"]))
    # Without libcuda.so.1 on the path and a loader without a driver: the case users meet.
    p, _ = probe([], "dgx", new_dir(), [ZE_NEW], FAKE_ZE_INIT="0x78000001")
    t.check("no libcuda.so.1 here, ze UNINITIALIZED: exit 1", p.returncode == 1 and b"no driver initialised" in p.stderr,
            repr(p))


@case("concurrent probe --save runs never give a reader half a file")
def concurrent(t):
    cache, _ = saved("dgx", FAKE_CUDA_COUNT="1")
    stop = threading.Event()
    writer_errors = []

    saves = []

    # A fixed amount of work, whatever the machine's load: each writer saves 8 times, and hosts read
    # until both are done. Each save's own read-back may find the other's file: not an error.
    def writer(fake):
        for _ in range(8):
            p, _ = probe(["--save"], "dgx", cache, **fake)
            saves.append(p.returncode)
            if p.returncode != 0:
                writer_errors.append(p.stderr.decode())

    writers = [threading.Thread(target=writer, args=(f,)) for f in
               ({"FAKE_CUDA_COUNT": "1"}, {"FAKE_CUDA_INIT": "100", "FAKE_ZE_DEVICES": "gpu"})]
    for w in writers:
        w.start()
    seen, bad_reads, reads = set(), [], 0
    while reads < 20 or any(w.is_alive() for w in writers):
        tls, err = tls_of(host_env("dgx", cache))
        reads += 1
        seen.add(tls)
        if tls not in (C, Z) or "answer saved by ucxtls probe" not in err:
            bad_reads.append(err)
    for w in writers:
        w.join()
    t.check("%d reads while two writers saved different answers 16 times (every save exit 0): every read a whole file (%s)"
            % (reads, sorted(seen)), not bad_reads and not writer_errors and len(saves) == 16,
            "\n".join(bad_reads[:3] + writer_errors[:3]))
    t.equal("... and no temporary file is left", sorted(os.listdir(cache)), ["driver"])
    # Control: a writer that rewrites the file in place (no rename) is caught by the same readers.
    text = open(os.path.join(cache, "driver")).read()
    stop.clear()

    def in_place():
        while not stop.is_set():
            with open(os.path.join(cache, "driver"), "w") as f:
                f.write(text[:len(text) // 2])
                f.flush()
                time.sleep(0.002)
                f.write(text[len(text) // 2:])

    w = threading.Thread(target=in_place)
    w.start()
    caught = 0
    for _ in range(30):
        tls, err = tls_of(host_env("dgx", cache))
        caught += "malformed" in err
    stop.set()
    w.join()
    t.check("control: the same readers catch a writer that rewrites in place (%d of 30 reads saw half a file)" % caught,
            caught > 0)


DRIVER_OPEN = re.compile(r'^openat\((\d+), "driver",')  # the reader's open, in the cache directory


def held_at_open(argv, env, replace):
    """Runs argv under strace with its open of the saved answer held (delay_enter) until replace()
    has run: another save's rename lands between the reader's check of the file and its open, on
    every run. (CompletedProcess-like (returncode, stdout, stderr), or None when the open was not
    seen.) The open's index comes from a first, undelayed trace of the same command."""
    child_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}  # strace itself runs without the library
    pre = ["-E", "LD_PRELOAD=" + env["LD_PRELOAD"]] if "LD_PRELOAD" in env else []
    out = os.path.join(new_dir("strace-"), "trace")
    run(["strace", "-qq", "-o", out, "-e", "trace=openat"] + pre + argv, child_env)
    opens = [l for l in open(out).read().splitlines() if l.startswith("openat(")]
    index = next((i + 1 for i, l in enumerate(opens) if DRIVER_OPEN.match(l)), None)
    if not index:
        return None
    os.unlink(out)
    p = subprocess.Popen(["strace", "-qq", "-o", out, "-e", "trace=openat",
                          "-e", "inject=openat:delay_enter=3000000:when=%d" % index] + pre + argv,
                         env=child_env, cwd=EMPTY_HOME, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held = False
    while p.poll() is None and not held:  # the open's line is written when it enters, before the delay
        held = os.path.exists(out) and any(DRIVER_OPEN.match(l) for l in open(out).read().splitlines())
        time.sleep(0.002)
    if held:
        replace()
    stdout, stderr = p.communicate(timeout=60)
    return p.returncode, stdout.decode(), stderr.decode(), held


def replace_answer(cache, other):
    """What another `ucxtls probe --save` does: a whole file beside it, renamed over it."""
    tmp = os.path.join(cache, ".driver.other")
    shutil.copy(os.path.join(other, "driver"), tmp)
    os.chmod(tmp, 0o644)
    os.rename(tmp, os.path.join(cache, "driver"))


@case("another save replacing the file between a reader's check and its open is read, not an error", tags=("strace",))
def replaced_while_read(t):
    if not have("strace"):
        t.skip("a reader held at its open (strace inject)", "strace is not installed")
        return
    other, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")  # ze's answer
    # A host: the file checked is the CUDA answer, the file opened the ze one.
    cache, _ = saved("dgx", FAKE_CUDA_COUNT="1")
    res = held_at_open(["/bin/sh", "-c", SHOW], host_env("dgx", cache), lambda: replace_answer(cache, other))
    t.check("a host held at its open while the answer is replaced reads the new answer (ze)",
            res and res[3] and res[1].split("|")[0] == Z and "answer saved by ucxtls probe" in res[2], repr(res))
    # ucxtls probe --save: its read-back finds the other save's file.
    cache = new_dir()
    env = env_for("dgx", preload=False, LD_LIBRARY_PATH=":".join([CUDA, ZE_NEW]), UCXTLS_CACHE_DIR=cache, FAKE_CUDA_COUNT="1")
    res = held_at_open([UCXTLS, "probe", "--save"], env, lambda: replace_answer(cache, other))
    t.check("probe --save whose read-back finds another save's file: exit 0, the reader accepts it",
            res and res[3] and res[0] == 0 and "reader answer saved by ucxtls probe" in res[1]
            and "changed while" not in res[2], repr(res))
    t.equal("... and the file is the other save's", open(os.path.join(cache, "driver")).read(),
            open(os.path.join(other, "driver")).read())


@case("a file replaced by another user's between a reader's check and its open is refused (checked again once open)",
      tags=("strace",))
def replaced_by_another_user(t):
    if not have("strace"):
        t.skip("a reader held at its open (strace inject)", "strace is not installed")
        return
    other, _ = saved("dgx", FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu")  # ze's answer
    for what, uid, mode in (("owned by uid 12345", 12345, 0o644), ("root's, writable by others (0666)", 0, 0o666)):
        cache, _ = saved("dgx", FAKE_CUDA_COUNT="1")

        def foreign():
            tmp = os.path.join(cache, ".driver.foreign")
            shutil.copy(os.path.join(other, "driver"), tmp)
            os.chown(tmp, uid, uid)
            os.chmod(tmp, mode)
            os.rename(tmp, os.path.join(cache, "driver"))
        res = held_at_open(["/bin/sh", "-c", SHOW], host_env("dgx", cache), foreign)
        t.check("a host held at its open while the answer is replaced by a file %s: the file refused as changed while "
                "read, its answer (ze) not used" % what,
                res and res[3] and "changed while it was read" in res[2] and res[1].split("|")[0] != Z, repr(res))


if __name__ == "__main__":
    main("driver tier: probe's exit status and concurrent saves", start)
