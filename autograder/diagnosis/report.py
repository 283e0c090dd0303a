"""The score table, the console it is printed on, progress while parts run, and Gradescope's results file.

``Console`` makes any text fit where it goes: every line wrapped to the terminal's width (80 when not a
terminal), colour only on a terminal and never with ``NO_COLOR`` set, and characters the stream's encoding
cannot hold (σ ⊙ ─ ✗ … on a cp1252 or ASCII stdout) spelled in ASCII, so printing never raises.
"""
import html
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import textwrap
import threading

from autograder.parts import spec

# what a character becomes on a stream whose encoding lacks it
ASCII = {"σ": "sigma", "⊙": "*", "∘": "*", "─": "-", "✗": "x", "…": "...", "ᵀ": "^T", "−": "-",
         "→": "->", "′": "'", "≤": "<=", "≥": ">=", "·": ".", "×": "x", "∑": "sum", "Σ": "sum", "²": "^2",
         "₁": "1", "₂": "2", "\u0304": "", "≈": "~"}
COLOURS = {"red": "31", "green": "32", "yellow": "33", "bold": "1"}


class Console:
    """A text stream with a width, a colour switch and an encoding; ``print`` wraps, colours and spells."""

    def __init__(self, stream=None, environ=None):
        self.stream = stream if stream is not None else sys.stdout
        environ = os.environ if environ is None else environ
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.tty = tty
        self.width = max(40, shutil.get_terminal_size((80, 24)).columns) if tty else 80
        self.colour = tty and "NO_COLOR" not in environ and environ.get("TERM") != "dumb"
        self.encoding = getattr(self.stream, "encoding", None) or "ascii"

    def spell(self, text):
        """``text`` with every character the encoding cannot hold spelled in ASCII (or '?')."""
        try:
            text.encode(self.encoding)
            return text
        except (UnicodeEncodeError, LookupError):
            pass
        out = []
        for ch in text:
            try:
                ch.encode(self.encoding)
                out.append(ch)
            except (UnicodeEncodeError, LookupError):
                out.append(ASCII.get(ch, "?"))
        return "".join(out)

    def wrap(self, text):
        """Every line at most ``width`` characters; continuation lines indented under their first word."""
        lines = []
        for line in text.split("\n"):
            if len(line) <= self.width:
                lines.append(line)
                continue
            indent = len(line) - len(line.lstrip(" "))
            hang = indent + (6 if line.lstrip().startswith("Hint: ") else 2)
            lines += textwrap.wrap(line.strip(), self.width, initial_indent=" " * indent,
                                   subsequent_indent=" " * min(hang, self.width // 2), break_on_hyphens=False)
        return "\n".join(lines)

    def paint(self, text):
        """Colour on a terminal: failures red, passes green, hints yellow, headings bold."""
        if not self.colour:
            return text
        def c(name, s):
            return f"\033[{COLOURS[name]}m{s}\033[0m"
        text = re.sub(r"^(\s*)(Hint:)", lambda m: m.group(1) + c("yellow", m.group(2)), text, flags=re.M)
        text = re.sub(r"(✗( error)?|\bfailed\b|x error)", lambda m: c("red", m.group(1)), text)
        text = re.sub(r"(: passed\b|\bpassed$)", lambda m: c("green", m.group(1)), text, flags=re.M)
        return re.sub(r"^(─+ .*|\s*Total .*)$", lambda m: c("bold", m.group(1)), text, flags=re.M)

    def print(self, text=""):
        self.stream.write(self.paint(self.wrap(self.spell(text))) + "\n")
        self.stream.flush()


class Progress:
    """One line per finished part on ``console`` (a live line, rewritten in place, on a terminal).

    Parts are graded in parallel and finish in any order; with ``order`` (the part numbers as the table lists
    them) each line waits for the parts before it, so the lines come in part order."""

    def __init__(self, console, total, order=None):
        self.console, self.total, self.done = console, total, 0
        self.order, self.waiting = list(order or ()), {}
        self.lock = threading.Lock()

    def __call__(self, result):
        with self.lock:
            if result.part.number not in self.order:
                self._show(result)
                return
            self.waiting[result.part.number] = result
            while self.order and self.order[0] in self.waiting:
                self._show(self.waiting.pop(self.order.pop(0)))

    def _show(self, result):
        self.done += 1
        mark = {"passed": "", "failed": "  ✗", "not implemented": "  (not implemented yet)",
                "error": "  ✗ error"}.get(result.status, "")
        line = (f"[{self.done}/{self.total}] {result.part.number} {result.part.name}: "
                f"{result.score:g}/{result.part.points:g}{mark}")
        line = self.console.spell(line)[:self.console.width - 1]
        if self.console.tty:
            self.console.stream.write("\r\033[K" + line)
            self.console.stream.flush()
        else:
            self.console.print(line)

    def finish(self):
        if self.console.tty and self.done:
            self.console.stream.write("\r\033[K")
            self.console.stream.flush()


def table(results, total_seconds=None, verbose=False, width=78, messages=True, with_total=True, local=True):
    """A table: section, part, score/max; failing parts' messages (every part's with verbose) above it, unless
    not ``messages``; the total below it, unless not ``with_total``. Not ``local``: for a student who reads it
    on a platform (Autolab shows what the grader prints), without advice to run the grader with other options."""
    # the name column as wide as the longest name (so a row with its mark fits 80 columns), at least 'Total'
    rule, lines = width, []
    width = min(max([len(r.part.name) + 4 for r in results] + [12]), max(rule - 40, 12))
    for r in results:
        shown = r.status in ("failed", "error") or r.output.startswith(spec.WAITS_ON_A_CELL)   # its cell's TODO
        if messages and (verbose or shown) and r.output:
            lines += [f"── {r.part.number} {r.part.name}: {r.status} ".ljust(rule, "─"),
                      r.output if local else LOCAL_ONLY.sub("", r.output), ""]
    lines += [f"{'#':<5}{'Part':<{width}}{'Score':>12}", "─" * (width + 17)]
    section = None
    for r in results:
        number = r.part.number.split(".")[0]
        if number != section:
            section = number
            lines.append(f"{number:<5}{spec.SECTIONS[number]}")
        mark = {"passed": "", "failed": "  ✗", "not implemented": "  (not implemented yet)",
                "error": "  ✗ error"}[r.status]
        name = r.part.name if len(r.part.name) <= width - 3 else r.part.name[:width - 4] + "…"
        lines.append(f"{r.part.number:<5}  {name:<{width - 2}}{r.score:>7.2f}/{r.part.points:<4g}{mark}")
    lines.append("─" * (width + 17))
    if with_total:
        score, maximum = total(results)
        timing = f"  ({total_seconds:.1f} s)" if total_seconds is not None else ""
        lines.append(f"{'':<5}{'Total':<{width}}{score:>7.2f}/{maximum:<4g}{timing}")
    return "\n".join(lines)


def total(results):
    return round(sum(r.score for r in results), 2), sum(r.part.points for r in results)


LOCAL_ONLY = re.compile(r" ?\(--verbose shows all\)")       # advice a Gradescope student cannot follow


def _formatted(text, output_format):
    """``text`` for Gradescope's ``output_format``: md in a fenced block (columns stay aligned), ansi coloured."""
    text = LOCAL_ONLY.sub("", text)
    if output_format == "md":
        # a fence longer than any run of backticks in the text: only a line of as many ends it (CommonMark)
        fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
        return f"{fence}text\n{text}\n{fence}"
    if output_format == "ansi":
        console = Console(io.StringIO(), environ={})
        console.colour = True
        return console.paint(text)
    if output_format in ("html", "simple_format"):
        return html.escape(text)
    return text


def gradescope(results, seconds, settings=None, notes=(), extra=None):
    """Gradescope's results.json (its "Autograder Specifications"): the score, the score table as the top-level
    ``output``, one test per part with its ``visibility`` (``settings``: a ``course.Gradescope``; default every
    test visible, Markdown), a ``tags`` entry naming its section and ``extra_data`` with its status and the hints
    that fired. ``notes``: problems for the course staff alone (a missing ``student`` user, a fallback), kept in
    the top-level ``extra_data``, which students never see. ``extra``: more top-level ``extra_data``.

    Students see the top-level ``output`` at once, whatever the tests' visibility: it holds the rows of the
    visible parts alone, and no total when any part is not visible (Gradescope then hides the total score
    from students too: "If test cases are hidden, students will not be able to see their total score")."""
    from autograder.parts.course import Gradescope
    settings = settings or Gradescope()
    fmt = settings.output_format
    score, maximum = total(results)
    shown = [r for r in results if settings.visibility_of(r.part.number) == "visible"]
    summary = table(shown, messages=False, with_total=len(shown) == len(results)) if shown else ""
    if len(shown) < len(results):
        later = len(results) - len(shown)
        summary += ("\n\n" if summary else "") + (f"{later} part{'s' if later > 1 else ''} and the total are "
                                                   "shown when the course releases them.")
    fired = {}
    for r in results:
        for hint in r.hints:
            fired.setdefault(hint, []).append(r.part.number)
    return {
        "score": score,
        "execution_time": math.ceil(seconds),                # whole seconds, as the specification's example
        "output": _formatted(summary, fmt),
        "output_format": fmt,
        "test_output_format": fmt,
        "test_name_format": "text",
        "stdout_visibility": "hidden",
        "extra_data": dict(extra or {}, max_score=maximum, hints=fired, instructor_notes=list(notes)),
        "tests": [{"name": f"{r.part.number} {r.part.name}", "name_format": "text", "number": r.part.number,
                   "score": r.score, "max_score": float(r.part.points),
                   "status": "passed" if r.passed else "failed",
                   "output": _formatted(r.output if not r.passed else "all cases passed", fmt),
                   "output_format": fmt, "tags": [f"section {r.part.number.split('.')[0]}",
                                                  spec.SECTIONS[r.part.number.split(".")[0]]],
                   "visibility": settings.visibility_of(r.part.number),
                   "extra_data": {"status": r.status, "hints": list(r.hints), "seconds": round(r.seconds, 3)}}
                  for r in results],
    }


def write_json(path, payload):
    """Write ``payload`` to ``path`` atomically (a half-written results file is never left behind)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".results-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
