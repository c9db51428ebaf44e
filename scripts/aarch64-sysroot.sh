#!/usr/bin/env bash
# scripts/aarch64-sysroot.sh: Debian's arm64 packages for the aarch64 lane, fetched with the
# machine's own apt sources and keys, without touching /etc or dpkg's database.
#
#   scripts/aarch64-sysroot.sh                 make (once) and print the sysroot's directory
#   scripts/aarch64-sysroot.sh --download PKG...   fetch arm64 .debs into the cache, print their paths
#
# The sysroot is the arm64 glibc, libgcc, libstdc++ and kernel headers (and the two header-only
# libraries the tests and the hook build with) unpacked with dpkg-deb -x, with a dpkg database of
# its runtime libraries for dpkg-shlibdeps: what clang
# --target=aarch64-linux-gnu links against, and what qemu-aarch64 -L loads programs with. Installing
# libc6-dev:arm64 instead would upgrade the host's own libc6 and a dozen others to the same
# version, and g++-aarch64-linux-gnu conflicts with gcc-multilib: neither is needed this way.
#
# apt runs with a private state (lists, cache, an empty dpkg status) under the cache directory,
# the host's source lists copied there, and arm64 as its only architecture: `apt-get update` there
# fetches the signed indexes, and `apt-get download` checks every .deb against them, as an install
# would. Nothing is installed, so nothing can be removed.
#
#   ${UCXTLSTEST_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test/arm64}/
#     apt/      the private apt state      debs/   the downloaded .debs
#     sysroot/  the unpacked sysroot, trusted once sysroot/.done is written (its .debs' names)
#
# Exit status: 0 done; 2 cannot be attempted here (no apt-get or dpkg-deb, no Debian sources, the
# archive not reachable: the message says which); 1 attempted and failed.
set -euo pipefail
say() { printf 'aarch64-sysroot.sh: %s\n' "$*" >&2; }

cache=${UCXTLSTEST_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test/arm64}
apt_dir=$cache/apt
debs=$cache/debs
sysroot=$cache/sysroot
SYSROOT_PACKAGES=(libc6 libc6-dev libgcc-s1 libgcc-12-dev libstdc++6 libstdc++-12-dev linux-libc-dev
                  doctest-dev nlohmann-json3-dev)

for tool in apt-get dpkg-deb flock; do
  command -v "$tool" >/dev/null || { say "cannot make the arm64 sysroot: no $tool here (a Debian or Ubuntu machine has it)"; exit 2; }
done

apt_private() {
  apt-get -q -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status" \
    -o Dir::Cache="$apt_dir/cache" -o Dir::Etc::sourcelist="$apt_dir/sources.list" \
    -o Dir::Etc::sourceparts="$apt_dir/sources.list.d" -o Dir::Etc::preferencesparts="$apt_dir/preferences.d" \
    -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root "$@"
}

# The private apt state, its indexes fetched once a day at most (a security update replaces a
# .deb, and the old one leaves the archive).
apt_ready() {
  mkdir -p "$apt_dir"/{lists/partial,cache/archives/partial,sources.list.d,preferences.d} "$debs"
  local stamp=$apt_dir/lists/.updated
  if [ -f "$stamp" ] && [ -z "$(find "$stamp" -mmin +1440)" ]; then return 0; fi
  : >"$apt_dir/status"
  rm -f "$apt_dir"/sources.list.d/*
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$apt_dir/sources.list" || : >"$apt_dir/sources.list"
  local f
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && cp "$f" "$apt_dir/sources.list.d/"
  done
  if ! grep -rqsE '(debian\.org|ubuntu\.com)' "$apt_dir/sources.list" "$apt_dir/sources.list.d"; then
    say "cannot fetch arm64 packages: /etc/apt names no Debian or Ubuntu archive"; exit 2
  fi
  local log=$apt_dir/update.log
  if ! apt_private update >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    say "cannot fetch arm64 packages: apt-get update failed (the archive not reachable?)"; exit 2
  fi
  # An index that could not be fetched is a warning to apt-get update, not an error.
  if grep -qE '^(W|E): Failed to fetch' "$log"; then
    grep -E '^(W|E): Failed to fetch' "$log" | head -n 3 >&2
    say "cannot fetch arm64 packages: an index could not be fetched"; exit 2
  fi
  touch "$stamp"
}

# download PKG...: the arm64 .debs (checked by apt against the signed index) into $debs, unless
# all are there already; prints their paths (in apt's order, not the arguments').
download() {
  apt_ready
  local log=$apt_dir/download.log names missing=
  if ! names=$(apt_private -qq --print-uris download "$@" 2>"$log" | awk '{print $2}'); then
    tail -n 5 "$log" >&2; say "FAILED: apt-get download $* (no such arm64 package?)"; exit 1
  fi
  mapfile -t names <<<"$names"
  local i
  for i in "${names[@]}"; do [ -f "$debs/$i" ] || missing=1; done
  if [ -n "$missing" ] && ! (cd "$debs" && apt_private download "$@") >"$log" 2>&1; then
    tail -n 5 "$log" >&2; say "FAILED: apt-get download $*"; exit 1
  fi
  for i in "${names[@]}"; do printf '%s\n' "$debs/$i"; done
}

mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9

if [ "${1:-}" = --download ]; then
  shift
  [ $# -gt 0 ] || { say "--download needs package names"; exit 1; }
  download "$@"
  exit 0
fi

if [ -f "$sysroot/.done" ] && [ -f "$sysroot/var/lib/dpkg/status" ] && [ -L "$sysroot/include" ]; then printf '%s\n' "$sysroot"; exit 0; fi
say "making the arm64 sysroot in $sysroot (about 9 MB from the Debian archive)"
list=$(download "${SYSROOT_PACKAGES[@]}")  # (a failure exits here: set -e)
mapfile -t files <<<"$list"
rm -rf "$sysroot"
mkdir -p "$sysroot"
for f in "${files[@]}"; do dpkg-deb -x "$f" "$sysroot"; done
# Debian's symlinks between /lib and /usr/lib (usrmerge) are made by base-files, not by these.
for d in lib; do
  if [ -d "$sysroot/$d" ] && [ ! -L "$sysroot/$d" ]; then cp -a "$sysroot/$d/." "$sysroot/usr/$d/" && rm -rf "${sysroot:?}/$d"; fi
  ln -sfn "usr/$d" "$sysroot/$d"
done
# clang finds GCC's files through lib/gcc/...: the headers' paths in its dependency files then read
# <sysroot>/include/c++/12/..., which must exist as written, or make rebuilds every object each time.
ln -sfn usr/include "$sysroot/include"
# Absolute symlinks (libm.so -> /lib/aarch64-linux-gnu/libm.so.6) would name the host's files:
# made relative, they stay inside the sysroot.
find "$sysroot" -type l -lname '/*' -print0 | while IFS= read -r -d '' l; do
  ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$sysroot$(readlink "$l")")" "$l"
done
# A dpkg database of the runtime libraries (var/lib/dpkg: status, and each package's file list,
# symbols and shlibs files from its control archive), the list naming the files where the sysroot
# has them: dpkg-shlibdeps reads a cross build's Depends from it (DPKG_ADMINDIR; CMakeLists.txt).
admin=$sysroot/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates"
echo 1 >"$admin/info/format"  # arch-qualified names: libc6:arm64.list
: >"$admin/status"
for f in "${files[@]}"; do
  pkg=$(dpkg-deb -f "$f" Package)
  case $pkg in libc6|libgcc-s1|libstdc++6) ;; *) continue ;; esac
  ctl=$(mktemp -d)
  dpkg-deb -e "$f" "$ctl"
  for x in symbols shlibs; do [ -f "$ctl/$x" ] && cp "$ctl/$x" "$admin/info/$pkg:arm64.$x"; done
  rm -rf "$ctl"
  dpkg-deb -c "$f" | awk '{print $6}' | sed 's#^\./#/#; s#/$##' | grep -v '^$' |
    while IFS= read -r p; do realpath -m "$sysroot$p"; done >"$admin/info/$pkg:arm64.list"
  { dpkg-deb -f "$f"; echo "Status: install ok installed"; echo; } >>"$admin/status"
done
basename -a "${files[@]}" >"$sysroot/.done"
printf '%s\n' "$sysroot"
