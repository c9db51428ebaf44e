#!/usr/bin/env python3
"""Doctor against the truth, one minimal layout per rule: where the rule is ld.so's, the real
glibc loader loads the layout (a probe program dlopens the build and its modules as UCX does);
where it is UCX's, Debian's real UCX 1.13 loads it (the oracle of test_doctor_oracle.py), and
for the rules of later releases a fake build read after UCX's own source (src/ucs/sys/module.c,
src/ucs/config/parser.c, src/ucs/config/ini.c at the release's tag). Each case compares what
`ucxtls doctor --json` reads with that truth. SKIP: no cc, no Debian UCX (those rows), not root
(the secure-execution case). ld.so's rules here, UCX's in fidelity_ucx.py."""
import contextlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import case, env_for, include, main  # noqa: E402
from fidelity_common import EXPORT, PROBE, WORK, cc, doctor, module, modules, tools, ucp  # noqa: E402


def dep(path):
    """An empty library named by its file (the one a module needs)."""
    return cc(path, "int dep_%d;\n" % abs(hash(path)), "-Wl,-soname," + os.path.basename(path))


def probe(libucp, mods=(), env=None, cwd=None):
    """{module path: "loaded" or dlerror} as the real loader answers, and the probe's lines."""
    p = subprocess.run([tools()[0], libucp] + list(mods), env=env or env_for(None, preload=False), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    lines = p.stdout.decode().splitlines()
    got = {}
    for line in lines:
        if line.startswith("module "):
            path, why = line[7:].split(" ", 1)
            got[path] = why
    return got, lines


@contextlib.contextmanager
def waiting(argv, env=None):
    """A probe started with --wait: (the process, its lines up to "ready"), ended afterwards."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env or env_for(None, preload=False))
    try:
        lines = []
        while not lines or lines[-1] != "ready":
            line = p.stdout.readline().decode()
            if not line:
                break
            lines.append(line.strip())
        yield p, lines
    finally:
        p.stdin.close()
        p.wait(timeout=30)


def same_outcome(real, doc):
    """Both loaded, or both not; where both fail, ld.so's words name what doctor's do (the library, or the file)."""
    if (real == "loaded") != (doc == "loaded"):
        return False
    return real == "loaded" or doc.split(":")[0].split("/")[-1] in real


def agree(t, name, real, doc):
    t.check(name, set(real) <= set(doc) and all(same_outcome(real[p], doc[p]) for p in real),
            "ld.so: %r\ndoctor: %r" % (real, doc))


@case("rule 1: a dlopened module's libraries come from its own RPATH and the program's, never libucp's")
def module_has_no_loader(t):
    d = os.path.join(WORK, "r1")
    dep(os.path.join(d, "dep", "libr1dep.so"))
    lib = ucp(os.path.join(d, "lib"), flags=("-Wl,--disable-new-dtags,-rpath,$ORIGIN/../dep",))
    mod = module(os.path.join(d, "lib", "ucx", "libuct_rone.so.0"), "rone", os.path.join(d, "dep", "libr1dep.so"))
    real, _ = probe(lib, [mod])
    t.check("ld.so: libucp's RPATH does not serve the module (elf/dl-open.c: no loader chain)",
            "libr1dep.so: cannot open shared object file" in real.get(mod, ""), repr(real))
    agree(t, "doctor --ucx: the module does not load, libr1dep.so missing", real, modules(doctor(["--ucx", lib, "--value", "tcp"])[1]))


@case("rule 11: a file of the right name that is not ELF ends ld.so's search with its error")
def not_elf_ends_search(t):
    d = os.path.join(WORK, "r11")
    os.makedirs(os.path.join(d, "bad"))
    with open(os.path.join(d, "bad", "libr11dep.so"), "w") as f:
        f.write("this is not an ELF object, and it is longer than an ELF header is: " * 2)
    dep(os.path.join(d, "good", "libr11dep.so"))
    lib = ucp(os.path.join(d, "lib"))
    mod = module(os.path.join(d, "lib", "ucx", "libuct_releven.so.0"), "releven", os.path.join(d, "good", "libr11dep.so"),
                 "-Wl,--enable-new-dtags,-rpath,%s/bad:%s/good" % (d, d))
    real, _ = probe(lib, [mod])
    t.check("ld.so: invalid ELF header, the next directory not tried", "invalid ELF header" in real.get(mod, ""), repr(real))
    agree(t, "doctor --ucx: the same error", real, modules(doctor(["--ucx", lib, "--value", "tcp"])[1]))
    # Another machine's object (e_machine EM_AARCH64) is passed over: the next directory serves.
    other = os.path.join(d, "other", "libr11dep.so")
    os.makedirs(os.path.dirname(other))
    with open(os.path.join(d, "good", "libr11dep.so"), "rb") as f:
        data = bytearray(f.read())
    data[18:20] = (183).to_bytes(2, "little")
    with open(other, "wb") as f:
        f.write(data)
    mod2 = module(os.path.join(d, "lib", "ucx", "libuct_relevenb.so.0"), "relevenb", os.path.join(d, "good", "libr11dep.so"),
                  "-Wl,--enable-new-dtags,-rpath,%s/other:%s/good" % (d, d))
    real, _ = probe(lib, [mod2])
    t.equal("ld.so: another machine's object is passed over", real.get(mod2), "loaded")
    agree(t, "doctor --ucx: the same", real, modules(doctor(["--ucx", lib, "--value", "tcp"])[1]))


@case("rule 12: LD_LIBRARY_PATH set but empty adds no directory; an empty entry in a list is the working directory")
def empty_library_path(t):
    d = os.path.join(WORK, "r12")
    dep(os.path.join(d, "cwd", "libr12dep.so"))
    lib = ucp(os.path.join(d, "lib"))
    mod = module(os.path.join(d, "lib", "ucx", "libuct_rtwelve.so.0"), "rtwelve", os.path.join(d, "cwd", "libr12dep.so"))
    cwd = os.path.join(d, "cwd")
    for value, loads in (("", False), (":", True)):
        env = env_for(None, preload=False, LD_LIBRARY_PATH=value)
        real, _ = probe(lib, [mod], env=env, cwd=cwd)
        t.equal("ld.so, LD_LIBRARY_PATH=%r: the library in the working directory %s" % (value, "found" if loads else "not found"),
                real.get(mod) == "loaded", loads, repr(real))
        agree(t, "doctor --ucx agrees (LD_LIBRARY_PATH=%r)" % value, real,
              modules(doctor(["--ucx", lib, "--value", "tcp"], env=env, cwd=cwd)[1]))


@case("rule 14: getenv, and so UCX, takes the first UCX_TLS of an environment; ld.so the last LD_LIBRARY_PATH")
def first_and_last(t):
    d = os.path.join(WORK, "r14")
    dep(os.path.join(d, "a", "libr14dep.so"))
    os.makedirs(os.path.join(d, "b"))
    lib = ucp(os.path.join(d, "lib"))
    mod = module(os.path.join(d, "lib", "ucx", "libuct_rfourteen.so.0"), "rfourteen", os.path.join(d, "a", "libr14dep.so"))
    probe_path, execenv = tools()
    entries = ["PATH=/usr/bin:/bin", "UCX_TLS=tcp", "UCX_TLS=bogus_tl", "LD_LIBRARY_PATH=%s/b" % d, "LD_LIBRARY_PATH=%s/a" % d]
    with waiting([execenv, str(len(entries))] + entries + [probe_path, lib, "--wait", mod]) as (p, lines):
        t.check("getenv: the first UCX_TLS (tcp)", "getenv tcp" in lines, repr(lines))
        real_loads = "module %s loaded" % mod in lines
        t.check("ld.so: the last LD_LIBRARY_PATH (the directory that has the library)", real_loads, repr(lines))
        rc, j = doctor(["--pid", str(p.pid)])
        t.equal("doctor --pid judges the first UCX_TLS", j.get("value"), "tcp", repr(j))
    rc, j = doctor(["--ucx", lib, "--value", "tcp"], argv_env=entries)
    agree(t, "doctor --ucx with both LD_LIBRARY_PATH entries agrees with ld.so", {mod: "loaded" if real_loads else "?"}, modules(j))


@case("rule 4: --pid names libucs as ld.so opened it (dladdr), not as /proc/PID/maps resolves it")
def dladdr_name(t):
    d = os.path.join(WORK, "r4", "lib")
    ucs = cc(os.path.join(d, "libucs.so.0.0.0"), EXPORT + 'EXPORT const char *ucs_status_string(int s) { return s ? "e" : "ok"; }\n',
             "-Wl,-soname,libucs.so.0")
    os.symlink("libucs.so.0.0.0", os.path.join(d, "libucs.so.0"))
    src = EXPORT + 'EXPORT const char *ucp_get_version_string(void) { return "1.22.0"; }\nEXPORT char uct_tcp_tl[64] = "tcp";\n'
    lib = cc(os.path.join(d, "libucp.so.0"), src, "-Wl,-soname,libucp.so.0", "-Wl,--no-as-needed", ucs,
             "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
    # UCX names modules by libucs's name from its first '.': ".so.0" as ld.so opened it.
    good = module(os.path.join(d, "ucx", "libuct_rfour.so.0"), "rfour")
    stale = module(os.path.join(d, "ucx", "libuct_rfourx.so.0.0.0"), "rfourx")
    with waiting([tools()[0], lib, "--wait"]) as (p, lines):
        t.check("dladdr: libucs as ld.so opened it, its link not resolved", "libucs %s/libucs.so.0" % d in lines, repr(lines))
        rc, j = doctor(["--pid", str(p.pid), "--value", "tcp"])
        got = modules(j)
        t.check("doctor --pid: the modules named .so.0 (%s), not .so.0.0.0" % os.path.basename(good),
                got.get(good) == "loaded" and stale not in got, repr(got))


@case("rule 13: secure execution drops the program's $ORIGIN RPATH entry outside the trusted directories", tags=("as_root",))
def secure_origin(t):
    if os.geteuid() != 0:
        t.skip("a set-group-ID program", "not root (the program is made set-group-ID nogroup)")
        return
    d = os.path.join(WORK, "r13")
    os.makedirs(d)
    os.chmod(d, 0o755)
    dep(os.path.join(d, "dep", "libr13dep.so"))
    lib = ucp(os.path.join(d, "lib"))
    mod = module(os.path.join(d, "lib", "ucx", "libuct_rthirteen.so.0"), "rthirteen", os.path.join(d, "dep", "libr13dep.so"))
    prog = cc(os.path.join(d, "bin", "prog"), PROBE, "-ldl", "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../dep")
    os.chown(prog, 0, 65534)
    os.chmod(prog, 0o2755)  # set-group-ID: egid != gid, so AT_SECURE
    for dd in ("bin", "lib", "lib/ucx", "dep"):
        os.chmod(os.path.join(d, dd), 0o755)
    with waiting([prog, lib, "--wait", mod]) as (p, lines):
        real = {mod: ln.split(" ", 2)[2] for ln in lines if ln.startswith("module ")}
        t.check("ld.so (AT_SECURE): $ORIGIN/../dep is dropped, the module's library is not found",
                "libr13dep.so: cannot open" in real.get(mod, ""), repr(lines))
        agree(t, "doctor --pid agrees", real, modules(doctor(["--pid", str(p.pid), "--value", "tcp"])[1]))


if __name__ == "__main__":
    include("fidelity_ucx")
    main("doctor against the real loader and UCX's own rules, one layout per rule")
