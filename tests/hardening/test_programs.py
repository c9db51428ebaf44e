#!/usr/bin/env python3
"""Real programs run with and without the library: stdout and exit status identical.

A corpus of deterministic commands (shells, coreutils pipelines, python3, perl, git, cmake,
ucx_info, programs that exit non-zero and programs that die by a signal), each run on two
machines: this one (no sysroot) and the DGX fixture, where the library writes UCX_TLS. Commands
whose output legitimately depends on UCX_TLS are not in the corpus. A missing program is a SKIP
with the reason.
"""
import resource
import signal
import subprocess
import time

from common import SOURCE_DIR, add_case, env_for, have, main

CORPUS = [
    # (label, argv, tool that must exist)
    ("sh: echo and exit 3", ["sh", "-c", "echo hello; exit 3"], "sh"),
    ("sh: a pipeline of coreutils", ["sh", "-c", "seq 1 20000 | sort -r | md5sum; ls / | wc -l"], "sh"),
    ("bash: arithmetic, arrays, a subshell", ["bash", "-c", "a=(1 2 3); echo $(( ${a[1]} * 21 )); (exit 5); echo $?"], "bash"),
    ("bash: killed by SIGTERM", ["bash", "-c", "echo before; kill -TERM $$; echo after"], "bash"),
    ("sh: killed by SIGSEGV", ["sh", "-c", "echo before; kill -SEGV $$"], "sh"),
    ("ls -la of stable directories", ["ls", "-la", "/etc/ld.so.conf.d", "/usr/include/linux/netfilter"], "ls"),
    ("ls of a missing path (exit 2)", ["ls", "/nonexistent-ucxtls"], "ls"),
    ("false (exit 1)", ["false"], "false"),
    ("python3: output, threads, exit 4",
     ["python3", "-c", "import threading,sys\nr=[]\nts=[threading.Thread(target=r.append,args=(i,)) for i in range(8)]\n"
      "[t.start() for t in ts]; [t.join() for t in ts]\nprint(sorted(r)); sys.exit(4)"], "python3"),
    ("python3: subprocess child and os.abort (SIGABRT)",
     ["python3", "-c", "import subprocess,os\nprint(subprocess.run(['echo','child'],capture_output=True).stdout)\n"
      "import sys; sys.stdout.flush(); os.abort()"], "python3"),
    ("python3: uncaught exception (exit 1)", ["python3", "-c", "raise SystemExit('bye') if False else 1/0"], "python3"),
    ("perl: output and exit 5", ["perl", "-e", "print join(',', map { $_ * 2 } 1..10), \"\\n\"; exit 5"], "perl"),
    ("perl: die (exit 255)", ["perl", "-e", "print \"x\\n\"; die \"no\\n\""], "perl"),
    ("git --version", ["git", "--version"], "git"),
    ("git: init, commit, log in a scratch repo",
     ["sh", "-c", "d=$(mktemp -d) && cd $d && git init -q && echo x > f && git add f && "
      "GIT_AUTHOR_DATE=@0 GIT_COMMITTER_DATE=@0 git -c user.name=t -c user.email=t@t commit -qm m && "
      "git log --format='%H %s'; rm -rf $d"], "git"),
    ("git: not a repository (exit 128)", ["git", "-C", "/", "rev-parse", "--git-dir"], "git"),
    ("cmake --version", ["cmake", "--version"], "cmake"),
    ("cmake -E: echo, compare, a failing command", ["sh", "-c", "cmake -E echo hi; cmake -E compare_files /etc/hostname /etc/hostname; echo $?; cmake -E false"], "cmake"),
    ("ucx_info -v", ["ucx_info", "-v"], "ucx_info"),
    ("ucx_info with a bad option", ["ucx_info", "-Z"], "ucx_info"),
]


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def program(t, label, argv, tool):
    if not have(tool):
        t.skip(label, "%s not installed" % tool)
        return
    for machine in (None, "dgx"):
        where = machine or "this machine"
        env_plain = env_for(machine, preload=False, GIT_CONFIG_NOSYSTEM="1")
        env_pre = env_for(machine, GIT_CONFIG_NOSYSTEM="1")
        kw = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, preexec_fn=no_core,
                  cwd=SOURCE_DIR)
        plain = subprocess.run(argv, env=env_plain, **kw)
        t0 = time.monotonic()
        pre = subprocess.run(argv, env=env_pre, **kw)
        dt = time.monotonic() - t0
        status = plain.returncode
        how = ("killed by %s" % signal.Signals(-status).name) if status < 0 else "exit %d" % status
        t.check("%s on %s: stdout identical (%d bytes)" % (label, where, len(plain.stdout)),
                pre.stdout == plain.stdout, "with: %r\nwithout: %r" % (pre.stdout[:300], plain.stdout[:300]))
        t.equal("%s on %s: status identical (%s)" % (label, where, how), pre.returncode, plain.returncode)
        t.equal("%s on %s: stderr identical" % (label, where), pre.stderr, plain.stderr)
        print("     %s on %s with the library: %.3f s" % (label, where, dt), flush=True)


for _label, _argv, _tool in CORPUS:
    # Tagged with the program it needs: `--tag git` selects the cases that need git.
    add_case(_label if _label.startswith(_tool) else "%s: %s" % (_tool, _label), program, _label, _argv, _tool,
             tags=(_tool,))


if __name__ == "__main__":
    main("real programs with and without the library")
