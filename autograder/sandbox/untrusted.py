"""Making what a child sent safe to show: bounded, printable, valid UTF-8, of the types the grader expects.

Every string a child produces (an error, a location, a type name, its printed output) reaches the terminal and
the results file only through ``text``: cut to a few KB, lone surrogates and undecodable bytes replaced, and
control and formatting characters (terminal escapes, right-to-left overrides) replaced by '?', keeping
newlines and tabs (``line``: those too, for a name or a one-line message). ``reports`` applies it to the
per-case reports, whatever fields the driver adds, and ``line`` to every field but the error.
None of these functions raises on any input.
"""
TEXT_LIMIT = 2000                # one error, location or name
OUTPUT_TAIL = 4000               # the end of what a child printed, in bytes
DEPTH_LIMIT = 6
ITEMS_LIMIT = 1000               # entries of one list or dict in a report
ALLOWED = "\n\t"
_ALLOWED_AS_SPACES = str.maketrans(ALLOWED, " " * len(ALLOWED))


def text(value, limit=TEXT_LIMIT):
    """``value`` as printable, valid UTF-8 text of at most ``limit`` characters (plus a note of what was cut)."""
    if type(value) is not str:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, str):
            value = str.__str__(value)                    # a str subclass: its plain characters only
        else:
            return f"<{type(value).__name__}>"
    cut = len(value) - limit
    value = value[:limit].encode("utf-8", "replace").decode("utf-8")      # lone surrogates become '?'
    if not value.translate(_ALLOWED_AS_SPACES).isprintable():                # the common case: all printable
        value = "".join(c if c.isprintable() or c in ALLOWED else "?" for c in value)
    return value + (f" … ({cut} more characters)" if cut > 0 else "")


def line(value, limit=TEXT_LIMIT):
    """``value`` as ``text`` gives it, on one line: newlines and tabs become '?' too. For what is shown in a
    row or a one-line message (a submission's name, an archive's, a reason), where a newline from a student
    would start a line that looks like the grader's."""
    value = text(value, limit)
    return value.replace("\n", "?").replace("\t", "?") if "\n" in value or "\t" in value else value


def output_tail(data):
    """The printable end of a child's output bytes."""
    return text(bytes(data[-OUTPUT_TAIL:]).decode("utf-8", "replace"), OUTPUT_TAIL)


def value(item, depth=0):
    """Any JSON value, with every string cleaned, containers bounded and nesting cut at DEPTH_LIMIT."""
    if item is None or type(item) in (bool, int, float):
        return item
    if isinstance(item, str):
        return text(item)
    if depth >= DEPTH_LIMIT:
        return "…"
    if isinstance(item, list):
        return [value(v, depth + 1) for v in item[:ITEMS_LIMIT]]
    if isinstance(item, dict):
        return {text(k, 200): value(v, depth + 1) for k, v in list(item.items())[:ITEMS_LIMIT]}
    return text(item)


def _one_line(item):
    """``item`` (cleaned by ``value``) with every string in it on one line."""
    if isinstance(item, str):
        return line(item, len(item))
    if isinstance(item, list):
        return [_one_line(v) for v in item]
    if isinstance(item, dict):
        return {k: _one_line(v) for k, v in item.items()}
    return item


def reports(items, cases):
    """The per-case reports as the grader expects them: ``cases`` dicts whose status, error and where are
    strings, types a dict of strings and mutated a list of strings (a traced case's ``trace`` is left as
    it came, for ``matching.parse``, which checks all of it). Raises ValueError if it cannot be that."""
    if not isinstance(items, list) or len(items) != cases or not all(isinstance(r, dict) for r in items):
        raise ValueError("the report does not describe every case")
    cleaned = []
    for report in items:
        r = value({k: v for k, v in report.items() if k != "trace"})      # a trace is large, and taken raw
        for key in ("status", "error", "where"):
            if not isinstance(r.get(key, ""), str):
                raise ValueError(f"a case report's {key} is not text")
        if not isinstance(r.get("types", {}), dict) or not isinstance(r.get("mutated", []), list):
            raise ValueError("a case report is malformed")
        r["types"] = {k: text(v) for k, v in r.get("types", {}).items()}
        r["mutated"] = [text(m) for m in r.get("mutated", [])]
        r = {k: v if k == "error" else _one_line(v) for k, v in r.items()}   # an error's lines are indented
        r["trace"] = report.get("trace")                  # raw: only matching.parse reads it, and checks it
        cleaned.append(r)
    return cleaned
