#!/usr/bin/env python3
"""The container recipes of docs/containers.md, run as printed in a container-like namespace.

A container here is a bubblewrap namespace (Debian's bubblewrap) built as a runtime builds one:
this machine's /usr read-only as the image's programs, the image's own /etc (passwd, group, the
loader's cache; no ld.so.preload, no ucx.conf), its own /proc, a /dev of its own with the basic
nodes plus only the device nodes a runtime or device plugin passes (the files of a recorded
machine, tests/fixtures), that machine's /sys (and /proc/driver, as the NVIDIA toolkit mounts its
GPUs' entries), a private /tmp and network. Its environment is only what the recipe sets: no
UCXTLS_SYSROOT, so the library probes the container's own /dev and /sys.

- containerfile: the builder stage's RUN steps as printed (the checkout bound at /src, as `COPY .
  /src` has it; `apt-get` is not run: its packages are checked instead), then the image stage's
  COPY --from and ENV; programs of the image get the value.
- k8s-pod, k8s-pod-volume: the YAML parsed; the pod's command, env and hostPath mount run in a
  container given one GPU of eight and its HCA.
- apptainer, apptainer-lib: each line run by /bin/sh with a stand-in `apptainer` on PATH that
  records its arguments and environment; Apptainer's documented handling (binds; --env and
  APPTAINERENV_ values evaluated once more by its embedded shell) is applied to what it got.
"""
import atexit
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import ALL, SOURCE_DIR, C, UNSET, case, fixture, main  # noqa: E402

IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin"
# The trainer of the motivating failure: it hard-codes the CUDA list with setdefault.
TRAINER = ('import os; os.environ.setdefault("UCX_TLS", "%s"); print("TRAINER " + os.environ["UCX_TLS"])' % C)
_state = {}


def scratch():
    if "scratch" not in _state:
        d = tempfile.mkdtemp(prefix="ucxtls-containers-")
        atexit.register(shutil.rmtree, d, True)
        _state["scratch"] = d
        etc = os.path.join(d, "image-etc")  # the image's own /etc
        os.makedirs(etc)
        with open(os.path.join(etc, "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
        with open(os.path.join(etc, "group"), "w") as f:
            f.write("root:x:0:\n")
        with open(os.path.join(etc, "hostname"), "w") as f:
            f.write("trainer\n")
        if os.path.exists("/etc/ld.so.cache"):  # the image's programs are this machine's: so is its cache
            shutil.copy("/etc/ld.so.cache", etc)
        work = os.path.join(d, "work")
        os.makedirs(work)
        with open(os.path.join(work, "train.py"), "w") as f:
            f.write(R.REPORT_PY)
        _state["etc"], _state["work"] = etc, work
    return _state["scratch"]


def root_binds():
    """/usr read-only, and /bin, /lib, ... as this machine has them (merged-/usr symlinks or dirs)."""
    out = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + top
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def device_nodes(machine, without=()):
    """The device nodes a runtime passes for `machine`: every node of its recorded /dev but the
    basic ones bubblewrap makes, less those under `without`."""
    dev = os.path.join(fixture(machine), "dev")
    out = []
    for d, _, files in os.walk(dev):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), dev)
            if rel in ("null", "zero", "tty", "full", "random", "urandom") or rel.startswith(tuple(without)):
                continue
            out.append(rel)
    return sorted(out)


def container(argv, env, machine, mounts=(), devices=None, cwd="/work"):
    """Runs argv in a container of `machine`; mounts: (host path, container path, read_only).
    Returns CompletedProcess (text)."""
    scratch()
    root = fixture(machine)
    args = ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent"]
    args += root_binds() + ["--ro-bind", _state["etc"], "/etc", "--proc", "/proc", "--dev", "/dev",
                            "--ro-bind", os.path.join(root, "sys"), "/sys", "--tmpfs", "/tmp"]
    if os.path.isdir(os.path.join(root, "proc", "driver")):
        args += ["--ro-bind", os.path.join(root, "proc", "driver"), "/proc/driver"]
    # Device nodes are read-write in a container (UCX and the library check R_OK|W_OK).
    for rel in (device_nodes(machine) if devices is None else devices):
        args += ["--bind", os.path.join(root, "dev", rel), "/dev/" + rel]
    for host, inside, ro in mounts:
        args += ["--ro-bind" if ro else "--bind", host, inside]
    args += ["--bind", _state["work"], "/work", "--chdir", cwd, "--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return subprocess.run(args + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          universal_newlines=True)


def need_bwrap(t):
    if not shutil.which("bwrap"):
        t.skip("the container recipes", "bubblewrap is not installed (Debian bubblewrap; scripts/test.sh installs it)")
        t.exit()
    p = subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        t.skip("the container recipes", "bubblewrap cannot make a namespace here: " + p.stdout.decode().strip())
        t.exit()


# --- containerfile ------------------------------------------------------------------------------

def containerfile_stages(text):
    """[{"name", "base", "steps": [(INSTRUCTION, args)]}] of a Containerfile: comments dropped, `\\`
    continuations joined."""
    lines, cur = [], ""
    for raw in text.splitlines():
        if not cur and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        cur += raw.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        lines.append(cur.strip())
        cur = ""
    stages = []
    for line in lines:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            m = re.match(r"^(\S+)(?:\s+AS\s+(\S+))?$", rest.strip(), re.I)
            stages.append({"base": m.group(1), "name": m.group(2), "steps": []})
        else:
            stages[-1]["steps"].append((word, rest.strip()))
    return stages


def docker_expand(value, env):
    """Docker's ENV substitution: $NAME, ${NAME}, ${NAME:+word} and ${NAME:-word} (word itself
    substituted), with the shell's meaning, as the Dockerfile reference gives them."""
    def one(m):
        name = m.group(1) or m.group(2) or m.group(3)
        op, word = m.group(4), m.group(5)
        have = env.get(name, "")
        if op == ":+":
            return docker_expand(word, env) if have else ""
        if op == ":-":
            return have or docker_expand(word, env)
        return have
    return re.sub(r"\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\}|\{([A-Za-z_]\w*)(:[+-])([^}]*)\})", one, value)


def shell_expand(value, env):
    """value as /bin/sh expands it inside double quotes, in env."""
    p = subprocess.run(["/bin/sh", "-c", 'eval "printf %s \\"$1\\""', "sh", value], env=env, stdout=subprocess.PIPE,
                       check=True)
    return p.stdout.decode()


# The build's optional dependencies: where the stage's apt-get line does not name one, its files
# are hidden from the builder (this machine has it; a fresh debian:12 would not).
OPTIONAL_BUILD_PACKAGES = {"nlohmann-json3-dev": ("/usr/include/nlohmann", "/usr/share/cmake/nlohmann_json")}


def build_stage(t, stage, out):
    """Runs the stage's RUN lines as printed in a builder namespace (this machine's programs, its
    /etc, the checkout at /src; the optional build packages its apt-get line does not name hidden),
    with /opt/ucxtls kept in out. Returns the builder's /opt/ucxtls."""
    args = {}
    hidden = []
    opt, build = os.path.join(out, "opt-ucxtls"), os.path.join(out, "build")
    os.makedirs(opt)
    os.makedirs(build)
    for word, rest in stage["steps"]:
        if word == "ARG":
            name, _, default = rest.partition("=")
            args[name] = "2" if name == "JOBS" else default  # docker build --build-arg JOBS=2
        elif word == "COPY":
            t.equal("the builder copies the checkout (the build context) to /src", rest, ". /src")
        elif word == "RUN" and rest.startswith("apt-get"):
            wanted = rest.split("--no-install-recommends", 1)[-1].split()
            missing = [p for p in wanted if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], stdout=subprocess.PIPE,
                                                           stderr=subprocess.DEVNULL).stdout != b"install ok installed"]
            t.check("RUN %s: not run (no registry here); its packages %s are installed" % (rest[:40] + "...", wanted),
                    wanted and not missing, repr(missing))
            for pkg, dirs in OPTIONAL_BUILD_PACKAGES.items():
                if pkg not in wanted:
                    hidden += [a for d in dirs if os.path.isdir(d) for a in ("--tmpfs", d)]
        elif word == "RUN":
            env = dict(args, PATH=IMAGE_PATH, HOME="/root")
            argv = ["bwrap", "--die-with-parent"] + root_binds() + [
                "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/root",
                "--ro-bind", SOURCE_DIR, "/src", "--bind", build, "/build", "--bind", opt, "/opt/ucxtls"] + hidden + ["--clearenv"]
            for k, v in env.items():
                argv += ["--setenv", k, v]
            p = subprocess.run(argv + ["/bin/sh", "-c", rest], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=900)
            if not t.check("RUN %s ... (as printed, JOBS=2): exit 0" % rest[:60], p.returncode == 0,
                           p.stdout.decode(errors="replace")[-3000:]):
                t.exit()
        else:
            t.check("builder instruction %s is one the test knows" % word, False, rest)
    return opt


def image_stage(t, stage, built, base_env):
    """(mounts, env) of the image: each COPY --from a layer, each ENV in the image's environment."""
    mounts, env = [], dict(base_env)
    for word, rest in stage["steps"]:
        m = re.match(r"^--from=(\S+)\s+(\S+)\s+(\S+)$", rest) if word == "COPY" else None
        if m and m.group(1) in built:
            t.equal("COPY --from=%s: the builder's %s" % (m.group(1), m.group(2)), m.group(2), "/opt/ucxtls")
            mounts.append((built[m.group(1)], m.group(3), True))
        elif word == "ENV":
            name, _, value = rest.partition("=")
            env[name] = docker_expand(value, env)
        else:
            t.check("image instruction %s %s is one the test knows" % (word, rest), False)
    return mounts, env


@case("containerfile: built as printed, the image's programs get the value")
def containerfile(t):
    need_bwrap(t)
    text = R.block("containerfile")
    stages = containerfile_stages(text)
    if not t.check("two stages: the builder, then the image FROM your base", len(stages) == 2 and stages[0]["name"],
                   repr(stages)):
        return
    built = {stages[0]["name"]: build_stage(t, stages[0], os.path.join(scratch(), "builder"))}
    lib = "/opt/ucxtls/lib/libucxtls.so"
    t.check("the builder installed the library, the command and the man page under /opt/ucxtls",
            all(os.path.exists(os.path.join(built[stages[0]["name"]], p))
                for p in ("lib/libucxtls.so", "bin/ucxtls", "share/man/man1/ucxtls.1")))
    t.check("... and the node hook with its JSON, which the DaemonSet's init script copies (its packages named)",
            all(os.path.exists(os.path.join(built[stages[0]["name"]], p))
                for p in ("libexec/ucxtls/ucxtls-oci-hook", "share/ucxtls/oci/ucxtls-hook.json")))
    base = {"PATH": IMAGE_PATH, "HOME": "/root"}
    mounts, env = image_stage(t, stages[1], built, base)
    t.equal("the image's ENV: LD_PRELOAD is the layer's library", env.get("LD_PRELOAD"), lib)
    report = 'printf "%s|" "${UCX_TLS-<unset>}"; grep -q /libucxtls.so /proc/$$/maps && echo mapped || echo not-mapped'
    p = container(["/bin/sh", "-c", report], env, "intel-xe", mounts)
    t.equal("the image on the Intel machine: /bin/sh gets all (the default there), the library mapped, nothing on stderr",
            (p.stdout, p.stderr), ("%s|mapped\n" % ALL, ""))
    p = container(["python3", "-c", TRAINER], env, "intel-xe", mounts)
    t.equal("the image on the Intel machine: the trainer's setdefault(CUDA list) finds all (UCX's default)",
            p.stdout, "TRAINER %s\n" % ALL, p.stderr)
    p = container(["python3", "-c", TRAINER], base, "intel-xe", mounts)
    t.equal("the same image without the ENV line: the trainer keeps the CUDA list (the failure)",
            p.stdout, "TRAINER %s\n" % C, p.stderr)
    other = R.build_other_preload(scratch())
    if other:
        env2 = image_stage(t, stages[1], built, dict(base, LD_PRELOAD="/opt/other/libother-preload.so"))[1]
        mounts2 = mounts + [(os.path.dirname(other), "/opt/other", True)]
        p = container(["/bin/sh", "-c", R.REPORT_SH], env2, "intel-xe", mounts2)
        r = R.reports(p.stdout).get("local")
        t.check("a base image's own LD_PRELOAD stays first, the library after it: both mapped, all (the default there)",
                env2.get("LD_PRELOAD") == "/opt/other/libother-preload.so:" + lib and r and r["loaded"] and r["other"]
                and r["shell"] == "%s|%s" % (ALL, ALL), p.stdout + p.stderr + repr(env2))
    # The container's own /dev decides: without the GPU nodes it is a node without GPUs, where the
    # library leaves UCX_TLS unset (docs/how-it-decides.md); explain in the same container agrees.
    nodes = device_nodes("intel-xe", without=("dri",))
    p = container(["/bin/sh", "-c", report], env, "intel-xe", mounts, devices=nodes)
    q = container(["/opt/ucxtls/bin/ucxtls", "explain", "--json"], env, "intel-xe", mounts, devices=nodes)
    try:
        j = json.loads(q.stdout)
    except ValueError:
        j = {}
    t.check("a container of the image given no GPU device (%s): the library mapped, no UCX_TLS (family none, "
            "as explain says there), nothing on stderr" % ", ".join(nodes),
            p.stdout == "<unset>|mapped\n" and p.stderr == "" and j.get("family") == "none" and j.get("value") is None,
            p.stdout + p.stderr + q.stdout)
    p = container(["/opt/ucxtls/bin/ucxtls", "explain", "--json"], env, "intel-xe", mounts)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        j = {}
    t.check("the layer's ucxtls explain --json runs in the image: set, ze, all",
            (j.get("action"), j.get("family"), j.get("value")) == ("set", "ze", ALL), p.stdout + p.stderr)


# --- Kubernetes -------------------------------------------------------------------------------

def pod_case(t, name):
    need_bwrap(t)
    try:
        import yaml
    except ImportError:
        t.skip("the pod spec %s" % name, "PyYAML is not installed (Debian python3-yaml)")
        return
    pod = yaml.safe_load(R.block(name))
    spec = pod["spec"]
    c = spec["containers"][0]
    env = {e["name"]: e["value"] for e in c.get("env", [])}
    limits = c.get("resources", {}).get("limits", {})
    t.check("%s: a Pod whose container sets LD_PRELOAD and no UCX_TLS" % name,
            pod.get("kind") == "Pod" and "LD_PRELOAD" in env and "UCX_TLS" not in env, repr(env))
    t.check("%s: its limits ask for a GPU and an RDMA device" % name,
            "nvidia.com/gpu" in limits and any(k.startswith("rdma/") for k in limits), repr(limits))
    t.check("%s: no $(NAME) in env (Kubernetes would expand it)" % name, not any("$(" in v for v in env.values()))
    # The library: from the image (the containerfile's layer, here the README's install in /opt/ucxtls)
    # or from the node through the hostPath volume.
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = []
    for m in c.get("volumeMounts", []):
        host = volumes[m["name"]]["hostPath"]["path"]
        t.check("%s: the volume %s is the node's %s, mounted read-only" % (name, m["name"], host),
                m.get("readOnly") is True and os.path.isdir(host))
        mounts.append((host, m["mountPath"], True))
    if not mounts:
        mounts.append((R.PREFIX, "/opt/ucxtls", True))  # in the image
    t.check("%s: LD_PRELOAD names a file of the mounted library" % name,
            any(env["LD_PRELOAD"].startswith(inside + "/") for _, inside, _ in mounts), repr((env, mounts)))
    # As the kubelet starts it: the image's PATH, then the pod's env; the command as given.
    cenv = dict({"PATH": IMAGE_PATH, "HOME": "/root"}, **env)
    p = container(c["command"] + c.get("args", []), cenv, "container-one-of-eight", mounts)
    r = R.reports(p.stdout).get("local")
    # NVIDIA GPUs beside an rc device: the default leaves UCX_TLS unset (UCX's own default stands).
    t.check("%s: on a node of eight GPUs and eight HCAs, the pod given GPU 3 and uverbs3: library mapped, UCX_TLS "
            "unset (the default there)" % name, p.returncode == 0 and r and r["loaded"] and r["shell"] == "%s|%s" % (UNSET, UNSET),
            p.stdout + p.stderr)


def installed(t):
    """The README's install into the namespace's /opt/ucxtls, once per process (the node's install
    for the hostPath volume and Apptainer's bind; the same files as the containerfile's layer)."""
    if "installed" not in _state:
        if not R.install_opt(t):
            t.exit()
        _state["installed"] = True


@case("k8s-pod: the library from the image")
def k8s_pod(t):
    installed(t)
    pod_case(t, "k8s-pod")


@case("k8s-pod-volume: the library from a hostPath volume")
def k8s_pod_volume(t):
    installed(t)
    pod_case(t, "k8s-pod-volume")


# --- Apptainer --------------------------------------------------------------------------------

# A stand-in for apptainer: records its arguments and environment, one JSON object per call.
STUB = """import json, os, sys
with open(os.environ["APPTAINER_RECORD"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}) + "\\n")
"""


def apptainer_eval(value):
    """Apptainer's one evaluation of an environment value in the container (its embedded shell; its
    docs: "a single step of shell evaluation happens in the container context"), made by /bin/sh
    in an environment without $LIB, as the container's has none."""
    return shell_expand(value, {"PATH": IMAGE_PATH})


def apptainer_run(t, line, record):
    """(binds, env, command) of the `apptainer exec` the line ran."""
    with open(record) as f:
        calls = [json.loads(l) for l in f if l.strip()]
    if not t.check("%s: runs apptainer once" % line[:60], len(calls) == 1, repr(calls)):
        return None
    argv, host_env = calls[0]["argv"], calls[0]["env"]
    if argv[:1] != ["exec"]:
        t.check("%s: apptainer exec" % line[:60], False, repr(argv))
        return None
    binds, env, i = [], {}, 1
    while i < len(argv) and argv[i].startswith("-"):
        opt, eq, val = argv[i].partition("=")
        if opt in ("--bind", "-B", "--env"):
            if not eq:
                i, val = i + 1, argv[i + 1]
            if opt == "--env":
                for item in val.split(","):
                    k, _, v = item.partition("=")
                    env[k] = v
            else:
                for spec in val.split(","):
                    parts = spec.split(":")
                    binds.append((parts[0], parts[1] if len(parts) > 1 else parts[0], "ro" in parts[2:]))
        elif opt != "--nv":
            t.check("%s: option %s is one the test knows" % (line[:60], opt), False)
        i += 1
    image, command = argv[i], argv[i + 1:]
    for k, v in host_env.items():
        if k.startswith("APPTAINERENV_"):
            env.setdefault(k[len("APPTAINERENV_"):], v)
    t.check("%s: the image and the command" % line[:60], image == "image.sif" and command == ["python3", "train.py"],
            repr(argv))
    return binds, {k: apptainer_eval(v) for k, v in env.items()}, command


def apptainer_case(t, name, want_preload, layout):
    need_bwrap(t)
    installed(t)
    for d in layout:  # the $LIB layout of install.md, in the namespace's /opt
        os.makedirs(os.path.join(R.PREFIX, d), exist_ok=True)
        shutil.copy(R.OPT_LIB, os.path.join(R.PREFIX, d, "libucxtls.so"))
    stub_dir = os.path.join(scratch(), "stub-" + name)
    os.makedirs(stub_dir)
    R.write_script(os.path.join(stub_dir, "apptainer"), STUB, shebang="#!/usr/bin/env python3")
    for n, line in enumerate(R.commands(name)):
        record = os.path.join(stub_dir, "record-%d" % n)
        p = subprocess.run(["/bin/sh", "-c", line], env={"PATH": stub_dir + ":" + IMAGE_PATH, "APPTAINER_RECORD": record,
                                                          "HOME": "/root"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        got = apptainer_run(t, line, record) if p.returncode == 0 else None
        if not got:
            t.check("%s: ran" % line, False, p.stdout.decode())
            continue
        binds, env, command = got
        t.equal("%s: LD_PRELOAD in the container after Apptainer's evaluation" % line, env.get("LD_PRELOAD"),
                want_preload)
        cenv = dict({"PATH": IMAGE_PATH, "HOME": "/root"}, **env)
        q = container(["/bin/sh", "-c", R.REPORT_SH + 'echo "MAPPED $(grep -o "/[^ ]*/libucxtls.so" /proc/$$/maps | sort -u)"'],
                      cenv, "container-one-of-eight", binds)
        r = R.reports(q.stdout).get("local")
        mapped = [l[7:] for l in q.stdout.splitlines() if l.startswith("MAPPED ")]
        t.check("%s: in the container on the CUDA machine: UCX_TLS unset (the default there), library mapped from %s, "
                "nothing on stderr" % (line[:70], mapped), r and r["loaded"] and r["shell"] == "%s|%s" % (UNSET, UNSET)
                and q.stderr == "", q.stdout + q.stderr)
        q = container(command, cenv, "container-one-of-eight", binds)
        r = R.reports(q.stdout).get("local")
        t.check("%s: python3 train.py sees UCX_TLS unset, the library mapped" % line[:70],
                r and r["loaded"] and r["shell"] == "%s|%s" % (UNSET, UNSET), q.stdout + q.stderr)


@case("apptainer: --env and APPTAINERENV_ with a bind mount")
def apptainer(t):
    apptainer_case(t, "apptainer", R.OPT_LIB, ())


@case("apptainer-lib: the escaped $LIB form")
def apptainer_lib(t):
    apptainer_case(t, "apptainer-lib", R.PREFIX + "/$LIB/libucxtls.so", ("lib/x86_64-linux-gnu", "lib64"))
    # The pitfall the docs name: without the backslash the container's evaluation empties $LIB.
    t.equal("without the backslash, Apptainer's evaluation leaves %s" % (R.PREFIX + "//libucxtls.so"),
            apptainer_eval(R.PREFIX + "/$LIB/libucxtls.so"), R.PREFIX + "//libucxtls.so")


TITLE = "container recipes of docs/containers.md, in a container-like namespace"

if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
