#!/usr/bin/env python3
"""tests/test_costs.txt, the measured seconds of each CTest test, against the tests CTest has: every
test it names exists, and each that took a second or more carries that COST (so `ctest -j` starts
the longest first in a fresh clone, before CTest has measured anything itself)."""
import json
import os
import re
import subprocess

from harness import BUILD_DIR, SOURCE_DIR, case, main

COSTS = os.path.join(SOURCE_DIR, "tests", "test_costs.txt")


def measured():
    with open(COSTS) as f:
        return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+) ([0-9.]+)$", f.read(), re.M)}


@case("tests/test_costs.txt: each test it names exists and has its measured COST")
def costs(t):
    p = subprocess.run(["ctest", "--show-only=json-v1"], cwd=BUILD_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not t.check("ctest --show-only=json-v1 lists the tests", p.returncode == 0, p.stderr.decode()):
        return
    tests = {x["name"]: {pr["name"]: pr["value"] for pr in x.get("properties", [])} for x in json.loads(p.stdout)["tests"]}
    want = measured()
    t.check("the file names %d tests" % len(want), len(want) > 50)
    t.equal("tests the file names that do not exist (stale: scripts/test-costs.sh)", sorted(set(want) - set(tests)), [])
    wrong = {n: (tests[n].get("COST"), c) for n, c in want.items() if n in tests and c >= 1 and abs((tests[n].get("COST") or 0) - c) > 0.05}
    t.equal("tests of a second or more without their measured COST: {name: (COST, measured)}", wrong, {})
    first = sorted(want, key=lambda n: -want[n])[:3]
    print("     longest first: %s; %d tests not measured yet run last: %s"
          % (", ".join("%s %.0f s" % (n, want[n]) for n in first), len(set(tests) - set(want)),
             " ".join(sorted(set(tests) - set(want)))))


if __name__ == "__main__":
    main("the tests' measured costs")
