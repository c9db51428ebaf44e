#!/usr/bin/env python3
"""Performance budgets (docs/performance.md) that do not depend on the machine's speed.

"Added by the constructor" is a difference between two runs of /bin/true in the same
environment: preloaded with libucxtls.so, and preloaded with an empty library built the same way
(tests/perf/empty_preload.c: the loader's work is the same, its constructor does nothing).
- syscalls: `strace -f -c` totals of the whole process tree (a helper process would count);
- user-space instructions: `valgrind --tool=callgrind` totals, a ratio to the empty library's.
  The loader runs as a program (`ld.so --preload LIB /bin/true`) so that valgrind's own launcher
  never runs the constructor and hands UCX_TLS down to the measured process.
- heap: `valgrind --tool=memcheck` totals (allocations and bytes) at most those of a library
  whose constructor makes only the two setenv calls the library once made
  (tests/perf/setenv_preload.c), and no allocation at all on the paths that write nothing. The
  environment edit's one block is fresh pages (one mmap, counted in the syscall rows), never the
  heap: the host's malloc is never called, so these rows read 0 wherever the library writes.
Each measured path is also checked to decide what it should, so a budget is never met by a path
that skipped its work. Wall time is scripts/bench.sh's business, not a test's.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALL, ALWAYS, C, LIB, R, UNSET, Z, Checks, add_case, case, env_for, fixture, have, main, run, sh_value  # noqa: E402

EMPTY = os.environ.get("UCXTLSTEST_EMPTY_LIB", "")
SETENV = os.environ.get("UCXTLSTEST_SETENV_LIB", "")
# The instruction budget is for an optimised build; -O0 code is not what ships.
OPTIMISED = os.environ.get("UCXTLSTEST_BUILD_TYPE", "RelWithDebInfo") not in ("Debug", "")

# name, machine, variables, expected UCX_TLS, syscall budget (added by the constructor). The
# default (UCX_TLS unset on NVIDIA nodes with rc, all on AMD and Intel nodes without reading the
# network) and UCXTLS_WRITE=always (the template composed on every GPU node, the default before
# 0.2.0: every fact read) are measured on the same busy nodes.
BUSY = "busy node, UCXTLS_WRITE=always: derive and set"
# One small file read (shim/sys.cc read_small): stat (a regular file only), open, read, close.
READ = 4
# An ACTIVE port's link_layer (one read): InfiniBand needs nothing more; RoCE needs a GID UCX can
# use (shim/probe_rdma.cc check_roce). Added to each row that reads a port.
PORT = READ
# A RoCE port whose GID 0 names a net device of this namespace: gids/0, ndevs/0 (a read each) and
# the net device's access. One UCX cannot open reads its whole GID table (256 entries here, as a
# ConnectX's): a read per entry, a read and an access more for each valid one.
ROCE_OK = 2 * READ + 1
ROCE_TABLE = READ * 256 + (READ + 1) * 4
# A RoCE port also reads UCX_IB_GID_INDEX's places: step 6's ucx.conf files, read again for that
# name, except those step 6 found not there (none, on these nodes).
GID_CONF = 0
SYSCALL_ROWS = [
    ("busy node, the default: unset (the CUDA list fits)", "dgx", {}, UNSET, 24 + PORT),
    (BUSY, "dgx", ALWAYS, C, 24 + PORT),
    ("busy AMD node (8 GPUs, 8 HCAs), the default: all", "mi300x", {}, ALL, 24),
    ("busy AMD node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set", "mi300x", ALWAYS, R, 24 + PORT),
    ("busy Intel node (8 GPUs, 8 HCAs), the default: all", "intel-busy", {}, ALL, 24),
    ("busy Intel node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set", "intel-busy", ALWAYS, Z, 24 + PORT),
    ("UCX_TLS set by the user", "dgx", {"UCX_TLS": "rc,cuda_copy"}, "rc,cuda_copy", 1),
    ("UCX_TLS inherited from ucxtls, UCXTLS_WRITE=always: derived again", "dgx",
     dict(ALWAYS, UCX_TLS=C, UCXTLS_DERIVED=C), C, 24 + PORT),
    ("UCX_TLS inherited from ucxtls, the default: removed (the CUDA list fits)", "dgx",
     {"UCX_TLS": C, "UCXTLS_DERIVED": C}, UNSET, 24 + PORT),
    ("UCXTLS_DISABLE=1", "dgx", dict(ALWAYS, UCXTLS_DISABLE="1"), UNSET, 1),
    # A GPU node without RDMA: UCX's default written, within the busy node's budget.
    ("GPU node without RDMA: all", "no-rdma", {}, "all", 24),
    # No GPU: the three families' first files (and the sysroot check the replay adds); nothing
    # else is asked, not even the ucx.conf places (the family comes first: 3 calls less, and a
    # $HOME on a mount that does not answer is never touched).
    ("CPU node on InfiniBand: unset", "no-gpu", {}, UNSET, 7),
    ("nothing at all (no GPU, no RDMA): unset", "empty", {}, UNSET, 4),
    # Node size: 32 EFA devices, each ruled out by its driver link (see per_device below).
    ("AWS p5 (8 GPUs, 32 EFA): all", "aws-p5", {}, "all", 24 + 31 + 2),
    ("64 RoCE functions, every port DOWN: all", "roce-down", {}, "all", 64 * (2 * READ + 2) + 28),
    # No uverbs0: /dev/infiniband is listed to find uverbs3 (4 calls more than a full node).
    ("container given one GPU and one HCA (uverbs3), UCXTLS_WRITE=always", "container-one-of-eight", ALWAYS, C, 28 + PORT),
    ("container given one GPU and one HCA (uverbs3), the default: unset", "container-one-of-eight", {}, UNSET, 28 + PORT),
    # RoCE: a ConnectX whose GID 0 is on its own net device; one whose table is empty (UCX does
    # not list it, and rc_gda fails on it: its whole table is read, READ calls an entry, to find
    # that no GID is usable); a container given the host's bond without the bond. A RoCE port
    # also reads UCX_IB_GID_INDEX's places (the ucx.conf files of step 6, one failed open each).
    ("RoCE ConnectX, GIDs on its net device: unset", "roce-connectx", {}, UNSET, 24 + PORT + ROCE_OK + GID_CONF),
    ("RoCE ConnectX, an empty GID table: ^ib", "roce-zero-gids", {}, "^ib", 24 + PORT + READ * 256 + 8 + GID_CONF),
    ("container given the host's mlx5_bond_0, not its bond: ^ib", "roce-bond-elsewhere", {}, "^ib",
     24 + PORT + ROCE_TABLE + 4 + GID_CONF),
]

# The default reads no network on AMD and Intel nodes: fewer syscalls than UCXTLS_WRITE=always there.
CHEAPER_ROWS = [("busy AMD node (8 GPUs, 8 HCAs), the default: all",
                 "busy AMD node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set"),
                ("busy Intel node (8 GPUs, 8 HCAs), the default: all",
                 "busy Intel node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set")]

# The driver tier (docs/driver-probe.md) reads the answer `ucxtls probe --save` stored for the node: at most
# this many syscalls more than the kernel tier on the same machine, and no process.
DRIVER_TIER_EXTRA = 6

# name, machine, variables, budget (instructions ÷ the empty library's). Measured (docs/performance.md):
# 1.05 on the default NVIDIA node, 1.06-1.07 where the default writes, 1.08-1.10 with
# UCXTLS_WRITE=always, 1.005 with UCX_TLS set; each budget a little above, so that a change that
# costs every process more shows here.
INSTRUCTION_ROWS = [
    ("busy node, the default: unset (the CUDA list fits)", "dgx", {}, 1.07),
    (BUSY, "dgx", ALWAYS, 1.12),
    ("busy AMD node (8 GPUs, 8 HCAs), the default: all", "mi300x", {}, 1.09),
    ("busy AMD node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set", "mi300x", ALWAYS, 1.12),
    ("busy Intel node (8 GPUs, 8 HCAs), the default: all", "intel-busy", {}, 1.09),
    ("busy Intel node (8 GPUs, 8 HCAs), UCXTLS_WRITE=always: derive and set", "intel-busy", ALWAYS, 1.12),
    ("UCX_TLS set by the user", "dgx", {"UCX_TLS": "rc,cuda_copy"}, 1.02),
]

# libc symbols the library may import: __environ alone, a data symbol. No function: the loader
# binds an import to the executable's definition first (a host's own malloc or syscall, called
# before its constructors). shim/strings.c defines the string functions inside, every system call
# is the architecture's instruction (shim/raw_syscall.h), the one allocation is fresh pages (mmap),
# AT_SECURE is read from the auxiliary vector.
IMPORT_BUDGET = 1

# name, machine, variables, the floor: "setenv" (at most its heap use) or "empty" (none at all)
HEAP_ROWS = [
    ("busy node, the default: nothing written", "dgx", {}, "empty"),
    (BUSY, "dgx", ALWAYS, "setenv"),
    ("busy AMD node, the default: all", "mi300x", {}, "setenv"),
    ("UCX_TLS inherited from ucxtls, UCXTLS_WRITE=always: derived again", "dgx",
     dict(ALWAYS, UCX_TLS="rc_x,rc,dc_x,dc,ze_copy", UCXTLS_DERIVED="rc_x,rc,dc_x,dc,ze_copy"), "setenv"),
    ("UCX_TLS set by the user", "dgx", {"UCX_TLS": "rc,cuda_copy"}, "empty"),
    ("GPU node without RDMA: all", "no-rdma", {}, "setenv"),
    ("node without a GPU", "no-gpu", {}, "empty"),
    ("a kept value of another family, repaired", "intel-xe", {"UCX_TLS": C, "UCXTLS_REPAIR": "1"}, "setenv"),
]

# The cost of one more RDMA device, by kind (shim/probe.cc check_uverbs: cheapest disqualifier
# first): the syscalls added on a node of `big` devices less those on one of `small`, per device,
# not counting the getdents64 calls of the longer /dev/infiniband listing (one per 1 KiB of it).
# kind (tests/fixtures/machines.py SCALED), small, big, budget per further device
PER_DEVICE_ROWS = [
    ("efa", 8, 32, 1),        # its driver link alone
    ("roce-down", 8, 64, 2 * READ + 2),  # driver link, ibdev, port 1's state, port 2 absent
]

_scratch = tempfile.mkdtemp(prefix="ucxtls-perf-")


def strace_total(lib, env):
    """(total syscalls of /bin/true preloaded with lib, the strace -c table)."""
    out = os.path.join(_scratch, "strace.out")
    # strace itself runs without the library; only the traced program gets it.
    p = run(["strace", "-f", "-c", "-o", out, "-E", "LD_PRELOAD=" + lib, "/bin/true"], env)
    if p.returncode != 0:
        return None, p.stderr.decode()
    table = open(out).read()
    m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$", table, re.M)
    return (int(m.group(1)) if m else None), table


def callgrind_total(lib, env, ldso):
    out = os.path.join(_scratch, "callgrind.out")
    p = run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, ldso, "--preload", lib, "/bin/true"],
            env, timeout=120)
    if p.returncode != 0:
        return None, p.stderr.decode()
    m = re.search(r"^(?:summary|totals):\s*(\d+)", open(out).read(), re.M)
    return (int(m.group(1)) if m else None), p.stderr.decode()


def heap_use(lib, env, ldso):
    """((allocations, bytes), memcheck errors, valgrind's output) of /bin/true preloaded with lib."""
    p = run(["valgrind", "--tool=memcheck", ldso, "--preload", lib, "/bin/true"], env, timeout=120)
    err = p.stderr.decode()
    m = re.search(r"total heap usage: ([\d,]+) allocs, [\d,]+ frees, ([\d,]+) bytes allocated", err)
    e = re.search(r"ERROR SUMMARY: (\d+) errors", err)
    if p.returncode != 0 or not m or not e:
        return None, None, err
    return (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))), int(e.group(1)), err


def interpreter(path):
    p = subprocess.run(["readelf", "-l", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    m = re.search(r"interpreter: (\S+)\]", p.stdout.decode())
    return m.group(1) if m else None


def saved_driver_answer():
    """A cache directory holding what `ucxtls probe --save` stored on fixture dgx with fake drivers
    that answer 0 CUDA devices and 1 Level Zero GPU (so the saved answer, ze, differs from the
    kernel's, cuda); None when the command or the fakes are not built."""
    build = os.path.dirname(LIB)
    fakes = os.path.join(build, "tests", "driver", "fakes")
    ucxtls = os.path.join(build, "ucxtls")
    if not os.path.exists(ucxtls) or not os.path.isdir(fakes):
        return None
    cache = os.path.join(_scratch, "cache")
    env = env_for("dgx", preload=False, UCXTLS_CACHE_DIR=cache, FAKE_CUDA_INIT="100", FAKE_ZE_DEVICES="gpu",
                  LD_LIBRARY_PATH=os.path.join(fakes, "cuda") + ":" + os.path.join(fakes, "ze-new"))
    p = run([ucxtls, "probe", "--save"], env)
    return cache if p.returncode == 0 else None


def start():
    t = Checks("performance budgets of " + LIB)
    if not EMPTY or not os.path.exists(EMPTY):
        t.skip("all budgets", "UCXTLSTEST_EMPTY_LIB (the empty preload library) is not built")
        t.exit()
    return t


_saved = []
DRIVER_ROW = "driver tier: the answer saved for this node"


def row_env(t, name, extra):
    """The row's variables; for the driver tier's rows, the cache `ucxtls probe --save` wrote (made
    once per process), or None after a failed check."""
    if name != DRIVER_ROW:
        return extra
    if not _saved:
        _saved.append(saved_driver_answer())
    if not _saved[0]:
        t.check("ucxtls probe --save (fake drivers) saved an answer for the driver tier's budgets", False,
                "build the ucxtls command and tests/driver's fakes")
        return None
    return dict(extra, UCXTLS_CACHE_DIR=_saved[0])


DRIVER = dict(ALWAYS, UCXTLS_PROBE="driver")  # against the kernel tier's BUSY row
SYSCALL_ROWS.append((DRIVER_ROW, "dgx", DRIVER, Z, 24 + PORT + DRIVER_TIER_EXTRA))
INSTRUCTION_ROWS.append((DRIVER_ROW, "dgx", DRIVER, 1.16))


# The measured paths decide what they should.
def decides(t, name, machine, extra, want):
    extra = row_env(t, name, extra)
    if extra is None:
        return
    tls, _, err = sh_value(env_for(machine, **extra))
    t.equal("%s: /bin/sh sees UCX_TLS=%s" % (name, want), tls, want, err)


for _name, _machine, _extra, _want, _ in SYSCALL_ROWS:
    add_case("decides: " + _name, decides, _name, _machine, _extra, _want)


@case("imports: the symbols the loader binds")
def imports(t):
    # Each import is bound by the loader in every process (the instruction budget's main cost).
    if not have("nm"):
        t.skip("imports", "nm is not installed (Debian binutils)")
        return
    p = subprocess.run(["nm", "-D", "--undefined-only", LIB], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    strong = sorted(l.split()[-1] for l in p.stdout.decode().splitlines() if l.split()[:1] == ["U"])
    t.check("%d symbols imported (budget <= %d): %s" % (len(strong), IMPORT_BUDGET, " ".join(strong)),
            len(strong) <= IMPORT_BUDGET)


_traced = {}


def no_strace(t):
    """True (after a SKIP) where strace is missing or cannot trace."""
    if not have("strace"):
        t.skip("syscall budgets", "strace is not installed (apt-get install strace)")
        return True
    if "works" not in _traced:
        _traced["works"] = strace_total(EMPTY, env_for("dgx", preload=False))
    works, table = _traced["works"]
    if works is None:
        t.skip("syscall budgets", "strace cannot trace here (ptrace not permitted?): " + table.strip()[:200])
        return True
    return False


def syscalls_added(name, machine, extra):
    """(syscalls the constructor adds or None, table with the library, table with the empty one),
    measured once per row and process."""
    if name not in _traced:
        env = env_for(machine, preload=False, **extra)
        total, lib_table = strace_total(LIB, env)
        floor_here, floor_table = strace_total(EMPTY, env)
        added = None if total is None or floor_here is None else total - floor_here
        _traced[name] = (added, lib_table, floor_table)
    return _traced[name]


def syscall_budget(t, name, machine, extra, budget):
    if no_strace(t):
        return
    extra = row_env(t, name, extra)
    if extra is None:
        return
    added, lib_table, floor_table = syscalls_added(name, machine, extra)
    if added is None:
        t.check("%s: strace ran" % name, False, lib_table)
        return
    t.check("%s: %d syscalls added by the constructor (budget <= %d)" % (name, added, budget),
            added <= budget,
            "with libucxtls.so:\n%s\nwith the empty library:\n%s" % (lib_table, floor_table))
    if extra.get("UCXTLS_PROBE") == "driver":
        made = re.findall(r"^.*\b(clone3?|v?fork)\s*$", lib_table, re.M)
        t.check("%s: no process created (strace -f: no clone, clone3, fork, vfork)" % name, not made, lib_table)


for _name, _machine, _extra, _, _budget in SYSCALL_ROWS:
    add_case("strace: syscalls: " + _name, syscall_budget, _name, _machine, _extra, _budget, tags=("strace",))


def per_device(t, kind, small, big, budget):
    if no_strace(t):
        return
    import machines  # noqa: E402 (tests/fixtures, on the path through harness)
    measured = {}
    for n in (small, big):
        root = machines.build_scaled(kind, n, os.path.join(_scratch, "%s-%d" % (kind, n)))
        env = env_for(None, preload=False, UCXTLS_SYSROOT=root)
        tls, _, err = sh_value(env_for(None, UCXTLS_SYSROOT=root))
        t.equal("%s x%d: /bin/sh sees UCX_TLS=all" % (kind, n), tls, "all", err)
        total, table = strace_total(LIB, env)
        floor_here, _ = strace_total(EMPTY, env)
        if total is None or floor_here is None:
            t.check("%s x%d: strace ran" % (kind, n), False, table)
            return
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?getdents64\s*$", table, re.M)
        measured[n] = (total - floor_here, int(m.group(1)) if m else 0)
    (a, ga), (b, gb) = measured[small], measured[big]
    each = float((b - gb) - (a - ga)) / (big - small)
    t.check("%s: %.2f syscalls per further device (%d added with %d devices, %d with %d; getdents64 %d and %d) "
            "(budget <= %d)" % (kind, each, a, small, b, big, ga, gb, budget), each <= budget)


for _kind, _small, _big, _budget in PER_DEVICE_ROWS:
    add_case("strace: syscalls per further RDMA device: " + _kind, per_device, _kind, _small, _big, _budget, tags=("strace",))


@case("strace: syscalls: the driver tier against the kernel tier on the same node", tags=("strace",))
def driver_tier_extra(t):
    if no_strace(t):
        return
    rows = {r[0]: r for r in SYSCALL_ROWS}
    kernel_row, driver_env = rows[BUSY], row_env(t, DRIVER_ROW, DRIVER)
    if driver_env is None:
        return
    kernel = syscalls_added(*kernel_row[:3])[0]
    drv = syscalls_added(DRIVER_ROW, "dgx", driver_env)[0]
    if t.check("strace measured both tiers", kernel is not None and drv is not None):
        t.check("driver tier: %d syscalls more than the kernel tier on the same node (budget <= %d)"
                % (drv - kernel, DRIVER_TIER_EXTRA), drv - kernel <= DRIVER_TIER_EXTRA)


def cheaper(t, default, always):
    if no_strace(t):
        return
    rows = {r[0]: r for r in SYSCALL_ROWS}
    a, b = syscalls_added(*rows[default][:3])[0], syscalls_added(*rows[always][:3])[0]
    if t.check("strace measured both", a is not None and b is not None):
        t.check("%s: %d syscalls, fewer than UCXTLS_WRITE=always's %d (no RDMA probe)" % (default, a, b), a < b)


for _default, _always in CHEAPER_ROWS:
    add_case("strace: syscalls: the default reads no network: " + _default, cheaper, _default, _always, tags=("strace",))


def no_valgrind(t, what):
    if have("valgrind"):
        return False
    t.skip(what, "valgrind is not installed (apt-get install valgrind)")
    return True


def instruction_budget(t, name, machine, extra, budget):
    if no_valgrind(t, "instruction budgets"):
        return
    if not OPTIMISED:
        t.skip("%s: instructions" % name, "a %s build: the budget is for an optimised one"
               % (os.environ.get("UCXTLSTEST_BUILD_TYPE") or "unoptimised"))
        return
    extra = row_env(t, name, extra)
    if extra is None:
        return
    ldso = interpreter("/bin/true")
    env = env_for(machine, preload=False, **extra)
    floor, err1 = callgrind_total(EMPTY, env, ldso)
    ir, err2 = callgrind_total(LIB, env, ldso)
    if floor is None or ir is None:
        t.skip("%s: instructions" % name, "valgrind --tool=callgrind failed: " + (err1 + err2).strip()[-300:])
        return
    t.check("%s: %d instructions, %.3f x the empty library's %d (budget <= %.2f)"
            % (name, ir, ir / floor, floor, budget), ir <= budget * floor)


for _name, _machine, _extra, _budget in INSTRUCTION_ROWS:
    add_case("callgrind: instructions: " + _name, instruction_budget, _name, _machine, _extra, _budget,
             tags=("callgrind",))


def heap_budget(t, name, machine, extra, floor_name):
    if no_valgrind(t, "heap budgets"):
        return
    floors = {"empty": EMPTY, "setenv": SETENV}
    if not floors[floor_name] or not os.path.exists(floors[floor_name]):
        t.skip("%s: heap" % name, "UCXTLSTEST_SETENV_LIB (the setenv-only preload library) is not built")
        return
    ldso = interpreter("/bin/true")
    env = env_for(machine, preload=False, **extra)
    want, _, err1 = heap_use(floors[floor_name], env, ldso)
    got, errors, err2 = heap_use(LIB, env, ldso)
    if want is None or got is None:
        t.skip("%s: heap" % name, "valgrind --tool=memcheck failed: " + (err1 + err2).strip()[-300:])
        return
    if floor_name == "empty":
        t.equal("%s: heap use %d allocations, %d bytes: none, as the empty floor's" % ((name,) + got),
                got, want, err2)
    else:
        t.check("%s: heap use %d allocations, %d bytes: at most the setenv floor's %d, %d"
                % ((name,) + got + want), got[0] <= want[0] and got[1] <= want[1], err2)
    t.equal("%s: memcheck errors" % name, errors, 0, err2)


for _name, _machine, _extra, _floor in HEAP_ROWS:
    add_case("memcheck: heap: " + _name, heap_budget, _name, _machine, _extra, _floor, tags=("memcheck",))


if __name__ == "__main__":
    main("performance budgets of " + LIB, start)
