#!/usr/bin/env python3
"""Plants each bug that tests/unit/test_planted_bugs.cc names (a few rows are test_core.cc's and test_repair.cc's), one at a time, in the working tree;
rebuilds the unit binary; shows which test cases fail; and restores the file (git checkout).
By hand, from the source root, with a configured build directory:

    python3 tests/unit/plant_bugs.py [build]

Every mutant must make its own row fail (exit status 1 when one does not). Not run by CTest: it
edits the sources it checks.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"

# file, the code, the bug planted in its place, the test case that must fail
MUTANTS = [
    ("shim/environ_edit.cc", "size + size_t(missing) + 1 > room_cap", "size + size_t(missing) > room_cap",
     "env_write: the environment grew by exactly one entry"),
    ("shim/options.cc", "if (n == len && !memcmp(w, v, n))", "if (!memcmp(w, v, n))",
     "settings: invalid values"),
    ("shim/decide.cc", 'if (!d->value[0] || !strcmp(d->value, "^")) {', "if (!d->value[0]) {",
     "compose: a value of ^ alone is never written"),
    ("shim/decide.cc", "return error(d, Reason::invalid);\n  }\n  if (!gpu_families_named(tls)",
     "}\n  if (!gpu_families_named(tls)",
     "repair: a kept value is not repaired while a setting is invalid"),
    ("shim/repair.cc", "if (k == n && !memcmp(p, e, n)) return true;", "if (k >= n && !memcmp(p, e, n)) return true;",
     "repair: a rewritten entry that is a prefix of an earlier one is not a repeat"),
    ("shim/repair.cc", "if (!value || value[0] == '^') return 0;", "if (!value) return 0;",
     "repair_value: other families' entries rewritten"),
    ("shim/driver_cache.cc", "if (fd == -ENOENT) return close_fd(dfd), Found::missing;",
     'if (fd == -ENOENT) return close_fd(dfd), reject(ev, dir, "missing");',
     "driver tier: a cache directory without the file gives way to the next place"),
]


def main():
    missed = 0
    for path, code, bug, row in MUTANTS:
        full = os.path.join(ROOT, path)
        text = open(full).read()
        if text.count(code) != 1:
            print("MISSING %s: %r is not there once (the code changed: update this list)" % (path, code))
            missed += 1
            continue
        try:
            with open(full, "w") as f:
                f.write(text.replace(code, bug))
            build = subprocess.run(["cmake", "--build", BUILD, "-j2", "--target", "unit_tests"], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = "" if build.returncode else subprocess.run(
                [os.path.join(BUILD, "tests", "unit_tests")], cwd=ROOT, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        finally:
            with open(full, "w") as f:
                f.write(text)
        failed = [l.split("TEST CASE:", 1)[1].strip() for l in out.splitlines() if "TEST CASE:" in l]
        caught = any(name.startswith(row) for name in failed)
        print("%s %s: %s\n     failing: %s" % ("caught" if caught else "MISSED", path, bug, "; ".join(failed) or "none"))
        missed += not caught
    subprocess.run(["cmake", "--build", BUILD, "-j2", "--target", "unit_tests"], cwd=ROOT, stdout=subprocess.DEVNULL)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
