#!/usr/bin/env python3
"""The packages of the aarch64 build, with their metadata read back as the x86_64 ones'
(tests/cli/test_install.py's .deb, tests/packaging/test_rpm.py, test_wheel.py):

- the .deb of this cross build (cpack -G DEB): Architecture arm64, its files, Depends from
  dpkg-shlibdeps reading the sysroot's dpkg database, covering what its ELF files import;
- the RPM (a cross build configured with lib64, as docs/install.md's): arch aarch64, its files, the
  name, version, licence and URL, Requires naming every library symbol version the files import;
- the wheel (setup.py with the toolchain in CMAKE_ARGS): tagged py3-none-manylinux_2_N_aarch64,
  N what its ELF files need (packaging/wheel_tag.py, auditwheel's rule), every ELF file aarch64.
The files themselves run in the other aarch64 tests; these are about the packages. The RPM and the
wheel are two more builds of the project (about two minutes on 2 cores): tagged package_builds,
they run when UCXTLSTEST_AARCH64_PACKAGES=1 and SKIP otherwise, to keep CI's time.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from lane import SYSROOT, missing_inputs
from harness import BUILD_DIR, HELPER_DIR, HELPERS, SOURCE_DIR, add_case, have, main

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "packaging"))
from install_checks import depends_cover, elf_files, elf_imports  # noqa: E402  (tests/cli)

CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
CPACK = os.environ.get("UCXTLSTEST_CPACK", "cpack")
VERSION = os.environ.get("UCXTLSTEST_PROJECT_VERSION", "")
TOOLCHAIN = ["-DCMAKE_TOOLCHAIN_FILE=%s/scripts/aarch64-toolchain.cmake" % SOURCE_DIR,
             "-DUCXTLS_AARCH64_SYSROOT=%s" % SYSROOT]
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-packages-aarch64-")
AARCH64 = 183  # ELF e_machine EM_AARCH64


def out(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, **kw)
    return p.returncode, p.stdout.decode(errors="replace")


def machines(root):
    """{path: e_machine} of the ELF files below root."""
    got = {}
    for f in elf_files(root):
        with open(f, "rb") as fh:
            head = fh.read(20)
        got[f] = int.from_bytes(head[18:20], "little")
    return got


def all_aarch64(t, label, root):
    m = machines(root)
    t.check("%s: %d ELF files, every one aarch64" % (label, len(m)), m and all(v == AARCH64 for v in m.values()),
            repr(m))


def deb(t):
    why = missing_inputs()
    if why or not have("dpkg-shlibdeps"):
        return t.skip(".deb", why or "dpkg-shlibdeps not installed (Debian dpkg-dev)")
    pack = os.path.join(SCRATCH, "deb")
    rc, text = out([CPACK, "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-B", pack])
    debs = glob.glob(os.path.join(pack, "*.deb"))
    if not t.check("cpack -G DEB in the cross build: one package", rc == 0 and len(debs) == 1, text[-3000:]):
        return
    def field(*names):
        return subprocess.run(["dpkg-deb", "-f", debs[0]] + list(names), stdout=subprocess.PIPE).stdout.decode()
    t.equal("the file is named for arm64", os.path.basename(debs[0]), "ucxtls_%s_arm64.deb" % VERSION)
    t.check("Package ucxtls, the project version, Architecture arm64",
            "Package: ucxtls\nVersion: %s\nArchitecture: arm64\n" % VERSION == field("Package", "Version", "Architecture"),
            field("Package", "Version", "Architecture"))
    listing = subprocess.run(["dpkg-deb", "-c", debs[0]], stdout=subprocess.PIPE).stdout.decode()
    want = ["./usr/bin/ucxtls", "./usr/share/doc/ucxtls/copyright"] + ["./usr/%s/%s" % (HELPER_DIR, h) for h in HELPERS]
    t.check("its files: the command, the helpers, the licence as copyright, the library, the man page",
            all(re.search(r" %s$" % re.escape(w), listing, re.M) for w in want)
            and re.search(r" \./usr/lib[^ ]*/libucxtls\.so$", listing, re.M)
            and re.search(r" \./usr/share/man/man1/ucxtls\.1(\.gz)?$", listing, re.M), listing)
    root = os.path.join(SCRATCH, "deb-root")
    subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
    all_aarch64(t, "the .deb", root)
    depends = field("Depends").strip()
    t.check("Depends names the arm64 runtime's packages (dpkg-shlibdeps on the sysroot's database): %s" % depends,
            all(p in depends for p in ("libc6", "libgcc-s1", "libstdc++6")), depends)
    depends_cover(t, "the .deb", depends, root)


def on_request(t, what):
    if os.environ.get("UCXTLSTEST_AARCH64_PACKAGES") != "1":
        t.skip(what, "a build of its own, run on request: UCXTLSTEST_AARCH64_PACKAGES=1")
        return False
    return True


def rpm(t):
    if not on_request(t, "the aarch64 RPM"):
        return
    why = missing_inputs()
    if why or not have("rpmbuild"):
        return t.skip("RPM", why or "rpmbuild not installed (Debian rpm)")
    build = os.path.join(SCRATCH, "build-rpm")
    rc, text = out([CMAKE, "-S", SOURCE_DIR, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DUCXTLS_TESTS=OFF",
                    "-DCMAKE_INSTALL_PREFIX=/usr", "-DCMAKE_INSTALL_LIBDIR=lib64"] + TOOLCHAIN)
    if rc == 0:
        rc, text = out([CMAKE, "--build", build, "-j", "2"])
    if rc == 0:
        rc, text = out([CPACK, "-G", "RPM"], cwd=build)
    rpms = glob.glob(os.path.join(build, "*.rpm"))
    if not t.check("the cross build with lib64, cpack -G RPM: one package", rc == 0 and len(rpms) == 1, text[-3000:]):
        return
    def query(fmt):
        return subprocess.run(["rpm", "-qp", "--qf", fmt, rpms[0]], stdout=subprocess.PIPE).stdout.decode()
    t.equal("the file is named for aarch64", os.path.basename(rpms[0]), "ucxtls-%s-1.aarch64.rpm" % VERSION)
    t.equal("name, version, arch, licence", query("%{NAME}|%{VERSION}|%{ARCH}|%{LICENSE}"),
            "ucxtls|%s|aarch64|BSD-3-Clause" % VERSION)
    files = query("[%{FILENAMES}\n]").split()
    want = ["/usr/bin/ucxtls", "/usr/lib64/libucxtls.so"] + ["/usr/%s/%s" % (HELPER_DIR, h) for h in HELPERS]
    t.check("its files in RPM's layout: /usr/lib64/libucxtls.so, the helpers in /usr/%s" % HELPER_DIR,
            all(w in files for w in want), "\n".join(files))
    root = os.path.join(SCRATCH, "rpm-root")
    os.makedirs(root)
    rc, text = out(["rpm", "--root", root, "--initdb"])
    if rc == 0:  # (--ignorearch: an aarch64 package into a scratch root of this x86_64 machine)
        rc, text = out(["rpm", "--root", root, "--nodeps", "--ignorearch", "-i", rpms[0]])
    if not t.check("rpm --root R --nodeps --ignorearch -i installs it",
                   rc == 0 and os.path.isfile(os.path.join(root, "usr", "lib64", "libucxtls.so")), text):
        return
    all_aarch64(t, "the RPM", root)
    requires = query("[%{REQUIRENAME}\n]").split("\n")
    wanted = sorted({"%s(%s)(64bit)" % (lib, node) for f in elf_files(root)
                     for lib, nodes in elf_imports(f).items() for node in nodes})
    missing = [w for w in wanted if w not in requires]
    t.check("Requires names each of the %d library symbol versions its files import" % len(wanted),
            wanted and not missing, "missing: %r\n%s" % (missing, "\n".join(requires)))


def wheel(t):
    if not on_request(t, "the aarch64 wheel"):
        return
    why = missing_inputs()
    if why:
        return t.skip("wheel", why)
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import setuptools, wheel, pip"], stderr=subprocess.DEVNULL).returncode:
        return t.skip("wheel", "%s lacks pip, setuptools or wheel (Debian python3-pip, python3-setuptools, python3-wheel)" % py)
    src = os.path.join(SCRATCH, "checkout")
    skip = re.compile(r"^(build.*|dist|\.git|.*\.egg-info|__pycache__)$")
    shutil.copytree(SOURCE_DIR, src, ignore=lambda d, names: [n for n in names if skip.match(n)], symlinks=True)
    env = dict(os.environ, CMAKE_ARGS=" ".join(TOOLCHAIN), CMAKE=CMAKE)
    p = subprocess.run([py, "-m", "pip", "wheel", ".", "--no-build-isolation", "--no-deps", "-w", "dist"], cwd=src,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    wheels = glob.glob(os.path.join(src, "dist", "*.whl"))
    if not t.check("pip wheel with the toolchain in CMAKE_ARGS: one wheel", p.returncode == 0 and len(wheels) == 1,
                   p.stdout.decode(errors="replace")[-3000:]):
        return
    name = os.path.basename(wheels[0])
    tag = re.search(r"-py3-none-(manylinux_2_(\d+)_aarch64)\.whl$", name)
    t.check("tagged py3-none-manylinux_2_N_aarch64: %s" % name, tag is not None)
    root = os.path.join(SCRATCH, "wheel-root")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(root)
    all_aarch64(t, "the wheel", root)
    sys.path.insert(0, os.path.join(SOURCE_DIR, "packaging"))
    import wheel_tag
    want, why = wheel_tag.manylinux_tag(elf_files(root))
    t.equal("the tag is what its ELF files need (%s)" % why, tag and tag.group(1), want)


add_case("the .deb of the cross build: arm64, its files and Depends", deb)
add_case("the RPM of a cross build with lib64: aarch64, its files and Requires", rpm, tags=("package_builds",))
add_case("the wheel of a cross build: manylinux aarch64 tag, what its files need", wheel, tags=("package_builds",))


if __name__ == "__main__":
    try:
        main("the packages of the aarch64 build")
    finally:
        shutil.rmtree(SCRATCH, True)
