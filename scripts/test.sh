#!/usr/bin/env bash
# scripts/test.sh: install what the tests need, build, and run every test (CTest).
#
# Run as root on a fresh Debian/Ubuntu machine it installs the packages below itself; as another
# user it says which are missing, and the tests that need them print SKIP with the reason.
# Environment: BUILD_DIR (default build), JOBS (default: the CPUs, at most 8: a shared machine stays
# usable), UCXTLSTEST_NO_INSTALL=1, UCXTLSTEST_WHEEL_CACHE (where the registry wheels' venv is
# kept; default ${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test), UCXTLSTEST_UCX_ZE (a UCX prefix
# built with Level Zero, for the ze data path: no registry serves one; SKIP without it),
# AARCH64_BUILD_DIR (default build-aarch64) and UCXTLSTEST_NO_AARCH64=1 (the aarch64 lane, below).
# It never removes an installed package: an install that would stops, naming what and why.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cpus=$(nproc 2>/dev/null || echo 2)
JOBS=${JOBS:-$(( cpus < 8 ? cpus : 8 ))}

# What each package is for:
#   cmake g++ make python3 binutils  build (scripts/build-packages.sh), test drivers, readelf/nm/objdump checks
#   doctest-dev                      unit tests
#   ucx-utils libucx-dev             ucx_info and UCX's ucp_client_server example (real consumers)
#   openmpi-bin libopenmpi-dev       mpirun over UCX (the launcher recipe test)
#   libze1 libze-dev                 the real Level Zero loader (driver probe)
#   strace valgrind                  syscall budgets, memcheck of the constructor
#   clang libclang-rt-14-dev         libFuzzer targets and sanitizers
#   musl-tools gcc-multilib          a musl program and a 32-bit process under the library
#   g++-multilib                     the 32-bit CMake build of the library (its C++ compiler check)
#   rpm                              rpmbuild for `cpack -G RPM`, rpm to install it into a scratch root
#   dpkg-dev file                    dpkg-shlibdeps, which `cpack -G DEB` needs for the package's Depends,
#                                    and file, which CPack runs to find the files to give it
#   lmod                             the real Lmod that loads and unloads the modulefile
#   zsh mksh ksh busybox             the host matrix (tests/hardening/test_hosts.py): shells exec'd
#                                    directly with the library, beside bash, dash, perl and python3
#   slurm-wlm munge                  a real Slurm cluster (slurmctld, two slurmd, munged) for the
#                                    Slurm recipes of README.md and docs/recipes.md (tests/launchers)
#   man-db groff-base                `man -l` renders the generated man page ucxtls(1) (tests/cli/test_man.py)
#   golang-go                        a cgo Go program as a host (tests/hardening/test_go.py): what
#                                    os.Getenv/os.Environ see; about 60 MB to fetch, 340 MB
#                                    installed, like clang: the README's Go statement rests on it
#   python3-pip python3-setuptools   the Python wheel (tests/packaging/test_wheel.py): the README's offline
#   python3-wheel python3-venv       `pip wheel . --no-build-isolation`, a fresh venv to install it into
#   python3-setuptools-whl           the isolated build (`pip install .`) with these wheels as its index,
#   python3-wheel-whl                in place of a registry
#   bubblewrap python3-yaml          container-like namespaces for docs/containers.md's image layer, pod
#                                    specs (parsed as YAML) and Apptainer lines (tests/launchers);
#                                    doctor --pid of a process in a private root (tests/cli); the root of
#                                    each layout of tests/differential
#   podman runc                      a real container runtime for the node's OCI hook (tests/launchers/
#                                    test_oci_hook.py): Podman's hooks.d and CDI, runc (crun refuses
#                                    these sandboxes' cgroup layout); images made by `podman import`
#   hyperfine                        (benchmark only)
#   lld llvm qemu-user               the aarch64 lane: clang --target=aarch64-linux-gnu links with lld and
#   qemu-system-arm                  archives with llvm-ar; its programs run under qemu-aarch64, and
#                                    tests/aarch64/test_kernel_aarch64.py boots an arm64 kernel in
#                                    qemu-system-aarch64. The arm64 libraries are not installed: see below.
# Not installed here: python3-torch (about 1 GB) for the opt-in torchrun recipe test
# (UCXTLSTEST_TORCH=1; it SKIPs and says so otherwise).
. scripts/build-packages.sh  # the build's own: cmake g++ make
PACKAGES=("${BUILD_PACKAGES[@]}" python3 binutils doctest-dev ucx-utils libucx-dev openmpi-bin
          libopenmpi-dev libze1 libze-dev strace valgrind clang libclang-rt-14-dev musl-tools
          gcc-multilib g++-multilib rpm dpkg-dev file lmod zsh mksh ksh busybox slurm-wlm munge
          man-db groff-base golang-go python3-pip python3-setuptools python3-wheel python3-venv
          python3-setuptools-whl python3-wheel-whl bubblewrap python3-yaml
          podman runc patchelf   # patchelf: tests/cli/test_doctor_ucx.py lays a copy of Debian's UCX out like NIXL's wheel; tests/differential relinks its fake builds
          nlohmann-json3-dev     # nlohmann-json3-dev: the JSON library the node hook in helper/ reads the runtime's input with
          lld llvm qemu-user qemu-system-arm)  # the aarch64 lane; lld, qemu-user also tests/cli/test_doctor_hwcaps.py, test_doctor_aarch64.py

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && [ -z "${UCXTLSTEST_NO_INSTALL:-}" ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    # Never remove an installed package (Debian's gcc-multilib and g++-aarch64-linux-gnu conflict):
    # --no-remove everywhere, and a simulation first, so that a refusal names what would go and why.
    if ! sim=$(apt-get install -s -q --no-remove --no-install-recommends "${missing[@]}" 2>&1); then
      block() { printf '%s\n' "$sim" | sed -n "/^The following $1/,/^[^ ]/{/^ /p}" | xargs; }
      removed=$(block "packages will be REMOVED:") inst=$(block "NEW packages will be installed:")
      [ -n "$removed" ] || { printf '%s\n' "$sim" >&2; exit 1; }
      # Why: the Conflicts and Breaks between what would be installed and what would go.
      # shellcheck disable=SC2086
      why=$(apt-cache depends $inst $removed 2>/dev/null | awk -v inst=" $inst " -v rem=" $removed " '
        /^[^ <]/ { pkg = $1; sub(/:.*/, "", pkg); next }
        /^ *[|]?(Conflicts|Breaks):/ { x = $2; gsub(/[<>]/, "", x); sub(/:.*/, "", x)
          if (index(inst, " " pkg " ") && index(rem, " " x " ")) print pkg " conflicts with " x
          else if (index(rem, " " pkg " ") && index(inst, " " x " ")) print x " conflicts with " pkg }' |
        sort -u | paste -sd, - | sed 's/,/, /g')
      echo "test.sh: stopped: installing ${missing[*]} would remove $removed (${why:-see apt-get install -s}); nothing was installed or removed" >&2
      exit 1
    fi
    apt-get install -y -q --no-remove --no-install-recommends "${missing[@]}" >&2
  else
    echo "test.sh: missing packages (tests that need them will SKIP): ${missing[*]}" >&2
  fi
fi

cmake -S . -B "$BUILD_DIR" -DUCXTLS_TESTS=ON >&2
cmake --build "$BUILD_DIR" -j "$JOBS" >&2

# The UCX builds users load, from PyPI (tests/wheels/requirements.txt: NIXL 1.5.1 with its UCX
# 1.22, RAPIDS' libucx 1.22.0; pinned, hash-checked), installed once per machine into a venv
# cached outside the clone (tests/wheels/install_wheels.sh; about 10 s with a fast link, then
# instant). The tests that use them read UCXTLSTEST_WHEELS (the venv) and otherwise print SKIP
# with UCXTLSTEST_WHEELS_SKIP as the reason. An install that cannot be attempted (PyPI not
# reachable, no python3-venv) is a reason to skip; one that was attempted and failed is a
# failure: the tests run, and test.sh exits non-zero at the end.
wheels_failed=
log="$BUILD_DIR/wheels.log"
set +e
tests/wheels/install_wheels.sh 2>&1 >"$log.venv" | tee "$log" >&2  # stderr shown and kept
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 0 ]; then
  export UCXTLSTEST_WHEELS="$(cat "$log.venv")"
elif [ "$rc" = 2 ]; then
  export UCXTLSTEST_WHEELS_SKIP="$(tail -n 1 "$log" | sed 's/^install_wheels.sh: //')"
else
  export UCXTLSTEST_WHEELS_SKIP="the wheels' install FAILED (tests/wheels/install_wheels.sh; $(cd "$BUILD_DIR" && pwd)/wheels.log)"
  wheels_failed=1
fi

status=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" "$@") || status=$?
if [ -n "$wheels_failed" ]; then
  echo "test.sh: FAILED: the wheels' install failed; the tests that need it were skipped (see $(cd "$BUILD_DIR" && pwd)/wheels.log)" >&2
  [ "$status" != 0 ] || status=1
fi

# The aarch64 lane (docs/testing.md): the same source cross-built for aarch64 in its own build
# directory (AARCH64_BUILD_DIR, default build-aarch64; scripts/aarch64-toolchain.cmake), then its
# tests (tests/aarch64) under qemu-user and on an arm64 kernel in qemu-system-aarch64, against this
# build. Its inputs come from the registries, cached outside the clone (tests/aarch64/fetch.sh:
# the arm64 sysroot, Debian's arm64 UCX and kernel, PyPI's aarch64 UCX wheels; about 190 MB once).
# UCXTLSTEST_NO_AARCH64=1 leaves it out; inputs that cannot be fetched here make it say so and skip.
if [ -z "${UCXTLSTEST_NO_AARCH64:-}" ]; then
  A_DIR=${AARCH64_BUILD_DIR:-build-aarch64}
  set +e
  inputs=$(tests/aarch64/fetch.sh --kernel)
  rc=$?
  set -e
  if [ "$rc" = 0 ]; then
    while IFS= read -r line; do export "${line?}"; done <<<"$inputs"
    cmake -S . -B "$A_DIR" -DUCXTLS_TESTS=ON -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-toolchain.cmake \
      -DUCXTLS_AARCH64_SYSROOT="$UCXTLSTEST_AARCH64_SYSROOT" -DUCXTLS_HOST_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" >&2
    cmake --build "$A_DIR" -j "$JOBS" >&2
    (cd "$A_DIR" && ctest --output-on-failure -j "$JOBS" "$@") || status=$?
  elif [ "$rc" = 2 ]; then
    echo "test.sh: SKIP the aarch64 lane: its inputs cannot be fetched here (above)" >&2
  else
    echo "test.sh: FAILED: the aarch64 lane's inputs (tests/aarch64/fetch.sh, above)" >&2
    status=1
  fi
fi
exit "$status"
