#!/usr/bin/env python3
"""The library's build rules (docs/design.md, "Build rules"), checked on the built file, and its silence on stdout.

- NEEDED is libc.so.6 alone; nothing is exported; the highest GLIBC_ version imported is at
  most 2.17; no fortified *_chk import; BIND_NOW and RELRO are on.
- `true` and `ls` print byte-identical stdout with and without the library, UCXTLS_DEBUG=1
  included (the debug line goes to stderr).
"""
import re
import subprocess

from harness import LIB, add_case, case, env_for, main, run


def tool(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode()


def version_key(v):
    return tuple(int(x) for x in v.split("."))


@case("build rules of the built file", tags=("built_file",))
def build_rules(t):
    dyn = tool(["readelf", "-d", "-W", LIB])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn)
    t.equal("NEEDED is libc.so.6 alone", needed, ["libc.so.6"])
    t.check("BIND_NOW (-z now)", "BIND_NOW" in dyn or "FLAGS_1" in dyn and "NOW" in dyn, dyn)
    t.check("GNU_RELRO segment (-z relro)", "GNU_RELRO" in tool(["readelf", "-l", "-W", LIB]))

    defined = [l for l in tool(["nm", "-D", "--defined-only", LIB]).splitlines() if l.split()[-2:-1] != ["A"]]
    t.equal("no exported symbol", defined, [])

    dynsyms = tool(["objdump", "-T", LIB])
    versions = sorted(set(re.findall(r"GLIBC_([0-9.]+)", dynsyms)), key=version_key)
    t.check("highest GLIBC_ version imported is <= 2.17 (%s)" % (versions[-1] if versions else "none"),
            bool(versions) and version_key(versions[-1]) <= (2, 17), dynsyms)
    chk = [l for l in dynsyms.splitlines() if "_chk" in l]
    t.equal("no fortified *_chk import", chk, [])
    undefined = sorted(re.findall(r"\*UND\*\s+\S+\s+(?:\S+\s+)?(\S+)$", dynsyms, re.M))
    # The loader binds an import to the executable's definition first: a host's own malloc, syscall
    # or sigprocmask would be called before its constructors ran (docs/design.md, "Build rules").
    # So no function is imported, not even a weak one; the one data symbol is glibc's __environ.
    t.equal("imports no function: __environ alone", undefined, ["__environ"], dynsyms)
    funcs = [l for l in tool(["readelf", "-W", "--dyn-syms", LIB]).splitlines() if " UND " in l and " FUNC " in l]
    t.equal("no undefined FUNC in .dynsym", funcs, [])

# stdout is the host's: byte-identical with and without the library.
def stdout_identical(t, argv):
    for machine, extra in ((None, {}), ("dgx", {}), ("dgx", {"UCXTLS_DEBUG": "1"}),
                           ("no-rdma", {"UCXTLS_DEBUG": "1"}), ("dgx", {"UCXTLS_ACCEL": "bad"})):
        plain = run(argv, env_for(machine, preload=False, **extra))
        pre = run(argv, env_for(machine, **extra))
        label = "%s on %s %s" % (" ".join(argv), machine or "this machine", extra or "")
        t.check(label + ": stdout identical", pre.stdout == plain.stdout,
                "with: %r\nwithout: %r" % (pre.stdout[:200], plain.stdout[:200]))
        t.equal(label + ": exit status identical", pre.returncode, plain.returncode)
        if extra.get("UCXTLS_DEBUG") or extra.get("UCXTLS_ACCEL"):
            t.check(label + ": one ucxtls line on stderr",
                    pre.stderr.decode().count("ucxtls: ") == 1, pre.stderr.decode())
        else:
            t.equal(label + ": stderr identical", pre.stderr, plain.stderr)


for _argv in (["true"], ["ls", "/"], ["ls", "-la", "/etc/ld.so.conf.d"], ["sh", "-c", "echo hello; exit 3"]):
    add_case("stdout, status and stderr of `%s` with and without the library" % " ".join(_argv), stdout_identical, _argv)


if __name__ == "__main__":
    main("hygiene of " + LIB)
