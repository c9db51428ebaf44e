"""ucxtls from a wheel: libucxtls.so, the LD_PRELOAD library that sets UCX_TLS for the GPUs a
process can use, the `ucxtls` command and its driver-probe helper, all in this package's _bin
directory (the command finds the library beside itself, wherever the environment lives).

    LD_PRELOAD="$(ucxtls lib)" python3 train.py      # or: ucxtls run python3 train.py
    ray.init(runtime_env={"env_vars": {"LD_PRELOAD": ucxtls.library_path()}})

Importing this package does nothing else: the library only acts when it is preloaded into a new
process (a library loaded into a running Python comes too late for os.environ).
"""
import os

_BIN = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_bin")


def library_path():
    """The absolute path of the wheel's libucxtls.so, for LD_PRELOAD (what `ucxtls lib` prints)."""
    return os.path.join(_BIN, "libucxtls.so")


def command_path():
    """The absolute path of the `ucxtls` program inside the wheel."""
    return os.path.join(_BIN, "ucxtls")
