"""The aarch64 (Grace) UCX builds and glibc that the x86_64 doctor is tested on, from the registries,
cached outside the clone and unpacked into a directory of the test's own:
- Debian's arm64 .debs (`apt-get download PKG:arm64`: apt checks each against the signed indexes,
  as an install would; nothing is installed): libucx0 and what its modules and the wheels' need,
  so that doctor resolves for them what it resolves for their amd64 twins installed here;
- PyPI's aarch64 wheels (`pip download --require-hashes`, tests/wheels/aarch64-requirements.txt).
Each function answers (value, None) or (None, why): the why is the test's SKIP reason."""
import fcntl
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("UCXTLSTEST_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
REQUIREMENTS = os.path.join(os.path.dirname(HERE), "wheels", "aarch64-requirements.txt")
CACHE = os.path.join(os.environ.get("UCXTLSTEST_WHEEL_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ucxtls-test"), "aarch64")
# Debian's UCX, glibc (its ld.so and libc), and the libraries UCX's modules need (verbs, its
# providers mlx5 and efa, rdmacm, numa, netlink) and the wheels' (libstdc++, libgcc_s).
ARM64_PACKAGES = ["libucx0", "libc6", "libgcc-s1", "libstdc++6", "libibverbs1", "ibverbs-providers", "librdmacm1",
                  "libnuma1", "libnl-3-200", "libnl-route-3-200"]
# Those pinned to this machine's own version: the arm64 twin of Debian's installed UCX, the same glibc.
PINNED = ("libucx0", "libc6")


def installed_version(package):
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package + ":amd64"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return p.stdout.decode() if p.returncode == 0 and p.stdout else None


def _locked(name, fill):
    """Runs fill(directory) once for CACHE/name (under a lock, trusted once .done is written)."""
    d = os.path.join(CACHE, name)
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock-" + name), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(d, ".done")):
            return d, None
        subprocess.run(["rm", "-rf", d], check=True)
        os.makedirs(d)
        why = fill(d)
        if why:
            return None, why
        open(os.path.join(d, ".done"), "w").close()
        return d, None


def _pinned_names(arch_suffix):
    names = []
    for p in ARM64_PACKAGES:
        v = installed_version(p) if p in PINNED else None
        names.append(p + arch_suffix + ("=" + v if v else ""))
    return names


def _download_debs(d):
    if subprocess.run(["which", "apt-get"], stdout=subprocess.DEVNULL).returncode:
        return "no apt-get here (Debian's arm64 packages are fetched with it)"
    r = subprocess.run(["apt-get", "download"] + _pinned_names(":arm64"), cwd=d, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=600)
    if r.returncode:
        tail = r.stdout.decode(errors="replace").strip().split("\n")[-3:]
        return ("apt-get download of Debian's arm64 packages failed (arm64 must be a foreign architecture: "
                "dpkg --add-architecture arm64 && apt-get update): %s" % " | ".join(tail))
    return None


def arm64_debs():
    """([the arm64 .debs' paths], None) or (None, why). scripts/aarch64-sysroot.sh, where the tree
    has it, fetches them with an apt state of its own (no arm64 architecture needed on the machine);
    else this machine's apt, with arm64 as a foreign architecture."""
    script = os.path.join(SOURCE, "scripts", "aarch64-sysroot.sh")
    if os.access(script, os.X_OK):
        r = subprocess.run([script, "--download"] + _pinned_names(""), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=900)
        if r.returncode:
            return None, "scripts/aarch64-sysroot.sh --download: " + r.stderr.decode(errors="replace").strip().split("\n")[-1]
        return r.stdout.decode().split(), None
    d, why = _locked("debs", _download_debs)
    if why:
        return None, why
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".deb")], None


def arm64_root(into):
    """(a directory under `into` holding Debian's arm64 packages unpacked, None) or (None, why)."""
    debs, why = arm64_debs()
    if why:
        return None, why
    root = tempfile.mkdtemp(prefix="arm64-root-", dir=into)
    for f in debs:
        subprocess.run(["dpkg-deb", "-x", f, root], check=True)
    return root, None


def arm64_library_path(root):
    """LD_LIBRARY_PATH for doctor's reading of arm64 objects: the packages' directories."""
    return ":".join(os.path.join(root, d, "aarch64-linux-gnu") for d in ("lib", "usr/lib"))


def _download_wheels(d):
    for python in (sys.executable, os.path.join(os.environ.get("UCXTLSTEST_WHEELS", "/nonexistent"), "bin", "python")):
        if subprocess.run([python, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            break
    else:
        return "no pip to download the aarch64 wheels with"
    r = subprocess.run([python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
                        "--platform", "manylinux_2_28_aarch64", "--python-version", "3.11", "--implementation", "cp",
                        "--disable-pip-version-check", "--no-input", "-d", d, "-r", REQUIREMENTS],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    if r.returncode:
        out = r.stdout.decode(errors="replace")
        for sign in ("Failed to establish a new connection", "Temporary failure in name resolution",
                     "Network is unreachable", "No matching distribution found"):
            if sign in out:
                return "PyPI cannot be reached or does not serve the aarch64 wheels: " + sign
        return "pip download of the aarch64 wheels failed: " + " | ".join(out.strip().split("\n")[-3:])
    return None


def aarch64_site(into):
    """(a directory under `into` holding the aarch64 wheels unpacked, as site-packages, None) or (None, why)."""
    wheels, why = _locked("wheels", _download_wheels)
    if why:
        return None, why
    site = tempfile.mkdtemp(prefix="aarch64-site-", dir=into)
    for f in sorted(os.listdir(wheels)):
        if f.endswith(".whl"):
            with zipfile.ZipFile(os.path.join(wheels, f)) as z:
                z.extractall(site)
    return site, None
