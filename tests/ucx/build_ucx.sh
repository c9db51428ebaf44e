#!/usr/bin/env bash
# tests/ucx/build_ucx.sh ze|noze: build UCX 1.22.0 from third_party/ the way prime-rl's script
# does (--with-verbs --with-rdmacm --enable-cma --enable-mt, no CUDA), with Level Zero (`ze`,
# Debian's libze-dev) or without it (`noze`, --with-ze=no, as prime-rl and vLLM build it), and
# print the install prefix on stdout (nothing else goes to stdout; progress goes to stderr).
#
# The build is cached outside the clone, keyed by the archive's sha256 and the configure line:
#   ${UCXTLSTEST_UCX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test}/ucx-1.22.0-<key>/
#     prefix/   the installed UCX (bin/ucx_info, bin/ucx_perftest, include/, lib/, lib/ucx/)
#     .done     the configure line; written only once `make install` succeeded
#     build.log configure, make and install output
# A second run finds .done and prints the prefix at once. Concurrent runs wait on one lock per
# key (flock); the build happens in a temporary directory beside it that is renamed into place,
# so a crashed or killed build leaves no half-installed prefix behind (the next run removes its
# temporary directory).
#
# Exit status: 0 built or cached; 2 the build cannot be attempted here (a prerequisite is
# missing: the message names it); 1 the build was attempted and failed (the log's tail is shown).
# Environment: JOBS (make -j; default the CPUs, at most 8), UCXTLSTEST_UCX_CACHE.
set -euo pipefail

say() { printf 'build_ucx.sh: %s\n' "$*" >&2; }

variant=${1:-}
case "$variant" in
  ze)   ze_flag=--with-ze ;;
  noze) ze_flag=--with-ze=no ;;
  *) say "usage: build_ucx.sh ze|noze"; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/../.." && pwd)
archive=$root/third_party/ucx-1.22.0.tar.gz
expected_sha=e3b078c520e6f3d5ccfefb204de376cff4969b6b0fbd8fb6120ae536c9383c2f

[ -f "$archive" ] || { say "cannot build: $archive is missing"; exit 2; }
sha=$(sha256sum "$archive" | cut -d' ' -f1)
if [ "$sha" != "$expected_sha" ]; then
  say "cannot build: $archive has sha256 $sha, third_party/README.md names $expected_sha"
  exit 2
fi

# The configure line. Left out because the tests do not use them and they only cost build time:
# static libraries (libtool would compile every file twice), the Go and Java bindings (configure
# guesses them where a Go or Java toolchain is installed), the Doxygen docs. Examples and test
# apps are off by UCX's default. Everything else is UCX's default, as in prime-rl's script.
configure_args=(--with-verbs --with-rdmacm --enable-cma --enable-mt "$ze_flag"
                --without-cuda --without-rocm --without-go --without-java
                --disable-doxygen-doc --disable-static)
configure_line="configure ${configure_args[*]}"
key=$(printf '%s\n%s\n' "$sha" "$configure_line" | sha256sum | cut -c1-16)
cache=${UCXTLSTEST_UCX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test}
dir=$cache/ucx-1.22.0-$key
prefix=$dir/prefix

done_ok() { [ -f "$dir/.done" ] && [ -x "$prefix/bin/ucx_info" ]; }
if done_ok; then printf '%s\n' "$prefix"; exit 0; fi

# Prerequisites, named one by one (Debian package in brackets). Not libnuma-dev: UCX dropped its
# libnuma dependency (NEWS, 1.15.0: "Removed dependency on libnuma").
missing=()
for tool in autoconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config \
            make:make gcc:gcc g++:g++ flock:util-linux; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool%%:*} [${tool##*:}]")
done
headers=(infiniband/verbs.h:libibverbs-dev rdma/rdma_cma.h:librdmacm-dev)
[ "$variant" = ze ] && headers+=(level_zero/ze_api.h:libze-dev)
for h in "${headers[@]}"; do
  [ -f "/usr/include/${h%%:*}" ] || missing+=("/usr/include/${h%%:*} [${h##*:}]")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "cannot build UCX 1.22 ($variant): missing ${missing[*]}"
  exit 2
fi

mkdir -p "$cache"
exec 9>"$cache/.lock-$key"
if ! flock -n 9; then
  say "another build of $dir is running; waiting for it"
  flock 9
fi
rm -rf "$cache/.tmp-$key".*   # left by a build that was killed: with the lock held, nobody else's
if done_ok; then printf '%s\n' "$prefix"; exit 0; fi

cpus=$(nproc 2>/dev/null || echo 2)
JOBS=${JOBS:-$(( cpus < 8 ? cpus : 8 ))}
tmp=$(mktemp -d "$cache/.tmp-$key.XXXXXX")
log=$tmp/build.log
failed_log=$cache/ucx-1.22.0-$key.failed.log
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

step() {  # step NAME COMMAND...: run COMMAND with its output in the log; on failure show the tail
  local name=$1; shift
  say "$variant: $name ($(( SECONDS - start )) s)"
  if ! "$@" >>"$log" 2>&1; then
    cp "$log" "$failed_log"
    say "FAILED: $name of UCX 1.22 ($variant); last lines of $failed_log:"
    tail -n 40 "$log" >&2
    exit 1
  fi
}

say "$variant: building UCX 1.22.0 into $prefix ($configure_line, make -j$JOBS); log: $log"
step "unpack" tar -xzf "$archive" -C "$tmp"
src=$tmp/ucx-1.22.0
step "autogen.sh" sh -c 'cd "$1" && ./autogen.sh' sh "$src"
mkdir "$tmp/build"
step "configure" sh -c 'cd "$1" && shift && "$@"' sh "$tmp/build" \
  "$src/configure" --prefix="$prefix" "${configure_args[@]}"
step "make" make -C "$tmp/build" -j"$JOBS"
step "make install" make -C "$tmp/build" install DESTDIR="$tmp/dest"

# Check what the tests need before declaring the build done.
staged=$tmp/dest$prefix
need=(bin/ucx_info bin/ucx_perftest include/ucp/api/ucp.h include/uct/api/uct.h
      include/ucs/type/status.h lib/libucp.so lib/libuct.so lib/libucs.so)
[ "$variant" = ze ] && need+=(lib/ucx/libuct_ze.so)
for f in "${need[@]}"; do
  if [ ! -e "$staged/$f" ]; then
    cp "$log" "$failed_log"
    say "FAILED: UCX 1.22 ($variant) installed no $f (log: $failed_log)"
    exit 1
  fi
done
if [ "$variant" = noze ] && ls "$staged"/lib/ucx/libuct_ze* >/dev/null 2>&1; then
  say "FAILED: the --with-ze=no build installed a ze module"; exit 1
fi

mkdir "$tmp/final"
mv "$staged" "$tmp/final/prefix"
cp "$log" "$tmp/final/build.log"
rm -rf "$dir"   # a leftover without .done (removed by hand, or an older layout)
mv "$tmp/final" "$dir"
if ! "$prefix/bin/ucx_info" -v >>"$dir/build.log" 2>&1; then
  cp "$dir/build.log" "$failed_log"
  rm -rf "$dir"
  say "FAILED: the installed $prefix/bin/ucx_info -v does not run (log: $failed_log)"
  exit 1
fi
printf '%s\n' "$configure_line" >"$dir/.done.tmp"
mv "$dir/.done.tmp" "$dir/.done"
rm -f "$failed_log"
say "$variant: done in $(( SECONDS - start )) s: $prefix"
printf '%s\n' "$prefix"
