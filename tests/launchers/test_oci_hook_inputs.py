#!/usr/bin/env python3
"""The node hook (ucxtls-oci-hook) against hostile images and inputs, run as a runtime runs it.

Each case builds a bundle: config.json, and a root file system that is an overlay mounted for it
(lower: a glibc image of this machine's ld.so, libc.so.6 and dash, plus the files the case plants;
upper: the container's writable layer), then runs the built hook as root with the OCI state on its
stdin, as runc does at createRuntime. What the hook did is read back from the layer; where ld.so's
reading of /etc/ld.so.preload matters, this machine's ld.so reads the file (bubblewrap binds it over
/etc/ld.so.preload, names that exist nowhere, so ld.so names each one it tries). The cases tagged
podman run the hook under Podman with runc (test_oci_hook.py's images and install).
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import BUILD_DIR, LIB, case, main  # noqa: E402

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


@case("a device node planted as /etc/ld.so.preload is never opened nor renamed over (1:3, and ptmx 5:2)")
def device_nodes(t):
    tracing = shutil.which("strace")
    if not tracing:
        t.skip("the hook's system calls", "strace is not installed (Debian strace)")
    for major, minor in ((1, 3), (5, 2)):
        c = Container([(PRELOAD, ("chr", major, minor))])
        log = os.path.join(c.dir, "strace.log")
        p = c.run(prefix=["strace", "-f", "-qq", "-e", "trace=open,openat,rename,renameat,renameat2", "-o", log] if tracing else [])
        st = os.lstat(c.path(PRELOAD))
        t.check("char device %d:%d as /etc/ld.so.preload: still that node, no copy written, one line" % (major, minor),
                stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == major and os.minor(st.st_rdev) == minor
                and c.read(TARGET) is None and one_line(p, PRELOAD, "not a regular file"), shown(p))
        if tracing:
            with open(log) as f:
                # The image's file, below its /etc (the hook's own ld.so opens the node's /etc/ld.so.preload).
                calls = [l for l in f if "ld.so.preload" in l and '(AT_FDCWD, "/etc/ld.so.preload"' not in l]
            opened = [l for l in calls if re.search(r"\bopen(at)?\(", l) and "O_PATH" not in l]
            renamed = [l for l in calls if "rename" in l]
            t.check("strace: ld.so.preload only ever opened O_PATH, never renamed over",
                    not opened and not renamed and any("O_PATH" in l for l in calls), "".join(calls))


@case("/etc/ld.so.preload is read as this machine's ld.so reads it: comments, colons, a NUL byte")
def glibc_reading(t):
    if not t.needs("bwrap", "ld.so's reading of /etc/ld.so.preload"):
        return
    samples = [
        ("a comment naming a libucxtls.so", b"#/opt/ucxtls/lib/libucxtls.so\n"),
        ("a NUL byte after the image's name", b"/opt/img/libimgfile.so\0\n"),
        ("a NUL byte, then a last name with no newline", b"/opt/img/a.so\0/opt/img/b.so\n/opt/img/c.so"),
        ("two comments (glibc's loop reads the second's words)", b"# one\n/opt/img/a.so\n# two\n"),
        ("the library after a colon", b"/opt/img/a.so:/opt/other/libucxtls.so\n"),
        ("no newline at the end", b"/opt/img/a.so"),
        ("CRLF", b"/opt/img/a.so\r\n"),
    ]
    for what, text in samples:
        before = ldso_names(text)
        c = Container([(PRELOAD, text)])
        p = c.run()
        after = c.read(PRELOAD)
        now = ldso_names(after)
        if any(os.path.basename(n) == "libucxtls.so" for n in before):
            ok = after == text and p.stderr == "" and p.returncode == 0
            want = "ld.so loads a libucxtls.so from it already: left as it is, no line"
        elif after == text:
            ok = one_line(p, PRELOAD) and c.read(TARGET) is None
            want = "left as it is, one line, no copy"
        else:
            it = iter(before)
            ok = now[-1:] == [TARGET] and all(n in it for n in now[:-1]) and p.returncode == 0 and p.stderr == "" \
                and c.read(TARGET) is not None
            want = "ld.so reads the image's names (%r), then %s" % (before, TARGET)
        t.check("%s: %s" % (what, want), ok, "ld.so before %r, after %r, file %r\n%s" % (before, now, after, shown(p)))
        if what.startswith("a comment") or what.startswith("a NUL byte after"):
            t.check("%s: ld.so loads the hook's copy after it" % what if what.startswith("a comment")
                    else "%s: left as it is (ld.so would read no name after the NUL)" % what,
                    now == [TARGET] if what.startswith("a comment") else after == text, "after %r" % now)


@case("run twice on one container whose /etc/ld.so.preload ends with the library's line and a newline: unchanged")
def run_twice(t):
    text = ("/opt/img/libimgfile.so\n" + TARGET + "\n").encode()
    c = Container([(PRELOAD, text)])
    runs = [c.run(), c.run()]
    t.check("both runs: exit 0, silent, the file byte for byte as it was, no copy made",
            all(p.returncode == 0 and p.stderr == "" for p in runs) and c.read(PRELOAD) == text and c.read(TARGET) is None,
            "file %r\n%s" % (c.read(PRELOAD), "\n".join(shown(p) for p in runs)))
    c = Container()
    runs = [c.run(), c.run()]
    t.check("an image without the file, run twice: one line of ours, the copy in place",
            all(p.returncode == 0 and p.stderr == "" for p in runs) and c.read(PRELOAD) == (TARGET + "\n").encode()
            and c.read(TARGET) is not None, "file %r\n%s" % (c.read(PRELOAD), "\n".join(shown(p) for p in runs)))


@case("under umask 027 the hook's directory and files are 0755/0644, and a non-root user of the container loads the library")
def umask_027(t):
    c = Container()
    p = c.run(umask=0o027)
    modes = {p_: stat.S_IMODE(os.lstat(c.path(p_)).st_mode) for p_ in ("/usr/lib/ucxtls-oci-hook", TARGET, PRELOAD)
             if os.path.lexists(c.path(p_))}
    t.check("modes: the directory 0755, the copy and /etc/ld.so.preload 0644",
            modes == {"/usr/lib/ucxtls-oci-hook": 0o755, TARGET: 0o644, PRELOAD: 0o644} and p.stderr == "",
            "%r\n%s" % ({k: oct(v) for k, v in modes.items()}, shown(p)))
    q = subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", "--userspec=65534:65534", c.root, "/bin/sh", "-c", "echo up"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=30, env={"PATH": "/bin"})
    t.check("a process of uid 65534 in that root: no ld.so ERROR line", q.returncode == 0 and q.stdout == "up\n"
            and "ERROR" not in q.stderr, q.stdout + q.stderr)


@case("a mount of the container over the copy's directory or /etc/ld.so.preload: nothing written, one line")
def hidden_by_mounts(t):
    rows = [("/usr", "/usr", ()), ("/usr/lib/ucxtls-oci-hook/", "/usr/lib/ucxtls-oci-hook/", ()), ("/etc", "/etc", ()),
            (PRELOAD, PRELOAD, ()), ("/libx, a link to usr/lib in the image", "/libx", [("/libx", ("symlink", "usr/lib"))]),
            # An absolute link is taken from the container's root, not from the link's directory.
            ("/libx, a link to /usr/lib in the image", "/libx", [("/libx", ("symlink", "/usr/lib"))]),
            ("/opt/libx/ucxtls-oci-hook, /opt/libx a link to /usr/lib", "/opt/libx/ucxtls-oci-hook",
             [("/opt/libx", ("symlink", "/usr/lib"))]),
            ("/opt/../usr", "/opt/../usr", ())]
    for what, mount, files in rows:
        c = Container(files, mounts=[mount])
        p = c.run()
        t.check("a mount on %s: no /etc/ld.so.preload, no copy, one line naming the mount" % what,
                c.read(PRELOAD) is None and c.read(TARGET) is None and one_line(p, mount, "hide"), shown(p))
    c = Container(mounts=["/proc", "/dev", "/etc/hosts", "/etc/hostname", "/run/.containerenv", "/sys/fs/cgroup"])
    p = c.run()
    t.check("Podman's own mounts (/proc, /dev, /etc/hosts, ...) hide nothing: the library given",
            c.read(PRELOAD) == (TARGET + "\n").encode() and p.stderr == "", shown(p))


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


@case("mounts resolved in runc's order, through what earlier mounts put there: a tmpfs through a bind's link is on /etc")
def mount_order(t):
    to_etc = host_dir([("/l", ("symlink", "/etc"))])
    rows = [
        ("a bind of a host directory holding l -> /etc on /mnt, then a tmpfs on /mnt/l (the tmpfs is the container's /etc)",
         [bind("/mnt", to_etc), tmpfs("/mnt/l")], [], ("/mnt/l", "(/etc in the root)", "hide " + PRELOAD)),
        ("the same, the link relative: l -> ../usr/lib, then a tmpfs on /mnt/l (the container's /usr/lib)",
         [bind("/mnt", host_dir([("/l", ("symlink", "../usr/lib"))])), tmpfs("/mnt/l")], [], ("/mnt/l", "hide " + TARGET)),
        ("the link one directory down the bind: /mnt/a/l -> /etc",
         [bind("/mnt", host_dir([("/a/l", ("symlink", "/etc"))])), tmpfs("/mnt/a/l")], [], ("/mnt/a/l", "hide")),
        ("a link of the image inside a tmpcopyup tmpfs (a copy of what was there): /mnt/l -> /etc",
         [tmpfs("/mnt", "tmpcopyup"), tmpfs("/mnt/l")], [("/mnt/l", ("symlink", "/etc"))], ("/mnt/l", "hide")),
        ("a bind without rbind whose source has a mount below it: where it lands is not known",
         [bind("/mnt", None, recursive=False), tmpfs("/mnt/sub/l")], [], ("/mnt/sub/l", "cannot tell")),
        ("a tmpfs inside a process's directory of a proc mount: its links (root, cwd) name any path, not known",
         [{"destination": "/p", "type": "proc", "source": "proc"}, tmpfs("/p/self/root/etc")], [], ("/p/self/root/etc", "cannot tell")),
        ("\"..\" after a path inside sysfs (whose links are not read): not known",
         [{"destination": "/sys", "type": "sysfs", "source": "sysfs"}, tmpfs("/sys/class/net/lo/../../../etc")], [],
         ("cannot tell",)),
    ]
    for what, mounts, files, words in rows:
        if mounts[0].get("source") is None:  # the bind's source with a tmpfs of the host at sub/, holding l -> /etc
            src = host_dir([("/sub/.keep", b"")])
            subprocess.run(["mount", "-t", "tmpfs", "ucxtls-hook-inputs", os.path.join(src, "sub")], check=True)
            os.symlink("/etc", os.path.join(src, "sub/l"))
            mounts[0]["source"] = src
        c = Container(files, mounts=mounts)
        p = c.run()
        t.check("%s: nothing written, one line" % what, nothing_written(c, p, *words), shown(p))
    # Where the same mounts leave both files visible, the library is given.
    rows = [
        ("the tmpfs on /mnt/l first, then the bind on /mnt (the tmpfs lands in the image's /mnt, under the bind)",
         [tmpfs("/mnt/l"), bind("/mnt", to_etc)], []),
        ("a link to /opt in the bind: the tmpfs lands on /opt", [bind("/mnt", host_dir([("/l", ("symlink", "/opt"))])),
                                                              tmpfs("/mnt/l")], []),
        ("a tmpfs without tmpcopyup on /mnt (empty), then a tmpfs on /mnt/l: the image's /mnt/l -> /etc is covered",
         [tmpfs("/mnt"), tmpfs("/mnt/l")], [("/mnt/l", ("symlink", "/etc"))]),
        ("Podman's mounts as it writes them (proc, a tmpfs /dev, devpts, mqueue, sysfs, cgroup2 inside it, /etc/hosts)",
         [{"destination": "/proc", "type": "proc", "source": "proc"}, tmpfs("/dev", "strictatime", "mode=755"),
          {"destination": "/dev/pts", "type": "devpts", "source": "devpts"},
          {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue"},
          {"destination": "/sys", "type": "sysfs", "source": "sysfs"},
          {"destination": "/sys/fs/cgroup", "type": "cgroup2", "source": "cgroup2"},
          bind("/dev/shm", host_dir([])), bind("/etc/hosts", "/etc/hosts"), bind("/etc/hostname", "/etc/hostname")], []),
    ]
    podman_masked = ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                     "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/fs/selinux", "/sys/dev/block"]
    for what, mounts, files in rows:
        c = Container(files, mounts=mounts, masked=podman_masked)
        p = c.run()
        t.check("%s, and Podman's maskedPaths: the library given" % what, written(c, p), shown(p))
    c = Container(masked=["/proc/kcore", PRELOAD])
    p = c.run()
    t.check("linux.maskedPaths naming /etc/ld.so.preload (runc mounts over it after the mounts): nothing written, one line",
            nothing_written(c, p, PRELOAD, "hide"), shown(p))


@case("the image's /etc/ld.so.preload keeps its owner, group and mode (1000:1001, 0640)")
def keeps_owner(t):
    c = Container([(PRELOAD, ("owned", b"/opt/img/a.so\n", 1000, 1001, 0o640))])
    p = c.run()
    st = os.lstat(c.path(PRELOAD))
    t.check("rewritten with our line; uid 1000, gid 1001, mode 0640",
            c.read(PRELOAD) == ("/opt/img/a.so\n" + TARGET + "\n").encode() and (st.st_uid, st.st_gid) == (1000, 1001)
            and stat.S_IMODE(st.st_mode) == 0o640 and p.stderr == "",
            "uid %d gid %d mode %o\n%s" % (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), shown(p)))


MAPS_C = r"""#include <stdio.h>
#include <string.h>
int main(void) {
  char line[4096];
  int mapped = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  while (f && fgets(line, sizeof line, f)) mapped |= strstr(line, "/libucxtls.so") != NULL;
  puts(mapped ? "MAPPED" : "NOT-MAPPED");
  return 0;
}
"""
MAPS_SH = 'm=NOT-MAPPED; while read l; do case "$l" in */libucxtls.so*) m=MAPPED;; esac; done < /proc/self/maps; echo $m'


def mapped(argv, env, root=None):
    """(MAPPED or NOT-MAPPED, stderr) of argv run with env (with `root` as / when given, its own /proc)."""
    prefix = ["bwrap", "--bind", root, "/", "--proc", "/proc", "--dev", "/dev"] if root else []
    p = subprocess.run(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30,
                       env=env)
    return p.stdout.strip(), p.stderr


@case("process.env's LD_PRELOAD as the process sees it: the last entry, split where glibc's ld.so splits it (spaces, colons)")
def env_preload(t):
    lib = "/opt/x/libucxtls.so"
    rows = [
        ("two LD_PRELOAD entries, the second naming the library (runc sets each in turn: the last is the process's)",
         ["LD_PRELOAD=/a/libother.so", "LD_PRELOAD=" + lib], False),
        ("two entries, the first naming the library", ["LD_PRELOAD=" + lib, "LD_PRELOAD=/a/libother.so"], True),
        ("LD_PRELOAD=/a/libother.so<space>libucxtls.so", ["LD_PRELOAD=/a/libother.so libucxtls.so"], False),
        ("LD_PRELOAD=/a/libother.so:libucxtls.so", ["LD_PRELOAD=/a/libother.so:libucxtls.so"], False),
        ("LD_PRELOAD=/a/libother.so<newline>libucxtls.so (one name to glibc)", ["LD_PRELOAD=/a/libother.so\nlibucxtls.so"], True),
        ("LD_PRELOAD=/a/libother.so<tab>libucxtls.so (one name to glibc)", ["LD_PRELOAD=/a/libother.so\tlibucxtls.so"], True),
    ]
    for what, env, write in rows:
        c = Container(env=["PATH=/bin"] + env)
        p = c.run()
        ok = written(c, p) if write else (c.read(PRELOAD) is None and p.returncode == 0 and p.stderr == "")
        t.check("%s: %s" % (what, "the library given" if write else "the process preloads a libucxtls.so: nothing written, silent"),
                ok, shown(p))
    # The image's loader reads that newline value so: glibc one name, which does not load (the library
    # then comes from the hook's /etc/ld.so.preload); musl splits at it, but never reads the file.
    libdir = os.path.dirname(LIB)
    glibc_env = {"PATH": "/bin", "LD_LIBRARY_PATH": libdir}
    for sep, want in (("\n", "NOT-MAPPED"), (" ", "MAPPED")):
        got, err = mapped(["/bin/sh", "-c", MAPS_SH], dict(glibc_env, LD_PRELOAD="/nonexistent/libother.so%slibucxtls.so" % sep))
        t.check("this machine's ld.so, LD_PRELOAD=/nonexistent/libother.so%slibucxtls.so (libucxtls.so on LD_LIBRARY_PATH): %s"
                % ("<newline>" if sep == "\n" else "<space>", want), got == want
                and (sep != "\n" or "object '/nonexistent/libother.so\nlibucxtls.so' from LD_PRELOAD cannot be preloaded" in err),
                got + "\n" + err)
    if not t.needs("bwrap", "the image's ld.so with that LD_PRELOAD"):
        return
    c = Container()
    shutil.copy(LIB, c.path("/lib/x86_64-linux-gnu/libucxtls.so"))
    p = c.run()
    got, err = mapped(["/bin/sh", "-c", MAPS_SH], {"PATH": "/bin", "LD_PRELOAD": "/a/libother.so\nlibucxtls.so"}, c.root)
    t.check("in the root the hook wrote, that LD_PRELOAD: the image's ld.so loads the library from /etc/ld.so.preload",
            written(c, p) and got == "MAPPED", got + "\n" + err + "\n" + shown(p))
    if not shutil.which("musl-gcc"):
        t.skip("musl's reading of LD_PRELOAD", "musl-gcc is not installed (Debian musl-tools)")
        return
    exe = os.path.join(SCRATCH, "maps-musl")
    src = exe + ".c"
    with open(src, "w") as f:
        f.write(MAPS_C)
    subprocess.run(["musl-gcc", "-o", exe, src], check=True, timeout=120)
    got, err = mapped([exe], {"LD_PRELOAD": "/nonexistent/libother.so\n" + LIB})
    t.check("musl's loader, LD_PRELOAD=/nonexistent/libother.so<newline>%s: MAPPED (musl splits at whitespace)" % LIB,
            got == "MAPPED", got + "\n" + err)
    if t.needs("bwrap", "musl and /etc/ld.so.preload"):
        f = os.path.join(SCRATCH, "ld.so.preload.musl")
        with open(f, "w") as out:
            out.write(LIB + "\n")
        got, err = mapped(["bwrap", "--dev-bind", "/", "/", "--bind", f, PRELOAD, exe], {})
        t.check("musl's loader with /etc/ld.so.preload naming the library: NOT-MAPPED (musl never reads the file)",
                got == "NOT-MAPPED", got + "\n" + err)


@case("a root that is not a container's own layer (a host directory) is left alone, with one line")
def not_own_layer(t):
    c = Container(overlay=False)
    p = c.run()
    t.check("root.path a plain directory: nothing written, one line naming it",
            c.read(PRELOAD) is None and not os.path.exists(c.path("/usr/lib/ucxtls-oci-hook"))
            and one_line(p, c.root, "not the container's own layer"), shown(p))


@case("never blocks, never leaves a copy: --log a FIFO, config.json a FIFO, /etc read-only, a read-only root")
def never_blocks(t):
    c = Container()
    fifo = os.path.join(c.dir, "log.fifo")
    os.mkfifo(fifo)
    p = c.run(["--log=" + fifo, "--library=/nonexistent/libucxtls.so"], timeout=10)
    t.check("--log=FIFO (no reader) and a failure: returns at once, exit 0, the line on stderr",
            one_line(p, "/nonexistent/libucxtls.so") and stat.S_ISFIFO(os.lstat(fifo).st_mode), shown(p))
    c = Container()
    os.unlink(os.path.join(c.bundle, "config.json"))
    os.mkfifo(os.path.join(c.bundle, "config.json"))
    p = c.run(timeout=10)
    t.check("config.json a FIFO: returns at once, one line naming it", one_line(p, "config.json", "not a regular file"),
            shown(p))
    c = Container()
    etc = c.path("/etc")
    subprocess.run(["mount", "--bind", etc, etc], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", etc], check=True)
    p = c.run()
    t.check("/etc read-only: no copy left behind, no directory made, one line naming %s" % PRELOAD,
            not os.path.exists(c.path("/usr/lib/ucxtls-oci-hook")) and one_line(p, c.root + PRELOAD), shown(p))
    c = Container()
    subprocess.run(["mount", "-o", "remount,ro", c.root], check=True)
    p = c.run()
    t.check("a read-only root: one line naming that root", one_line(p, "root file system " + c.root, "read-only"), shown(p))


@case("config.json with two root members: the hook writes where runc does (the last)")
def duplicate_members(t):
    c = Container(files=[("/decoy/etc/.keep", b"")], config='{"root":{"path":"rootfs/decoy"},"linux":{"devices":%s},'
                  '"root":{"path":"rootfs"}}' % json.dumps(GPU))
    p = c.run()
    t.check("written into rootfs, not rootfs/decoy", c.read(PRELOAD) == (TARGET + "\n").encode()
            and c.read("/decoy" + PRELOAD) is None and p.stderr == "", shown(p))


MAPPED_SH = 'while read l; do case "$l" in *libucxtls.so*) echo MAPPED; break;; esac; done < /proc/self/maps; ' \
    '[ -e /etc/ld.so.preload ] && echo PRELOAD || echo NOPRELOAD'


@case("under Podman: --rootfs DIR left alone (DIR:O served), -v /usr:/usr:ro gives no ld.so ERROR, --strict as Podman reports it",
      tags=("podman",))
def under_podman(t):
    import test_oci_hook as H
    H.setup(t)
    if not H.installed_hook(t):
        return
    c = Container(overlay=False)
    p = H.podman(H.RUN + H.gpu_args("intel-xe") + ["--rootfs", c.root, "/bin/sh", "-c", MAPPED_SH])
    t.check("--rootfs DIR (a host directory): the container runs without the library; DIR has no ld.so.preload and no copy",
            p.returncode == 0 and p.stdout == "NOPRELOAD\n" and not os.path.lexists(c.path(PRELOAD))
            and not os.path.lexists(c.path("/usr/lib/ucxtls-oci-hook")), shown(p))
    p = H.podman(H.RUN + H.gpu_args("intel-xe") + ["--rootfs", c.root + ":O", "/bin/sh", "-c", MAPPED_SH])
    t.check("--rootfs DIR:O (an overlay of the container's own over DIR): the library loads; DIR still untouched",
            p.returncode == 0 and p.stdout == "MAPPED\nPRELOAD\n" and not os.path.lexists(c.path(PRELOAD)), shown(p))
    usr = ["-v", "/usr:/usr:ro"]
    p = H.podman(H.RUN + H.gpu_args("intel-xe") + usr + [H.IMAGE_BASE, "/bin/sh", "-c", MAPPED_SH])
    t.check("-v /usr:/usr:ro hides where the copy would go: no /etc/ld.so.preload written, no ld.so ERROR line",
            p.returncode == 0 and p.stdout == "NOPRELOAD\n" and "ERROR" not in p.stderr, shown(p))
    p = H.podman(H.hook_variant(t, "strict", ["--strict"]) + H.RUN + H.gpu_args("intel-xe") + usr + [H.IMAGE_BASE, "/bin/sh", "-c", "echo ran"])
    t.check("the same with --strict: the container does not start; podman exits 126 saying %r and the hook's line" % STRICT_SAYS,
            p.returncode == 126 and "ran" not in p.stdout and STRICT_SAYS in p.stderr
            and "stderr: ucxtls-oci-hook: container " in p.stderr, shown(p))


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
    name = "ucxtls-hook-%d-%d" % (os.getpid(), _count[0])
    pre = (lambda: os.umask(umask)) if umask is not None else None
    try:
        return subprocess.run(["runc", "run", "--bundle", c.bundle, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60, preexec_fn=pre)
    finally:
        subprocess.run(["runc", "delete", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@case("under runc with umask 027 (Podman resets its own to 0022): a uid-65534 process of a GPU container loads the library",
      tags=("podman",))
def runc_umask(t):
    if not t.needs("runc", "a container under runc"):
        return
    c = Container()
    p = runc_run(c, MAPPED_SH, user={"uid": 65534, "gid": 65534}, umask=0o027)
    t.check("runc run under umask 027, the process uid 65534: the library mapped, no ld.so ERROR line",
            p.returncode == 0 and p.stdout == "MAPPED\nPRELOAD\n" and "ERROR" not in p.stderr, shown(p))


ETC_SH = 'while read a b c d e rest; do [ "$e" = /etc ] && echo "ETC-MOUNT"; done < /proc/self/mountinfo; ' \
    'echo "X=$X"; ' + MAPPED_SH


@case("under runc: a bind's link l -> /etc, then a tmpfs on /mnt/l: runc puts the tmpfs on /etc, the hook says so",
      tags=("podman",))
def runc_mount_order(t):
    if not t.needs("runc", "a container under runc"):
        return
    for link, hidden in (("/etc", True), ("/opt", False)):
        c = Container()
        log = os.path.join(c.dir, "hook.log")
        p = runc_run(c, ETC_SH, mounts=[bind("/mnt", host_dir([("/l", ("symlink", link))])), tmpfs("/mnt/l")],
                     env=["X=first", "X=last"], hook_args=["--log=" + log])
        lines = read_log(log)
        if hidden:
            t.check("l -> /etc: the container's /etc is a mount (the tmpfs), no library, no ld.so ERROR; the hook's one "
                    "line names the mount and /etc; nothing in the layer", p.returncode == 0
                    and p.stdout == "ETC-MOUNT\nX=last\nNOPRELOAD\n" and "ERROR" not in p.stderr and len(lines) == 1
                    and "/mnt/l (/etc in the root)" in lines[0] and c.read(PRELOAD) is None, "log %r\n%s" % (lines, shown(p)))
        else:
            t.check("control, l -> /opt: /etc is the image's, the library mapped, no line", p.returncode == 0
                    and p.stdout == "X=last\nMAPPED\nPRELOAD\n" and not lines, "log %r\n%s" % (lines, shown(p)))
    t.check("process.env X=first then X=last: the process sees the last (what the hook reads of LD_PRELOAD)",
            "X=last\n" in p.stdout, shown(p))


def read_log(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


@case("under Podman: a container started twice keeps one line of ours in /etc/ld.so.preload", tags=("podman",))
def podman_restart(t):
    import test_oci_hook as H
    H.setup(t)
    if not H.installed_hook(t):
        return
    show = 'while read l; do echo "P $l"; done < /etc/ld.so.preload'
    p = H.podman(["create", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--label", H.TAG]
                 + H.gpu_args("intel-xe") + [H.IMAGE_OWN, "/bin/sh", "-c", show])
    cid = p.stdout.strip()
    runs = [H.podman(["start", "-a", cid]) for _ in range(2)]
    H.podman(["rm", "-f", cid])
    want = "P %s\nP %s\n" % (H.OWN_FILE_LINE, TARGET)
    t.check("podman start -a, twice: the image's line, then ours, once", p.returncode == 0
            and all(r.returncode == 0 and r.stdout == want for r in runs), "\n".join(shown(r) for r in [p] + runs))


# What Podman 4.3 with runc prints when a createRuntime hook exits non-zero (docs/containers.md quotes it).
STRICT_SAYS = "error running hook #0: error running hook: exit status 1"

TITLE = "the node's OCI hook (ucxtls-oci-hook) against hostile images and inputs"

if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
