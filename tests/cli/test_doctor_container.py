#!/usr/bin/env python3
"""`doctor --pid` of a root process in a Podman container (runc, an image made by `podman import`):
its build is read from the container's root (/proc/PID/root) and nothing of it runs (its records,
tests/cli/hostile_build.py, hold the container's process alone); traced already by strace, it is
judged the same, and its state and threads are the same before and after. Run as root under the
Podman lock; SKIP without Podman."""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
import harness  # noqa: E402
from harness import case, have, main  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_build import WORK, build, doctor, needs_root, judged, records  # noqa: E402

PODMAN = ["podman", "--runtime", "runc"]
TAG = "ucxtls-test-doctor-hostile-" + harness.RUN_ID


@case("a root process in a Podman container: judged from its root, nothing run; traced by strace: the same, left alone")
def container_limits(t):
    if not needs_root(t, ("cc", "podman", "runc", "tar")):
        return
    d = os.path.join(WORK, "image")
    root = os.path.join(d, "root")
    for sub in ("lib64", "lib/x86_64-linux-gnu", "usr/bin", "ucx", "tmp", "etc"):
        os.makedirs(os.path.join(root, sub))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(root, "lib64"))
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(root, "lib/x86_64-linux-gnu"))
    harness.compile_c(os.path.join(root, "usr/bin/holder"), '#include <dlfcn.h>\n#include <unistd.h>\nint main(int c, char **v) {'
                      ' (void)c; if (!dlopen(v[1], RTLD_NOW)) return 3; for (;;) pause(); }\n', check=True)
    build(os.path.join(root, "ucx/libucp.so.0"), "/tmp/limits", defines=["-DLIMITS"])
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/:/bin/sh\n")
    image = "localhost/%s:image" % TAG
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
    p = subprocess.run(PODMAN + ["import", "-", image], stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    tar.wait()
    if not t.check("podman import of the test's image", p.returncode == 0, p.stdout.decode(errors="replace")):
        return
    try:
        p = subprocess.run(PODMAN + ["run", "-d", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                                     "--label", TAG, image, "/usr/bin/holder", "/ucx/libucp.so.0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if p.returncode != 0:
            t.skip("a root process in a Podman container", "podman cannot run a container here: " + p.stderr.strip())
            return
        cid = p.stdout.strip()
        pid = subprocess.run(PODMAN + ["inspect", "--format", "{{.State.Pid}}", cid], stdout=subprocess.PIPE,
                             universal_newlines=True, timeout=60).stdout.strip()
        record = "/proc/%s/root/tmp/limits" % pid
        for _ in range(100):
            if records(record):
                break
            time.sleep(0.1)
        rc, out, err = doctor(["--pid", pid, "--value", "tcp"])
        got = records(record)
        # Traced already (strace): its filter cannot be read, so doctor refuses and says how to ask from inside.
        tracer = subprocess.Popen(["strace", "-p", pid, "-o", "/dev/null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
            if have("strace") else None
        for _ in range(100):
            with open("/proc/%s/status" % pid) as f:
                if tracer is None or re.search(r"^TracerPid:\s+[1-9]", f.read(), re.M):
                    break
            time.sleep(0.05)
        def snapshot():
            with open("/proc/%s/status" % pid) as f:
                st = f.read()
            keep = ("State:", "TracerPid:", "Threads:", "SigBlk:")
            return [l for l in st.splitlines() if l.startswith(keep)], sorted(os.listdir("/proc/%s/task" % pid))
        state = [snapshot()]
        traced = doctor(["--pid", pid, "--value", "tcp"]) if tracer else None
        state.append(snapshot())
        after = records(record)
        if tracer:
            tracer.terminate()
            tracer.wait(timeout=30)
    finally:
        subprocess.run(PODMAN + ["rm", "-f", "--filter", "label=" + TAG], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        subprocess.run(PODMAN + ["rmi", "-f", image], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    t.check("control: the container's process made its own record", any(r.startswith("holder ") for r in got), repr(got))
    judged(t, "doctor read its build from the container's root (exit 0)", (rc, out, err))
    t.check("... naming it through /proc/PID/root", ("/proc/%s/root/ucx/libucp.so.0" % pid) in out, out)
    t.equal("no constructor ran in a process of ucxtls's", [r for r in got if r.startswith("ucxtls")], [])
    if traced is None:
        t.skip("a traced container process", "no strace (Debian strace)")
        return
    judged(t, "traced by strace: judged the same (exit 0)", traced)
    t.equal("... and nothing ran", after, got)
    t.equal("its state, tracer and threads are the same before and after doctor", state[1], state[0])


if __name__ == "__main__":
    main("doctor --pid of a Podman container's process")
