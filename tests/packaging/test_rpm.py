#!/usr/bin/env python3
"""The RPM: built from docs/install.md's commands (a separate configure with RPM's %{_libdir}, lib64),
its metadata and file list read back with rpm, installed into a scratch root with
`rpm --root R --nodeps -i`, the installed command run from R/usr/bin, the installed library
preloaded from R/usr/lib64 onto a replayed machine, and removed again with `rpm -e`."""
import json
import os
import re
import subprocess
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, HELPER_DIR, HELPERS, SOURCE_DIR, ALL, case, env_for, have, main, run, sh_value  # noqa: E402
from install_checks import elf_files, elf_imports, run_from  # noqa: E402  (tests/cli, on the path harness sets)

CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
CPACK = os.environ.get("UCXTLSTEST_CPACK", "cpack")
VERSION = os.environ["UCXTLSTEST_PROJECT_VERSION"]
SUMMARY = os.environ["UCXTLSTEST_PROJECT_DESCRIPTION"]
HOMEPAGE = os.environ["UCXTLSTEST_PROJECT_HOMEPAGE"]


def out(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    return p.returncode, p.stdout.decode()


def query(rpm_file, fmt):
    return subprocess.run(["rpm", "-qp", "--qf", fmt, rpm_file], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode()


def with_rpm(fn):
    """The case fn(t, scratch), given a scratch directory removed afterwards; SKIP without rpm and rpmbuild."""
    def run_case(t):
        missing = [tool for tool in ("rpm", "rpmbuild") if not have(tool)]
        if missing:
            t.skip("the RPM", "%s not installed (Debian packages rpm; scripts/test.sh installs it)" % " and ".join(missing))
            return
        scratch = tempfile.mkdtemp(prefix="ucxtls-rpm-")
        try:
            fn(t, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return run_case


@case("cpack -G RPM refuses a build that is not lib64", tags=("rpm_refused",))
@with_rpm
def refused(t, scratch):
    # A build configured for Debian's layout cannot make an RPM: cpack says so and names the commands.
    config = open(os.path.join(BUILD_DIR, "CPackConfig.cmake")).read()
    libdir = re.search(r'set\(CPACK_UCXTLS_LIBDIR "([^"]*)"\)', config).group(1)
    if libdir == "lib64":
        t.skip("cpack -G RPM refuses a non-lib64 build", "the test build itself installs to lib64")
    else:
        rc, text = out([CPACK, "-G", "RPM", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"),
                        "-B", os.path.join(scratch, "refused")])
        t.check("cpack -G RPM in a build with libdir '%s' fails and names -DCMAKE_INSTALL_LIBDIR=lib64" % libdir,
                rc != 0 and "-DCMAKE_INSTALL_LIBDIR=lib64" in text
                and not any(f.endswith(".rpm") for _, _, fs in os.walk(os.path.join(scratch, "refused")) for f in fs),
                text)
        t.check("the commands it names build with a bounded -j (as docs/install.md: -j8), not an unbounded -j",
                re.search(r"cmake --build build-rpm -j[0-9]+ ", text) and not re.search(r" -j( |$)", text, re.M), text)


@case("the RPM: built as docs/install.md says, installed into a scratch root, run, removed", tags=("rpm_build",))
@with_rpm
def rpm_package(t, scratch):
    # docs/install.md's commands.
    build = os.path.join(scratch, "build-rpm")
    rc, text = out([CMAKE, "-S", SOURCE_DIR, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DUCXTLS_TESTS=OFF",
                    "-DCMAKE_INSTALL_PREFIX=/usr", "-DCMAKE_INSTALL_LIBDIR=lib64"])
    if rc == 0:
        rc, text = out([CMAKE, "--build", build, "-j", "2"])
    if rc == 0:
        rc, text = out([CPACK, "-G", "RPM"], cwd=build)
    rpms = [os.path.join(build, f) for f in os.listdir(build) if f.endswith(".rpm")] if rc == 0 else []
    if not t.check("configure with lib64, build, cpack -G RPM: one package", rc == 0 and len(rpms) == 1, text[-3000:]):
        t.exit()
    pkg = rpms[0]
    print("     %s" % os.path.basename(pkg))

    # Metadata.
    t.equal("name, version from project(), licence, URL, summary, vendor",
            query(pkg, "%{NAME}|%{VERSION}|%{LICENSE}|%{URL}|%{SUMMARY}|%{VENDOR}"),
            "ucxtls|%s|BSD-3-Clause|%s|%s|ucxtls" % (VERSION, HOMEPAGE, SUMMARY))
    description = query(pkg, "%{DESCRIPTION}")
    t.check("a description that says what it does", "LD_PRELOAD" in description and "ze_copy" in description
            and "CPack" not in description, description)
    rc, changelog = out(["rpm", "-qp", "--changelog", pkg])
    t.check("the changelog's newest entry is for this version",
            re.match(r"\* \w{3} \w{3} \d\d \d{4} .+ - %s-\d+\n" % re.escape(VERSION), changelog), changelog)
    files = query(pkg, "[%{FILENAMES}\n]").split()
    lua = "/usr/share/modulefiles/ucxtls/%s.lua" % VERSION
    want = ["/usr/bin/ucxtls", "/usr/lib64/libucxtls.so", "/usr/share/doc/ucxtls/LICENSE", lua]
    want += ["/usr/%s/%s" % (HELPER_DIR, h) for h in HELPERS + ("ucxtls-oci-hook",)]
    want += ["/usr/share/ucxtls/oci/ucxtls-hook.json", "/usr/share/ucxtls/oci/ucxtls-cdi.json"]
    t.check("the files, in RPM's layout: library in /usr/lib64, helpers and the OCI hook in /usr/%s (%%{_libexecdir}), "
            "its example JSON files, command, licence, modulefile" % HELPER_DIR, all(f in files for f in want), "\n".join(files))
    t.check("the man page ucxtls(1) is in the RPM",
            any(re.match(r"^/usr/share/man/man1/ucxtls\.1(\.gz)?$", f) for f in files), "\n".join(files))
    t.check("nothing in /usr/lib (no multiarch directory, no build-id links); the shared directories "
            "/usr/libexec, /usr/share/modulefiles and /usr/share/doc are not claimed",
            not [f for f in files if f.startswith("/usr/lib/")]
            and not {"/usr/libexec", "/usr/share/modulefiles", "/usr/share/doc"} & set(files), "\n".join(files))
    licence_files = query(pkg, "[%{FILENAMES} %{FILEFLAGS:fflags}\n]")
    t.check("LICENSE is marked %license", re.search(r"^/usr/share/doc/ucxtls/LICENSE \S*l", licence_files, re.M),
            licence_files)
    requires = query(pkg, "[%{REQUIRENAME}\n]")
    glibc = sorted(set(re.findall(r"GLIBC_([\d.]+)", requires)), key=lambda v: [int(x) for x in v.split(".")])
    print("     requires libc.so.6 up to GLIBC_%s (the command and helper built here)" % (glibc[-1] if glibc else "?"))

    # Install into a scratch root (not this machine), then use what was installed.
    root = os.path.join(scratch, "root")
    os.makedirs(root)
    rc, text = out(["rpm", "--root", root, "--initdb"])
    if rc == 0:
        rc, text = out(["rpm", "--root", root, "--nodeps", "-i", pkg])
    if not t.check("rpm --root R --nodeps -i installs it", rc == 0 and os.path.isfile(root + "/usr/lib64/libucxtls.so"), text):
        t.exit()
    # Requires names every library and symbol version the installed files import, as RPM spells
    # them (libc.so.6(GLIBC_2.34)(64bit)): a system without them refuses the package.
    bits = "(64bit)" if query(pkg, "%{ARCH}") in ("x86_64", "aarch64", "ppc64le", "s390x", "riscv64") else ""
    wanted = sorted({"%s(%s)%s" % (lib, node, bits) for f in elf_files(os.path.join(root, "usr"))
                     for lib, nodes in elf_imports(f).items() for node in nodes})
    missing = [w for w in wanted if w not in requires.split("\n")]
    t.check("Requires names each of the %d library symbol versions its files import (up to GLIBC_%s), none missing"
            % (len(wanted), glibc[-1] if glibc else "?"), wanted and not missing, "missing: %r\n%s" % (missing, requires))
    cli = root + "/usr/bin/ucxtls"
    lib = root + "/usr/lib64/libucxtls.so"
    p = run([cli, "--version"], env_for(None, preload=False))
    t.equal("R/usr/bin/ucxtls --version names the project version", (p.stdout.decode(), p.returncode),
            ("ucxtls %s\n" % VERSION, 0))
    p = run([cli, "explain", "--json"], env_for("intel-xe", preload=False))
    try:
        value = json.loads(p.stdout.decode())["value"]
    except ValueError:
        value = None
    t.equal("R/usr/bin/ucxtls explain on the intel-xe machine: all (the default there)", (value, p.returncode), (ALL, 0), p.stderr.decode())
    run_from(t, "R/usr/bin/ucxtls run finds R/usr/lib64/libucxtls.so (bin -> lib64)", cli, lib)
    p = run([cli, "probe"], env_for(None, preload=False))
    said = p.stdout.decode()
    t.check("the installed command's `ucxtls probe` runs the installed helper R/usr/%s/ucxtls-probe" % HELPER_DIR,
            re.search(r"^helper %s/usr/(bin/\.\./)?%s/ucxtls-probe answered" % (re.escape(root), HELPER_DIR), said, re.M),
            said + p.stderr.decode())
    t.equal("R/usr/lib64/libucxtls.so preloaded into /bin/sh on the intel-xe machine: UCX_TLS and UCXTLS_DERIVED",
            sh_value(env_for("intel-xe", preload=False, LD_PRELOAD=lib)), (ALL, ALL, ""))
    modulefile = open(root + lua).read()
    t.check("the package's modulefile appends /usr/lib64/libucxtls.so to LD_PRELOAD",
            'append_path("LD_PRELOAD", "/usr/lib64/libucxtls.so")' in modulefile, modulefile)

    rc, text = out(["rpm", "--root", root, "-e", "ucxtls"])
    left = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "usr")) for f in fs]
    t.check("rpm --root R -e ucxtls removes every file it installed", rc == 0 and left == [], text + repr(left))


if __name__ == "__main__":
    main("RPM: built, read back, installed into a scratch root, run, removed")
