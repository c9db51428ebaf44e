#!/usr/bin/env bash
# scripts/run.sh [COMMAND...]
#   With COMMAND: runs it with libucxtls.so preloaded (appended: existing LD_PRELOAD entries stay first).
#   Without: explains what the library would set on this machine, and why.
# Builds the library on first use (needs cmake and a C++17 compiler: as root it installs them, as
# scripts/test.sh does; as a user it says how, exit 2). Build output goes to stderr; stdout
# belongs to COMMAND.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${RUN_BUILD_DIR:-$top/build-run}
. "$top/scripts/build-packages.sh"
have_tools() { command -v cmake >/dev/null && { command -v c++ >/dev/null || command -v g++ >/dev/null; }; }
if [ ! -f "$build/libucxtls.so" ] || [ -n "$(find "$top/shim" "$top/cli" "$top/helper" "$top/CMakeLists.txt" -newer "$build/libucxtls.so" 2>/dev/null | head -1)" ]; then
  if ! have_tools; then
    how=$(build_install_command)
    if [ "$(id -u)" = 0 ] && [ -n "$how" ]; then
      echo "run.sh: no cmake or C++ compiler: installing ${BUILD_PACKAGES[*]}" >&2
      if command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >&2
        # --no-remove: an install that would remove a package (a conflict) stops, naming it
        apt-get install -y -q --no-remove --no-install-recommends "${BUILD_PACKAGES[@]}" >&2 ||
          echo "run.sh: apt-get refused to install ${BUILD_PACKAGES[*]} (above); nothing was removed" >&2
      else
        ${how%% *} install -y "${BUILD_PACKAGES_RPM[@]}" >&2
      fi
    fi
    if ! have_tools; then
      echo "run.sh: building needs cmake and a C++17 compiler; install them as root: ${how:-cmake, g++ and make with your package manager}" >&2
      exit 2
    fi
  fi
  echo "run.sh: building libucxtls.so in $build" >&2
  cmake -S "$top" -B "$build" -DUCXTLS_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >&2
  cpus=$(nproc 2>/dev/null || echo 2)
  cmake --build "$build" -j "$(( cpus < 8 ? cpus : 8 ))" >&2   # bounded: a login node is shared
fi
lib=$build/libucxtls.so
if [ $# -eq 0 ]; then
  if [ -x "$build/ucxtls" ]; then
    exec "$build/ucxtls" explain
  fi
  # The library's own debug line says what it decided in a fresh process.
  UCXTLS_DEBUG=1 LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$lib" /bin/sh -c 'exit 0'
  exit 0
fi
export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$lib"
exec "$@"
