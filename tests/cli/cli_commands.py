"""test_cli.py's env, run, --help (every variable and subcommand), --version and the errors of a
command line: one stderr line each."""
import os
import re

from harness import ALL, ALWAYS, LIB, SOURCE_DIR, add_case, case, env_for, run, sh_value
from command_common import CLI, STALE, cli


def options_table():
    """The variable names of the kOptions table, from the shim source that defines it."""
    shim = os.path.join(SOURCE_DIR, "shim")
    for name in sorted(os.listdir(shim)):
        if name.endswith((".cc", ".c", ".h")):
            text = open(os.path.join(shim, name), encoding="utf-8").read()
            m = re.search(r"^const Option kOptions\[[^]]*\] = \{\n(.*?)^\};", text, re.M | re.S)
            if m:
                return re.findall(r'^\s*\{"([A-Z_]+)",', m.group(1), re.M)
    return []


@case("env: eval in /bin/sh gives what the library gives")
def env_eval(t):
    # --- env: eval in /bin/sh gives what the library gives.
    show = 'eval "$("$0" env)" && printf "%s|%s" "${UCX_TLS-<unset>}" "${UCXTLS_DERIVED-<unset>}"'
    for machine, extra in [("dgx", {}), ("intel-xe", {}), ("no-rdma", {}), ("no-rdma", STALE), ("no-gpu", STALE), ("dgx", {"UCX_TLS": "it's mine"}),
                           ("no-gpu", {"UCXTLS_TEMPLATE": "\\tcp,self,{copy}"}), ("dgx", {"UCXTLS_DISABLE": "1"}),
                           ("mi300x", {"UCXTLS_TEMPLATE": "^cuda_ipc,{copy}:aux"})]:
        p = run(["/bin/sh", "-c", show, CLI], env_for(machine, preload=False, **extra))
        tls, derived, err = sh_value(env_for(machine, **extra))
        t.equal("env: eval \"$(ucxtls env)\" on %s %s == library" % (machine, extra),
                p.stdout.decode(), "%s|%s" % (tls, derived), p.stderr.decode())


@case("env: unset, nothing, errors")
def env_prints(t):
    p = cli(["env"], env_for("no-gpu", preload=False, **STALE))
    t.equal("env prints unset for an inherited value that must go", p.stdout.decode(), "unset UCX_TLS UCXTLS_DERIVED\n")
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS="tcp"))
    t.equal("env prints nothing when UCX_TLS is the user's", (p.stdout, p.returncode), (b"", 0))
    p = cli(["env"], env_for("dgx", preload=False, UCXTLS_ACCEL="foo"))
    t.check("env with an invalid setting: nothing on stdout, the library's one line on stderr, exit 1",
            p.stdout == b"" and p.returncode == 1 and p.stderr.decode().startswith("ucxtls: UCXTLS_ACCEL=")
            and p.stderr.count(b"\n") == 1, repr(p))

    p = cli(["env", "--format=csh"], env_for("dgx", preload=False))
    t.check("env --format=csh: exit 2, one line naming the format as unknown (not the argument)",
            p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
            and b"unknown format 'csh'" in p.stderr and b"unknown argument" not in p.stderr, repr(p))
    p = cli(["env"], env_for("intel-xe", preload=False, UCXTLS_ACCEL="foo", **STALE))
    t.check("env with an invalid setting and an inherited value: unset on stdout (as the library removes it), exit 1",
            p.stdout == b"unset UCX_TLS UCXTLS_DERIVED\n" and p.returncode == 1, repr(p))
    p = cli(["env"], env_for("dgx", preload=False))
    t.equal("env prints nothing on dgx (UCX's default stands)", (p.stdout, p.returncode), (b"", 0))
    p = cli(["env"], env_for("dgx", preload=False, **ALWAYS))
    derived = p.stdout.decode().split("'")[1] if "'" in p.stdout.decode() else "?"
    p = cli(["env"], env_for("dgx", preload=False, UCX_TLS=derived, UCXTLS_DERIVED=derived, **ALWAYS))
    t.equal("env prints nothing when the shell already has the value it would derive", (p.stdout, p.returncode), (b"", 0))


@case("run: the library from beside the command")
def run_command(t):
    # --- run: the library from beside the command, LD_PRELOAD kept, status passed through.
    p = cli(["run", "sh", "-c", 'printf "%s|%s" "$UCX_TLS" "$LD_PRELOAD"'], env_for("intel-xe", preload=False))
    t.equal("run: the command gets the library's value and LD_PRELOAD", p.stdout.decode(),
            ALL + "|" + os.path.realpath(LIB), p.stderr.decode())
    other = "/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libm.so.6") else "libm.so.6"
    p = cli(["run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"; exit 7'], env_for("dgx", preload=False, LD_PRELOAD=other))
    t.equal("run: existing LD_PRELOAD entries kept, first (the library appended); exit status passes through",
            (p.stdout.decode(), p.returncode), (other + ":" + os.path.realpath(LIB), 7), p.stderr.decode())
    p = cli(["run", "sh", "-c", 'printf "%s" "$LD_PRELOAD"'], env_for("dgx", preload=False, LD_PRELOAD=os.path.realpath(LIB)))
    t.equal("run: the library is not added twice", p.stdout.decode(), os.path.realpath(LIB))
    p = cli(["run", "sh", "-c", "kill -TERM $$"], env_for("dgx", preload=False))
    t.equal("run: a signal death passes through (it is an exec)", p.returncode, -15)
    for args, rc in ((["run"], 2), (["run", "--"], 2), (["run", "/nonexistent/prog"], 127)):
        p = cli(args, env_for("dgx", preload=False))
        t.check("run %s: exit %d, one stderr line, nothing on stdout" % (args[1:], rc),
                p.returncode == rc and p.stdout == b"" and p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"ucxtls: "),
                repr(p))


@case("--help: every variable of the options table")
def help_variables(t):
    # --- help, version, errors.
    p = cli(["--help"], env_for(None, preload=False))
    out = p.stdout.decode()
    names = options_table()
    t.check("--help lists every variable of the kOptions table (%d)" % len(names),
            p.returncode == 0 and len(names) >= 8 and all(re.search(r"^  %s\b" % n, out, re.M) for n in names), out)


@case("README variable table == --help")
def readme_table(t):
    out = cli(["--help"], env_for(None, preload=False)).stdout.decode()
    # The README's variable table and --help come from the same table: names and defaults agree.
    readme = open(os.path.join(SOURCE_DIR, "README.md")).read()
    table = dict(re.findall(r"^\| `(UCXTLS_[A-Z_]+)` \| ([^|]+) \|", readme, re.M))
    shown = dict(re.findall(r"^  (UCXTLS_[A-Z_]+)\s+default (\S+)$", out, re.M))
    norm = {k: v.strip().strip("`").replace("—", "-") for k, v in table.items()}
    t.equal("README variable table == --help (names and defaults)", norm, shown)


def subcommands():
    """The subcommands ucxtls --help lists (its table, kCommands)."""
    out = cli(["--help"], env_for(None, preload=False)).stdout.decode()
    return re.findall(r"^  ([a-z]+) ", out.split("commands:\n", 1)[1].split("\n\n", 1)[0], re.M)


def help_case(t, name):
    p = cli([name, "--help"], env_for("intel-xe", preload=False))
    out = p.stdout.decode()
    t.check("%s --help: usage on stdout, exit 0, nothing on stderr" % name,
            p.returncode == 0 and out.startswith("usage: ucxtls %s" % name) and "\noptions:\n" in out
            and re.search(r"^  -h, --help ", out, re.M) and p.stderr == b"", repr(p))
    for form in ([name, "-h"], ["help", name]):
        q = cli(form, env_for("intel-xe", preload=False))
        t.equal("%s: the same text as %s --help" % (" ".join(form), name), (q.stdout, q.returncode), (p.stdout, 0))


for _name in ("explain", "env", "run", "doctor", "probe", "lib"):
    add_case("--help: ucxtls %s --help" % _name, help_case, _name)


@case("--help: every subcommand has a row above")
def help_rows(t):
    t.equal("the subcommands --help lists == those with a --help row",
            subcommands(), ["explain", "env", "run", "doctor", "probe", "lib"])


@case("a misspelt command: exit 2, one line naming the closest command, as a misspelt variable's does")
def misspelt_command(t):
    env = env_for("intel-xe", preload=False)
    for argv, want in ((["explian"], "explain"), (["dcotor", "--json"], "doctor"), (["help", "lbi"], "lib"), (["prboe"], "probe")):
        p = cli(argv, env)
        t.check("ucxtls %s: exit 2, nothing on stdout, one line: did you mean %s?" % (" ".join(argv), want),
                p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
                and ("did you mean %s?" % want).encode() in p.stderr, repr(p))
    p = cli(["frobnicate"], env)
    t.check("ucxtls frobnicate (no command close): exit 2, one line, no guess",
            p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"did you mean" not in p.stderr, repr(p))


@case("--help: run --help is help, run -- --help runs --help; flags with a value in both forms")
def help_forms(t):
    env = env_for("intel-xe", preload=False)
    p = cli(["run", "--help", "sh", "-c", "echo RAN"], env)
    t.check("run --help sh -c ...: the help, nothing run", p.returncode == 0 and b"RAN" not in p.stdout
            and p.stdout.startswith(b"usage: ucxtls run"), repr(p))
    p = cli(["run", "--", "--help"], env)
    t.check("run -- --help: tries to run a program named --help (exit 127, one stderr line)",
            p.returncode == 127 and p.stdout == b"" and b"'--help'" in p.stderr, repr(p))
    p = cli(["run", "sh", "-c", 'printf %s "$1"', "sh", "--help"], env)
    t.equal("run COMMAND --help: --help is COMMAND's argument", (p.stdout, p.returncode), (b"--help", 0), repr(p))
    eq = cli(["env", "--format=slurm"], env)
    sp = cli(["env", "--format", "slurm"], env)
    t.check("env --format slurm == env --format=slurm (the export lines, exit 0)",
            eq.returncode == sp.returncode == 0 and eq.stdout == sp.stdout
            and eq.stdout.startswith(b"export UCX_TLS=all\n"), repr((eq, sp)))
    p = cli(["env", "--format", "--help"], env)
    t.check("env --format --help: --help is the value of --format (refused as a format, exit 2)",
            p.returncode == 2 and p.stdout == b"" and b"--format=--help" in p.stderr, repr(p))
    for args in (["env", "--format"], ["doctor", "--value"], ["doctor", "--template"]):
        p = cli(args, env)
        t.check("%s without its value: exit 2, one stderr line naming the flag" % " ".join(args),
                p.returncode == 2 and p.stdout == b"" and p.stderr.count(b"\n") == 1
                and (" %s needs a value" % args[-1]).encode() in p.stderr, repr(p))
    p = cli(["probe", "--help"], env)
    t.check("probe --help: the helper where it is (<libexecdir>/ucxtls as installed, beside the command in a build tree)",
            b"<prefix>/libexec/ucxtls/ucxtls-probe" in p.stdout.replace(b"\n", b" ")
            and b"beside the command in a build tree" in p.stdout.replace(b"\n", b" ")
            and b"beside the library" not in p.stdout.replace(b"\n", b" "), repr(p))
    p = cli(["lib"], env)
    t.equal("lib: the library beside the command, one line", (p.stdout.decode(), p.returncode),
            (os.path.realpath(LIB) + "\n", 0), repr(p))


@case("README quick start: the number of Debian packages scripts/test.sh installs")
def readme_packages(t):
    readme = open(os.path.join(SOURCE_DIR, "README.md")).read()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    said = [int(n) for n in re.findall(r"\b(\d+) Debian packages", quick)]
    # The list as bash reads it (the script's own array, with the build's packages it sources).
    p = run(["bash", "-c", '. "$2"; eval "$(sed -n "/^PACKAGES=(/,/)/p" "$1")"; echo ${#PACKAGES[@]}', "bash",
             os.path.join(SOURCE_DIR, "scripts", "test.sh"), os.path.join(SOURCE_DIR, "scripts", "build-packages.sh")],
            env_for(None, preload=False))
    count = int(p.stdout.decode().strip() or -1)
    t.check("the quick start says %s Debian packages; scripts/test.sh's PACKAGES has %d" % (said, count),
            said and all(n == count for n in said), quick)


@case("--version, and errors: one stderr line")
def version_errors(t):
    version = re.search(r"project\(ucxtls VERSION (\S+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
    p = cli(["--version"], env_for(None, preload=False))
    t.equal("--version prints the project version", (p.stdout.decode(), p.returncode), ("ucxtls %s\n" % version, 0))
    news = re.search(r"^## (\S+)", open(os.path.join(SOURCE_DIR, "NEWS.md")).read(), re.M).group(1)
    t.equal("NEWS.md's newest section is that version (no 'Unreleased' changes under an older number)", news, version)
    for args in (["frobnicate"], [], ["explain", "--yaml"], ["env", "x"], ["doctor", "--bogus"], ["lib", "x"],
                 ["help", "frobnicate"]):
        p = cli(args, env_for(None, preload=False))
        t.check("%s: non-zero exit, one stderr line, nothing on stdout" % (args or "no command"),
                p.returncode != 0 and p.stdout == b"" and p.stderr.count(b"\n") == 1, repr(p))
