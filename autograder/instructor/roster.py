"""A class roster, and which submission is whose: ``python -m autograder batch DIR --roster ROSTER.csv``.

Two rosters are read, told apart by their header:

    Canvas       its gradebook export: Student, ID, SIS User ID, SIS Login ID, Section, then the assignments;
                 the row "Points Possible" (and any other row without an ID) is not a student
    Gradescope   its roster download: First Name, Last Name (or Name), SID, Email, Role, Sections; rows whose
                 Role is not Student are staff

A submission is matched to a student by its name as each system names a download:

    Canvas       name_userid_attachmentid_file (``_LATE`` may follow the name; the file's name may be left out):
                 see ``canvas_student``
    Gradescope   submission_<id>, with submission_metadata.yml beside the folders (its export): the submitters'
                 SID or email
    any          a folder or archive named by one of the roster's ids (ID, SIS User ID, SIS Login ID, SID, email),
                 with an archive's ending left out

A student with several submissions is graded on the latest (the highest Canvas attachment id, and of its files a
folder or an archive first; else the last name in order); the others are listed as superseded. A file at the top
of the class folder that is neither a folder nor an archive is a submission too when it is named for a student
(``submission_files``): it gets its row, 0 and the reason. gradebook.csv then has one row per student of the roster, with the
roster's own ids (for Canvas, in the columns its gradebook import expects, the score under the assignment's own
column when the export has one named for the course), and report.md lists the submissions that match no student
and the students with none.

Canvas's names, as its own code that makes the *Download Submissions* zip writes them (Canvas LMS's
ContentZipper): ``<name>[_LATE]_<user id>_<attachment id>_<the file's name>``, where the name is the student's
sortable name ("Doe, Jane") in lower case, every '_<digits>_' in it made '<digits>' (Canvas's own re-upload finds
the ids as '_<digits>_'), and every character that is not a letter, digit or '_' removed: ``doejane``. It is no
login: it may hold '_' (``o_brienmary_ann``), and even '_<digits>_<digits>_' (a sortable name such as
"a_1 _2 _b", whose '_1 _' is not collapsed before the space goes); the file's name is the student's to choose, and
may hold anything, another student's name and ids included. So neither the first nor the last pair of numbers
decides (``canvas_student``): the split whose user id and name are one student's of the roster does; failing that
(a student renamed since the export), the first split, if its user id is a student's and no other split's is.
Anything else matches no student: a name made to imitate another student's is never credited to them, nor
supersedes their submission. (Anonymous grading names files ``anon_<id>``, with no user id: they match no one.)
"""
import csv
import dataclasses
import io
import os
import re
import stat

from autograder.sandbox import untrusted

READ_LIMIT = 8 << 20             # bytes of a roster or a metadata file read
CANVAS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_IDS = re.compile(r"(?=_(\d+)_(\d+)(?:_|$))")      # every place '_<user id>_<attachment id>' may start
GRADESCOPE_NAME = re.compile(r"^submission_(?P<submission>\d+)$")
ENDINGS = (".tar.gz", ".tgz", ".tar", ".zip")


class RosterError(ValueError):
    """The roster cannot be read or is neither Canvas's nor Gradescope's; the message says why."""


@dataclasses.dataclass
class Student:
    name: str
    ids: dict                    # the roster's columns for this student (its header -> value)
    keys: tuple = ()             # what a submission's name may hold to be this student's (lower case)


@dataclasses.dataclass
class Roster:
    kind: str                    # "canvas" | "gradescope"
    header: list
    students: list


def _text(path):
    with open(path, "rb") as f:
        data = f.read(READ_LIMIT + 1)
    if len(data) > READ_LIMIT:
        raise RosterError(f"{path} is larger than {READ_LIMIT >> 20} MiB")
    return data.decode("utf-8-sig", "replace")


def read(path):
    """The ``Roster`` in the CSV file at ``path``."""
    try:
        table = list(csv.reader(io.StringIO(_text(path))))
    except (OSError, csv.Error) as error:
        raise RosterError(f"{path} cannot be read ({getattr(error, 'strerror', None) or error})") from None
    if not table:
        raise RosterError(f"{path} is empty")
    header = [h.strip() for h in table[0]]
    column = {h: k for k, h in reversed(list(enumerate(header)))}

    def cell(row, name):
        k = column.get(name)
        return row[k].strip() if k is not None and k < len(row) else ""

    students = []
    if all(h in column for h in CANVAS):
        for row in table[1:]:
            if not cell(row, "ID") or cell(row, "Student").strip().lower() in ("points possible", ""):
                continue
            ids = {h: cell(row, h) for h in CANVAS}
            keys = {cell(row, "ID"), cell(row, "SIS User ID"), cell(row, "SIS Login ID"),
                    re.sub(r"[\s,.'-]", "", cell(row, "Student")), canvas_name(cell(row, "Student"))}
            students.append(Student(cell(row, "Student"), ids, tuple(k.lower() for k in keys if k)))
        return Roster("canvas", header, students)
    if "Email" in column and ("SID" in column or "Name" in column or "First Name" in column):
        for row in table[1:]:
            if not any(c.strip() for c in row) or cell(row, "Role").lower() not in ("", "student"):
                continue
            name = cell(row, "Name") or " ".join(x for x in (cell(row, "First Name"), cell(row, "Last Name")) if x)
            ids = {h: cell(row, h) for h in ("SID", "Email", "Sections") if h in column}
            keys = {cell(row, "SID"), cell(row, "Email"), cell(row, "Email").split("@")[0]}
            students.append(Student(name, ids, tuple(k.lower() for k in keys if k)))
        return Roster("gradescope", header, students)
    raise RosterError(f"{path} is neither Canvas's gradebook export (its header starts {', '.join(CANVAS)}) nor "
                      "Gradescope's roster (First Name, Last Name, SID, Email, Role)")


def gradescope_metadata(folder):
    """{submission_<id>: [the submitters' SID and email, lower case]} from the submission_metadata.yml a Gradescope
    export holds at its top (its own YAML, read line by line: no YAML library is loaded as root); {} without it."""
    path = os.path.join(folder, "submission_metadata.yml")
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return {}
        text = _text(path)
    except (OSError, RosterError):
        return {}
    found, current = {}, None
    for line in text.splitlines():
        head = re.match(r"^(submission_\d+):\s*$", line)
        if head:
            current = found.setdefault(head.group(1), [])
            continue
        field = re.match(r"-?[ \t]*:?(sid|email):(.*)", line.strip())    # one repeat per place: linear time
        value = field.group(2).strip().strip("'\"").strip() if field else ""
        if value and current is not None:
            current.append(value.lower())
    return found


def _handed_in(folder, name):
    """1 if ``name`` in ``folder`` is a folder or an archive (what can hold a package), else 0."""
    try:
        mode = os.lstat(os.path.join(folder, name)).st_mode
    except OSError:
        return 0
    return int(stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and name.lower().endswith(ENDINGS)))


def submission_files(ignored, roster, folder):
    """The files at the class folder's top that are not folders or archives but are named for a student of the
    roster (a Canvas download of a file that is not an archive): submissions too, each with its row and reason."""
    return [name for name in ignored if match([name], roster, folder).graded]


def _bare(name):
    lower = name.lower()
    for ending in ENDINGS:
        if lower.endswith(ending):
            return name[:-len(ending)]
    return name


def canvas_name(sortable):
    """A student's name as Canvas's download writes it: ``sortable`` ("Doe, Jane") in lower case, '_<digits>_'
    made '<digits>', without what is not a letter, digit or '_' (``doejane``)."""
    return re.sub(r"\W", "", re.sub(r"_(\d+)_", r"\1", sortable).lower())


def canvas_student(name, roster):
    """(the index in ``roster`` of the student whose Canvas download ``name`` is, its attachment id), or None
    (see the module's docstring): the split of ``name`` at a '_<user id>_<attachment id>' whose user id is a
    student's ID and whose name before it (``_LATE`` left out) is that student's ``canvas_name``; else the first
    split, when its user id is a student's and no other split's user id is one."""
    by_id = {}
    for k, student in enumerate(roster.students):
        by_id.setdefault(student.ids.get("ID", ""), []).append(k)
    splits = [(found.start(), found.group(1), int(found.group(2))) for found in CANVAS_IDS.finditer(name)]
    known = [(at, user, attachment) for at, user, attachment in splits if len(by_id.get(user, ())) == 1]
    agree = [(by_id[user][0], attachment) for at, user, attachment in known
             if canvas_name(roster.students[by_id[user][0]].name) in (name[:at], name[:at].removesuffix("_LATE"))]
    if len(agree) == 1:
        return agree[0]
    if not agree and len(known) == 1 and known[0] == splits[0]:
        return by_id[known[0][1]][0], known[0][2]
    return None


def _whose(name, roster, by_key, metadata):
    """The students (indices in ``roster``) the submission ``name`` may be, ``by_key`` (key -> indices) and the
    Gradescope ``metadata``; for a Canvas name, ``canvas_student``'s (student, attachment id) or none."""
    if roster.kind == "canvas" and CANVAS_IDS.search(name):      # a Canvas name: its ids decide, or no one
        return canvas_student(name, roster) or set()
    whose = set()
    if GRADESCOPE_NAME.match(name) and name in metadata:
        for key in metadata[name]:
            whose |= by_key.get(key, set())
    return whose or set(by_key.get(_bare(name).lower(), ()))


@dataclasses.dataclass
class Matching:
    graded: dict                 # student index -> the submission graded for them
    superseded: list             # (submission, student name): an earlier submission of a student
    unmatched: list              # submissions matching no student
    without: list                # students with no submission (their names)


def match(names, roster, folder):
    """Which of the submissions ``names`` (in ``folder``) is whose: a ``Matching``."""
    by_key = {}
    for k, student in enumerate(roster.students):
        for key in student.keys:
            by_key.setdefault(key, set()).add(k)
    metadata = gradescope_metadata(folder)
    claims = {}                  # student -> [(order, submission)]
    unmatched = []
    for position, name in enumerate(names):
        whose, order = _whose(name, roster, by_key, metadata), (0, _handed_in(folder, name), position)
        if isinstance(whose, tuple):                      # Canvas's: (student, attachment id)
            # the latest submission; of its files (Canvas names each file of it), a folder or an archive first
            whose, order = {whose[0]}, (whose[1], _handed_in(folder, name), position)
        if len(whose) != 1:
            unmatched.append(name)
            continue
        claims.setdefault(whose.pop(), []).append((order, name))
    graded, superseded = {}, []
    for k, claimed in claims.items():
        claimed.sort()
        graded[k] = claimed[-1][1]
        superseded += [(name, roster.students[k].name) for _, name in claimed[:-1]]
    without = [s.name for k, s in enumerate(roster.students) if k not in graded]
    return Matching(graded, superseded, unmatched, without)


def assignment_column(roster, title):
    """The Canvas export's own column for the assignment named ``title`` ('title (12345)'), so the import fills
    it; else ``title`` (Canvas then makes a new assignment)."""
    for column in roster.header[len(CANVAS):]:
        if column == title or re.fullmatch(re.escape(title) + r" \(\d+\)", column):
            return column
    return title


def new_column_warning(roster, title):
    """'' when a Canvas export has the assignment's own column; else what the instructor should know: the import
    would make a new assignment of the column gradebook.csv adds."""
    if roster.kind != "canvas" or assignment_column(roster, title) != title or title in roster.header:
        return ""
    others = [c for c in roster.header[len(CANVAS):] if re.search(r" \(\d+\)$", c)]
    return (f"the roster has no column for an assignment named \"{title}\" (the course's title), so gradebook.csv "
            "adds one and Canvas would import it as a new assignment; to fill the assignment you made, give the "
            "course its name (title in course.toml), or rename that column of gradebook.csv"
            + (f" (the roster's assignments: {', '.join(others[:5])})" if others else ""))


def gradebook(roster, matching, totals, title, points_possible):
    """The gradebook's rows (header first) for ``roster``: one per student, the total of the submission graded for
    them (empty for a student with none: an import leaves their grade as it is)."""
    score = {k: totals[name] for k, name in matching.graded.items()}
    if roster.kind == "canvas":
        column = assignment_column(roster, title)
        table = [list(CANVAS) + [column], ["    Points Possible", "", "", "", "", f"{points_possible:g}"]]
        table += [[s.ids[h] for h in CANVAS] + [f"{score[k]:g}" if k in score else ""]
                  for k, s in enumerate(roster.students)]
        return table
    columns = [h for h in ("SID", "Email", "Sections") if roster.students and h in roster.students[0].ids]
    table = [["Name"] + columns + [title]]
    table += [[s.name] + [s.ids[h] for h in columns] + [f"{score[k]:g}" if k in score else ""]
              for k, s in enumerate(roster.students)]
    return table


def shown(name):
    return untrusted.line(name, 200)
