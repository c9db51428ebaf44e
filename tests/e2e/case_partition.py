#!/usr/bin/env python3
"""Every case of every Python test script runs in exactly one CTest test.

CTest runs a script whole or in parts (`-k EXPRESSION`, tests/*/CMakeLists.txt). A case that no
part selects would never run in CI; one that two parts select would run twice. The list of CTest
tests comes from the configure step (BUILD_DIR/py_tests.tsv: name, script, arguments); each
script is asked for its cases (`--list`) with and without each test's arguments.
"""
import collections
import subprocess
import sys

from harness import Checks, matcher


def listing(script, args):
    p = subprocess.run([sys.executable, script, "--list"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode().splitlines(), p.stderr.decode()


def main():
    t = Checks("CTest tests against the cases of each script")
    tests = collections.defaultdict(list)  # script: [(test, args)]
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                name, script, *args = line.rstrip("\n").split("\t")
                tests[script].append((name, [a for a in args if a]))
    for script, parts in sorted(tests.items()):
        rc, cases, err = listing(script, [])
        if not t.check("%s --list" % script, rc == 0 and cases, err):
            continue
        runs = collections.Counter()
        for name, args in parts:
            exprs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-k"]
            if exprs and len(exprs) * 2 == len([a for a in args if not a.startswith("/")]):
                # -k alone (beside paths): harness.main's own selection, without a process per test
                preds = [matcher(e) for e in exprs]
                rc, chosen, err = 0, [c for c in cases if all(p(c) for p in preds)], ""
            else:
                rc, chosen, err = listing(script, args)
            t.check("%s: selects at least one case" % name, rc == 0 and chosen, err)
            runs.update(chosen)
        lost = [c for c in cases if runs[c] == 0]
        twice = [c for c in cases if runs[c] > 1]
        t.check("%s: each of its %d cases runs in exactly one of %s" % (script.split("/tests/")[-1], len(cases),
                                                                       ", ".join(n for n, _ in parts)),
                not lost and not twice, "in no test: %s\nin more than one: %s" % (lost, twice))
    t.exit()


if __name__ == "__main__":
    main()
