"""One submission locator for every mode: a table of layouts (nested folders, spaces, archives as each mode accepts
them, two candidate packages, none) is gradable in batch, on Gradescope, PrairieLearn and Autolab and by handin, or
in none of them, with the same reason."""
import json
import os
import shutil
import tarfile
import zipfile

import pytest

from autograder.instructor import submissions
from autograder.parts import spec
from tests.graderkit import make_grader_copy, make_submission, report_of, run_cli

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
TOTAL = sum(p.points for p in spec.PARTS if p.number.startswith("1."))


def _pack(source, path, prefix=""):
    """The mytorch under ``source`` as a tar or zip (by ``path``'s ending) with its members under ``prefix``."""
    names = [os.path.relpath(os.path.join(f, n), source) for f, _, ns in os.walk(os.path.join(source, "mytorch"))
             for n in ns if "__pycache__" not in f]
    if str(path).endswith(".zip"):
        with zipfile.ZipFile(path, "w") as z:
            for name in names:
                z.write(os.path.join(source, name), prefix + name)
    else:
        with tarfile.open(path, "w:gz" if str(path).endswith("gz") else "w") as tar:
            for name in names:
                tar.add(os.path.join(source, name), prefix + name)


def _top(d, solution):
    make_submission(d)


def _nested_with_spaces(d, solution):
    make_submission(d / "Downloads" / "hw3 final" / "hw3")
    (d / "Downloads" / "notes.txt").write_text("done")


def _handin_tar(d, solution):
    d.mkdir()
    _pack(solution, d / "handin.tar")


def _zip_nested(d, solution):
    (d / "upload").mkdir(parents=True)
    _pack(solution, d / "upload" / "hw3 final.zip", prefix="hw3 final/hw3/")


def _mac_zip(d, solution):
    make_submission(d / "hw3")
    (d / "__MACOSX" / "hw3" / "mytorch").mkdir(parents=True)            # a Mac's zip: not a second package
    (d / "__MACOSX" / "hw3" / "mytorch" / "._rnn_cell.py").write_bytes(b"\0")


def _two_packages(d, solution):
    make_submission(d / "old")
    make_submission(d / "new" / "hw3")


def _two_archives(d, solution):
    d.mkdir()
    _pack(solution, d / "handin.tar")
    _pack(solution, d / "handin (1).tar.gz")


def _none(d, solution):
    d.mkdir()
    (d / "notes.txt").write_text("I ran out of time")


def _a_file(d, solution):
    (d / "hw3").mkdir(parents=True)
    (d / "hw3" / "mytorch").write_text("oops")


def _no_init(d, solution):
    make_submission(d / "hw3")
    os.unlink(d / "hw3" / "mytorch" / "__init__.py")


# name -> (builder, the words of the reason: '' when it is gradable)
LAYOUTS = {
    "top": (_top, ""),
    "nested with spaces": (_nested_with_spaces, ""),
    "handin tar": (_handin_tar, ""),
    "zip nested": (_zip_nested, ""),
    "mac zip": (_mac_zip, ""),
    "two packages": (_two_packages, "several folders hold a mytorch package"),
    "two archives": (_two_archives, "several archives hold a mytorch package"),
    "none": (_none, "no mytorch/ folder, handin.tar or zip in it (it holds notes.txt)"),
    "a file": (_a_file, "hw3/mytorch is a file, not a folder"),
    "no init": (_no_init, "hw3/mytorch has no __init__.py"),
}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    root = tmp_path_factory.mktemp("layouts")
    solution = make_submission(root / "solution")
    for name, (build, _) in LAYOUTS.items():
        build(root / "class" / name, solution)
    return root


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_locator_finds_the_one_package_or_says_why_not(layouts, tmp_path, name):
    located = submissions.locate(str(layouts / "class"), name, str(tmp_path))
    reason = LAYOUTS[name][1]
    if reason:
        assert located.package is None and reason in located.reason, located
    else:
        assert located.reason == "" and os.path.isfile(os.path.join(located.package, "__init__.py")), located
        assert os.path.basename(located.package) == "mytorch"
    assert str(tmp_path) not in located.reason and str(layouts) not in located.reason


def test_a_nested_package_is_named_by_its_path_in_the_submission(layouts, tmp_path):
    located = submissions.locate(str(layouts / "class"), "nested with spaces", str(tmp_path))
    assert located.form == "Downloads/hw3 final/hw3/mytorch/"
    assert submissions.locate(str(layouts / "class"), "two packages", str(tmp_path / "t")).reason == \
        "several folders hold a mytorch package: new/hw3/mytorch/, old/mytorch/ (hand in one)"
    assert submissions.locate(str(layouts / "class"), "zip nested", str(tmp_path / "z")).form == \
        "upload/hw3 final.zip"


@pytest.fixture(scope="module")
def every_mode(layouts, tmp_path_factory):
    """{mode: {layout: (score, the text a student or instructor is shown)}} for batch, Gradescope, PrairieLearn,
    Autolab and handin (whose score is that of its tar graded on Gradescope)."""
    root = tmp_path_factory.mktemp("modes")
    grader = make_grader_copy(root / "grader", COURSE)
    seen = {m: {} for m in ("batch", "gradescope", "prairielearn", "autolab", "handin")}
    proc = run_cli(["batch", str(layouts / "class"), "--jobs", "2"], cwd=grader, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payloads = {n: json.loads((report_of(layouts / "class") / "feedback" / f"{n}.json").read_text()) for n in LAYOUTS}
    seen["batch"] = {n: (p["score"], p["extra_data"]["problem_detail"]) for n, p in payloads.items()}

    def gradescope(name, put):
        top = root / "gs" / name
        (top / "submission").mkdir(parents=True)
        put(top / "submission")
        proc = run_cli(["gradescope", "--root", str(top)], cwd=grader, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        results = json.loads((top / "results" / "results.json").read_text())
        return results["score"], results["tests"][0]["output"]

    for name in LAYOUTS:
        source = layouts / "class" / name
        seen["gradescope"][name] = gradescope(name, lambda s: shutil.copytree(source, s, dirs_exist_ok=True))
        top = root / "pl" / name
        shutil.copytree(source, top / "student")
        proc = run_cli(["prairielearn", "--root", str(top)], cwd=grader, timeout=300)
        results = json.loads((top / "results" / "results.json").read_text())
        seen["prairielearn"][name] = (results["score"] * TOTAL, results["message"])
        # Autolab takes one file: the archive handed in, else the layout as the tar a student would upload
        job = root / "al" / name
        job.mkdir(parents=True)
        files = [os.path.join(f, n) for f, _, ns in os.walk(source) for n in ns]
        if len(files) == 1 and submissions.is_archive(files[0]):          # Autolab saves it as handin.tar
            shutil.copy(files[0], job / "handin.tar")
        else:
            with tarfile.open(job / "handin.tar", "w") as tar:
                for entry in sorted(os.listdir(source)):
                    tar.add(source / entry, entry)
        proc = run_cli(["autolab", "--handin", str(job / "handin.tar")], cwd=grader, timeout=300)
        lines = proc.stdout.rstrip("\n").split("\n")
        seen["autolab"][name] = (json.loads(lines[-1])["scoreboard"][0], "\n".join(lines[:-1]))
        out = root / "handin" / f"{name}.tar"
        out.parent.mkdir(exist_ok=True)
        proc = run_cli(["handin", "--submission", str(source), "--no-grade", "--out", str(out)], cwd=grader)
        if proc.returncode == 0:
            seen["handin"][name] = gradescope(f"handin-{name}", lambda s: shutil.copy(out, s / "handin.tar"))
        else:
            seen["handin"][name] = (0, proc.stderr)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["batch", "gradescope", "prairielearn", "autolab", "handin"])
def test_every_mode_grades_the_same_layouts_with_the_same_reason(every_mode, mode):
    for name, (_, reason) in LAYOUTS.items():
        if mode == "autolab" and name == "two archives":
            continue                                    # one file is all Autolab takes (an archive in it is not unpacked)
        score, said = every_mode[mode][name]
        if reason:
            assert score == 0 and reason in said, (mode, name, said)
        else:
            assert abs(score - TOTAL) < 1e-6, (mode, name, score, said)
        assert "/tmp/" not in said or mode == "handin", (mode, name, said)
