# Spack recipe for ucxtls, written as Spack's builtin CMakePackage recipes are. It is not in Spack's
# own repository: a site puts it in a repository of its own (docs/install.md, "Spack").
# tests/packaging/test_spack.py imports it against a stand-in `spack` and configures, builds and
# installs the project with the arguments it passes.
import re

try:  # Spack >= 1.0: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:  # Spack 0.x: spack.package has them
    pass

from spack.package import *


class Ucxtls(CMakePackage):
    """LD_PRELOAD library that sets UCX_TLS for the GPUs a process can use: cuda_copy (NVIDIA),
    rocm_copy (AMD) or ze_copy (Intel Level Zero), before main runs and only when UCX_TLS is not
    configured. With the ucxtls command (explain, env, run, doctor, probe, lib), its man page and
    the driver-probe helper."""

    homepage = "https://ucxtls.invalid/"
    git = "https://ucxtls.invalid/ucxtls.git"

    license("BSD-3-Clause")

    # A release adds version("X.Y.Z", sha256="...") with its archive's url.
    version("main", branch="main")

    variant(
        "preload",
        default=True,
        description="`spack load ucxtls` and Spack's generated module prepend the library to "
        "LD_PRELOAD (PATH and MANPATH come from the prefix either way)",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.16:", type="build")

    # `spack external find ucxtls`: a .deb or RPM install (ucxtls --version prints "ucxtls X.Y.Z").
    executables = [r"^ucxtls$"]

    @classmethod
    def determine_version(cls, exe):
        output = Executable(exe)("--version", output=str, error=str)
        match = re.match(r"ucxtls (\S+)", output)
        return match.group(1) if match else None

    def cmake_args(self):
        return [
            # The tests need root, namespaces and some 30 Debian packages (scripts/test.sh); the
            # installed files are checked by check_installed below instead.
            self.define("UCXTLS_TESTS", False),
            # lib, not lib64: the path in LD_PRELOAD below, and the command's bin -> lib path.
            self.define("CMAKE_INSTALL_LIBDIR", "lib"),
            # The helpers in libexec/ucxtls, as every other channel installs them.
            self.define("CMAKE_INSTALL_LIBEXECDIR", "libexec"),
            # The project's own Lmod modulefile stays inside the prefix; Spack's modules serve.
            self.define("UCXTLS_MODULEFILE_DIR", "share/modulefiles"),
        ]

    @property
    def library(self):
        return join_path(self.prefix.lib, "libucxtls.so")

    def setup_run_environment(self, env):
        if self.spec.satisfies("+preload"):
            env.append_path("LD_PRELOAD", self.library)  # last: a preloaded ASan runtime must stay first

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed(self):
        ucxtls = Executable(self.prefix.bin.ucxtls)
        ucxtls("--version")
        ucxtls("explain")
        if ucxtls("lib", output=str).strip() != self.library:
            raise InstallError("ucxtls lib does not name " + self.library)
