"""The course file: what it chooses is what the handout, its pages and its grader hold, at its points; what is
wrong in it, or in the reference data the grader is given, is refused with a message that says what."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from autograder import grade
from autograder.parts import course, data, spec
from handout import build, markers, sections
from tests.graderkit import REPO, check_gradescope, load_results

CUSTOM = """[assignment]
title = "Recurrent nets, short"
sections = ["1", "2", "6"]
[assignment.points]
"1.1" = 10
"1.2" = 15
"2.2" = 20
"6.3" = 7
[gradescope]
visibility = "after_due_date"
[gradescope.part_visibility]
"1" = "visible"
"""
# what the course above gives each part: its own points, else spec.py's
OWN_POINTS = {"1.2": 15, "2.2": 20, "6.3": 7, "1.1": 10}
EXPECTED_POINTS = {p.number: OWN_POINTS.get(p.number, p.points) for p in spec.PARTS if p.number[0] in "126"}


def write(tmp_path, text, name="course.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_repository_course_is_todays_assignment():
    the_course = course.load_course()
    assert the_course.path == os.path.join(REPO, "course.toml")
    assert the_course.sections == tuple(spec.SECTIONS) and the_course.seed == data.read_manifest()["seed"]
    assert the_course.points == {p.number: p.points for p in spec.PARTS} and the_course.total == 100
    assert course.parse({}, None).points == the_course.points             # no file: the same
    assert [p.number for p in the_course.parts()] == [p.number for p in spec.PARTS]


def test_a_course_chooses_sections_and_points(tmp_path):
    the_course = course.load_course(write(tmp_path, CUSTOM))
    assert the_course.title == "Recurrent nets, short" and the_course.sections == ("1", "2", "6")
    assert the_course.seed == data.read_manifest()["seed"]                # no seed given: the data's
    assert the_course.points == EXPECTED_POINTS
    assert [(p.number, p.points) for p in the_course.parts()] == list(EXPECTED_POINTS.items())
    assert the_course.total == sum(EXPECTED_POINTS.values())
    assert the_course.gradescope.visibility_of("1.2") == "visible"
    assert the_course.gradescope.visibility_of("6.1") == "after_due_date"
    assert course.parse(course.tomllib.loads(the_course.to_toml()), None).points == EXPECTED_POINTS


@pytest.mark.parametrize("text, message", [
    ('[assignment]\nsections = ["1", "9"]\n', "[assignment] sections: unknown section '9' (the sections are 1, 2"),
    ('[assignment]\nsections = ["1"]\n[assignment.points]\n"1.7" = 3\n', "[assignment.points]: unknown part '1.7'"),
    ('[assignment]\nsections = ["1"]\n[assignment.points]\n"2.1" = 3\n',
     "part 2.1 is in section 2, which [assignment] sections leaves out"),
    ('[assignment]\nsection = ["1"]\n', "[assignment]: unknown key 'section'"),
    ('[assignment.points]\n"1.1" = -2\n', "part 1.1 must be given a number of points from 0"),
    ('[gradescope]\nvisibility = "students"\n', "[gradescope] visibility must be one of visible, after_due_date"),
    ('[assignment\n', "not valid TOML"),
])
def test_a_wrong_course_is_refused_naming_what(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(course.CourseError) as error:
        course.load_course(path)
    assert str(error.value).startswith(path) and message in str(error.value)
    with pytest.raises(build.BuildError) as error:                      # and so is a build from it
        build.build_handout(str(tmp_path / "out"), path)
    assert message in str(error.value)


@pytest.fixture(scope="module")
def short_course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course")
    config = write(folder, CUSTOM)
    warnings = []
    out, archive, regions = build.build_handout(str(folder / "handout"), config, warn=warnings.append)
    return out, regions, warnings


def test_a_course_handout_holds_only_its_sections(short_course):
    out, regions, warnings = short_course
    assert sorted(os.listdir(os.path.join(out, "assignment"))) == ["1-rnn-cell.md", "2-gru-cell.md", "6-bptt.md",
                                                                    "README.md"]
    assert sorted(os.listdir(os.path.join(out, "notebooks"))) == ["01_rnn_cell.ipynb", "02_gru_cell.ipynb",
                                                                  "06_bptt_vanishing.ipynb", "07_training.ipynb",
                                                                  "10_making_it_fast.ipynb", "11_character_model.ipynb",
                                                                  "data", "diagrams.py", "needs.py"]
    assert sorted(os.listdir(os.path.join(out, "autograder", "data"))) == \
        sorted(["manifest.json"] + [data.file_name(n) for n in EXPECTED_POINTS])
    # TODOs in the chosen sections' files only; the others are working code without markers (but for their
    # optional fast paths, a masked BPTT, since section 6 is assigned)
    for name, todo in (("rnn_cell.py", True), ("gru_cell.py", True), ("recurrent.py", True), ("lstm_cell.py", False),
                       ("gmu_cell.py", False), ("ctc.py", False)):
        with open(os.path.join(out, "mytorch", "nn", name)) as f:
            text = f.read()
        assert bool(re.search(r"# TODO: (?!optional)", text)) == todo, name
        assert "SOLUTION" not in text
    stripped = sum(len(markers.region_texts(open(os.path.join(REPO, "mytorch", "nn", n)).read(), n))
                   for n in ("rnn_cell.py", "gru_cell.py", "recurrent.py"))
    notebook_regions = sum(open(os.path.join(REPO, "notebooks", n)).read().count("# BEGIN SOLUTION")
                           for n in ("01_rnn_cell.ipynb", "02_gru_cell.ipynb"))
    assert regions == stripped + notebook_regions
    # the provided LSTM repeats the RNN's affine map: the build says so rather than hiding it
    assert warnings and "lstm_cell.py" in warnings[0]


def test_a_course_handout_point_table_and_links(short_course):
    out, _, _ = short_course
    with open(os.path.join(out, "assignment", "README.md")) as f:
        readme = f.read()
    rows = re.findall(r"^\| \[(\d)\. [^|]*\|[^|]*\| ([^|]*) \|$", readme, re.M)
    section_points = [(s, " + ".join(f"{v:g}" for n, v in EXPECTED_POINTS.items() if n[0] == s)) for s in "126"]
    assert rows == section_points
    assert f"| **total** | | **{sum(EXPECTED_POINTS.values()):g}** |" in readme
    assert "provided as working code you may read: 3. GRU block cell" in readme
    for name in os.listdir(os.path.join(out, "assignment")):
        with open(os.path.join(out, "assignment", name)) as f:
            for target in re.findall(r"\]\(([\w-]+\.md)", f.read()):
                assert os.path.exists(os.path.join(out, "assignment", target)), (name, target)


def test_a_filled_in_course_handout_scores_its_total_on_its_parts(short_course, tmp_path):
    out, _, _ = short_course
    work = tmp_path / "work"
    shutil.copytree(out, work, ignore=shutil.ignore_patterns("notebooks", "assignment"))
    for name in ("rnn_cell.py", "gru_cell.py", "recurrent.py"):           # the student's work: the solution
        source = os.path.join(REPO, "mytorch", "nn", name)
        target = work / "mytorch" / "nn" / name
        with open(source) as f:
            bodies = markers.region_texts(f.read(), source)
        target.write_text(markers.restore(target.read_text(), bodies))
    proc = subprocess.run([sys.executable, "-m", "autograder", "--json", str(tmp_path / "r.json")], cwd=work,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""), timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = load_results(tmp_path / "r.json")
    tests = check_gradescope(results)
    assert {n: t["max_score"] for n, t in tests.items()} == EXPECTED_POINTS
    assert results["score"] == sum(EXPECTED_POINTS.values())
    total = sum(EXPECTED_POINTS.values())
    assert f"{total:.2f}/{total:g}" in proc.stdout and "7.1" not in proc.stdout
    assert {n: t["visibility"] for n, t in tests.items()} == {
        n: "visible" if n.startswith("1.") else "after_due_date" for n in EXPECTED_POINTS}
    unknown = subprocess.run([sys.executable, "-m", "autograder", "7"], cwd=work, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=""))
    assert unknown.returncode == 2 and "part '7' is not in this course (sections 1, 2, 6)" in unknown.stderr


def test_the_repository_point_tables_are_the_courses():
    """Nobody edits the tables by hand: they are what the course gives (python -m handout tables fixes them)."""
    the_course = course.load_course()
    folder = os.path.join(REPO, "handout", "assignment")
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            text = f.read()
        rendered = sections.inline_points(sections.points_table(text, the_course) if name == "README.md" else text,
                                          the_course)
        assert rendered == text, f"{name}: run python -m handout tables"
    with open(os.path.join(folder, "7-lstm-cell.md")) as f:
        assert re.findall(r"\*\*(7\.\d) [^*]*\*\* \((\d+) points\)", f.read()) == [("7.1", "4"), ("7.2", "6"),
                                                                                    ("7.3", "5")]


def test_out_is_replaced_only_if_it_is_an_earlier_build(tmp_path):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(build.BuildError) as error:
        build.build_handout(str(precious))
    assert "is not empty and is not a build of python -m handout" in str(error.value)
    assert (precious / "thesis.tex").read_text() == "years of work"
    out = tmp_path / "gs"
    build.build_gradescope(str(out), fixed_cases=True)
    with pytest.raises(build.BuildError) as error:
        build.build_handout(str(out))                                   # another kind of build
    assert "is a gradescope build" in str(error.value)
    build.build_gradescope(str(out), fixed_cases=True)                  # the same kind: replaced
    build.build_handout(str(precious), force=True)
    assert not (precious / "thesis.tex").exists()


def test_gradescope_zip_without_the_solution_needs_fixed_cases(tmp_path):
    with pytest.raises(build.BuildError) as error:
        build.build_gradescope(str(tmp_path / "a"), with_solution=False)
    assert "the fixed cases, whose inputs every student holds" in str(error.value)
    assert "--fixed-cases" in str(error.value)
    proc = subprocess.run([sys.executable, "-m", "handout", "gradescope", "--config",
                           write(tmp_path, '[gradescope]\nfresh_seed = false\n'), "--out", str(tmp_path / "b")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1 and "--fixed-cases" in proc.stderr and not (tmp_path / "b").exists()
    out, _ = build.build_gradescope(str(tmp_path / "c"))                 # the default: fresh cases
    assert os.path.isfile(os.path.join(out, "solution", "mytorch", "__init__.py"))


def test_the_grader_refuses_data_that_is_not_its_specs(tmp_path, monkeypatch):
    part = spec.PARTS_BY_NUMBER["1.1"]
    manifest = data.read_manifest()
    stored = data.load_part("1.1", manifest=manifest)
    assert grade.reference(part, None, None, manifest) is not None
    grown = spec.Part(part.number, part.name, part.points, part.kind, part.cell, part.shapes + (part.shapes[0],))
    error = grade.reference(grown, None, None, manifest)
    assert isinstance(error, data.ReferenceDataError)
    assert f"holds {len(stored.configs)} cases but the spec has {len(stored.configs) + 1}" in str(error)
    changed = spec.Part(part.number, part.name, part.points, part.kind, part.cell,
                        ((2,) + part.shapes[0][1:],) + part.shapes[1:])
    assert "case 1, is not the spec's case" in str(grade.reference(changed, None, None, manifest))
    monkeypatch.setattr(course, "default_path", lambda: write(tmp_path, "[assignment]\nseed = 5\n"))
    results = grade.grade(REPO, [part])
    assert results[0].score == 0 and f"drawn from seed {manifest['seed']} but the course says seed 5" in \
        results[0].output


def test_a_grader_without_a_course_file_grades_on_its_datas_seed(monkeypatch):
    monkeypatch.setattr(course, "default_path", lambda: None)
    assert course.load_course().seed == data.read_manifest()["seed"]
    assert course.load_course().points == {p.number: p.points for p in spec.PARTS}
