"""Which submissions look copied: from the solution, from the untouched handout, or from each other.

Only what students wrote counts. For each file of the solution with solution regions (``MARKERS``), in the course's
sections (``FILE_SECTIONS``), the provided code is the file without its regions; a submission's own code is what
its file holds beyond that (``difflib``: the lines inserted or replaced), without the TODO stubs the handout puts
there (``raise NotImplementedError``). That code becomes normalised tokens: comments, spacing and docstrings
gone, every name but an attribute's (after a '.') and Python's own words one token ``V``, every string ``S``, so
renaming variables or reformatting changes nothing. Then, as MOSS does (Schleimer, Wilkerson and Aiken,
"Winnowing: local algorithms for document fingerprinting", SIGMOD 2003): a hash of every K consecutive tokens,
and of every WINDOW consecutive hashes the smallest (the rightmost on ties) is kept, the submission's
fingerprints.

    identical to the solution     the same normalised tokens as the solution's regions
    near-identical to it          at least NEAR_SOLUTION of its fingerprints are the solution's
    the untouched handout         no code of its own at all
    near-identical pairs          two submissions whose fingerprints, those of the solution left out (correct
                                  code that anyone would write alike), overlap in at least PAIR_SHARE of the
                                  smaller one's; each pair with that share; clusters are the pairs' connected
                                  groups

Everything here reads files as the grader (after every student process is gone) and never runs them. Every
student file is hostile input, so reading it is bounded: a file larger than READ_LIMIT or with more than LINES
lines that are not blank, or own code of more than TOKENS tokens, is not compared (its summary says which bound,
``not_compared``); no pattern repeats across a line's end; blank lines are left out before ``difflib`` matches
lines (each matched every blank line of the provided code). A batch runs each submission's ``summary`` in a child
of its own, ``python -I -S similarity.py`` (this module imports only the standard library): the request as JSON
on its standard input, the summary as JSON on its standard output, within a time, CPU, memory and output limit
(``batch.similarity_summaries``).
"""
import difflib
import hashlib
import json
import keyword
import os
import re
import sys
import typing

K = 12                           # tokens per hashed k-gram
WINDOW = 8                       # hashes per winnowing window: a match of K + WINDOW - 1 tokens is always seen
PAIR_SHARE = 0.6                 # a pair: this share of the smaller submission's own fingerprints in common
NEAR_SOLUTION = 0.8              # near-identical to the solution: this share of its fingerprints in the solution's
MIN_FINGERPRINTS = 8             # fewer own fingerprints than this: too little code to call it a pair
# a region's first and last lines (spelt in two pieces: a built handout holds no marker, and this file ships in it)
MARKERS = ("# BEGIN " + "SOLUTION", "# END " + "SOLUTION")
READ_LIMIT = 1 << 20             # bytes of one file: a larger one is not compared
LINES = 20000                    # lines of one file but blank ones: more are not compared (the solution's: <500)
TOKENS = 100000                  # tokens of a submission's own code (the whole solution's own: ~10000)
# the section whose TODOs a source file holds (as handout/sections.py, which tests compare)
FILE_SECTIONS = {"rnn_cell.py": "1", "gru_cell.py": "2", "gru_block_cell.py": "3", "gmu_cell.py": "4",
                 "tgru_cell.py": "5", "recurrent.py": "6", "lstm_cell.py": "7", "ctc.py": "8",
                 "ctc_decode.py": "8", "ctc_course.py": "8"}

TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>(?:[rRbBuUfF]{0,2})(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<name>[A-Za-z_]\w*)
  | (?P<number>\d[\w.]*(?:[eE][+-]?\d+)?)
  | (?P<space>\s+)
  | (?P<op>\*\*=?|//=?|>>=?|<<=?|[-+*/%@&|^<>!=]=|->|:=|.)
""", re.VERBOSE)
STUB = re.compile(r"^[ \t]*raise NotImplementedError\b[^\n]*$", re.M)     # one line: [ \t], never \s
KEPT_NAMES = set(keyword.kwlist) | {"self", "True", "False", "None"}


def tokens(code):
    """The normalised tokens of ``code`` (a fragment: it need not parse)."""
    out, previous = [], ""
    for match in TOKEN.finditer(STUB.sub("", code)):
        kind, text = match.lastgroup, match.group()
        if kind in ("comment", "space"):
            continue
        if kind == "string":
            token = "S"
        elif kind == "name":
            token = text if text in KEPT_NAMES or previous == "." else "V"
        else:
            token = text
        out.append(token)
        previous = token
    return out


class TooLarge(Exception):
    """A submission's file or code is past a bound of the comparison; the message says which."""


def _read(path, name=None):
    """The text of the file at ``path`` ('' if there is none, or it is a link); past READ_LIMIT, ``TooLarge``
    naming it as ``name`` (for the solution's own files, which are trusted: None, never raised)."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return ""
        with open(path, "rb") as f:
            data = f.read(READ_LIMIT + 1)
    except OSError:
        return ""
    if name is not None and len(data) > READ_LIMIT:
        raise TooLarge(f"its {name} is larger than {READ_LIMIT >> 20} MiB")
    return data.decode("utf-8", "replace")


def _regions(source):
    """(the provided lines: ``source`` without its regions, the lines of its regions)."""
    provided, inside, in_region = [], [], False
    for line in source.splitlines():
        if line.strip().startswith(MARKERS[0]):
            in_region = True
        elif line.strip().startswith(MARKERS[1]):
            in_region = False
        elif in_region:
            inside.append(line)
        else:
            provided.append(line)
    return provided, inside


class Base(typing.NamedTuple):   # (not a dataclass: importing dataclasses was a third of a child's start)
    """The solution's files with regions in the course: their provided lines, and the solution's own code."""
    files: dict                  # path in mytorch -> provided lines (stripped of spacing)
    solution: list               # the solution's normalised tokens
    solution_prints: set         # the fingerprints of the solution's code
    common: set                  # those and the provided code's


def base(solution, sections):
    """The ``Base`` of the solution folder ``solution`` (holding mytorch/) for the course's ``sections``."""
    files, inside_of = {}, {}
    top = os.path.join(solution, "mytorch")
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for name in names:
            if name.endswith(".py") and FILE_SECTIONS.get(name) in sections:
                provided, inside = _regions(_read(os.path.join(folder, name)))
                if inside:
                    rel = os.path.relpath(os.path.join(folder, name), top)
                    files[rel], inside_of[rel] = [line.strip() for line in provided], inside
    code = [t for rel in sorted(files) for t in tokens("\n".join(inside_of[rel])) + ["<file>"]]
    provided = [t for rel in sorted(files) for t in tokens("\n".join(files[rel])) + ["<file>"]]
    # what matches the solution or the provided code (moved, or kept beside a student's own) is nobody's own
    return Base(files, code, fingerprints(code), fingerprints(code) | fingerprints(provided))


def own_code(package, the_base):
    """The normalised tokens of what the submission whose package is ``package`` wrote itself (``TooLarge``
    past a bound). Blank lines hold no token and are left out of the match: each one matched every blank line
    of the provided code, so that a file of blank lines took ``difflib`` half a minute."""
    out = []
    for rel, provided in sorted(the_base.files.items()):
        lines = [line for line in _read(os.path.join(package, rel), rel).splitlines() if line.strip()]
        if len(lines) > LINES:
            raise TooLarge(f"its {rel} has more than {LINES} lines that are not blank")
        matcher = difflib.SequenceMatcher(None, [line for line in provided if line], [line.strip() for line in lines],
                                          autojunk=False)
        written = [line for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")
                   for line in lines[j1:j2]]
        out += tokens("\n".join(written)) + ["<file>"]
        if len(out) > TOKENS:
            raise TooLarge(f"its own code is longer than {TOKENS} tokens")
    return out


def fingerprints(token_list):
    """The winnowed fingerprints (a set of hashes) of ``token_list``."""
    grams = [token_list[k:k + K] for k in range(len(token_list) - K + 1)]
    hashes = [int.from_bytes(hashlib.blake2b("\0".join(g).encode(), digest_size=8).digest(), "big") >> 1
              for g in grams]
    if len(hashes) <= WINDOW:
        return set(hashes)
    kept = set()
    for start in range(len(hashes) - WINDOW + 1):
        kept.add(min(hashes[start:start + WINDOW]))
    return kept


def summary(package, the_base):
    """What the class report needs of one submission (kept in its feedback, so a resumed batch has it):
    whether it wrote nothing, whether it is the solution, and its fingerprints outside the solution's; or,
    past a bound, ``{"not_compared": why}``."""
    try:
        code = own_code(package, the_base)
    except TooLarge as error:
        return {"not_compared": str(error)}
    written = [t for t in code if t != "<file>"]
    prints = fingerprints(code)
    return {"untouched": not written, "solution": bool(written) and written == [t for t in the_base.solution
                                                                                 if t != "<file>"],
            "solution_share": round(len(prints & the_base.solution_prints) / len(prints), 4) if prints else 0.0,
            "fingerprints": sorted(prints - the_base.common)}


def well_formed(summary):
    """Whether ``summary`` (read back from a child) is one ``summary`` gives."""
    if not isinstance(summary, dict):
        return False
    if set(summary) == {"not_compared"}:
        return isinstance(summary["not_compared"], str)
    return set(summary) == {"untouched", "solution", "solution_share", "fingerprints"} \
        and isinstance(summary["untouched"], bool) and isinstance(summary["solution"], bool) \
        and isinstance(summary["solution_share"], (int, float)) and isinstance(summary["fingerprints"], list) \
        and all(isinstance(f, int) and not isinstance(f, bool) for f in summary["fingerprints"])


class Findings(typing.NamedTuple):
    solution: list               # submissions identical to the solution
    near_solution: list          # (submission, share of its own code found in the solution), most first
    handout: list                # submissions with no code of their own
    pairs: list                  # (a, b, share), most shared first
    clusters: list               # lists of names, larger first (of three or more)


def compared(summaries):
    """Those of ``summaries`` ({submission: its ``summary``}) that were compared: none past a bound."""
    return {n: s for n, s in summaries.items() if isinstance(s, dict) and "not_compared" not in s}


def compare(summaries):
    """The ``Findings`` for ``summaries`` ({submission: its ``summary``}; submissions without one, or not
    compared, are left out)."""
    summaries = compared(summaries)
    same = sorted(n for n, s in summaries.items() if s["solution"])
    untouched = sorted(n for n, s in summaries.items() if s["untouched"])
    near = sorted(((n, s["solution_share"]) for n, s in summaries.items() if not (s["solution"] or s["untouched"])
                   and s.get("solution_share", 0) >= NEAR_SOLUTION), key=lambda item: (-item[1], item[0]))
    prints = {n: set(s["fingerprints"]) for n, s in summaries.items() if not (s["solution"] or s["untouched"])}
    names = sorted(prints)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            smaller = min(len(prints[a]), len(prints[b]))
            if smaller < MIN_FINGERPRINTS:
                continue
            share = len(prints[a] & prints[b]) / smaller
            if share >= PAIR_SHARE:
                pairs.append((a, b, share))
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    group = {}
    for a, b, _ in pairs:                                 # connected groups of pairs
        merged = group.get(a, {a}) | group.get(b, {b})
        for n in merged:
            group[n] = merged
    clusters = sorted({frozenset(g) for g in group.values() if len(g) > 2}, key=lambda g: (-len(g), sorted(g)))
    return Findings(same, near, untouched, pairs, [sorted(g) for g in clusters])


def to_json(the_base):
    """``the_base`` as a JSON object (a child's request carries it)."""
    return {"files": the_base.files, "solution": the_base.solution,
            "solution_prints": sorted(the_base.solution_prints), "common": sorted(the_base.common)}


def from_json(data):
    return Base(data["files"], data["solution"], set(data["solution_prints"]), set(data["common"]))


def main():
    """A child's work: the request ``{"package": path, "base": to_json(...)}`` on standard input, the
    ``summary`` on standard output, both JSON."""
    request = json.load(sys.stdin)
    json.dump(summary(request["package"], from_json(request["base"])), sys.stdout)


if __name__ == "__main__":
    main()
