"""batch --roster: submissions named as Canvas's and Gradescope's downloads name them are matched to the roster's
students, gradebook.csv carries the roster's ids (Canvas's import columns), and report.md lists the submissions
matching no student and the students with none."""
import csv
import io
import time

import pytest

from autograder.instructor import roster
from autograder.parts import spec
from tests.graderkit import make_grader_copy, make_submission, report_of, run_cli
from tests.test_locator import _pack

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
TOTAL = sum(p.points for p in spec.PARTS if p.number.startswith("1."))

CANVAS = ("Student,ID,SIS User ID,SIS Login ID,Section,RNN (777),Quiz 1 (778)\n"
          "    Points Possible,,,,,9,10\n"
          '"Doe, Jane",1001,S01,jdoe,Sec A,,8\n'
          '"Roe, John",1002,S02,jroe,Sec A,,7\n'
          '"Lee, Ann",1003,S03,alee,Sec B,,9\n')
GRADESCOPE = ("First Name,Last Name,SID,Email,Role,Sections\n"
              "Jane,Doe,S01,jdoe@uni.edu,Student,A\n"
              "Ann,Lee,S03,alee@uni.edu,Student,B\n"
              "Tom,Tutor,,tt@uni.edu,TA,\n")
METADATA = """submission_111:
  :submitters:
  - :name: Jane Doe
    :sid: 'S01'
    :email: jdoe@uni.edu
  :created_at: 2026-11-20 10:00:00.000000000 -08:00
submission_222:
  :submitters:
  - :name: Someone Else
    :sid: 'S99'
    :email: other@uni.edu
"""


def _table(text):
    return list(csv.reader(io.StringIO(text)))


def test_canvas_names_match_the_roster_by_user_id_late_or_not(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(CANVAS)
    the_roster = roster.read(str(path))
    assert the_roster.kind == "canvas" and [s.name for s in the_roster.students] == ["Doe, Jane", "Roe, John", "Lee, Ann"]
    names = ["doejane_1001_5001_handin.tar", "roejohn_LATE_1002_5002_hw3.zip", "xyz_LATE_1002_4999_old.zip",
             "stranger_9999_5003_x.tar", "alee"]                  # (a login that is not the name: the id decides)
    matching = roster.match(names, the_roster, str(tmp_path))
    assert matching.graded == {0: names[0], 1: names[1], 2: "alee"}
    assert matching.superseded == [(names[2], "Roe, John")] and matching.unmatched == [names[3]]
    assert matching.without == []


CRAFTED = CANVAS + ('"O_Brien, Mary_Ann",1004,S04,mob,Sec B,,6\n'
                    '"a_1002 _99999999 _x",1005,S05,jroe2,Sec B,,5\n')    # a sortable name chosen to imitate ids


def test_canvas_names_are_split_where_a_student_s_id_and_name_agree(tmp_path):
    """Canvas writes name_userid_attachmentid_file, the name a sortable name without its punctuation (it may hold
    '_', even '_<digits>_<digits>'), the file's name the student's own: no name made to imitate another student's
    is credited to them or supersedes their submission."""
    path = tmp_path / "roster.csv"
    path.write_text(CRAFTED)
    the_roster = roster.read(str(path))
    assert [roster.canvas_name(s.name) for s in the_roster.students] == [
        "doejane", "roejohn", "leeann", "o_brienmary_ann", "a_1002_99999999_x"]
    john = "roejohn_LATE_1002_5002_hw3.zip"
    crafted = {
        "o_brienmary_ann_1004_6001_handin.tar": 3,                    # underscores in the name: hers
        "doejane_1001_7001_roejohn_1002_99999999_handin.tar": 0,      # John's name and ids in Jane's file name
        "a_1002_99999999_x_1005_7002_handin.tar": 4,                  # a name that reads as John's ids: its owner's
        "jroe_9999_99999999_handin.tar": None,                        # not a student, named as John's login
        "stranger_9999_5003_roejohn_1002_99999999_x.tar": None,       # not a student, John's ids in the file name
        "leeann_1003_abc_x.tar": None,                                # no attachment id
    }
    for name, owner in crafted.items():
        matching = roster.match([john, name], the_roster, str(tmp_path))
        assert matching.graded[1] == john and (john, "Roe, John") not in matching.superseded, name
        assert (matching.graded.get(owner) == name) if owner is not None else name in matching.unmatched, name
    # the roster exported before the student renamed: her name no longer agrees, and her own id is not the first
    # split's, which is John's: matches no one rather than John
    path.write_text(CRAFTED.replace('"a_1002 _99999999 _x"', '"Fox, Ann"'))
    matching = roster.match([john, "a_1002_99999999_x_1005_7002_handin.tar"], roster.read(str(path)), str(tmp_path))
    assert matching.graded == {1: john} and matching.unmatched == ["a_1002_99999999_x_1005_7002_handin.tar"]


def test_gradescope_metadata_is_read_in_linear_time(tmp_path):
    (tmp_path / "submission_metadata.yml").write_text(METADATA + " " * (4 << 20) + "x\n")
    start = time.monotonic()
    assert roster.gradescope_metadata(str(tmp_path)) == {"submission_111": ["s01", "jdoe@uni.edu"],
                                                         "submission_222": ["s99", "other@uni.edu"]}
    assert time.monotonic() - start < 2                  # before: 20000 spaces took 6 s, 4 MiB of them days


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("roster")
    grader = make_grader_copy(root / "grader", COURSE)
    solution = make_submission(root / "solution")
    wrong = make_submission(root / "wrong", [("nn/rnn_cell.py", "np.tanh(", "np.sin(")])
    canvas = root / "canvas"
    canvas.mkdir()
    _pack(solution, canvas / "doejane_1001_5001_handin.tar")
    _pack(wrong, canvas / "roejohn_LATE_1002_5002_handin.tar")
    _pack(solution, canvas / "stranger_9999_5003_handin.tar")
    (canvas / "leeann_1003_5004_notes.txt").write_text("I ran out of time")       # a file, no archive: hers
    _pack(solution, canvas / "doejane_1001_5001_zhandin.tar")                     # one submission, two files:
    (canvas / "doejane_1001_5001_zzreadme.txt").write_text("see the tar")         # the archive is graded
    (root / "canvas.csv").write_text(CANVAS)
    proc = run_cli(["batch", str(canvas), "--roster", str(root / "canvas.csv"), "--jobs", "2"], cwd=grader,
                   timeout=600)
    gradescope = root / "gs"
    make_submission(gradescope / "submission_111")
    make_submission(gradescope / "submission_222")
    (gradescope / "submission_metadata.yml").write_text(METADATA)
    (root / "gs.csv").write_text(GRADESCOPE)
    proc_gs = run_cli(["batch", str(gradescope), "--roster", str(root / "gs.csv"), "--jobs", "2"], cwd=grader,
                      timeout=600)
    return canvas, proc, gradescope, proc_gs


def test_the_gradebook_carries_canvas_s_ids_in_its_import_columns(graded):
    canvas, proc, _, _ = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = _table((report_of(canvas) / "gradebook.csv").read_text())
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "RNN (777)"]
    assert table[1] == ["    Points Possible", "", "", "", "", f"{TOTAL:g}"]
    rows = {r[0]: r for r in table[2:]}
    assert rows["Doe, Jane"] == ["Doe, Jane", "1001", "S01", "jdoe", "Sec A", f"{TOTAL:g}"]
    assert rows["Roe, John"][:5] == ["Roe, John", "1002", "S02", "jroe", "Sec A"]
    assert 0 <= float(rows["Roe, John"][5]) < TOTAL
    assert rows["Lee, Ann"] == ["Lee, Ann", "1003", "S03", "alee", "Sec B", "0"]     # her file has a row: 0
    assert len(table) == 5                                    # the stranger is not a student of the roster
    scores = {r[0]: r for r in _table((report_of(canvas) / "scores.csv").read_text())}
    assert scores["leeann_1003_5004_notes.txt"][-2:] == ["ungradable", "a file that is not an archive (hand in "
                                                                       "handin.tar, a zip or a folder)"]
    report = (report_of(canvas) / "report.md").read_text()
    unmatched = report.split("### Submissions that match no student")[1].split("###")[0]
    without = report.split("### Students with no submission")[1].split("###")[0]
    assert "stranger" in unmatched and "doejane" not in unmatched
    assert without.strip().endswith("(their grade left empty)\n\nNone.")
    superseded = report.split("### Submissions superseded")[1]
    assert "doejane\\_1001\\_5001\\_zzreadme" in superseded and "zhandin" not in superseded
    later = superseded.count("\n- ")                           # each student counted once, with their latest
    assert later == 2 and f"{len(scores) - 1 - later} submissions (not counting {later} superseded), total out " \
        f"of {TOTAL:g}" in report
    assert "3 of 3 students matched; 1 submission matching no student, 0 students with none" in proc.stdout


def test_a_gradescope_export_is_matched_through_its_metadata(graded):
    _, _, gradescope, proc = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = _table((report_of(gradescope) / "gradebook.csv").read_text())
    assert table == [["Name", "SID", "Email", "Sections", "RNN"], ["Jane Doe", "S01", "jdoe@uni.edu", "A", f"{TOTAL:g}"],
                     ["Ann Lee", "S03", "alee@uni.edu", "B", ""]]
    report = (report_of(gradescope) / "report.md").read_text()
    assert "submission\\_222" in report.split("### Submissions that match no student")[1].split("###")[0]


def test_a_roster_of_neither_kind_is_refused_before_grading(tmp_path):
    (tmp_path / "subs" / "a").mkdir(parents=True)
    (tmp_path / "r.csv").write_text("name,score\nx,1\n")
    proc = run_cli(["batch", str(tmp_path / "subs"), "--roster", str(tmp_path / "r.csv")])
    assert proc.returncode == 2 and "neither Canvas's gradebook export" in proc.stderr


def test_a_canvas_export_without_the_courses_column_is_said_not_silently_added(tmp_path):
    """The Canvas assignment named otherwise than the course: the import would make a new assignment, so the
    batch and report.md say so and name the export's assignments; with the column there, nothing is said."""
    (tmp_path / "other.csv").write_text(CANVAS.replace("RNN (777)", "HW3 RNNs (777)"))
    (tmp_path / "same.csv").write_text(CANVAS)
    other, same = roster.read(str(tmp_path / "other.csv")), roster.read(str(tmp_path / "same.csv"))
    warning = roster.new_column_warning(other, "RNN")
    assert warning.startswith('the roster has no column for an assignment named "RNN" (the course\'s title)')
    assert "(the roster's assignments: HW3 RNNs (777), Quiz 1 (778))" in warning
    assert roster.new_column_warning(same, "RNN") == ""
