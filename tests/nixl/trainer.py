"""A trainer as the seed's is written, on real NIXL: it hard-codes its UCX_TLS with
os.environ.setdefault (prime-rl's transports/weights/nixl/agent.py), then creates a NIXL agent
with the UCX backend, registers GPU memory as VRAM and moves it to a second agent (another
process, over loopback), as NIXL's own Python API is used:

    python trainer.py ROLE FD LIST [SIZE [MEMORY]]

ROLE is "target" (registers a zeroed buffer, sends its agent metadata and descriptors over the
socket FD, waits for the initiator's word, then checks every byte through the driver) or
"initiator" (registers a buffer the driver filled with a pattern, writes it into the target's
with a NIXL WRITE, reads it back into a second buffer with a READ and checks that one). LIST is
the value the trainer hard-codes ("-": none, a program that leaves UCX_TLS alone). MEMORY is VRAM
(the default: CUDA), ZE (an Intel GPU's, registered as VRAM; registration only) or DRAM (host
memory, for a node whose GPUs this trainer does not drive). GPU memory
comes from the CUDA driver (libcuda.so.1 through
ctypes: cuMemAlloc), whose bytes the host never reads: every check copies them back through the
driver (cuMemcpyDtoH). Exits with one of the codes below; prints "trainer ROLE: UCX_TLS=..." first
and NIXL's error text where it refuses."""
import ctypes
import os
import pickle
import socket
import struct
import sys
import time

role, fd, hardcoded = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
memory = sys.argv[5] if len(sys.argv) > 5 else "VRAM"
if hardcoded != "-":
    os.environ.setdefault("UCX_TLS", hardcoded)
print("trainer %s: pid %d, UCX_TLS=%s" % (role, os.getpid(), os.environ.get("UCX_TLS", "<unset>")), flush=True)

OK, AGENT, REGISTER, TRANSFER, DATA, PEER, DRIVER, REGISTERED_ONLY = 0, 3, 4, 5, 6, 7, 8, 9  # exit codes (nixl_pair.py names them)
TIMEOUT = float(os.environ.get("NIXL_TRAINER_TIMEOUT", "60"))


class Host:
    """Host memory with the same interface, for DRAM."""

    def __init__(self):
        self.bufs = []

    def alloc(self, n):
        self.bufs.append(ctypes.create_string_buffer(n))
        return ctypes.addressof(self.bufs[-1])

    def put(self, ptr, data):
        ctypes.memmove(ptr, data, len(data))

    def get(self, ptr, n):
        return ctypes.string_at(ptr, n)


class LevelZero:
    """An Intel GPU's device memory through the Level Zero loader (zeMemAllocDevice), as an XPU
    framework allocates it. Registration only: its bytes are not checked here (tests/ze does that
    with the NIXL-like consumer)."""

    class Desc(ctypes.Structure):  # ze_context_desc_t and ze_device_mem_alloc_desc_t share this start
        _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                    ("ordinal", ctypes.c_uint32)]

    def __init__(self):
        self.lib = ctypes.CDLL("libze_loader.so.1")
        self.call("zeInit", 0)
        n, self.driver, self.dev, self.ctx = ctypes.c_uint32(1), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        self.call("zeDriverGet", ctypes.byref(n), ctypes.byref(self.driver))
        n = ctypes.c_uint32(1)
        self.call("zeDeviceGet", self.driver, ctypes.byref(n), ctypes.byref(self.dev))
        self.call("zeContextCreate", self.driver, ctypes.byref(self.Desc(0xd, None, 0, 0)), ctypes.byref(self.ctx))

    def call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError("%s: Level Zero error 0x%x" % (name, rc & 0xFFFFFFFF))

    def alloc(self, n):
        ptr = ctypes.c_void_p()
        self.call("zeMemAllocDevice", self.ctx, ctypes.byref(self.Desc(0x15, None, 0, 0)), ctypes.c_size_t(n),
                  ctypes.c_size_t(64), self.dev, ctypes.byref(ptr))
        return ptr.value

    def put(self, ptr, data):
        pass  # registration only

    def get(self, ptr, n):
        raise RuntimeError("this trainer does not read Level Zero memory back")


class Cuda:
    """The CUDA driver API, the calls a trainer's framework makes, loaded by name."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.call("cuInit", ctypes.c_uint(0))
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self.call("cuDeviceGet", ctypes.byref(dev), 0)
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.call("cuCtxPushCurrent_v2", ctx)

    def call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError("%s: CUDA error %d" % (name, rc))

    def alloc(self, n):
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(n))
        return ptr.value

    def put(self, ptr, data):
        self.call("cuMemcpyHtoD_v2", ctypes.c_uint64(ptr), data, ctypes.c_size_t(len(data)))

    def get(self, ptr, n):
        buf = ctypes.create_string_buffer(n)
        self.call("cuMemcpyDtoH_v2", buf, ctypes.c_uint64(ptr), ctypes.c_size_t(n))
        return buf.raw


def send(sock, obj):
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("!I", len(data)) + data)


def recv(sock):
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise EOFError("the peer closed the connection")
        head += chunk
    n, data = struct.unpack("!I", head)[0], b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the peer closed the connection")
        data += chunk
    return pickle.loads(data)


def wait(agent, handle):
    state, deadline = agent.transfer(handle), time.monotonic() + TIMEOUT
    while state == "PROC" and time.monotonic() < deadline:
        time.sleep(0.001)
        state = agent.check_xfer_state(handle)
    return state


def main():
    sock = socket.socket(fileno=fd)
    sock.settimeout(TIMEOUT)
    pattern = bytes((i * 7 + 3) & 0xFF for i in range(size))
    try:
        mem = {"VRAM": Cuda, "ZE": LevelZero}.get(memory, Host)()
        mine = mem.alloc(size)
        mem.put(mine, pattern if role == "initiator" else bytes(size))
        back = mem.alloc(size) if role == "initiator" else None
    except (OSError, RuntimeError) as e:
        print("trainer %s: the CUDA driver: %s" % (role, e), flush=True)
        return DRIVER
    if os.environ.get("NIXL_TRAINER_CUDART"):  # as torch does: its CUDA runtime, loaded globally first
        ctypes.CDLL(os.environ["NIXL_TRAINER_CUDART"], mode=ctypes.RTLD_GLOBAL)
    from nixl._api import nixl_agent, nixl_agent_config
    try:
        agent = nixl_agent(role, nixl_agent_config(backends=["UCX"]))
    except Exception as e:  # NIXL's bindings raise their own error types
        print("trainer %s: nixl_agent: %s: %s" % (role, type(e).__name__, e), flush=True)
        return AGENT
    kind = "VRAM" if memory == "ZE" else memory  # NIXL's name for any GPU's memory
    try:
        bufs = [(mine, size, 0, "")] + ([(back, size, 0, "")] if back else [])
        agent.register_memory(agent.get_reg_descs(bufs, kind))
    except Exception as e:
        print("trainer %s: register_memory %s: %s: %s" % (role, memory, type(e).__name__, e), flush=True)
        return REGISTER
    print("trainer %s: registered %d bytes of %s" % (role, size, memory), flush=True)
    if memory == "ZE":
        return REGISTERED_ONLY
    try:
        if role == "target":
            send(sock, (agent.get_agent_metadata(), agent.get_serialized_descs(
                agent.get_xfer_descs([(mine, size, 0)], kind))))
            word = recv(sock)
            if word != "written":
                print("trainer target: the initiator says %r" % (word,), flush=True)
                return PEER
            got = mem.get(mine, size)
            print("trainer target: %s" % ("every byte arrived" if got == pattern else "WRONG BYTES"), flush=True)
            return OK if got == pattern else DATA
        metadata, descs = recv(sock)
    except (EOFError, OSError) as e:
        print("trainer %s: the peer: %s" % (role, e), flush=True)
        return PEER
    name = agent.add_remote_agent(metadata)
    remote = agent.deserialize_descs(descs)
    for op, local in (("WRITE", mine), ("READ", back)):
        try:
            handle = agent.initialize_xfer(op, agent.get_xfer_descs([(local, size, 0)], kind), remote, name)
            state = wait(agent, handle)
        except Exception as e:
            state = "%s: %s" % (type(e).__name__, e)
        print("trainer initiator: %s of %d bytes: %s" % (op, size, state), flush=True)
        if state != "DONE":
            send(sock, "failed")
            return TRANSFER
    send(sock, "written")  # after the READ too: the target keeps its agent and memory until then
    got = mem.get(back, size)
    print("trainer initiator: %s" % ("read back every byte" if got == pattern else "WRONG BYTES"), flush=True)
    return OK if got == pattern else DATA


code = main()
sys.stdout.flush()
os._exit(code)
