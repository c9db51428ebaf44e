"""Bundles for the node hook's tests (ucxtls-oci-hook), run as a runtime runs it.

A Container is a bundle: config.json, and a root file system that is an overlay mounted for it
(lower: a glibc image of this machine's ld.so, libc.so.6 and dash, plus the files the case plants;
upper: the container's writable layer). Its run() starts the built hook as root with the OCI state
on its stdin, as runc does at createRuntime; runc_run() starts the bundle under runc itself.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile

import recipes  # noqa: F401  (first: it puts harness.py on the path)
from harness import BUILD_DIR, LIB, RUN_ID  # noqa: E402

HOOK = os.path.join(BUILD_DIR, "ucxtls-oci-hook")
TARGET = "/usr/lib/ucxtls-oci-hook/libucxtls.so"
PRELOAD = "/etc/ld.so.preload"
SCRATCH = tempfile.mkdtemp(prefix="ucxtls-hook-inputs-")
GPU = [{"path": "/dev/dri/renderD128", "type": "c", "major": 226, "minor": 128}]
_count = [0]


def plant(root, path, what):
    """what: bytes (a file), ("owned", bytes, uid, gid, mode), ("symlink", target), ("chr", major, minor),
    ("fifo",), ("dir",)."""
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if isinstance(what, bytes):
        with open(full, "wb") as f:
            f.write(what)
    elif what[0] == "owned":
        with open(full, "wb") as f:
            f.write(what[1])
        os.chown(full, what[2], what[3])
        os.chmod(full, what[4])
    elif what[0] == "symlink":
        os.symlink(what[1], full)
    elif what[0] == "chr":
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(what[1], what[2]))
    elif what[0] == "fifo":
        os.mkfifo(full)
    else:
        os.makedirs(full, exist_ok=True)


class Container:
    """A bundle whose rootfs is an overlay of its own (overlay=False: a plain host directory)."""

    def __init__(self, files=(), mounts=(), overlay=True, config=None, env=("PATH=/bin",), masked=None):
        _count[0] += 1
        self.dir = d = os.path.join(SCRATCH, "c%d" % _count[0])
        self.bundle = os.path.join(d, "bundle")
        lower = os.path.join(d, "lower")
        for sub in ("bin", "etc", "lib64", "lib/x86_64-linux-gnu", "usr/lib"):
            os.makedirs(os.path.join(lower, sub))
        shutil.copy("/bin/dash", os.path.join(lower, "bin/sh"))
        shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(lower, "lib64"))
        shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(lower, "lib/x86_64-linux-gnu"))
        for path, what in files:
            plant(lower, path, what)
        self.root = os.path.join(self.bundle, "rootfs")
        os.makedirs(self.root)
        if overlay:
            for sub in ("upper", "work"):
                os.makedirs(os.path.join(d, sub))
            subprocess.run(["mount", "-t", "overlay", "ucxtls-hook-inputs", "-o", "lowerdir=%s,upperdir=%s/upper,workdir=%s/work"
                            % (lower, d, d), self.root], check=True)
        else:
            os.rmdir(self.root)
            os.rename(lower, self.root)
        # A mount: its destination (a read-only bind of /tmp), or the whole config.json entry.
        spec = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"env": list(env)},
                "linux": {"devices": GPU}, "mounts": [m if isinstance(m, dict) else {
                    "destination": m, "type": "bind", "source": "/tmp", "options": ["rbind", "ro"]} for m in mounts]}
        if masked is not None:
            spec["linux"]["maskedPaths"] = masked
        with open(os.path.join(self.bundle, "config.json"), "w") as f:
            f.write(config if config is not None else json.dumps(spec))
        self.state = json.dumps({"ociVersion": "1.0.2", "id": "inputs%d" % _count[0], "status": "creating", "pid": 1,
                                 "bundle": self.bundle})

    def run(self, args=(), prefix=(), umask=None, timeout=15):
        """The hook as runc runs it; a hook that does not finish in `timeout` s is killed (rc None)."""
        if not os.path.exists(HOOK):
            raise SystemExit("FAIL %s was not built (nlohmann-json missing? Debian nlohmann-json3-dev)" % HOOK)
        argv = list(prefix) + [HOOK, "--library=" + LIB] + list(args)
        pre = (lambda: os.umask(umask)) if umask is not None else None
        try:
            return subprocess.run(argv, input=self.state, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                                  universal_newlines=True, preexec_fn=pre)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(argv, None, e.stdout or "", "hook killed after %ds" % timeout)

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def read(self, p):
        try:
            with open(self.path(p), "rb") as f:
                return f.read()
        except OSError:
            return None


def one_line(p, *words):
    """The hook exited 0 with exactly one line on stderr holding every word, nothing on stdout."""
    lines = p.stderr.splitlines()
    return p.returncode == 0 and p.stdout == "" and len(lines) == 1 and lines[0].startswith("ucxtls-oci-hook: container ") \
        and all(w in lines[0] for w in words)


def shown(p):
    return "rc=%s\nstdout: %r\nstderr: %s" % (p.returncode, p.stdout, p.stderr)


def ldso_names(text):
    """The names this machine's ld.so preloads from an /etc/ld.so.preload holding `text`."""
    f = os.path.join(SCRATCH, "ld.so.preload.sample")
    with open(f, "wb") as out:
        out.write(text)
    p = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--bind", f, PRELOAD, "/bin/true"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    return re.findall(r"object '(.*?)' from /etc/ld.so.preload cannot be preloaded", p.stderr.decode(errors="replace"))



def host_dir(files):
    """A host directory holding `files` (plant's forms), for a bind mount's source."""
    _count[0] += 1
    d = os.path.join(SCRATCH, "host%d" % _count[0])
    os.makedirs(d)
    for path, what in files:
        plant(d, path, what)
    return d


def bind(dest, src, recursive=True):
    return {"destination": dest, "type": "bind", "source": src, "options": ["rbind" if recursive else "bind", "rw"]}


def tmpfs(dest, *options):
    return {"destination": dest, "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"] + list(options)}


def written(c, p):
    return c.read(PRELOAD) == (TARGET + "\n").encode() and c.read(TARGET) is not None and p.stderr == ""


def nothing_written(c, p, *words):
    return c.read(PRELOAD) is None and c.read(TARGET) is None and one_line(p, *words)


MAPPED_SH = 'while read l; do case "$l" in *libucxtls.so*) echo MAPPED; break;; esac; done < /proc/self/maps; ' \
    '[ -e /etc/ld.so.preload ] && echo PRELOAD || echo NOPRELOAD'


def runc_run(c, script, user=None, umask=None, mounts=(), env=(), hook_args=()):
    """`runc run` of c's root (runc spec's config: its mounts, then `mounts`) with the hook at
    createRuntime, running `script` with /bin/sh."""
    subprocess.run(["runc", "spec"], cwd=c.dir, check=True)
    with open(os.path.join(c.dir, "config.json")) as f:
        spec = json.load(f)
    os.unlink(os.path.join(c.dir, "config.json"))
    spec["root"] = {"path": c.root, "readonly": False}
    spec["process"].update(args=["/bin/sh", "-c", script], terminal=False)
    spec["process"]["env"] += list(env)
    if user:
        spec["process"]["user"] = user
    spec["mounts"] += list(mounts)
    spec["linux"]["devices"] = [dict(GPU[0], major=1, minor=3, fileMode=0o666, uid=0, gid=0)]
    spec["hooks"] = {"createRuntime": [{"path": HOOK, "args": [HOOK, "--library=" + LIB] + list(hook_args)}]}
    with open(os.path.join(c.bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    name = "ucxtls-hook-%s-%d" % (RUN_ID, _count[0])
    pre = (lambda: os.umask(umask)) if umask is not None else None
    try:
        return subprocess.run(["runc", "run", "--bundle", c.bundle, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60, preexec_fn=pre)
    finally:
        subprocess.run(["runc", "delete", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_log(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []
