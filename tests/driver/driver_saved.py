"""test_driver.py's saved answer: the cache files not to trust (each with its reason and remedy),
where it is saved and read, when it is read; and the real drivers where they exist."""
import os
import re
import stat

from driver_common import (C, CUDA, REMEDY, SCRATCH, SHOW, UCXTLS, UNSET, Z, ZE_NEW, add_case, boot_of, case, env_for,
                           have, host_env, machine, new_dir, once, probe, run, saved, system_has, tls_of)


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
