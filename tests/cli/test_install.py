#!/usr/bin/env python3
"""Install trees and packages: `cmake --install` to a temporary prefix and the command run from
there (moved, and through a symlink), the .deb from CPack unpacked and run, and the README's `$LIB`
recipe for mixed 32/64-bit process trees."""
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALL, ALWAYS, BUILD_DIR, HELPER_DIR, HELPERS, SOURCE_DIR, Z, case, env_for, have, main, run  # noqa: E402

CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
CPACK = os.environ.get("UCXTLSTEST_CPACK", "cpack")
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


@case("cmake --install: the command runs from the install tree")
def install_tree(t):
    p, cli, libs = installed()
    t.check("cmake --install --prefix P gives P/bin/ucxtls and P/lib.../libucxtls.so",
            p.returncode == 0 and os.access(cli, os.X_OK) and len(libs) == 1, p.stdout.decode() + repr(libs))
    if not libs:
        return
    lib = libs[0]
    run_from(t, "P/bin/ucxtls run finds P's library", cli, lib)
    p = run([cli, "explain", "--json"], env_for("intel-xe", preload=False, **ALWAYS))
    t.check("P/bin/ucxtls explain works from the install tree", p.returncode == 0 and Z in p.stdout.decode(),
            p.stdout.decode() + p.stderr.decode())
    helpers_in(t, "cmake --install", os.path.dirname(os.path.dirname(cli)), os.path.dirname(lib))
    prefix = os.path.dirname(os.path.dirname(cli))
    oci_hook_in(t, "cmake --install", prefix, lib, prefix)
    # The recorded machines, replayed by the installed command alone (no checkout, no python3).
    recorded = os.path.join(prefix, "share", "ucxtls", "machines")
    for name, family, value in (("dgx", "cuda", None), ("mi300x", "rocm", ALL), ("intel-xe", "ze", ALL)):
        env = dict(env_for(None, preload=False), UCXTLS_SYSROOT=os.path.join(recorded, name))
        p = run([cli, "explain", "--json"], env)
        try:
            j = json.loads(p.stdout.decode())
        except ValueError:
            j = {}
        t.equal("P/share/ucxtls/machines/%s replayed by P/bin/ucxtls explain: its family and value" % name,
                (j.get("family"), j.get("value")), (family, value), p.stdout.decode() + p.stderr.decode())


def helpers_in(t, what, prefix, libdir):
    """The helpers in P/libexec/ucxtls and not in the libdir, and P/bin/ucxtls probe runs the one there."""
    t.check("%s puts %s in P/%s, none in the libdir" % (what, " and ".join(HELPERS), HELPER_DIR),
            all(os.access(os.path.join(prefix, HELPER_DIR, h), os.X_OK) for h in HELPERS)
            and not [h for h in HELPERS if os.path.exists(os.path.join(libdir, h))],
            repr(sorted(os.listdir(prefix))) + repr(sorted(os.listdir(libdir))))
    p = run([os.path.join(prefix, "bin", "ucxtls"), "probe"], env_for(None, preload=False))
    said = p.stdout.decode()
    t.check("%s: P/bin/ucxtls probe runs P/%s/ucxtls-probe" % (what, HELPER_DIR),
            re.search(r"^helper %s/(bin/\.\./)?%s/ucxtls-probe answered" % (re.escape(prefix), HELPER_DIR), said, re.M),
            said + p.stderr.decode())


def oci_hook_in(t, what, prefix, lib, final_prefix):
    """The node's OCI hook in P/libexec/ucxtls with its example JSON files naming it by the final
    prefix, and the installed hook, given a bundle of a container with a GPU node, copies P's own
    library into the root file system and lists it in its /etc/ld.so.preload."""
    hook = os.path.join(prefix, HELPER_DIR, "ucxtls-oci-hook")
    jsons = {}
    for name in ("ucxtls-hook.json", "ucxtls-cdi.json"):
        try:
            with open(os.path.join(prefix, "share", "ucxtls", "oci", name)) as f:
                jsons[name] = json.load(f)
        except (OSError, ValueError) as e:
            jsons[name] = repr(e)
    want = "%s/%s/ucxtls-oci-hook" % (final_prefix, HELPER_DIR)
    hooks_d, cdi = jsons["ucxtls-hook.json"], jsons["ucxtls-cdi.json"]
    t.check("%s: P/%s/ucxtls-oci-hook, and P/share/ucxtls/oci/ucxtls-hook.json (createRuntime) and ucxtls-cdi.json "
            "naming %s" % (what, HELPER_DIR, want), os.access(hook, os.X_OK)
            and isinstance(hooks_d, dict) and hooks_d["hook"]["path"] == want and hooks_d["stages"] == ["createRuntime"]
            and isinstance(cdi, dict) and cdi["devices"][0]["containerEdits"]["hooks"][0]["path"] == want, repr(jsons))
    # Hygiene, as for the other helpers: no network, no program started (nothing of an image run), no dlopen.
    imports = subprocess.run(["nm", "-D", "--undefined-only", hook], stdout=subprocess.PIPE, universal_newlines=True).stdout
    names = {l.split()[-1].split("@")[0] for l in imports.splitlines() if l.strip()}
    banned = {"socket", "connect", "getaddrinfo", "fork", "vfork", "clone", "execve", "execv", "execvp", "execl",
              "execlp", "system", "popen", "posix_spawn", "posix_spawnp", "dlopen", "syscall"}
    t.check("%s: the hook imports only libc calls, none that opens a network, starts a program or loads code "
            "(nm -D)" % what, names and not names & banned, repr(sorted(names & banned)) + imports)
    def hooked(env, devices):
        """Runs the installed hook on a new bundle whose root is an overlay of its own (the hook writes
        only into a container's own layer); (process, copy's bytes or None, ld.so.preload or None)."""
        bundle = tempfile.mkdtemp(dir=SCRATCH)
        rootfs = os.path.join(bundle, "rootfs")
        for sub in ("lower/etc", "upper", "work", "rootfs"):
            os.makedirs(os.path.join(bundle, sub))
        subprocess.run(["mount", "-t", "overlay", "ucxtls-install", "-o", "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work"
                        % (bundle, bundle, bundle), rootfs], check=True)
        try:
            with open(os.path.join(bundle, "config.json"), "w") as f:
                json.dump({"root": {"path": "rootfs"}, "process": {"env": env},
                           "linux": {"devices": [{"path": d, "type": "c", "major": 195, "minor": 0} for d in devices]}}, f)
            p = subprocess.run([hook], input=json.dumps({"ociVersion": "1.0.2", "id": "x", "status": "creating", "pid": 1,
                                                         "bundle": bundle}).encode(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            copy = os.path.join(rootfs, "usr", "lib", "ucxtls-oci-hook", "libucxtls.so")
            preload = os.path.join(rootfs, "etc", "ld.so.preload")
            return (p, open(copy, "rb").read() if os.path.exists(copy) else None,
                    open(preload).read() if os.path.exists(preload) else None)
        finally:
            subprocess.run(["umount", rootfs], check=True)

    if os.geteuid() != 0:
        t.skip("%s: the installed hook on a bundle" % what, "needs root (an overlay mounted as the container's root)")
        return
    with open(lib, "rb") as f:
        lib_bytes = f.read()
    p, copy, preload = hooked(["PATH=/bin"], ["/dev/nvidiactl", "/dev/nvidia0"])
    t.check("%s: the installed hook copies P's library into a GPU container's root and lists it, silently" % what,
            p.returncode == 0 and p.stdout == b"" and p.stderr == b"" and copy == lib_bytes
            and preload == "/usr/lib/ucxtls-oci-hook/libucxtls.so\n", repr(p))
    p, copy, preload = hooked(["LD_PRELOAD=/opt/ucxtls/lib/libucxtls.so"], ["/dev/nvidia0"])
    t.check("%s: a GPU container whose LD_PRELOAD names a libucxtls.so already (the image layer) is left alone" % what,
            p.returncode == 0 and p.stderr == b"" and copy is None and preload is None, repr(p))
    p, copy, preload = hooked(["PATH=/bin"], ["/dev/nvidiactl", "/dev/infiniband/uverbs0"])
    t.check("%s: a container without a GPU node (nvidiactl and an HCA only) is left alone" % what,
            p.returncode == 0 and p.stderr == b"" and copy is None and preload is None, repr(p))


@case("a moved install tree, a symlink to its command, a command alone")
def moved_tree(t):
    prefix = os.path.join(SCRATCH, "prefix-to-move")
    p, _, libs = install(prefix)
    if not t.check("cmake --install --prefix P (a tree to move)", p.returncode == 0 and len(libs) == 1,
                   p.stdout.decode() + repr(libs)):
        return
    lib = libs[0]
    # Relocatable: the path from bin to lib is relative, so a moved tree still works...
    moved = os.path.join(SCRATCH, "moved")
    shutil.move(prefix, moved)
    mlib = os.path.join(moved, os.path.relpath(lib, prefix))
    run_from(t, "a moved install tree finds its own library", os.path.join(moved, "bin", "ucxtls"), mlib)
    # ...and so does a symlink to the command (/proc/self/exe is the real file).
    os.makedirs(os.path.join(SCRATCH, "links"))
    link = os.path.join(SCRATCH, "links", "ucxtls")
    os.symlink(os.path.join(moved, "bin", "ucxtls"), link)
    run_from(t, "a symlink to the installed command finds the installed library", link, mlib)
    # A command with no library beside it says so.
    lone = os.path.join(SCRATCH, "lone")
    os.makedirs(lone)
    shutil.copy(os.path.join(moved, "bin", "ucxtls"), lone)
    p = run([os.path.join(lone, "ucxtls"), "run", "true"], env_for(None, preload=False))
    t.check("a command with no library beside it: exit 2, one line naming where it looked",
            p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1 and b"libucxtls.so" in p.stderr,
            repr(p))


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


@case("deb: the package from CPack, unpacked and run", tags=("deb",))
def deb(t):
    # The .deb from CPack, unpacked (not installed: the test must not change the machine).
    if not (have("dpkg-deb") and os.path.exists(os.path.join(BUILD_DIR, "CPackConfig.cmake"))):
        t.skip(".deb", "dpkg-deb or CPackConfig.cmake missing")
        return
    if not have("dpkg-shlibdeps"):  # the next case shows that cpack -G DEB then stops and says so
        t.skip(".deb", "dpkg-shlibdeps not installed (Debian dpkg-dev; scripts/test.sh installs it)")
        return
    if not have("file"):  # CPackDeb: "file utility is not available"
        t.skip(".deb", "file not installed (CPack runs it to find the files for dpkg-shlibdeps; scripts/test.sh installs it)")
        return
    out = os.path.join(SCRATCH, "pack")
    p = subprocess.run([CPACK, "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-B", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    debs = glob.glob(os.path.join(out, "*.deb"))
    t.check("cpack -G DEB builds one package", p.returncode == 0 and len(debs) == 1, p.stdout.decode())
    if debs:
        listing = subprocess.run(["dpkg-deb", "-c", debs[0]], stdout=subprocess.PIPE).stdout.decode()
        t.check("the package holds its licence as usr/share/doc/ucxtls/copyright (Debian's place)",
                re.search(r" \./usr/share/doc/ucxtls/copyright$", listing, re.M), listing)
        t.check("the package holds the man page usr/share/man/man1/ucxtls.1",
                re.search(r" \./usr/share/man/man1/ucxtls\.1(\.gz)?$", listing, re.M), listing)
        t.check("the package holds usr/bin/ucxtls and usr/lib.../libucxtls.so",
                re.search(r" \./usr/bin/ucxtls$", listing, re.M) and re.search(r" \./usr/lib[^ ]*/libucxtls\.so$", listing, re.M),
                listing)
        info = subprocess.run(["dpkg-deb", "-f", debs[0], "Package", "Version", "Depends"], stdout=subprocess.PIPE).stdout.decode()
        version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
        t.check("package ucxtls, the project version, depends on libc6", "Package: ucxtls" in info
                and "Version: " + version in info and "libc6" in info, info)
        info = subprocess.run(["dpkg-deb", "-f", debs[0], "Description"], stdout=subprocess.PIPE).stdout.decode()
        first = info.split("\n", 1)[0]
        t.check("the description's first line (the synopsis) names the library and the command, in 80 characters",
                "libucxtls.so" in first and "ucxtls command" in first and len(first) <= 80, info)
        root = os.path.join(SCRATCH, "deb-root")
        subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
        depends = subprocess.run(["dpkg-deb", "-f", debs[0], "Depends"], stdout=subprocess.PIPE).stdout.decode().strip()
        depends_cover(t, "the .deb", depends, root)
        dlib = glob.glob(os.path.join(root, "usr", "lib*", "**", "libucxtls.so"), recursive=True)
        if t.check("the unpacked package has the library", len(dlib) == 1, repr(dlib)):
            run_from(t, "the unpacked package's ucxtls run finds the package's library",
                     os.path.join(root, "usr", "bin", "ucxtls"), dlib[0])
            helpers_in(t, "the .deb", os.path.join(root, "usr"), os.path.dirname(dlib[0]))
            oci_hook_in(t, "the .deb", os.path.join(root, "usr"), dlib[0], "/usr")


@case("deb: without dpkg-shlibdeps (no dpkg-dev) cpack -G DEB stops and names dpkg-dev", tags=("deb",))
def deb_without_dpkg_dev(t):
    # CPack alone would write a Depends without versions; the package must not understate them.
    shlibdeps = shutil.which("dpkg-shlibdeps")
    if not os.path.exists(os.path.join(BUILD_DIR, "CPackConfig.cmake")) or (shlibdeps and not (os.geteuid() == 0 and have("unshare"))):
        t.skip("cpack -G DEB without dpkg-shlibdeps", "needs CPackConfig.cmake, and root and unshare to hide dpkg-shlibdeps")
        return
    out = os.path.join(SCRATCH, "pack-no-dpkg-dev")
    blank = os.path.join(SCRATCH, "not-a-program")
    open(blank, "w").close()
    os.chmod(blank, 0o644)
    # A private mount namespace where dpkg-shlibdeps is an empty file that cannot be executed.
    script = 'mount --bind "$1" "$2" && exec "$3" -G DEB --config "$4" -B "$5"'
    argv = [CPACK, "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-B", out]
    if shlibdeps:
        argv = ["unshare", "-m", "sh", "-c", script, "sh", blank, os.path.realpath(shlibdeps)] + argv[:1] + argv[4:5] + argv[6:]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = p.stdout.decode()
    debs = glob.glob(os.path.join(out, "**", "*.deb"), recursive=True)
    t.check("cpack -G DEB fails, writes no .deb, and says to install dpkg-dev",
            p.returncode != 0 and not debs and "dpkg-dev" in text, text + repr(debs))

# $LIB: ld.so picks the directory of the process's own ELF class. Where it points is
# system-specific (Debian lib/x86_64-linux-gnu, RHEL lib64): the library is placed in each
# candidate and /proc/self/maps of the preloaded process shows the one ld.so chose.
TREE = os.path.join(SCRATCH, "opt-ucxtls")
LIB_ENV = env_for("intel-xe", preload=False, **ALWAYS, LD_PRELOAD=TREE + "/$LIB/libucxtls.so")


@case("$LIB: a 64-bit process under LD_PRELOAD='P/$LIB/libucxtls.so'")
def lib_64(t):
    lib = installed_lib(t)
    if not lib:
        return
    for d in ("lib/x86_64-linux-gnu", "lib64", "lib", "lib/aarch64-linux-gnu"):
        os.makedirs(os.path.join(TREE, d), exist_ok=True)
        shutil.copy(lib, os.path.join(TREE, d, "libucxtls.so"))
    p = run(["/bin/sh", "-c", SHOW + '; echo; grep -o "%s/[^ ]*libucxtls.so" /proc/$$/maps | sort -u' % TREE], LIB_ENV)
    lines = p.stdout.decode().splitlines()
    t.check("LD_PRELOAD='P/$LIB/libucxtls.so' (quoted) loads the library: UCX_TLS set, no ld.so error",
            len(lines) == 2 and lines[0].startswith(Z + "|") and "$LIB" in lines[0] and p.stderr == b""
            and os.path.dirname(lines[1]) != TREE, p.stdout.decode() + p.stderr.decode())
    if len(lines) == 2:
        print("     $LIB here = %s" % os.path.relpath(os.path.dirname(lines[1]), TREE))


INSTALL_MD = os.path.join(SOURCE_DIR, "docs", "install.md")


@case("install.md's $LIB lines append to LD_PRELOAD and leave $LIB to ld.so")
def lib_lines(t):
    with open(INSTALL_MD, encoding="utf-8") as f:
        lines = re.findall(r"^export LD_PRELOAD=.*\$LIB.*$", f.read(), re.M)
    t.check("install.md has its two $LIB recipes' export lines (%d)" % len(lines), len(lines) == 2, "%r" % lines)
    for line in lines:
        want = re.search(r"(/\S*?)\\?\$LIB(/libucxtls\.so)", line)
        lib = want.group(1) + "$LIB" + want.group(2) if want else "?"
        for before, expect in ((None, lib), ("/site/libother.so", "/site/libother.so:" + lib)):
            # The earlier entry is set inside the script: bash itself is never started with it.
            script = ("export LD_PRELOAD=%s\n" % before if before else "") + line + '\nprintf %s "$LD_PRELOAD"'
            p = run(["/bin/bash", "-c", script], env_for(None, preload=False))
            t.equal("`%s` with LD_PRELOAD %s" % (line, before or "unset"), p.stdout.decode(), expect, p.stderr.decode())


# The 32-bit half of the recipe: the library built with -m32 (the command is not needed), in
# BUILD_DIR/install-m32 so that the two 32-bit cases, two CTest tests, share one build (CTest runs
# them one at a time: RESOURCE_LOCK).
M32 = os.path.join(BUILD_DIR, "install-m32")


@once
def probe32():
    """A 32-bit program that prints UCX_TLS, or None when gcc -m32 cannot build one."""
    exe = os.path.join(SCRATCH, "probe32")
    c = os.path.join(SCRATCH, "show.c")
    with open(c, "w") as f:
        f.write('#include <stdio.h>\n#include <stdlib.h>\nint main(void){const char*v=getenv("UCX_TLS");'
                'printf("%s",v?v:"<unset>");return 0;}\n')
    ok = have("gcc") and subprocess.run(["gcc", "-m32", c, "-o", exe], stderr=subprocess.DEVNULL).returncode == 0
    return exe if ok else None


@once
def build32():
    """(process, BUILD_DIR/install-m32/libucxtls.so, configured): the -m32 build of the library."""
    p = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", M32, "-DUCXTLS_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_C_FLAGS=-m32", "-DCMAKE_CXX_FLAGS=-m32"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    configured = p.returncode == 0
    if configured:
        p = subprocess.run([CMAKE, "--build", M32, "--target", "ucxtls", "-j2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p, os.path.join(M32, "libucxtls.so"), configured


def skip_unconfigured32(t, configured, p):
    """A -m32 C++ compiler that CMake cannot use (no g++-multilib) is a missing component: SKIP."""
    if not configured:
        t.skip("32-bit library", "cannot configure a -m32 build (Debian: g++-multilib): " + p.stdout.decode()[-300:])
    return not configured


@case("$LIB 32-bit: the library built with -m32", tags=("m32_library",))
def library_32(t):
    if not probe32():
        t.skip("32-bit library", "gcc -m32 cannot build here (Debian: gcc-multilib)")
        return
    p, lib32, configured = build32()
    if skip_unconfigured32(t, configured, p):
        return
    header = subprocess.run(["readelf", "-h", "-d", lib32], stdout=subprocess.PIPE).stdout.decode() if p.returncode == 0 else ""
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", header)
    t.check("the 32-bit build of the library: ELF32, needs libc.so.6 alone",
            p.returncode == 0 and "ELF32" in header and needed == ["libc.so.6"], p.stdout.decode()[-2000:] + header)


@case("$LIB 32-bit: a 32-bit process under the same LD_PRELOAD", tags=("m32_process",))
def process_32(t):
    exe = probe32()
    if not exe:
        t.skip("32-bit library", "gcc -m32 cannot build here (Debian: gcc-multilib)")
        return
    why = "the 32-bit program failed"
    try:
        ran = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode == 0
    except OSError as e:
        ran = False
        why = str(e)
    if not ran:
        t.skip("a 32-bit process under '$LIB'", "this kernel cannot run 32-bit programs (%s)" % why)
        return
    lib = installed_lib(t)
    p, lib32, configured = build32()
    if skip_unconfigured32(t, configured, p):
        return
    if not lib or not t.check("the 32-bit build of the library", p.returncode == 0 and os.path.exists(lib32),
                              p.stdout.decode()[-2000:]):
        return
    # The tree of the 64-bit case, then the 32-bit copy where a 32-bit process's $LIB may point.
    for d, copy in (("lib/x86_64-linux-gnu", lib), ("lib64", lib), ("lib/aarch64-linux-gnu", lib),
                    ("lib/i386-linux-gnu", lib32), ("lib32", lib32), ("lib", lib32)):
        os.makedirs(os.path.join(TREE, d), exist_ok=True)
        shutil.copy(copy, os.path.join(TREE, d, "libucxtls.so"))
    p = run([exe], LIB_ENV)
    t.equal("a 32-bit process under the same LD_PRELOAD='P/$LIB/libucxtls.so' gets the value, no ld.so error",
            (p.stdout.decode(), p.stderr.decode()), (Z, ""))


if __name__ == "__main__":
    main("install tree, package, $LIB recipe")
