#!/usr/bin/env python3
"""scripts/test.sh never removes an installed package: when `apt-get install` would remove one (on
Debian, gcc-multilib and the cross compilers conflict), it stops before installing anything, with
one line naming what would go and the conflict. apt-get, apt-cache, dpkg-query, id and cmake are
stand-ins here (on PATH before the real ones) that answer as Debian's do for that case and record
what they were asked."""
import os
import shutil
import stat
import subprocess
import tempfile

from harness import SOURCE_DIR, case, main

FAKES = {
    # Every package the script checks is missing.
    "dpkg-query": "exit 1\n",
    "id": 'echo 0\n',
    # `apt-get install -s --no-remove` as Debian 12 answers when g++-aarch64-linux-gnu's compiler is
    # wanted beside gcc-multilib (it names what would go, then refuses: exit 100); any other
    # install is recorded, as is update.
    "apt-get": '''echo "apt-get $*" >>"$LOG"
case " $* " in
  *" -s "*) echo "The following packages will be REMOVED:"
            echo "  g++-multilib gcc-multilib"
            echo "The following NEW packages will be installed:"
            echo "  gcc-12-aarch64-linux-gnu"
            echo "0 upgraded, 1 newly installed, 2 to remove and 0 not upgraded."
            echo "E: Packages need to be removed but remove is disabled."
            exit 100 ;;
esac
''',
    # Recorded, and failing: nothing is built here whatever the script does.
    "cmake": 'echo "cmake $*" >>"$LOG"; exit 1\n',
    "apt-cache": '''echo "apt-cache $*" >>"$LOG"
printf '%s\\n' gcc-12-aarch64-linux-gnu "  Depends: libc6" "  Conflicts: gcc-multilib" gcc-multilib "  Depends: cpp"
''',
}


@case("an install that would remove a package stops with one line naming it and the conflict")
def stops_before_removing(t):
    top = tempfile.mkdtemp(prefix="ucxtls-test-sh-")
    try:
        bin_dir = os.path.join(top, "bin")
        os.makedirs(bin_dir)
        for name, body in FAKES.items():
            path = os.path.join(bin_dir, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body)
            os.chmod(path, stat.S_IRWXU)
        log = os.path.join(top, "log")
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "LOG": log, "HOME": top, "BUILD_DIR": os.path.join(top, "build")}
        p = subprocess.run(["bash", os.path.join(SOURCE_DIR, "scripts", "test.sh")], env=env, cwd=top,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        with open(log) as f:
            calls = f.read().splitlines()
    finally:
        shutil.rmtree(top, True)
    t.equal("exit status 1", p.returncode, 1, p.stderr[-2000:])
    installs = [c for c in calls if c.startswith("apt-get") and " install " in c and " -s " not in c]
    t.equal("no install was run", installs, [], "\n".join(calls))
    t.equal("every apt-get install, the simulation too, carries --no-remove",
            [c for c in calls if c.startswith("apt-get install") and " --no-remove " not in c + " "], [], "\n".join(calls))
    stopped = [l for l in p.stderr.splitlines() if l.startswith("test.sh: stopped:")]
    t.equal("one line says it stopped", len(stopped), 1, p.stderr[-2000:])
    line = stopped[0] if stopped else ""
    t.check("it names what would be removed", "would remove g++-multilib gcc-multilib" in line, line)
    t.check("and why: the conflict", "gcc-12-aarch64-linux-gnu conflicts with gcc-multilib" in line, line)
    t.equal("nothing was built (it stopped before cmake)", [c for c in calls if c.startswith("cmake")], [])


if __name__ == "__main__":
    main("scripts/test.sh's installs")
