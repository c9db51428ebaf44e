#!/usr/bin/env python3
"""tests/ucx/build_ucx.sh, the UCX 1.22.0 builds the tests use: what it promises besides building.

- The cache: a second run prints the prefix, alone on stdout, at once; the directory is named by
  the archive's sha256 and the configure line (written to .done), outside the clone.
- A run that finds another build of the same key under way waits on its lock and takes its result
  instead of building again (the other build is played by the test: it holds the lock, then
  installs a prefix and .done).
- Refusals before anything is built, each one stderr line naming the cause and exit 2 (what
  test.sh turns into the SKIP reason): an archive whose sha256 is not the vendored one, a missing
  prerequisite (the tools named with their Debian packages), a wrong argument.

The cases that read the real builds (tag ucx122) print SKIP with the reason without them.
"""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import SOURCE_DIR, case, main, ucx122_or_skip  # noqa: E402

SCRIPT = os.path.join(SOURCE_DIR, "tests", "ucx", "build_ucx.sh")
ARCHIVE = os.path.join(SOURCE_DIR, "third_party", "ucx-1.22.0.tar.gz")
README = os.path.join(SOURCE_DIR, "third_party", "README.md")


def vendored_sha():
    """The sha256 third_party/README.md gives for the archive."""
    with open(README, encoding="utf-8") as f:
        return re.search(r"sha256: `([0-9a-f]{64})`", f.read()).group(1)


def script(args, cache, env_extra=None, script_path=SCRIPT, timeout=60):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cache, "UCXTLSTEST_UCX_CACHE": cache}
    env.update(env_extra or {})
    return subprocess.run([script_path] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


def a_tree(archive_bytes=None):
    """A copy of the script in a scratch checkout whose archive is the real one (a symlink) or
    archive_bytes."""
    root = tempfile.mkdtemp(prefix="ucxtls-build-ucx-")
    os.makedirs(os.path.join(root, "tests", "ucx"))
    os.makedirs(os.path.join(root, "third_party"))
    shutil.copy(SCRIPT, os.path.join(root, "tests", "ucx"))
    archive = os.path.join(root, "third_party", "ucx-1.22.0.tar.gz")
    if archive_bytes is None:
        os.symlink(ARCHIVE, archive)
    else:
        with open(archive, "wb") as f:
            f.write(archive_bytes)
    return root, os.path.join(root, "tests", "ucx", "build_ucx.sh")


@case("the archive is the vendored one: sha256 as third_party/README.md gives it, the licence beside it")
def archive(t):
    with open(ARCHIVE, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    t.equal("sha256 of third_party/ucx-1.22.0.tar.gz", got, vendored_sha())
    with open(SCRIPT, encoding="utf-8") as f:
        t.check("build_ucx.sh checks that same sha256", "expected_sha=%s" % vendored_sha() in f.read())
    lic = os.path.join(SOURCE_DIR, "third_party", "ucx-1.22.0.LICENSE")
    inside = subprocess.run(["tar", "-xzOf", ARCHIVE, "ucx-1.22.0/LICENSE"], stdout=subprocess.PIPE).stdout
    t.check("third_party/ucx-1.22.0.LICENSE is the archive's LICENSE", os.path.exists(lic) and
            open(lic, "rb").read() == inside and b"Redistribution and use" in inside)


@case("cached: the second run prints the prefix alone on stdout, at once; the key is the archive's hash and the configure line",
      tags=("ucx122",))
def cached(t):
    for variant in ("ze", "noze"):
        prefix = ucx122_or_skip(t, variant, "the %s build" % variant)
        if not prefix:
            continue
        build = os.path.dirname(prefix)
        cache = os.path.dirname(build)
        start = time.monotonic()
        p = script([variant], cache)
        took = time.monotonic() - start
        t.check("build_ucx.sh %s with its cache: exit 0, stdout the prefix alone, stderr empty, in %.2f s (< 5 s)"
                % (variant, took), p.returncode == 0 and p.stdout.decode() == prefix + "\n" and p.stderr == b""
                and took < 5, repr(p))
        with open(os.path.join(build, ".done"), encoding="utf-8") as f:
            line = f.read().strip()
        flag = "--with-ze" if variant == "ze" else "--with-ze=no"
        t.check(".done holds the configure line, with %s" % flag, line.startswith("configure ") and flag in line.split(),
                line)
        key = hashlib.sha256(("%s\n%s\n" % (vendored_sha(), line)).encode()).hexdigest()[:16]
        t.equal("the directory is named by sha256(archive sha256, configure line)", os.path.basename(build),
                "ucx-1.22.0-" + key)
        t.check("the cache is outside the clone", not os.path.realpath(prefix).startswith(os.path.realpath(SOURCE_DIR) + "/"),
                prefix)


@case("a run that finds the same build under way waits on its lock and takes its result", tags=("ucx122",))
def waits(t):
    prefix = ucx122_or_skip(t, "ze", "the ze build")
    if not prefix:
        return
    with open(os.path.join(os.path.dirname(prefix), ".done"), encoding="utf-8") as f:
        key = hashlib.sha256(("%s\n%s\n" % (vendored_sha(), f.read().strip())).encode()).hexdigest()[:16]
    cache = tempfile.mkdtemp(prefix="ucxtls-ucx-cache-")
    try:
        lock = open(os.path.join(cache, ".lock-" + key), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other build, under way
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cache, "UCXTLSTEST_UCX_CACHE": cache}
        proc = subprocess.Popen([SCRIPT, "ze"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.set_blocking(proc.stderr.fileno(), False)  # it says so before it blocks: read what it wrote so far
        deadline = time.monotonic() + 30
        err = b""
        while time.monotonic() < deadline and b"waiting" not in err and proc.poll() is None:
            time.sleep(0.2)
            try:
                err += os.read(proc.stderr.fileno(), 4096)
            except BlockingIOError:
                pass
        waiting = b"waiting" in err
        t.check("it says it waits for the other build (stderr), and does not start its own", waiting
                and proc.poll() is None and not [n for n in os.listdir(cache) if n.startswith(".tmp-")],
                err.decode() + repr(os.listdir(cache)))
        # The other build finishes: its prefix and .done appear, then the lock is released.
        done = os.path.join(cache, "ucx-1.22.0-" + key)
        os.makedirs(os.path.join(done, "prefix", "bin"))
        with open(os.path.join(done, "prefix", "bin", "ucx_info"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(done, "prefix", "bin", "ucx_info"), 0o755)
        with open(os.path.join(done, ".done"), "w") as f:
            f.write("configure (played by the test)\n")
        stale = os.path.join(cache, ".tmp-%s.killed" % key)  # what a build killed earlier leaves
        os.makedirs(os.path.join(stale, "build"))
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
        out, rest = proc.communicate(timeout=30)
        t.check("released, it prints the other build's prefix and exits 0, having built nothing, and removes "
                "the temporary directory of a build killed earlier", proc.returncode == 0
                and out.decode() == os.path.join(done, "prefix") + "\n"
                and not [n for n in os.listdir(cache) if n.startswith(".tmp-")],
                repr((proc.returncode, out, rest, os.listdir(cache))))
    finally:
        shutil.rmtree(cache, True)


@case("refused before building: an archive with another sha256")
def tampered(t):
    root, path = a_tree(b"not the UCX archive\n")
    cache = os.path.join(root, "cache")
    try:
        p = script(["ze"], cache, script_path=path)
        err = p.stderr.decode()
        t.check("exit 2, nothing on stdout, one stderr line naming both hashes, no cache created",
                p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1 and vendored_sha() in err
                and hashlib.sha256(b"not the UCX archive\n").hexdigest() in err and not os.path.exists(cache), err)
    finally:
        shutil.rmtree(root, True)


@case("refused before building: a missing prerequisite, named with its Debian package")
def missing_tools(t):
    root, path = a_tree()
    cache = os.path.join(root, "cache")
    bindir = os.path.join(root, "bin")  # what the script needs up to its check, and no build tool
    os.makedirs(bindir)
    for tool in ("bash", "dirname", "sha256sum", "cut"):
        os.symlink(shutil.which(tool), os.path.join(bindir, tool))
    try:
        p = script(["ze"], cache, {"PATH": bindir}, script_path=path)
        err = p.stderr.decode()
        t.check("exit 2, nothing on stdout, one stderr line naming autoconf [autoconf], libtoolize [libtool] and "
                "make [make], no cache created", p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1
                and "missing" in err and "autoconf [autoconf]" in err and "libtoolize [libtool]" in err
                and "make [make]" in err and not os.path.exists(cache), err)
    finally:
        shutil.rmtree(root, True)


@case("refused: no variant, or an unknown one")
def usage(t):
    cache = tempfile.mkdtemp(prefix="ucxtls-ucx-cache-")
    try:
        for args in ([], ["cuda"]):
            p = script(args, cache)
            t.check("build_ucx.sh %s: exit 2, the usage on stderr, nothing on stdout" % " ".join(args),
                    p.returncode == 2 and p.stdout == b"" and b"usage: build_ucx.sh ze|noze" in p.stderr, repr(p))
    finally:
        shutil.rmtree(cache, True)


if __name__ == "__main__":
    main("tests/ucx/build_ucx.sh: the cache, the lock, the refusals")
