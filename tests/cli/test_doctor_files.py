#!/usr/bin/env python3
"""`doctor --ucx` and `--pid` against hostile files where a libucp, a module or a library it needs
is expected: ELF objects truncated at each header, huge (sparse, 1 TiB: never read whole), 32-bit,
with program and section headers, symbol tables and dynamic entries out of bounds, overlapping or
of zero size, names without their NUL; links in loops or leaving a process's root; FIFOs with no
writer and character devices. Each gives an answer within its bound: exit 0, 1 or 2 (never a
signal), at most one line on stderr; where doctor cannot read the build, its stderr line (before any
row) or its verdict names why.
Nothing of any build runs (doctor reads files). The FIFO, device and chroot cases need root."""
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

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(harness.LIB), "ucxtls"))
FAKES = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(harness.BUILD_DIR, "tests", "cli", "fakes-ucx"))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_ucx.c")
WORK = tempfile.mkdtemp(prefix="ucxtls-files-")
os.chmod(WORK, 0o755)
import atexit  # noqa: E402
atexit.register(shutil.rmtree, WORK, True)
BOUND_S = 20


def doctor(args, extra=None):
    start = time.time()
    try:
        p = subprocess.run([CLI, "doctor"] + args, env=env_for(None, preload=False, **(extra or {})),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=BOUND_S)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = "killed at %d s" % BOUND_S, "", ""
    return rc, out, err, time.time() - start


def json_ok(out):
    try:
        return isinstance(json.loads(out)["ucx"], list)
    except (ValueError, KeyError, TypeError):
        return False


def answered(t, name, got, why=None):
    """A defined exit, one line at most on stderr; exit 2 (not read): that line says so before any
    row, or the verdict after rows (then stderr is empty), and names `why` when given. Gives the output."""
    rc, out, err, took = got
    lines = err.splitlines()
    said = (len(lines) == 1 and lines[0].startswith("ucxtls: doctor: ") and (not out or json_ok(out))) or (
        not lines and (out.splitlines()[-1:] or [""])[0].startswith("verdict     could not check (exit 2): ")) or (
        not lines and json_ok(out) and json.loads(out)["status"] == 2)
    ok = rc in (0, 1, 2) and len(lines) <= 1 and (rc != 2 or said)
    ok = ok and (rc == 2 or out.startswith("UCX ") or json_ok(out)) and (why is None or why in err + out)
    t.check("%s: exit %s in %.1f s, %d line(s) on stderr, exit 2 said once%s" % (name, rc, took, len(lines), " naming %r" % why if why else ""),
            ok, "out %r\nerr %r" % (out[-1500:], err[-1500:]))
    return out


def copy_build(name, src=os.path.join(FAKES, "nixl")):
    d = os.path.join(WORK, name)
    shutil.copytree(src, d, symlinks=True)
    return d


# --- the ELF layout of a file, for patching (Elf64, little-endian: what cc builds here) ---
EH = struct.Struct("<16sHHIQQQIHHHHHH")
SH = struct.Struct("<IIQQQQIIQQ")
PH = struct.Struct("<IIQQQQQQ")


def headers(data):
    e = EH.unpack_from(data)
    phoff, shoff, phnum, shnum = e[5], e[6], e[10], e[12]
    ph = [list(PH.unpack_from(data, phoff + i * PH.size)) for i in range(phnum)]
    sh = [list(SH.unpack_from(data, shoff + i * SH.size)) for i in range(shnum)]
    return list(e), ph, sh


def patched(name, edit, base=os.path.join(FAKES, "nixl", "libucp.so.0")):
    """A copy of base with edit(data, eh, ph, sh) applied to its bytes (a bytearray); its path."""
    d = os.path.join(WORK, "odd", name)
    os.makedirs(d)
    with open(base, "rb") as f:
        data = bytearray(f.read())
    eh, ph, sh = headers(data)
    edit(data, eh, ph, sh)
    path = os.path.join(d, "libucp.so.0")
    with open(path, "wb") as f:
        f.write(data)
    return path


def put_eh(data, eh):
    data[0:EH.size] = EH.pack(*eh)


def put_sh(data, eh, sh, i):
    SH.pack_into(data, eh[6] + i * SH.size, *sh[i])


def put_ph(data, eh, ph, i):
    PH.pack_into(data, eh[5] + i * PH.size, *ph[i])


def of_type(sh, t):
    return [i for i, s in enumerate(sh) if s[1] == t]


def dynamic_offset(ph):
    return next(p[2] for p in ph if p[0] == 2)  # PT_DYNAMIC


def set_dyn(data, ph, tag, value):
    """Every entry of tag in the dynamic section set to value."""
    off = dynamic_offset(ph)
    while True:
        t, v = struct.unpack_from("<qQ", data, off)
        if t == 0:
            return
        if t == tag:
            struct.pack_into("<qQ", data, off, t, value)
        off += 16


def whole_file(data, eh, ph, sh):
    """Every PT_LOAD claims 1 TiB from the file."""
    for i, p in enumerate(ph):
        if p[0] == 1:
            p[5] = p[6] = 1 << 40
            put_ph(data, eh, ph, i)


@case("a libucp truncated at each header and inside its tables: an answer, never a hang or a crash")
def truncated(t):
    base = os.path.join(FAKES, "nixl", "libucp.so.0")
    with open(base, "rb") as f:
        data = f.read()
    eh, ph, sh = headers(data)
    dyn = dynamic_offset(ph)
    dynsym = sh[of_type(sh, 11)[0]]
    cuts = sorted({0, 3, 4, 16, 63, 64, eh[5] + PH.size, dyn, dyn + 40, dynsym[4] + 24, eh[6], eh[6] + SH.size * 3,
                   len(data) // 2, len(data) - 1})
    for n in cuts:
        d = os.path.join(WORK, "cut-%d" % n)
        os.makedirs(d)
        path = os.path.join(d, "libucp.so.0")
        with open(path, "wb") as f:
            f.write(data[:n])
        answered(t, "cut at byte %d of %d" % (n, len(data)), doctor(["--ucx", path, "--value", "tcp"]),
                 "not an ELF object" if n < 16 else None)
    # A module cut short: its line says it does not load, the libucp is judged.
    d = copy_build("cut-module", os.path.join(FAKES, "cuda-module"))
    mod = os.path.join(d, "ucx", "libuct_cuda.so.0")
    with open(mod, "r+b") as f:
        f.truncate(100)
    out = answered(t, "a module cut at byte 100", doctor(["--ucx", d, "--value", "tcp"]))
    t.check("its module line: does not load here (program headers out of the file)",
            "libuct_cuda.so.0 does not load here: program headers out of the file" in out, out)


@case("huge files (1 TiB, sparse): a libucp, a module and one whose segment claims the whole file, read within bounds")
def huge(t):
    tib = 1 << 40
    d = copy_build("huge-tail")
    lib = os.path.join(d, "libucp.so.0")
    with open(lib, "r+b") as f:
        f.truncate(tib)
    out = answered(t, "a libucp followed by 1 TiB of holes", doctor(["--ucx", lib, "--value", "tcp"]))
    t.check("judged as the build it is (tcp ok)", "ok          tcp" in out, out)
    zeros = os.path.join(WORK, "huge-zeros", "libucp.so.0")
    os.makedirs(os.path.dirname(zeros))
    with open(zeros, "wb") as f:
        f.truncate(tib)
    answered(t, "1 TiB of zeros named libucp.so.0", doctor(["--ucx", zeros, "--value", "tcp"]), "not an ELF object")
    lib = patched("huge-load", whole_file)
    with open(lib, "r+b") as f:
        f.truncate(tib)
    got = doctor(["--ucx", lib, "--value", "tcp", "--timeout-ms", "5000"])
    answered(t, "segments of 1 TiB in a 1 TiB file", got)
    t.check("within doctor's bound (under 10 s)", got[3] < 10, "%.1f s" % got[3])
    d = copy_build("huge-module", os.path.join(FAKES, "cuda-module"))
    with open(os.path.join(d, "ucx", "libuct_cuda.so.0"), "r+b") as f:
        f.truncate(tib)
    out = answered(t, "a module of 1 TiB", doctor(["--ucx", d, "--value", "tcp"]))
    t.check("the module is judged (its library named)", "libuct_cuda.so.0 does not load here: libcuda.so.1" in out, out)


@case("a segment of 1 TiB and no deadline near: doctor's byte bound alone ends the reading, in about a second")
def byte_bound(t):
    # The case above gives doctor a 5 s deadline, which ends a reading that the byte bound failed to
    # end just as well. Here the deadline is 10 minutes: only the byte bound (cli/root_fs.h, 256 MiB,
    # each read clamped to what is left of it) keeps the scan of a 1 TiB segment for UCX's module
    # directory from reading the whole segment (minutes of holes).
    lib = patched("huge-load-no-deadline", whole_file)
    with open(lib, "r+b") as f:
        f.truncate(1 << 40)
    got = doctor(["--ucx", lib, "--value", "tcp", "--timeout-ms", "600000"])
    answered(t, "segments of 1 TiB, --timeout-ms 600000", got)
    t.check("ended by the byte bound, not by a deadline: under 8 s (1 to 2 s here)", got[3] < 8, "%.1f s" % got[3])


@case("a 32-bit libucp, and a 32-bit module beside a 64-bit build: read, the module refused by class")
def thirty_two(t):
    d = os.path.join(WORK, "m32")
    os.makedirs(os.path.join(d, "ucx"))
    lib = os.path.join(d, "libucp.so.0")
    p = subprocess.run(["cc", "-m32", "-shared", "-fPIC", "-fvisibility=hidden", "-DFAKE_UCX_TLS_NIXL=1", "-o", lib, SRC],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        t.skip("a 32-bit libucp", "cc -m32 cannot build one (Debian: gcc-multilib): " + p.stdout.decode(errors="replace")[-200:])
        return
    out = answered(t, "a 32-bit libucp", doctor(["--ucx", lib, "--value", "tcp"]))
    t.check("its transports read from its files (tcp ok)", "ok          tcp" in out, out)
    d64 = copy_build("m32-module")
    os.makedirs(os.path.join(d64, "ucx"), exist_ok=True)
    shutil.copy(lib, os.path.join(d64, "ucx", "libuct_m32.so.0"))
    out = answered(t, "a 32-bit module beside a 64-bit libucp", doctor(["--ucx", d64, "--value", "tcp"]))
    t.check("its line: another class or machine", "libuct_m32.so.0 does not load here: it is an ELF object of another class" in out, out)


def odd_edits():
    """(name, edit) for headers and tables out of bounds, overlapping, of zero entry size."""
    big = (1 << 64) - 1

    def eh_field(i, v):
        def edit(data, eh, ph, sh):
            eh[i] = v
            put_eh(data, eh)
        return edit

    def sh_field(typ, i, v):
        def edit(data, eh, ph, sh):
            for k in of_type(sh, typ):
                sh[k][i] = v(sh, k) if callable(v) else v
                put_sh(data, eh, sh, k)
        return edit

    def ph_field(typ, i, v):
        def edit(data, eh, ph, sh):
            for k, p in enumerate(ph):
                if p[0] == typ:
                    p[i] = v
                    put_ph(data, eh, ph, k)
        return edit

    def dyn(tag, v):
        return lambda data, eh, ph, sh: set_dyn(data, ph, tag, v)

    def names_without_nul(data, eh, ph, sh):  # the dynamic string table without one NUL: every name runs on
        s = sh[sh[of_type(sh, 11)[0]][6]]
        data[s[4]:s[4] + s[5]] = bytes(b if b else 0x41 for b in data[s[4]:s[4] + s[5]])

    def strtab_cut(data, eh, ph, sh):  # the symbol names' table ends inside a name, its NUL outside
        k = sh[of_type(sh, 11)[0]][6]
        sh[k][5] = 7
        put_sh(data, eh, sh, k)
        set_dyn(data, ph, 10, 7)  # DT_STRSZ
    return [
        ("program headers at 2^64-1", eh_field(5, big)),
        ("65535 program headers", eh_field(10, 0xffff)),
        ("program header size 0", eh_field(9, 0)),
        ("section headers at 2^64-1", eh_field(6, big)),
        ("65535 section headers", eh_field(12, 0xffff)),
        ("section header size 1", eh_field(11, 1)),
        ("section name table out of range", eh_field(13, 0xfffe)),
        ("a dynamic segment of 2^64-1 bytes", ph_field(2, 5, big)),
        ("a dynamic segment past the end", ph_field(2, 2, 1 << 50)),
        ("a load segment at 2^64-1", ph_field(1, 2, big)),
        ("the dynamic string table out of the file", dyn(5, 1 << 62)),
        ("a dynamic string table size of 2^64-1", dyn(10, big)),
        ("a DT_NEEDED name at 2^64-1", dyn(1, big)),
        ("relocations at 2^64-1", dyn(7, big)),
        ("relocations of 2^64-1 bytes", dyn(8, big)),
        ("a dynamic symbol table of 2^64-1 bytes", sh_field(11, 5, big)),
        ("a dynamic symbol table past the end", sh_field(11, 4, 1 << 50)),
        ("a dynamic symbol table entry size 0", sh_field(11, 9, 0)),
        ("a dynamic symbol table linked to itself (overlapping)", sh_field(11, 6, lambda sh, k: k)),
        ("a dynamic symbol table linked out of range", sh_field(11, 6, 0xffffffff)),
        ("symbol names over the symbols (overlapping)", sh_field(3, 4, lambda sh, k: sh[of_type(sh, 11)[0]][4])),
        ("every section of size 2^64-1", lambda d, eh, ph, sh: [sh_field(t, 5, big)(d, eh, ph, sh) for t in range(20)]),
        ("symbol names without their NUL", names_without_nul),
        ("a symbol name table cut inside a name", strtab_cut),
    ]


@case("a libucp with odd program and section headers, symbol tables and dynamic entries: an answer each")
def odd_tables(t):
    for i, (name, edit) in enumerate(odd_edits()):
        path = patched("e%02d" % i, edit)
        answered(t, name, doctor(["--ucx", path, "--value", "tcp", "--json"]))
        # The same file as a module beside a good build: its own line, the build judged.
        d = copy_build("m%02d" % i)
        os.makedirs(os.path.join(d, "ucx"), exist_ok=True)
        shutil.copy(path, os.path.join(d, "ucx", "libuct_odd.so.0"))
        out = answered(t, name + ", as a module", doctor(["--ucx", d, "--value", "tcp"]))
        t.check(name + ", as a module: the build judged (tcp ok)", "ok          tcp" in out, out)


@case("links in a loop where a libucp, a module or a needed library is expected: one line, or the module's line")
def link_loops(t):
    d = os.path.join(WORK, "loops")
    os.makedirs(d)
    os.symlink("libucp.so.0", os.path.join(d, "libucp.so.0"))
    answered(t, "--ucx of a link to itself", doctor(["--ucx", os.path.join(d, "libucp.so.0"), "--value", "tcp"]),
             "Too many levels of symbolic links")
    os.symlink("b", os.path.join(d, "a"))
    os.symlink("a", os.path.join(d, "b"))
    answered(t, "--ucx of a -> b -> a", doctor(["--ucx", os.path.join(d, "a"), "--value", "tcp"]), "Too many levels")
    b = copy_build("loop-module")
    os.makedirs(os.path.join(b, "ucx"), exist_ok=True)
    os.symlink("libuct_loop.so.0", os.path.join(b, "ucx", "libuct_loop.so.0"))
    out = answered(t, "a module that is a link to itself", doctor(["--ucx", b, "--value", "tcp"]))
    t.check("its line names the loop", "libuct_loop.so.0 does not load here: Too many levels of symbolic links" in out, out)
    # A needed library found through LD_LIBRARY_PATH as a loop: passed over, as ld.so would, so missing.
    lib, llp = needing_build("loop-needed")
    os.symlink("libneeded.so.0", os.path.join(llp, "libneeded.so.0"))
    out = answered(t, "a needed library that is a link to itself", doctor(["--ucx", lib, "--value", "tcp"], {"LD_LIBRARY_PATH": llp}))
    t.check("said: could not tell part of what it needs (libneeded.so.0)", "libneeded.so.0: cannot open shared object" in out, out)


def needing_build(name):
    """A libucp that needs libneeded.so.0 (found nowhere until the test puts one on LD_LIBRARY_PATH)."""
    d = os.path.join(WORK, name)
    llp = os.path.join(d, "llp")
    os.makedirs(llp)
    stub = os.path.join(d, "libneeded.so.0")
    subprocess.run(["cc", "-shared", "-o", stub, "-Wl,-soname,libneeded.so.0", "-x", "c", "/dev/null"], check=True)
    lib = os.path.join(d, "libucp.so.0")
    subprocess.run(["cc", "-shared", "-fPIC", "-fvisibility=hidden", "-DFAKE_UCX_TLS_NIXL=1", "-o", lib, SRC,
                    "-Wl,--no-as-needed", stub], check=True)
    os.unlink(stub)
    return lib, llp


@case("FIFOs with no writer and character devices where a libucp, a module or a needed library is expected", tags=("as_root",))
def special_files(t):
    if os.geteuid() != 0:
        t.skip("character devices made with mknod", "not root")
        return
    d = os.path.join(WORK, "special")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "fifo"))
    os.mknod(os.path.join(d, "tty"), 0o666 | 0o020000, os.makedev(5, 0))   # what /dev/tty is
    os.mknod(os.path.join(d, "zero"), 0o666 | 0o020000, os.makedev(1, 5))  # what /dev/zero is
    os.symlink("/dev/zero", os.path.join(d, "devzero"))
    for what in ("fifo", "tty", "zero", "devzero"):
        answered(t, "--ucx of a %s" % what, doctor(["--ucx", os.path.join(d, what), "--value", "tcp"]), "not a regular file")
    b = copy_build("special-modules")
    os.makedirs(os.path.join(b, "ucx"), exist_ok=True)
    os.mkfifo(os.path.join(b, "ucx", "libuct_fifo.so.0"))
    os.mknod(os.path.join(b, "ucx", "libuct_tty.so.0"), 0o666 | 0o020000, os.makedev(5, 0))
    os.symlink("/dev/zero", os.path.join(b, "ucx", "libuct_zero.so.0"))
    out = answered(t, "modules that are a FIFO, a terminal and /dev/zero", doctor(["--ucx", b, "--value", "tcp"]))
    for m in ("fifo", "tty", "zero"):
        t.check("module %s: does not load here, not a regular file" % m,
                "libuct_%s.so.0 does not load here: not a regular file" % m in out, out)
    for what, make in (("a FIFO", os.mkfifo), ("/dev/zero", lambda p: os.symlink("/dev/zero", p)),
                       ("a terminal", lambda p: os.mknod(p, 0o666 | 0o020000, os.makedev(5, 0)))):
        lib, llp = needing_build("special-needed-%d" % len(what))
        make(os.path.join(llp, "libneeded.so.0"))
        out = answered(t, "a needed library that is %s" % what, doctor(["--ucx", lib, "--value", "tcp"], {"LD_LIBRARY_PATH": llp}))
        t.check("passed over as ld.so would (it opens no such file for reading): libneeded.so.0 missing",
                "libneeded.so.0: cannot open shared object" in out, out)


HOLDER = r"""#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* maps its libucp (as a loader would) and waits for stdin to close */
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0 || mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) return 3;
  if (write(1, "ready\n", 6) != 6) return 4;
  char c;
  while (read(0, &c, 1) > 0) {}
  return 0;
}
"""


@case("a chrooted process: links in its module directory and library path never leave its root", tags=("as_root",))
def out_of_root(t):
    if os.geteuid() != 0 or not shutil.which("chroot"):
        t.skip("a chrooted process", "not root" if os.geteuid() else "no chroot")
        return
    root = os.path.join(WORK, "jail")
    lib_dir = os.path.join(root, "opt", "ucx", "lib")
    os.makedirs(os.path.join(lib_dir, "ucx"))
    lib, _ = needing_build("jail-build")  # needs libneeded.so.0, put in the root's /usr/lib/<triplet>
    shutil.copy(lib, os.path.join(lib_dir, "libucp.so.0"))
    for d in ("lib", "usr/lib"):
        os.makedirs(os.path.join(root, d, "x86_64-linux-gnu"))
    subprocess.run(["cc", "-shared", "-o", os.path.join(root, "usr/lib/x86_64-linux-gnu/libneeded.so.0"), "-x", "c", "/dev/null"],
                   check=True)
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(root, "lib/x86_64-linux-gnu/libc.so.6"))
    # libc.so.6 needs ld.so by its soname (a dynamic process has it as its interpreter; this one is static)
    shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"))
    holder = os.path.join(root, "holder")
    if harness.compile_c(holder, HOLDER, ["-static"]).returncode:
        t.skip("a chrooted process", "cc -static cannot link (Debian: libc6-dev)")
        return
    # Outside the root, a module that would load: a link that left the root would find it.
    outside = copy_build("outside", os.path.join(FAKES, "nixl"))
    escape = os.path.join(outside, "libuct_escape.so.0")
    shutil.copy(os.path.join(FAKES, "nixl", "libucp.so.0"), escape)
    mods = os.path.join(lib_dir, "ucx")
    os.symlink(escape, os.path.join(mods, "libuct_abs.so.0"))                                       # absolute
    os.symlink("../" * 12 + escape.lstrip("/"), os.path.join(mods, "libuct_dots.so.0"))            # ../ above /
    os.symlink("/proc/1/root" + escape, os.path.join(mods, "libuct_proc.so.0"))                    # through /proc
    p = subprocess.Popen([shutil.which("chroot"), root, "/holder", "/opt/ucx/lib/libucp.so.0"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env_for(None, preload=False, LD_LIBRARY_PATH="/../../" + outside))
    try:
        if not t.equal("control: the chrooted process maps its libucp", p.stdout.readline(), b"ready\n"):
            return
        got = doctor(["--pid", str(p.pid), "--value", "tcp"])
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    out = answered(t, "doctor --pid of the chrooted process", got)
    t.check("judged from its files inside its root (tcp ok)", "ok          tcp" in out, out)
    # The root has no /etc/ld.so.cache: as ld.so does, the default directories are searched.
    t.check("no ld.so.cache in its root: libneeded.so.0 and libc.so.6 found in its default directories",
            not os.path.exists(os.path.join(root, "etc", "ld.so.cache")) and "tell part of what it needs" not in out, out)
    for m in ("abs", "dots", "proc"):
        t.check("module %s: its link resolves inside the root, where nothing is (No such file or directory)" % m,
                "libuct_%s.so.0 does not load here: No such file or directory" % m in out, out)


if __name__ == "__main__":
    main("doctor --ucx and --pid against hostile files")
