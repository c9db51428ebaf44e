"""Which cases of a script a command line selects (harness.main): --tag, --not-tag, -k, --list."""


def matcher(expr):
    """A predicate on case names for a -k expression: substrings (case-insensitive) joined with
    `and`, `or` and `not` (not binds first, then and, then or), as pytest's -k without parentheses
    (case names may hold them). Words between keywords form one substring: -k 'dgx (defaults)'."""
    alternatives = [[]]  # or-list of and-lists of [negated, substring]
    expect_term, neg = True, False
    for word in expr.split():
        if word == "not" and expect_term:
            neg = not neg
        elif word in ("and", "or") and not expect_term:
            if word == "or":
                alternatives.append([])
            expect_term = True
        elif expect_term:
            alternatives[-1].append([neg, word.lower()])
            expect_term, neg = False, False
        else:  # a further word of the same substring
            alternatives[-1][-1][1] += " " + word.lower()
    if expect_term:
        raise ValueError("-k %r: a term is missing" % expr)
    return lambda name: any(all((sub in name.lower()) != neg for neg, sub in conj) for conj in alternatives)


class Selection:
    """What the command line asks for: the cases with every --tag, none of the --not-tag, and a
    name that every -k expression matches; `rest` is the script's own arguments."""

    def __init__(self, argv):
        self.tags, self.not_tags, self.exprs, self.rest = [], [], [], []
        self.listing = self.help = False
        argv = list(argv)
        while argv:
            a = argv.pop(0)
            if a == "--list":
                self.listing = True
            elif a in ("--tag", "--not-tag", "-k") and argv:
                {"--tag": self.tags, "--not-tag": self.not_tags, "-k": self.exprs}[a].append(argv.pop(0))
            elif a.startswith("-k") and len(a) > 2:
                self.exprs.append(a[2:])
            elif a in ("-h", "--help"):
                self.help = True
            else:
                self.rest.append(a)
        self._names = [matcher(e) for e in self.exprs]  # ValueError: a bad -k

    def chooses(self, name, tags):
        return (all(g in tags for g in self.tags) and not any(g in tags for g in self.not_tags)
                and all(p(name) for p in self._names))

    def unknown_tags(self, cases):
        """The tags asked for that no case declares (a typo, or a tag renamed in one place only)."""
        known = {g for c in cases for g in c[-1]}
        return sorted({g for g in self.tags + self.not_tags if g not in known})


USAGE = """usage: %s [--list] [--tag TAG] [--not-tag TAG] [-k EXPRESSION] [ARG...]
  --list          print the cases (those selected, with a selection) and exit: the name, and
                  after a tab the case's tags
  --tag TAG       run only the cases tagged TAG; may be repeated (all must hold)
  --not-tag TAG   leave out the cases tagged TAG; may be repeated
  -k EXPRESSION   run only the cases whose name contains EXPRESSION (case-insensitive);
                  words joined with and / or / not, as pytest's -k; -k may be repeated (all must hold).
                  For runs by hand: CTest selects by tag.
"""
