#!/usr/bin/env python3
"""Every case of every Python test script runs in exactly one CTest test, chosen by its tags.

CTest runs a script whole or in parts (`--tag T`, `--not-tag T`, tests/*/CMakeLists.txt). A case
that no part selects would never run in CI; one that two parts select would run twice; a part that
selected by name (`-k`) would lose its cases when one is renamed. The list of CTest tests comes from
the configure step (BUILD_DIR/py_tests.tsv: name, script, arguments); each script is asked for its
cases and their tags (`--list`), and asked again with a test's arguments where those hold more
than the selection (sanitize.py's step: the script chooses its case from it).
"""
import collections
import subprocess
import sys

from harness import Checks
from selection import Selection


def listing(script, args):
    """(status, [(name, tags)], stderr) of `script --list ARGS`."""
    p = subprocess.run([sys.executable, script, "--list"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cases = []
    for line in p.stdout.decode().splitlines():
        name, _, tags = line.partition("\t")
        cases.append((name, tuple(tags.split())))
    return p.returncode, cases, p.stderr.decode()


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
            sel = Selection(args)
            t.check("%s: selects by tag, not by name" % name, not sel.exprs, "arguments: %r" % args)
            unknown = sel.unknown_tags(cases)
            if [a for a in sel.rest if not a.startswith("/")]:  # the script reads its own arguments
                rc, chosen, err = listing(script, args)
            else:  # the selection alone (beside paths): harness.main's own, without a process per test
                rc, chosen, err = 0, [c for c in cases if sel.chooses(*c)], ""
            t.check("%s: selects at least one case, by tags its cases have" % name,
                    rc == 0 and chosen and not unknown, err + ("no case is tagged %s" % unknown if unknown else ""))
            runs.update(n for n, _ in chosen)
        lost = [n for n, _ in cases if runs[n] == 0]
        twice = [n for n, _ in cases if runs[n] > 1]
        t.check("%s: each of its %d cases runs in exactly one of %s" % (script.split("/tests/")[-1], len(cases),
                                                                       ", ".join(n for n, _ in parts)),
                not lost and not twice, "in no test: %s\nin more than one: %s" % (lost, twice))
    t.exit()


if __name__ == "__main__":
    main()
