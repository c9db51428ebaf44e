#!/usr/bin/env python3
"""The docs against the code they describe.

- docs/command.md's `explain --json` reference: every key path and every action that
  `ucxtls explain --json` emits, over every fixture machine and the odd cases that make each key
  and action appear (keep, clear, repair, an invalid setting, a misspelt variable, a ucx.conf,
  the driver tier, a template, a probe that fails), is in its tables, and every key and action
  the tables name is emitted; each value's JSON type is one its row allows.
- docs/command.md's `doctor --json` keys: the same, over each GPU family, nothing to check, a
  value given, a build named and no ucx_info; the object is one line, its status the exit status.
- The `$ ... ucxtls explain` and `ucxtls doctor --json` transcripts of docs/command.md, run on the
  fixture machine they name, print what the page shows.
- README.md stays under 12 KB and leads with which value each kind of program gets; every
  relative link and #anchor of README.md and docs/*.md resolves.
- The from-source build the docs show uses a build directory of its own, not scripts/test.sh's.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, LIB, SOURCE_DIR, case, env_for, fixture, have, main, machines, run  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
COMMAND_MD = os.path.join(SOURCE_DIR, "docs", "command.md")
README = os.path.join(SOURCE_DIR, "README.md")
README_LIMIT = 12000  # 12 KB: detail goes to docs/
FAMILIES = ("cuda", "rocm", "ze")
CUDA_LIST = "rc_x,rc,dc_x,dc,cuda_copy"  # the list trainers hard-code

# The words of the tables' "type" column, and the JSON values each allows.
TYPES = {
    "string": {str}, "string or null": {str, type(None)}, "integer": {int}, "true or false": {bool},
    "true, false or null": {bool, type(None)}, "list of strings": {list}, "list of objects": {list}, "object": {dict},
}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The text below the line `heading` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index("\n" + heading + "\n") + len(heading) + 2
    m = re.compile(r"^#{1,%d} " % level, re.M).search(text, start)
    return text[start:m.start() if m else len(text)]


def table_rows(text):
    """[(first cell without its code marks, [other cells])] of the markdown table rows in text."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if m:
            rows.append((m.group(1), [c.strip() for c in m.group(2).split(" | ")]))
    return rows


def documented(heading="## `explain --json`"):
    """({key path: allowed types}, {action}) from docs/command.md's `explain --json` section (or
    another command's JSON section)."""
    text = section(read(COMMAND_MD), heading)
    if "\n### Actions\n" not in text:
        return {path: cells[0] for path, cells in table_rows(section(text, "### Keys"))}, set()
    keys = {path: cells[0] for path, cells in table_rows(section(text, "### Keys"))}
    actions = {name for name, _ in table_rows(section(text, "### Actions"))}
    return keys, actions


def paths(obj, prefix=""):
    """[(key path, value)] of a JSON object: nested objects' keys joined with '.', the family
    objects of evidence as evidence.<family>, the entries of variables as variables.<NAME>."""
    out = []
    for k, v in obj.items():
        if prefix == "evidence." and k in FAMILIES:
            k = "<family>"
        elif prefix == "variables.":
            k = "<NAME>"
        path = prefix + k
        out.append((path, v))
        if isinstance(v, dict):
            out += paths(v, path + ".")
        elif isinstance(v, list):  # a list of objects: its items' keys as path[].key
            for item in v:
                if isinstance(item, dict):
                    out += paths(item, path + "[].")
    return out


def scenarios():
    """(label, env) for every fixture machine with the defaults, and the odd cases."""
    out = [(name, env_for(name, preload=False)) for name in sorted(machines.MACHINES)]
    home = tempfile.mkdtemp(prefix="ucxtls-docs-home-")
    with open(os.path.join(home, "ucx.conf"), "w") as f:
        f.write("UCX_TLS=tcp\n")
    cache = tempfile.mkdtemp(prefix="ucxtls-docs-cache-")
    pair = {"UCX_TLS": "rc,rocm_copy", "UCXTLS_DERIVED": "rc,rocm_copy"}  # inherited from another node
    odd = [
        ("no-gpu, an inherited pair (clear)", "no-gpu", pair),
        ("dgx, an inherited pair (derived again)", "dgx", pair),
        ("intel-xe, the CUDA list kept (keep, warning)", "intel-xe", {"UCX_TLS": CUDA_LIST}),
        ("intel-xe, the CUDA list and UCXTLS_REPAIR=1 (repair)", "intel-xe", {"UCX_TLS": CUDA_LIST, "UCXTLS_REPAIR": "1"}),
        ("dgx, UCXTLS_DISABLE=1", "dgx", {"UCXTLS_DISABLE": "1"}),
        ("dgx, an invalid UCXTLS_ACCEL (error)", "dgx", {"UCXTLS_ACCEL": "bogus"}),
        ("dgx, a misspelt variable", "dgx", {"UCXTLS_DEBGU": "1"}),
        ("dgx, a ucx.conf in HOME assigning UCX_TLS", "dgx", {"HOME": home}),
        ("dgx, the portable template", "dgx", {"UCXTLS_TEMPLATE": "{rdma},sm,self,tcp,{ipc},{copy}"}),
        ("dgx, the driver tier with nothing saved", "dgx", {"UCXTLS_PROBE": "driver", "UCXTLS_CACHE_DIR": cache}),
        ("dgx, CUDA_VISIBLE_DEVICES=1,3", "dgx", {"CUDA_VISIBLE_DEVICES": "1,3"}),
    ]
    out += [(label, env_for(m, preload=False, **extra)) for label, m, extra in odd]
    # Every path of the probe too long to open (a sysroot of 2 KB of "/."): each probe fails with
    # ENAMETOOLONG, which the evidence names (and the setting itself is refused).
    out.append(("an overlong UCXTLS_SYSROOT (probe errors)",
                env_for(None, preload=False, UCXTLS_SYSROOT=fixture("dgx") + "/." * 1000)))
    return out


_emitted = {}


def emitted(t):
    """[(label, JSON)] of explain --json over every scenario, once per process."""
    if "runs" not in _emitted:
        runs = []
        for label, env in scenarios():
            p = run([CLI, "explain", "--json"], env)
            try:
                runs.append((label, json.loads(p.stdout.decode())))
                _emitted.setdefault("env", {})[label] = env
            except ValueError as e:
                t.check("%s: explain --json prints JSON" % label, False, "%s\n%r\n%r" % (e, p.stdout, p.stderr))
        _emitted["runs"] = runs
    return _emitted["runs"]


@case("command.md names every key explain --json emits, and emits every key it names, with their types")
def json_keys(t):
    if not t.check("the command is built", os.access(CLI, os.X_OK), CLI):
        return
    keys, _ = documented()
    t.check("command.md's Keys table has rows (%d)" % len(keys), len(keys) > 20, repr(keys))
    unknown = {p: w for p, w in keys.items() if w not in TYPES}
    t.check("every row's type is one of: %s" % ", ".join(TYPES), not unknown, repr(unknown))
    seen = {}  # path -> {type: first scenario}
    runs = emitted(t)
    for label, j in runs:
        for path, value in paths(j):
            seen.setdefault(path, {}).setdefault(type(value), label)
    t.check("explain --json ran on %d machines and cases" % len(runs), len(runs) >= len(sorted(machines.MACHINES)) + 10)
    t.equal("keys emitted but not in command.md", sorted(set(seen) - set(keys)), [])
    t.equal("keys in command.md but never emitted", sorted(set(keys) - set(seen)), [])
    for path in sorted(set(seen) & set(keys)):
        wrong = {tp.__name__: label for tp, label in seen[path].items() if tp not in TYPES.get(keys[path], set())}
        t.check("%s: every value emitted is %s" % (path, keys[path]), not wrong, "emitted %r" % wrong)
    # A key is in every object that holds its parent, unless its row says "only with `NAME=value`":
    # then exactly in the runs with that setting.
    rows = dict(table_rows(section(section(read(COMMAND_MD), "## `explain --json`"), "### Keys")))
    for path in sorted(set(seen) & set(keys)):
        only = re.search(r"only with `([A-Z_]+)=([^`]*)`", rows[path][1])
        parent = path.rsplit(".", 1)[0] if "." in path else None
        wrong = []
        for label, j in runs:
            got = dict(paths(j))
            if parent and parent not in got:
                continue
            want = _emitted["env"][label].get(only.group(1)) == only.group(2) if only else True
            if (path in got) != want:
                wrong.append(label)
        t.check("%s: %s" % (path, "only where %s=%s" % only.groups() if only else "in every run (its row names no condition)"),
                not wrong, "wrong in: %r" % wrong)
    # The placeholders stand for exactly what the page says they do.
    t.check("evidence.<family> stands for cuda, rocm and ze: each run has all three",
            all(set(FAMILIES) <= set(j.get("evidence", {})) for _, j in runs))
    help_out = run([CLI, "--help"], env_for(None, preload=False)).stdout.decode()
    names = set(re.findall(r"^  ([A-Z][A-Z0-9_]+) +\S", help_out, re.M))
    shown = {k for _, j in runs for k in j.get("variables", {})}
    t.equal("variables.<NAME> stands for the variables ucxtls --help lists", sorted(shown), sorted(names))


@case("command.md names every action explain --json emits, and emits every action it names")
def json_actions(t):
    if not t.check("the command is built", os.access(CLI, os.X_OK), CLI):
        return
    _, actions = documented()
    seen = {}
    for label, j in emitted(t):
        seen.setdefault(j.get("action"), label)
    t.equal("actions emitted but not in command.md", sorted(set(seen) - actions, key=str), [])
    t.equal("actions in command.md but never emitted", sorted(actions - set(seen)), [])


def doctor_scenarios():
    """(label, argv after the command, env) that make every key of doctor --json appear: each GPU
    family, nothing to check (with and without GPUs), a value given, a build named, no ucx_info."""
    fakes = os.environ.get("UCXTLSTEST_FAKE_UCX", os.path.join(BUILD_DIR, "tests", "cli", "fakes-ucx"))
    out = [(m, [], env_for(m, preload=False)) for m in ("intel-xe", "mi300x", "no-rdma", "dgx", "no-gpu")]
    out += [("dgx, --value tcp,cuda_copy", ["--value", "tcp,cuda_copy"], env_for("dgx", preload=False)),
            ("intel-xe, --ucx the nixl-like build", ["--ucx", os.path.join(fakes, "nixl")], env_for("intel-xe", preload=False)),
            ("no ucx_info in PATH", ["--value", "tcp"], env_for(None, preload=False, PATH="/nonexistent"))]
    return out


@case("command.md names every key doctor --json emits, and emits every key it names, with their types")
def doctor_json_keys(t):
    if not t.check("the command is built", os.access(CLI, os.X_OK), CLI):
        return
    if not have("ucx_info"):
        t.skip("doctor --json", "ucx_info not installed (Debian ucx-utils); scripts/test.sh installs it")
        return
    keys, _ = documented("## `doctor --json`")
    t.check("command.md's doctor --json Keys table has rows (%d)" % len(keys), len(keys) >= 10, repr(keys))
    seen = {}
    for label, args, env in doctor_scenarios():
        p = run([CLI, "doctor", "--json"] + args, env)
        lines = p.stdout.decode().splitlines()
        try:
            j = json.loads(lines[0]) if len(lines) == 1 else None
        except ValueError:
            j = None
        if not t.check("%s: doctor --json prints one object on one line, its status the exit status" % label,
                       isinstance(j, dict) and j.get("status") == p.returncode, repr(p.stdout) + repr(p.stderr)):
            continue
        # The messages: an error before any row, the one stderr line (as without --json); after the
        # rows, the failures, which the text shows on stdout (its verdict quotes the first), stderr silent.
        text = run([CLI, "doctor"] + args, env)
        err, out = p.stderr.decode().splitlines(), text.stdout.decode().splitlines()
        said = (err == ["ucxtls: " + m for m in j["messages"]] and not out) if err else (
            not j["messages"] if not j["status"] else j["messages"][0][len("doctor: "):] in out[-1])
        t.check("%s: its messages are the stderr line before any row, or the failures the text's verdict quotes" % label,
                said and text.stderr.decode().splitlines() == err, "%r\n%s%s" % (j["messages"], p.stderr.decode(), "\n".join(out)))
        for path, value in paths(j):
            seen.setdefault(path, {}).setdefault(type(value), label)
    t.equal("keys emitted but not in command.md", sorted(set(seen) - set(keys)), [])
    t.equal("keys in command.md but never emitted", sorted(set(keys) - set(seen)), [])
    for path in sorted(set(seen) & set(keys)):
        wrong = {tp.__name__: label for tp, label in seen[path].items() if tp not in TYPES.get(keys[path], set())}
        t.check("%s: every value emitted is %s" % (path, keys[path]), not wrong, "emitted %r" % wrong)


INSTALLED_MACHINES = "/opt/ucxtls/share/ucxtls/machines"  # the README's install prefix


def transcripts(text):
    """[(command line, [output lines])] of the `$ ` lines in text's fenced blocks."""
    out = []
    for block in re.findall(r"^```\n(.*?)^```$", text, re.M | re.S):
        cur = None
        for line in block.splitlines():
            if line.startswith("$ "):
                cur = (line[2:], [])
                out.append(cur)
            elif cur is not None:
                cur[1].append(line)
    return out


@case("command.md: its explain and doctor --json transcripts print what the page shows, on the machine they name")
def explain_transcripts(t):
    if not t.check("the command is built", os.access(CLI, os.X_OK), CLI):
        return
    shown = [(c, o) for c, o in transcripts(read(COMMAND_MD)) if re.search(r"\bucxtls (explain|doctor --json)\b", c)]
    t.check("command.md has explain transcripts (%d)" % len(shown), len(shown) >= 3, repr(shown))
    t.check("... and a doctor --json one", any("doctor --json" in c for c, _ in shown), repr(shown))
    # The machines the package installs (CMakeLists.txt), where a user of the package finds them.
    names = re.search(r"set\(UCXTLS_RECORDED_MACHINES ([^)]*)\)", read(os.path.join(SOURCE_DIR, "CMakeLists.txt"))).group(1).split()
    for command, output in shown:
        m = re.match(r"^UCXTLS_SYSROOT=%s/(\S+) " % re.escape(INSTALLED_MACHINES), command)
        if not t.check("%s: names an installed machine as UCXTLS_SYSROOT=%s/NAME" % (command, INSTALLED_MACHINES),
                       m and m.group(1) in names, "installed: %s" % names):
            continue
        root = fixture(m.group(1))
        line = command.replace("%s/%s" % (INSTALLED_MACHINES, m.group(1)), shlex.quote(root))
        line = re.sub(r"\bucxtls (explain|doctor)\b", lambda c: shlex.quote(CLI) + " " + c.group(1), line, 1)
        line = re.sub(r"\s+#.*$", "", line)
        p = run(["/bin/sh", "-c", line], env_for(None, preload=False))
        got = p.stdout.decode().rstrip("\n").replace(root, "%s/%s" % (INSTALLED_MACHINES, m.group(1))).splitlines()
        t.equal("$ %s" % command, got, output, p.stderr.decode())


def headings_and_anchors(text):
    """The anchors a markdown file defines: GitHub's slug of each heading outside code blocks
    (lower case, punctuation but - and _ dropped, spaces as -, -1, -2 for repeats), and <a id>."""
    anchors, count = set(), {}
    for line in re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S).splitlines():
        m = re.match(r"^#{1,6} (.*?)\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n = count.get(slug, 0)
            count[slug] = n + 1
            anchors.add(slug if n == 0 else "%s-%d" % (slug, n))
    anchors.update(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    return anchors


def doc_files():
    docs = os.path.join(SOURCE_DIR, "docs")
    return [README] + [os.path.join(docs, n) for n in sorted(os.listdir(docs)) if n.endswith(".md")]


@case("README.md and docs/*.md: every relative link and #anchor resolves")
def links(t):
    broken, count = [], 0
    for path in doc_files():
        text = re.sub(r"^```.*?^```$", "", read(path), flags=re.M | re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = "%s: (%s)" % (os.path.relpath(path, SOURCE_DIR), target)
            if not os.path.exists(dest):
                broken.append(where + " no such file")
            elif anchor and dest.endswith(".md") and anchor not in headings_and_anchors(read(dest)):
                broken.append(where + " no such anchor")
    t.check("%d relative links in %d files, none broken" % (count, len(doc_files())), count > 50 and not broken,
            "\n".join(broken))


@case("README.md: under 12 KB, leads with which value each kind of program gets")
def readme_size(t):
    size = os.path.getsize(README)
    t.check("README.md is %d bytes, under %d (detail goes to docs/)" % (size, README_LIMIT), size < README_LIMIT)
    text = read(README)
    first = re.search(r"^## (.*)$", text, re.M)
    t.equal("the first section is the per-program guide", first and first.group(1), "Which value for which program")
    guide = section(text, "## Which value for which program") if first else ""
    for who in ("trainer", "inference server", "MPI", "site-wide"):
        t.check("the guide has a row for: %s" % who, re.search(r"^\|[^|\n]*%s" % who, guide, re.M | re.I), guide)
    quick = section(text, "## Quick start") if "\n## Quick start\n" in text else ""
    block = re.search(r"^```\n(.*?)^```$", quick, re.M | re.S)
    commands = [l.split("#")[0].strip() for l in (block.group(1) if block else "").splitlines() if not l.startswith(" ")]
    t.equal("the quick start's block is exactly two commands", commands, ["scripts/run.sh [COMMAND...]", "scripts/test.sh"])
    t.check("a Limits section", "\n## Limits\n" in text)


@case("README: its recorded GPU node for scripts/run.sh is one the build writes, and prints what it says")
def readme_recorded_node(t):
    text = read(README)
    m = re.search(r"`UCXTLS_SYSROOT=\$PWD/build-run/machines/(\S+) scripts/run.sh` prints\s+`([^`]*)`", text)
    if not t.check("the README names a recorded node for scripts/run.sh, and what it prints", m):
        return
    name, shown = m.groups()
    built = os.path.join(BUILD_DIR, "machines", name)
    t.check("the build wrote machines/%s (run.sh's build-run/ is a build of the same project)" % name,
            os.path.isdir(built), built)
    p = run([CLI, "explain"], dict(env_for(None, preload=False), UCXTLS_SYSROOT=built))
    t.check("ucxtls explain there prints the line %r" % shown, shown in p.stdout.decode().splitlines(),
            p.stdout.decode() + p.stderr.decode())


@case("usage.md: its first block runs as printed, writing the machines into a directory of the user's")
def usage_first_block(t):
    text = read(os.path.join(SOURCE_DIR, "docs", "usage.md"))
    block = re.search(r"^```\n(.*?)^```$", text, re.M | re.S).group(1)
    t.check("the block writes no shared path such as /tmp/machines: mktemp -d", "/tmp/" not in block
            and "mktemp -d" in block, block)
    # scripts/run.sh would build the library in build-run/; the built command's `run` does the same
    # thing (COMMAND with the library preloaded) without a second build.
    script = block.replace("scripts/run.sh ", shlex.quote(CLI) + " run ")
    home = tempfile.mkdtemp(prefix="ucxtls-docs-usage-")
    p = subprocess.run(["bash", "-e", "-c", script], cwd=SOURCE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env_for(None, preload=False, HOME=home, TMPDIR=home), timeout=120)
    made = [d for d in os.listdir(home) if os.path.isdir(os.path.join(home, d, "intel-xe"))]
    t.check("run as printed: prints all (the intel-xe machine), the machines in a new directory of mode 0700",
            p.returncode == 0 and p.stdout == b"all\n" and len(made) == 1
            and os.stat(os.path.join(home, made[0])).st_mode & 0o077 == 0, repr(p))
    shutil.rmtree(home, ignore_errors=True)

@case("docs: the from-source build uses its own directory, not scripts/test.sh's build/")
def build_dirs(t):
    test_sh = read(os.path.join(SOURCE_DIR, "scripts", "test.sh"))
    tests_dir = re.search(r"^BUILD_DIR=\$\{BUILD_DIR:-([^}]+)\}$", test_sh, re.M).group(1)
    found = []
    for path in doc_files():
        for block in re.findall(r"^```[a-z]*\n(.*?)^```$", read(path), re.M | re.S):
            for line in block.splitlines():
                rel = os.path.relpath(path, SOURCE_DIR)
                for m in re.finditer(r"cmake (?:-S \S+ )?-B (\S+)([^&#\n]*)", line):
                    if "CMAKE_BUILD_TYPE=Release" in m.group(2):
                        found.append((rel, "configure", m.group(1)))
                for m in re.finditer(r"cmake --install (\S+)", line):
                    found.append((rel, "install", m.group(1)))
    t.check("the docs show Release configures and installs (%d)" % len(found),
            any(f[1] == "install" for f in found) and any(f[0] == "README.md" for f in found), repr(found))
    t.equal("Release builds and installs from scripts/test.sh's %s/ (the tests' build)" % tests_dir,
            [f for f in found if f[2] == tests_dir], [])
    def source(rel):  # the from-source lines of a file's code blocks
        blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", read(os.path.join(SOURCE_DIR, rel)), re.M | re.S)
        return [l for b in blocks for l in b.splitlines() if re.match(r"^cmake (-S \. -B|--build|--install) build-release", l)]
    t.check("README.md and docs/install.md show the same from-source lines", source("README.md") and
            source("README.md") == source(os.path.join("docs", "install.md")),
            repr((source("README.md"), source(os.path.join("docs", "install.md")))))
    configure = [l for l in source("README.md") if l.startswith("cmake -S")]
    t.check("... whose configure builds no tests (-DUCXTLS_TESTS=OFF: UCXTLS_TESTS defaults to ON)",
            configure and all(re.search(r"-DUCXTLS_TESTS=OFF\b", l) for l in configure), repr(configure))


@case("docs: command.md names every place doctor --ucx DIR looks for a libucp (as its error lists them)")
def ucx_dir_places(t):
    p = run([CLI, "doctor", "--ucx", tempfile.mkdtemp(), "--value", "tcp"], env_for(None, preload=False))
    m = re.search(r"\(looked in it, (.*)\)$", p.stderr.decode(errors="replace").strip())
    if not t.check("the error lists the places (exit %d)" % p.returncode, m, p.stderr.decode(errors="replace")):
        return
    places = [w for w in re.split(r", | and ", m.group(1)) if w != "its lib"] + ["lib"]
    row = next((l for l in read(os.path.join(SOURCE_DIR, "docs", "command.md")).splitlines()
                if l.startswith("| `ucxtls doctor")), "")
    said = row[row.find("`--ucx PATH`"):]
    t.equal("each place is in command.md's doctor row, after --ucx PATH (%s)" % ", ".join(places),
            [w for w in places if "`%s`" % w not in said], [])


if __name__ == "__main__":
    main("the docs against the code: explain --json keys and actions, transcripts, README, links, build dirs")
