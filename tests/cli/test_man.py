#!/usr/bin/env python3
"""The man page ucxtls(1): it renders, and it lists what --help and the README list.

The build writes it with `ucxtls --man` (cli/main.cc) from the tables that also drive --help
(commands, exit statuses) and from the options table (shim/options.cc) that the README's variables
table must match. `cmake --install` puts it in share/man/man1; the .deb and the RPM tests check
that the packages carry it.
"""
import os
import pty
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))  # harness.py
from harness import BUILD_DIR, SOURCE_DIR, case, have, main, run, BASE_ENV  # noqa: E402

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(BUILD_DIR, "ucxtls"))
CMAKE = os.environ.get("UCXTLSTEST_CMAKE", "cmake")
PAGE = os.path.join(BUILD_DIR, "ucxtls.1")


def page_text():
    with open(PAGE) as f:
        return f.read()


def man_sections(text):
    """{section title: [lines]} of the roff source."""
    sections, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\.SH (.*)$", line)
        if m:
            cur = m.group(1).strip('"')
            sections[cur] = []
        elif cur:
            sections[cur].append(line)
    return sections


def unroff(s):
    return s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def man_variables(text, meanings=None):
    """[(name, default or None)] from ENVIRONMENT: each .TP/.B NAME, then its paragraph; with
    meanings (a dict), each variable's paragraph without its default goes there."""
    lines = man_sections(text).get("ENVIRONMENT", [])
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^\.B ([A-Z_]+)$", line)
        if m:
            para = lines[i + 1] if i + 1 < len(lines) else ""
            d = re.search(r" \(default: (.*)\)$", para)
            out.append((m.group(1), unroff(d.group(1)) if d else None))
            if meanings is not None:
                meanings[m.group(1)] = unroff(para[:d.start()] if d else para)
    return out


def help_variables():
    """[(name, default or None)] from ucxtls --help: an own variable's line is 'NAME  default X'
    ('-': none), one it reads as well is 'NAME  meaning'."""
    out = subprocess.run([CLI, "--help"], stdout=subprocess.PIPE).stdout.decode()
    found = []
    for m in re.finditer(r"^  ([A-Z][A-Z_]+) +(default (\S+)|\S.*)$", out, re.M):
        d = m.group(3)
        found.append((m.group(1), None if d in (None, "-") else d))
    return found, out


def readme_variables(meanings=None):
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        readme = f.read()
    rows = re.findall(r"^\| `([A-Z_]+)` \| .*? \| (.*) \|$", readme, re.M)
    if meanings is not None:
        meanings.update((n, m.replace("`", "")) for n, m in rows)
    return [n for n, _ in rows]


def help_meanings():
    """{name: meaning} of the library's own variables in --help (the line after 'NAME default X')."""
    lines = subprocess.run([CLI, "--help"], stdout=subprocess.PIPE).stdout.decode().splitlines()
    out = {}
    for i, line in enumerate(lines):
        m = re.match(r"^  ([A-Z][A-Z_]+) +default \S+$", line)
        if m and i + 1 < len(lines):
            out[m.group(1)] = lines[i + 1].strip()
    return out


@case("man -l renders ucxtls(1) without a warning")
def renders(t):
    if not os.path.exists(PAGE):
        t.check("the build wrote %s" % PAGE, False)
        return
    if not have("man"):
        t.skip("man -l", "man is not installed (Debian man-db; scripts/test.sh installs it)")
        return
    env = dict(BASE_ENV, MANWIDTH="80")  # not a terminal: man-db prints plain text
    p = subprocess.run(["man", "--warnings", "-l", PAGE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.decode()
    t.check("man --warnings -l ucxtls.1: exit 0, nothing on stderr", p.returncode == 0 and not p.stderr, p.stderr.decode())
    for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        t.check("the rendered page has the section %s" % title, re.search(r"^%s$" % title, out, re.M), out[:2000])


@case("command.md's man -l path is where scripts/run.sh builds the page")
def documented_path(t):
    doc = open(os.path.join(SOURCE_DIR, "docs", "command.md")).read()
    named = re.search(r"`man -l (\S+)`", doc)
    run_sh = open(os.path.join(SOURCE_DIR, "scripts", "run.sh")).read()
    build = re.search(r"RUN_BUILD_DIR:-\$top/([^}]+)\}", run_sh)
    t.check("docs/command.md names a man -l path, and scripts/run.sh its build directory", named and build)
    if named and build:
        t.equal("the path is run.sh's build directory and the page's name", named.group(1),
                "%s/%s" % (build.group(1), os.path.basename(PAGE)))


def on_terminal(argv, env):
    """(exit status, output) of argv with stdout and stderr on a new pseudo-terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=60), out.decode(errors="replace")


@case("ucxtls --man: the rendered page on a terminal (through man), the roff source when piped")
def man_on_terminal(t):
    piped = subprocess.run([CLI, "--man"], stdout=subprocess.PIPE, env=BASE_ENV)
    t.check("piped: the roff source, the build's ucxtls.1", piped.returncode == 0 and piped.stdout.startswith(b".TH UCXTLS 1 ")
            and (not os.path.exists(PAGE) or piped.stdout.decode() == page_text()), repr(piped.stdout[:200]))
    if not have("man"):
        t.skip("ucxtls --man on a terminal", "man is not installed (Debian man-db; scripts/test.sh installs it)")
        return
    # MANPAGER=cat: the pager would wait for a key; man still formats for the terminal.
    rc, out = on_terminal([CLI, "--man"], dict(BASE_ENV, MANPAGER="cat", MANWIDTH="80", TERM="dumb"))
    plain = re.sub(r".\x08", "", out)  # man's overstrike bold (a letter, a backspace, the letter)
    t.check("on a terminal: exit 0, the page as man shows it (UCXTLS(1) header, NAME, the synopsis), no roff requests",
            rc == 0 and re.search(r"^UCXTLS\(1\) +User Commands +UCXTLS\(1\)", plain, re.M)
            and re.search(r"^NAME\r?$", plain, re.M) and "ucxtls explain [--json]" in plain
            and not re.search(r"^\.(TH|SH|TP|B) ", plain, re.M), plain[:1500])
    rc, out = on_terminal([CLI, "--man"], dict(BASE_ENV, PATH="/nonexistent"))
    t.check("on a terminal with no man on PATH: exit 0, the roff source", rc == 0 and out.startswith(".TH UCXTLS 1 "), out[:300])

@case("the variables: man page == --help == README table")
def variables(t):
    man = man_variables(page_text())
    helpv, helptext = help_variables()
    t.check("the man page lists variables", len(man) > 10, page_text())
    t.equal("every variable, in order: the man page's == --help's", [n for n, _ in man], [n for n, _ in helpv])
    own_man = [(n, d) for n, d in man if d is not None]
    own_help = [(n, d) for n, d in helpv if d is not None]
    t.equal("the library's own variables and their defaults: the man page's == --help's", own_man, own_help)
    t.equal("the library's own variables: the man page's == the README table's",
            [n for n, _ in man if n.startswith("UCXTLS_")], readme_variables())
    # The meanings too (the README's without its code marks): one table behind all three.
    man_m, readme_m, help_m = {}, {}, help_meanings()
    man_variables(page_text(), man_m)
    readme_variables(readme_m)
    for name in readme_m:
        t.check("%s: the same meaning in the README, --help and the man page" % name,
                readme_m[name] == help_m.get(name, "").replace("`", "") == man_m.get(name, "").replace("`", ""),
                "README: %r\n--help: %r\nman:    %r" % (readme_m[name], help_m.get(name), man_m.get(name)))


@case("the commands and exit statuses: man page == --help")
def commands(t):
    text = page_text()
    syn = re.findall(r"^\.B ucxtls (\w+)$", "\n".join(man_sections(text)["SYNOPSIS"]), re.M)
    helptext = subprocess.run([CLI, "--help"], stdout=subprocess.PIPE).stdout.decode()
    block = helptext.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    helpcmds = re.findall(r"^  (\w+) ", block, re.M)
    t.equal("the commands, in order: the man page's SYNOPSIS == --help's", syn, helpcmds)
    exits = re.findall(r"^\.B (.*)$", "\n".join(man_sections(text)["EXIT STATUS"]), re.M)
    t.check("EXIT STATUS names 0, 1, 2 and run's 126/127", exits[:3] == ["0", "1", "2"] and "126, 127" in exits, exits)
    printed = subprocess.run([CLI, "--man"], stdout=subprocess.PIPE).stdout.decode()
    t.equal("ucxtls --man prints the page the build installed", printed, text)


def man_command_flags(text):
    """{command: [flag usage]} from COMMANDS: each .TP/.B 'NAME ARGS' paragraph, then the flags
    of its .RS block."""
    out, cur, lines = {}, None, man_sections(text).get("COMMANDS", [])
    for i, line in enumerate(lines):
        if line == ".TP" and i + 1 < len(lines) and lines[i + 1].startswith(".B "):
            head = unroff(lines[i + 1][3:])
            if head.startswith("-"):
                out[cur].append(head)
            else:
                cur = head.split()[0]
                out[cur] = []
    return out


@case("each command: its --help and its man page entry, from one table")
def command_entries(t):
    text = page_text()
    syn = "\n".join(man_sections(text)["SYNOPSIS"])
    synopsis = {m.group(1): unroff(m.group(2) or "").strip()
                for m in re.finditer(r"^\.B ucxtls (\w+)\n(?!\.br)(.*)$|^\.B ucxtls (\w+)$", syn, re.M) if m.group(1)}
    synopsis.update({m.group(1): "" for m in re.finditer(r"^\.B ucxtls (\w+)\n\.br$", syn, re.M)})
    flags = man_command_flags(text)
    t.check("the man page has flags for explain, env, doctor and probe",
            all(flags.get(c) for c in ("explain", "env", "doctor", "probe")), repr(flags))
    for name in [n for n in synopsis if n not in ("COMMAND",)]:
        p = subprocess.run([CLI, name, "--help"], stdout=subprocess.PIPE)
        out = p.stdout.decode()
        usage = out.split("\n", 1)[0]
        t.equal("%s: --help's usage line == the man page's SYNOPSIS" % name,
                usage, ("usage: ucxtls %s %s" % (name, synopsis[name])).rstrip())
        shown = re.findall(r"^  (-[^\s,]+(?:, --\S+)?)", out.split("\noptions:\n", 1)[-1], re.M)
        t.equal("%s: --help's options == the man page's, plus -h, --help" % name,
                shown, flags.get(name, []) + ["-h, --help"])


@case("cmake --install puts the man page in share/man/man1")
def installed(t):
    with tempfile.TemporaryDirectory() as prefix:
        p = subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        dest = os.path.join(prefix, "share", "man", "man1", "ucxtls.1")
        t.check("cmake --install --prefix P: P/share/man/man1/ucxtls.1 is the page",
                p.returncode == 0 and os.path.exists(dest) and open(dest).read() == page_text(),
                p.stdout.decode()[-2000:])


@case("UCX_TLS's rule as --help and the man page state it: kept unless it equals UCXTLS_DERIVED")
def ucx_tls_rule(t):
    # The library keeps a UCX_TLS that is set (even empty) and derives again one that equals
    # UCXTLS_DERIVED (its own, inherited): "left alone whenever it is set" is not the rule.
    helped = subprocess.run([CLI, "--help"], stdout=subprocess.PIPE).stdout.decode()
    line = next((l for l in helped.splitlines() if re.match(r"^  UCX_TLS ", l)), "")
    t.check("--help: UCX_TLS is kept when set unless it equals UCXTLS_DERIVED",
            "unless it equals UCXTLS_DERIVED" in line and "whenever" not in line, line)
    page = unroff(page_text()) if os.path.exists(PAGE) else ""
    m = re.search(r"^\.B UCX_TLS\n(.*)$", page, re.M)
    t.check("man page: the same rule", m and "unless it equals UCXTLS_DERIVED" in m.group(1), m and m.group(1))


if __name__ == "__main__":
    main("the man page ucxtls(1)")
