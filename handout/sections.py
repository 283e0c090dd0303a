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


def solved_functions(source, where, kept):
    """The functions ('Class.method') of ``source`` that hold a region ``kept(region)`` keeps."""
    import ast

    lines, tree = source.split("\n"), ast.parse(source)
    names = []
    for region in find_regions(lines, where):
        if not kept(region):
            continue
        inside = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  and f.lineno <= region.begin + 1 <= f.end_lineno]
        if inside:
            function = max(inside, key=lambda f: f.lineno)
            owner = next((c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and function in c.body), None)
            name = f"{owner}.{function.name}" if owner else function.name
            if name not in names:
                names.append(name)
    return names


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
    out, previous = [], 0
    for m in IF.finditer(text):
        out.append(text[previous:m.start()])
        previous = m.end()
        if any(in_course(n, course) for n in m.group("what").split()):
            out.append(m.group("text"))
        elif (m.start() == 0 or text[m.start() - 1] == "\n") and text[m.end():m.end() + 1] == "\n":
            previous += 1                                # a line of its own (a table's row) goes whole
    return "".join(out) + text[previous:]


def render_page(name, text, course, shipped):
    """A page of the written assignment as this course ships it."""
    if name == "README.md":
        text = intro(points_table(text, course), course)
        if text.startswith("# "):                          # the overview is titled by the course (and is not
            text = f"# {course.title}: the assignment\n" + text.split("\n", 1)[1]    # the site's title again)
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


# ---- the student README: made from the course (handout/student/README.md is its template)

# what a section asks for, in the README's words, and its files
SECTION_WORK = {
    "1": ("the RNN cell's `forward` and `backward`", ("rnn_cell.py",)),
    "2": ("PyTorch's GRU cell: `forward`, `backward`", ("gru_cell.py",)),
    "3": ("TensorFlow's ops `gru_block_cell`, `gru_block_cell_grad` and `GRUBlockCell.backward`",
          ("gru_block_cell.py",)),
    "4": ("the GMU cell's `forward` and `backward` (two states, peepholes)", ("gmu_cell.py",)),
    "5": ("the strongly-typed GRU's `forward` and `backward`", ("tgru_cell.py",)),
    "6": ("BPTT: `Recurrent.forward`, `_run_direction`, `backward`, `_backward_direction` (layers, both "
          "directions, padded batches)", ("recurrent.py",)),
    "7": ("the LSTM cell's `forward` and `backward`", ("lstm_cell.py",)),
    "8": ("CTC: the lattice, α, β, γ, the loss and its gradient, greedy and beam-search decoding",
          ("ctc.py", "ctc_course.py", "ctc_decode.py")),
}
SECTION_WORDS = {"1": "an RNN cell", "2": "PyTorch's GRU cell", "3": "TensorFlow's GRU block cell", "4": "the GMU cell",
                 "5": "the strongly-typed GRU", "7": "PyTorch's LSTM cell",
                 "6": "backpropagation through time (BPTT) over whole sequences, in layers and both directions",
                 "8": "the CTC loss with greedy and beam-search decoding"}
CELL_NAMES = {"RNNCell": "the RNN cell", "GRUCell": "the GRU", "GRUBlockCell": "the GRU block cell",
              "GMUCell": "the GMU", "TGRUCell": "the TGRU", "LSTMCell": "the LSTM cell"}
NEEDS = re.compile(r"needs\(((?:\s*\"[^\"]+\"\s*,?)+)\)")


def _load_needs():
    """notebooks/needs.py, which ships beside the student's notebooks and stands alone there."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks", "needs.py")
    found = importlib.util.spec_from_file_location("_mytorch_notebook_needs", path)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


part_ranges = _load_needs().part_ranges          # '1.1-1.2, 6.1', as the notebooks say it


def notebook_needs(notebook):
    """The graded parts a notebook (its JSON) runs: every part named in its ``needs(...)`` calls (each section
    calls it with its own parts), each once, in the course's order. A notebook ships only if the course has
    (or ships as working code) every section these belong to: see ``handout.build``."""
    found = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for call in NEEDS.finditer(source):
                found += [n for n in re.findall(r'"([^"]+)"', call.group(1)) if re.fullmatch(r"\d\.\d+", n)]
    return sorted(set(found), key=lambda n: tuple(map(int, n.split("."))))


def _joined(words):
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


def course_work(course):
    """What the course asks students to write, in one phrase ('the forward and backward passes of …')."""
    sections = [s for s in course.sections if any(n.split(".")[0] == s for n in course.points)]
    cells = [SECTION_WORDS[s] for s in sections if s not in "68"]
    words = ([f"the forward and backward passes of {_joined(cells)}"] if cells else []) + \
        [SECTION_WORDS[s] for s in sections if s in "68"]
    if len(words) > 2:
        return "; ".join(words[:-1]) + "; and " + words[-1]
    return _joined(words) if words else "recurrent networks"


INTRO_BEGIN = "<!-- INTRO: generated from course.toml (python -m handout tables); do not edit by hand -->"
INTRO_END = "<!-- END INTRO -->"


def intro(text, course):
    """The README's first paragraph, between the INTRO comments: what this course asks for."""
    if INTRO_BEGIN not in text:
        return text
    head, rest = text.split(INTRO_BEGIN, 1)
    _, tail = rest.split(INTRO_END, 1)
    cells = [CELL_NAMES[c] for c, s in (("RNNCell", "1"), ("GRUCell", "2"), ("GRUBlockCell", "3"), ("GMUCell", "4"),
                                        ("TGRUCell", "5"), ("LSTMCell", "7")) if s in course.sections]
    inside = f" inside {_joined(cells)}" if cells else ""
    paragraph = (f"You will write, in NumPy and without autograd, {course_work(course)}. When you are done you will "
                 f"know exactly what `loss.backward()` does{inside}, and you will have checked every line against "
                 "an autograder.")
    return head + INTRO_BEGIN + "\n" + paragraph + "\n" + INTRO_END + tail


def student_readme(template, course, notebooks):
    """The student README for ``course``: ``notebooks`` is [(file name, title, parts it needs)] of the notebooks
    the handout ships. What it states (sections, points, total, notebooks, the order of work) is the course's."""
    from autograder.parts import spec
    parts = course.parts()
    by_section = {s: [p for p in parts if p.number.split(".")[0] == s] for s in course.sections}
    by_section = {s: ps for s, ps in by_section.items() if ps}
    rows = []
    for s, ps in by_section.items():
        what, files = SECTION_WORK[s]
        if s == "7" and "7.3" in course.points:
            what += " (7.3 re-uses your BPTT with a bidirectional LSTM on a padded batch)"
        points = " + ".join(f"{p.points:g}" for p in ps)
        rows.append(f"| {part_ranges([p.number for p in ps])} {what} | {points} | "
                    + ", ".join(f"`mytorch/nn/{f}`" for f in files) + " |")
    left_out = [f"{s}. {name}" for s, name in spec.SECTIONS.items() if s not in by_section]
    provided = ""
    if left_out:
        provided = ("Not in this course: " + "; ".join(left_out) + ". " +
                    ("Their code ships as working code you may read and run (it is not graded)."
                     if course.left_out == "working" else
                     "Their methods are stubs that say so; nothing there is graded."))
    books = []
    for name, title, needs in notebooks:
        graded = [n for n in needs if n in course.points]
        runs = f"runs parts {part_ranges(graded)}" if graded else ""
        if len(graded) < len(needs):
            runs += (", and " if runs else "runs ") + "provided code of sections not in this course"
        books.append(f"- `notebooks/{name}`: {title}" + (f" ({runs})" if runs else ""))
    order = ["Read `assignment/README.md` (the cell contract, and BPTT in one paragraph)."]
    book_of = {s: name for name, _, _ in notebooks for s in [notebook_section(name)] if s}
    for s, ps in by_section.items():
        book = f", with `notebooks/{book_of[s]}`" if s in book_of else ""
        title = f"Section {s}, {spec.SECTIONS[s]} ({part_ranges([p.number for p in ps])}){book}"
        if s == "6":
            uses = [f"{p.number} runs {CELL_NAMES[p.cell]}" + ("" if spec_section(p.cell) in by_section else
                                                                " (provided)") for p in ps]
            title += ": it runs your cells through your BPTT, so write a cell first (" + "; ".join(uses) + ")"
        elif s == "8" and s in book_of:
            needs = [n for name, _, ns in notebooks if name == book_of[s] for n in ns
                     if not n.startswith("8.") and n in course.points]
            if needs:
                title += f", which also runs parts {part_ranges(needs)}"
        order.append(title + ".")
    values = {
        "title": course.title, "total": f"{course.total:g}", "parts": str(len(parts)),
        "what": course_work(course),
        "graded_rows": "\n".join(rows), "provided": provided,
        "notebooks": "\n".join(books) or "- (none in this course)",
        "order": "\n".join(f"{k}. {line}" for k, line in enumerate(order, 1)),
        "example_part": next((p.number for p in parts if p.kind == "backward"), parts[0].number),
        "example_section": next((p.number for p in parts if p.kind == "backward"), parts[0].number).split(".")[0],
    }
    return re.sub(r"\{\{ (\w+) \}\}", lambda m: values[m.group(1)], conditionals(template, course))


def spec_section(cell):
    """The section whose TODOs a cell's code is."""
    return {"RNNCell": "1", "GRUCell": "2", "GRUBlockCell": "3", "GMUCell": "4", "TGRUCell": "5",
            "LSTMCell": "7"}[cell]
