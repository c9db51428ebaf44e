#!/usr/bin/env python3
"""The core under AddressSanitizer and UndefinedBehaviorSanitizer, and its fuzz targets.

  sanitize.py build CMAKE     configures and builds BUILD_DIR/sanitize: this source tree with
                              clang, UCXTLS_SANITIZE=ON (unit_tests, fixture_driver, fuzz_*)
  sanitize.py unit CMAKE      the unit tests, sanitized
  sanitize.py fixtures CMAKE  every row of tests/e2e/test_fixtures.py, plus hostile settings,
                              through fixture_driver (the constructor's run_ladder), sanitized
  sanitize.py fuzz CMAKE      each fuzz target for a few seconds on its committed seed corpus
                              (tests/fuzz/corpus/<target>); UCXTLSTEST_FUZZ_SECONDS changes the time,
                              UCXTLSTEST_FUZZ_RUNS=N runs each N times instead, and
                              UCXTLSTEST_FUZZ_TARGETS=a,b runs only those

Without clang the build step prints SKIP and leaves BUILD_DIR/sanitize/SKIPPED with the reason;
the other steps then SKIP with it.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import ARGS, SAN_DIR, SAN_SKIP, SOURCE_DIR, add_case, env_for, main

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def build(t, cmake):
    clang, clangxx = shutil.which("clang"), shutil.which("clang++")
    os.makedirs(SAN_DIR, exist_ok=True)
    if not clangxx or not clang:
        why = "clang not installed (Debian: clang libclang-rt-14-dev; scripts/test.sh installs them)"
        with open(SAN_SKIP, "w") as f:
            f.write(why + "\n")
        t.skip("sanitizer build", why)
        return
    with tempfile.TemporaryDirectory(prefix="ucxtls-san-probe-") as d:
        src = os.path.join(d, "p.c")
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        probe = subprocess.run([clang, "-fsanitize=address,undefined", src, "-o", os.path.join(d, "p")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode != 0:
        last = probe.stdout.decode(errors="replace").strip().splitlines()[-1:]
        why = "clang cannot link -fsanitize=address,undefined (Debian: libclang-rt-14-dev)" + \
            (": " + last[0] if last else "")
        with open(SAN_SKIP, "w") as f:
            f.write(why + "\n")
        t.skip("sanitizer build", why)
        return
    if os.path.exists(SAN_SKIP):
        os.unlink(SAN_SKIP)
    cfg = subprocess.run([cmake, "-S", SOURCE_DIR, "-B", SAN_DIR, "-DCMAKE_C_COMPILER=" + clang,
                          "-DCMAKE_CXX_COMPILER=" + clangxx, "-DUCXTLS_SANITIZE=ON",
                          "-DUCXTLS_TESTS=ON", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if not t.check("configure the sanitizer build (clang, UCXTLS_SANITIZE=ON)", cfg.returncode == 0,
                   cfg.stdout.decode(errors="replace")[-3000:]):
        return
    # The configure step lists what it can build: fixture_driver, unit_tests (with doctest),
    # fuzz_* (with libFuzzer).
    with open(os.path.join(SAN_DIR, "sanitize_targets.txt")) as f:
        targets = [l.strip() for l in f if l.strip()]
    targets += ["fuzz_" + n for n in fuzz_targets()]
    jobs = os.environ.get("UCXTLSTEST_SANITIZE_JOBS", "2")
    b = subprocess.run([cmake, "--build", SAN_DIR, "-j", jobs, "--target"] + targets,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t.check("build %s with -fsanitize=address,undefined" % " ".join(targets), b.returncode == 0,
            b.stdout.decode(errors="replace")[-4000:])


def fuzz_targets():
    try:
        with open(os.path.join(SAN_DIR, "fuzz_targets.txt")) as f:
            return [l.strip() for l in f if l.strip()]
    except OSError:
        return []


def skipped(t, what):
    if os.path.exists(SAN_SKIP):
        with open(SAN_SKIP) as f:
            t.skip(what, f.read().strip())
        return True
    return False


def exe(name):
    for sub in ("tests/hardening", "tests/fuzz", "tests"):
        p = os.path.join(SAN_DIR, sub, name)
        if os.path.exists(p):
            return p
    return None


def sanitizer_env(env):
    env = dict(env)
    env.update(SAN_ENV)
    return env


def unit(t):
    if skipped(t, "unit tests under ASan+UBSan"):
        return
    u = exe("unit_tests")
    if not u:
        t.skip("unit tests under ASan+UBSan", "unit_tests not built (doctest missing)")
        return
    p = subprocess.run([u], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=sanitizer_env(os.environ), timeout=300)
    out = p.stdout.decode(errors="replace")
    t.check("unit tests pass under ASan+UBSan", p.returncode == 0 and "ERROR: AddressSanitizer" not in out
            and "runtime error" not in out, out[-4000:])


def driver(t, drv, label, env, want=None):
    p = subprocess.run([drv], env=sanitizer_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, cwd=env.get("HOME"))
    out, err = p.stdout.decode(errors="replace").strip(), p.stderr.decode(errors="replace")
    clean = p.returncode == 0 and "Sanitizer" not in err and "runtime error" not in err
    if want is None:
        return t.check(label + ": no sanitizer report", clean, "rc %d\n%s" % (p.returncode, err[-3000:]))
    return t.check(label, clean and out == want, "rc %d, got %r, want %r\n%s" % (p.returncode, out, want, err[-3000:]))


def fixtures(t):
    if skipped(t, "fixture machines under ASan+UBSan"):
        return
    drv = exe("fixture_driver")
    if not t.check("fixture_driver was built", drv is not None):
        return
    import fixture_rows
    for machine, extra, want in fixture_rows.ROWS:
        label = "sanitized " + fixture_rows.label_of(machine, extra)
        # The row's own variables, exactly (common.env_for's UCXTLS_WRITE=always only where the row has it).
        driver(t, drv, label, env_for(machine, preload=False, UCXTLS_DEBUG="1", **dict({"UCXTLS_WRITE": None}, **extra)), want)
    # Settings that stress the formatting and list code, on machines where they get that far.
    long_cvd = ",".join(str(i) for i in range(20000))
    for machine, extra in [
        ("dgx", {"CUDA_VISIBLE_DEVICES": long_cvd}),
        ("mi300x", {"ROCR_VISIBLE_DEVICES": long_cvd, "HIP_VISIBLE_DEVICES": long_cvd}),
        ("dgx", {"UCX_TLS": "x" * 100000}),
        ("dgx", {"UCXTLS_TEMPLATE": "{copy}," * 500 + "rc"}),
        ("dgx", {"UCXTLS_TEMPLATE": "\u00e9\u4e2d\x01\x7f"}),
        ("intel-max-i915", {"ZE_AFFINITY_MASK": "x," * 30000}),
        ("broken", {}), ("empty", {}),
        (None, {"UCXTLS_SYSROOT": "/nonexistent/" + "d/" * 1000}),
    ]:
        label = "sanitized %s %s" % (machine, " ".join("%s=%d bytes" % (k, len(v)) for k, v in extra.items()) or "(defaults)")
        driver(t, drv, label, env_for(machine, preload=False, UCXTLS_DEBUG="1", **extra))


def fuzz(t):
    if skipped(t, "fuzzing"):
        return
    names = fuzz_targets()
    if not names:
        t.skip("fuzzing", "clang cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev)")
        return
    seconds = os.environ.get("UCXTLSTEST_FUZZ_SECONDS", "3")
    runs_wanted = os.environ.get("UCXTLSTEST_FUZZ_RUNS")  # a count instead of a time (-runs=N)
    only = [n for n in os.environ.get("UCXTLSTEST_FUZZ_TARGETS", "").split(",") if n]
    for name in [n for n in names if not only or n in only]:
        binary = exe("fuzz_" + name)
        seeds = os.path.join(SOURCE_DIR, "tests", "fuzz", "corpus", name)
        if not t.check("fuzz_%s was built and has a seed corpus" % name,
                       binary is not None and os.path.isdir(seeds) and os.listdir(seeds)):
            continue
        with tempfile.TemporaryDirectory(prefix="ucxtls-fuzz-") as work:
            new = os.path.join(work, "new")
            os.makedirs(new)
            # New inputs go to the scratch directory; the committed corpus is only read.
            argv = [binary, "-runs=" + runs_wanted if runs_wanted else "-max_total_time=" + seconds, "-timeout=10", "-rss_limit_mb=1024",
                    "-artifact_prefix=" + work + "/", "-print_final_stats=1", new, seeds]
            start = time.time()
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=work,
                               env=sanitizer_env(os.environ), timeout=3600 if runs_wanted else int(seconds) * 10 + 120)
            out = p.stdout.decode(errors="replace")
            runs = [l for l in out.splitlines() if l.startswith("stat::number_of_executed_units")]
            crashes = [f for f in os.listdir(work) if f != "new"]
            detail = out[-4000:]
            for c in crashes:
                with open(os.path.join(work, c), "rb") as f:
                    detail += "\n%s: %r" % (c, f.read()[:300])
            t.check("fuzz_%s for %s: no crash (%s)" % (name, runs_wanted + " runs" if runs_wanted else seconds + " s", (runs[0].split(":")[-1].strip() + " runs" if runs else "?") + " in %.0f s" % (time.time() - start)),
                    p.returncode == 0 and not crashes, detail)


STEPS = {"build": build, "unit": unit, "fixtures": fixtures, "fuzz": fuzz}


def step_case(t, step):
    if step == "build":
        build(t, ARGS[0] if ARGS else "cmake")
    else:
        STEPS[step](t)


for _step in STEPS:
    add_case(_step, step_case, _step, tags=(_step,))


if __name__ == "__main__":
    # `sanitize.py STEP [CMAKE]` runs that step (what CTest runs): the case tagged STEP; --tag,
    # -k and --list work as elsewhere.
    step = next((i for i, a in enumerate(sys.argv) if i and a in STEPS and sys.argv[i - 1] not in ("-k", "--tag", "--not-tag")), None)
    if step:
        sys.argv[step:step + 1] = ["--tag", sys.argv[step]]
    main("sanitizers: " + " ".join(sys.argv[i] for i in range(2, len(sys.argv)) if sys.argv[i - 1] in ("-k", "--tag")))
