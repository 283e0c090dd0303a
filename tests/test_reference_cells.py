"""The course switch bptt_on_reference_cells: section 6 runs the student's sequence layers on the solution's cells,
so a cell's mistake costs points in the cell's section alone; without it, or where student code runs as a sandbox
user (who is never handed the solution's cells), section 6 runs on the student's own cells."""
import json

import pytest

from autograder.diagnosis import mistakes
from autograder.parts import course, spec
from tests.graderkit import make_grader_copy, make_submission, run_cli

COURSE = '[assignment]\ntitle = "GRU and BPTT"\nsections = ["2", "6"]\n'
ON = COURSE + "\n[grading]\nbptt_on_reference_cells = true\n"
Z_SWAPPED = next(m for m in mistakes.HINTED if m.id == "gru-z-swapped")


def _grade(tmp_path, course_text, name):
    grader = make_grader_copy(tmp_path / name, course_text)
    make_submission(tmp_path / name)                        # the instructor's checkout: the solution beside it
    sub = make_submission(tmp_path / f"{name}-student", [(Z_SWAPPED.path, Z_SWAPPED.old, Z_SWAPPED.new)])
    out = tmp_path / f"{name}.json"
    proc = run_cli(["--submission", sub, "--json", str(out), "2.1", "6.2"], cwd=grader, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {t["number"]: t for t in json.loads(out.read_text())["tests"]}, proc


@pytest.mark.parametrize("switch", [True, False])
def test_a_wrong_gru_cell_costs_section_6_nothing_with_the_switch(tmp_path, switch):
    tests, proc = _grade(tmp_path, ON if switch else COURSE, "on" if switch else "off")
    full = spec.PARTS_BY_NUMBER["6.2"].points
    assert tests["2.1"]["score"] < spec.PARTS_BY_NUMBER["2.1"].points                 # the cell's own part pays
    if switch:
        assert tests["6.2"]["score"] == full, tests["6.2"]["output"]
    else:
        assert tests["6.2"]["score"] < full and "reference cells" not in tests["6.2"]["output"]


def test_the_switch_is_never_applied_for_a_sandbox_user():
    the_course = course.parse({"assignment": {"sections": ["2", "6"]}, "grading": {"bptt_on_reference_cells": True}},
                              None)
    assert the_course.bptt_on_reference_cells and "[grading]\nbptt_on_reference_cells = true" in the_course.to_toml()
    from autograder import grade
    cells, note = grade.reference_cells(the_course, the_course.parts(), sandboxed=True, solution="/nowhere")
    assert cells is None and "never handed the solution's cells" in note
    cells, note = grade.reference_cells(the_course, the_course.parts(), sandboxed=False, solution="/nowhere")
    assert cells is None and "no solution" in note
    with pytest.raises(course.CourseError, match=r"\[grading\] bptt_on_reference_cells must be true or false"):
        course.parse({"grading": {"bptt_on_reference_cells": "yes"}}, None)
