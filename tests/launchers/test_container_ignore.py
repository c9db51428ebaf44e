#!/usr/bin/env python3
"""The checkout's .containerignore and .dockerignore, read by a real `podman build`: the
Containerfile of docs/containers.md copies the checkout (`COPY . /src`), and the build trees
(build/, build-run/, ...), wheels (dist/) and caches beside it must stay out of the image.

A context like a used checkout (a few sources, the ignore file, and a file in each of those
directories), `FROM scratch` and `COPY . /src` (no base image to pull), built once with each ignore
file alone (Podman reads .containerignore, else .dockerignore, as Docker does); the image's files
are listed from `podman export`."""
import os
import shutil
import subprocess
import tempfile

import recipes as R  # noqa: F401,E402  (first: it puts harness.py on the path)
from harness import RUN_ID, SOURCE_DIR, case, have, main  # noqa: E402

KEPT = ["CMakeLists.txt", "shim/core.cc", "tests/e2e/harness.py", "docs/containers.md"]
LEFT_OUT = ["build/CMakeCache.txt", "build-run/libucxtls.so", "build-release/ucxtls", "build-rpm/x.rpm",
            "dist/ucxtls-0.2.0-py3-none-manylinux_2_17_x86_64.whl", "shim/__pycache__/x.pyc", "python/ucxtls.egg-info/PKG-INFO"]


def podman(*args, **kw):
    return subprocess.run(["podman"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@case("podman build with COPY . /src: each ignore file keeps the sources and leaves out build trees, wheels, caches")
def ignore_files(t):
    if not have("podman"):
        t.skip("podman build", "podman is not installed (Debian podman; scripts/test.sh installs it)")
        return
    scratch = tempfile.mkdtemp(prefix="ucxtls-ignore-")
    try:
        for name in (".containerignore", ".dockerignore"):
            src = os.path.join(SOURCE_DIR, name)
            if not t.check("the checkout has %s" % name, os.path.isfile(src)):
                continue
            ctx = os.path.join(scratch, name.strip("."))
            for rel in KEPT + LEFT_OUT:
                os.makedirs(os.path.dirname(os.path.join(ctx, rel)) or ctx, exist_ok=True)
                open(os.path.join(ctx, rel), "w").close()
            shutil.copy(src, ctx)
            with open(os.path.join(scratch, "Containerfile"), "w") as f:
                f.write("FROM scratch\nCOPY . /src\n")
            tag = "localhost/ucxtls-ignore-test-%s-%s" % (name.strip("."), RUN_ID)
            p = podman("build", "-q", "-f", os.path.join(scratch, "Containerfile"), "-t", tag, ctx, timeout=300)
            if not t.check("%s: podman build succeeds" % name, p.returncode == 0, p.stderr.decode()):
                continue
            c = podman("create", tag, "/none", timeout=120).stdout.decode().strip()
            listing = subprocess.run("podman export %s | tar -t" % c, shell=True, stdout=subprocess.PIPE).stdout.decode()
            podman("rm", c, timeout=120)
            podman("rmi", tag, timeout=120)
            files = {l[len("src/"):] for l in listing.split() if l.startswith("src/") and not l.endswith("/")}
            t.check("%s alone: the image has the sources %s" % (name, ", ".join(KEPT)), set(KEPT) <= files, repr(sorted(files)))
            t.equal("%s alone: none of build*/, dist/, __pycache__, egg-info is in the image" % name,
                    sorted(set(LEFT_OUT) & files), [], repr(sorted(files)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main(".containerignore and .dockerignore under podman build")
