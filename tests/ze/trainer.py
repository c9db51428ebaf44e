"""The trainer's path to NIXL, reproduced: a Python process that applies prime-rl's
setdefault (transports/weights/nixl/agent.py) and then registers and moves GPU memory in-process
through the NIXL-like consumer (libnixl_like.so, loaded with ctypes, as NIXL's Python bindings load
its backend).

    python3 trainer.py LIB ROLE FD SIZE [force] [ze|cuda]

Exits with the consumer's code (tests/ze/nixl_like.h). Started by exec directly: with the
library in LD_PRELOAD of its exec environment when the test wants it preloaded."""
import ctypes
import os
import sys

os.environ.setdefault("UCX_TLS", "rc_x,rc,dc_x,dc,cuda_copy")

lib_path, role, fd, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
flags = 1 if "force" in sys.argv[5:] else 0
gpu = "cuda" if "cuda" in sys.argv[5:] else "ze"
print(f"trainer {role}: pid {os.getpid()}, UCX_TLS={os.environ['UCX_TLS']}", flush=True)
lib = ctypes.CDLL(lib_path)
lib.nixl_like_run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p]
lib.nixl_like_run.restype = ctypes.c_int
sys.exit(lib.nixl_like_run(role.encode(), fd, size, flags, gpu.encode()))
