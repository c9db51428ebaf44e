"""Transcripts in the docs, compared whole with what the commands print.

A transcript is a fenced block: each `$ ` line a command, the lines after it what it prints. A
`...` line stands for lines the doc leaves out (none or more); every other line must be printed,
in that place, and nothing after the last one.
"""


def transcript(text):
    """[(command, [line, ...])] of a transcript's text."""
    out = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif line.strip() and out:
            out[-1][1].append(line)
    return out


def not_whole(want, got):
    """Where the printed text `got` differs from the doc's lines `want`, compared whole (a `...`
    line: lines left out). None when they agree."""
    lines = got.splitlines()
    i = 0
    for n, w in enumerate(want):
        if w == "...":
            rest = next((x for x in want[n + 1:] if x != "..."), None)
            if rest is None:
                return None
            j = next((k for k in range(i, len(lines)) if lines[k] == rest), None)
            if j is None:
                return "not printed: %r" % rest
            i = j
            continue
        if i >= len(lines) or lines[i] != w:
            return "line %d: the doc has %r, printed %r" % (n + 1, w, lines[i] if i < len(lines) else "<nothing>")
        i += 1
    return "printed after the doc's last line: %r" % lines[i:] if i < len(lines) else None
