"""Batch grading of a class that hands in every form there is: nobody is dropped, each gets feedback, and the
class report says what the rows say. The grader runs from a copy whose course is sections 1 and 2 (21 points,
each part its own), so the class grades in seconds."""
import csv
import importlib.util
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import urllib.parse
import zipfile
from xml.etree import ElementTree

import numpy
import pytest

from autograder.diagnosis import mistakes
from autograder.instructor import class_report
from autograder.parts import spec
from tests.graderkit import REPO, check_gradescope, make_grader_copy, make_submission, report_of, run_cli
from tests.test_site import BROWSER_FLAGS, ON_CI, find_chromium

COURSE = '[assignment]\ntitle = "RNN and GRU"\nsections = ["1", "2"]\n'
TOTAL = sum(p.points for p in spec.PARTS if p.number[0] in "12")                          # 21
RNN_FORWARD_USERS = sum(spec.PARTS_BY_NUMBER[n].points for n in ("1.1", "1.2"))          # the loop costs these
Z_SWAPPED = next(m for m in mistakes.HINTED if m.id == "gru-z-swapped")
TIMEOUT = "3"              # seconds a part may take: judy's two RNN parts wait it out in each run

# The class waits out judy's timeouts in each of its runs, its CPU half idle: its tests run in the worker of
# the other tests that wait (tests/conftest.py), not beside them, where both would leave a core idle.
pytestmark = pytest.mark.waits


def _pack(kind, source, path, prefix=""):
    """The mytorch under ``source`` as a tar, tar.gz or zip at ``path`` (members under ``prefix``)."""
    names = [os.path.relpath(os.path.join(f, n), source) for f, _, ns in os.walk(os.path.join(source, "mytorch"))
             for n in ns if "__pycache__" not in f]
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as z:
            for name in names:
                z.write(os.path.join(source, name), prefix + name)
    else:
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w") as tar:
            for name in names:
                tar.add(os.path.join(source, name), prefix + name)


# name -> (the total it must get, the problem, words of the reason)
EXPECTED = {
    "alice": (TOTAL, "", ""),                                                   # mytorch/
    "bob": (TOTAL, "", ""),                                                     # handin/mytorch/
    "carol": (TOTAL, "", ""),                                                   # handin.tar
    "dave": (None, "", ""),                                                     # a .tar.gz with a mistake
    "erin": (TOTAL, "", ""),                                                    # a .zip, mytorch one level down
    "frank": (0, "ungradable", "the folder is empty"),
    "gina": (0, "ungradable", "no mytorch/ folder, handin.tar or zip in it (it holds notes.txt, photo.jpg)"),
    "hank": (0, "ungradable", "mytorch is a file, not a folder"),
    "ivan": (TOTAL - RNN_FORWARD_USERS, "crashed", "SyntaxError"),             # the RNN parts fail to import
    "judy": (TOTAL - RNN_FORWARD_USERS, "timed out", "did not finish within"),  # RNNCell.forward never returns
    "kim.zip": (TOTAL, "", ""),                                                 # an archive at the folder's top
}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    grader = make_grader_copy(root / "grader", COURSE)
    subs = root / "subs"
    solution = make_submission(root / "solution")
    make_submission(subs / "alice")
    make_submission(subs / "bob" / "handin")
    (subs / "carol").mkdir()
    _pack("tar", solution, subs / "carol" / "handin.tar")
    wrong = make_submission(root / "wrong", [(Z_SWAPPED.path, Z_SWAPPED.old, Z_SWAPPED.new)])
    (subs / "dave").mkdir()
    _pack("tar.gz", wrong, subs / "dave" / "submission.tar.gz")
    (subs / "erin").mkdir()
    _pack("zip", solution, subs / "erin" / "upload.zip", prefix="work/")
    (subs / "frank").mkdir()
    (subs / "gina").mkdir()
    (subs / "gina" / "notes.txt").write_text("I ran out of time")
    (subs / "gina" / "photo.jpg").write_bytes(b"\xff\xd8")
    (subs / "hank").mkdir()
    (subs / "hank" / "mytorch").write_text("oops")
    make_submission(subs / "ivan", [("nn/rnn_cell.py", "class RNNCell", "class RNNCell(:\nclass _Unused")])
    make_submission(subs / "judy", [("nn/rnn_cell.py", "        # BEGIN SOLUTION\n        a = x @",
                                     "        import time\n        while True:\n            time.sleep(1)\n        a = x @")])
    _pack("zip", solution, subs / "kim.zip")
    (subs / "README.txt").write_text("not a submission")
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--csv", str(root / "copy.csv")],
                   cwd=grader, timeout=600)
    return root, report_of(subs), proc, grader


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_every_submission_gets_one_row_with_its_total_and_reason(graded_class):
    root, report, proc, _ = graded_class
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Found {len(EXPECTED)} submissions" in proc.stdout
    assert (f"{len(EXPECTED)} submissions found, {len(EXPECTED)} rows written:\n  scores     {report / 'scores.csv'}\n"
            f"  feedback   {report / 'feedback'}\n  the class  {report / 'report.md'} (its histogram: totals.svg)\n"
            f"  gradebook  {report / 'gradebook.csv'} (Canvas's gradebook import)\n") in proc.stdout
    assert (report / "totals.svg").exists() and (report / "gradebook.csv").exists()
    assert "warning: no isolation" in proc.stderr and all(len(line) <= 80 for line in proc.stderr.splitlines())
    assert "note: graded on the stored cases" in proc.stderr and "--fresh-seed grades on new" in proc.stderr
    rows = _rows(report / "scores.csv")
    parts = ["1.1", "1.2", "2.1", "2.2"]
    assert rows[0] == ["submission", "handed in as"] + parts + ["total", "problem", "reason"]
    by_name = {r[0]: r for r in rows[1:]}
    assert list(by_name) == sorted(EXPECTED) and len(rows) == len(EXPECTED) + 1
    for name, (total, problem, reason) in EXPECTED.items():
        row = by_name[name]
        assert abs(sum(float(s) for s in row[2:6]) - float(row[6])) < 1e-6, row
        if total is not None:
            assert float(row[6]) == total, row
        assert row[7] == problem and reason in row[8], row
    assert 0 < float(by_name["dave"][6]) < TOTAL and float(by_name["dave"][2]) == 4
    assert [by_name[n][1] for n in ("alice", "bob", "carol", "dave", "erin", "kim.zip")] == \
        ["mytorch/", "handin/mytorch/", "handin.tar", "submission.tar.gz", "upload.zip", "kim.zip"]
    assert _rows(root / "copy.csv") == rows


def test_every_submission_gets_feedback_the_student_would_have_seen(graded_class):
    _, report, _, _ = graded_class
    assert sorted(os.listdir(report / "feedback")) == sorted(f"{n}.{ext}" for n in EXPECTED for ext in ("json", "txt"))
    for name, (total, _, reason) in EXPECTED.items():
        text = (report / "feedback" / f"{name}.txt").read_text()
        results = json.loads((report / "feedback" / f"{name}.json").read_text())
        tests = check_gradescope(results)
        assert sorted(tests) == ["1.1", "1.2", "2.1", "2.2"]
        assert re.search(rf"Total\s+{results['score']:.2f}/{TOTAL}", text), text
        assert all(len(line) <= 80 for line in text.splitlines())
        if reason and name != "ivan":
            assert reason in " ".join(text.split())
    dave = (report / "feedback" / "dave.txt").read_text()
    assert "Hint:" in dave and "z and 1 − z swapped" in dave and "── 2.1 GRU cell forward: failed" in dave
    judy = (report / "feedback" / "judy.txt").read_text()
    assert "mytorch/nn/rnn_cell.py" in judy and "loop that never ends" in judy


def test_the_class_report_matches_the_rows(graded_class):
    _, report, _, _ = graded_class
    rows = _rows(report / "scores.csv")[1:]
    text = (report / "report.md").read_text()
    totals = [float(r[6]) for r in rows]
    assert f"{len(rows)} submissions, total out of {TOTAL}: mean {statistics.fmean(totals):.2f}, median " \
           f"{statistics.median(totals):.2f}." in text
    for k, number in enumerate(["1.1", "1.2", "2.1", "2.2"]):
        scores = [float(r[2 + k]) for r in rows]
        points = spec.PARTS_BY_NUMBER[number].points
        full = sum(s == points for s in scores) / len(scores)
        line = next(l for l in text.splitlines() if l.startswith(f"| {number} "))
        assert line.endswith(f"| {points} | {statistics.fmean(scores):.2f} | {statistics.median(scores):.2f} | "
                             f"{full:.0%} |"), line
    hint = next(l for l in text.splitlines() if "z and 1 − z swapped" in l)
    assert hint.startswith(f"- {1 / len(rows):.0%} of the class (1 of {len(rows)}): ")
    problems = re.findall(r"^\| (\w+) \| (ungradable|crashed|timed out) \|", text, re.M)
    assert sorted(problems) == sorted((n, p) for n, (_, p, _) in EXPECTED.items() if p)
    assert "![totals](totals.svg)" in text
    bars = _bars(report / "totals.svg")
    counts, edges = numpy.histogram(totals, bins=[TOTAL * k / 20 for k in range(21)])
    assert [count for _, count, _ in bars] == counts.tolist()
    assert [title for _, _, title in bars][-1] == f"[{edges[-2]:g}, {TOTAL}]: {counts[-1]} submissions"
    heights = [height for height, _, _ in bars]                     # drawn to one scale, the tallest the most
    assert max(heights) > 0 and all(abs(h * max(counts) - max(heights) * c) < 0.2 * max(counts)
                                    for h, c in zip(heights, counts))
    book = _rows(report / "gradebook.csv")
    assert book[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "RNN and GRU"]
    assert book[1] == ["    Points Possible", "", "", "", "", str(TOTAL)]
    assert [(r[0], r[3], float(r[5])) for r in book[2:]] == [(r[0], r[0], float(r[6])) for r in rows]


@pytest.mark.parametrize("maximum, totals", [
    (100, [0, 0, 4.999, 5, 5.0001, 50, 99.99, 100, 100, 37.5]),         # on edges, just below, the top twice
    (23, [23, 23 * 19 / 20, 21.8, 0, 1.15, 11.5]),                         # edges that are not round
    (23, [7]),                                                              # one submission
])
def test_the_histogram_counts_each_total_in_its_bin_as_numpy_does(tmp_path, maximum, totals):
    (tmp_path / "totals.svg").write_text(class_report.histogram_svg(totals, maximum))
    bars = _bars(tmp_path / "totals.svg")
    counts, _ = numpy.histogram(totals, bins=[maximum * k / 20 for k in range(21)])
    assert [count for _, count, _ in bars] == counts.tolist() and sum(counts) == len(totals)
    root = ElementTree.parse(tmp_path / "totals.svg").getroot()
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    for rect in root.iter("{http://www.w3.org/2000/svg}rect"):          # every bar inside the picture
        x, y, w, h = (float(rect.get(k, 0)) for k in ("x", "y", "width", "height"))
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height and h >= 0


# Whether a loaded top-level module is the standard library's, as sys.stdlib_module_names (Python 3.10+) says,
# told on every Python by where it was loaded from: built in or frozen, or a file under the standard library's
# folders (lib-dynload included) and not under site-packages.
IN_STDLIB = """
def in_stdlib(name):
    spec = getattr(sys.modules.get(name), "__spec__", None)
    origin = getattr(spec, "origin", None)
    if name in sys.builtin_module_names or origin in ("built-in", "frozen"):
        return True
    places = [origin] if origin else list(getattr(spec, "submodule_search_locations", None) or [])
    if not places:
        return False
    path = os.path.realpath(places[0])
    stdlib = {os.path.realpath(sysconfig.get_path(k)) for k in ("stdlib", "platstdlib")}
    site = {os.path.realpath(sysconfig.get_path(k)) for k in ("purelib", "platlib")}
    return (any(path.startswith(folder + os.sep) for folder in stdlib)
            and not any(path.startswith(folder + os.sep) for folder in site)
            and not {"site-packages", "dist-packages"} & set(path.split(os.sep)))
"""


def test_writing_the_class_report_loads_no_library_as_root():
    """A batch run as root writes the class report after student code ran; the checks of the grader's own
    Python cover what it loaded by then (and its standard library), so the report must load nothing else
    (a plotting library would bring hundreds of files no check looked at). Python 3.9 has no
    sys.stdlib_module_names: the standard library is told by where a module was loaded from (``IN_STDLIB``),
    which on 3.10+ must say what sys.stdlib_module_names says of every module the child loaded."""
    code = (
        "import json, os, sys, sysconfig, tempfile\n"
        "from autograder.instructor import batch, class_report\n"
        "from autograder.parts import course\n"
        "loaded = {m.partition('.')[0] for m in sys.modules}\n"
        "the_course = course.load_course()\n"
        "payloads = {f's{k}': {'score': 7.0 * k, 'tests': [{'number': p.number, 'score': 0.0}\n"
        "            for p in the_course.parts()], 'extra_data': {}} for k in range(5)}\n"
        "folder = class_report.Folder(tempfile.mkdtemp())\n"
        "class_report.write_class(folder, sorted(payloads), payloads, the_course)\n"
        + IN_STDLIB +
        "now = {m.partition('.')[0] for m in sys.modules}\n"
        "names = getattr(sys, 'stdlib_module_names', None)\n"
        "stdlib = set(names) if names is not None else {m for m in now if in_stdlib(m)}\n"
        "disagree = sorted(m for m in now if names is not None and in_stdlib(m) != (m in names))\n"
        "print(json.dumps([sorted(now - loaded - stdlib), sorted(os.listdir(folder.path)), disagree]))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    new, written, disagree = json.loads(proc.stdout)
    assert new == [] and "totals.svg" in written and "report.md" in written
    assert disagree == []


def test_the_histogram_shows_in_a_browser(graded_class, tmp_path):
    """totals.svg opened in Chromium: no error, every bar and label inside the picture, no two labels on
    top of each other, and the tallest bar drawn in the bars' colour."""
    _, report, _, _ = graded_class
    if find_chromium() is None or importlib.util.find_spec("playwright") is None:
        (pytest.fail if ON_CI else pytest.skip)("no Chromium or playwright here: apt-get install chromium, "
                                               "pip install -e '.[test,site]'")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), headless=True, args=BROWSER_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 700, "height": 400})
            errors = []
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto("file://" + urllib.parse.quote(str(report / "totals.svg")), wait_until="load")
            seen = page.evaluate("""() => {
              const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
              const svg = document.documentElement;
              const bars = [...svg.querySelectorAll('rect')].filter(r => r.querySelector('title'));
              return {svg: box(svg), bars: bars.map(box), labels: [...svg.querySelectorAll('text')].map(box),
                      tallest: box(bars.reduce((a, b) => b.getBBox().height > a.getBBox().height ? b : a))};
            }""")
            picture = page.screenshot(path=str(tmp_path / "totals.png"))
        finally:
            browser.close()
    assert not errors, errors
    left, top, right, bottom = seen["svg"]
    assert (right - left, bottom - top) == (600, 320)
    inside = [b for b in seen["bars"] + seen["labels"] if left <= b[0] and b[2] <= right and top <= b[1] and
              b[3] <= bottom]
    assert len(inside) == len(seen["bars"]) + len(seen["labels"])
    overlapping = [(a, b) for k, a in enumerate(seen["labels"]) for b in seen["labels"][k + 1:]
                   if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    assert not overlapping, overlapping
    from PIL import Image
    x0, y0, x1, y1 = seen["tallest"]
    pixel = Image.open(io.BytesIO(picture)).convert("RGB").getpixel((int((x0 + x1) / 2), int((y0 + y1) / 2)))
    assert pixel == (0x44, 0x77, 0xAA), pixel


def _bars(svg):
    """(height, count, tooltip) of every bar of a totals.svg, read as XML: a bar is a rect with a title."""
    ns = "{http://www.w3.org/2000/svg}"
    tree = ElementTree.parse(svg)
    bars = [r for r in tree.getroot().iter(ns + "rect") if r.find(ns + "title") is not None]
    return [(float(r.get("height")), int(re.search(r": (\d+) submissions?$", r.find(ns + "title").text).group(1)),
             r.find(ns + "title").text) for r in bars]


def test_a_second_run_resumes_and_regrade_grades_again(graded_class):
    root, report, _, grader = graded_class
    subs = root / "subs"
    os.unlink(report / "feedback" / "alice.json")                          # as if stopped before alice
    before = _rows(report / "scores.csv")
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT], cwd=grader, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"Resuming: {len(EXPECTED) - 1} already graded" in proc.stdout and "1 to grade" in proc.stdout
    assert _rows(report / "scores.csv") == before
    assert f"{len(EXPECTED)} submissions found, {len(EXPECTED)} rows written" in proc.stdout
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--regrade", "1.1"], cwd=grader)
    assert proc.returncode == 2                                        # batch takes no part list
    (subs / "alice" / "mytorch" / "__init__.py").unlink()             # graded again: now it has no package
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--regrade"], cwd=grader, timeout=600)
    assert proc.returncode == 0 and "Resuming" not in proc.stdout
    alice = next(r for r in _rows(report / "scores.csv") if r[0] == "alice")
    assert alice[6] == "0" and alice[7] == "ungradable" and "no __init__.py" in alice[8]


def test_names_no_file_system_or_terminal_takes_as_they_are_get_their_rows_and_feedback(tmp_path):
    """An archive's name of 254 bytes (past a file name's 255 with .json) and a folder's name that is not UTF-8,
    with a terminal escape and a right-to-left override: every submission is graded, gets its row (the name
    as printable text) and its feedback (under the name's printable start and a digest of it), and the class's
    tables are written; a second run finds that feedback and grades nothing again."""
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = tmp_path / "subs"
    solution = make_submission(tmp_path / "solution")
    make_submission(subs / "alice")
    long = "L" * 250 + ".zip"
    _pack("zip", solution, subs / long)
    odd = os.fsdecode(b"carol\xff\x1b[2J" + "\u202e".encode())
    make_submission(subs / odd)
    proc = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = {r[0]: r for r in _rows(report_of(subs) / "scores.csv")[1:]}
    assert sorted(rows) == sorted(["alice", long, "carol??[2J?"])
    assert all(float(r[6]) == TOTAL for r in rows.values()), rows
    feedback = sorted(os.listdir(report_of(subs) / "feedback"))
    assert len(feedback) == 6 and all(len(os.fsencode(name)) <= 255 for name in feedback)
    assert {"alice.json", "alice.txt"} < set(feedback) and sum("~" in name for name in feedback) == 4
    assert (report_of(subs) / "report.md").exists() and (report_of(subs) / "gradebook.csv").exists()
    again = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert again.returncode == 0 and "3 already graded" in again.stdout + again.stderr, again.stdout + again.stderr


def test_a_report_folder_a_student_could_have_filled_is_neither_trusted_nor_taken_for_a_submission(tmp_path):
    """A seed kept in the report folder is used again only with the grader's check (a student's planted seed
    would grade the class on cases they know); a report folder that holds a mytorch, as a submission named
    like it does, is refused (that submission would go ungraded, and the report be written into it)."""
    import argparse

    from autograder.instructor import batch, class_report
    from autograder.parts import course
    the_course = course.load_course()
    folder = class_report.Folder(str(tmp_path / "report"))
    args = argparse.Namespace(fresh_seed="random", regrade=False)
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234}))
    assert batch.batch_seed(args, folder, the_course) != 1234
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234, "check": batch.seed_check(the_course, 1234)}))
    assert batch.batch_seed(args, folder, the_course) == 1234
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234, "check": batch.seed_check(the_course, 1235)}))
    assert batch.batch_seed(args, folder, the_course) != 1234
    subs = tmp_path / "subs"
    make_submission(subs / "alice")
    make_submission(report_of(subs))
    proc = run_cli(["batch", str(subs)], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "is not a report folder of this grader (it holds mytorch)" in proc.stderr, proc.stderr


def test_a_grader_key_is_signed_with_a_secret_of_the_instructor_s_own(tmp_path, monkeypatch):
    """Anyone with the grader can digest its files, the course and the seed: the key a resume trusts is signed
    with a secret kept in the user's config folder (mode 0600, made on first use), so a student cannot sign
    feedback of their own making. Another user's secret, or one others may read, is not used."""
    import hashlib

    from autograder.parts import course
    the_course = course.load_course()
    keys = []
    for home in ("a", "b", "a"):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / home))
        class_report._SECRET.clear()
        keys.append(class_report.grader_key(the_course, None))
        secret = tmp_path / home / "mytorch" / "batch-secret"
        assert os.stat(secret).st_mode & 0o777 == 0o600 and os.stat(secret.parent).st_mode & 0o777 == 0o700
        assert class_report.secret_problem() == ""
    assert keys[0] == keys[2] != keys[1]
    public = hashlib.sha256(class_report.grader_digest().encode())               # what the key used to be
    public.update(the_course.to_toml().encode() + b"\0seed=None")
    assert public.hexdigest()[:32] not in keys
    os.chmod(tmp_path / "a" / "mytorch" / "batch-secret", 0o644)                 # others may read it: not used
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "a"))
    class_report._SECRET.clear()
    assert class_report.grader_key(the_course, None) != keys[0]
    assert "is not yours alone" in class_report.secret_problem()
    class_report._SECRET.clear()


@pytest.mark.parametrize("planted", ["writable", "another user's"])
def test_a_report_folder_another_user_could_have_filled_is_refused(tmp_path, planted):
    """A report folder that another user made in advance (or may write) could hold feedback they wrote and
    would hand them every student's: batch neither resumes from it nor writes into it."""
    subs = tmp_path / "subs"
    make_submission(subs / "mallory", [("nn/rnn_cell.py", "        x, (h,), batched, _ = self._prepare(x, state)\n",
                                        "        raise ValueError('mine')\n")])
    report = report_of(subs)
    (report / "feedback").mkdir(parents=True)
    (report / "feedback" / "mallory.txt").write_text("100 of 100\n")
    if planted == "writable":
        os.chmod(report / "feedback", 0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a folder another user's needs root")
        nobody = 65534
        for path in (report, report / "feedback", report / "feedback" / "mallory.txt"):
            os.chown(path, nobody, nobody)
    proc = run_cli(["batch", str(subs)], timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"{report} is not yours alone" in said, said
    assert ("may be changed by other users" if planted == "writable" else "not to you") in said, said
    assert (report / "feedback" / "mallory.txt").read_text() == "100 of 100\n"           # left as it was
    assert not (report / "scores.csv").exists()


def test_a_batch_grades_two_parts_of_a_submission_at_once(tmp_path):
    """With one part of each submission at a time, a submission's slot idles while its child starts and ends
    and while the grader judges it: each submission keeps two parts in flight. Every call of the forward here
    logs when it ran, for half a second; parts 1.1 and 1.2 both call it, and their children overlap."""
    log = tmp_path / "log"
    slow = ("nn/rnn_cell.py", '        x, (h,), batched, _ = self._prepare(x, state)\n',
            '        import os, time\n        start = time.time()\n        time.sleep(0.5)\n'
            f'        with open({str(log)!r}, "a") as f:\n'
            '            f.write(f"{globals().setdefault(\'_who\', os.urandom(4).hex())} {start} {time.time()}\\n")\n'
            '        x, (h,), batched, _ = self._prepare(x, state)\n')
    make_submission(tmp_path / "subs" / "alice", [slow])
    grader = make_grader_copy(tmp_path / "grader", '[assignment]\ntitle = "RNN"\nsections = ["1"]\n')
    proc = run_cli(["batch", str(tmp_path / "subs"), "--jobs", "2"], cwd=grader, timeout=600,
                   env={"MYTORCH_GRADER_LANDLOCK": "0"})              # the log is outside the child's folder
    assert proc.returncode == 0 and "graded 1/1 submissions" in proc.stderr, proc.stdout + proc.stderr
    spans = {}
    for line in log.read_text().split("\n")[:-1]:
        pid, start, end = line.split()
        first, last = spans.get(pid, (float(start), float(end)))
        spans[pid] = (min(first, float(start)), max(last, float(end)))
    assert len(spans) == 2, spans                                  # one child a part (pids: 1 in each)
    (a_start, a_end), (b_start, b_end) = spans.values()
    assert a_start < b_end and b_start < a_end, spans             # at the same time


def test_a_fresh_seed_batch_without_run_as_grades_and_says_nothing_of_stored_cases(tmp_path):
    """The stored-cases note is batch's only word on the seed: with --fresh-seed, none, and the class is graded
    (the note's branch once swallowed the --run-as check of the report folder, which failed without users)."""
    grader = make_grader_copy(tmp_path / "grader", '[assignment]\ntitle = "RNN"\nsections = ["1"]\n')
    subs = tmp_path / "subs"
    make_submission(subs / "alice")
    proc = run_cli(["batch", str(subs), "--fresh-seed", "7", "--solution", REPO], cwd=grader, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "warning: no isolation" in proc.stderr and "stored cases" not in proc.stderr
    assert [r[0] for r in _rows(report_of(subs) / "scores.csv")[1:]] == ["alice"]


def test_a_copy_is_root_s_again_before_its_user_is_lent_to_the_next_submission(tmp_path, monkeypatch):
    """A lease ends by handing its user to the next submission; the copy it graded is root's alone by then (it
    was removed only after, and the next submission's code, as the same user, could have read it)."""
    import contextlib
    import pwd
    import stat

    from autograder.instructor import batch
    if os.geteuid() != 0:
        pytest.skip("lending a copy to a user needs root")
    nobody = pwd.getpwnam("nobody")
    copy = tmp_path / "1" / "graded" / "mytorch"
    copy.mkdir(parents=True)
    seen = {}

    class Pool:
        @contextlib.contextmanager
        def lease(self):
            yield nobody
            folder = os.stat(copy.parent)                  # as the user goes back to the pool
            seen["owner"], seen["mode"] = folder.st_uid, stat.S_IMODE(folder.st_mode)

    def graded(root, parts, user=None, **options):
        seen["during"] = os.stat(copy.parent).st_uid
        return []
    monkeypatch.setattr(batch.grade, "grade", graded)
    assert batch._grade_copy(str(copy), [], Pool(), {}) == ([], "")
    assert seen == {"during": nobody.pw_uid, "owner": 0, "mode": 0o700}
