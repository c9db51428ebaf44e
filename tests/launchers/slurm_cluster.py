"""A real Slurm cluster on this machine, started and stopped by a test: munged, slurmctld and two
slurmd with different node names (n1, n2), as root, without systemd, everything (keys, sockets,
state, spool, logs) in one scratch directory, on free TCP ports, so several copies can run side
by side on one machine.

Run it inside the private PID namespace of recipes.enter_namespace(): whatever happens to the
test (an exception, CTest's timeout killing it), the kernel kills every daemon and step when the
namespace's first process ends; stop() also kills them in order on the normal path.

Each slurmd replays a fixture machine: slurm.conf's TaskProlog is `taskprolog.sh`, which picks
UCXTLS_SYSROOT by SLURMD_NODENAME (a task may override its node's machine with
UCXTLSTEST_MACHINE_<node>=<fixture root> in its environment) and prints `export
UCXTLS_SYSROOT=...` (Slurm's TaskProlog protocol). When the file `site-prolog-on` exists, it then
runs `site-prolog.sh` (the README's site TaskProlog, written there by the test) with that
UCXTLS_SYSROOT exported, so the site recipe is asked about the node's fixture machine.
"""
import os
import shutil
import socket
import subprocess
import time

NODES = ("n1", "n2")
TOOLS = ("munged", "munge", "slurmctld", "slurmd", "srun", "sbatch", "salloc", "sinfo", "scontrol")

TASKPROLOG = r"""#!/bin/sh
# Written by tests/launchers/slurm_cluster.py: this node's fixture machine, then the site recipe.
case "$SLURMD_NODENAME" in
%(cases)s
*) echo "print taskprolog: unknown node $SLURMD_NODENAME"; exit 0 ;;
esac
eval "override=\${UCXTLSTEST_MACHINE_$SLURMD_NODENAME-}"
[ -n "$override" ] && root=$override
echo "export UCXTLS_SYSROOT=$root"
# The template on every GPU node (UCXTLS_WRITE=always), so that each node's value names its family.
echo "export UCXTLS_WRITE=always"
if [ -e %(dir)s/site-prolog-on ]; then
  UCXTLS_SYSROOT=$root UCXTLS_WRITE=always exec /bin/sh %(dir)s/site-prolog.sh
fi
"""


def missing_tools():
    return [t for t in TOOLS if shutil.which(t) is None]


def free_ports(n):
    """n distinct TCP ports that are free now (bound, read, released; a small race is accepted)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Cluster:
    def __init__(self, scratch, machines):
        """machines: {node name: fixture root} for the TaskProlog."""
        self.dir = os.path.join(scratch, "slurm")
        self.machines = machines
        self.procs = []  # (name, Popen), in start order
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.timings = {}

    # -- configuration -------------------------------------------------------------------------
    def _write_config(self):
        d = self.dir
        for sub in ("munge-key", "munge-sock", "state", "log") + tuple("spool-" + n for n in NODES):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(d, 0o755)
        os.chmod(os.path.join(d, "munge-key"), 0o700)  # munged: the key's directory is private
        os.chmod(os.path.join(d, "munge-sock"), 0o755)  # munged: clients need execute on it
        with open(os.path.join(d, "munge-key", "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(d, "munge-key", "munge.key"), 0o400)
        self.munge_socket = os.path.join(d, "munge-sock", "munge.socket")
        cases = "\n".join("%s) root=%s ;;" % (n, self.machines[n]) for n in NODES)
        prolog = os.path.join(d, "taskprolog.sh")
        with open(prolog, "w") as f:
            f.write(TASKPROLOG % {"cases": cases, "dir": d})
        os.chmod(prolog, 0o755)
        with open(os.path.join(d, "plugstack.conf"), "w") as f:
            f.write("")  # not the machine's /etc/slurm/plugstack.conf
        ctl, *node_ports = free_ports(1 + len(NODES))
        host = socket.gethostname()
        cpus = os.cpu_count() or 1
        lines = [
            "ClusterName=ucxtls-test",
            "SlurmctldHost=%s(127.0.0.1)" % host,
            "SlurmctldPort=%d" % ctl,
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool-%%n" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd-%%n.pid" % d,
            "SlurmctldLogFile=%s/log/slurmctld.log" % d,
            "SlurmdLogFile=%s/log/slurmd-%%n.log" % d,
            "PlugStackConfig=%s/plugstack.conf" % d,
            # No cgroups and no systemd: processes tracked by /proc, tasks placed by nobody.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MailProg=/bin/true",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=2",
            "MinJobAge=2",
            "TaskProlog=%s" % prolog,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
        ]
        for n, port in zip(NODES, node_ports):
            lines.append("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d State=UNKNOWN"
                         % (n, host, port, cpus))
        lines.append("PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
                     % ",".join(NODES))
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def env(self, base):
        """An environment for Slurm's client commands (srun, sbatch, ...): base plus SLURM_CONF."""
        e = dict(base)
        e["SLURM_CONF"] = self.conf
        return e

    # -- lifecycle -----------------------------------------------------------------------------
    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "SLURM_CONF": self.conf}
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                             cwd=self.dir, start_new_session=True)
        log.close()
        self.procs.append((name, p))
        return p

    def _wait(self, what, probe, timeout):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError("%s exited (%s) while waiting for %s\n%s" % (name, p.returncode, what, self.logs()))
            if probe():
                return time.monotonic() - t0
            time.sleep(0.1)
        raise RuntimeError("timed out after %ds waiting for %s\n%s" % (timeout, what, self.logs()))

    def _client(self, argv, timeout=20):
        return subprocess.run(argv, env=self.env({"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)

    def start(self, timeout=60):
        t0 = time.monotonic()
        self._write_config()
        key = os.path.join(self.dir, "munge-key")
        self._spawn("munged", ["munged", "-F", "--socket=" + self.munge_socket, "--key-file=" + key + "/munge.key",
                               "--pid-file=" + key + "/munged.pid", "--log-file=" + key + "/munged.log",
                               "--seed-file=" + key + "/munged.seed"])
        self._wait("munged's socket", lambda: os.path.exists(self.munge_socket), timeout)
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self._wait("slurmctld to answer", lambda: self._client(["scontrol", "ping"]).stdout.find(b"UP") >= 0, timeout)
        for n in NODES:
            self._spawn("slurmd-" + n, ["slurmd", "-D", "-N", n, "-f", self.conf])

        def idle():
            out = self._client(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.decode().split()
            states = dict(zip(out[0::2], out[1::2]))
            return all(states.get(n) == "idle" for n in NODES)
        self._wait("both nodes idle", idle, timeout)
        self.timings["start_s"] = time.monotonic() - t0

    def stop(self):
        """Stops every daemon, newest first: SIGTERM, then SIGKILL after 5 s; safe to call twice."""
        while self.procs:
            name, p = self.procs.pop()
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def logs(self, tail=40):
        out = []
        for name in sorted(os.listdir(os.path.join(self.dir, "log"))):
            with open(os.path.join(self.dir, "log", name), "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()[-tail:]
            out.append("--- %s\n%s" % (name, "\n".join(lines)))
        return "\n".join(out)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
