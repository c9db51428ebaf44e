#!/usr/bin/env python3
"""The node hook of docs/containers.md (ucxtls-oci-hook), under a real runtime: Debian's Podman with runc.

The test installs the build with the README's step into a private /opt/ucxtls, makes /etc an
overlay of its own (the machine's /etc is never written), and runs the docs' install steps for
Podman's hooks.d and for a CDI spec as printed. Its images are made by `podman import` of a root file
system the test builds: a glibc base (this machine's ld.so and libc.so.6), dash as /bin/sh, and a C
trainer that hard-codes the CUDA list with setenv(..., 0) (Python's setdefault) and reports what its
process sees. No registry is used.

A replayed GPU node in a container: each device node of a recorded machine (tests/fixtures) is given
with `--device /dev/null:/dev/<node>`, so the container has a real character device at the GPU's
path, listed in config.json's linux.devices as a device plugin's or CDI's node is (the library
checks that a node exists and is read-write; it never opens one), and the machine's /sys/{class,
devices,bus,module} are bound read-only over the container's sysfs, where a real node's sysfs shows
its GPUs and HCAs. /proc/driver/nvidia is not replayed (runc refuses mounts into /proc; the NVIDIA
toolkit adds it with a hook of its own): the library then counts NVIDIA GPUs by their /dev nodes.

Podman runs as this sandbox allows: `--runtime runc --network=none` with explicit rlimits (crun refuses
the cgroup layout; the default rlimits are refused). Every container carries the test's label and is
removed at exit with the images; every podman call is bounded.
"""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import ALL, C, RUN_ID, case, fixture, main  # noqa: E402

TAG = "ucxtls-hooktest-" + RUN_ID
IMAGE_BASE, IMAGE_OWN, IMAGE_LINK_ETC, IMAGE_LINK_LIB = ("localhost/%s:%s" % (TAG, n) for n in (
    "base", "own-preload", "link-etc", "link-lib"))
PODMAN = ["podman", "--runtime", "runc"]
RUN = ["run", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
       "--label", TAG]
HOOKS_D = "/usr/share/containers/oci/hooks.d/ucxtls-hook.json"
TARGET = "/usr/lib/ucxtls-oci-hook/libucxtls.so"
OWN_FILE_LINE = "/opt/img/libimgfile.so"
_state = {}

TRAINER_C = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* The trainer of the motivating failure: it keeps a UCX_TLS it finds, else hard-codes the CUDA list. */
int main(void) {
  setenv("UCX_TLS", "%s", 0);
  char line[4096], file[4096] = "";
  int ucx = 0, imgenv = 0, imgfile = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  while (f && fgets(line, sizeof line, f)) {
    ucx |= strstr(line, "/libucxtls.so") != NULL;
    imgenv |= strstr(line, "/libimgenv.so") != NULL;
    imgfile |= strstr(line, "/libimgfile.so") != NULL;
  }
  FILE *p = fopen("/etc/ld.so.preload", "r");
  size_t n = p ? fread(file, 1, sizeof file - 1, p) : 0;
  file[n] = 0;
  for (char *c = file; *c; c++) if (*c == '\n') *c = ';'; else if (*c == ' ') *c = '+';
  const char *lp = getenv("LD_PRELOAD");
  printf("TRAINER ucx_tls=%%s mapped=%%d imgenv=%%d imgfile=%%d ld_preload=%%s preload_file=%%s\n", getenv("UCX_TLS"),
         ucx, imgenv, imgfile, lp ? lp : "<unset>", p ? file : "<absent>");
  return 0;
}
""" % C

CTOR_C = r"""#include <unistd.h>
__attribute__((constructor)) static void ran(void) { write(2, "CTOR %s\n", %d); }
"""


def podman(args, timeout=120):
    return subprocess.run(PODMAN + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          universal_newlines=True)


def cleanup():
    ids = podman(["ps", "-aq", "--filter", "label=" + TAG]).stdout.split()
    if ids:
        podman(["rm", "-f"] + ids)
    for image in (IMAGE_BASE, IMAGE_OWN, IMAGE_LINK_ETC, IMAGE_LINK_LIB):
        podman(["rmi", "-f", image])


def cc(args):
    subprocess.run([shutil.which("cc") or "gcc"] + args, check=True, timeout=120)


def make_image(t, d, name, extra_files=(), changes=()):
    """A glibc image: ld.so and libc.so.6 of this machine, dash as /bin/sh, /usr/bin/trainer, plus
    extra_files [(path in image, bytes or ("symlink", target))]; imported as `name`."""
    root = os.path.join(d, "rootfs-" + name.rsplit(":", 1)[1])
    for sub in ("bin", "etc", "lib64", "lib/x86_64-linux-gnu", "usr/bin", "usr/lib", "tmp", "root"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    shutil.copy("/bin/dash", os.path.join(root, "bin/sh"))
    shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(root, "lib64"))
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(root, "lib/x86_64-linux-gnu"))
    shutil.copy(os.path.join(d, "trainer"), os.path.join(root, "usr/bin/trainer"))
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\n")
    for path, content in extra_files:
        full = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if isinstance(content, tuple):
            os.symlink(content[1], full)
        else:
            with open(full, "wb") as f:
                f.write(content)
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
    args = ["import"]
    for c in changes:
        args += ["--change", c]
    p = subprocess.run(PODMAN + args + ["-", name], stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    tar.wait()
    return t.check("podman import of the test's root file system as %s" % name, p.returncode == 0, p.stdout.decode())


def setup(t):
    """Once per process: Podman usable (else SKIP), the README's install, /etc an overlay, the images."""
    if "setup" in _state:
        if not _state["setup"]:
            if _state.get("skipped"):  # every later case says the same SKIP, not "ran no check"
                t.skip("the node hook under Podman", _state["skipped"])
            t.exit()
        return
    _state["setup"] = False
    missing = [p for p in ("podman", "runc", "tar") if not shutil.which(p)]
    if not (shutil.which("cc") or shutil.which("gcc")):
        missing.append("cc")
    if missing:
        _state["skipped"] = ("%s not installed (Debian podman, runc; scripts/test.sh installs them)"
                             % ", ".join(missing))
        t.skip("the node hook under Podman", _state["skipped"])
        t.exit()
    d = tempfile.mkdtemp(prefix="ucxtls-oci-hook-")
    atexit.register(shutil.rmtree, d, True)
    atexit.register(cleanup)
    _state["dir"] = d
    with open(os.path.join(d, "trainer.c"), "w") as f:
        f.write(TRAINER_C)
    cc(["-O1", "-o", os.path.join(d, "trainer"), os.path.join(d, "trainer.c")])
    libs = {}
    for name in ("imgenv", "imgfile"):
        src = os.path.join(d, "lib%s.c" % name)
        with open(src, "w") as f:
            f.write(CTOR_C % (name, len("CTOR %s\n" % name)))
        cc(["-shared", "-fPIC", "-o", os.path.join(d, "lib%s.so" % name), src])
        with open(os.path.join(d, "lib%s.so" % name), "rb") as f:
            libs[name] = f.read()
    if not make_image(t, d, IMAGE_BASE):
        t.exit()
    # A bare container first: where Podman cannot run here (no namespaces, cgroups refused), SKIP.
    p = podman(RUN + [IMAGE_BASE, "/bin/sh", "-c", "echo up"])
    if p.returncode != 0 or p.stdout != "up\n":
        _state["skipped"] = "podman cannot run a container here: " + (p.stderr.strip() or p.stdout)
        t.skip("the node hook under Podman", _state["skipped"])
        t.exit()
    own = [("/opt/img/libimgenv.so", libs["imgenv"]), (OWN_FILE_LINE, libs["imgfile"]),
           ("/etc/ld.so.preload", (OWN_FILE_LINE + "\n").encode())]
    # An image planting symbolic links to host paths where the hook writes (a hostile image).
    victim = os.path.join(d, "host-victim")
    os.makedirs(os.path.join(victim, "dir"))
    with open(os.path.join(victim, "ld.so.preload"), "w") as f:
        f.write("host file\n")
    _state["victim"] = victim
    link_etc = [("/etc/ld.so.preload", ("symlink", os.path.join(victim, "ld.so.preload")))]
    link_lib = [("/usr/lib/ucxtls-oci-hook", ("symlink", os.path.join(victim, "dir")))]
    if not (make_image(t, d, IMAGE_OWN, own, ["ENV LD_PRELOAD=/opt/img/libimgenv.so"])
            and make_image(t, d, IMAGE_LINK_ETC, link_etc) and make_image(t, d, IMAGE_LINK_LIB, link_lib)):
        t.exit()
    if not R.install_opt(t):
        t.exit()
    R.overlay_etc(d)  # /etc/cdi
    overlay(d, "/usr/share/containers")  # the default hooks.d
    _state["empty_hooks"] = os.path.join(d, "no-hooks.d")
    os.makedirs(_state["empty_hooks"])
    _state["setup"] = True


def overlay(d, path):
    """path of this namespace becomes an overlay whose writes land in d (the machine's is never written)."""
    name = path.strip("/").replace("/", "-")
    upper, work = os.path.join(d, name + "-upper"), os.path.join(d, name + "-work")
    os.makedirs(upper)
    os.makedirs(work)
    subprocess.run(["mount", "-t", "overlay", "ucxtls-oci-hook", "-o", "lowerdir=%s,upperdir=%s,workdir=%s"
                    % (path, upper, work), path], check=True)
    if not R.mounted(path, "overlay"):
        raise SystemExit("launchers: %s is not this namespace's overlay; not writing to it" % path)


def gpu_args(machine, without=()):
    """--device and -v arguments that replay `machine`'s GPU node in a container (module docstring)."""
    root = fixture(machine)
    dev = os.path.join(root, "dev")
    args = []
    for d, _, files in os.walk(dev):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(d, f), dev)
            if rel in ("null", "zero", "tty", "full", "random", "urandom") or rel.startswith(tuple(without)) or \
                    os.path.islink(os.path.join(d, f)):
                continue
            args += ["--device", "/dev/null:/dev/" + rel]
    for sub in ("class", "devices", "bus", "module"):
        if os.path.isdir(os.path.join(root, "sys", sub)):
            args += ["-v", "%s:/sys/%s:ro" % (os.path.join(root, "sys", sub), sub)]
    return args


def trainer(t, what, args, image=IMAGE_BASE, cmd=("/usr/bin/trainer",)):
    """Runs the trainer in a container; returns (report dict, CompletedProcess)."""
    p = podman(RUN + list(args) + [image] + list(cmd))
    rep = {}
    for line in p.stdout.splitlines():
        if line.startswith("TRAINER "):
            rep = dict(kv.partition("=")[::2] for kv in line[8:].split(" "))
    if not rep:
        t.check("%s: the container ran the trainer" % what, False, "rc=%d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    return rep, p


def installed_hook(t):
    """Podman's hooks.d step of docs/containers.md, as printed (into this namespace's /etc)."""
    if _state.get("hooks_d"):
        return True
    for line in R.commands("oci-hook-podman"):
        p = subprocess.run(["/bin/sh", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if not t.check("as printed: %s" % line, p.returncode == 0, p.stdout.decode()):
            return False
    with open(HOOKS_D) as f:
        hook = json.load(f)
    _state["hook_json"] = hook
    _state["hooks_d"] = t.check("the installed JSON names the installed hook, createRuntime", hook["hook"]["path"] ==
                                R.PREFIX + "/libexec/ucxtls/ucxtls-oci-hook" and hook["stages"] == ["createRuntime"],
                                repr(hook))
    return _state["hooks_d"]


def hooked_trainer(t, what, machine, *image):
    """The trainer in a container given `machine`'s GPU devices, with the hook installed: (report,
    process), or (None, None) after the SKIP or failure that ended the setup."""
    setup(t)
    if not installed_hook(t):
        return None, None
    return trainer(t, what, gpu_args(machine), *image)


@case("hooks.d: Podman accepts the installed JSON; a GPU container gets the library and the node's value")
def hooks_d(t):
    rep, p = hooked_trainer(t, "one GPU of eight", "container-one-of-eight")
    if rep is None:
        return
    t.check("a container given GPU 3 of eight and its HCA (container-one-of-eight): the library mapped from %s, "
            "listed in /etc/ld.so.preload, the trainer's own %s (the default writes nothing beside NVIDIA GPUs and rc), "
            "no LD_PRELOAD set" % (TARGET, C),
            rep.get("mapped") == "1" and rep.get("ucx_tls") == C and rep.get("preload_file") == TARGET + ";"
            and rep.get("ld_preload") == "<unset>" and p.stderr == "", p.stdout + p.stderr)
    q = podman(RUN + gpu_args("container-one-of-eight") + [IMAGE_BASE, "/bin/sh", "-c", 'echo "SH ${UCX_TLS-<unset>}"'])
    t.equal("its /bin/sh sees UCX_TLS unset (UCX's own default)", q.stdout, "SH <unset>\n", q.stderr)
    # Podman's own validation of hooks.d is live: a file it rejects stops `podman run`.
    bad = os.path.join(_state["dir"], "bad-hooks.d")
    os.makedirs(bad, exist_ok=True)
    with open(os.path.join(bad, "bad.json"), "w") as f:
        json.dump(dict(_state["hook_json"], stages=["createRuntme"]), f)
    q = podman(["--hooks-dir", bad] + RUN + [IMAGE_BASE, "/bin/sh", "-c", "true"])
    t.check("control: a hooks.d file with a misspelt stage is refused by the same validation (podman run fails)",
            q.returncode != 0 and "createRuntme" in q.stderr, q.stderr)


@case("the CUDA-list trainer on a replayed Intel node gets all (UCX's default, ze_copy in it); without the hook it keeps the CUDA list")
def intel_trainer(t):
    rep, p = hooked_trainer(t, "intel-xe", "intel-xe")
    if rep is None:
        return
    t.check("intel-xe: the trainer's setenv(CUDA list, 0) finds %s, library mapped" % ALL,
            rep.get("ucx_tls") == ALL and rep.get("mapped") == "1", p.stdout + p.stderr)
    rep, p = trainer(t, "intel-xe without the hook", ["--hooks-dir", _state["empty_hooks"]] + gpu_args("intel-xe"))
    t.check("control, no hook (an empty hooks.d): the trainer keeps the CUDA list, no library (the failure)",
            rep.get("ucx_tls") == C and rep.get("mapped") == "0" and rep.get("preload_file") == "<absent>",
            p.stdout + p.stderr)
    rep, p = trainer(t, "read-only root", ["--read-only"] + gpu_args("intel-xe"))
    t.check("--read-only: the library still loads (written before the root is made read-only), %s" % ALL,
            rep.get("ucx_tls") == ALL and rep.get("mapped") == "1" and rep.get("preload_file") == TARGET + ";",
            p.stdout + p.stderr)
    rep, p = trainer(t, "pod env", ["-e", "UCX_TLS=tcp,self"] + gpu_args("intel-xe"))
    t.check("a pod-style -e UCX_TLS=tcp,self is kept (the library loaded, the value not touched)",
            rep.get("ucx_tls") == "tcp,self" and rep.get("mapped") == "1", p.stdout + p.stderr)


@case("an image's own LD_PRELOAD and /etc/ld.so.preload entry are kept; a container without GPU is left as it was")
def image_own(t):
    rep, p = hooked_trainer(t, "own preload", "intel-xe", IMAGE_OWN)
    if rep is None:
        return
    t.check("GPU container of an image with ENV LD_PRELOAD and its own ld.so.preload line: both its libraries "
            "mapped, both constructors ran, LD_PRELOAD unchanged, its line kept first, ours appended, %s" % ALL,
            rep.get("imgenv") == "1" and rep.get("imgfile") == "1" and rep.get("mapped") == "1"
            and rep.get("ld_preload") == "/opt/img/libimgenv.so" and rep.get("ucx_tls") == ALL
            and rep.get("preload_file") == "%s;%s;" % (OWN_FILE_LINE, TARGET)
            and "CTOR imgenv" in p.stderr and "CTOR imgfile" in p.stderr, p.stdout + p.stderr)
    rep, p = trainer(t, "no GPU", gpu_args("intel-xe", without=("dri",)), IMAGE_OWN)
    t.check("the same image given the HCAs but no GPU device node: ld.so.preload as the image has it, no library, "
            "no UCX_TLS from us (the trainer's own list)",
            rep.get("preload_file") == OWN_FILE_LINE + ";" and rep.get("mapped") == "0" and rep.get("ucx_tls") == C
            and rep.get("imgfile") == "1", p.stdout + p.stderr)
    rep, p = trainer(t, "no GPU, base", [], IMAGE_BASE)
    t.check("a container with no devices at all: no /etc/ld.so.preload made", rep.get("preload_file") == "<absent>"
            and rep.get("mapped") == "0", p.stdout + p.stderr)


def read_lines(path):
    """The lines of a file the hook may not have written ([] then)."""
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def hook_variant(t, name, args):
    """A hooks.d of its own holding the installed JSON with extra args."""
    d = os.path.join(_state["dir"], "hooks-" + name)
    os.makedirs(d, exist_ok=True)
    hook = json.loads(json.dumps(_state["hook_json"]))
    hook["hook"]["args"] = hook["hook"]["args"] + args
    with open(os.path.join(d, "ucxtls-hook.json"), "w") as f:
        json.dump(hook, f)
    return ["--hooks-dir", d]


@case("failures never stop a container: a missing library, a hostile image's symbolic links; --strict does")
def failures(t):
    setup(t)
    if not installed_hook(t):
        return
    log = os.path.join(_state["dir"], "hook.log")
    moved = R.OPT_LIB + ".away"
    os.rename(R.OPT_LIB, moved)
    try:
        rep, p = trainer(t, "library missing", gpu_args("intel-xe"))
        t.check("the node's library removed (the JSON left behind): the container runs, no ld.so.preload, no library",
                p.returncode == 0 and rep.get("preload_file") == "<absent>" and rep.get("mapped") == "0", p.stdout + p.stderr)
        rep, p = trainer(t, "library missing, logged", hook_variant(t, "log", ["--log=" + log]) + gpu_args("intel-xe"))
        lines = read_lines(log)
        t.check("with --log: exactly one line, naming the library", p.returncode == 0 and len(lines) == 1
                and R.OPT_LIB in lines[0] and lines[0].startswith("ucxtls-oci-hook: container "), repr(lines))
        p = podman(hook_variant(t, "strict", ["--strict"]) + RUN + gpu_args("intel-xe") + [IMAGE_BASE, "/bin/sh", "-c", "echo ran"])
        t.check("--strict (an administrator's choice): the same failure stops the container, the hook's line in the error",
                p.returncode != 0 and "ran" not in p.stdout and "ucxtls-oci-hook" in p.stderr, p.stdout + p.stderr)
    finally:
        os.rename(moved, R.OPT_LIB)
    victim = _state["victim"]
    for image, planted, named in ((IMAGE_LINK_ETC, "/etc/ld.so.preload -> " + victim + "/ld.so.preload", "ld.so.preload"),
                                  (IMAGE_LINK_LIB, "/usr/lib/ucxtls-oci-hook -> " + victim + "/dir", "/usr/lib/ucxtls-oci-hook")):
        if os.path.exists(log):
            os.unlink(log)
        rep, p = trainer(t, "planted link", hook_variant(t, "log", ["--log=" + log]) + gpu_args("intel-xe"), image)
        with open(os.path.join(victim, "ld.so.preload")) as f:
            host = f.read()
        lines = read_lines(log)
        t.check("an image with %s (a host path): the host's files untouched, nothing written through the link, "
                "the container runs without the library, one line logged naming it" % planted,
                p.returncode == 0 and rep.get("mapped") == "0" and host == "host file\n"
                and os.listdir(os.path.join(victim, "dir")) == [] and sorted(os.listdir(victim)) == ["dir", "ld.so.preload"]
                and len(lines) == 1 and named in lines[0],
                "host file: %r; dir: %r; log: %r\n%s%s" % (host, os.listdir(os.path.join(victim, "dir")), lines, p.stdout,
                                                           p.stderr))


@case("a volume holding l -> /etc, then --tmpfs on its l: Podman's runc puts the tmpfs on /etc; the hook says so")
def mount_through_link(t):
    setup(t)
    if not installed_hook(t):
        return
    log = os.path.join(_state["dir"], "mount-order.log")
    for link, hidden in (("/etc", True), ("/opt", False)):
        vol = tempfile.mkdtemp(prefix="vol-", dir=_state["dir"])
        os.symlink(link, os.path.join(vol, "l"))
        if os.path.exists(log):
            os.unlink(log)
        rep, p = trainer(t, "mount through a link", hook_variant(t, "log", ["--log=" + log]) + gpu_args("intel-xe")
                         + ["-v", vol + ":/mnt", "--tmpfs", "/mnt/l"])
        lines = read_lines(log)
        if hidden:
            t.check("-v DIR:/mnt (DIR/l -> /etc) --tmpfs /mnt/l: the container runs without the library, one line logged "
                    "naming the mount and /etc", p.returncode == 0 and rep.get("mapped") == "0" and len(lines) == 1
                    and "/mnt/l (/etc in the root)" in lines[0], "log %r\n%s%s" % (lines, p.stdout, p.stderr))
        else:
            t.check("control, DIR/l -> /opt: the library mapped, %s, nothing logged" % ALL, p.returncode == 0
                    and rep.get("mapped") == "1" and rep.get("ucx_tls") == ALL and not lines,
                    "log %r\n%s%s" % (lines, p.stdout, p.stderr))


@case("CDI: the installed spec as a CDI device gives the hook to the containers that ask for it")
def cdi(t):
    setup(t)
    for line in R.commands("oci-hook-cdi"):
        p = subprocess.run(["/bin/sh", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if not t.check("as printed: %s" % line, p.returncode == 0, p.stdout.decode()):
            return
    no_hooks_d = ["--hooks-dir", _state["empty_hooks"]]
    rep, p = trainer(t, "CDI", no_hooks_d + ["--device", "ucxtls.io/hook=preload"] + gpu_args("intel-xe"))
    t.check("no hooks.d, --device ucxtls.io/hook=preload with the GPU nodes: the library, %s" % ALL,
            rep.get("mapped") == "1" and rep.get("ucx_tls") == ALL and rep.get("preload_file") == TARGET + ";",
            p.stdout + p.stderr)
    rep, p = trainer(t, "CDI not asked", no_hooks_d + gpu_args("intel-xe"))
    t.check("control: the same container without the CDI device gets no library", rep.get("mapped") == "0"
            and rep.get("preload_file") == "<absent>", p.stdout + p.stderr)


@case("DaemonSet: the manifest's shape, and its install script run twice against a scratch node")
def daemonset(t):
    setup(t)
    try:
        import yaml
    except ImportError:
        t.skip("the DaemonSet manifest", "PyYAML is not installed (Debian python3-yaml)")
        return
    ds = yaml.safe_load(R.block("oci-hook-daemonset"))
    spec = ds["spec"]["template"]["spec"]
    volumes = {v["name"]: v["hostPath"] for v in spec["volumes"] if "hostPath" in v}
    t.check("a DaemonSet with a node selector, a toleration for tainted nodes, and hostPath volumes for the node's /opt "
            "and the default hooks.d", ds["kind"] == "DaemonSet" and spec.get("nodeSelector") and spec.get("tolerations")
            and sorted(v["path"] for v in volumes.values()) == ["/opt", "/usr/share/containers/oci/hooks.d"], repr(spec))
    if not shutil.which("bwrap"):
        t.skip("the DaemonSet's install script", "bubblewrap is not installed (Debian bubblewrap)")
        return
    init = spec["initContainers"][0]
    node = os.path.join(_state["dir"], "node")
    # The init container: the image's /opt/ucxtls (this install), the node's paths as its hostPath mounts.
    argv = ["bwrap", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--ro-bind", R.PREFIX, "/opt/ucxtls"]
    for top in ("bin", "sbin", "lib", "lib64"):
        if os.path.islink("/" + top):
            argv += ["--symlink", os.readlink("/" + top), "/" + top]
        elif os.path.isdir("/" + top):
            argv += ["--ro-bind", "/" + top, "/" + top]
    for m in init["volumeMounts"]:
        host = os.path.join(node, volumes[m["name"]]["path"].lstrip("/"))
        os.makedirs(host, exist_ok=True)
        argv += ["--bind", host, m["mountPath"]]
    for n in (1, 2):  # an install, then an upgrade over it
        p = subprocess.run(argv + init["command"] + init["args"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        t.check("the init container's script, run %d: exit 0" % n, p.returncode == 0, p.stdout.decode())
    hook = "libexec/ucxtls/ucxtls-oci-hook"
    same = subprocess.run(["cmp", os.path.join(node, "opt/ucxtls", hook), os.path.join(R.PREFIX, hook)]).returncode == 0
    with open(os.path.join(node, "usr/share/containers/oci/hooks.d/ucxtls-hook.json")) as f:
        installed = json.load(f)
    with open(os.path.join(R.PREFIX, "share/ucxtls/oci/ucxtls-hook.json")) as f:
        example = json.load(f)
    t.check("the node got /opt/ucxtls with the hook and the library, and the hooks.d JSON naming the hook there",
            same and os.path.isfile(os.path.join(node, "opt/ucxtls/lib/libucxtls.so")) and installed == example and installed["hook"]["path"] == "/opt/ucxtls/" + hook, repr(installed))


TITLE = "the node's OCI hook (ucxtls-oci-hook) under Podman with runc"

if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
