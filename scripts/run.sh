#!/usr/bin/env bash
# scripts/run.sh [COMMAND...]
#   With COMMAND: runs it with libucxtls.so preloaded (appended: existing LD_PRELOAD entries stay first).
#   Without: explains what the library would set on this machine, and why.
# Builds the library on first use (needs cmake and a C++17 compiler). Build output goes to
# stderr; stdout belongs to COMMAND.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${RUN_BUILD_DIR:-$top/build-run}
if [ ! -f "$build/libucxtls.so" ] || [ -n "$(find "$top/shim" "$top/cli" "$top/helper" "$top/CMakeLists.txt" -newer "$build/libucxtls.so" 2>/dev/null | head -1)" ]; then
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
