"""The data path's machinery, shared by tests/ze/test_ze.py (a fake Intel GPU, replayed nodes) and
scripts/gpu-check.sh (a real GPU): the NIXL-like consumer compiled against a UCX, two trainer
processes joined by a socket pair, what their output says, the matrix table. Stdlib only, and no
test harness: gpu-check.sh runs it on a lent machine as

    python3 tests/ze/datapath.py gpu-check --ucx PREFIX --lib LIBUCXTLS --gpu cuda|ze [--cc CC]

which prints one line per check (ok / FAIL / SKIP with the reason), then the same table as the
test's, and exits 0 when every check passed, 1 otherwise.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER_LIST = "rc_x,rc,dc_x,dc,cuda_copy"  # prime-rl's trainer (transports/weights/nixl/agent.py)
CONSUMER_TIMEOUT = 20  # NIXL_LIKE_TIMEOUT: the consumer's bound on each wait for its peer
PROCESS_TIMEOUT = 90  # each process is killed after this
# nixl_like.h's codes
NL_OK, NL_INIT, NL_DETECTED_AS_HOST, NL_TRANSFER, NL_DATA, NL_PEER, NL_GPU = 0, 10, 20, 30, 31, 40, 50
CODE_NAMES = {0: "registered and moved", 10: "ucp_init failed", 11: "ucp_mem_map failed",
              20: "refused: VRAM detected as host", 30: "transfer failed", 31: "data wrong",
              40: "peer failure", 50: "GPU driver failure", 2: "usage"}
NIXL_WORDS = "VRAM memory is detected as host by UCX"
COPY = {"ze": "ze_copy", "cuda": "cuda_copy"}  # each GPU kind's copy transport
MEMTYPE = {"ze": "ze-device", "cuda": "cuda"}  # what ucp_mem_query says of its device memory
OTHER = {"ze": "cuda", "cuda": "ze"}
OK_OUTCOME = "registered, put+get verified"


def log(text, indent="     | "):
    for line in text.rstrip("\n").split("\n"):
        print(indent + line, flush=True)


def finish(p, timeout=PROCESS_TIMEOUT):
    """(status, output) of Popen p, killed after timeout: status None then."""
    try:
        out, _ = p.communicate(timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        status = None
    return status, out.decode(errors="replace")


def describe(status):
    if status is None:
        return "hung: killed after %d s" % PROCESS_TIMEOUT
    if status < 0:
        return "killed by %s" % signal.Signals(-status).name
    return "exit %d" % status


def run_logged(argv, env, cwd, timeout=PROCESS_TIMEOUT):
    """Runs argv (exec'd directly); prints the command and its output; returns (status, output).
    status is the exit code, -SIGNAL when killed by a signal, or None when it hung."""
    print("     $ " + " ".join(argv), flush=True)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
    status, text = finish(p, timeout)
    log(text)
    print("     (%s)" % describe(status), flush=True)
    return status, text


def ucx_env(prefix, env):
    """env running the UCX at prefix (its libraries first; UCX then loads its modules from
    prefix/lib/ucx, beside libucs). UCX_HANDLE_ERRORS=bt: a crash prints UCX's backtrace."""
    env = dict(env)
    env["LD_LIBRARY_PATH"] = os.path.join(prefix, "lib")
    env["UCX_HANDLE_ERRORS"] = "bt"
    return env


def compile_consumer(cc, prefix, out_dir, with_ze=True):
    """libnixl_like.so compiled against the UCX at prefix (its headers and libraries) into
    out_dir: (path, None), or (None, the compiler's words). with_ze=False: without Level Zero
    (-DNIXL_LIKE_NO_ZE, for a machine without its headers)."""
    lib = os.path.join(out_dir, "libnixl_like.so")
    argv = [cc, "-std=gnu11", "-O1", "-g", "-shared", "-fPIC", "-fvisibility=hidden",
            "-I" + os.path.join(prefix, "include"), "-o", lib, os.path.join(HERE, "nixl_like.c"),
            "-L" + os.path.join(prefix, "lib"), "-lucp", "-lucs"]
    argv += ["-lze_loader"] if with_ze else ["-DNIXL_LIKE_NO_ZE"]
    argv.append("-ldl")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        return None, " ".join(argv) + "\n" + p.stdout.decode(errors="replace")
    return lib, None


def run_roles(argv_for, env, cwd, shown, word):
    """The target and the initiator: the processes argv_for(role, fd) gives (exec'd directly with
    env, LD_PRELOAD included when the cell preloads the library), joined by a socket pair whose end
    is fd. Returns {role: (status, output)}; every process bounded, its command (shown(argv)), its
    output and its status (word(status)) printed."""
    a, b = socket.socketpair()
    procs = {}
    try:
        for role, s in (("target", a), ("initiator", b)):
            argv = argv_for(role, s.fileno())
            procs[role] = (argv, subprocess.Popen(argv, env=env, pass_fds=[s.fileno()], stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, cwd=cwd))
    finally:
        a.close()
        b.close()
    results = {role: finish(p) for role, (argv, p) in procs.items()}
    for role, (argv, _) in procs.items():
        print("     $ %s   [%s]" % (shown(argv), role), flush=True)
        log(results[role][1])
        print("     (%s: %s)" % (role, word(results[role][0])), flush=True)
    return results


def run_pair(lib, env, cwd, size=4096, force=False, gpu="ze"):
    """Two trainer processes (trainer.py) calling the NIXL-like consumer lib: run_roles."""
    trainer = os.path.join(HERE, "trainer.py")

    def argv_for(role, fd):
        return [sys.executable, trainer, lib, role, str(fd), str(size), gpu] + (["force"] if force else [])

    def word(status):
        return describe(status) + (" = " + CODE_NAMES.get(status, "?") if status is not None and status >= 0 else "")

    return run_roles(argv_for, env, cwd, lambda argv: " ".join(argv[1:]), word)


def mem_types(output):
    return [line.split("memory type ", 1)[1].strip() for line in output.split("\n") if "ucp_mem_query: memory type" in line]


def ucx_words(output):
    """UCX's own WARN/ERROR lines, without the timestamp and host prefix."""
    words = []
    for line in output.split("\n"):
        for level in ("UCX  WARN  ", "UCX  ERROR "):
            if level in line:
                words.append(level.strip().replace("  ", " ") + " " + line.split(level, 1)[1].strip())
    return words


def seen_value(output):
    """UCX_TLS as the trainer saw it after its setdefault (what UCX then read)."""
    for line in output.split("\n"):
        if line.startswith("trainer ") and "UCX_TLS=" in line:
            return line.split("UCX_TLS=", 1)[1].strip()
    return "?"


def all_ok(res):
    return all(res[r][0] == NL_OK for r in res)


def row(cell, res, outcome):
    """A row of the matrix: (cell, value UCX saw, memory types, outcome, UCX's words)."""
    out = res["initiator"][1] + res["target"][1]
    types = sorted(set(mem_types(out))) or ["(no context)"]
    return (cell, seen_value(res["initiator"][1]), "/".join(types), outcome, sorted(set(ucx_words(out))))


def print_table(rows):
    print("| cell | UCX_TLS as UCX saw it | ucp_mem_query | outcome | UCX's words |")
    print("|---|---|---|---|---|")
    for cell, value, types, outcome, words in rows:
        print("| %s | `%s` | %s | %s | %s |" % (cell, value, types, outcome, "<br>".join("`%s`" % w for w in words)),
              flush=True)


def listens(port):
    """Whether a TCP socket of this host listens on port (/proc/net/tcp and tcp6: state 0A)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def perftest_pair(prefix, env, cwd, test, memtype):
    """ucx_perftest of the UCX at prefix, two processes over loopback TCP (a server, then a client
    running `test` on `memtype` memory, 64 KiB messages): (client status, server status, client
    output, the client's bandwidth from its Final line or None). Both bounded, both printed."""
    import threading
    perf = os.path.join(prefix, "bin", "ucx_perftest")
    # A free port may be taken between its pick and the server's bind (other tests' UCX processes
    # bind ephemeral ports): a server that could not bind is started again on another port.
    early = ""  # what a server that exited before listening printed
    for _ in range(5):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
        s.close()
        server = subprocess.Popen([perf, "-p", port, "-m", memtype], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, cwd=cwd)
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not listens(int(port)) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if server.poll() is None:
            break
        early = server.stdout.read().decode(errors="replace")
        if "Address already in use" not in early:
            break
        print("     [ucx_perftest -p %s: the port was taken before the server bound it; another port]" % port,
              flush=True)
    # The client does not retry its connect: start it once the server listens (above). Its
    # "Waiting for connection" line sits in stdio's buffer (a pipe), so the kernel's socket table
    # is asked instead (a probing connect would be taken for the peer).
    lines = [early]

    def read_server():
        for line in server.stdout:
            lines.append(line.decode(errors="replace"))
    reader = threading.Thread(target=read_server, daemon=True)
    reader.start()
    status, out = None, ""
    try:
        status, out = run_logged([perf, "127.0.0.1", "-p", port, "-t", test, "-m", memtype, "-s", "65536",
                                  "-n", "200", "-w", "20"], env, cwd)
    finally:
        try:
            sstatus = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            sstatus = None
            server.wait()
        reader.join(10)
        print("     [the server, ucx_perftest -p %s -m %s: %s]" % (port, memtype, describe(sstatus)), flush=True)
        log("".join(lines))
    final = [line.split()[5] for line in out.split("\n") if line.startswith("Final:") and len(line.split()) > 5]
    return status, sstatus, out, final[0] if final else None


# --------------------------------------------------------------------------- gpu-check
class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   " + name, flush=True)
        else:
            self.failed += 1
            print("FAIL " + name + ("\n     " + detail.replace("\n", "\n     ") if detail else ""), flush=True)
        return ok

    def skip(self, name, why):
        self.skipped += 1
        print("SKIP %s: %s" % (name, why), flush=True)


def gpu_check(args):
    """The matrix on this machine's real GPU of kind args.gpu, through the real driver, with the UCX
    at args.ucx (built with that GPU's support) and the library at args.lib deciding from this
    machine (no sysroot)."""
    t = Counts()
    scratch = tempfile.mkdtemp(prefix="gpu-check-datapath-")
    lib, err = compile_consumer(args.cc, args.ucx, scratch, with_ze=args.gpu == "ze")
    if not t.check("the NIXL-like consumer compiles against %s" % args.ucx, lib is not None, err or ""):
        return 1
    own, other = COPY[args.gpu], COPY[OTHER[args.gpu]]
    # This shell's environment, less what the cells set: UCX's and the library's variables (but a
    # UCXTLS_SYSROOT, which the self-test uses to replay a node), the preload and library path.
    base = {k: v for k, v in os.environ.items() if not (k.startswith("UCX_") or k.startswith("UCXTLS_")) or
            k == "UCXTLS_SYSROOT"}
    for k in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
        base.pop(k, None)
    base["NIXL_LIKE_TIMEOUT"] = str(CONSUMER_TIMEOUT)

    def env(preload, **extra):
        e = dict(base)
        if preload:
            e.update(LD_PRELOAD=args.lib, UCXTLS_DEBUG="1")
        e.update(extra)
        return ucx_env(args.ucx, e)

    rows = []

    def pair(cell, e, **kw):
        print("-- " + cell, flush=True)
        return run_pair(lib, e, scratch, gpu=args.gpu, **kw)

    # With the library: its value for this node, then the trainer's path.
    res = pair("the trainer with the library", env(True))
    value = seen_value(res["initiator"][1])
    t.check("with the library: the trainer registers and moves %s memory (value %s)" % (MEMTYPE[args.gpu], value),
            all_ok(res) and set(mem_types(res["initiator"][1])) == {MEMTYPE[args.gpu]}, value)
    rows.append(row("trainer + library", res, OK_OUTCOME if all_ok(res) else "FAILED"))
    res = pair("the trainer without the library", env(False))
    # The trainer's list names cuda_copy: on an NVIDIA node with rc it is right; without rc UCX 1.22
    # refuses a context of accelerator transports alone; on Intel it never names the copy transport.
    rc_here = value != "all" and "rc" in value.split(",")
    if args.gpu == "cuda" and rc_here:
        t.check("without the library, on this NVIDIA node with rc: the trainer's own list works", all_ok(res))
        rows.append(row("trainer, no library", res, OK_OUTCOME if all_ok(res) else "FAILED"))
    else:
        t.check("without the library (%s): the trainer does not move the GPU memory" % (
            "no rc here" if not rc_here else "Intel"), not all_ok(res))
        rows.append(row("trainer, no library", res, "; ".join(sorted({CODE_NAMES.get(s, describe(s)) for s, _ in res.values()}))))
    for v, works in (("sm,self,tcp," + own, True), ("sm,self,tcp," + other, False)):
        res = pair("UCX_TLS=" + v, env(False, UCX_TLS=v))
        types = set(mem_types(res["initiator"][1] + res["target"][1]))
        if works:
            t.check("UCX_TLS=%s: %s, the transfer works" % (v, MEMTYPE[args.gpu]), all_ok(res) and types == {MEMTYPE[args.gpu]})
            rows.append(row("UCX_TLS=" + v, res, OK_OUTCOME if all_ok(res) else "FAILED"))
        else:
            t.check("UCX_TLS=%s: host, NIXL refuses" % v, types == {"host"} and all(
                res[r][0] == NL_DETECTED_AS_HOST for r in res))
            rows.append(row("UCX_TLS=" + v, res, "NIXL refuses: " + NIXL_WORDS))
            res = pair("UCX_TLS=%s, forced" % v, env(False, UCX_TLS=v), size=4096, force=True)
            statuses = [res[r][0] for r in res]
            t.check("UCX_TLS=%s forced on: the transfer does not work, and nothing hangs" % v,
                    NL_OK not in statuses and None not in statuses, str(statuses))
            rows.append(row("UCX_TLS=%s, forced, 4096 B" % v, res, " / ".join(
                CODE_NAMES.get(s, describe(s)) if s is not None and s >= 0 else describe(s) for s in statuses)))
    res = pair("UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", env(True, UCXTLS_TEMPLATE="sm,self,tcp,{copy}"))
    t.check("UCXTLS_TEMPLATE='sm,self,tcp,{copy}' composes sm,self,tcp,%s and the transfer works" % own,
            seen_value(res["initiator"][1]) == "sm,self,tcp," + own and all_ok(res))
    rows.append(row("library, UCXTLS_TEMPLATE='sm,self,tcp,{copy}'", res, OK_OUTCOME if all_ok(res) else "FAILED"))
    res = pair("UCXTLS_REPAIR=1, UCX_TLS=tcp,%s" % other, env(True, UCXTLS_REPAIR="1", UCX_TLS="tcp," + other))
    t.check("UCXTLS_REPAIR=1 repairs tcp,%s to tcp,%s and the transfer works" % (other, own),
            seen_value(res["initiator"][1]) == "tcp," + own and all_ok(res))
    rows.append(row("library, UCXTLS_REPAIR=1, UCX_TLS=tcp," + other, res, OK_OUTCOME if all_ok(res) else "FAILED"))
    if os.access(os.path.join(args.ucx, "bin", "ucx_perftest"), os.X_OK):
        memtype = {"ze": "ze-device", "cuda": "cuda"}[args.gpu]
        for test in ("ucp_put_bw", "tag_bw"):
            print("-- ucx_perftest -t %s -m %s under the library's value" % (test, memtype), flush=True)
            status, sstatus, out, final = perftest_pair(args.ucx, env(True), scratch, test, memtype)
            t.check("ucx_perftest -t %s -m %s, two processes, under the library's value" % (test, memtype),
                    status == 0 and sstatus == 0 and final is not None, describe(status))
            rows.append(("ucx_perftest -t %s -m %s, library" % (test, memtype), value, memtype,
                         "Final: %s MB/s (64 KiB)" % final if final else "FAILED", sorted(set(ucx_words(out)))))
    else:
        t.skip("ucx_perftest", "%s has no bin/ucx_perftest" % args.ucx)
    print("-- the matrix, as measured on this machine", flush=True)
    print_table(rows)
    print("datapath: %d passed, %d failed, %d skipped" % (t.passed, t.failed, t.skipped), flush=True)
    return 1 if t.failed else 0


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="datapath.py")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gpu-check", help="the matrix on this machine's real GPU")
    g.add_argument("--ucx", required=True, help="prefix of a UCX built with this GPU's support")
    g.add_argument("--lib", required=True, help="the built libucxtls.so")
    g.add_argument("--gpu", choices=sorted(COPY), required=True)
    g.add_argument("--cc", default="cc")
    args = ap.parse_args(argv)
    return gpu_check(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
