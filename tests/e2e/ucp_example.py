"""UCX's own ucp_client_server example (Debian's libucx-dev ships its source), compiled against a
UCX build and run as a server and a client exchanging a message over loopback: the consumers and
no-harm tests' UCP program."""
import os
import socket
import subprocess
import sys
import time

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ze"))  # datapath.py
from datapath import listens  # noqa: E402
from harness import have, run  # noqa: E402

EXAMPLE = "/usr/share/doc/libucx-dev/examples/ucp_client_server.c"
LISTEN_BOUND_S = 120  # how long a server may take to listen


def missing():
    """Why the example cannot be built here, or None."""
    if not (os.path.exists(EXAMPLE) and have("gcc")):
        return "UCX examples not installed (Debian libucx-dev); scripts/test.sh installs them"
    return None


def build(out_dir, include=None, libdir=None):
    """The example compiled into out_dir against the UCX whose headers and libraries are given
    (default: the system's); its path."""
    exe = os.path.join(out_dir, "ucp_client_server")
    argv = ["gcc", "-o", exe, EXAMPLE, "-I" + (include or os.path.dirname(EXAMPLE))]
    subprocess.run(argv + (["-L" + libdir] if libdir else []) + ["-lucp", "-lucs"], check=True)
    return exe


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def exchange(exe, env, cwd):
    """A server, then a client sending it a message over
    loopback (each exec'd directly with env). Returns (client status, client output, server output).
    A port taken between free_port and the server's bind (another test's connection: the server
    says "Address already in use") is the test's race, not UCX's answer: tried again on another."""
    for _ in range(3):
        rc, client, server = exchange_once(exe, env, cwd)
        if rc == 0 or "Address already in use" not in server:
            break
    return rc, client, server


def exchange_once(exe, env, cwd):
    port = str(free_port())
    server = subprocess.Popen([exe, "-p", port], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # The client connects once: start it when the server listens (the kernel's socket table says
        # so) or has exited, waiting for that with a time bound rather than a count of tries (a
        # loaded machine can take seconds to start UCX).
        deadline = time.monotonic() + LISTEN_BOUND_S
        while not listens(int(port)) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        client = run([exe, "-a", "127.0.0.1", "-p", port], env, cwd=cwd, timeout=60)
    finally:
        server.kill()
        out, _ = server.communicate()
    return client.returncode, client.stdout.decode() + client.stderr.decode(), out.decode()
