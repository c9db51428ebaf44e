"""The build step of the Python wheel (pyproject.toml has the metadata): CMake builds and installs
the project (Release, no tests) into a staging prefix, and the library, the command and the
driver-probe helper go into the package's ucxtls/_bin, the man page into the wheel's data
(<venv>/share/man/man1, where man finds it from PATH). The wheel is tagged py3-none-<platform>:
its Python code runs on any Python 3, and the platform part is what its ELF files need, read from
them (packaging/wheel_tag.py), never assumed.

Environment: CMAKE (default cmake), CMAKE_BUILD_PARALLEL_LEVEL (default: the CPUs, at most 8),
CMAKE_ARGS (more -D options, space-separated: the variable scikit-build uses; a UCXTLS_ name would make
the library name it as a misspelt variable of its own).
"""
import importlib.util
import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has its own; older ones use the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # a pyenv or venv Python: setuptools < 70.1 and no wheel (one line, no traceback)
        import setuptools
        import sys
        raise SystemExit(
            "ucxtls: %s cannot build a wheel: its setuptools %s (older than 70.1) needs the 'wheel' package, "
            "which it lacks; install wheel there, or setuptools >= 70.1, or build with /usr/bin/python3 "
            "(Debian: python3-setuptools, python3-wheel)" % (sys.executable, setuptools.__version__))

HERE = os.path.dirname(os.path.abspath(__file__))
# What the wheel carries from the CMake install: the command, and every file the install puts in
# the libdir (the library) and in libexec/ucxtls (the helpers the command runs), side by side in
# ucxtls/_bin, where the command looks first.
COMMAND = "bin/ucxtls"
LIBDIR = "lib"
LIBEXECDIR = "libexec"
INSTALL_DIRS = [LIBDIR, LIBEXECDIR + "/ucxtls"]  # UCXTLS_INSTALL_HELPERDIR in CMakeLists.txt
MAN_PAGE = "share/man/man1/ucxtls.1"
# Filled by the build step, read by install_data afterwards (the page exists only once built).
DATA_FILES = []


def project_field(name):
    """VERSION or DESCRIPTION of CMakeLists.txt's project(), the one place for both."""
    with open(os.path.join(HERE, "CMakeLists.txt")) as f:
        head = re.search(r"project\(ucxtls (.*?)\)", f.read(), re.S).group(1)
    return re.search(r'%s ("([^"]*)"|(\S+))' % name, head).group(2 if name == "DESCRIPTION" else 3)


def wheel_tag_module():
    spec = importlib.util.spec_from_file_location("ucxtls_wheel_tag", os.path.join(HERE, "packaging", "wheel_tag.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithCMake(build_py):
    """build_py, then the CMake build whose files go into ucxtls/_bin."""

    def run(self):
        super().run()
        temp = os.path.abspath(os.path.join(self.get_finalized_command("build").build_temp, "cmake"))
        stage = os.path.join(temp, "stage")
        cmake = os.environ.get("CMAKE", "cmake")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(min(os.cpu_count() or 1, 8))
        shutil.rmtree(stage, ignore_errors=True)
        configure = [cmake, "-S", HERE, "-B", os.path.join(temp, "build"), "-DCMAKE_BUILD_TYPE=Release",
                     "-DUCXTLS_TESTS=OFF", "-DCMAKE_INSTALL_LIBDIR=" + LIBDIR,
                     "-DCMAKE_INSTALL_LIBEXECDIR=" + LIBEXECDIR]
        configure += os.environ.get("CMAKE_ARGS", "").split()
        for argv in (configure, [cmake, "--build", os.path.join(temp, "build"), "-j", jobs],
                     [cmake, "--install", os.path.join(temp, "build"), "--prefix", stage, "--strip"]):
            self.announce(" ".join(argv), level=2)
            subprocess.check_call(argv)
        bin_dir = os.path.join(self.build_lib, "ucxtls", "_bin")
        os.makedirs(bin_dir, exist_ok=True)
        files = [os.path.join(stage, COMMAND)]
        for d in (os.path.join(stage, d) for d in INSTALL_DIRS):
            files += [os.path.join(d, n) for n in sorted(os.listdir(d)) if os.path.isfile(os.path.join(d, n))]
        for src in files:
            shutil.copy2(src, os.path.join(bin_dir, os.path.basename(src)))
        man_dir = os.path.join(temp, "man1")
        os.makedirs(man_dir, exist_ok=True)
        shutil.copy2(os.path.join(stage, MAN_PAGE), man_dir)
        DATA_FILES[:] = [("share/man/man1", [os.path.join(man_dir, "ucxtls.1")])]


class PlatformDistribution(Distribution):
    """Holds machine code (in ucxtls/_bin, not as an extension module): installed to platlib, and
    a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A platform wheel tagged py3-none-manylinux_2_N_<arch>, N what the ELF files need."""

    def get_tag(self):
        bin_dir = os.path.join(self.get_finalized_command("build").build_lib, "ucxtls", "_bin")
        files = [os.path.join(bin_dir, n) for n in sorted(os.listdir(bin_dir))]
        try:
            tag, why = wheel_tag_module().manylinux_tag(files)
        except ValueError as e:
            raise SystemExit("ucxtls wheel: no manylinux tag fits: %s" % e)
        self.announce("ucxtls wheel: %s (%s)" % (tag, why), level=2)
        return "py3", "none", tag


setup(
    version=project_field("VERSION"),
    description=project_field("DESCRIPTION"),
    license="BSD-3-Clause",
    distclass=PlatformDistribution,
    cmdclass={"build_py": BuildWithCMake, "bdist_wheel": PlatformWheel},
    data_files=DATA_FILES,
    options={"build": {"build_base": "build-wheel"}},
    zip_safe=False,
)
