#!/usr/bin/env python3
"""AddressSanitizer users under every channel: `ucxtls run`, the Lmod module, recipes as printed.

ASan's runtime refuses to start unless it is the first library in the process's list ("ASan
runtime does not come first in initial library list"): gcc's -fsanitize=address links the runtime
dynamically (NEEDED libasan.so.8), and ld.so puts every LD_PRELOAD entry before NEEDED ones; a
user who preloads libasan.so into an uninstrumented program needs it first too. So every channel
appends the library to LD_PRELOAD (docs/install.md, "AddressSanitizer"). Checked, on the
intel-xe fixture machine, for each channel:
- a user's LD_PRELOAD=libasan.so with a gcc ASan program and with a plain program: both start,
  get UCX_TLS, and ASan still reports a heap overflow (its runtime works, it is not just quiet);
- a clang ASan program (clang links the runtime statically by default): starts, gets UCX_TLS;
- a gcc ASan program without libasan preloaded starts under `ucxtls run` (which reads the
  program's NEEDED and puts its ASan runtime first in LD_PRELOAD) and is refused under the other
  channels, as with any preloaded library (ASan's own rule); the two ways out the docs give work:
  libasan.so first in LD_PRELOAD, or ASAN_OPTIONS=verify_asan_link_order=0 (safe here: the library exports nothing,
  so no symbol of ASan's is shadowed; the overflow is still reported).
Controls: the old order (the library first) is refused, so the setup does provoke the check; and
the library's place in LD_PRELOAD changes nothing it does (the same value and debug line for
/bin/sh with another preload before and after it).
The recipes (README's launch script, which execs python3, and docs/recipes.md's inference-server
serve.sh, which execs its arguments) run in the private /opt of the launcher tests (recipes.py;
root and namespaces, else that part SKIPs). Each channel also starts /bin/sh under a user's
LD_PRELOAD of another library: that entry stays first, the library comes after it, both mapped.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import ALL, BUILD_DIR, LIB, case, env_for, have, main, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
LMOD_INIT = os.environ.get("UCXTLSTEST_LMOD_INIT", "/usr/share/lmod/lmod/init/profile")
REFUSED = "ASan runtime does not come first in initial library list"
OVERFLOW = "ERROR: AddressSanitizer: heap-buffer-overflow"
TITLE = "AddressSanitizer users: ucxtls run, the module, the recipes"
# What serve.sh's template composes to on the intel-xe fixture (a ConnectX, Intel GPUs).
SERVE_INTEL = "rc_x,rc,dc_x,dc,sm,self,tcp,ze_copy"

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  const char *v = getenv("UCX_TLS");
  printf("UCX_TLS=%s\n", v ? v : "<unset>");
  fflush(stdout);
  if (argc > 1 && !strcmp(argv[1], "overflow")) {
    volatile char *p = malloc(4);
    p[4] = 1;  /* one past the end: ASan reports it */
    free((void *)p);
  }
  return 0;
}
"""
# The recipe execs `python3 train.py "$@"`: train.py execs the program it is given.
TRAIN_PY = "import os, sys\nos.execv(sys.argv[1], sys.argv[1:])\n"
_built = {}


def built(t):
    """{name: path} of the programs, the runtime, a module tree; compiled once."""
    if _built:
        return _built
    if not have("gcc"):
        t.skip("all", "gcc not installed")
        t.exit()
    work = tempfile.mkdtemp(prefix="ucxtls-asan-")
    atexit.register(shutil.rmtree, work, True)
    src = os.path.join(work, "program.c")
    with open(src, "w") as f:
        f.write(PROGRAM)
    for name, argv in (("gcc_asan", ["gcc", "-fsanitize=address", "-g"]), ("plain", ["gcc"]),
                       ("clang_asan", ["clang", "-fsanitize=address", "-g"])):
        if not have(argv[0]):
            t.skip(name, "%s not installed" % argv[0])
            continue
        exe = os.path.join(work, name)
        p = subprocess.run(argv + ["-o", exe, src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if t.check("compile %s" % name, p.returncode == 0, p.stdout.decode()):
            _built[name] = exe
    runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], stdout=subprocess.PIPE).stdout.decode().strip()
    if not t.check("gcc's ASan runtime is installed (%s)" % runtime, os.path.isabs(runtime) and os.path.exists(runtime),
                   "Debian libasan8 (gcc's dependency)"):
        t.exit()
    _built["libasan"] = os.path.realpath(runtime)
    prefix = os.path.join(work, "prefix")
    p = subprocess.run([os.environ.get("UCXTLSTEST_CMAKE", "cmake"), "--install", BUILD_DIR, "--prefix", prefix],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t.check("cmake --install --prefix (for the module)", p.returncode == 0, p.stdout.decode())
    _built["modules"] = os.path.join(prefix, "share", "modulefiles")
    _built["work"] = work
    return _built


def channels(t, b):
    """[(name, argv prefix, the UCX_TLS it gives on intel-xe)]: each starts the program with the
    library the way users do."""
    out = [("ucxtls run", [CLI, "run"], ALL)]
    if os.path.isfile(LMOD_INIT) and have("bash"):
        out.append(("the module", ["bash", "--noprofile", "--norc", "-c",
                                   '. "$0" && module use "$1" && module load ucxtls && shift && exec "$@"',
                                   LMOD_INIT, b["modules"]], ALL))
    else:
        t.skip("the module", "%s missing (Debian package lmod)" % LMOD_INIT)
    if getattr(t, "ns", False):
        out.append(("the launch-script recipe", [os.path.join(b["job"], "launch.sh")], ALL))
        out.append(("the inference-server recipe", [os.path.join(b["job"], "serve.sh")], SERVE_INTEL))
    else:
        t.skip("the launch-script and inference-server recipes as printed", "needs root and namespaces (recipes.py)")
    return out


def start_with(prefix, prog, env, *args, cwd=None):
    p = run(prefix + [prog] + list(args), env, cwd=cwd)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


@case("ASan programs and a user's LD_PRELOAD=libasan.so under every channel")
def asan_channels(t):
    b = built(t)
    if getattr(t, "ns", False) and "job" not in b:
        if R.install_opt(t):
            job = os.path.join(b["work"], "job")
            os.makedirs(job)
            with open(os.path.join(job, "train.py"), "w") as f:
                f.write(TRAIN_PY)
            for script, name in (("launch.sh", "launch-script"), ("serve.sh", "inference-server")):
                with open(os.path.join(job, script), "w") as f:
                    f.write(R.block(name))  # as printed, its #!/bin/bash line included
                os.chmod(os.path.join(job, script), 0o755)
            b["job"] = job
        else:
            t.ns = False
    asan = b["libasan"]
    other = R.build_other_preload(b["work"])
    for channel, prefix, value in channels(t, b):
        want = "UCX_TLS=%s\n" % value
        cwd = b.get("job") if "recipe" in channel else None
        if other:
            show = ('printf "%s|" "$LD_PRELOAD"; grep -q /libucxtls.so /proc/$$/maps && '
                    'grep -q /libother-preload.so /proc/$$/maps && echo both-mapped')
            rc, out, err = start_with(prefix, "/bin/sh", env_for("intel-xe", preload=False, LD_PRELOAD=other),
                                      "-c", show, cwd=cwd)
            entries = out.split("|")[0].split(":")
            t.check("%s, the user's LD_PRELOAD=<another library>: it stays first, the library comes after it, "
                    "both mapped" % channel, rc == 0 and entries[0] == other and len(entries) == 2
                    and entries[1].endswith("/libucxtls.so") and out.split("|")[-1] == "both-mapped\n",
                    "%d %r %r" % (rc, out, err[-600:]))
        # The uninstrumented tools a channel runs (Lmod's sed, python3) leak at exit, as far as a
        # preloaded runtime can tell: its leak report is theirs and beside the point here.
        env_user = env_for("intel-xe", preload=False, LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0")
        for prog in ("gcc_asan", "plain"):
            if prog not in b:
                continue
            rc, out, err = start_with(prefix, b[prog], env_user, cwd=cwd)
            t.check("%s, %s, the user's LD_PRELOAD=libasan.so: starts, gets UCX_TLS" % (channel, prog),
                    rc == 0 and out == want and REFUSED not in err, "%d %r %r" % (rc, out, err[-600:]))
        if "gcc_asan" in b:
            rc, out, err = start_with(prefix, b["gcc_asan"], env_user, "overflow", cwd=cwd)
            t.check("%s, gcc_asan, the user's libasan.so: the value, and ASan still reports a heap overflow" % channel,
                    rc != 0 and out == want and OVERFLOW in err, "%d %r %r" % (rc, out, err[-600:]))
        if "clang_asan" in b:
            rc, out, err = start_with(prefix, b["clang_asan"], env_for("intel-xe", preload=False), cwd=cwd)
            t.check("%s, clang_asan (static runtime), no LD_PRELOAD: starts, gets UCX_TLS" % channel,
                    rc == 0 and out == want, "%d %r %r" % (rc, out, err[-600:]))
        if "gcc_asan" in b:
            rc, out, err = start_with(prefix, b["gcc_asan"], env_for("intel-xe", preload=False), cwd=cwd)
            if channel == "ucxtls run":  # it reads the program's NEEDED and puts the runtime first
                t.check("ucxtls run, gcc_asan without libasan.so preloaded: starts, gets UCX_TLS (its runtime, named "
                        "in its NEEDED, put first)", rc == 0 and out == want and REFUSED not in err,
                        "%d %r %r" % (rc, out, err[-600:]))
                rc, out, err = start_with(prefix, b["gcc_asan"], env_for("intel-xe", preload=False), "overflow", cwd=cwd)
                t.check("ucxtls run, gcc_asan without libasan.so preloaded: ASan still reports a heap overflow",
                        rc != 0 and out == want and OVERFLOW in err, "%d %r %r" % (rc, out, err[-600:]))
            else:
                t.check("%s, gcc_asan without libasan.so preloaded: refused by ASan, as any preloaded library is "
                        "(the documented limit)" % channel, rc != 0 and REFUSED in err, "%d %r %r" % (rc, out, err[-600:]))
            rc, out, err = start_with(prefix, b["gcc_asan"], env_for("intel-xe", preload=False,
                                                                     ASAN_OPTIONS="verify_asan_link_order=0"),
                                      "overflow", cwd=cwd)
            t.check("%s, gcc_asan with ASAN_OPTIONS=verify_asan_link_order=0: the value, the overflow reported" % channel,
                    out == want and OVERFLOW in err, "%d %r %r" % (rc, out, err[-600:]))


@case("controls: the library first is refused; its place changes nothing it does")
def controls(t):
    b = built(t)
    if "gcc_asan" in b:
        env = env_for("intel-xe", preload=False, LD_PRELOAD="%s:%s" % (LIB, b["libasan"]))
        rc, out, err = start_with([], b["gcc_asan"], env)
        t.check("control: LD_PRELOAD=libucxtls.so:libasan.so (the old order) is refused by ASan",
                rc != 0 and REFUSED in err, "%d %r" % (rc, err[-400:]))
    other = R.build_other_preload(b["work"])
    if not other:
        t.skip("the library's place", "no C compiler for the other preload library")
        return
    seen = {}
    for order in ("%s:%s" % (other, LIB), "%s:%s" % (LIB, other), LIB):
        env = env_for("intel-xe", preload=False, LD_PRELOAD=order, UCXTLS_DEBUG="1")
        p = run(["/bin/sh", "-c", 'printf "%s|%s" "$UCX_TLS" "$UCXTLS_DERIVED"'], env)
        seen[order] = (p.returncode, p.stdout.decode(), p.stderr.decode())
    t.check("the library last, first or alone in LD_PRELOAD: the same value, derived marker and debug line",
            len(set(seen.values())) == 1 and seen[LIB][1] == "%s|%s" % (ALL, ALL), repr(seen))


if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE, optional=True))
