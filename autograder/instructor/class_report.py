"""What a batch leaves for the instructor, in its report folder (``DIR-grading/``, beside DIR, by default):

    feedback/<submission>.txt   exactly what the student would have seen (the grader's table and messages)
    feedback/<submission>.json  the same in Gradescope's results format; its extra_data says how it was
                                handed in, what went wrong, and which grader and seed graded it (for resuming)
    scores.csv                  one row per submission: how it was handed in, each part, the total, the problem
    gradebook.csv               the totals as Canvas's gradebook import reads them (Student, ID, SIS User ID,
                                SIS Login ID, Section, then the assignment with its "Points Possible" row); with
                                a roster, one row per student of it, with its ids (``roster``)
    mistakes.csv                one row per submission, a column per mistake of the class (a part's hint, or
                                the first wrong quantity its diagnosis named): 1 where the submission made it
    report.md                   per part the mean, median and full-marks rate; each hint with how many
                                students got it; the submissions that crashed, timed out or were not gradable;
                                the histogram of totals; the similarity section (``similarity``: identical to
                                the solution or the untouched handout, near-identical pairs and clusters); the
                                roster's unmatched submissions and students with none
    totals.svg                  that histogram (drawn as SVG text: no plotting library is loaded as root)

Every file is written atomically by the grader (never by student code), the feedback as each submission is
graded, so an interrupted batch keeps what it finished: a run with the same grader key (``grader_key``: the
grader's code and data, the course and the seed) reuses those files instead of grading again.
"""
import bisect
import csv
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import stat
import statistics

from autograder import PACKAGES
from autograder.diagnosis import report
from autograder.instructor import roster as rosters
from autograder.instructor import similarity
from autograder.sandbox import untrusted

FEEDBACK = "feedback"
READ_LIMIT = 4 << 20             # bytes of one feedback file read back when resuming
TIMED_OUT = "Your code did not finish within"
ALL_RAISED = re.compile(r"0 of (\d+) cases passed\nall \1 cases: (.*)")      # a part's first two lines


def grader_digest():
    """A digest of this grader's files and its data: what a batch records to tell a changed grader from a changed
    course or seed."""
    digest = hashlib.sha256()
    grader = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in (grader, *(os.path.join(grader, name) for name in (*PACKAGES, "data"))):
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith((".py", ".json", ".npz", ".toml")) and os.path.isfile(path):
                digest.update(name.encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


SECRET_BYTES = 32


def secret_path():
    """Where this user keeps the secret that signs a batch's resume state: ~/.config/mytorch/batch-secret."""
    root = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(root, "mytorch", "batch-secret")


def batch_secret():
    """This user's batch secret (made on first use, mode 0600, in a folder of its own, 0700), or a random one for
    this run alone, with why, when it cannot be kept: ``(secret, problem)``. A grader key without it is a digest
    of files anyone with the grader has: a student could sign feedback of their own making."""
    path = secret_path()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(SECRET_BYTES))
        except FileExistsError:
            pass
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if info.st_uid != os.geteuid() or info.st_mode & 0o077 or not stat.S_ISREG(info.st_mode):
                return secrets.token_bytes(SECRET_BYTES), f"{path} is not yours alone (remove it; a new one is made)"
            secret = f.read(SECRET_BYTES + 1)
        if len(secret) != SECRET_BYTES:
            return secrets.token_bytes(SECRET_BYTES), f"{path} is damaged (remove it; a new one is made)"
        return secret, ""
    except OSError as error:
        return secrets.token_bytes(SECRET_BYTES), f"{path} cannot be kept ({error.strerror or error})"


_SECRET = []                     # (secret, problem) of this process, read once


def grader_key(course, seed):
    """What decides a submission's grade besides its code (this grader's files, its data, the course, the seed),
    signed with this user's batch secret: only a run of this user's grader makes a key a later run trusts."""
    if not _SECRET:
        _SECRET.append(batch_secret())
    digest = hmac.new(_SECRET[0][0], grader_digest().encode(), hashlib.sha256)
    digest.update(course.to_toml().encode() + f"\0seed={seed}".encode())
    return digest.hexdigest()[:32]


def secret_problem():
    """Why this run's batch secret will not be there for the next run ('' when it will)."""
    if not _SECRET:
        _SECRET.append(batch_secret())
    return _SECRET[0][1]


def problem_of(results, reason=""):
    """("ungradable" | "timed out" | "crashed" | "", one line saying what) of a submission's results."""
    if reason:
        return "ungradable", reason
    for r in results:
        if r.status == "error" and r.output.startswith(TIMED_OUT):
            return "timed out", f"part {r.part.number}: {r.output.splitlines()[0]}"
    for r in results:                    # the process died, or every case raised the same error (an import)
        raised = ALL_RAISED.match(r.output)            # where the grader puts it, never in a student's text
        if r.status == "error" or raised:
            line = raised.group(2) if raised else (r.output.splitlines() or [""])[0]
            return "crashed", f"part {r.part.number}: {line[:200]}"
    return "", ""


FIRST_WRONG = re.compile(r"^\s*Where (?:case \d+ first goes|your values first go) wrong: `([^`\n]{1,80})`", re.M)


def mistakes_of(results):
    """{part: {"hints": the hints that fired, "wrong": the first wrong quantity the diagnosis named, or ''}} of the
    parts that lost points (what mistakes.csv is made of)."""
    out = {}
    for r in results:
        if r.passed or r.status == "not implemented":
            continue
        found = FIRST_WRONG.search(r.output)
        out[r.part.number] = {"hints": list(r.hints), "wrong": found.group(1) if found else ""}
    return out


def feedback_text(results, fresh_seed=None, reason=""):
    """What ``python -m autograder`` prints for these results, in a pipe (80 columns, no colour)."""
    console = report.Console(io.StringIO(), environ={"NO_COLOR": "1"})
    console.encoding = "utf-8"
    if reason:
        console.print(f"Not graded: {untrusted.line(reason, 1000)}.")
    if fresh_seed is not None:
        console.print(f"Graded on fresh cases from seed {fresh_seed}.")
    console.print(report.table(results, None, False, width=78, messages=not reason))
    return console.stream.getvalue()


class Folder:
    """The report folder, held open: every file is written and read through this descriptor, never by path, so
    a folder swapped for a link while student code runs (the class folder may be writable by the sandbox
    user) cannot redirect the grader's writes; files are made fresh (``O_EXCL | O_NOFOLLOW``) and renamed in."""

    def __init__(self, path, fd=None):
        self.path = path
        if fd is None:
            os.makedirs(path, exist_ok=True)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.fd = fd

    def sub(self, name):
        try:
            os.mkdir(name, 0o755, dir_fd=self.fd)
        except FileExistsError:
            pass
        return Folder(os.path.join(self.path, name),
                      os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.fd))

    def write(self, name, content):
        """``name`` holds ``content`` (str or bytes), replaced atomically."""
        # a name's lone surrogates (from a file name that is not UTF-8) become '?'
        data = content.encode("utf-8", "replace") if isinstance(content, str) else content
        tmp = f".tmp-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise

    def read(self, name, limit=READ_LIMIT):
        """The bytes of the regular file ``name`` (never through a link, never blocking), at most ``limit``."""
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{name} is not a regular file")
            content = f.read(limit + 1)
        if len(content) > limit:
            raise OSError(f"{name} is larger than {limit} bytes")
        return content

    def close(self):
        os.close(self.fd)


HASHED = re.compile(r"~[0-9a-f]{16}$")


def feedback_file(name):
    """The file name (before .txt and .json) of submission ``name``'s feedback: the name itself if it is printable
    UTF-8 on one line, short enough for any file system, else its printable start (at most 120 bytes) and a
    digest of the whole (a name of 300 bytes, or not UTF-8, is an archive's a student chose). No name is taken
    as it is if it looks like a digest's, or if it starts with '-', which a command given the files in the
    folder (grep -l … *) would read as an option; such a name's start is '_'."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= 200 and untrusted.line(name, 200) == name and not HASHED.search(name) and not name.startswith("-"):
        return name
    start = untrusted.line(name[:60], 60)
    while len(start.encode("utf-8", "replace")) > 120:         # 60 characters of four bytes each are too long
        start = start[:-1]
    return f"{'_' if start.startswith('-') else ''}{start}~{hashlib.sha256(raw).hexdigest()[:16]}"


def write_feedback(folder, name, text, payload):
    """The submission's two feedback files in ``folder`` (a ``Folder``; the .txt first: a .json present means
    both are complete)."""
    folder.write(f"{feedback_file(name)}.txt", text)
    folder.write(f"{feedback_file(name)}.json", json.dumps(payload, indent=1) + "\n")


def read_feedback(folder, name, key):
    """The results an earlier run left in ``folder`` for ``name`` if the same grader key made them, else None."""
    try:
        payload = json.loads(folder.read(f"{feedback_file(name)}.json"))
        if payload["extra_data"]["grader_key"] == key and folder.read(f"{feedback_file(name)}.txt") is not None:
            return payload
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


# ---- the class: rows from the results files, then the tables, the report and the picture

def rows(names, payloads, parts):
    """One row per submission: name, form, per-part scores, total, problem, detail, hints."""
    out = []
    for name in names:
        payload = payloads[name]
        extra = payload.get("extra_data", {})
        scores = {t["number"]: t["score"] for t in payload["tests"]}
        out.append({"name": name, "form": extra.get("form", ""), "scores": [scores.get(p.number, 0.0) for p in parts],
                    "total": payload["score"], "problem": extra.get("problem", ""),
                    "detail": extra.get("problem_detail", ""), "hints": sorted(extra.get("hints", {})),
                    "mistakes": extra.get("mistakes") if isinstance(extra.get("mistakes"), dict) else {},
                    "similarity": extra.get("similarity")})
    return out


def _csv(table):
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([[_cell(value) for value in row] for row in table])
    return buffer.getvalue()


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# a spreadsheet told that ';' separates cells (Excel's default in many locales) starts a cell after each one
FORMULA_AFTER_SEMICOLON = re.compile(r"(;\s*)(?=[=+\-@])")


def _cell(value):
    """``value`` as a spreadsheet shows it as text: printable UTF-8 on one line (a name's newlines, tabs, control
    characters, bidirectional overrides and bytes that are not UTF-8 become '?'), and a cell that would start a
    formula (a name the student chose, an archive's, an error's text may) gets a leading apostrophe, as OWASP
    advises against CSV injection, and so does what follows a ';' (a cell of its own when the file is opened
    with ';' as the separator); numbers stay numbers."""
    text = FORMULA_AFTER_SEMICOLON.sub(r"\1'", untrusted.line(str(value), 1000))
    if text.lstrip(" ").startswith(FORMULA_START):      # (a spreadsheet may drop the spaces before a formula)
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def scores_csv(class_rows, parts):
    header = ["submission", "handed in as"] + [p.number for p in parts] + ["total", "problem", "reason"]
    return _csv([header] + [[r["name"], r["form"]] + [f"{s:g}" for s in r["scores"]] +
                            [f"{r['total']:g}", r["problem"], r["detail"]] for r in class_rows])


def gradebook_csv(class_rows, course):
    """Canvas's gradebook import: a row per student matched on SIS Login ID (here: the submission's name)."""
    column = course.title
    table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column],
             ["    Points Possible", "", "", "", "", f"{course.total:g}"]]
    table += [[r["name"], "", "", r["name"], "", f"{r['total']:g}"] for r in class_rows]
    return _csv(table)


def mistake_columns(class_rows, parts):
    """The columns of mistakes.csv: one per (part, mistake) that fired in the class, in part order, then by how
    many made it; a mistake is a hint or a first wrong quantity ('first wrong: q')."""
    counts = {}
    for r in class_rows:
        for number, found in r["mistakes"].items():
            for mistake in found.get("hints", []) + ([f"first wrong: {found['wrong']}"] if found.get("wrong") else []):
                counts[(number, mistake)] = counts.get((number, mistake), 0) + 1
    order = {p.number: k for k, p in enumerate(parts)}
    return sorted(counts, key=lambda c: (order.get(c[0], len(order)), -counts[c], c[1]))


def mistakes_csv(class_rows, parts):
    """One row per submission: its total, then a column per mistake of the class (``mistake_columns``) holding 1
    where this submission made it."""
    columns = mistake_columns(class_rows, parts)
    header = ["submission", "total"] + [f"{number} {mistake}" for number, mistake in columns]
    table = [header]
    for r in class_rows:
        made = {(n, m) for n, found in r["mistakes"].items() for m in found.get("hints", []) +
                ([f"first wrong: {found['wrong']}"] if found.get("wrong") else [])}
        table.append([r["name"], f"{r['total']:g}"] + ["1" if c in made else "" for c in columns])
    return _csv(table)


def similarity_md(class_rows, compared):
    """report.md's section on copying (``similarity``)."""
    lines = ["", "## Similarity", ""]
    if not compared:
        return lines + ["Not compared: no solution to compare with (give --solution DIR, the instructor's "
                        "checkout)."]
    summaries = {r["name"]: r["similarity"] for r in class_rows if isinstance(r["similarity"], dict)}
    found = similarity.compare(summaries)
    bounded = sorted((n, s["not_compared"]) for n, s in summaries.items() if n not in similarity.compared(summaries))
    lines += [f"Compared the code {len(summaries) - len(bounded)} submissions wrote themselves (the provided code "
              "left out; names, spacing and comments do not count).", ""]
    lines += ["- Not compared, past a bound of the comparison: " + (
        "; ".join(f"{_md_cell(n)} ({_md_cell(untrusted.line(str(why), 200))})" for n, why in bounded) or "none") + "."]
    for title, names in (("Identical to the solution", found.solution),
                         ("The untouched handout (no code of their own)", found.handout)):
        lines += [f"- {title}: " + (", ".join(_md_cell(n) for n in names) if names else "none") + "."]
    lines += ["- Near-identical to the solution (share of its own code found in the solution): " + (
        ", ".join(f"{_md_cell(n)} {share:.0%}" for n, share in found.near_solution) or "none") + "."]
    lines += ["", "### Near-identical pairs (share of the smaller one's own code in common)", ""]
    lines += [f"- {_md_cell(a)} and {_md_cell(b)}: {share:.0%}" for a, b, share in found.pairs] or ["None."]
    if found.clusters:
        lines += ["", "### Clusters", ""] + [f"- {len(c)} submissions: " + ", ".join(_md_cell(n) for n in c)
                                            for c in found.clusters]
    return lines


def part_statistics(class_rows, parts):
    """Per part: (part, mean, median, fraction of the class with full marks)."""
    stats = []
    for k, part in enumerate(parts):
        scores = [r["scores"][k] for r in class_rows]
        full = sum(s >= part.points - 1e-9 for s in scores) / len(scores) if scores else 0.0
        stats.append((part, statistics.fmean(scores) if scores else 0.0,
                      statistics.median(scores) if scores else 0.0, full))
    return stats


def hint_counts(class_rows):
    """Each hint that fired, with how many submissions got it, most common first."""
    counts = {}
    for r in class_rows:
        for hint in r["hints"]:
            counts[hint] = counts.get(hint, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


BINS = 20                        # the histogram's bars: equal widths from 0 to the course's total


def bin_counts(totals, maximum):
    """How many of ``totals`` fall in each of ``BINS`` equal bins from 0 to ``maximum``: a bin holds its
    lower edge, the last one its upper edge too (as ``numpy.histogram`` counts)."""
    edges = [maximum * k / BINS for k in range(BINS + 1)]
    counts = [0] * BINS
    for total in totals:
        counts[min(max(bisect.bisect_right(edges, total) - 1, 0), BINS - 1)] += 1
    return edges, counts


def _step(largest):
    """A tick step (1, 2 or 5 times a power of ten) giving at most five steps up to ``largest``."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if largest <= 5 * step * factor:
                return step * factor
        step *= 10


def histogram_svg(totals, maximum):
    """The totals as an SVG bar chart (600 by 320): one bar per bin (``bin_counts``), each with a tooltip
    saying its range and count, the axes with their ticks and labels. Drawn here as text, with nothing
    imported: batch writes it as root after student code ran, so it loads no library the checks of the
    grader's own Python did not see, and it looks the same everywhere."""
    edges, counts = bin_counts(totals, maximum)
    width, height, left, right, top, bottom = 600, 320, 56, 16, 16, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    step = _step(max(counts + [1]))
    y_max = step * -(-max(counts + [1]) // step)

    def x(value):
        return left + plot_w * value / maximum if maximum else left

    def y(count):
        return top + plot_h * (1 - count / y_max)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for count in range(0, y_max + 1, step):                       # the count axis: grid lines and ticks
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(count):.1f}" y2="{y(count):.1f}" '
                   f'stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(count) + 4:.1f}" text-anchor="end">{count}</text>')
    for k, count in enumerate(counts):
        low, high = edges[k], edges[k + 1]
        last = "]" if k == BINS - 1 else ")"
        out.append(f'<rect x="{x(low) + 1:.1f}" y="{y(count):.1f}" width="{max(x(high) - x(low) - 2, 1):.1f}" '
                   f'height="{y(0) - y(count):.1f}" fill="#4477aa"><title>[{low:g}, {high:g}{last}: '
                   f'{count} submission{"" if count == 1 else "s"}</title></rect>')
    for k in range(6):                                            # the total axis: six ticks, 0 to the total
        value = maximum * k / 5
        out.append(f'<line x1="{x(value):.1f}" x2="{x(value):.1f}" y1="{y(0):.1f}" y2="{y(0) + 5:.1f}" '
                   'stroke="black"/>')
        out.append(f'<text x="{x(value):.1f}" y="{y(0) + 18:.1f}" text-anchor="middle">{value:g}</text>')
    out += [f'<line x1="{left}" x2="{left + plot_w}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="black"/>',
            f'<line x1="{left}" x2="{left}" y1="{top}" y2="{y(0):.1f}" stroke="black"/>',
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 10}" text-anchor="middle">total (of {maximum:g})</text>',
            f'<text transform="translate(16 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
            'submissions</text>', "</svg>"]
    return "\n".join(out) + "\n"


def _md_cell(text):
    """``text`` (a submission's name, a hint, a problem: the student's text may be in any) as plain text in
    Markdown: on one line, with every ASCII punctuation character escaped (no link, image, HTML or cell break)."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", " ".join(untrusted.text(str(text), 1000).splitlines()))


def roster_md(roster, matching, course_title=None):
    """report.md's section on the roster: how many matched, the submissions matching no student, the students
    with none and the submissions a later one superseded."""
    lines = ["", "## Roster", "",
             f"{len(matching.graded)} of {len(roster.students)} students of the roster ({roster.kind}) have a "
             "graded submission.", ""]
    warning = rosters.new_column_warning(roster, course_title) if course_title else ""
    if warning:
        lines += [f"**Note:** {_md_cell(warning)}.", ""]
    for title, names in (("Submissions that match no student (not in gradebook.csv)", matching.unmatched),
                         ("Students with no submission (their grade left empty)", matching.without),
                         ("Submissions superseded by a later one of the same student",
                          [f"{name} ({student})" for name, student in matching.superseded])):
        lines += [f"### {title}", ""] + ([f"- {_md_cell(n)}" for n in names] if names else ["None."]) + [""]
    return lines[:-1]


def report_md(class_rows, parts, course, roster=None, matching=None, compared=False):
    # the statistics count each student once: a submission a later one of theirs superseded is left out
    superseded = {name for name, _ in matching.superseded} if matching is not None else set()
    every_row, class_rows = class_rows, [r for r in class_rows if r["name"] not in superseded]
    n = len(class_rows)
    totals = [r["total"] for r in class_rows]
    left_out = f" (not counting {len(every_row) - n} superseded)" if len(every_row) > n else ""
    lines = [f"# {course.title}: class report", "",
             f"{n} submissions{left_out}, total out of {course.total:g}: mean {statistics.fmean(totals):.2f}, "
             f"median {statistics.median(totals):.2f}." if n else "No submissions.", ""]
    if n:                                              # write_class draws totals.svg unless the class is empty
        lines += ["![totals](totals.svg)", ""]
    lines += ["## Parts", "", "| part | points | mean | median | full marks |", "|---|---|---|---|---|"]
    for part, mean, median, full in part_statistics(class_rows, parts):
        lines.append(f"| {part.number} {part.name} | {part.points:g} | {mean:.2f} | {median:.2f} | {full:.0%} |")
    lines += ["", "## Hints", ""]
    counted = hint_counts(class_rows)
    lines += [f"- {count / n:.0%} of the class ({count} of {n}): {_md_cell(hint)}" for hint, count in counted] \
        if counted else ["No hint fired."]
    lines += ["", "## Submissions that crashed, timed out or were not gradable", ""]
    problems = [r for r in every_row if r["problem"]]
    if problems:
        lines += ["| submission | problem | what |", "|---|---|---|"]
        lines += [f"| {_md_cell(r['name'])} | {r['problem']} | {_md_cell(r['detail'])} |" for r in problems]
    else:
        lines.append("None.")
    lines += similarity_md(every_row, compared)
    if roster is not None:
        lines += roster_md(roster, matching, course.title)
    return "\n".join(lines) + "\n"


def write_class(folder, names, payloads, course, roster=None, matching=None, compared=False):
    """scores.csv, gradebook.csv, report.md and totals.svg in ``folder`` (a ``Folder``) for the submissions
    ``names`` (in that order); with a ``roster`` (and its ``matching``), the gradebook is the roster's. Returns the
    rows."""
    parts = course.parts()
    class_rows = rows(names, payloads, parts)
    folder.write("scores.csv", scores_csv(class_rows, parts))
    if roster is None:
        folder.write("gradebook.csv", gradebook_csv(class_rows, course))
    else:
        totals = {r["name"]: r["total"] for r in class_rows}
        folder.write("gradebook.csv", _csv(rosters.gradebook(roster, matching, totals, course.title, course.total)))
    if class_rows:
        folder.write("totals.svg", histogram_svg([r["total"] for r in class_rows], course.total))
    folder.write("mistakes.csv", mistakes_csv(class_rows, parts))
    folder.write("report.md", report_md(class_rows, parts, course, roster, matching, compared))
    return class_rows
