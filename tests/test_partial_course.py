"""A partial course as an instructor runs one: sections 1, 2, 6 and 8, points of its own. What it grades, what
it hands out and what its students read follow from the course, never from the full assignment's template."""
import os
import re

import pytest

from autograder.diagnosis import mistakes
from autograder.parts import course, spec
from handout import build, markers
from tests.graderkit import load_results, make_grader_copy, make_submission, run_cli

PARTIAL = """[assignment]
title = "RNNs, GRUs and CTC"
sections = ["1", "2", "6", "8"]
[assignment.points]
"1.1" = 6
"1.2" = 9
"6.1" = 5
"6.2" = 5
"""


def test_section_6_has_padded_cases_forward_and_backward():
    """Padding is graded by section 6 itself, whether or not the course has section 7 (7.3)."""
    padded = {p.number for p in spec.PARTS if p.kind == "sequence" and any(
        isinstance(s[-1], dict) and s[-1].get("lengths") for s in p.shapes)}
    assert {"6.1", "6.2"} <= padded
    for number in ("6.1", "6.2"):
        configs = [c for c, _ in spec.make_cases(spec.PARTS_BY_NUMBER[number], 11785)]
        lengths = [c["lengths"] for c in configs if c.get("lengths")]
        assert lengths and any(min(n) < c for n, c in zip(lengths, [max(n) for n in lengths]))


@pytest.mark.parametrize("mistake_id", ["seq-backward-ignores-lengths", "seq-ignores-lengths"])
def test_a_bptt_that_ignores_padding_loses_points_without_section_7(tmp_path, mistake_id):
    mistake = next(m for m in mistakes.CATALOGUE if m.id == mistake_id)
    folder = make_grader_copy(tmp_path, PARTIAL)
    make_submission(tmp_path, [(mistake.path, mistake.old, mistake.new)])
    proc = run_cli(["6", "--json", str(tmp_path / "r.json")], cwd=folder)
    tests = {t["number"]: t for t in load_results(tmp_path / "r.json")["tests"]}
    assert set(tests) == {"6.1", "6.2", "6.3", "6.4", "6.5"}, proc.stdout
    for number in ("6.1", "6.2"):                          # the parts with a padded batch lose points
        assert tests[number]["score"] < tests[number]["max_score"] == 5, (number, proc.stdout)
    for number in ("6.3", "6.4", "6.5"):                   # no padded case there: full marks
        assert tests[number]["score"] == tests[number]["max_score"] == 3
    assert mistake.hint.split(":")[0][:40] in proc.stdout


@pytest.mark.parametrize("kind", ["handout", "gradescope", "prairielearn", "autolab"])
def test_a_failed_build_leaves_nothing_and_keeps_the_earlier_build(tmp_path, monkeypatch, kind):
    """Built aside and moved into place at the end: a failure leaves no half-built folder at --out, no zip and no
    staging folder, and an earlier build of the same kind stays whole."""
    builders = {"handout": build.build_handout, "gradescope": build.build_gradescope,
                "prairielearn": build.build_prairielearn, "autolab": build.build_autolab}
    out = tmp_path / "out"

    def broken(*args, **kwargs):
        raise build.BuildError("broken on purpose")
    monkeypatch.setattr(build, "copy_grader", broken)
    with pytest.raises(build.BuildError, match="broken on purpose"):
        builders[kind](str(out))
    assert os.listdir(tmp_path) == []                      # nothing: no out, no out.zip, no staging folder
    monkeypatch.undo()
    builders[kind](str(out))
    before = sorted(os.path.relpath(os.path.join(d, n), out) for d, _, names in os.walk(out) for n in names)
    assert os.path.isfile(out / "autograder" / "course.toml") or os.path.isfile(out / "tests" / "autograder" /
                                                                                  "course.toml") or kind == "autolab"
    monkeypatch.setattr(build, "copy_grader", broken)
    with pytest.raises(build.BuildError):
        builders[kind](str(out))
    after = sorted(os.path.relpath(os.path.join(d, n), out) for d, _, names in os.walk(out) for n in names)
    assert after == before and sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


@pytest.fixture(scope="module")
def partial_handout(tmp_path_factory):
    folder = tmp_path_factory.mktemp("partial")
    config = folder / "course.toml"
    config.write_text(PARTIAL)
    out, _, _ = build.build_handout(str(folder / "handout"), str(config), warn=lambda message: None)
    return out


def test_the_student_readme_is_the_courses(partial_handout):
    with open(os.path.join(partial_handout, "README.md")) as f:
        readme = f.read()
    assert readme.startswith("# RNNs, GRUs and CTC\n")
    assert "18 parts worth 71 points" in readme and "| graded (the autograder scores these, 71 points) |" in readme
    rows = re.findall(r"^\| (\d\.\d+)(?:-\d\.\d+)? .*\| ([\d +]+) \| `mytorch", readme, re.M)
    assert rows == [("1.1", "6 + 9"), ("2.1", "5 + 7"), ("6.1", "5 + 5 + 3 + 3 + 3"),
                    ("8.1", "2 + 3 + 3 + 2 + 2 + 3 + 3 + 5 + 2")]
    shipped = sorted(n for n in os.listdir(os.path.join(partial_handout, "notebooks")) if n.endswith(".ipynb"))
    assert sorted(re.findall(r"^- `notebooks/(\d\d_\w+\.ipynb)`:", readme, re.M)) == shipped
    assert "1 to 3 seconds" in readme and "15 to 25" not in readme and "100 points" not in readme
    assert "{{" not in readme and "<!--" not in readme
    assert "Not in this course: 3. GRU block cell; 4. GMU cell; 5. TGRU cell; 7. LSTM cell" in readme
    order = readme.split("## The order to work in")[1].split("##")[0]
    assert re.findall(r"Section (\d)", order) == ["1", "2", "6", "8"]
    with open(os.path.join(partial_handout, "assignment", "README.md")) as f:
        overview = f.read()
    assert overview.startswith("# RNNs, GRUs and CTC: the assignment\n") and "six recurrent cells" not in overview
    assert "the forward and backward passes of an RNN cell and PyTorch's GRU cell; backpropagation" in overview


def test_nothing_a_student_reads_names_a_part_the_course_does_not_grade(partial_handout):
    """Every part number in the README and the pages the handout ships is one of the course's: claims about what
    grades what (7.3 grades padding), examples and tables follow the course."""
    ours = set(course.load_course(str(os.path.join(partial_handout, "autograder", "course.toml"))).points)
    texts = [os.path.join(partial_handout, "README.md")] + [
        os.path.join(partial_handout, "assignment", n) for n in os.listdir(os.path.join(partial_handout, "assignment"))]
    for path in texts:
        with open(path) as f:
            named = set(re.findall(r"(?<!Python )(?<![\d.\w])([1-8]\.[1-9])(?![\d\w])", f.read()))
        assert named <= ours, (path, sorted(named - ours))


def test_a_second_course_with_its_own_seed_has_its_own_data(tmp_path, monkeypatch, capsys):
    """generate --config FILE writes the course's data where its builds find it; the root data stays as it is;
    the handout built for it grades on that data (the solution scores the course's total)."""
    from autograder.instructor import generate
    from autograder.parts import data
    config = tmp_path / "other.toml"
    config.write_text('[assignment]\ntitle = "RNN only"\nsections = ["1"]\nseed = 777\n'
                      '[assignment.points]\n"1.1" = 30\n"1.2" = 20\n')
    kept = tmp_path / "seed-777"
    monkeypatch.setattr(data, "seed_dir", lambda seed: str(kept) if seed == 777 else pytest.fail(seed))
    root = {n: data.sha256(os.path.join(data.DATA_DIR, n)) for n in os.listdir(data.DATA_DIR)
            if os.path.isfile(os.path.join(data.DATA_DIR, n))}
    with open(data.HASHES_MODULE) as f:
        hashes = f.read()

    with pytest.raises(build.BuildError) as error:          # before: the build names the command to run
        build.build_handout(str(tmp_path / "early"), str(config))
    assert f"run python -m autograder generate --config {config} first" in str(error.value)
    assert generate.main(["--config", str(config)]) == 0
    assert sorted(os.listdir(kept)) == ["manifest.json", "part_1.1.npz", "part_1.2.npz"]
    assert data.read_manifest(str(kept))["seed"] == 777
    assert generate.main(["--config", str(config), "--check"]) == 0
    assert "reference data matches the solution" in capsys.readouterr().out
    assert {n: data.sha256(os.path.join(data.DATA_DIR, n)) for n in root} == root     # the root's as it was
    with open(data.HASHES_MODULE) as f:
        assert f.read() == hashes

    out, _, _ = build.build_handout(str(tmp_path / "handout"), str(config))
    assert data.read_manifest(os.path.join(out, "autograder", "data"))["seed"] == 777
    work = tmp_path / "work"
    import shutil
    import subprocess
    import sys
    shutil.copytree(out, work, ignore=shutil.ignore_patterns("mytorch", "notebooks"))
    shutil.copytree(os.path.join(build.REPO, "mytorch"), work / "mytorch")
    proc = subprocess.run([sys.executable, "-m", "autograder", "--json", str(tmp_path / "r.json")], cwd=work,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert load_results(tmp_path / "r.json")["score"] == 50, proc.stdout
    built = build.build_gradescope(str(tmp_path / "gradescope"), config=str(config))[0]
    assert data.read_manifest(os.path.join(built, "autograder", "data"))["seed"] == 777


def test_generate_help_is_whole_sentences():
    """Each option's help ends where its sentence does (it once stopped at "since the grader would be")."""
    import subprocess
    import sys
    text = subprocess.run([sys.executable, "-m", "autograder", "generate", "--help"], cwd=build.REPO,
                          capture_output=True, text=True).stdout
    options = re.split(r"\n  (?=-)", " ".join(text.split("\n\n", 2)[2:]))[1:]
    helps = {o.split()[0]: " ".join(o.split()) for o in options}
    assert set(helps) == {"-h,", "--config", "--seed", "--check"}
    assert "since the grader would be" not in text
    assert helps["--seed"].endswith("(change seed in the course file instead)")
    assert helps["--config"].endswith("which its handout build ships")


REMOVED = PARTIAL.replace("[assignment.points]", 'left_out = "removed"\n[assignment.points]')


def test_a_part_that_needs_a_removed_cell_is_refused_naming_the_part_and_the_cell(tmp_path):
    config = tmp_path / "course.toml"
    config.write_text(REMOVED)
    with pytest.raises(course.CourseError) as error:
        course.load_course(str(config))
    message = str(error.value)
    assert message.startswith(str(config)) and "part 6.3 (BPTT: GRU block sequence layer) runs GRUBlockCell" in message
    assert 'section 3 (GRU block cell), which left_out = "removed" removes' in message
    assert "(so do parts 6.4, 6.5)" in message                          # every part the course must leave out
    assert '"6.3" = 0, "6.4" = 0, "6.5" = 0 in [assignment.points]' in message and 'left_out = "working"' in message
    config.write_text(REMOVED + '"6.3" = 0\n"6.4" = 0\n"6.5" = 0\n')
    the_course = course.load_course(str(config))
    assert the_course.left_out == "removed" and the_course.dropped == ("6.3", "6.4", "6.5")
    assert [p.number for p in the_course.parts() if p.number.startswith("6.")] == ["6.1", "6.2"]
    assert the_course.total == 6 + 9 + 5 + 7 + 5 + 5 + 25
    again = course.parse(course.tomllib.loads(the_course.to_toml()), None)     # what a built grader reads
    assert (again.points, again.left_out, again.dropped) == (the_course.points, "removed", the_course.dropped)
    config.write_text(PARTIAL.replace("[assignment.points]", 'left_out = "gone"\n[assignment.points]'))
    with pytest.raises(course.CourseError, match='left_out must be "working"'):
        course.load_course(str(config))
    assert course.load_course().left_out == "working"                  # the default: see docs/instructors.md


def test_removed_sections_ship_as_stubs_and_the_course_still_scores_its_total(tmp_path):
    config = tmp_path / "course.toml"
    config.write_text(REMOVED + '"6.3" = 0\n"6.4" = 0\n"6.5" = 0\n')
    warnings = []
    out = build.build_handout(str(tmp_path / "handout"), str(config), warn=warnings.append)[0]
    for name in ("gru_block_cell.py", "gmu_cell.py", "tgru_cell.py", "lstm_cell.py"):
        with open(os.path.join(build.REPO, "mytorch", "nn", name)) as f:
            solution = [line.strip() for body in markers.region_texts(f.read(), name) for line in body.split("\n")
                        if len(line.strip()) > 12 and not line.strip().startswith(("#", "return", "if "))]
        with open(os.path.join(out, "mytorch", "nn", name)) as f:
            shipped = f.read()
        assert solution and not [line for line in solution if line in shipped], name
        assert "not in this course: section" in shipped
    assert sorted(os.listdir(os.path.join(out, "notebooks"))) == ["01_rnn_cell.ipynb", "02_gru_cell.ipynb",
                                                                  "09_ctc.ipynb", "10_making_it_fast.ipynb", "data",
                                                                  "diagrams.py",
                                                                  "needs.py"]
    assert any("06_bptt_vanishing.ipynb (runs sections 3, 4, 5, 7)" in w for w in warnings)
    assert not any("ship as working code" in w for w in warnings)
    with open(os.path.join(out, "README.md")) as f:
        assert "Their methods are stubs that say so" in f.read()
    # the student's work: the solution in the assigned files; the removed ones stay stubs
    import subprocess
    import sys
    for name in ("rnn_cell.py", "gru_cell.py", "recurrent.py", "ctc.py", "ctc_course.py", "ctc_decode.py"):
        source = os.path.join(build.REPO, "mytorch", "nn", name)
        target = os.path.join(out, "mytorch", "nn", name)
        with open(source) as f:
            bodies = markers.region_texts(f.read(), source)
        with open(target) as f:
            restored = markers.restore(f.read(), bodies)
        with open(target, "w") as f:
            f.write(restored)
    proc = subprocess.run([sys.executable, "-m", "autograder", "--json", str(tmp_path / "r.json")], cwd=out,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""), timeout=300)
    assert load_results(tmp_path / "r.json")["score"] == 62, proc.stdout


def test_working_sections_left_out_keep_their_cells_but_not_a_bptt_and_the_build_says_what_they_show(tmp_path):
    config = tmp_path / "course.toml"
    config.write_text(PARTIAL)
    warnings = []
    out = build.build_handout(str(tmp_path / "handout"), str(config), warn=warnings.append)[0]
    with open(os.path.join(out, "mytorch", "nn", "gru_block_cell.py")) as f:
        shipped = f.read()
    assert "d_r_bar_u_bar @ w_ru.T" in shipped                               # the cell works, readable
    assert re.search(r"def sequence_backward\(.*\n(?:.*\n)*?\s+raise NotImplementedError\('GRUBlockCell.sequence_back",
                     shipped)                                                # the masked BPTT does not ship
    warning = next(w for w in warnings if 'left_out = "working"' in w)
    assert "mytorch/nn/gru_block_cell.py: gru_block_cell, gru_block_cell_grad, GRUBlockCell.backward" in warning
    assert "sequence_backward" not in warning and 'Set left_out = "removed"' in warning


def test_the_site_takes_the_courses_title_and_cells(tmp_path, monkeypatch):
    from handout import sections
    the_course = course.parse(course.tomllib.loads(PARTIAL), None)
    with open(os.path.join(build.REPO, "handout", "site_pages", "index.md")) as f:
        index = sections.conditionals(f.read(), the_course)
    table = index.split("## The cells")[1].split("Sizes, everywhere")[0].strip().split("\n")
    assert [row.split("|")[1].strip() for row in table if row.startswith("| `")] == ["`RNNCell`", "`GRUCell`"]
    assert "<!--" not in index and "" not in table[2:]               # rows only: the table is whole
    monkeypatch.setenv("MYTORCH_SITE_TITLE", the_course.title)
    monkeypatch.setenv("MYTORCH_SITE_SOLUTIONS", "0")
    conf = {}
    with open(os.path.join(build.REPO, "handout", "site_pages", "conf.py")) as f:
        exec(compile(f.read(), "conf.py", "exec"), conf)
    assert conf["html_title"] == "RNNs, GRUs and CTC"
