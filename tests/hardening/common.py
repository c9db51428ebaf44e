"""Shared by the hardening tests: the e2e harness, timing of runs, compiling small programs."""
import atexit
import os
import shutil
import subprocess
import tempfile
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py

import harness  # noqa: E402
from harness import (ALL, ALWAYS, BASE_ENV, BUILD_DIR, C, EMPTY_HOME, LIB, NONE, R, SOURCE_DIR, UNSET, Z, ARGS, Checks,  # noqa: E402,F401
                     add_case, case, fixture, have, include, machines, main, run)


def env_for(machine=None, preload=True, **extra):
    """harness.env_for with UCXTLS_WRITE=always: these tests are about how a write (set, re-derive,
    clear, repair) reaches hostile hosts, so their NVIDIA node writes the CUDA list C there; the
    default's own answers per node are tests/e2e/test_fixtures.py's. UCXTLS_WRITE=None leaves it out."""
    return harness.env_for(machine, preload, **dict(ALWAYS, **extra))

SAN_DIR = os.path.join(BUILD_DIR, "sanitize")
SAN_SKIP = os.path.join(SAN_DIR, "SKIPPED")


class Timer:
    """Keeps the slowest run seen, for the closing report line."""

    def __init__(self):
        self.worst = 0.0
        self.worst_label = ""

    def run(self, label, argv, env, **kw):
        t0 = time.monotonic()
        p = run(argv, env, **kw)
        dt = time.monotonic() - t0
        if dt > self.worst:
            self.worst, self.worst_label = dt, label
        return p

    def report(self):
        print("worst time of one process: %.3f s (%s)" % (self.worst, self.worst_label), flush=True)


def compile_c(out_dir, name, source, cc="gcc", flags=()):
    """Compiles a C program; returns (path, None) or (None, compiler error)."""
    src = os.path.join(out_dir, name + ".c")
    exe = os.path.join(out_dir, name)
    with open(src, "w") as f:
        f.write(source)
    p = subprocess.run([cc, "-O1", "-o", exe, src] + list(flags), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode:
        return None, p.stdout.decode(errors="replace")[-2000:]
    return exe, None


def linked_host(linked):
    """A C host that calls `linked` (a function of a library it links) first in main, then prints
    "UCX_TLS|UCXTLS_DERIVED" as it sees them (<unset> for one that is not set)."""
    return r"""
#include <stdio.h>
#include <stdlib.h>
void %s(void);
int main(void) {
  %s();
  const char *t = getenv("UCX_TLS"), *d = getenv("UCXTLS_DERIVED");
  printf("%%s|%%s\n", t ? t : "<unset>", d ? d : "<unset>");
  return 0;
}
""" % (linked, linked)


def printing_host(linked, name):
    """A C host that calls `linked` first in main, then prints the variable `name` as it sees it."""
    return r"""
#include <stdio.h>
#include <stdlib.h>
void %s(void);
int main(void) {
  %s();
  const char *v = getenv("%s");
  printf("%%s\n", v ? v : "<unset>");
  return 0;
}
""" % (linked, linked, name)


def scratch_dir(prefix):
    """A new directory, removed when the test process ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d
