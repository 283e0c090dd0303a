"""An independent oracle for the grader's catalogue hints: is a student told "these values are what … would give"
only when their code behaves as that catalogue mistake?

The grader prints a catalogue hint (autograder/diagnosis/mistakes.py, ``variant=True``) when one output array
of one case matches what the reference data stores for that mistake. The oracle asks more: a hint is *proved*
when, on EVERY case of the part, every array the grader compares has the mutant's value equal to the value the
catalogue mistake itself gives (``catalogue_outputs``: the mistake applied to the solution and graded exactly as
the mutants are, tests/mutants.py). A hint given but not proved is *false*: it sends the student the wrong way.

    python -m tests.hint_audit SET OUT.json     # SET: ast, fresh or third; prints the table, writes every record

``hints_in`` also lists the diagnosis's own hints and kinds of difference ("Where case N first goes wrong"),
which no oracle checks here: they are counted, not judged.
"""
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from autograder.diagnosis import feedback, mistakes
from autograder.parts import data
from tests import mutants

WORKERS = 2
HINTED = tuple(m for m in mistakes.CATALOGUE if m.variant and m.hint)
# the areas of tests/test_diagnosis.py, where students struggle differently
AREAS = {"cells": {"nn/rnn_cell.py", "nn/gru_cell.py", "nn/gru_block_cell.py", "nn/gmu_cell.py", "nn/tgru_cell.py",
                   "nn/lstm_cell.py"},
         "BPTT": {"nn/recurrent.py"}, "CTC": {"nn/ctc.py", "nn/ctc_course.py"}, "decoding": {"nn/ctc_decode.py"}}
KINDS = ("the opposite sign", "a constant factor", "transposed", "only gate", "the value it had", "all zeros",
         "the log of", "the exp of")


def _flat(text):
    return " ".join(text.split())


# ---- what a report says

def hints_in(report):
    """``(catalogue, diagnosis)``: the hint texts of ``HINTED`` mistakes the report contains (the whole text, or
    its first 60 characters, whitespace-normalised), each once; and the diagnosis's own phrases: its "Hint:"
    lines and the kinds of difference (``KINDS``) said in the section "Where case N first goes wrong"."""
    flat = _flat(report)
    catalogue = [h for h in dict.fromkeys(m.hint for m in HINTED) if _flat(h) in flat or _flat(h)[:60] in flat]
    section = re.split(r"^Where case \d+ first goes wrong", report, maxsplit=1, flags=re.M)
    said = section[1] if len(section) == 2 else ""
    diagnosis = [_flat(line) for line in said.splitlines() if "Hint:" in line]
    diagnosis += [kind for kind in KINDS if re.search(rf"\b{re.escape(kind)}\b", said)]
    return catalogue, diagnosis


# ---- outputs: the mutant's and the catalogue mistakes'

def load_outputs(path, part_data):
    """Per case, {name: array} of what the grader compares (the expected arrays, and every key of a dict it
    compares key by key, ``feedback.KEYED``) from a saved ``case:name`` npz; None if there is no file (the
    run broke before the driver returned)."""
    if not path or not os.path.exists(path):
        return None
    cases = [{} for _ in part_data.configs]
    with np.load(path) as saved:
        for key in saved.files:
            k, name = key.split(":", 1)
            if name in part_data.expected[int(k)] or name.split("/")[0] in feedback.KEYED:
                cases[int(k)][name] = saved[key]
    return cases


def _as_mutant(mistake, part):
    """The catalogue mistake as a ``mutants.Mutant`` (kind 'catalogue'): its file as ``Mistake.apply`` edits it."""
    with tempfile.TemporaryDirectory(prefix="audit-") as root:
        mutants.solution_copy(root)
        mistake.apply(root)
        with open(os.path.join(root, "mytorch", mistake.path)) as f:
            source = f.read()
    return mutants.Mutant(f"mytorch/{mistake.path}", 0, "catalogue", source, [], part)


@functools.lru_cache(maxsize=None)
def catalogue_outputs(part):
    """{mistake id: per-case outputs (``load_outputs``)} of every ``HINTED`` mistake of ``part``, each applied to
    a copy of the solution and run through the driver in a forked child, as a mutant is (cached per part, so
    per (mistake, part)). A mistake whose run gives no outputs raises: without them no hint can be judged."""
    chosen = [m for m in HINTED if part in m.parts]
    if not chosen:
        return {}
    part_data = data.load_part(part)
    with tempfile.TemporaryDirectory(prefix="audit-") as folder:
        mutants.run_mutants([_as_mutant(m, part) for m in chosen], folder)
        found = {m.id: load_outputs(os.path.join(folder, f"{n}.npz"), part_data) for n, m in enumerate(chosen)}
    broken = [i for i, outputs in found.items() if outputs is None]
    if broken:
        raise RuntimeError(f"part {part}: the catalogue mistakes {broken} gave no outputs")
    return found


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True))


def first_difference(mine, theirs):
    """'case k: name' for the first compared array whose values differ between two per-case outputs (an array
    one has and the other lacks differs), or None when they agree everywhere."""
    if mine is None or theirs is None or len(mine) != len(theirs):
        return "no outputs"
    for k, (a, b) in enumerate(zip(mine, theirs)):
        for name in sorted(set(a) | set(b)):
            if name not in a or name not in b or not _same(a[name], b[name]):
                return f"case {k + 1}: {name}"
    return None


def _only(outputs, prefixes):
    """Per-case outputs restricted to the arrays whose names start with one of ``prefixes``."""
    return None if outputs is None else [{n: a for n, a in case.items() if n.startswith(prefixes)} for case in outputs]


def proved(mistake, mutant_outputs, catalogue):
    """Whether the mutant behaves as ``mistake`` on the graded cases: in every case, every compared array of
    ``mutant_outputs`` equals the one ``catalogue[mistake.id]`` (``catalogue_outputs``) holds."""
    return mistake.id in catalogue and first_difference(mutant_outputs, catalogue[mistake.id]) is None


# ---- grading a set, and the audit

def grade(items, workers=WORKERS):
    """[(mutant, lost points, report, outputs)] of ``items``, in their order, graded by ``python -m
    tests.mutants`` in ``workers`` processes (as test_generic_mutants does), the outputs read with
    ``load_outputs``."""
    graded = [None] * len(items)
    with tempfile.TemporaryDirectory(prefix="audit-") as folder:
        procs = []
        for k in range(workers):
            os.mkdir(os.path.join(folder, f"out{k}"))
            with open(os.path.join(folder, f"in{k}.json"), "w") as f:
                json.dump([list(m) for m in items[k::workers]], f)
            procs.append(subprocess.Popen([sys.executable, "-m", "tests.mutants", f"{folder}/in{k}.json",
                                           f"{folder}/out{k}.json", f"{folder}/out{k}"], cwd=mutants.REPO,
                                          env=dict(os.environ, PYTHONPATH="", OPENBLAS_NUM_THREADS="1")))
        assert all(p.wait(timeout=1800) == 0 for p in procs)
        parts = {}
        for k in range(workers):
            with open(os.path.join(folder, f"out{k}.json")) as f:
                for n, (m, lost, text) in enumerate(json.load(f)):
                    m = mutants.Mutant(*m)
                    part_data = parts.setdefault(m.part, data.load_part(m.part))
                    saved = os.path.join(folder, f"out{k}", f"{n}.npz")
                    graded[k + n * workers] = (m, lost, text, load_outputs(saved, part_data))
    return graded


def judge(mutant, lost, report, outputs):
    """One mutant's record: where it is, what it lost, the report, and each catalogue hint found with the
    mistakes that give it on this part, whether one of them proves it, and where each first differs."""
    catalogue, diagnosis = hints_in(report or "") if lost else ([], [])
    hints = []
    for hint in catalogue:
        candidates = [m for m in HINTED if m.hint == hint and mutant.part in m.parts]
        theirs = {m.id: catalogue_outputs(mutant.part).get(m.id) for m in candidates}
        differs = {m.id: first_difference(outputs, theirs[m.id]) for m in candidates}
        # for information: where it differs on the arrays the mistake's variant alone is stored for (Mistake.arrays)
        stored = {m.id: first_difference(_only(outputs, m.arrays), _only(theirs[m.id], m.arrays))
                  for m in candidates if m.arrays}
        hints.append({"hint": hint, "mistakes": [m.id for m in candidates],
                      "proved": any(d is None for d in differs.values()), "differs": differs,
                      "differs_on_stored_arrays": stored})
    return {"file": mutant.file, "line": mutant.line, "kind": mutant.kind, "part": mutant.part, "lost": lost,
            "names_line": bool(lost) and mutants.names_line(report, mutant),
            "names_quantity": bool(lost) and mutants.names_quantity(report, mutant),
            "catalogue_hints": hints, "diagnosis_hints": diagnosis, "report": report}


def area_of(record):
    return next((a for a, files in AREAS.items() if record["file"].split("mytorch/", 1)[-1] in files), "other")


def counts(records):
    """Per area (and 'all'): graded, losing points, naming the line, naming the quantity, reports with a
    catalogue hint, catalogue hints proved and false (given, not proved), reports with a diagnosis phrase."""
    table = {}
    for area in list(AREAS) + ["all"]:
        mine = [r for r in records if r["lost"] is not None and area in (area_of(r), "all")]
        losing = [r for r in mine if r["lost"]]
        hints = [h for r in losing for h in r["catalogue_hints"]]
        table[area] = {"graded": len(mine), "losing": len(losing),
                       "line": sum(r["names_line"] for r in losing), "quantity": sum(r["names_quantity"] for r in losing),
                       "hinted": sum(bool(r["catalogue_hints"]) for r in losing),
                       "proved": sum(h["proved"] for h in hints), "false": sum(not h["proved"] for h in hints),
                       "diagnosis": sum(bool(r["diagnosis_hints"]) for r in losing)}
    return table


def table_text(table):
    """``counts`` as lines of text."""
    lines = [f"{'area':9} {'graded':>6} {'losing':>6} {'line':>6} {'qty':>6} {'w/cat':>6} {'proved':>6} "
             f"{'FALSE':>6} {'w/diag':>6}"]
    for area, c in table.items():
        rate = (lambda n: f"{n / c['losing']:.0%}") if c["losing"] else (lambda n: "-")
        lines.append(f"{area:9} {c['graded']:>6} {c['losing']:>6} {rate(c['line']):>6} {rate(c['quantity']):>6} "
                     f"{c['hinted']:>6} {c['proved']:>6} {c['false']:>6} {c['diagnosis']:>6}")
    return "\n".join(lines)


def false_hints(records):
    """'file:line kind (part) → the hint's first words' for every catalogue hint given and not proved."""
    return [f"{r['file']}:{r['line']} {r['kind']} ({r['part']}) → {' '.join(h['hint'].split()[:9])}…"
            for r in records for h in r["catalogue_hints"] if not h["proved"]]


def items_of(name):
    """``(mutants, entries)`` of a set: 'ast' (every graded line's; no entries), 'fresh' (tests/fresh_mistakes.py)
    or 'third' (tests/fresh_mistakes_third.py), with the entries they were made from, in the same order."""
    if name == "ast":
        return mutants.mutants(), []
    if name == "fresh":
        from tests.fresh_mistakes import FRESH as entries
    else:
        from tests.fresh_mistakes_third import FRESH_THIRD as entries
    return mutants.fresh(entries), entries


def main(name, out):
    start = time.monotonic()
    items, entries = items_of(name)
    records = [judge(*g) for g in grade(items)]
    for record, entry in zip(records, entries):                  # what the fresh mistake is (and 'truth', if said)
        record.update({k: v for k, v in entry.items() if k in ("what", "truth")})
    seconds = time.monotonic() - start
    print(f"{name}: {len(items)} mutants, {seconds:.0f} s")
    print(table_text(counts(records)))
    print("false catalogue hints:", *false_hints(records) or ["none"], sep="\n  ")
    with open(out, "w") as f:
        json.dump({"set": name, "seconds": round(seconds), "table": counts(records), "records": records}, f,
                  indent=1, ensure_ascii=False)


if __name__ == "__main__":
    sys.path.insert(0, mutants.REPO)
    main(*sys.argv[1:3])
