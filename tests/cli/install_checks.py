"""What the install and package tests share (test_install.py, tests/packaging/test_rpm.py,
tests/aarch64/test_packages_aarch64.py): an install tree made once, the command run from a tree,
and a package's Depends against what its ELF files import."""
import atexit
import glob
import os
import re
import shutil
import subprocess
import tempfile

from harness import ALWAYS, BUILD_DIR, Z, env_for, run

CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
SHOW = 'printf "%s|%s" "${UCX_TLS-<unset>}" "${LD_PRELOAD-<unset>}"'


def run_from(t, label, cli, lib):
    """`cli run sh` on the intel-xe fixture must see the ze value and `lib` preloaded."""
    p = run([cli, "run", "sh", "-c", SHOW], env_for("intel-xe", preload=False, **ALWAYS))
    t.equal(label, (p.stdout.decode(), p.returncode), ("%s|%s" % (Z, os.path.realpath(lib)), 0), p.stderr.decode())


SCRATCH = tempfile.mkdtemp(prefix="ucxtls-install-")


atexit.register(shutil.rmtree, SCRATCH, True)


_made = {}


def once(fn):
    """fn() computed once per process (an install tree, a build), for the cases that share it."""
    def cached():
        if fn.__name__ not in _made:
            _made[fn.__name__] = fn()
        return _made[fn.__name__]
    return cached


def install(prefix):
    """cmake --install into prefix: (process, P/bin/ucxtls, [P/lib.../libucxtls.so])."""
    p = subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    libs = glob.glob(os.path.join(prefix, "lib*", "**", "libucxtls.so"), recursive=True)
    return p, os.path.join(prefix, "bin", "ucxtls"), libs


@once
def installed():
    return install(os.path.join(SCRATCH, "prefix"))


def installed_lib(t):
    """The library of the install tree, or None after a failed check."""
    p, _, libs = installed()
    if len(libs) == 1:
        return libs[0]
    t.check("cmake --install gives P/lib.../libucxtls.so", False, p.stdout.decode() + repr(libs))
    return None


def elf_imports(path):
    """{soname: {version node: {symbol}}} that the ELF file at path imports, read with readelf (the
    version-needs section gives each index its library and node, the dynamic symbols their index)."""
    text = subprocess.run(["readelf", "-W", "-V", "--dyn-syms", path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode()
    index, lib, out = {}, None, {}
    for line in text.splitlines():
        m = re.search(r"File: (\S+) +Cnt:", line)
        if m:
            lib = m.group(1)
        m = re.search(r"Name: (\S+) +Flags: \S+ +Version: (\d+)", line)
        if m and lib:
            index[m.group(2)] = (lib, m.group(1))
            out.setdefault(lib, {}).setdefault(m.group(1), set())
        m = re.search(r" UND (\S+)@(\S+) \((\d+)\)$", line)
        if m and m.group(3) in index:
            lib_, node = index[m.group(3)]
            out[lib_][node].add(m.group(1))
    return out


def elf_files(root):
    """The ELF files below root."""
    found = []
    for d, _, names in os.walk(root):
        for n in names:
            f = os.path.join(d, n)
            if not os.path.islink(f) and os.path.isfile(f):
                with open(f, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        found.append(f)
    return found


def vkey(v):
    return [int(x) for x in re.findall(r"\d+", v)]


def host_symbols(arch):
    """{soname: (package, {symbol@node: minimal version})} from the dpkg database's symbols files
    (each library package ships one; dpkg-shlibdeps reads the same), for packages of arch: a
    Multi-Arch package's (pkg:arch) wins over a biarch one's (libc6-x32 also lists libc.so.6)."""
    out = {}
    files = glob.glob("/var/lib/dpkg/info/*.symbols")
    for f in sorted(files, key=lambda f: ":" in os.path.basename(f), reverse=True):
        name = os.path.basename(f)[:-len(".symbols")]
        if ":" in name and not name.endswith(":" + arch):
            continue
        cur = None
        for line in open(f, errors="replace"):
            m = re.match(r"^(\S+\.so\S*) (\S+) ", line)
            if m:
                entry = out.setdefault(m.group(1), (m.group(2), {}))
                cur = entry[1] if entry[0] == m.group(2) == name.split(":")[0] else None
            elif cur is not None and line.startswith(" "):
                parts = line.split()
                if len(parts) >= 2:
                    cur[parts[0]] = parts[1]
    return out


def depends_cover(t, label, depends, root):
    """Depends (a control field) against the symbol versions the package's ELF files import: libc6
    at least the highest GLIBC_ node, and each library's package at least the version the host's
    symbols file gives each imported symbol (what a system needs for the files to start)."""
    deps = {}
    for d in depends.split(","):
        m = re.match(r"^\s*(\S+)(?: \(>= ([^)]+)\))?\s*$", d)
        if m:
            deps[m.group(1)] = m.group(2)
    imports = {}
    for f in elf_files(root):
        for lib, nodes in elf_imports(f).items():
            for node, syms in nodes.items():
                imports.setdefault(lib, {}).setdefault(node, set()).update(syms)
    glibc = max((n[len("GLIBC_"):] for n in imports.get("libc.so.6", {}) if n.startswith("GLIBC_2")), key=vkey)
    t.check("%s: Depends has libc6 (>= %s or more), the highest GLIBC_ version its files import" % (label, glibc),
            deps.get("libc6") and vkey(deps["libc6"]) >= vkey(glibc), "Depends: %s\nimports: %r" % (depends, imports))
    arch = subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE).stdout.decode().strip()
    known = host_symbols(arch) if arch else {}
    if not known:
        t.skip("%s: Depends against the symbols files" % label, "no dpkg database symbols files here")
        return
    for lib, nodes in sorted(imports.items()):
        if lib not in known:
            t.check("%s: %s has a symbols file here (the package that provides it)" % (label, lib), False, repr(sorted(known)))
            continue
        pkg, table = known[lib]
        need = max((table.get("%s@%s" % (s, n)) or table.get("%s@%s" % (n, n)) or "0" for n, ss in nodes.items()
                    for s in ss | {n}), key=vkey)
        have_v = deps.get(pkg)
        ok = have_v is not None and subprocess.run(["dpkg", "--compare-versions", have_v, "ge", need]).returncode == 0
        t.check("%s: Depends has %s (>= %s or more) for %s's symbol versions %s" % (label, pkg, need, lib, ", ".join(sorted(nodes, key=vkey))),
                ok, "Depends: %s" % depends)
