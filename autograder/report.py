"""The score table printed to the terminal, and the results file in Gradescope's format."""
import json
import os
import tempfile

from autograder import spec


def table(results, total_seconds=None, verbose=False):
    """A table: section, part, score/max; failing parts' messages (every part's with verbose) above it."""
    lines, width = [], 44
    for r in results:
        if (verbose or r.status in ("failed", "error")) and r.output:
            lines += [f"── {r.part.number} {r.part.name}: {r.status} ".ljust(78, "─"), r.output, ""]
    lines += [f"{'#':<5}{'Part':<{width}}{'Score':>12}", "─" * (width + 17)]
    section = None
    for r in results:
        number = r.part.number.split(".")[0]
        if number != section:
            section = number
            lines.append(f"{number:<5}{spec.SECTIONS[number]}")
        mark = {"passed": "", "failed": "  ✗", "not implemented": "  (not implemented yet)", "error": "  ✗ error"}[r.status]
        lines.append(f"{r.part.number:<5}  {r.part.name:<{width - 2}}{r.score:>7.2f}/{r.part.points:<4}{mark}")
    lines.append("─" * (width + 17))
    score, maximum = total(results)
    timing = f"  ({total_seconds:.1f} s)" if total_seconds is not None else ""
    lines.append(f"{'':<5}{'Total':<{width}}{score:>7.2f}/{maximum:<4}{timing}")
    return "\n".join(lines)


def total(results):
    return round(sum(r.score for r in results), 2), sum(r.part.points for r in results)


def gradescope(results, seconds):
    """Gradescope's results.json: score, execution_time, output, and one test per part."""
    score, maximum = total(results)
    return {
        "score": score,
        "execution_time": round(seconds, 3),
        "output": f"mytorch autograder: {score:g}/{maximum} points",
        "stdout_visibility": "hidden",
        "tests": [{"name": f"{r.part.number} {r.part.name}", "number": r.part.number, "score": r.score,
                   "max_score": float(r.part.points), "status": "passed" if r.passed else "failed",
                   "output": r.output if not r.passed else "all cases passed", "visibility": "visible"}
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
