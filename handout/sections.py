"""What belongs to which section, and the written assignment's point tables, made from the course.

A section left out of the course ships as working code (its solution regions kept, markers removed), with no
page, no notebook and no grader part. The point tables are never kept by hand: the README's table (between
the ``POINTS`` comments) and each part's ``**7.1 …** (4 points)`` in a section page are rewritten from the
course's points at build time; ``python -m handout tables`` rewrites the repository's copy from course.toml.
"""
import os
import re

from handout.markers import MarkerError, find_regions

# the section whose TODOs a source file holds (a file with solution regions must be listed)
FILE_SECTIONS = {"rnn_cell.py": "1", "gru_cell.py": "2", "gru_block_cell.py": "3", "gmu_cell.py": "4",
                 "tgru_cell.py": "5", "recurrent.py": "6", "lstm_cell.py": "7", "ctc.py": "8",
                 "ctc_decode.py": "8", "ctc_course.py": "8"}
# notebooks by their number; a notebook not listed (training, speed) ships with every course
NOTEBOOK_SECTIONS = {"01": "1", "02": "2", "03": "3", "04": "4", "05": "5", "06": "6", "08": "7", "09": "8"}
PAGE = re.compile(r"^(?P<section>[1-9])-[\w-]+\.md$")
LINK = re.compile(r"\[(?P<text>[^\]\n]+)\]\((?P<page>[1-9]-[\w-]+\.md)(?P<anchor>#[\w-]*)?\)")
POINTS_BEGIN = "<!-- POINTS: generated from course.toml (python -m handout tables); do not edit by hand -->"
POINTS_END = "<!-- END POINTS -->"
ROW = re.compile(r"^\| \[(?P<section>[1-9])\. .*\| (?P<points>[^|]*) \|$")
INLINE = re.compile(r"(\*\*(?P<part>[1-9]\.\d+) [^*\n]*\*\* \()(?P<points>\d+(\.\d+)?) points?\)")


def file_section(path, source):
    """The section of a ``.py`` file with solution regions (None for a file without any)."""
    try:
        if not find_regions(source.splitlines(), path):
            return None
    except MarkerError:
        pass                                            # the strip step reports it with its line
    name = os.path.basename(path)
    if name not in FILE_SECTIONS:
        raise KeyError(f"{path} holds solution regions but handout/sections.py does not say which section "
                       "it belongs to (FILE_SECTIONS)")
    return FILE_SECTIONS[name]


def notebook_section(name):
    return NOTEBOOK_SECTIONS.get(name[:2])


def keep_solution(source, where):
    """``source`` with its solution regions kept and only the marker lines removed: working, provided code."""
    lines = source.split("\n")
    drop = set()
    for region in find_regions(lines, where):
        drop.update((region.begin, region.end))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def _points(value):
    return f"{value:g}"


def points_table(text, course):
    """The README's table between the POINTS comments: a row per chosen section with its parts' points (in
    the template's order and words), and the total."""
    if POINTS_BEGIN not in text or POINTS_END not in text:
        raise ValueError("the assignment README has no POINTS comments around its table")
    head, rest = text.split(POINTS_BEGIN, 1)
    table, tail = rest.split(POINTS_END, 1)
    rows = []
    for line in table.strip("\n").split("\n"):
        match = ROW.match(line)
        if match is None:
            if not line.startswith("| **total**"):
                rows.append(line)
            continue
        section = match.group("section")
        if section not in course.sections:
            continue
        parts = [p for p in course.parts() if p.number.split(".")[0] == section]
        points = " + ".join(_points(p.points) for p in parts)
        rows.append(line[:match.start("points")] + points + " |")
    rows.append(f"| **total** | | **{_points(course.total)}** |")
    return head + POINTS_BEGIN + "\n" + "\n".join(rows) + "\n" + POINTS_END + tail


def inline_points(text, course):
    """Every ``**P.Q …** (N points)`` in a page with the course's points for part P.Q."""
    def replace(match):
        points = course.points.get(match.group("part"))
        if points is None:
            return match.group(0)
        return f"{match.group(1)}{_points(points)} point{'' if points == 1 else 's'})"
    return INLINE.sub(replace, text)


def unlink_missing(text, shipped):
    """Links to section pages that are not shipped become their plain text."""
    return LINK.sub(lambda m: m.group(0) if m.group("page") in shipped else m.group("text"), text)


IF = re.compile(r"<!-- if (?P<what>[\d. ]+) -->(?P<text>.*?)<!-- end if -->", re.S)


def in_course(name, course):
    """Whether ``name`` (a part '7.3' or a section '7') is graded by ``course``."""
    return name in course.points if "." in name else name in course.sections


def conditionals(text, course):
    """Every ``<!-- if 7.3 -->…<!-- end if -->`` (parts or sections, any of which will do) kept, markers removed,
    when the course grades one of them, else removed: a page says what grades what in this course only."""
    return IF.sub(lambda m: m.group("text") if any(in_course(n, course) for n in m.group("what").split())
                  else "", text)


def render_page(name, text, course, shipped):
    """A page of the written assignment as this course ships it."""
    if name == "README.md":
        text = points_table(text, course)
    return unlink_missing(inline_points(conditionals(text, course), course), shipped)


def pages(folder, course):
    """The assignment's files this course ships: the README, every page of a chosen section, anything else."""
    chosen = []
    for name in sorted(os.listdir(folder)):
        match = PAGE.match(name)
        if name.startswith(".") or (match and match.group("section") not in course.sections):
            continue
        chosen.append(name)
    return chosen
