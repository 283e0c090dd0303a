"""Instructors: grade every submission in a folder, in parallel, and leave feedback and a class report.

    python -m autograder batch DIR [--out REPORT] [--regrade] [--roster ROSTER.csv] [--run-as USER[,USER...]|'PREFIX*']
                                   [--python PATH] [--jobs N] [--csv PATH] [--timeout S] [--fresh-seed [SEED]]

Every sub-folder of DIR is one submission (named by the folder), whatever it holds (``submissions``, the locator
every mode shares: the one ``mytorch`` package at any depth, or the one in its archives; anything else is a row
with 0 and the reason); so is an archive at DIR's top. It prints how many it found and how many rows it wrote:
the same number. REPORT (default ``DIR-grading/``, beside DIR) receives each submission's feedback as it is
graded, then the class's tables and report (``class_report``; with ``--roster``, the gradebook is the roster's:
``roster``). Ctrl-C stops it cleanly (``Interrupt``): started again, it grades only what has no feedback from
the same grader, course and seed yet; when one of those changed, or with ``--regrade``, it says why and moves
the earlier report aside first (``regrade_reason``, ``set_aside``). REPORT is never inside DIR: every folder there
is a submission, and one a student named like the report, shaped like one (feedback claiming full marks, a
seed they chose), is graded like any other instead of being read as the grader's own. One seed is drawn for
the whole batch (and kept for a resumed run), so every submission is graded on the same cases.

Isolation, which is why a class is graded as root with ``--run-as`` (unprivileged users made for grading;
see ``identities``): every reference is read once before any student code runs; every submission's
``mytorch`` is copied first into a folder of the grader's that only the user grading it may read, and student
code runs on that copy; submissions graded at the same time run as different users, and a user's processes,
IPC objects and temporary files are gone before it grades the next one. No sandbox user can write the
copies, the grader's code and reference data, the solution or the Python that runs student code (checked
before starting), nor the report, which the grader writes. A part that ran out of time starved of CPU (by
another submission's busy processes, say), or that the grader failed on (its disk filled by another, say), is
graded again while no other submission runs (``fairness``).
One submission that breaks anything (a copy refused, a tree too deep, a fault of the grader) scores 0 with
the reason; the others are graded. Without ``--run-as`` it says plainly that there is no isolation. What reads a
submission's files before grading is bounded per submission: the locator and the copy by their limits, the
class report's similarity check by a child of its own per submission, several at once, within a time, CPU,
memory and output limit (``similarity_summaries``): one made to be slow to compare is reported as not compared.
"""
import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import pwd
import re
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

from autograder import cli, grade, preflight
from autograder.diagnosis import report
from autograder.instructor import class_report, roster, similarity, submissions
from autograder.parts import course as courses
from autograder.sandbox import (
    childspec,
    cleanup,
    fairness,
    identities,
    interpreter,
    isolation,
    reaper,
    tree,
    untrusted,
    zygotes,
)

STATE = ".batch.json"            # in REPORT: the seed a --fresh-seed batch drew, for a resumed run


def no_isolation_warning():
    who = "root" if os.geteuid() == 0 else "you"
    return textwrap.fill(f"warning: no isolation: student code runs as {who}, so each submission can read and "
                         "change the others, this grader, its reference data and your files. To grade a class, "
                         "run as root with --run-as USER (an unprivileged user made for grading).", 80)


def stored_cases_note():
    return textwrap.fill("note: graded on the stored cases, whose expected outputs ship with the student handout: "
                         "a submission that hands them back without computing them scores as if it had. "
                         "--fresh-seed grades on new cases, computed by the solution.", 80)


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Progress:
    """'graded 3/40 submissions, about 2 min left' on stderr."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.lock = threading.Lock()

    def step(self):
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            eta = f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left"
            end = "\n" if self.done == self.total or not sys.stderr.isatty() else "\r"
            print(f"graded {self.done}/{self.total} submissions, {eta if self.done < self.total else 'done'}"
                  f" ({elapsed:.0f} s)", end=end, file=sys.stderr, flush=True)


def batch_seed(args, folder, course):
    """The fresh seed (None: the stored cases): a random one is drawn once per class and kept in the report
    ``folder`` with its check (``seed_check``), so a resumed run grades on the same cases; a kept seed without
    the right check (planted in the folder: a student's seed would give cases they know) is not used."""
    if args.fresh_seed != "random" or args.regrade:
        return cli.resolve_fresh_seed(args.fresh_seed)
    try:
        state = json.loads(folder.read(STATE))
        seed = state["fresh_seed"]
        if isinstance(seed, int) and not isinstance(seed, bool) and state.get("check") == seed_check(course, seed):
            return seed
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return cli.resolve_fresh_seed(args.fresh_seed)


def seed_check(course, seed):
    """A kept seed's check: a digest of it with this grader's files, whose instructor-only modules no student has."""
    return class_report.grader_key(course, f"kept {seed}")


def parts_at_once(jobs, at_once):
    """The parts of one submission graded at once when ``at_once`` submissions are: their share of ``jobs``, and
    at least two. With one, a submission's slot idles while its child starts and ends (forked, joining its
    cgroup, its namespaces torn down) and while the grader judges it and starts the next: a batch of 20 with
    ``--jobs 2`` kept the cores 76% busy, against 89% with two (8.8 s against 10.0 s, 10.3 s against 11.4 s,
    alternating). So up to ``max(jobs, 2 * at_once)`` children run at once, each within its own limits."""
    return max(2, jobs // at_once)


def sandbox_users(parser, value, jobs, python, solution=None, hidden=()):
    """The identity pool of ``--run-as`` (None without it) and the checked Python; usage errors for a pool
    that cannot be used, a Python a sandbox user cannot run or could change, or grader files (or the
    solution) it could change. What a user could read of the instructor's files and of ``hidden``
    (``(folder, what it is)``) is hidden from its children (``preflight.hide_from_users``)."""
    if value is None:
        return None, preflight.resolve_python(parser, python)
    if os.geteuid() != 0:
        parser.error("--run-as needs root")
    copies, users = sweep_staging(), identities.sweep()   # what batches killed hard left, before any new user
    for what, swept in (("users", users), ("copies of submissions", copies)):
        if swept:
            print(f"note: removed what batches killed before their end left: {what} "
                  f"{', '.join(untrusted.line(name, 80) for name in swept)}", file=sys.stderr)
    try:
        users = identities.pool(value, jobs)
    except identities.IdentityError as error:
        parser.error(f"--run-as: {error}")
    try:
        grader = os.path.dirname(os.path.abspath(grade.__file__))
        python = preflight.resolve_python(parser, python, users.users)  # one walk of the Pythons for them all
        preflight.refuse_writable(parser, users.users, [grader], "the grader's files")
        preflight.refuse_writable(parser, users.users, [os.path.join(solution, "mytorch")] if solution else [],
                                  "the solution, which runs as root")
        preflight.hide_from_users(parser, users.users,
                                  preflight.instructor_places(solution, [], python) + list(hidden))
        for user in users.users:                          # what an earlier run left (the checks killed its processes)
            cleanup.clear_user(user)
    except BaseException:
        users.close()
        raise
    return users, python


STAGING = re.compile(r"mytorch-batch-(\d+)-(\d+)-(\w+)-")   # a batch's copies: its pid, start and boot


def staging_folder():
    """A folder of root's alone for the copies of the submissions, named for this batch (``identities.owner_mark``)
    so that a later batch knows it for one a killed batch left (``sweep_staging``)."""
    pid, start, boot = identities.owner()
    return tempfile.mkdtemp(prefix=f"mytorch-batch-{pid}-{start}-{boot}-")


def sweep_staging():
    """Remove the copies' folders (root's, in the temporary folder) of batches that are no longer running; their
    names, as removed."""
    swept, top = [], tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.scandir(top):
            found = STAGING.match(entry.name)
            if found and entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == 0 \
                    and identities.orphaned(" ".join((identities.MARK, *found.groups()))):
                tree.remove(entry.path)
                swept.append(entry.path)
    return swept


def stage(source, folder):
    """A private copy of the package ``source`` as ``folder``/mytorch, ``folder`` readable by root alone
    until ``lend`` hands it to the user grading it. Returns the copy, or the error that refused it."""
    try:
        os.makedirs(folder, mode=0o700)
        copy = isolation.private_copy(source, os.path.join(folder, "mytorch"))
        os.chmod(folder, 0o700)
        return copy
    except Exception as error:                            # whatever it is, this submission's alone
        return error


def lend(copy, user):
    """Let ``user`` alone read the copy: its folder becomes theirs, read and search only."""
    folder = os.path.dirname(copy)
    os.chown(folder, user.pw_uid, 0)
    os.chmod(folder, 0o500)


def reclaim(copy):
    """Take the copy back from the user it was lent to: root's alone again."""
    folder = os.path.dirname(copy)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o700)


def prepare(folder, names, staging, interrupt=(), base=None, jobs=2):
    """Every submission of ``names`` located, unpacked and copied into ``staging`` before any student code runs:
    {name: (Located, the graded copy of its package, or the error that refused it, or None)}. Each
    submission's folder there may be passed through by others (to reach its own copy, once lent) but not read;
    what it unpacked is root's alone. With ``base``, each copy's similarity summary too (``similarity_summaries``),
    read before any student code runs."""
    prepared = {}
    for k, name in enumerate(names):
        if interrupt:                                     # Ctrl-C: nothing more is copied
            break
        where = os.path.join(staging, str(k))
        os.makedirs(os.path.join(where, "unpacked"), mode=0o700)
        os.chmod(where, 0o711)
        located = submissions.locate(folder, name, os.path.join(where, "unpacked"))
        copy = stage(located.package, os.path.join(where, "graded")) if located.package is not None else None
        prepared[name] = (located, copy)
    if base is not None:
        copies = {n: copy for n, (_, copy) in prepared.items() if copy is not None and not isinstance(copy, Exception)}
        for name, summary in similarity_summaries(copies, base, jobs, interrupt).items():
            prepared[name][0].similarity = summary
    return prepared


SIMILARITY_SECONDS = 30          # wall-clock and CPU seconds of one submission's similarity child
SIMILARITY_MEMORY = 1 << 30      # bytes of its address space
SIMILARITY_OUTPUT = 8 << 20      # bytes of its summary read back


def similarity_summaries(copies, the_base, jobs, interrupt=()):
    """{name: its ``similarity.summary``} for ``copies`` ({name: its graded copy}), each from a child of its own
    (``similarity_of``), ``jobs`` of them at once and at least two: a submission that keeps its child to the time
    limit holds up no other. Those not compared because of Ctrl-C are left out."""
    request = json.dumps(similarity.to_json(the_base))

    def one(name):
        return name, None if interrupt else similarity_of(copies[name], request)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, jobs)) as pool:
        return {name: summary for name, summary in pool.map(one, sorted(copies)) if summary is not None}


def similarity_child():
    """The command of a similarity child: this grader's Python, isolated (-I: no environment variable, user site
    or current folder on its path) and without site (-S): ``similarity`` and the standard library alone."""
    return [sys.executable, "-I", "-S", os.path.abspath(similarity.__file__)]


def _similarity_limits():
    import resource  # POSIX: imported in the parent, before the fork
    cpu = int(SIMILARITY_SECONDS)

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (SIMILARITY_MEMORY, SIMILARITY_MEMORY))
    return limit


def similarity_of(copy, base_json):
    """The summary of the package ``copy`` (``similarity.summary``, ``base_json`` its base as JSON text) from a
    child of the grader's (``similarity_child``; it reads the student's files and runs none of them), or
    ``{"not_compared": why}`` when it reached a bound of its own or of the child: its time, CPU, memory, output."""
    request = f'{{"package": {json.dumps(copy)}, "base": {base_json}}}'.encode()
    try:
        with tempfile.TemporaryFile() as stdin:
            stdin.write(request)
            stdin.seek(0)
            done = reaper.run(similarity_child(), timeout=SIMILARITY_SECONDS, limit=SIMILARITY_OUTPUT + 1,
                              capture_output=True, stdin=stdin, cwd="/", preexec_fn=_similarity_limits())
    except subprocess.TimeoutExpired:
        return {"not_compared": f"comparing it took longer than {SIMILARITY_SECONDS:g} s"}
    return _summary_of(done)


def _summary_of(done):
    """The summary a finished similarity child (a ``CompletedProcess``) gave, or why there is none."""
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"not_compared": f"comparing it took longer than {SIMILARITY_SECONDS:g} s"}       # of CPU
    if done.returncode == -signal.SIGXFSZ or len(done.stdout) > SIMILARITY_OUTPUT:
        return {"not_compared": f"its summary was larger than {SIMILARITY_OUTPUT >> 20} MiB"}
    if done.returncode and b"MemoryError" in done.stderr[-4096:]:
        return {"not_compared": f"comparing it needed more than {SIMILARITY_MEMORY >> 20} MiB of memory"}
    if done.returncode:
        return {"not_compared": f"comparing it failed (exit status {done.returncode})"}
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        summary = None
    if not similarity.well_formed(summary):
        return {"not_compared": "comparing it gave no summary"}
    return summary


def grade_one(located, copy, parts, users, **options):
    """(results, reason) of one prepared submission; whatever goes wrong, a score of 0 for every part with the
    reason, so the class is graded on. The copy is root's alone again before its user's lease ends (``reclaim``),
    so the user's next submission cannot read it, and removed once no process of that user is left."""
    try:
        if isinstance(copy, Exception):
            located.reason = submissions.copy_refused(copy)
        if copy is None or located.reason:
            reason = located.reason or "no mytorch package"
            return _zero(parts, f"Not graded: {reason}."), reason
        return _grade_copy(copy, parts, users, options)
    finally:
        if copy is not None and not isinstance(copy, Exception):
            tree.remove(os.path.dirname(copy))


def _grade_copy(copy, parts, users, options):
    """``options``: ``grade.grade``'s, and ``child``, the ``ChildSpec`` every submission's children share."""
    options = dict(options)
    child = options.pop("child", childspec.ChildSpec(None))
    try:
        if users is None:
            return grade.grade(dataclasses.replace(child, root=os.path.dirname(copy)), parts, **options), ""
        with users.lease() as user:
            lend(copy, user)
            try:
                return grade.grade(dataclasses.replace(child, root=os.path.dirname(copy), user=user), parts,
                                   **options), ""
            finally:
                reclaim(copy)                             # before another submission may be graded as user
    except Exception as error:
        reason = (f"the grader failed on this submission ({type(error).__name__}: "
                  f"{submissions.without_paths(untrusted.line(str(error), 300), os.path.dirname(copy))}); "
                  "please report it")
        return _zero(parts, reason), reason


def _zero(parts, problem):
    return [grade.PartResult(p, 0.0, "error", problem) for p in parts]


def record(feedback, the_course, located, results, reason, seconds, key, fresh_seed):
    """Write the submission's feedback files; returns its results payload."""
    problem, detail = class_report.problem_of(results, reason)
    detail = submissions.without_paths(detail)            # the reason column: never where the grader staged it
    payload = report.gradescope(results, seconds, the_course.gradescope, extra={
        "submission": untrusted.line(located.name, 1000), "form": located.form, "problem": problem,
        "problem_detail": detail, "mistakes": class_report.mistakes_of(results),
        "similarity": getattr(located, "similarity", None),
        "grader_key": key, "seed": fresh_seed if fresh_seed is not None else the_course.seed})
    text = class_report.feedback_text(results, fresh_seed, reason)
    try:
        class_report.write_feedback(feedback, located.name, text, payload)
    except OSError as error:             # (the disk full, say): its row in the class's tables still comes
        print(f"error: the feedback of {untrusted.line(located.name, 60)} could not be written: "
              f"{untrusted.text(error.strerror or str(error), 200)}", file=sys.stderr, flush=True)
    return payload


def _course_of(text):
    """The ``Course`` a report's record kept as TOML, or None if it cannot be read."""
    try:
        return courses.parse(courses.tomllib.loads(text), None)
    except Exception:                                     # a record an older grader wrote, or damaged
        return None


def course_changes(before, now):
    """What changed from the course ``before`` to ``now``, in a few words ('' if nothing a grade depends on)."""
    said = []
    if before.sections != now.sections:
        said.append(f"sections {', '.join(now.sections)} (were {', '.join(before.sections)})")
    for number, points in now.points.items():
        if number in before.points and before.points[number] != points:
            said.append(f"part {number} is worth {points:g} points (was {before.points[number]:g})")
    if before.seed != now.seed:
        said.append(f"the reference seed is {now.seed} (was {before.seed})")
    if before.title != now.title:
        said.append(f"the title is {now.title!r} (was {before.title!r})")
    if before.bptt_on_reference_cells != now.bptt_on_reference_cells:
        said.append(f"bptt_on_reference_cells is {str(now.bptt_on_reference_cells).lower()}")
    if not said and before.to_toml() != now.to_toml():
        said.append("its Gradescope settings")
    return "; ".join(said)


def keep_private(report_dir):
    """A report holds every student's feedback: its folder is for its owner alone (mode 0700; other users of a
    shared machine read nothing in it). Under sudo the owner is the instructor who ran sudo, not root."""
    os.chmod(report_dir, 0o700)
    uid, gid = os.environ.get("SUDO_UID", ""), os.environ.get("SUDO_GID", "")
    if os.geteuid() == 0 and uid.isdigit() and gid.isdigit():
        os.chown(report_dir, int(uid), int(gid))


def regrade_reason(args, kept, graded_before, the_course, fresh_seed, key):
    """Why this run grades again what an earlier run in the same report folder graded ('' when it resumes or
    there is nothing earlier): ``kept`` is the earlier run's record, ``graded_before`` the grader keys of the
    feedback it left."""
    if not graded_before:
        return ""
    if args.regrade:
        return "--regrade was given"
    if graded_before <= {key}:
        return ""
    before = _course_of(kept.get("course", "")) if isinstance(kept.get("course"), str) else None
    if before is not None:
        changed = course_changes(before, the_course)
        if changed:
            return f"the course changed: {changed}"
    if "seed" in kept and kept["seed"] != fresh_seed:
        return "the fresh seed changed" if fresh_seed is not None and kept["seed"] is not None else \
            ("it grades on fresh cases, the earlier run on the stored ones" if fresh_seed is not None else
             "it grades on the stored cases, the earlier run on fresh ones")
    if kept.get("grader") and kept["grader"] != class_report.grader_digest():
        return "the grader's code or reference data changed"
    return "the earlier report was made by another grader, course or seed"


def set_aside(report_dir):
    """Move the report folder to a name of its own beside it (``REPORT-before-<UTC time>``); returns that name."""
    stamp = time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime())
    aside = f"{report_dir}-before-{stamp}"
    k = 1
    while os.path.lexists(aside):
        k += 1
        aside = f"{report_dir}-before-{stamp}-{k}"
    os.rename(report_dir, aside)
    return aside


def earlier_keys(feedback):
    """The grader keys of the feedback an earlier run left in ``feedback`` (a ``Folder``)."""
    keys = set()
    for name in os.listdir(feedback.fd):
        if name.endswith(".json") and not name.startswith(".tmp-"):
            try:
                keys.add(json.loads(feedback.read(name))["extra_data"]["grader_key"])
            except (OSError, ValueError, KeyError, TypeError):
                keys.add(None)
    return keys


class Interrupt:
    """Ctrl-C (SIGINT) during a batch: no new submission starts, those being graded are not recorded (a signal
    may have reached their processes: they are graded again by the next run), everything is cleaned up, and the
    batch says how far it got."""

    def __init__(self):
        self.event = threading.Event()
        self.previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame):
        if not self.event.is_set():
            print("\nstopping: cleaning up (the submissions being graded are graded again next time)",
                  file=sys.stderr, flush=True)
        self.event.set()

    def __bool__(self):
        return self.event.is_set()

    def restore(self):
        signal.signal(signal.SIGINT, self.previous)


def similarity_base(solution, the_course):
    """What the class report compares submissions with (``similarity.base``): the solution given with
    --solution, else the instructor's checkout beside this grader; None when neither holds one."""
    for place in (solution, grade.instructor_checkout()):
        if place and os.path.isfile(os.path.join(place, "mytorch", "__init__.py")):
            found = similarity.base(os.path.abspath(place), the_course.sections)
            if found.files:
                return found
    return None


def default_report(folder):
    """Where a batch of ``folder`` leaves its report when --out is not given: beside it, ``DIR-grading``."""
    return os.path.join(os.path.dirname(folder), os.path.basename(folder) + "-grading")


def _short(name, width):
    """A submission's name on one line of at most ``width`` characters (cut with '…'), for a column."""
    shown = untrusted.line(name, 1000)
    return shown if len(shown) <= width else shown[:width - 1] + "…"


REPORT_FILES = {"scores.csv", "gradebook.csv", "mistakes.csv", "report.md", "totals.svg", STATE}


def not_a_report(path):
    """What at ``path`` a report folder of this grader would not hold, said in a few words; '' if it is one, or
    nothing is there yet."""
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            return "it is a link" if stat.S_ISLNK(mode) else "it is a file"
        for name in sorted(os.listdir(path)):
            mode = os.lstat(os.path.join(path, name)).st_mode
            ours = (name == class_report.FEEDBACK and stat.S_ISDIR(mode)) or (
                (name in REPORT_FILES or name.startswith(".tmp-")) and stat.S_ISREG(mode))
            if not ours:
                return f"it holds {untrusted.line(name, 60)}"
        feedback = os.path.join(path, class_report.FEEDBACK)
        for name in sorted(os.listdir(feedback)) if os.path.isdir(feedback) else ():
            if not (name.endswith((".txt", ".json")) or name.startswith(".tmp-")) or \
                    not stat.S_ISREG(os.lstat(os.path.join(feedback, name)).st_mode):
                return f"its feedback folder holds {untrusted.line(name, 60)}"
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"it cannot be read: {error.strerror or error}"
    return ""


def _user(uid):
    try:
        return untrusted.line(pwd.getpwuid(uid).pw_name, 40)
    except KeyError:
        return f"uid {uid}"


def not_ours(path):
    """What at ``path`` (a report folder, or nothing yet) another user could have made or changed, in a few
    words; '' if nothing. Its folder, its feedback folder and every file in them must be this user's (under
    sudo, root's or the instructor's who ran sudo, ``keep_private``'s), and none writable by others: a
    report folder another user made in advance could hold feedback they wrote, and would give them every
    student's."""
    mine = {os.geteuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and sudo.isdigit():
        mine.add(int(sudo))
    try:
        paths = [path]
        feedback = os.path.join(path, class_report.FEEDBACK)
        for folder in (path, feedback):
            if os.path.isdir(folder):
                paths += [os.path.join(folder, name) for name in sorted(os.listdir(folder))]
        for where in paths:
            info = os.lstat(where)
            shown = untrusted.line(os.path.relpath(where, os.path.dirname(path)), 80)
            if info.st_uid not in mine:
                return f"{shown} belongs to {_user(info.st_uid)}, not to you"
            if info.st_mode & 0o022 and not stat.S_ISLNK(info.st_mode):
                return f"{shown} may be changed by other users"
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"it cannot be read: {error.strerror or error}"
    return ""


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder batch", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)   # see cli.grade_parser
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--out", default=None, metavar="REPORT",
                        help="the folder for the feedback and the class report, outside DIR "
                             "(default DIR-grading, beside it)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, even those an earlier run of this grader finished")
    parser.add_argument("--csv", default=None, metavar="PATH", help="also write the scores table to PATH")
    parser.add_argument("--roster", default=None, metavar="ROSTER.csv",
                        help="Canvas's gradebook export or Gradescope's roster: submissions are matched to its "
                             "students by the names Canvas's and Gradescope's downloads give them, and "
                             "gradebook.csv carries its ids")
    cli.add_common(parser, jobs="submissions graded at once, at most one per sandbox user, each with at least "
                                "two parts at a time (default: one more than the cores)")
    args = parser.parse_args(argv)
    interrupt = Interrupt()
    try:
        return _batch(parser, args, interrupt)
    finally:
        interrupt.restore()


def _batch(parser, args, interrupt):
    """The batch of ``args``: its plan, its report folder opened (or an earlier one resumed or set aside), every
    submission to grade graded, then the class's tables. Its exit status."""
    plan = _plan(parser, args)
    folder_out, feedback = _open_report(parser, plan.report_dir)
    run = _run_of(parser, args, plan, folder_out)
    folder_out, feedback = _resume_or_set_aside(args, plan, run, folder_out, feedback)
    payloads, todo = _graded_before(args, plan, run, feedback)
    _grade_all(args, plan, run, feedback, payloads, todo, interrupt)
    if interrupt:
        again = "run it again without --regrade" if args.regrade else "run the same command"
        print(f"interrupted after {len(payloads)} of {len(plan.names)}; {again} to continue", file=sys.stderr,
              flush=True)
        return 130
    return _summary(args, plan, folder_out, payloads, run.base is not None)


@dataclasses.dataclass
class Plan:
    """What a batch grades and where it reports, decided (every usage error said) before anything is written."""
    folder: str                  # the class folder (absolute): every sub-folder or archive in it a submission
    report_dir: str              # REPORT (absolute), outside it
    course: object               # the course (``parts.course.Course``)
    parts: list                  # its parts
    roster: object               # the ``roster.Roster`` of --roster, or None
    matching: object             # which submission is whose (``roster.Matching``), or None
    names: list                  # the submissions, by name


def _plan(parser, args):
    """The ``Plan`` of ``args``: a usage error for a class folder, report folder or roster that cannot be used."""
    folder = _class_folder(parser, args.folder)
    the_course = cli.load_course(parser)
    parts = the_course.parts()
    report_dir = _report_dir(parser, args.out, folder)
    the_roster = _read_roster(parser, args.roster)
    names, ignored = submissions.find(folder)
    if the_roster is not None:                            # a student's file that is no archive: theirs, ungradable
        extra = roster.submission_files(ignored, the_roster, folder)
        names, ignored = sorted(names + extra), [n for n in ignored if n not in extra]
    if not names:
        parser.error(f"no submissions in {args.folder}: each must be a folder (or an archive) in it")
    matching = roster.match(names, the_roster, folder) if the_roster is not None else None
    print(f"Found {_count(len(names), 'submission')} in {folder}" + (
        f" (not submissions, left alone: {len(ignored)} other files at its top, e.g. "
        f"{untrusted.line(ignored[0], 60)})" if ignored else ""))
    return Plan(folder, report_dir, the_course, parts, the_roster, matching, names)


def _class_folder(parser, given):
    if not os.path.isdir(given):
        parser.error(f"{given} is not a folder")
    folder = os.path.abspath(given)
    if preflight.grader_inside(folder):
        parser.error(f"this grader was imported from inside {folder}: run it from its own copy, outside the "
                     "submissions")
    return folder


def _report_dir(parser, out, folder):
    """REPORT: --out or beside the class folder; a usage error where it is inside the class folder, is not a report
    folder of this grader, or is not this user's alone."""
    report_dir = os.path.abspath(out or default_report(folder))
    if interpreter.within(os.path.realpath(report_dir), os.path.realpath(folder)):   # a submission's place
        parser.error(f"--out {report_dir} is inside {folder}, where every folder is a submission: give a folder "
                     "outside it")
    stranger = not_a_report(report_dir)
    if stranger:                                      # something of the instructor's: never written over
        parser.error(f"{report_dir} is not a report folder of this grader ({stranger}): name another with --out")
    foreign = not_ours(report_dir)
    if foreign:                                       # planted: never resumed from, never written into
        parser.error(f"{report_dir} is not yours alone ({foreign}): another user may have made it to plant "
                     "feedback or read every student's; remove it, or name another folder with --out")
    return report_dir


def _read_roster(parser, path):
    if not path:
        return None
    try:
        return roster.read(path)
    except roster.RosterError as error:
        parser.error(f"--roster: {error}")


def _open_report(parser, report_dir):
    """The report folder and its feedback folder (``class_report.Folder``s), made if need be, this user's alone."""
    try:
        folder_out = class_report.Folder(report_dir)
        keep_private(report_dir)
        feedback = folder_out.sub(class_report.FEEDBACK)
    except OSError as error:
        parser.error(f"--out {report_dir}: not a folder the grader can write ({error.strerror or error})")
    foreign = not_ours(report_dir)                    # made by another user between the look and now
    if foreign:
        parser.error(f"{report_dir} is not yours alone ({foreign}): remove it, or name another folder with --out")
    if class_report.secret_problem():
        print(f"note: {class_report.secret_problem()}: a later run will not trust this one's feedback and grades "
              "everything again", file=sys.stderr)
    return folder_out, feedback


@dataclasses.dataclass
class Run:
    """How a planned batch grades: on which cases, with which solution, sandbox users and Python."""
    fresh_seed: object           # the fresh seed, or None: the stored cases
    solution: str                # the solution's folder (``cli.resolve_solution``), or None
    jobs: int                    # --jobs, or the default
    users: object                # the identity pool of --run-as (``identities``), or None
    python: str                  # the Python that runs student code
    base: object                 # what the similarity check compares with (``similarity.Base``), or None
    cells: object                # ``grade.reference_cells``
    key: str                     # the grader key its feedback is recorded with (``class_report.grader_key``)


def _run_of(parser, args, plan, folder_out):
    """The ``Run`` of ``plan``; its notes on stderr (no isolation, the stored cases, the reference cells)."""
    fresh_seed = batch_seed(args, folder_out, plan.course)
    solution = cli.resolve_solution(args, fresh_seed)
    jobs = args.jobs or grade.default_jobs()
    users, python = sandbox_users(parser, args.run_as, jobs, args.python, solution,
                                  [(plan.folder, "the submissions"),
                                   (plan.report_dir, "the feedback and the class report")])
    if users is None:
        print(no_isolation_warning(), file=sys.stderr)
    else:
        preflight.refuse_writable(parser, users.users, [plan.report_dir],
                                  "the report (give --out a folder only root may write)")
    if fresh_seed is None:
        print(stored_cases_note(), file=sys.stderr)
    base = similarity_base(args.solution, plan.course)
    cells, cells_note = grade.reference_cells(plan.course, plan.parts, users is not None, args.solution)
    if cells_note:
        print(f"note: {cells_note}", file=sys.stderr)
    return Run(fresh_seed, solution, jobs, users, python, base, cells,
               class_report.grader_key(plan.course, fresh_seed))


def _resume_or_set_aside(args, plan, run, folder_out, feedback):
    """The report folder and its feedback folder this run writes: the same, or, when it grades everything again
    (``regrade_reason``), new ones, the earlier report moved aside and named; this run's record kept in it."""
    try:
        earlier = json.loads(folder_out.read(STATE))
    except (OSError, ValueError):
        earlier = {}
    why = regrade_reason(args, earlier if isinstance(earlier, dict) else {}, earlier_keys(feedback), plan.course,
                         run.fresh_seed, run.key)
    if why:                                               # never written over: the earlier report is kept, named
        feedback.close()
        folder_out.close()
        aside = set_aside(plan.report_dir)
        if run.users is not None:                         # other students' feedback: no sandbox user reads it
            os.chmod(aside, 0o700)
        folder_out = class_report.Folder(plan.report_dir)
        keep_private(plan.report_dir)
        feedback = folder_out.sub(class_report.FEEDBACK)
        print(f"Grading every submission again: {why}. The earlier report is kept in {aside}")
    kept = {"fresh_seed": run.fresh_seed, "check": seed_check(plan.course, run.fresh_seed), "seed": run.fresh_seed,
            "course": plan.course.to_toml(), "grader": class_report.grader_digest()}
    folder_out.write(STATE, json.dumps(kept) + "\n")
    return folder_out, feedback


def _graded_before(args, plan, run, feedback):
    """({name: results} an earlier run with the same grader key left, [the names still to grade])."""
    payloads = {}
    if not args.regrade:
        payloads = {n: p for n in plan.names for p in [class_report.read_feedback(feedback, n, run.key)]
                    if p is not None}
    todo = [n for n in plan.names if n not in payloads]
    if payloads:
        print(f"Resuming: {len(payloads)} already graded by this grader on these cases (--regrade grades them "
              f"again); {len(todo)} to grade")
    return payloads, todo


def _grade_all(args, plan, run, feedback, payloads, todo, interrupt):
    """Grade ``todo``, each one's feedback recorded (and put in ``payloads``) as it is graded; what this started
    (zygotes, sandbox users, the copies) is gone when it returns, interrupted or not."""
    progress = Progress(len(todo))
    staging = template = None
    try:
        reaper.become_subreaper()
        template = zygotes.Template(run.python) if todo and zygotes.enabled() else None   # forks each one's zygote
        limits = cli.limits_of(args)
        loaded = grade.references(plan.parts, run.fresh_seed, run.solution, limits, run.jobs, run.python) \
            if todo else None
        staging = staging_folder()
        os.chmod(staging, 0o711)                          # others may pass through, to their own copy alone
        prepared = prepare(plan.folder, [] if interrupt else todo, staging, interrupt, run.base, run.jobs)
        at_once = run.jobs if run.users is None else min(run.jobs, len(run.users.users))   # one per user at most
        options = dict(child=childspec.ChildSpec(None, limits, python=run.python),
                       jobs=parts_at_once(run.jobs, at_once), loaded=loaded, template=template,
                       gate=fairness.Gate(), reference_cells=run.cells)
        one = _grader(plan, run, prepared, options, feedback, payloads, progress, interrupt)
        with concurrent.futures.ThreadPoolExecutor(max_workers=at_once) as pool:
            list(pool.map(one, todo))
    finally:
        if template is not None:
            template.close()
        reaper.end_orphans()
        if run.users is not None:
            run.users.close()
        if staging is not None:
            tree.remove(staging)


def _grader(plan, run, prepared, options, feedback, payloads, progress, interrupt):
    """What a pool's thread calls with a submission's name: grade it (``grade_one``) and record its feedback."""
    lock = threading.Lock()

    def one(name):
        if interrupt or name not in prepared:
            return
        start = time.monotonic()
        located, copy = prepared[name]
        results, reason = grade_one(located, copy, plan.parts, run.users, **options)
        if interrupt:                                     # graded while stopping: not recorded, graded next time
            return
        for result in results:
            if result.alone:
                print(f"note: {_short(name, 30)}: part {result.part.number} {result.why_alone}; "
                      "graded again alone", file=sys.stderr, flush=True)
        with lock:
            payloads[name] = record(feedback, plan.course, located, results, reason, time.monotonic() - start,
                                    run.key, run.fresh_seed)
        progress.step()
    return one


def _summary(args, plan, folder_out, payloads, compared):
    """The class's tables and report written, a line per submission and where everything is printed; the exit
    status: 0 when every submission has its row."""
    class_rows = class_report.write_class(folder_out, plan.names, payloads, plan.course, plan.roster, plan.matching,
                                          compared=compared)
    if args.csv:
        with open(args.csv, "wb") as f:
            f.write(folder_out.read("scores.csv"))
    for row in class_rows:
        room = 80 - 30 - 1 - 7 - 2 - len(row["problem"]) - 2          # the row fits 80 columns
        why = f"  {row['problem']}: {_short(row['detail'], room)}" if row["problem"] else ""
        print(f"{_short(row['name'], 30):<30} {row['total']:>7.2f}{why}")
    _print_where(plan, class_rows)
    return 0 if len(class_rows) == len(plan.names) else 1


def _print_where(plan, class_rows):
    """How many rows were written for how many submissions, where each table is, and the roster's matching."""
    report_dir, the_roster, matching = plan.report_dir, plan.roster, plan.matching
    print(f"{_count(len(plan.names), 'submission')} found, {_count(len(class_rows), 'row')} written:\n"
          f"  scores     {os.path.join(report_dir, 'scores.csv')}\n"
          f"  feedback   {os.path.join(report_dir, class_report.FEEDBACK)}\n"
          f"  the class  {os.path.join(report_dir, 'report.md')} (its histogram: totals.svg)\n"
          f"  gradebook  {os.path.join(report_dir, 'gradebook.csv')} " + (
              "(Canvas's gradebook import)" if the_roster is None or the_roster.kind == "canvas" else
              "(the roster's students and ids)") +
          f"\n  mistakes   {os.path.join(report_dir, 'mistakes.csv')} (each submission's hints and first wrong "
          "quantities, per part)")
    if matching is not None:
        print(f"  roster     {len(matching.graded)} of {len(the_roster.students)} students matched; "
              f"{_count(len(matching.unmatched), 'submission')} matching no student, "
              f"{_count(len(matching.without), 'student')} with none (report.md lists them)")
        warning = roster.new_column_warning(the_roster, plan.course.title)
        if warning:
            print(f"Warning: {warning}.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
