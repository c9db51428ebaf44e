#!/usr/bin/env python3
"""The README's plain launch scripts and /etc/ld.so.preload lines, run as printed (recipes.py).

launch-script and launch-script-env are written to ./launch.sh and started as users start them
(exec of ./launch.sh, no shell or wrapper in front), with `train.py` a Python program that reports
what it sees (os.environ), what a child started without the library sees (LD_PRELOAD emptied),
and whether the library is mapped into it. They run on the intel-xe fixture machine, fresh, with a
pair forwarded from a CUDA host, and with another LD_PRELOAD already set; launch-script-env also
with an invalid UCXTLS_WRITE, where it must stop before the program starts.

ld-so-preload and ld-so-preload-lib are written to /etc/ld.so.preload of this test's private
mount namespace, whose /etc is an overlay (recipes.overlay_etc): the machine's own /etc is never
written. A program started with no LD_PRELOAD then maps the library from the path the line names
($LIB expanded by ld.so) and gets the value.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import ALL, C, case, env_for, loading, main, skip_closed_to_others, ucx_build_or_skip  # noqa: E402



def launch_scripts(t, job, other):
    cases = [("fresh", {}, False), ("a pair forwarded from a CUDA host", {"UCX_TLS": C, "UCXTLS_DERIVED": C},
                                                                            False)]
    if other:
        cases.append(("another LD_PRELOAD already set", {"LD_PRELOAD": other}, True))
    for name, loaded in (("launch-script", True), ("launch-script-env", False)):
        try:
            text = R.block(name)
        except LookupError as e:
            t.check("README block %s present" % name, False, str(e))
            continue
        with open(os.path.join(job, "launch.sh"), "w") as f:
            f.write(text)
        os.chmod(os.path.join(job, "launch.sh"), 0o755)
        for label, extra, has_other in cases:
            env = env_for("intel-xe", preload=False, **extra)
            p = subprocess.run(["./launch.sh"], env=env, cwd=job, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
            out = p.stdout.decode() + p.stderr.decode()
            r = R.reports(out).get("local")
            want = "%s|%s" % (ALL, ALL)  # the default on an Intel node: all (UCX's own default)
            t.check("%s as printed, %s, intel-xe: the program and a child without the library see %s, library %s%s"
                    % (name, label, want, "mapped" if loaded else "not mapped (the value comes from ucxtls env)",
                       ", the other preload kept" if has_other and loaded else ""),
                    p.returncode == 0 and r is not None and r["shell"] == want and r["child"] == want
                    and r["loaded"] == loaded and (r["other"] or not (has_other and loaded)), out)
        if name == "launch-script-env":
            # The recipe stops when the command fails: an invalid setting is exit 1 of ucxtls env,
            # and the script must not start the program without a value (eval "$(...)" would).
            env = env_for("intel-xe", preload=False, UCXTLS_WRITE="bogus")
            p = subprocess.run(["./launch.sh"], env=env, cwd=job, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
            out = p.stdout.decode() + p.stderr.decode()
            t.check("%s as printed, UCXTLS_WRITE=bogus: ucxtls env fails and the script stops there (exit 1, "
                    "the program not started, the error names UCXTLS_WRITE)" % name,
                    p.returncode == 1 and not R.reports(out) and "UCXTLS_WRITE" in p.stderr.decode(), out)


def ld_so_preload(t, scratch):
    try:
        lines = {n: R.block(n) for n in ("ld-so-preload", "ld-so-preload-lib")}
    except LookupError as e:
        t.check("README /etc/ld.so.preload blocks present", False, str(e))
        return
    # The $LIB recipe's layout: the library in the directory ld.so names for this process's class
    # (Debian lib/x86_64-linux-gnu, RHEL lib64); the test fills the usual candidates, and the maps
    # of the process show the one ld.so took.
    for d in ("lib/x86_64-linux-gnu", "lib64", "lib/aarch64-linux-gnu"):
        os.makedirs(os.path.join(R.PREFIX, d), exist_ok=True)
        shutil.copy(R.OPT_LIB, os.path.join(R.PREFIX, d, "libucxtls.so"))
    upper = R.overlay_etc(scratch)
    try:
        for name, text in lines.items():
            with open("/etc/ld.so.preload", "w") as f:
                f.write(text)
            if not t.check("/etc/ld.so.preload is written to the overlay, not the machine's /etc",
                           os.path.exists(os.path.join(upper, "ld.so.preload"))):
                return
            env = env_for("intel-xe", preload=False)
            p = subprocess.run(["/bin/sh", "-c", R.REPORT_SH + 'echo "MAPPED $(/bin/grep -o "/[^ ]*/libucxtls.so" '
                                '/proc/$$/maps | sort -u)"'], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out = p.stdout.decode()
            r = R.reports(out).get("local")
            mapped = [l[7:] for l in out.splitlines() if l.startswith("MAPPED ")]
            want = "%s|%s" % (ALL, ALL)  # the default on an Intel node: all (UCX's own default)
            t.check("%s as printed (%s): /bin/sh with no LD_PRELOAD maps it and sees %s, no ld.so error"
                    % (name, text.strip(), want), p.returncode == 0 and r is not None and r["shell"] == want
                    and r["loaded"] and p.stderr == b"", out + p.stderr.decode())
            if "$LIB" in text:
                t.check("$LIB in /etc/ld.so.preload is expanded by ld.so (glibc %s): mapped %s"
                        % (os.confstr("CS_GNU_LIBC_VERSION").split()[-1], " ".join(mapped)),
                        len(mapped) == 1 and mapped[0].startswith(R.PREFIX + "/lib") and "$LIB" not in mapped[0]
                        and mapped[0] != R.OPT_LIB, out)
    finally:
        if os.path.exists("/etc/ld.so.preload") and R.mounted("/etc", "overlay"):
            os.unlink("/etc/ld.so.preload")


# The inference-server recipe on each node shape: (fixture, the UCX_TLS every server process gets).
SERVER_NODES = [
    ("dgx", "rc_x,rc,dc_x,dc,sm,self,tcp,cuda_ipc,cuda_copy"),
    ("broadcom-roce", "rc,sm,self,tcp,cuda_ipc,cuda_copy"),
    ("aws-p5", "sm,self,tcp,cuda_ipc,cuda_copy"),
    ("no-rdma", "sm,self,tcp,cuda_ipc,cuda_copy"),
    ("mi300x", "rc_x,rc,dc_x,dc,sm,self,tcp,rocm_ipc,rocm_copy"),
    ("intel-xe", "rc_x,rc,dc_x,dc,sm,self,tcp,ze_copy"),
]


def inference_server(t, job, ucx_info="ucx_info", under=""):
    """The recipe under `ucx_info` (Debian's 1.13 in PATH, or a UCX 1.22 build's, by its path;
    `under` names it in the checks)."""
    try:
        text = R.block("inference-server")
    except LookupError as e:
        t.check("docs/recipes.md block inference-server present", False, str(e))
        return
    serve = os.path.join(job, "serve.sh")
    with open(serve, "w") as f:
        f.write(text)
    os.chmod(serve, 0o755)
    if not shutil.which(ucx_info):
        t.skip("inference-server recipe under ucx_info", "ucx_info not installed (Debian ucx-utils)")
        return
    show = 'printf "UCX_TLS=%s\n" "${UCX_TLS-<unset>}"'
    for machine, want in SERVER_NODES:
        env = env_for(machine, preload=False)
        p = subprocess.run(["./serve.sh", "/bin/sh", "-c", show], env=env, cwd=job, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        t.equal("inference-server as printed on %s: the server sees UCX_TLS" % machine,
                p.stdout.decode().strip(), "UCX_TLS=" + want, p.stderr.decode())
        # UCX (Debian's, without RDMA or GPU support here) creates an endpoint with that value: sm,
        # self and tcp carry it where nothing else runs.
        p = subprocess.run(["./serve.sh", ucx_info, "-e", "-u", "t"], env=env, cwd=job, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        t.check("inference-server as printed on %s: ucx_info -e creates a UCP endpoint%s" % (machine, under),
                p.returncode == 0 and "UCP endpoint" in p.stdout.decode(), p.stdout.decode() + p.stderr.decode())
    # The control: Dynamo's published value on a node without rc (this machine has none).
    env = env_for("aws-p5", preload=False, UCX_TLS="rc_x,rc,dc_x,dc,cuda_copy,cuda_ipc")
    p = subprocess.run(["./serve.sh", ucx_info, "-e", "-u", "t"], env=env, cwd=job, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    t.check("control: Dynamo's published rc_x,rc,dc_x,dc,cuda_copy,cuda_ipc fails where rc does not run%s" % under,
            "no usable transports" in p.stdout.decode() + p.stderr.decode(), p.stdout.decode() + p.stderr.decode())


TITLE = "plain launch scripts and /etc/ld.so.preload, as printed in README.md and docs/recipes.md"
_job = []


def installed(t):
    """The README's install into the namespace's /opt and a job directory with train.py, once per
    process; ends the case when the install failed."""
    if not _job:
        if not R.install_opt(t):
            t.exit()
        scratch = tempfile.mkdtemp(prefix="ucxtls-script-")
        atexit.register(shutil.rmtree, scratch, True)
        job = os.path.join(scratch, "job")
        os.makedirs(job)
        with open(os.path.join(job, "train.py"), "w") as f:
            f.write(R.REPORT_PY)
        _job.append((scratch, job))
    return _job[0]


@case("launch scripts as printed")
def launch_scripts_case(t):
    scratch, job = installed(t)
    launch_scripts(t, job, R.build_other_preload(scratch))


@case("the inference-server recipe as printed, on every node shape")
def inference_server_case(t):
    _, job = installed(t)
    inference_server(t, job)


@case("the inference-server recipe as printed, on every node shape, under RAPIDS' UCX 1.22 wheel", tags=("wheels",))
def inference_server_wheels_case(t):
    # The same recipe and values under UCX 1.22 as PyPI serves it (tests/wheels): RAPIDS'
    # libucx-cu12, whose ucx_info the recipe runs with the wheel's libraries (LD_LIBRARY_PATH).
    build = ucx_build_or_skip(t, "rapids", "inference-server recipe under RAPIDS' UCX 1.22 wheel")
    if build:
        _, job = installed(t)
        with loading(build):
            inference_server(t, job, build.ucx_info, " (UCX 1.22, RAPIDS' wheel)")


# The tools scripts/run.sh uses before it builds; cmake and the C++ compiler are left out.
RUN_SH_TOOLS = ("bash", "sh", "dirname", "find", "head", "id", "nproc", "env")


def run_sh_without_cmake(t, as_user, apt_get):
    """scripts/run.sh on a machine without cmake (a PATH of RUN_SH_TOOLS and apt_get), with a build
    directory that does not exist yet: (its exit status, stdout, stderr)."""
    scratch = tempfile.mkdtemp(prefix="ucxtls-runsh-")
    atexit.register(shutil.rmtree, scratch, True)
    os.chmod(scratch, 0o755)
    bindir = os.path.join(scratch, "bin")
    os.makedirs(bindir)
    for tool in RUN_SH_TOOLS:
        os.symlink(shutil.which(tool), os.path.join(bindir, tool))
    if apt_get:
        if os.path.isabs(apt_get):
            os.symlink(apt_get, os.path.join(bindir, "apt-get"))
        else:  # a recording stand-in: running the real one would change this machine
            with open(os.path.join(bindir, "apt-get"), "w") as f:
                f.write("#!/bin/sh\necho \"$*\" >> %s/apt-get.log\n" % scratch)
            os.chmod(os.path.join(bindir, "apt-get"), 0o755)
    argv = [os.path.join(R.SOURCE_DIR, "scripts", "run.sh"), "true"]
    if as_user:
        argv = [shutil.which("setpriv"), "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + argv
    env = {"PATH": bindir, "RUN_BUILD_DIR": os.path.join(scratch, "build"), "HOME": scratch}
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    log = os.path.join(scratch, "apt-get.log")
    calls = open(log).read().splitlines() if os.path.exists(log) else []
    return p.returncode, p.stdout.decode(), p.stderr.decode(), calls


@case("scripts/run.sh without cmake: as a user one line saying what to install, exit 2; as root it installs")
def run_sh_without_cmake_case(t):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        t.skip("run.sh without cmake", "needs root and setpriv (to run it as nobody too)")
        return
    line = "run.sh: building needs cmake and a C++17 compiler; install them as root: apt-get install cmake g++ make\n"
    if not skip_closed_to_others(t, "run.sh without cmake, as nobody", os.path.join(R.SOURCE_DIR, "scripts", "run.sh")):
        rc, out, err, _ = run_sh_without_cmake(t, True, shutil.which("apt-get"))
        t.check("as nobody: exit 2, that one line on stderr, nothing on stdout", rc == 2 and err == line and out == "",
                "exit %d\nstdout: %r\nstderr: %r" % (rc, out, err))
        rc, out, err, _ = run_sh_without_cmake(t, True, None)
        t.check("as nobody, no apt-get, dnf or yum: the line names the packages", rc == 2 and out == "" and
                err == "run.sh: building needs cmake and a C++17 compiler; install them as root: cmake, g++ and make "
                "with your package manager\n", "exit %d\nstderr: %r" % (rc, err))
    rc, out, err, calls = run_sh_without_cmake(t, False, "record")
    t.check("as root: apt-get update, then install (never removing) of scripts/build-packages.sh's list (cmake g++ make)",
            calls == ["update -q", "install -y -q --no-remove --no-install-recommends cmake g++ make"], repr(calls) + "\n" + err)
    t.check("... and, the stand-in having installed nothing, the same line, exit 2", rc == 2 and err.endswith(line)
            and err.startswith("run.sh: no cmake or C++ compiler: installing cmake g++ make\n"), "exit %d\nstderr: %r" % (rc, err))


@case("/etc/ld.so.preload lines as printed")
def ld_so_preload_case(t):
    scratch, _ = installed(t)
    ld_so_preload(t, scratch)  # last: every later process of the namespace would load it


if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
