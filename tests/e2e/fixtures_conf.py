"""test_fixtures.py's ucx.conf in each place UCX reads it (UCX_TLS, UCX_IB_GID_INDEX), and the
node shapes built here: several HCAs, one closed to the process; machines.py's own listing."""
import os
import shutil
import subprocess
import tempfile

from harness import ALL, ALWAYS, C, LIB, UNSET, add_case, case, env_for, fixture, have, run, sh_value, skip_closed_to_others


# ucx.conf in each place UCX reads it: UCX_TLS stays unset so that UCX reads the file.
def ucx_conf(t, label):
    with tempfile.TemporaryDirectory() as d:
        conf_dir = os.path.join(d, "confdir")
        home = os.path.join(d, "home")
        cwd = os.path.join(d, "cwd")
        for p in (conf_dir, home, cwd):
            os.makedirs(p)
        root = os.path.join(d, "root")
        shutil.copytree(fixture("dgx"), root, symlinks=True)
        os.makedirs(os.path.join(root, "etc/ucx"))
        line = "[Grace Hopper]\nCPU model=Grace\nUCX_TLS=rc,cuda_copy\n"
        path, extra = {
            "/etc/ucx/ucx.conf (under UCXTLS_SYSROOT)": (os.path.join(root, "etc/ucx/ucx.conf"), {}),
            "$HOME/ucx.conf": (os.path.join(home, "ucx.conf"), {"HOME": home}),
            "$UCX_CONFIG_DIR/ucx.conf": (os.path.join(conf_dir, "ucx.conf"), {"UCX_CONFIG_DIR": conf_dir}),
            "./ucx.conf": (os.path.join(cwd, "ucx.conf"), {}),
        }[label]
        with open(path, "w") as f:
            f.write(line)
        env = env_for(None, UCXTLS_SYSROOT=root, **ALWAYS, **extra)  # the template written on this dgx
        tls, _, err = sh_value(env, cwd=cwd)
        t.equal("ucx.conf at %s assigning UCX_TLS: left unset" % label, tls, UNSET, err)
        with open(path, "w") as f:
            f.write("# UCX_TLS=rc\nUCX_TLS_EXTRA=1\nUCX_IB_GPU_DIRECT_RDMA=y\n")
        tls, _, err = sh_value(env, cwd=cwd)
        t.equal("ucx.conf at %s without a UCX_TLS line: value set" % label, tls, C, err)


for _label in ("/etc/ucx/ucx.conf (under UCXTLS_SYSROOT)", "$HOME/ucx.conf", "$UCX_CONFIG_DIR/ucx.conf", "./ucx.conf"):
    add_case("ucx.conf at " + _label, ucx_conf, _label)


@case("strace: a ./ucx.conf that links to a device or a procfs stream is never opened", tags=("strace",))
def ucx_conf_links(t):
    # A ./ucx.conf that is a link to a device or a procfs stream is never opened: opening /dev/ptmx
    # allocates a pty in the host, reading /proc/kmsg takes the kernel log from its reader.
    if not have("strace"):
        t.skip("./ucx.conf -> /dev/ptmx is never opened", "strace not installed (scripts/test.sh installs it)")
        return
    with tempfile.TemporaryDirectory() as cwd:
        for target in ("/dev/ptmx", "/proc/kmsg", "/dev/zero"):
            link = os.path.join(cwd, "ucx.conf")
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
            p = run(["strace", "-f", "-e", "trace=openat,open", "/bin/true"], env_for("dgx", **ALWAYS), cwd=cwd)
            trace = p.stderr.decode()
            # O_PATH names the file without opening it (no driver's open runs); anything else is an open.
            looked = [l for l in trace.splitlines() if "ucx.conf" in l or target in l]
            opened = [l for l in looked if "O_PATH" not in l]
            t.check("./ucx.conf -> %s: never opened (strace: O_PATH only), the value still written" % target,
                    p.returncode == 0 and looked and not opened and sh_value(env_for("dgx", **ALWAYS), cwd=cwd)[0] == C,
                    "\n".join(looked))


# UCX_IB_GID_INDEX in a ucx.conf, read as UCX reads it: the environment first, then the files in
# UCX's order, a later one overriding an earlier one; a value in a [section] cannot be told.
def gid_index_conf(t, label, files, env, want, words):
    with tempfile.TemporaryDirectory() as d:
        home = os.path.join(d, "home")
        os.makedirs(home)
        root = os.path.join(d, "root")
        shutil.copytree(fixture("roce-macvlan-pod"), root, symlinks=True)
        os.makedirs(os.path.join(root, "etc/ucx"))
        for where, text in files:
            with open(os.path.join(root, "etc/ucx/ucx.conf") if where == "etc" else os.path.join(home, "ucx.conf"), "w") as f:
                f.write(text)
        tls, _, err = sh_value(env_for(None, UCXTLS_SYSROOT=root, HOME=home, UCXTLS_DEBUG="1", **env), cwd=d)
        t.equal(label, tls, want, err)
        t.check(label + ": the debug line says %r" % words, words in err, err)


for _label, _files, _env, _want, _words in [
        ("/etc/ucx/ucx.conf UCX_IB_GID_INDEX=5: rc runs", [("etc", "UCX_IB_GID_INDEX = 5\n")], {}, UNSET, "NVIDIA GPUs and an rc device"),
        ("$HOME/ucx.conf overrides /etc/ucx/ucx.conf", [("etc", "UCX_IB_GID_INDEX=5\n"), ("home", "UCX_IB_GID_INDEX=3\n")], {},
         "^ib", 'GID 3 (UCX_IB_GID_INDEX="3" of ' ),
        ("the environment overrides the files", [("etc", "UCX_IB_GID_INDEX=3\n")], {"UCX_IB_GID_INDEX": "5"}, UNSET,
         "NVIDIA GPUs and an rc device"),
        ("a value in a [section]: could not tell", [("etc", "[Grace]\nCPU model=Grace\nUCX_IB_GID_INDEX=5\n")], {}, UNSET,
         "could not tell which GID UCX tests"),
        ("the environment's value that is not a number: could not tell", [], {"UCX_IB_GID_INDEX": "x"}, UNSET,
         'could not tell which GID UCX tests: UCX_IB_GID_INDEX="x" is not a number or auto'),
]:
    add_case("UCX_IB_GID_INDEX: " + _label, gid_index_conf, _label, _files, _env, _want, _words)


@case("a ucx.conf that assigns UCX_TLS beats all on a GPU node without RDMA")
def ucx_conf_beats_all(t):
    with tempfile.TemporaryDirectory() as home:
        with open(os.path.join(home, "ucx.conf"), "w") as f:
            f.write("[global]\nUCX_TLS=tcp,cuda_copy\n")
        t.equal("aws-p5 with $HOME/ucx.conf: UCX_TLS left for UCX to read",
                sh_value(env_for("aws-p5", HOME=home))[0], UNSET)
        t.equal("... and an inherited all of ours is removed",
                sh_value(env_for("aws-p5", HOME=home, UCX_TLS=ALL, UCXTLS_DERIVED=ALL))[:2], (UNSET, UNSET))


@case("a Broadcom function first, a ConnectX second: the ConnectX decides, and the debug line names it")
def broadcom_then_connectx(t):
    tls, _, err = sh_value(env_for("broadcom-then-connectx", UCXTLS_DEBUG="1", **ALWAYS))
    t.equal("broadcom-then-connectx: the mlx5 list (UCXTLS_WRITE=always)", tls, C, err)
    t.check("broadcom-then-connectx: the debug line names the ConnectX that decided, and the other",
            "rdma: mlx5_1 (mlx5_core): port 1 ACTIVE, uverbs1 and 1 more" in err, err)


@case("several HCAs, the ConnectX on uverbs3 not readable and writable by the process: it does not count")
def uverbs3_closed(t):
    # Each device's own node is checked (UCX's uct_ib_device_is_accessible opens that one), not
    # uverbs0's: here uverbs0..2 are EFA devices whose nodes anyone may open.
    if os.geteuid() != 0:
        t.skip("a node the process cannot open", "needs root, to run the process as uid 65534")
        return
    if skip_closed_to_others(t, "a node the process cannot open", LIB):
        return
    import machines
    top = tempfile.mkdtemp(prefix="ucxtls-uverbs3-")
    try:
        os.chmod(top, 0o755)
        for mode in (0o600, 0o666):
            root = os.path.join(top, "m%o" % mode)
            m = machines.Tree(root)
            m.common()
            m.nvidia_driver()
            m.nvidia_gpus(1)
            m.efas(3)
            m.hca(3, machines.HCA_BUSES[0])
            os.chmod(os.path.join(root, "dev/infiniband/uverbs3"), mode)
            env = dict(env_for(None, UCXTLS_DEBUG="1", **ALWAYS), UCXTLS_SYSROOT=root)
            p = subprocess.run(["/bin/sh", "-c", SHOW_TLS], env=env, cwd="/", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                               preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
            if mode == 0o600:
                t.check("uverbs3 0600 (root's), the process uid 65534: no rc device, %s" % ALL, p.stdout == ALL,
                        p.stdout + p.stderr)
            else:
                t.check("control, uverbs3 0666: the ConnectX counts (%s)" % C, p.stdout == C, p.stdout + p.stderr)
    finally:
        shutil.rmtree(top, True)


SHOW_TLS = 'printf "%s" "${UCX_TLS-<unset>}"'


@case("machines.py --list: each machine's whole description on its line")
def machines_list(t):
    import subprocess
    import sys
    import machines
    p = subprocess.run([sys.executable, machines.__file__, "--list"], stdout=subprocess.PIPE, check=True)
    lines = dict(line.split(None, 1) for line in p.stdout.decode().splitlines())
    t.equal("one line per machine", sorted(lines), sorted(machines.MACHINES))
    multi = [n for n, m in machines.MACHINES.items() if len((m.__doc__ or "").strip().splitlines()) > 1]
    t.check("some descriptions span several lines (%d)" % len(multi), multi)
    for name in multi:
        last = machines.MACHINES[name].__doc__.strip().splitlines()[-1].strip()
        t.check("%s: the listed line ends with its description's last line" % name, lines[name].rstrip().endswith(last),
                lines[name])
