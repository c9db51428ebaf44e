#!/usr/bin/env python3
"""The README's torchrun recipe, run as printed (recipes.py) with Debian's PyTorch (python3-torch):
torchrun starts 8 workers of `train.py`, a Python program that reports what it sees, what a child
started without the library sees, and whether the library is mapped into it. The caller replays
the intel-xe fixture machine and carries a pair forwarded from a CUDA host, so each worker must
have derived its own value.

Opt-in (python3-torch is large): set UCXTLSTEST_TORCH=1; otherwise the test SKIPs and says so.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import C, Z, Checks, case, env_for, main  # noqa: E402

TITLE = "torchrun recipe, as printed in README.md (Debian python3-torch)"


def torch_version():
    """(version, None) from the Python that runs torchrun, or (None, why not)."""
    torchrun = shutil.which("torchrun", path="/usr/local/bin:/usr/bin:/bin")
    if not torchrun:
        return None, "torchrun is not installed (Debian python3-torch)"
    with open(torchrun, "rb") as f:
        shebang = f.readline().decode(errors="replace")
    python = shebang[2:].split()[0] if shebang.startswith("#!") else "python3"
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode != 0:
        return None, "%s cannot import torch: %s" % (python, p.stdout.decode().strip().splitlines()[-1:])
    return p.stdout.decode().strip(), None


def start():
    """Opt-in and torch present (else SKIP, all of it), then the namespace (recipes.start)."""
    if os.environ.get("UCXTLSTEST_TORCH") != "1":
        t = Checks(TITLE)
        t.skip("torchrun", "opt-in: set UCXTLSTEST_TORCH=1 (needs Debian python3-torch, about 1 GB installed)")
        t.exit()
    version, why = torch_version()
    if why:
        t = Checks(TITLE)
        t.skip("torchrun", why)
        t.exit()
    return R.start(TITLE)


@case("torchrun recipe: 8 workers each derive their own value")
def torchrun(t):
    version, _ = torch_version()
    if not R.install_opt(t):
        t.exit()
    try:
        generic, debian12 = R.block("torchrun").strip(), R.block("torchrun-debian12").strip()
    except LookupError as e:
        t.check("README torchrun block present", False, str(e))
        t.exit()
    scratch = tempfile.mkdtemp(prefix="ucxtls-torchrun-")
    try:
        with open(os.path.join(scratch, "train.py"), "w") as f:
            f.write(R.REPORT_PY)
        env = env_for("intel-xe", preload=False, UCX_TLS=C, UCXTLS_DERIVED=C)
        line = generic
        if version.startswith("1.13"):
            # The README's Debian 12 note: PyTorch 1.13 on Python 3.11 cannot start workers with
            # the default --redirects/--tee, library or not; the line given for it there is run.
            p = subprocess.run(["/bin/bash", "-c", generic.replace(R.OPT_LIB, "")], env=env, cwd=scratch,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=280)
            t.check("torch %s: the generic line fails without the library too (to_map AttributeError), "
                    "as the README's Debian 12 note says" % version, p.returncode != 0 and
                    b"'NoneType' object has no attribute 'get'" in p.stdout, p.stdout.decode(errors="replace"))
            line = debian12
        p = subprocess.run(["/bin/bash", "-c", line], env=env, cwd=scratch, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=280)
        out = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
        got = R.reports(out)
        want = "%s|%s" % (Z, Z)
        n = int(re.search(r"--nproc_per_node[ =](\d+)", line).group(1))
        t.check("torch %s: `%s`: %d workers, each maps the library, it and a child without the library see %s "
                "(re-derived from a forwarded CUDA pair)" % (version, line, n, want),
                p.returncode == 0 and sorted(got) == sorted(str(i) for i in range(n))
                and all(r["loaded"] and r["shell"] == want and r["child"] == want for r in got.values()), out)
        if int(version.split(".")[0]) < 2:
            p = subprocess.run(["/bin/bash", "-c", line.replace("--nproc_per_node", "--nproc-per-node")], env=env,
                               cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            t.check("torch %s: --nproc-per-node (hyphens) is refused before torch 2.0, as the README says" % version,
                    p.returncode != 0 and b"unrecognized arguments" in p.stdout, p.stdout.decode(errors="replace"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main(TITLE, start)
