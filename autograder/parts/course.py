"""The course: which sections are assigned, their points, the reference seed, and how Gradescope shows results.

One file states it, ``course.toml`` at the repository root (TOML)::

    [assignment]
    title = "Recurrent networks by hand"
    sections = ["1", "2", "6"]          # the handout, the grader and the written assignment include these
    left_out = "working"                # the other sections' code: "working" (readable) or "removed" (stubs)
    seed = 11785                        # the seed the reference data is drawn from (unsaid: the data's own)
    [assignment.points]                 # optional, per part; a part not named keeps spec.py's points
    "1.1" = 10                          # (0: the part is left out of the course)
    [handout]
    release_solutions = false
    [gradescope]
    fresh_seed = true                   # grade on fresh cases (the zip then holds the solution)
    visibility = "visible"              # every test: visible | after_due_date | after_published | hidden
    output_format = "md"                # md | ansi | text | simple_format | html
    [gradescope.part_visibility]        # optional, per part or section
    "8" = "after_due_date"
    [grading]
    bptt_on_reference_cells = false     # true: section 6 runs the student's layers on the solution's cells

``load_course(path)`` reads it (no file: today's assignment, every section at spec.py's points, on the seed
the reference data was drawn from). A built
handout carries its resolved copy as ``autograder/course.toml``, which the grader reads first. Every mistake
(an unknown section, part or key, a part of a section left out, a bad visibility) is a ``CourseError``
naming the file, the table and the key.
"""
import dataclasses
import os
import sys

from autograder.parts import spec

if sys.version_info >= (3, 11):
    import tomllib
else:                                                    # setup.py installs tomli there
    import tomli as tomllib

GRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))       # the autograder package
BUILT = os.path.join(GRADER, "course.toml")              # a handout's resolved copy
ROOT = os.path.join(os.path.dirname(GRADER), "course.toml")
DEFAULT_TITLE = "Recurrent networks by hand"
DEFAULT_SEED = 11785
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
OUTPUT_FORMATS = ("md", "ansi", "text", "simple_format", "html")
LEFT_OUT = ("working", "removed")
KEYS = {"assignment": {"title", "sections", "seed", "points", "left_out"}, "handout": {"release_solutions"},
        "gradescope": {"fresh_seed", "visibility", "output_format", "part_visibility"},
        "grading": {"bptt_on_reference_cells"}}


class CourseError(ValueError):
    """The course file is wrong; the message names the file, the table and the key."""


@dataclasses.dataclass(frozen=True)
class Gradescope:
    fresh_seed: bool = True
    visibility: str = "visible"
    output_format: str = "md"
    part_visibility: tuple = ()          # ((part or section, visibility), ...)

    def visibility_of(self, number):
        """A part's visibility: its own entry, else its section's, else the default."""
        table = dict(self.part_visibility)
        return table.get(number) or table.get(number.split(".")[0]) or self.visibility


@dataclasses.dataclass(frozen=True)
class Course:
    title: str = DEFAULT_TITLE
    sections: tuple = tuple(spec.SECTIONS)
    seed: int = DEFAULT_SEED
    points: dict = dataclasses.field(default_factory=dict)     # part id -> points, every chosen part
    release_solutions: bool = False
    gradescope: Gradescope = Gradescope()
    bptt_on_reference_cells: bool = False                      # section 6 graded with the solution's cells
    path: str = None                                           # the file read, None for the defaults
    left_out: str = "working"                                  # the code of sections left out: LEFT_OUT
    dropped: tuple = ()                                        # parts of chosen sections given 0 points

    def parts(self):
        """The spec parts of the chosen sections, in spec order, each with this course's points."""
        return [dataclasses.replace(p, points=self.points[p.number]) for p in spec.PARTS if p.number in self.points]

    @property
    def total(self):
        return sum(self.points.values())

    def select(self, requested):
        """The course parts named by number ('2.1') or section ('2'); all of them when none are named.
        A ``ValueError`` names what is unknown or not in this course."""
        parts = self.parts()
        if not requested:
            return parts
        chosen = []
        for name in requested:
            matches = [p for p in parts if p.number == name or p.number.split(".")[0] == name]
            if not matches:
                if any(p.number == name or p.number.split(".")[0] == name for p in spec.PARTS):
                    raise ValueError(f"part {name!r} is not in this course (sections {', '.join(self.sections)})")
                known = ", ".join(p.number for p in parts)
                raise ValueError(f"unknown part {name!r}: the parts are {known} (or a section number: "
                                 f"{', '.join(self.sections)})")
            chosen += [p for p in matches if p not in chosen]
        return chosen

    def to_toml(self):
        """This course as TOML with every part's points written out (what a built handout carries)."""
        def q(s):
            return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines = ["# The course this grader was built for (written by python -m handout; edit the course's own",
                 "# course.toml and rebuild instead).", "[assignment]", f"title = {q(self.title)}",
                 f"sections = [{', '.join(q(s) for s in self.sections)}]", f"left_out = {q(self.left_out)}",
                 f"seed = {self.seed}", "", "[assignment.points]"] + \
            [f"{q(n)} = {self.points.get(n, 0):g}" for n in spec.PARTS_BY_NUMBER
             if n in self.points or n in self.dropped] + \
                ["", "[handout]", f"release_solutions = {str(self.release_solutions).lower()}", "",
                 "[gradescope]", f"fresh_seed = {str(self.gradescope.fresh_seed).lower()}",
                 f"visibility = {q(self.gradescope.visibility)}", f"output_format = {q(self.gradescope.output_format)}"]
        if self.gradescope.part_visibility:
            lines += ["", "[gradescope.part_visibility]"] + [f"{q(k)} = {q(v)}" for k, v in
                                                             self.gradescope.part_visibility]
        if self.bptt_on_reference_cells:
            lines += ["", "[grading]", "bptt_on_reference_cells = true"]
        return "\n".join(lines) + "\n"


def generate_command(course):
    """The command that writes ``course``'s reference data: the root course's, or ``--config`` with its file."""
    if course.path is None or (os.path.isfile(ROOT) and os.path.samefile(course.path, ROOT)):
        return "python -m autograder generate"
    return f"python -m autograder generate --config {course.path}"


def default_path():
    """The course file the grader reads: a built handout's copy, else the repository's, else none."""
    for path in (BUILT, ROOT):
        if os.path.isfile(path):
            return path
    return None


def data_seed():
    """The seed the grader's reference data was drawn from (what a grader copied without a course file grades
    with), or the default seed if the data cannot say."""
    from autograder.parts import data
    try:
        seed = data.read_manifest()["seed"]
    except (data.ReferenceDataError, KeyError, TypeError):
        return DEFAULT_SEED
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else DEFAULT_SEED


def load_course(path=None):
    """The ``Course`` in ``path`` (default: ``default_path()``; no file: today's assignment)."""
    path = path if path is not None else default_path()
    if path is None:
        return parse({}, None)
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f)
    except OSError as error:
        raise CourseError(f"{path}: cannot be read ({error.strerror or error})") from None
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path}: not valid TOML ({error})") from None
    return parse(table, os.path.abspath(path))


def _check_keys(where, table, known):
    if not isinstance(table, dict):
        raise CourseError(f"{where} must be a table")
    unknown = sorted(set(table) - known)
    if unknown:
        raise CourseError(f"{where}: unknown key {unknown[0]!r} (the keys are {', '.join(sorted(known))})")


def parse(table, path):
    """A ``Course`` from the parsed TOML ``table``; ``path`` names the file in errors."""
    name = path or "course.toml"
    _check_keys(name, table, set(KEYS))
    for key in KEYS:
        _check_keys(f"{name}: [{key}]", table.get(key, {}), KEYS[key])
    assignment, handout, gradescope = (table.get(k, {}) for k in ("assignment", "handout", "gradescope"))

    title = assignment.get("title", DEFAULT_TITLE)
    if not isinstance(title, str) or not title.strip():
        raise CourseError(f"{name}: [assignment] title must be a non-empty string")
    sections = assignment.get("sections", list(spec.SECTIONS))
    if not isinstance(sections, list) or not sections:
        raise CourseError(f"{name}: [assignment] sections must be a non-empty list, e.g. [\"1\", \"2\"]")
    sections = [str(s) for s in sections]
    for s in sections:
        if s not in spec.SECTIONS:
            raise CourseError(f"{name}: [assignment] sections: unknown section {s!r} (the sections are "
                              f"{', '.join(spec.SECTIONS)})")
    if len(set(sections)) != len(sections):
        raise CourseError(f"{name}: [assignment] sections names a section twice")
    sections = tuple(s for s in spec.SECTIONS if s in sections)          # the handout's order
    seed = assignment["seed"] if "seed" in assignment else data_seed()       # unsaid: the data's own
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise CourseError(f"{name}: [assignment] seed must be a non-negative integer")

    given = assignment.get("points", {})
    if not isinstance(given, dict):
        raise CourseError(f"{name}: [assignment.points] must be a table of part = points")
    for number, value in given.items():
        part = spec.PARTS_BY_NUMBER.get(number)
        if part is None:
            raise CourseError(f"{name}: [assignment.points]: unknown part {number!r} (the parts are "
                              f"{', '.join(spec.PARTS_BY_NUMBER)})")
        if number.split(".")[0] not in sections:
            raise CourseError(f"{name}: [assignment.points]: part {number} is in section {number.split('.')[0]}, "
                              "which [assignment] sections leaves out")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1000:
            raise CourseError(f"{name}: [assignment.points]: part {number} must be given a number of points "
                              "from 0 (left out of the course) to 1000")
    points = {p.number: given.get(p.number, p.points) for p in spec.PARTS if p.number.split(".")[0] in sections}
    dropped = tuple(n for n, v in points.items() if v == 0)
    points = {n: v for n, v in points.items() if v != 0}
    for section in {n.split(".")[0] for n in dropped}:
        if not any(n.split(".")[0] == section for n in points):
            raise CourseError(f"{name}: [assignment.points] gives every part of section {section} 0 points: leave "
                              "the section out of [assignment] sections instead")

    left_out = assignment.get("left_out", "working")
    if left_out not in LEFT_OUT:
        raise CourseError(f"{name}: [assignment] left_out must be \"working\" (the sections left out ship as "
                          f"working code) or \"removed\" (as stubs), not {left_out!r}")
    if left_out == "removed":
        refused = [(number, section, what) for number in points
                   for section, what in spec.code_needed(spec.PARTS_BY_NUMBER[number]).items() if section not in sections]
        if refused:
            number, section, what = refused[0]
            numbers = list(dict.fromkeys(n for n, _, _ in refused))
            zero = ", ".join(f'"{n}" = 0' for n in numbers)
            raise CourseError(
                f"{name}: part {number} ({spec.PARTS_BY_NUMBER[number].name}) runs {what}, the code of "
                f"section {section} ({spec.SECTIONS[section]}), which left_out = \"removed\" removes"
                + (f" (so do parts {', '.join(numbers[1:])})" if len(numbers) > 1 else "") +
                f": add the sections they run to [assignment] sections, leave them out with {zero} in "
                "[assignment.points], or set left_out = \"working\"")

    release = handout.get("release_solutions", False)
    if not isinstance(release, bool):
        raise CourseError(f"{name}: [handout] release_solutions must be true or false")

    fresh = gradescope.get("fresh_seed", True)
    if not isinstance(fresh, bool):
        raise CourseError(f"{name}: [gradescope] fresh_seed must be true or false")
    visibility = _visibility(name, "[gradescope] visibility", gradescope.get("visibility", "visible"))
    output_format = gradescope.get("output_format", "md")
    if output_format not in OUTPUT_FORMATS:
        raise CourseError(f"{name}: [gradescope] output_format must be one of {', '.join(OUTPUT_FORMATS)}")
    per_part = gradescope.get("part_visibility", {})
    if not isinstance(per_part, dict):
        raise CourseError(f"{name}: [gradescope.part_visibility] must be a table of part or section = visibility")
    for key, value in per_part.items():
        if key not in points and key not in sections:
            raise CourseError(f"{name}: [gradescope.part_visibility]: {key!r} is not a part or section of this "
                              f"course ({', '.join(points)})")
        _visibility(name, f"[gradescope.part_visibility] {key!r}", value)
    on_reference = table.get("grading", {}).get("bptt_on_reference_cells", False)
    if not isinstance(on_reference, bool):
        raise CourseError(f"{name}: [grading] bptt_on_reference_cells must be true or false")
    return Course(title=title, sections=sections, seed=seed, points=points, release_solutions=release,
                  gradescope=Gradescope(fresh, visibility, output_format, tuple(per_part.items())),
                  bptt_on_reference_cells=on_reference, path=path, left_out=left_out, dropped=dropped)


def _visibility(name, where, value):
    if value not in VISIBILITIES:
        raise CourseError(f"{name}: {where} must be one of {', '.join(VISIBILITIES)}, not {value!r}")
    return value
