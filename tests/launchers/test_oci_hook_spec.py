#!/usr/bin/env python3
"""The node hook (ucxtls-oci-hook) reads config.json as the runtime applies it, run as runc runs it
(oci_bundle.py): its mounts placed in order through the links the image and earlier mounts put
there, and process.env's LD_PRELOAD as the process and the image's loader see it (this machine's
ld.so and musl's).
"""
import os
import shutil
import subprocess
import time

import recipes as R  # noqa: E402  (first: it puts harness.py on the path)
from harness import LIB, case, main  # noqa: E402
from oci_bundle import (PRELOAD, SCRATCH, TARGET, Container, bind, host_dir, nothing_written, shown,  # noqa: E402
                        tmpfs, written)

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


@case("20,000 mounts in config.json: placed in time linear in their number, the library given within 15 s")
def many_mounts(t):
    # Each destination is looked up component by component among the mounts before it: asked by
    # the path's own directories, not every earlier mount (runc 1.1 mounts 4,000 in about 2 s).
    c = Container(mounts=[tmpfs("/mnt/m%d/d" % i) for i in range(20000)])
    start = time.time()
    p = c.run(timeout=15)
    t.check("the library given after 20,000 tmpfs mounts (%.1f s)" % (time.time() - start), written(c, p), shown(p))


@case("mounts whose placing outlasts the hook's deadline (1,000 destinations 1,000 deep): one line, nothing written, in time")
def deep_mounts(t):
    # Each component of a destination is looked up on its own, so that a deep one costs the square
    # of its depth (as runc 1.1's SecureJoin): the hook's deadline ends that, and the start goes on.
    # 1,000 of them: about ten times the hook's 5 s on this machine, so a faster one still reaches it.
    c = Container(mounts=[tmpfs("/mnt/m%d" % i + "/a" * 1000) for i in range(1000)])
    start = time.time()
    p = c.run(timeout=15)
    t.check("cannot tell where a mount lands: nothing written, one line naming the bound (%.1f s)" % (time.time() - start),
            nothing_written(c, p, "cannot tell", "bound"), shown(p))


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


TITLE = "the node's OCI hook (ucxtls-oci-hook): config.json's mounts and environment as the runtime applies them"

if __name__ == "__main__":
    main(TITLE, lambda: R.start(TITLE))
