#!/usr/bin/env python3
"""Names: what the library says about the UCXTLS_* entries it does not know.

1. An environment entry without '=' (`UCXTLS_DEBUG` alone: only a program's own execve makes
   one; tests/e2e/exec_env.c) is no variable: getenv never finds it, so it sets nothing. The
   library names it as such, in one line, never "did you mean UCXTLS_DEBUG?" for UCXTLS_DEBUG,
   and carries on (the value is set; the entry turns nothing on or off).
2. Every knob that the project's docs, scripts and tests name (environment variables they read or
   tell people to set), exported with a value, leaves the library silent in /bin/sh: the project's
   own knobs are named outside the library's namespace (UCXTLSTEST_*), so that a shell that has the
   module loaded and a knob exported prints nothing in every process. The knobs are found in the
   files themselves (os.environ reads, shell expansions, CTest ENVIRONMENT entries, NAME=value in
   the docs), so a knob added later is checked too.
"""
import glob
import os
import re

from harness import SOURCE_DIR, ALL, add_case, case, env_for, fixture, main, run

EXEC_ENV = os.environ.get("UCXTLSTEST_EXEC_ENV", "")
SHOW = 'printf "%s" "${UCX_TLS-<unset>}"'


def exec_env(entries):
    """/bin/sh -c SHOW with exactly these environment entries (the library preloaded, intel-xe:
    the default writes all there)."""
    base = ["PATH=/usr/bin:/bin", "HOME=" + env_for()["HOME"], "LD_PRELOAD=" + env_for()["LD_PRELOAD"],
            "UCXTLS_SYSROOT=" + fixture("intel-xe")]
    p = run([EXEC_ENV] + base + entries + ["--", "/bin/sh", "-c", SHOW], {})
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@case("an entry without '=' is named as what it is, and sets nothing")
def entry_without_equals(t):
    if not os.path.exists(EXEC_ENV):
        t.skip("entries without '='", "the exec_env helper is not built (UCXTLSTEST_EXEC_ENV); run through ctest")
        return
    rc, tls, err = exec_env(["UCXTLS_DEBUG=1"])
    t.check("control: exec_env passes entries as given (UCXTLS_DEBUG=1 prints the debug line)",
            rc == 0 and tls == ALL and err.startswith("ucxtls: set UCX_TLS=" + ALL), err)
    for entry, why in [("UCXTLS_DEBUG", "an option's name: no debug line"),
                       ("UCXTLS_DISABLE", "an option's name: the library is not switched off"),
                       ("UCXTLS_DEBG", "a misspelt name: no suggestion either")]:
        rc, tls, err = exec_env([entry])
        t.equal("entry %s without '=' (%s): one line naming the entry, the value set" % (entry, why),
                (rc, tls, err), (0, ALL, "ucxtls: environment entry %s without '=' (it sets nothing); ignored\n" % entry))


def options():
    """The library's own variable names, from the options table in the shim source."""
    text = open(os.path.join(SOURCE_DIR, "shim", "options.cc"), encoding="utf-8").read()
    table = re.search(r"^const Option kOptions\[[^]]*\] = \{\n(.*?)^\};", text, re.M | re.S).group(1)
    return set(re.findall(r'^\s*\{"([A-Z_]+)",', table, re.M))


NAME = r"(UCXTLS[A-Z0-9_]*)"
# Where a file names an environment variable: read (Python, shell), set for a test (CTest
# ENVIRONMENT), or told to people (NAME=value in the docs; -DNAME=... is a CMake option, not one).
PATTERNS = {
    ".py": [r"environ(?:\.get\(|\[)\s*[\"']" + NAME, r"^[A-Z_]+ = \"" + NAME + "\"", r"\$\{" + NAME],
    ".sh": [r"\$\{?" + NAME, r"^\s*(?:export\s+)?" + NAME + "="],
    "CMakeLists.txt": [r"\"" + NAME + "="],
    ".md": [r"(?<![-\w])" + NAME + "=", r"\$\{?" + NAME],
}


def knobs():
    """{name: first file:line naming it} over README.md, docs, scripts, tests and .ci."""
    files = [os.path.join(SOURCE_DIR, "README.md")] + glob.glob(os.path.join(SOURCE_DIR, "docs", "*.md"))
    files += glob.glob(os.path.join(SOURCE_DIR, "scripts", "*")) + [os.path.join(SOURCE_DIR, ".ci", "run")]
    files += glob.glob(os.path.join(SOURCE_DIR, "tests", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(SOURCE_DIR, "tests", "**", "CMakeLists.txt"), recursive=True)
    found = {}
    for path in sorted(files):
        kind = next((k for k in PATTERNS if path.endswith(k)), ".sh" if path.endswith(("/run", ".sh")) else None)
        if not kind or not os.path.isfile(path):
            continue
        for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            for pattern in PATTERNS[kind]:
                for name in re.findall(pattern, line):
                    found.setdefault(name, "%s:%d" % (os.path.relpath(path, SOURCE_DIR), no))
    return found


@case("every knob the docs and scripts name, exported, leaves the library silent")
def knobs_silent(t):
    own = options()
    found = {n: where for n, where in knobs().items() if n not in own}
    # The knobs the docs tell people to set must be among them, or the scan found nothing real.
    named = [n for n in found if n.endswith(("TORCH", "FUZZ_SECONDS", "NO_INSTALL"))]
    t.check("the scan finds the torch, fuzz and no-install knobs (%d knobs in all)" % len(found), len(named) == 3,
            repr(sorted(found)))
    inside = sorted("%s (%s)" % (n, w) for n, w in found.items() if n.startswith("UCXTLS_"))
    t.check("no knob of the project is in the library's namespace (UCXTLS_*): they are UCXTLSTEST_*", not inside,
            "\n".join(inside))
    for name, where in sorted(found.items()):
        var = name + "n1" if name.endswith("_") else name  # a prefix (UCXTLSTEST_MACHINE_<node>)
        p = run(["/bin/sh", "-c", "exit 0"], env_for("dgx", **{var: "1"}))
        t.equal("%s=1 exported (%s): the library prints nothing" % (var, where), p.stderr.decode(), "")


if __name__ == "__main__":
    main("names: entries without '=', and the project's own knobs")
