#!/usr/bin/env python3
"""The node hook (ucxtls-oci-hook) against hostile images and inputs, run as a runtime runs it.

Each case builds a bundle: config.json, and a root file system that is an overlay mounted for it
(lower: a glibc image of this machine's ld.so, libc.so.6 and dash, plus the files the case plants;
upper: the container's writable layer), then runs the built hook as root with the OCI state on its
stdin, as runc does at createRuntime. What the hook did is read back from the layer; where ld.so's
reading of /etc/ld.so.preload matters, this machine's ld.so reads the file (bubblewrap binds it over
/etc/ld.so.preload, names that exist nowhere, so ld.so names each one it tries). The cases tagged
podman run the hook under Podman with runc (test_oci_hook.py's images and install). How config.json's
mounts and environment are read is test_oci_hook_spec.py's.
"""
import json
import os
import re
import shutil
import stat
import subprocess

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import case, main  # noqa: E402
from oci_bundle import (GPU, MAPPED_SH, PRELOAD, TARGET, Container, bind, host_dir, ldso_names,  # noqa: E402
                        one_line, read_log, runc_run, shown, tmpfs)


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


@case("the image's /etc/ld.so.preload keeps its owner, group and mode (1000:1001, 0640)")
def keeps_owner(t):
    c = Container([(PRELOAD, ("owned", b"/opt/img/a.so\n", 1000, 1001, 0o640))])
    p = c.run()
    st = os.lstat(c.path(PRELOAD))
    t.check("rewritten with our line; uid 1000, gid 1001, mode 0640",
            c.read(PRELOAD) == ("/opt/img/a.so\n" + TARGET + "\n").encode() and (st.st_uid, st.st_gid) == (1000, 1001)
            and stat.S_IMODE(st.st_mode) == 0o640 and p.stderr == "",
            "uid %d gid %d mode %o\n%s" % (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), shown(p)))


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
