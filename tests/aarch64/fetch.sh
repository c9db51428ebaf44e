#!/usr/bin/env bash
# tests/aarch64/fetch.sh [--kernel]: the aarch64 lane's inputs from the registries, cached outside
# the clone beside scripts/aarch64-sysroot.sh's (${UCXTLSTEST_ARM64_CACHE:-.../ucxtls-test/arm64}).
# Prints shell assignments on stdout (nothing else goes there), for scripts/test.sh to export:
#   UCXTLSTEST_AARCH64_SYSROOT  the arm64 sysroot (scripts/aarch64-sysroot.sh)
#   UCXTLSTEST_AARCH64_UCX      Debian's arm64 libucx0 unpacked with the libraries it needs
#   UCXTLSTEST_AARCH64_WHEELS   PyPI's aarch64 libucx-cu12 and nixl-cu12 unpacked
#                               (tests/wheels/aarch64-requirements.txt: pinned, hash-checked)
#   UCXTLSTEST_AARCH64_KERNEL   (--kernel) Debian's arm64 kernel image (vmlinuz), with busybox-static
#                               and dash (a dynamic shell) beside it, for test_kernel_aarch64.py
# Exit status as scripts/aarch64-sysroot.sh's: 0 done; 2 cannot be attempted here; 1 failed.
set -euo pipefail
say() { printf 'fetch.sh: %s\n' "$*" >&2; }
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=${UCXTLSTEST_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test/arm64}
debs() { "$src/scripts/aarch64-sysroot.sh" --download "$@"; }

# unpack DIR DEB...: the .debs' files in DIR, made once (DIR/.done names them).
unpack() {
  local dir=$1; shift
  local want
  want=$(basename -a "$@")
  if [ -f "$dir/.done" ] && [ "$(cat "$dir/.done")" = "$want" ]; then return 0; fi
  rm -rf "$dir"; mkdir -p "$dir"
  local f
  for f in "$@"; do dpkg-deb -x "$f" "$dir"; done
  printf '%s\n' "$want" >"$dir/.done"
}

sysroot=$("$src/scripts/aarch64-sysroot.sh")
echo "UCXTLSTEST_AARCH64_SYSROOT=$sysroot"

# Debian's UCX 1.13 for arm64 and the libraries its modules need (libucx0's Depends), so that
# doctor finds them as ld.so would: through LD_LIBRARY_PATH=<dir>/usr/lib/aarch64-linux-gnu.
list=$(debs libucx0 libibverbs1 librdmacm1 libnuma1 ibverbs-providers libnl-3-200 libnl-route-3-200)
mapfile -t ucx_debs <<<"$list"
unpack "$cache/ucx-debian" "${ucx_debs[@]}"
echo "UCXTLSTEST_AARCH64_UCX=$cache/ucx-debian"

# The wheels: pip checks each file's hash; unpacked, as pip would install them (a wheel is a zip).
wheels=$cache/wheels
req=$src/tests/wheels/aarch64-requirements.txt
key=$(sha256sum "$req" | cut -c1-16)
if [ "$(cat "$wheels/.done" 2>/dev/null)" != "$key" ]; then
  py=/usr/bin/python3
  "$py" -m pip --version >/dev/null 2>&1 || { say "cannot fetch the aarch64 wheels: no pip for $py [python3-pip]"; exit 2; }
  rm -rf "$wheels"; mkdir -p "$wheels/files"
  say "fetching the aarch64 UCX wheels (about 110 MB from PyPI) into $wheels"
  if ! "$py" -m pip download --no-input --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform manylinux_2_28_aarch64 --python-version 3.11 --implementation cp --require-hashes \
      -r "$req" -d "$wheels/files" >"$wheels/download.log" 2>&1; then
    tail -n 5 "$wheels/download.log" >&2
    if grep -qE 'Failed to establish a new connection|Temporary failure in name resolution|Network is unreachable' "$wheels/download.log"; then
      say "cannot fetch the aarch64 wheels: PyPI is not reachable"; exit 2
    fi
    say "FAILED: pip download -r $req"; exit 1
  fi
  "$py" - "$wheels" <<'EOF'
import glob, os, sys, zipfile
d = sys.argv[1]
for w in glob.glob(os.path.join(d, "files", "*.whl")):
    with zipfile.ZipFile(w) as z:
        for info in z.infolist():
            path = z.extract(info, os.path.join(d, "site"))
            mode = info.external_attr >> 16  # the file's mode, as pip keeps it
            if mode:
                os.chmod(path, mode & 0o777)
EOF
  echo "$key" >"$wheels/.done"
fi
echo "UCXTLSTEST_AARCH64_WHEELS=$wheels/site"

if [ "${1:-}" = --kernel ]; then
  # linux-image-arm64 is the metapackage; its first dependency names the kernel's own package.
  meta=$(debs linux-image-arm64)
  image=$(dpkg-deb -f "$meta" Depends | sed 's/[ ,(].*//')
  kdir=$cache/kernel
  list=$(debs "$image" busybox-static dash)
  mapfile -t kdebs <<<"$list"
  want=$(basename -a "${kdebs[@]}")
  if [ "$(cat "$kdir/.done" 2>/dev/null)" != "$want" ]; then
    rm -rf "$kdir"; mkdir -p "$kdir/x"
    for f in "${kdebs[@]}"; do
      case $f in
        *linux-image*) dpkg-deb --fsys-tarfile "$f" | tar -x -C "$kdir/x" --wildcards './boot/vmlinuz-*' ;;
        *) dpkg-deb -x "$f" "$kdir/x" ;;
      esac
    done
    mv "$kdir"/x/boot/vmlinuz-* "$kdir/vmlinuz"
    mv "$kdir/x/bin/busybox" "$kdir/busybox"
    mv "$kdir/x/bin/dash" "$kdir/dash"
    rm -rf "$kdir/x"
    printf '%s\n' "$want" >"$kdir/.done"
  fi
  echo "UCXTLSTEST_AARCH64_KERNEL=$kdir/vmlinuz"
fi
