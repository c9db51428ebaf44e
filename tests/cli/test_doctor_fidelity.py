#!/usr/bin/env python3
"""Doctor against the truth, one minimal layout per rule: where the rule is ld.so's, the real
glibc loader loads the layout (a probe program dlopens the build and its modules as UCX does);
where it is UCX's, Debian's real UCX 1.13 loads it (the oracle of test_doctor_oracle.py), and
for the rules of later releases a fake build read after UCX's own source (src/ucs/sys/module.c,
src/ucs/config/parser.c, src/ucs/config/ini.c at the release's tag). Each case compares what
`ucxtls doctor --json` reads with that truth. SKIP: no cc, no Debian UCX (those rows), not root
(the secure-execution case)."""
import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, env_for, main  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(harness.LIB), "ucxtls"))
ORACLE = os.environ.get("UCXTLSTEST_ORACLE", os.path.join(harness.BUILD_DIR, "tests", "cli", "ucx_oracle"))
DEBIAN = "/usr/lib/x86_64-linux-gnu"
WORK = tempfile.mkdtemp(prefix="ucxtls-fidelity-")
os.chmod(WORK, 0o755)
atexit.register(shutil.rmtree, WORK, True)

EXPORT = '#define EXPORT __attribute__((visibility("default")))\n'
# probe LIBUCP [--wait] [MODULE...]: what the real loader does with a build. It dlopens LIBUCP, says
# which file defines ucs_status_string as ld.so named it (dladdr's dli_fname, UCX's
# ucs_module_loader_add_dl_dir), getenv's UCX_TLS, then dlopens each module as UCX does
# (RTLD_LAZY | RTLD_LOCAL, module.c ucs_module_flags_to_dlopen_mode) and prints dlerror.
PROBE = r'''#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  void *ucp = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!ucp) return printf("error %s\n", dlerror()), 0;
  Dl_info info;
  void *sym = dlsym(ucp, "ucs_status_string");
  if (sym && dladdr(sym, &info)) printf("libucs %s\n", info.dli_fname);
  printf("getenv %s\n", getenv("UCX_TLS") ? getenv("UCX_TLS") : "<unset>");
  int wait = argc > 2 && !strcmp(argv[2], "--wait");
  for (int i = 2 + wait; i < argc; i++) {
    void *m = dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL);
    const char *why = m ? "" : dlerror();
    printf("module %s %s\n", argv[i], m ? "loaded" : why);
  }
  if (wait) {
    printf("ready\n");
    char c;
    while (read(0, &c, 1) > 0) {}
  }
  return 0;
}
'''
# execenv N NAME=V... PROGRAM ARG...: PROGRAM with exactly those N environment entries, in that
# order, duplicates kept (what env(1) and Python cannot give).
EXECENV = r'''#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  char **env = calloc((size_t)n + 1, sizeof *env);
  for (int i = 0; i < n; i++) env[i] = argv[2 + i];
  execve(argv[2 + n], argv + 2 + n, env);
  return 127;
}
'''


def cc(out, source, *flags):
    """Compiles C source to out (a shared object when out's name has .so); out."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    src = out + ".c"
    with open(src, "w") as f:
        f.write(source)
    shared = ["-shared", "-fPIC", "-fvisibility=hidden"] if ".so" in os.path.basename(out) else []
    subprocess.run(["cc", "-O1"] + shared + ["-o", out, src] + list(flags), check=True)
    os.unlink(src)
    return out


def tools():
    if not os.path.exists(os.path.join(WORK, "probe")):
        cc(os.path.join(WORK, "probe"), PROBE, "-ldl")
        cc(os.path.join(WORK, "execenv"), EXECENV)
    return os.path.join(WORK, "probe"), os.path.join(WORK, "execenv")


def ucp(d, version="1.22.0", transports=("tcp", "self"), modules=None, flags=()):
    """d/libucp.so.0: a fake UCX that is its own libucs and libuct (ucs_status_string,
    uct_query_components), with the module list compiled in when given (":x:y")."""
    src = EXPORT + 'EXPORT const char *ucp_get_version_string(void) { return "%s"; }\n' % version
    src += 'EXPORT const char *ucs_status_string(int s) { return s ? "error" : "Success"; }\n'
    src += 'EXPORT const char *uct_query_components(void) { return %s; }\n' % ('"%s"' % modules if modules else "0")
    src += "".join('EXPORT char uct_%s_tl[64] = "%s";\n' % (t, t) for t in transports)
    return cc(os.path.join(d, "libucp.so.0"), src, "-Wl,-soname,libucp.so.0", *flags)


def module(path, tl, *flags):
    """A transport module registering tl (flags: its NEEDED libraries, RPATH...)."""
    return cc(path, EXPORT + 'EXPORT char uct_%s_tl[64] = "%s";\n' % (tl, tl), "-Wl,--no-as-needed", *flags)


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


def doctor(args, env=None, cwd=None, argv_env=None):
    """(exit status, doctor --json's object); argv_env: the exact environment entries (execenv)."""
    argv = [CLI, "doctor", "--json"] + args
    if argv_env is not None:
        argv = [tools()[1], str(len(argv_env))] + argv_env + argv
    p = subprocess.run(argv, env=env or env_for(None, preload=False), cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"error": p.stderr.decode(errors="replace")}


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


def modules(j):
    """{module path: "loaded" or why} of doctor's first build."""
    if not j.get("ucx"):
        return {"doctor read no build": repr(j)}
    return {m["path"]: "loaded" if m["loads"] else m["why"] for m in j["ucx"][0]["modules"]}


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


# ---------------------------------------------------------------------------------------------
# UCX's rules. Debian's UCX 1.13.1, copied into a directory of its own (so that its modules and
# ucx.conf are the layout's), is the truth for 1.13 to 1.16; the oracle loads it.

def debian_copy(name):
    """WORK/name/lib: Debian's libucp, libucs, libuct and libucm (RUNPATH $ORIGIN), its cma module
    in lib/ucx; the lib directory. None when Debian's UCX or patchelf is not here."""
    if not os.path.exists(os.path.join(DEBIAN, "libucp.so.0")) or not shutil.which("patchelf"):
        return None
    d = os.path.join(WORK, name, "lib")
    os.makedirs(os.path.join(d, "ucx"))
    for lib in ("libucp.so.0", "libucs.so.0", "libuct.so.0", "libucm.so.0"):
        shutil.copy(os.path.realpath(os.path.join(DEBIAN, lib)), os.path.join(d, lib))
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", os.path.join(d, lib)], check=True)
    shutil.copy(os.path.realpath(os.path.join(DEBIAN, "ucx", "libuct_cma.so.0")), os.path.join(d, "ucx", "libuct_cma.so.0"))
    return d


def oracle(libucp, **extra):
    """(transports, {module: "loaded" or "not-loaded"}) as Debian's UCX loads them itself."""
    p = subprocess.run([ORACLE, libucp], env=env_for(None, preload=False, **extra), stdout=subprocess.PIPE, timeout=60)
    tls, mods = set(), {}
    for line in p.stdout.decode().splitlines():
        w = line.split(" ")
        if w[0] == "transport":
            tls.add(w[1])
        elif w[0] == "module":
            mods[w[1]] = "loaded" if w[2] == "loaded" else "not-loaded"
    return tls, mods


def debian_or_skip(t, name, what):
    d = debian_copy(name)
    if not d or not os.path.exists(ORACLE):
        t.skip(what, "no Debian UCX (libucx0), patchelf or ucx_oracle here")
    return d


def ucx_agrees(t, name, d, extra, cwd=None, who="UCX 1.13"):
    """Debian's UCX (or who) and doctor --ucx on d/libucp.so.0: the modules in ucx/ and the transports alike."""
    lib = os.path.join(d, "libucp.so.0")
    tls, real = oracle(lib, **extra)
    rc, j = doctor(["--ucx", lib, "--value", "tcp"], env=env_for(None, preload=False, **extra), cwd=cwd)
    doc = {p: ("loaded" if w == "loaded" else "not-loaded") for p, w in modules(j).items() if p in real}
    doc_tls = set(j["ucx"][0]["transports"]) if j.get("ucx") else set()
    t.check(name + ": %s loads %s, registers %d transports; doctor agrees" % (who,
            sorted(p.split("/")[-1] for p in real if real[p] == "loaded"), len(tls)),
            tls and doc == real and doc_tls == tls, "UCX: %r %r\ndoctor: %r %r" % (real, sorted(tls), modules(j), sorted(doc_tls)))
    return tls, doc_tls


@case("rule 2: UCX 1.13 to 1.21 load their compiled module list, not a module file dropped in; 1.22 scans")
def module_list(t):
    d = debian_or_skip(t, "r2", "Debian's UCX 1.13 with a dropped-in module")
    if d:
        module(os.path.join(d, "ucx", "libuct_stale.so.0"), "stale")
        tls, doc = ucx_agrees(t, "a module file not in its list (libuct_stale.so.0)", d, {})
        t.check("... and its transport is not claimed", "stale" not in tls and "stale" not in doc, repr((tls, doc)))
    # The releases after 1.16 from their source: module.c ucs_load_modules (1.21: the list; 1.22: every file).
    for version, stale_loads in (("1.21.0", False), ("1.22.0", True)):
        lib = ucp(os.path.join(WORK, "r2-" + version), version=version, modules=":listed")
        for name in ("listed", "stale"):
            module(os.path.join(WORK, "r2-" + version, "ucx", "libuct_%s.so.0" % name), name)
        got = modules(doctor(["--ucx", lib, "--value", "tcp"])[1])
        states = {p.split("_")[-1].split(".")[0]: w == "loaded" for p, w in got.items()}
        t.equal("UCX %s: the listed module loads, the other file %s" % (version, "too" if stale_loads else "not"),
                states, {"listed": True, "stale": stale_loads})
    # A version doctor cannot read: both readings, a module counted only where both load it, exit 2.
    lib = ucp(os.path.join(WORK, "r2-unknown"), version="custom build", modules=":listed")
    for name in ("listed", "stale"):
        module(os.path.join(WORK, "r2-unknown", "ucx", "libuct_%s.so.0" % name), name)
    rc, j = doctor(["--ucx", lib, "--value", "tcp"])
    got = modules(j)
    t.check("an unknown version: the listed module counts, the other could not be told",
            any(p.endswith("libuct_listed.so.0") and w == "loaded" for p, w in got.items())
            and any(p.endswith("libuct_stale.so.0") and "could not tell" in w for p, w in got.items()), repr(got))
    t.equal("... and the verdict is could not check (exit 2), never ok", rc, 2, repr(j.get("messages")))


@case("rule 3: UCX 1.22 searches UCX_PLUGIN_PATH's directories first; 1.13 has no such setting")
def plugin_path(t):
    plug = os.path.join(WORK, "r3-plugins")
    module(os.path.join(plug, "libuct_plugged.so.0"), "plugged")
    lib = ucp(os.path.join(WORK, "r3"), version="1.22.0")
    rc, j = doctor(["--ucx", lib, "--value", "plugged"], env=env_for(None, preload=False, UCX_PLUGIN_PATH="/nonexistent:" + plug))
    t.check("UCX 1.22 (global_opts.c PLUGIN_PATH, module.c ucs_load_modules): the plugin loads, its transport is served",
            modules(j).get(os.path.join(plug, "libuct_plugged.so.0")) == "loaded" and rc == 0, repr((rc, j.get("ucx"))))
    d = debian_or_skip(t, "r3-debian", "Debian's UCX 1.13 with UCX_PLUGIN_PATH")
    if d:
        tls, doc = ucx_agrees(t, "UCX_PLUGIN_PATH set", d, {"UCX_PLUGIN_PATH": plug})
        t.check("UCX 1.13 loads nothing from UCX_PLUGIN_PATH, doctor claims nothing", "plugged" not in tls | doc, repr((tls, doc)))


@case("rule 5: UCX_MODULES=all,ib is a parse error that leaves UCX's default (all)")
def modules_parse_error(t):
    d = debian_or_skip(t, "r5", "Debian's UCX 1.13 with UCX_MODULES=all,ib")
    if d:
        ucx_agrees(t, "UCX_MODULES=all,ib", d, {"UCX_MODULES": "all,ib"})
        ucx_agrees(t, "control: UCX_MODULES=ib", d, {"UCX_MODULES": "ib"})


@case("rule 6: a ucx.conf continuation line replaces the value of the line it continues")
def continuation(t):
    d = debian_or_skip(t, "r6", "Debian's UCX 1.13 reading a continuation line")
    if d:
        conf = os.path.join(WORK, "r6-conf")
        os.makedirs(conf)
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write("UCX_MODULES = ib\n    cma\n")
        ucx_agrees(t, "UCX_CONFIG_DIR's ucx.conf: UCX_MODULES = ib, continued by cma", d, {"UCX_CONFIG_DIR": conf})


@case("rule 7: UCX_MODULE_DIR set but empty replaces the compiled directory")
def empty_module_dir(t):
    d = debian_or_skip(t, "r7", "Debian's UCX 1.13 with UCX_MODULE_DIR=''")
    if d:
        os.unlink(os.path.join(d, "ucx", "libuct_cma.so.0"))  # only the compiled directory has modules now
        tls, doc = ucx_agrees(t, "UCX_MODULE_DIR=''", d, {"UCX_MODULE_DIR": ""})
        t.check("UCX loads none of the compiled directory's modules (no cma), doctor claims none",
                "cma" not in tls and "cma" not in doc, repr((sorted(tls), sorted(doc))))
        tls, doc = ucx_agrees(t, "control: UCX_MODULE_DIR unset", d, {})
        t.check("control: the compiled directory's cma is loaded, and doctor says so", "cma" in tls and "cma" in doc,
                repr((sorted(tls), sorted(doc))))


@case("rule 9: UCX 1.13 to 1.16 read <libdir>/../etc/ucx.conf, not 1.17's <libdir>/../etc/ucx/ucx.conf")
def library_conf(t):
    for where, cma_loads in (("etc/ucx.conf", False), ("etc/ucx/ucx.conf", True)):
        d = debian_or_skip(t, "r9-" + where.replace("/", "-"), "Debian's UCX 1.13 with a ucx.conf beside it")
        if not d:
            return
        conf = os.path.join(os.path.dirname(d), where)
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write("UCX_MODULES=^cma\n")
        ucx_agrees(t, "UCX_MODULES=^cma in <prefix>/%s (%s)" % (where, "read" if not cma_loads else "not read"), d, {})


@case("rule 8: UCX 1.17's section filters: a section for another CPU vendor is skipped; a model cannot be told")
def section_filters(t):
    lib = ucp(os.path.join(WORK, "r8"), version="1.22.0")
    module(os.path.join(WORK, "r8", "ucx", "libuct_filtered.so.0"), "filtered")
    vendor = cpu_vendor()
    if not vendor:
        t.skip("the vendor filter", "not an Intel or AMD CPU (doctor tells the vendor from CPUID on x86 only)")
        return
    other = "AMD" if vendor == "Intel" else "Intel"
    conf = os.path.join(WORK, "r8-conf")
    os.makedirs(conf)
    # parser.c ucs_config_parse_check_filter: fnmatch(pattern, ucs_cpu_vendor_name(), FNM_CASEFOLD).
    for text, loads, status in (("[x]\nCPU vendor = %s\nUCX_MODULES = ^filtered\n" % other, True, 0),
                                ("[x]\nCPU vendor = %s\nUCX_MODULES = ^filtered\n" % vendor.lower(), False, 0),
                                ("UCX_MODULES = ^filtered\n[x]\nCPU vendor = %s\nUCX_MODULES = all\n" % other, False, 0),
                                ("[Grace Hopper]\nCPU model = Grace\nUCX_MODULES = ^filtered\n", None, 2)):
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write(text)
        rc, j = doctor(["--ucx", lib, "--value", "tcp"], env=env_for(None, preload=False, UCX_CONFIG_DIR=conf))
        got = modules(j).get(os.path.join(WORK, "r8", "ucx", "libuct_filtered.so.0"))
        if loads is None:  # UCX's model names (ucs_cpu_model_name) are beyond doctor: could not check, never ok
            t.check("%r: could not tell UCX_MODULES, exit 2" % text,
                    rc == 2 and "could not tell UCX_MODULES" in " ".join(j.get("messages", [])), repr((rc, got, j.get("messages"))))
            continue
        t.check("%r on a %s CPU: the module %s, exit %d" % (text, vendor, "loads" if loads else "is left out", status),
                (got == "loaded") == loads and rc == status, repr((rc, got, j.get("messages"))))


def cpu_vendor():
    """UCX's name for this CPU's vendor (ucs_cpu_vendor_name), from /proc/cpuinfo; "" when not x86."""
    with open("/proc/cpuinfo") as f:
        ids = [ln.split(":")[1].strip() for ln in f if ln.startswith("vendor_id")]
    return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(ids[0] if ids else "", "")


@case("rules 3 and 8 against RAPIDS' UCX 1.22 itself: UCX_PLUGIN_PATH, and CPU vendor sections", tags=("wheels",))
def wheel_rules(t):
    venv, why = harness.wheels()
    if not venv or not os.path.exists(ORACLE):
        t.skip("RAPIDS' UCX 1.22", why or "no ucx_oracle")
        return
    d = os.path.join(harness.site_packages(venv), "libucx", "lib")
    plug = os.path.join(WORK, "wheel-plugins")
    module(os.path.join(plug, "libuct_plugged.so.0"), "plugged")
    tls, doc = ucx_agrees(t, "UCX_PLUGIN_PATH", d, {"UCX_PLUGIN_PATH": plug}, who="UCX 1.22")
    t.check("UCX 1.22 loads the plugin's transport, and doctor claims it", "plugged" in tls and "plugged" in doc, repr((tls, doc)))
    vendor = cpu_vendor()
    if not vendor:
        t.skip("the vendor sections", "not an Intel or AMD CPU")
        return
    conf = os.path.join(WORK, "wheel-conf")
    os.makedirs(conf)
    for v in (vendor, "AMD" if vendor == "Intel" else "Intel"):
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write("[section]\nCPU vendor = %s\nUCX_MODULES = ^cma\n" % v)
        ucx_agrees(t, "a section for CPU vendor %s leaving cma out, on a %s CPU" % (v, vendor), d, {"UCX_CONFIG_DIR": conf},
                   who="UCX 1.22")


if __name__ == "__main__":
    main("doctor against the real loader and UCX's own rules, one layout per rule")
