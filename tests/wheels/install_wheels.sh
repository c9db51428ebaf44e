#!/usr/bin/env bash
# tests/wheels/install_wheels.sh: install the UCX builds users load, from PyPI (requirements.txt
# beside this script: pinned, hash-checked, no dependency resolution), into a venv kept outside
# the clone, and print the venv's directory on stdout (nothing else goes to stdout). UCXX
# (ucxx-requirements.txt), whose pins conflict with those, goes into a second venv beside it,
# venv-ucxx.
#
#   ${UCXTLSTEST_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test}/wheels-<key>/
#     venv/   python3 -m venv of Debian's /usr/bin/python3 (CPython 3.11: the wheels' tag)
#     venv-ucxx/  the same for UCXX
#     .done   written once every wheel installed
#     install.log
# <key> is a hash of the requirements files, so a machine downloads each set once. Concurrent runs wait
# on one lock per key.
#
# Exit status: 0 installed or cached; 2 cannot be attempted here (no python3 3.11, no venv
# module, PyPI not reachable: the message says which); 1 attempted and failed (log's tail shown).
set -euo pipefail
say() { printf 'install_wheels.sh: %s\n' "$*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
req=$here/requirements.txt
req_ucxx=$here/ucxx-requirements.txt
py=${UCXTLSTEST_WHEEL_PYTHON:-/usr/bin/python3}
key=$(cat "$req" "$req_ucxx" | sha256sum | cut -c1-16)
cache=${UCXTLSTEST_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxtls-test}
dir=$cache/wheels-$key
venv=$dir/venv

done_ok() { [ -f "$dir/.done" ] && [ -x "$venv/bin/python" ] && [ -x "$venv-ucxx/bin/python" ]; }
if done_ok; then printf '%s\n' "$venv"; exit 0; fi

[ -x "$py" ] || { say "cannot install the wheels: $py is missing [python3]"; exit 2; }
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$ver" = 3.11 ] || { say "cannot install the wheels: $py is Python $ver, the pinned wheels are for 3.11"; exit 2; }
"$py" -c 'import venv, ensurepip' 2>/dev/null || { say "cannot install the wheels: $py has no venv/ensurepip [python3-venv]"; exit 2; }

mkdir -p "$cache"
exec 9>"$cache/.lock-wheels-$key"
if ! flock -n 9; then say "another install of $dir is running; waiting for it"; flock 9; fi
if done_ok; then printf '%s\n' "$venv"; exit 0; fi

# Made in place (a venv names its own path in pyvenv.cfg and its scripts), and trusted only once
# .done is written last: a killed run leaves no .done, and the next run starts that directory anew.
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/install.log
say "installing the pinned wheels (about 220 MB from PyPI) into $dir"
install() {  # install VENV REQUIREMENTS
  if ! "$py" -m venv "$1" >>"$log" 2>&1; then
    tail -n 20 "$log" >&2; say "FAILED: $py -m venv $1"; exit 1
  fi
  set +e
  "$1/bin/python" -m pip install --no-input --disable-pip-version-check --no-deps \
    --only-binary=:all: --require-hashes -r "$2" >>"$log" 2>&1
  local rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log" >&2
    why=$(grep -m1 -o -E 'Failed to establish a new connection|Temporary failure in name resolution|Network is unreachable|No matching distribution found for [^ ]*' "$log" || true)
    if [ -n "$why" ]; then say "cannot install the wheels: PyPI is not reachable from here (pip: $why)"; exit 2; fi
    say "FAILED: pip install -r $2 (log above)"; exit 1
  fi
}
install "$venv" "$req"
install "$venv-ucxx" "$req_ucxx"
cat "$req" "$req_ucxx" >"$dir/.done"
printf '%s\n' "$venv"
