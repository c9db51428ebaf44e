"""`ucxtls` and `python -m ucxtls`: exec the command built into the package (ucxtls/_bin/ucxtls),
with the arguments as given. The command is the same C++ program every other channel installs;
this launcher only finds it, so `ucxtls run`, `explain`, `env`, `doctor`, `probe` and `lib` behave
exactly as there."""
import os
import signal
import sys

from . import command_path


def main():
    path = command_path()
    # Python starts with SIGPIPE and SIGXFSZ ignored, and an ignored signal stays ignored across
    # exec: without this, `ucxtls run PROGRAM` would start the user's program with both ignored
    # (a pipeline's writer would get EPIPE instead of dying). The shell's defaults, as every
    # other channel starts it.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    sys.stdout.flush()
    try:
        os.execv(path, ["ucxtls"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("ucxtls: cannot run %s: %s\n" % (path, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
