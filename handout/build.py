"""Build the student handout and the Gradescope autograder from this repository and its course.

    python -m handout build [--out build/handout] [--config course.toml] [--solutions] [--force]
                                                                            the student version, OUT.zip
    python -m handout gradescope [--out build/gradescope] [--config FILE] [--fixed-cases] [--force]

Both are made for a course (``autograder.parts.course``: course.toml, or ``--config FILE``): only its sections'
TODOs, pages, notebooks and grader parts, at its points (``handout.sections``); a section left out ships as
working code. The grader carries the resolved course as ``autograder/course.toml`` and the reference data of
the chosen parts alone. ``--out`` is replaced only if it is empty or an earlier build of the same kind (a
``.mytorch-build`` file says which), unless ``--force``.

Student version: ``mytorch/`` with every solution region replaced by a TODO; ``notebooks/`` stripped the same
way with outputs cleared, and each derivation held back (below), with the texts they read (``notebooks/data/``);
``autograder/`` with its reference data but without the generator and the mistake
catalogue; the written assignment; a student README and setup.py. Nothing with a solution in it is copied:
the build fails if a ``BEGIN SOLUTION`` marker survives anywhere in the output, or if a non-trivial line of a
solution region appears anywhere in it outside its TODO (see ``handout.leaks``), or if an equation of a graded
backward appears in its Markdown or LaTeX (see ``handout.equations``).

Derivations: a notebook cell that derives or computes a graded quantity carries the cell tag ``derivation``,
and is followed by one or more cells tagged ``exercise`` that say what to derive, the shapes, and which check
(a gradcheck against the student's own code) tells when it is right. The student version drops the
``derivation`` cells and keeps the ``exercise`` cells. A result such an exercise asks for, stated as well in a
docstring, a comment or a page of the assignment, sits in a ``BEGIN DERIVATION: <what students read instead> |
answer: <the result>`` … ``END DERIVATION`` block (``handout.leaks``): replaced in the student version, and the
build fails if an answer appears anywhere else. ``solutions=True`` (``--solutions``; the course's
``release_solutions``) is the version for after the deadline: the ``derivation`` cells and blocks kept and the
``exercise`` cells dropped. Solution regions are stripped all the same, in ``mytorch/`` and in the notebooks:
they are the graded code, and the leak check on code lines still holds. A notebook's TODO raises needs.py's
``todo(...)``, which stops the notebook with the message alone, as ``needs(...)`` does.

Gradescope version: ``setup.sh`` and ``run_autograder`` at the root, the grader, and the solution ``mytorch``
under ``solution/`` so that every submission is graded on fresh cases (``--fresh-seed``) whose references come
from the solution; student code runs as the unprivileged user ``student`` (created by setup.sh), who cannot
read the solution. Without the solution (``--fixed-cases``, or ``fresh_seed = false`` in the course) it grades
on the stored cases, which every student holds; that is refused unless asked for with ``--fixed-cases``.
"""
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import uuid

import autograder
from autograder.instructor import autolab
from autograder.parts import course as courses
from autograder.parts import data, spec
from handout import sections
from handout.equations import backward_equations, find_equation_leaks
from handout.leaks import DerivationError, derivation_answers, find_answer_leaks, find_leaks, hold_back, solution_lines
from handout.markers import MarkerError, strip_source

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(REPO, "handout")
STAMP = ".mytorch-build"


class BuildError(Exception):
    """The build cannot go on; the message says why."""


def _ignore(folder, names):
    return {n for n in names if n == "__pycache__" or n.endswith(".pyc") or n.startswith(".")}


def strip_tree(src, dst, pattern=".py", sources=None, keep=(), provided=None, removed=(), readable=None,
               released=False):
    """Copy the .py files of ``src`` to ``dst`` with every solution region replaced. Returns the region count.

    The path of every file stripped is appended to ``sources`` when given. A file of a section in ``keep`` (left
    out of the course, as working code) keeps its solution, markers removed, except its optional fast paths
    when section 6 (BPTT) is assigned (a cell's ``sequence_backward`` is a masked BPTT, walking time backwards),
    and its path (relative to ``dst``'s folder) is appended to ``provided``, and what it lets students read to
    ``readable`` ('file: Class.method'). A file of a section in ``removed`` ships as stubs that say its section is
    not in the course. A derivation a notebook exercise asks for, written out in a docstring or comment, is held
    back unless ``released`` (``handout.leaks.hold_back``)."""
    count = 0
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in _ignore(folder, [d]))
        for name in sorted(files):
            if not name.endswith(pattern):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, REPO)
            with open(path, encoding="utf-8") as f:
                source = f.read()
            section = sections.file_section(rel, source) if (keep or removed) else None
            if section is not None and section in keep:
                fast_paths_hidden = "6" not in keep and "6" not in removed
                stripped, n = strip_source(source, rel, keep=lambda r: not (fast_paths_hidden and
                                                                            r.text.startswith("optional")))
                if provided is not None:
                    provided.append(os.path.relpath(os.path.join(dst, os.path.relpath(path, src)), os.path.dirname(dst)))
                if readable is not None:
                    readable += [f"{os.path.relpath(path, REPO)}: {name}" for name in sections.solved_functions(
                        source, rel, lambda r: not (fast_paths_hidden and r.text.startswith("optional")))]
            elif section is not None and section in removed:
                from autograder.parts import spec
                stripped, _ = strip_source(source, rel, removed=f"section {section} ({spec.SECTIONS[section]}) is "
                                                                 "left out")
                if sources is not None:
                    sources.append(path)
            else:
                if sources is not None:
                    sources.append(path)
                stripped, n = strip_source(source, rel)
                count += n
            stripped = hold_back(stripped, rel, released)
            target = os.path.join(dst, os.path.relpath(path, src))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(stripped)
    return count


DERIVATION, EXERCISE = "derivation", "exercise"


def _tags(cell):
    tags = cell.get("metadata", {}).get("tags", [])
    return set(tags) if isinstance(tags, list) else set()


def check_derivations(cells, where):
    """Every run of ``derivation`` cells is followed by an ``exercise`` cell, so nothing is held back without
    the exercise that replaces it."""
    for index, cell in enumerate(cells):
        if DERIVATION in _tags(cell):
            following = next((c for c in cells[index + 1:] if DERIVATION not in _tags(c)), None)
            if following is None or EXERCISE not in _tags(following):
                raise BuildError(f"{where} (cell {index + 1}): a cell tagged '{DERIVATION}' must be followed by a "
                                 f"cell tagged '{EXERCISE}' (what to derive, the shapes, the check)")


def strip_notebook(path, target, solutions=False):
    """A notebook with solution regions replaced in its code cells, derivations held back, every output cleared.

    With ``solutions``: derivations kept in place of their exercise cells (see the module docstring)."""
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    where = os.path.relpath(path, REPO)
    cells = notebook.get("cells", [])
    check_derivations(cells, where)
    count, kept = 0, []
    # a course notebook (it imports needs.py) stops at a TODO with needs' todo(...); any other, with the error
    uses_needs = any("from needs import" in "".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code")
    for index, cell in enumerate(cells):
        tags = _tags(cell)
        if (DERIVATION in tags and not solutions) or (EXERCISE in tags and solutions):
            continue
        kept.append(cell)
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        stripped, n = strip_source(source, f"{where} (cell {index + 1})", require_function=False,
                                   stop="todo" if uses_needs else None)
        count += n
        cell["source"] = stripped
        cell["outputs"], cell["execution_count"] = [], None
    notebook["cells"] = kept
    code = "\n".join("".join(c["source"]) for c in kept if c.get("cell_type") == "code")
    if count and uses_needs and not re.search(r"^from needs import [^\n]*\btodo\b", code, re.M):
        raise BuildError(f"{where}: its exercises' TODOs raise todo(...): import it in a cell above them "
                         "(from needs import todo)")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        json.dump(notebook, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return count


def course_data(course):
    """(folder, manifest) of the reference data ``course`` is graded against in this checkout: the grader's own
    when drawn from the course's seed, else what ``python -m autograder generate --config FILE`` wrote for it
    (``data.seed_dir``). A BuildError names the command that writes it when it is missing or from another seed,
    or lacks a part of the course."""
    command = courses.generate_command(course)
    own = data.read_manifest()
    folder = data.DATA_DIR if own.get("seed") == course.seed else data.seed_dir(course.seed)
    if folder == data.DATA_DIR:
        manifest = own
    elif os.path.isfile(os.path.join(folder, data.MANIFEST)):
        manifest = data.read_manifest(folder)
    else:
        raise BuildError(f"the reference data was drawn from seed {own.get('seed')} but the course says seed "
                         f"{course.seed}, and this checkout holds no data for that seed: run {command} first")
    missing = [p.number for p in course.parts() if data.file_name(p.number) not in manifest.get("files", {})
               or not os.path.isfile(os.path.join(folder, data.file_name(p.number)))]
    if manifest.get("seed") != course.seed or missing:
        raise BuildError(f"the reference data of seed {course.seed} in {os.path.relpath(folder, REPO)} lacks parts "
                         f"{', '.join(missing)} of the course: run {command} first")
    return folder, manifest


def copy_grader(dst, course):
    """The grader without the instructor's modules, with the course's resolved copy and its parts' data alone
    (the data drawn from the course's seed: see ``course_data``)."""
    chosen = {data.file_name(p.number) for p in course.parts()}
    source, manifest = course_data(course)

    grader = os.path.join(REPO, "autograder")
    left_out = {os.path.join(grader, path) for path in autograder.INSTRUCTOR_ONLY}

    def ignore(folder, names):
        skipped = _ignore(folder, names) | {n for n in names if os.path.join(folder, n) in left_out}
        skipped |= {"course.toml"} if os.path.samefile(folder, grader) else set()
        if os.path.abspath(folder) == os.path.abspath(data.DATA_DIR):
            skipped |= set(names) - {data.MANIFEST}          # the course's files are copied below
        return skipped
    shutil.copytree(grader, dst, ignore=ignore)
    for name in sorted(chosen):
        shutil.copy(os.path.join(source, name), os.path.join(dst, "data", name))
        if data.sha256(os.path.join(dst, "data", name)) != manifest["files"][name]:
            raise BuildError(f"{os.path.relpath(os.path.join(source, name), REPO)} does not match its manifest: "
                             f"run {courses.generate_command(course)} again")
    manifest = dict(manifest, files={n: h for n, h in manifest["files"].items() if n in chosen})
    with open(os.path.join(dst, "data", data.MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    if source != data.DATA_DIR:                      # the grader's compiled sums are those of the course's data
        with open(os.path.join(dst, "parts", os.path.basename(data.HASHES_MODULE)), "w") as f:
            f.write(data.hashes_module(manifest["files"]))
    with open(os.path.join(dst, "course.toml"), "w", encoding="utf-8") as f:
        f.write(course.to_toml())


def check_no_markers(root):
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            if "BEGIN SOLUTION" in text or "END SOLUTION" in text:
                raise BuildError(f"{os.path.relpath(path, root)} still holds a solution marker")
            if "BEGIN DERIVATION" in text or "END DERIVATION" in text:
                raise BuildError(f"{os.path.relpath(path, root)} still holds a derivation marker")


def check_no_leaks(sources, root, provided=(), warn=None, equations=True, answers=()):
    """A build error if a non-trivial line of a solution region of ``sources`` appears anywhere under ``root``,
    or (``equations``) an equation of a graded backward in its Markdown or LaTeX, or one of ``answers`` (the
    results of derivations held back, ``handout.leaks.derivation_answers``) anywhere, in a docstring or a
    TODO's text as much as in a page.

    Lines found only in ``provided`` files (relative paths: the working code of sections a course leaves out)
    go to ``warn`` instead: the instructor chose to hand that code out, and is told what it gives away."""
    found = find_leaks(solution_lines(sources), root)
    given = [f for f in found if f[2].rsplit(":", 1)[0] in provided]
    found = [f for f in found if f not in given]
    if given and warn is not None:
        files = sorted({where.rsplit(":", 1)[0] for _, _, where in given})
        warn(f"warning: {len(given)} line(s) of the assigned sections' solutions also appear in the working code "
             f"of the sections left out ({', '.join(files)}); students can read them there:\n" +
             _listing(given, "in"))
    if found:
        raise BuildError(f"{len(found)} solution line(s) would reach students outside their TODO "
                         f"(rewrite the other use, e.g. check the exercise against the library instead):\n"
                         f"{_listing(found, 'is also in')}")
    found = find_answer_leaks(answers, root)
    if found:
        raise BuildError(f"{len(found)} held-back derivation result(s) would reach students (put the text inside "
                         "its BEGIN DERIVATION block, or say it another way):\n" + _listing(found, "is written in"))
    found = find_equation_leaks(backward_equations(sources), root) if equations else []
    if found:
        raise BuildError(f"{len(found)} equation(s) of a graded backward would reach students (tag the cell "
                         f"'{DERIVATION}' and follow it by an '{EXERCISE}' cell, or rewrite the page):\n"
                         f"{_listing(found, 'is written out in')}")


def _listing(found, verb, shown=10):
    """The first ``shown`` of (source, text, where) as lines of a message, and how many more there are."""
    lines = [f"  {os.path.relpath(source, REPO)}: `{text}` {verb} {where}" for source, text, where in found[:shown]]
    if len(found) > shown:
        lines.append(f"  … and {len(found) - shown} more")
    return "\n".join(lines)

def check_output(out, kind, force=False):
    """A BuildError unless ``out`` may receive a build of ``kind``: it is absent, empty or holds an earlier build of
    the same kind (its ``STAMP`` says so), or ``force``."""
    if os.path.lexists(out) and not force:
        if not os.path.isdir(out) or os.path.islink(out):
            raise BuildError(f"--out {out} is not a folder: give another path (or --force to replace it)")
        stamp = os.path.join(out, STAMP)
        earlier = None
        if os.path.isfile(stamp):
            with open(stamp, encoding="utf-8") as f:
                earlier = f.read().strip()
        if os.listdir(out) and earlier != kind:
            what = f"a {earlier} build" if earlier else "not a build of python -m handout"
            raise BuildError(f"--out {out} is not empty and is {what}: give an empty or new folder, or --force to "
                             "delete what is there")


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


@contextlib.contextmanager
def staged(out, kind, force=False):
    """Build aside, then move into place: yields an empty folder ``target`` (with its stamp) in a hidden folder
    beside ``out``, named as ``out`` is (so a zip of it, ``target + '.zip'``, holds the right folder name). When
    the block ends without an error, ``target`` replaces ``out`` and its zip, if made, replaces ``out.zip``;
    after an error nothing is moved and the hidden folder is removed: ``out`` is what it was, never half a
    build."""
    out = os.path.abspath(out)
    check_output(out, kind, force)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    aside = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.building-", dir=parent)
    try:
        target = os.path.join(aside, os.path.basename(out))
        os.makedirs(target)
        with open(os.path.join(target, STAMP), "w", encoding="utf-8") as f:
            f.write(kind + "\n")
        yield target
        if os.path.lexists(out):
            os.rename(out, os.path.join(aside, "earlier"))
        os.rename(target, out)
        if os.path.isfile(target + ".zip"):
            os.replace(target + ".zip", out + ".zip")
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def load(config):
    """The course of ``config`` (None: course.toml), or a BuildError saying what is wrong in it."""
    try:
        return courses.load_course(config)
    except courses.CourseError as error:
        raise BuildError(str(error)) from None


def copy_assignment(dst, course, released=False):
    """The written assignment: the README with the course's point table, and the chosen sections' pages, their
    derivations held back unless ``released``."""
    folder = os.path.join(HERE, "assignment")
    shipped = sections.pages(folder, course)
    os.makedirs(dst)
    for name in shipped:
        source = os.path.join(folder, name)
        if not name.endswith(".md"):
            if os.path.isfile(source):
                shutil.copy(source, os.path.join(dst, name))
            continue
        with open(source, encoding="utf-8") as f:
            text = hold_back(sections.render_page(name, f.read(), course, shipped), source, released)
        left_out = [f"{s}. {spec_name}" for s, spec_name in spec.SECTIONS.items() if s not in course.sections]
        if name == "README.md" and left_out:
            how = "provided as working code you may read" if course.left_out == "working" else \
                "its code removed (stubs that say so)"
            text = text.replace(sections.POINTS_END, sections.POINTS_END + f"\n\nNot in this course, and {how}: " +
                                "; ".join(left_out) + ".", 1)
        with open(os.path.join(dst, name), "w", encoding="utf-8") as f:
            f.write(text)


def notebook_title(notebook):
    """A notebook's first heading without its number ("7. Training …" is notebook 07, not section 7)."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for line in source.split("\n"):
                if line.startswith("# "):
                    return re.sub(r"^\d+\.\s+", "", line[2:].strip())
    return "notebook"


def write_student_readme(out, course):
    """The student README of the build in ``out``, made from the course and the notebooks it ships."""
    notebooks = []
    folder = os.path.join(out, "notebooks")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith(".ipynb"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                notebook = json.load(f)
            notebooks.append((name, notebook_title(notebook), sections.notebook_needs(notebook)))
    with open(os.path.join(HERE, "student", "README.md"), encoding="utf-8") as f:
        text = sections.student_readme(f.read(), course, notebooks)
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def _stderr(message):
    print(message, file=sys.stderr)


def build_handout(out, config=None, force=False, warn=_stderr, solutions=None):
    """The student version in ``out`` and ``out.zip``; returns (out, zip path, number of regions stripped).
    ``warn`` is told what provided code (of sections left out) gives away; ``solutions``: the notebooks'
    derivations released (see the module docstring; None: as the course's ``release_solutions`` says)."""
    course = load(config)
    if solutions is None:
        solutions = course.release_solutions
    with staged(out, "handout", force) as target:
        regions = _build_handout(target, course, warn, solutions)
        _zip(target, "handout", root_dir=os.path.dirname(target), base_dir=os.path.basename(target))
    out = os.path.abspath(out)
    return out, out + ".zip", regions


def _build_handout(out, course, warn, solutions):
    """The student version of ``course`` in the empty folder ``out``; returns the number of regions stripped."""
    left_out = set(spec.SECTIONS) - set(course.sections)
    keep, removed = (left_out, set()) if course.left_out == "working" else (set(), left_out)
    sources, provided, readable = [], [], []       # files whose regions were stripped; files kept working
    try:
        regions = strip_tree(os.path.join(REPO, "mytorch"), os.path.join(out, "mytorch"), sources=sources,
                             keep=keep, provided=provided, removed=removed, readable=readable, released=solutions)
        notebooks = os.path.join(REPO, "notebooks")
        unshipped = []
        if os.path.isdir(notebooks):
            for name in sorted(os.listdir(notebooks)):
                if name.endswith(".ipynb"):
                    if sections.notebook_section(name) in left_out:
                        continue
                    with open(os.path.join(notebooks, name), encoding="utf-8") as f:
                        needs = sections.notebook_needs(json.load(f))
                    gone = sorted({n.split(".")[0] for n in needs} & removed)
                    if gone:                       # it runs code the course removes: it could not run
                        unshipped.append(f"{name} (runs sections {', '.join(gone)})")
                        continue
                    sources.append(os.path.join(notebooks, name))
                    regions += strip_notebook(os.path.join(notebooks, name), os.path.join(out, "notebooks", name),
                                              solutions)
                elif name.endswith((".py", ".md")) and not name.startswith("."):
                    shutil.copy(os.path.join(notebooks, name), os.path.join(out, "notebooks", name))
                elif name == "data" and os.path.isdir(os.path.join(notebooks, name)):    # texts a notebook reads
                    shutil.copytree(os.path.join(notebooks, name), os.path.join(out, "notebooks", name),
                                    ignore=_ignore)
        copy_assignment(os.path.join(out, "assignment"), course, released=solutions)
        answers = [] if solutions else derivation_answers(
            [os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(REPO, "mytorch")) for name in names
             if name.endswith(".py")] + [os.path.join(HERE, "assignment", name)
                                         for name in sorted(os.listdir(os.path.join(HERE, "assignment")))
                                         if name.endswith(".md")])
    except (MarkerError, KeyError, DerivationError) as error:
        raise BuildError(str(error).strip('"')) from None
    copy_grader(os.path.join(out, "autograder"), course)
    shutil.copy(os.path.join(HERE, "student", "setup.py"), os.path.join(out, "setup.py"))
    write_student_readme(out, course)
    check_no_markers(out)
    check_no_leaks(sources, out, provided, warn, equations=not solutions, answers=answers)
    if readable and warn is not None:
        hidden = " (their optional fast paths, a masked BPTT walking time backwards, are TODOs: section 6 is " \
                 "assigned)" if "6" in course.sections else ""
        warn(f"warning: left_out = \"working\": sections {', '.join(sorted(left_out))} ship as working code{hidden}, "
             "and students can read how they are solved, which comes close to the assigned parts (every cell's "
             "backward follows one pattern):\n" + "\n".join(
                 f"  {f}: {', '.join(r.split(': ', 1)[1] for r in readable if r.startswith(f + ': '))}"
                 for f in dict.fromkeys(r.split(": ", 1)[0] for r in readable)) +
             "\nSet left_out = \"removed\" in the course's [assignment] to ship them as stubs instead (parts of "
             "yours that run them must then be left out: the course file says which).")
    if unshipped and warn is not None:
        warn("warning: left_out = \"removed\": not shipped, since they run code the course removes: " +
             "; ".join(unshipped))
    return regions


FIXED_CASES_REFUSED = ("a zip without the solution grades every submission on the fixed cases, whose inputs "
                       "every student holds in the handout's reference data: a submission that returns the "
                       "stored answers would score full marks. Build it with the solution (fresh cases; the "
                       "default), or pass --fixed-cases to accept that")


def build_gradescope(out, with_solution=None, config=None, force=False, fixed_cases=False):
    """Gradescope's autograder in ``out`` and ``out.zip`` (files at the zip's root, as Gradescope wants).

    With the solution (the default when the course says ``fresh_seed = true``) every submission is graded on
    fresh cases; without it (``fixed_cases``) on the stored ones, which is refused unless ``fixed_cases``."""
    course = load(config)
    if with_solution is None:
        with_solution = course.gradescope.fresh_seed and not fixed_cases
    if with_solution and fixed_cases:
        raise BuildError("--fixed-cases builds without the solution; it cannot be combined with --with-solution")
    if not with_solution and not fixed_cases:
        raise BuildError(FIXED_CASES_REFUSED)
    with staged(out, "gradescope", force) as target:
        copy_grader(os.path.join(target, "autograder"), course)
        for name in ("setup.sh", "run_autograder"):
            shutil.copy(os.path.join(HERE, "gradescope", name), os.path.join(target, name))
            os.chmod(os.path.join(target, name), 0o755)
        if with_solution:
            shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(target, "solution", "mytorch"),
                            ignore=_ignore)
        else:
            check_no_markers(target)
        _zip(target, "gradescope", root_dir=target)
    out = os.path.abspath(out)
    return out, out + ".zip"


PRAIRIELEARN_IMAGE = "prairielearn/grader-python"     # a Python 3 with NumPy; any image with one will do
# seconds, PrairieLearn's most: a grade takes 1 to 3 s, but a submission that hangs waits out each part's 20 s
# limit (284 s on 1 core, measured), and a job killed at its timeout writes no results
PRAIRIELEARN_TIMEOUT = 600


def build_prairielearn(out, config=None, force=False, image=PRAIRIELEARN_IMAGE):
    """A PrairieLearn question in ``out`` (a folder to put under the course's ``questions/``): ``info.json`` with
    external grading enabled, ``question.html`` with the upload of ``handin.tar``, and ``tests/`` (the grader
    with the course's data, the solution, and the entrypoint ``run.sh``). Every submission is graded on fresh
    cases the solution computes, as the Gradescope zip does by default."""
    course = load(config)
    with staged(out, "prairielearn", force) as target:
        _build_prairielearn(target, course, image)
    return os.path.abspath(out)


def _build_prairielearn(out, course, image):
    tests = os.path.join(out, "tests")
    copy_grader(os.path.join(tests, "autograder"), course)
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(tests, "solution", "mytorch"), ignore=_ignore)
    shutil.copy(os.path.join(HERE, "prairielearn", "run.sh"), os.path.join(tests, "run.sh"))
    os.chmod(os.path.join(tests, "run.sh"), 0o755)
    info = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"mytorch:{course.title}")), "title": course.title,
            "topic": "Recurrent networks", "tags": ["mytorch"], "type": "v3", "singleVariant": True,
            "gradingMethod": "External",
            "externalGradingOptions": {"enabled": True, "image": image, "entrypoint": "/grade/tests/run.sh",
                                       "timeout": PRAIRIELEARN_TIMEOUT}}
    with open(os.path.join(out, "info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    with open(os.path.join(HERE, "prairielearn", "question.html"), encoding="utf-8") as f:
        page = f.read().format(parts=len(course.parts()), total=course.total)
    with open(os.path.join(out, "question.html"), "w", encoding="utf-8") as f:
        f.write(page)


def build_autolab(out, config=None, force=False):
    """An Autolab assessment's autograder in ``out``: ``autograde.tar`` (the grader with the course's data) and
    ``autograde-Makefile``. No solution: Tango runs the grader as the user student code runs as, who could read
    it, so every submission is graded on the stored cases. Returns the two files' paths."""
    course = load(config)
    with staged(out, "autolab", force) as target:
        staging = os.path.join(target, ".autograde")
        try:
            copy_grader(os.path.join(staging, "autograder"), course)
            check_no_markers(staging)
            shutil.make_archive(os.path.join(target, "autograde"), "tar", root_dir=staging, base_dir="autograder")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        with open(os.path.join(HERE, "autolab", "autograde-Makefile"), encoding="utf-8") as f:
            makefile = f.read().replace("@ZEROS@", autolab.zeros(course.parts()))
        with open(os.path.join(target, "autograde-Makefile"), "w", encoding="utf-8") as f:
            f.write(makefile)
    out = os.path.abspath(out)
    return os.path.join(out, "autograde.tar"), os.path.join(out, "autograde-Makefile")


def _zip(out, kind, **where):
    """``out.zip`` of the build, without the stamp (it marks the folder, not what is handed out)."""
    os.unlink(os.path.join(out, STAMP))
    try:
        return shutil.make_archive(out, "zip", **where)
    finally:
        with open(os.path.join(out, STAMP), "w", encoding="utf-8") as f:
            f.write(kind + "\n")
