#!/usr/bin/env python3
"""`doctor --ucx` and `--pid` answer within one deadline and one byte budget, whatever a build holds:
symbol names without their NUL (under `prlimit --as`), 10,000 DT_NEEDED with a RUNPATH of 4,000
empty entries, a 1 TiB sparse segment that spends the byte budget, a 64 MiB ld.so.cache, two sparse
1 TiB libucp copies, a 14 MB libucp beside 4,000 module files, a module directory of more names
than doctor lists, and a module directory on a mount that never answers (an unserved FUSE mount).
A reached bound is "could not check" (exit 2, the --json object printed), never a verdict. Each
case bounds the command itself (BOUND_S) and the builds are written here, byte by byte."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, env_for, main  # noqa: E402
from test_doctor_files import HOLDER  # noqa: E402  (a static program that maps a libucp and waits)

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(harness.LIB), "ucxtls"))
WORK = tempfile.mkdtemp(prefix="ucxtls-bounds-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
BOUND_S = 20
NODE = os.path.join(WORK, "node")  # an empty replayed machine: no GPU, no RDMA (the verdict is the value's alone)
os.makedirs(NODE)
TIB = 1 << 40

EH = struct.Struct("<16sHHIQQQIHHHHHH")
PH = struct.Struct("<IIQQQQQQ")
SH = struct.Struct("<IIQQQQIIQQ")
SYM = struct.Struct("<IBBHQQ")
DYN = struct.Struct("<qQ")


def align(n, a=8):
    return (n + a - 1) // a * a


def write_elf(path, transports=("tcp", "self"), ucx=True, needed=(), runpath=None, junk=0, junk_name=None,
              many=0, big_segment=0):
    """An x86-64 shared object written byte by byte: ucp_get_version_string (`lea ver(%rip),%rax;
    ret`, "1.22.0") and ucs_status_string when ucx, a uct_<tl>_tl object ("<tl>\\0" first) per
    transport, DT_NEEDED names, a DT_RUNPATH. junk: that many more function symbols all named by
    junk_name (bytes, left without its NUL at the string table's end); many: that many more named
    s<N>; big_segment: a second PT_LOAD of that many bytes at the end of the file (sparse)."""
    strs = bytearray(b"\0")

    def name(s):
        off = len(strs)
        strs.extend(s + b"\0")
        return off
    dyn = [(1, name(n.encode())) for n in needed]
    if runpath is not None:
        dyn.append((29, name(runpath.encode())))
    syms = []
    code, ver, tls = 0x200, 0x220, 0x240
    if ucx:
        syms += [(name(b"ucp_get_version_string"), 0x12, code, 8), (name(b"ucs_status_string"), 0x12, code + 16, 1)]
    for i, tl in enumerate(transports):
        syms.append((name(("uct_%s_tl" % tl).encode()), 0x11, tls + 16 * i, 16))
    for i in range(many):
        syms.append((name(b"s%d" % i), 0x12, code + 16, 1))
    junk_at = len(strs)
    if junk:
        strs.extend(junk_name)
        syms += [(junk_at, 0x12, code + 16, 1)] * junk
    str_at = align(tls + 16 * len(transports))
    sym_at = align(str_at + len(strs))
    dyn_at = align(sym_at + SYM.size * (len(syms) + 1))
    dyn += [(5, str_at), (10, len(strs)), (6, sym_at), (11, SYM.size), (0, 0)]
    sh_at = align(dyn_at + DYN.size * len(dyn))
    end = sh_at + 3 * SH.size
    big_at = align(end, 4096)
    phnum = 3 if big_segment else 2
    data = bytearray(end)
    data[0:EH.size] = EH.pack(b"\x7fELF\x02\x01\x01" + b"\0" * 9, 3, 62, 1, 0, EH.size, sh_at, 0, EH.size, PH.size,
                              phnum, SH.size, 3, 0)
    PH.pack_into(data, EH.size, 1, 5, 0, 0, 0, end, end, 4096)                      # PT_LOAD: the whole file
    PH.pack_into(data, EH.size + PH.size, 2, 6, dyn_at, dyn_at, dyn_at, DYN.size * len(dyn), DYN.size * len(dyn), 8)
    if big_segment:
        PH.pack_into(data, EH.size + 2 * PH.size, 1, 4, big_at, big_at, big_at, big_segment, big_segment, 4096)
    lea = struct.pack("<i", ver - (code + 7))
    data[code:code + 8] = b"\x48\x8d\x05" + lea + b"\xc3"
    data[code + 16] = 0xc3
    data[ver:ver + 7] = b"1.22.0\0"
    for i, tl in enumerate(transports):
        data[tls + 16 * i:tls + 16 * i + len(tl) + 1] = tl.encode() + b"\0"
    data[str_at:str_at + len(strs)] = strs
    for i, (n, info, value, size) in enumerate(syms):
        SYM.pack_into(data, sym_at + SYM.size * (i + 1), n, info, 0, 1, value, size)
    for i, (tag, value) in enumerate(dyn):
        DYN.pack_into(data, dyn_at + DYN.size * i, tag, value)
    SH.pack_into(data, sh_at + SH.size, 0, 11, 2, sym_at, sym_at, SYM.size * (len(syms) + 1), 2, 1, 8, SYM.size)
    SH.pack_into(data, sh_at + 2 * SH.size, 0, 3, 2, str_at, str_at, len(strs), 0, 0, 1, 0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
        if big_segment:
            f.truncate(big_at + big_segment)
    return path


def build(name, **kw):
    """A directory holding libucp.so.0 (write_elf's arguments) and an empty module directory ucx/."""
    d = os.path.join(WORK, name)
    write_elf(os.path.join(d, "libucp.so.0"), **kw)
    os.makedirs(os.path.join(d, "ucx"), exist_ok=True)
    return d


def doctor(args, prefix=(), extra=None, bound=BOUND_S):
    start = time.time()
    try:
        p = subprocess.run(list(prefix) + [CLI, "doctor"] + args,
                           env=env_for(None, preload=False, UCXTLS_SYSROOT=NODE, **(extra or {})),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=bound)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = "killed at %d s" % bound, "", ""
    return rc, out, err, time.time() - start


def shown(got):
    rc, out, err, took = got
    return "exit %s in %.1f s\nout %r\nerr %r" % (rc, took, out[-2000:], err[-2000:])


def could_not_tell(t, what, got, limit_s=10):
    """Exit 2 within limit_s, "could not check" and a reached bound said; no MISSING row."""
    rc, out, err, took = got
    t.check("%s: could not check (exit 2) in under %d s, the bound named, no MISSING row" % (what, limit_s),
            rc == 2 and took < limit_s and "could not" in out + err and "bound" in out + err and "MISSING" not in out,
            shown(got))


def json_object(t, what, got, status):
    rc, out, err, took = got
    try:
        o = json.loads(out)
    except ValueError:
        o = None
    t.check("%s --json: one object printed, status %d, exit %d" % (what, status, status),
            rc == status and isinstance(o, dict) and o.get("status") == status, shown(got))


@case("symbol names without their NUL (40,000 names of 1 MiB each): under prlimit --as=1 GiB, the verdict, never an abort")
def names_without_nul(t):
    if not shutil.which("prlimit"):
        return t.skip("the memory bound", "no prlimit (Debian util-linux)")
    d = build("junk-names", junk=40000, junk_name=b"A" * (1 << 20))
    cap = ["prlimit", "--as=%d" % (1 << 30), "--"]
    got = doctor(["--ucx", d, "--value", "tcp"], prefix=cap)
    t.check("exit 0 and tcp served, in under 10 s", got[0] == 0 and "ok          tcp" in got[1] and got[3] < 10, shown(got))
    json_object(t, "the same", doctor(["--ucx", d, "--value", "tcp", "--json"], prefix=cap), 0)


@case("10,000 DT_NEEDED and a RUNPATH of 4,000 empty entries under --timeout-ms 1000: could not check within seconds")
def needed_search(t):
    d = build("many-needed", needed=["libnothere.so"] * 10000, runpath=":" * 3999)
    args = ["--ucx", d, "--value", "tcp", "--timeout-ms", "1000"]
    could_not_tell(t, "the search for its libraries", doctor(args))
    json_object(t, "the same", doctor(args + ["--json"]), 2)


@case("the byte budget spent on a 1 TiB sparse segment before the module directory: could not check, never MISSING tcp")
def budget_spent(t):
    plain = build("tcp-in-module", transports=("self",))
    write_elf(os.path.join(plain, "ucx", "libuct_tcp.so.0"), transports=("tcp",), ucx=False)
    t.check("control: the same build without the huge segment: tcp from its module (exit 0)",
            doctor(["--ucx", plain, "--value", "tcp"])[0] == 0)
    d = build("budget", transports=("self",), big_segment=TIB)
    write_elf(os.path.join(d, "ucx", "libuct_tcp.so.0"), transports=("tcp",), ucx=False)
    could_not_tell(t, "its module directory after the budget is spent", doctor(["--ucx", d, "--value", "tcp"]))
    json_object(t, "the same", doctor(["--ucx", d, "--value", "tcp", "--json"]), 2)


@case("two equal sparse 1 TiB files named libucp in one directory: compared within the bound, could not check")
def sparse_copies(t):
    d = os.path.join(WORK, "sparse")
    os.makedirs(d)
    for n in ("libucp.so.0", "libucp.so.0.0.0"):
        with open(os.path.join(d, n), "wb") as f:
            f.truncate(TIB)
    could_not_tell(t, "--ucx of their directory", doctor(["--ucx", d, "--value", "tcp"]))
    json_object(t, "the same", doctor(["--ucx", d, "--value", "tcp", "--json"]), 2)


@case("a 14 MB libucp (400,000 symbols) beside 4,000 module files: an answer in seconds")
def many_modules(t):
    d = build("many-modules", many=400000)
    for i in range(4000):
        open(os.path.join(d, "ucx", "libuct_m%d.so.0" % i), "w").close()
    t.check("control: the libucp is over 10 MB", os.path.getsize(os.path.join(d, "libucp.so.0")) > 10 << 20)
    got = doctor(["--ucx", d, "--value", "tcp", "--json"])
    json_object(t, "--ucx of the build", got, 0)
    t.check("answered in under 10 s (%.1f s)" % got[3], got[3] < 10, shown(got))


@case("a module directory of more names than doctor lists (4,100): could not check, never a silent drop")
def long_directory(t):
    d = build("long-dir", transports=("self",))
    write_elf(os.path.join(d, "ucx", "libuct_tcp.so.0"), transports=("tcp",), ucx=False)
    for i in range(4099):
        open(os.path.join(d, "ucx", "other%d" % i), "w").close()
    could_not_tell(t, "--ucx of the build", doctor(["--ucx", d, "--value", "tcp"]))


# In a mount namespace of its own (nothing of it reaches this machine's): an unserved FUSE mount on
# argv[3] when given (nobody reads /dev/fuse, so every request on it waits), argv[4] bound over
# /etc/ld.so.cache when given; then the holder (argv[1]) mapping argv[2]. Its pid on stdout, then its "ready".
JAILER = r"""import ctypes, os, sys
holder, lib, fuse_dir, cache = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
if fuse_dir:
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other" % fd
    if libc.mount(b"ucxtls", fuse_dir.encode(), b"fuse", 0, opts.encode()):
        print("fuse mount failed %d" % ctypes.get_errno(), flush=True)
        sys.exit(1)
if cache and libc.mount(cache.encode(), b"/etc/ld.so.cache", None, 4096, None):  # MS_BIND
    print("bind mount failed %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
pid = os.fork()
if pid == 0:
    os.execv(holder, [holder, lib])
print("pid %d" % pid, flush=True)
os.waitpid(pid, 0)
"""


def jailed(t, name, fuse=False, cache=None):
    """A holder mapping a libucp (needing libc.so.6) in a mount namespace of its own (fuse: an
    unserved FUSE mount on its module directory; cache: bytes bound over its /etc/ld.so.cache).
    Gives (Popen, pid) or None after a skip."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return t.skip("a process in its own mount namespace", "not root" if os.geteuid() else "no unshare (Debian util-linux)")
    if fuse and not os.path.exists("/dev/fuse"):
        return t.skip("a mount that never answers", "no /dev/fuse")
    d = build(name, needed=["libc.so.6"])
    holder = os.path.join(WORK, "holder")
    # Static: it maps nothing but the libucp, so that libc.so.6 is looked up as ld.so would (the cache).
    if not os.path.exists(holder) and harness.compile_c(holder, HOLDER, ["-static"]).returncode:
        return t.skip("a holder process", "cc -static cannot link (Debian: libc6-dev)")
    cache_file = ""
    if cache is not None:
        cache_file = os.path.join(WORK, name + ".cache")
        with open(cache_file, "wb") as f:
            f.write(cache)
    jailer = os.path.join(WORK, "jailer.py")
    with open(jailer, "w") as f:
        f.write(JAILER)
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", sys.executable, jailer, holder,
                          os.path.join(d, "libucp.so.0"), os.path.join(d, "ucx") if fuse else "", cache_file],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env_for(None, preload=False))
    lines = sorted([p.stdout.readline().decode(), p.stdout.readline().decode()])  # "pid N" and "ready", in either order
    if not lines[0].startswith("pid ") or lines[1] != "ready\n":
        p.stdin.close()
        p.wait(timeout=30)
        return t.skip("a process in its own mount namespace", "it did not start: %r" % lines)
    return p, int(lines[0].split()[1])


def release(p):
    p.stdin.close()
    p.wait(timeout=30)


@case("a 64 MiB ld.so.cache in a process's root, keys without a NUL: --pid answers within seconds", tags=("as_root",))
def huge_cache(t):
    header = b"glibc-ld.so.cache1.1" + struct.pack("<III", 10000, 0, 0) + b"\0" * 16
    key = len(header) + 10000 * 24  # every key: the first byte of 64 MiB of 'A'
    entries = struct.pack("<iIIIQ", 0x0303, key, key, 0, 0) * 10000
    got = jailed(t, "cache-jail", cache=header + entries + b"A" * (64 << 20))
    if not got:
        return
    p, pid = got
    try:
        got = doctor(["--pid", str(pid), "--value", "tcp"])
    finally:
        release(p)
    t.check("an answer in under 10 s, tcp served", got[0] in (0, 2) and got[3] < 10 and "ok          tcp" in got[1], shown(got))


@case("--pid of a process whose module directory is a mount that never answers: could not check at the deadline",
      tags=("as_root",))
def mount_never_answers(t):
    got = jailed(t, "fuse-jail", fuse=True)
    if not got:
        return
    p, pid = got
    try:
        text = doctor(["--pid", str(pid), "--value", "tcp", "--timeout-ms", "2000"])
        obj = doctor(["--pid", str(pid), "--value", "tcp", "--timeout-ms", "2000", "--json"])
    finally:
        release(p)
    could_not_tell(t, "--pid, its module directory unanswered", text)
    json_object(t, "the same", obj, 2)


if __name__ == "__main__":
    main("doctor's bounds: one deadline, one byte budget, 'could not check' when reached")
