#!/usr/bin/env python3
"""Install trees and packages: `cmake --install` to a temporary prefix and the command run from
there (moved, and through a symlink), the .deb from CPack unpacked and run; the README's `$LIB`
recipe for mixed 32/64-bit process trees in install_lib_recipe.py."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import ALL, ALWAYS, BUILD_DIR, HELPER_DIR, HELPERS, SOURCE_DIR, Z, case, env_for, have, include, main, run  # noqa: E402
from install_checks import SCRATCH, depends_cover, install, installed, run_from  # noqa: E402

CPACK = os.environ.get("UCXTLSTEST_CPACK", "cpack")


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


if __name__ == "__main__":
    include("install_lib_recipe")
    main("install tree, package, $LIB recipe")
