"""Which of your graded parts a notebook runs, which of them are still TODOs, and checks that say what differs.

    from needs import needs
    needs("1.1", "1.2", "6.1")        # prints what is missing, and stops the notebook there if anything is

Each section of a notebook calls ``needs`` with the parts its own cells run, so a notebook runs as far as
the parts written so far take it. ``check("dW_hh", got, want)`` prints one line per array ("dW_hh: max rel
error 3.1e-12 ✓") and stops the notebook with what differs (shape, where, by how much) when they disagree;
``expect(condition, message)`` does the same for a check that is not an array comparison. An exercise left
as a TODO in a notebook stops with ``raise todo("what to write")``, in the same plain words.

Each part is tried on a tiny input; a part whose code still raises ``NotImplementedError`` (a TODO not written
yet) is missing. Nothing here grades anything: a part that runs may still be wrong, and
``python -m autograder`` is the judge. This file imports only numpy and your ``mytorch``, never the grader.

A notebook's first cell finds this file where the notebook runs, in a folder above or one folder down, and
imports it. Imported so, it puts the ``mytorch`` beside ``notebooks/`` first on ``sys.path`` (the notebook
runs the code it came with, installed or not), and if the notebook's Python still cannot import ``mytorch``,
numpy or matplotlib, it stops with what to do instead of a traceback.
"""
import importlib.util
import os
import sys

COURSE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))      # the folder that holds notebooks/


class NotReady(Exception):
    """This notebook's Python cannot import what the course needs; the message says what to do. Jupyter
    (IPython) shows the message alone, not a traceback."""

    def _render_traceback_(self):
        return str(self).split("\n")


def ready():
    """The course's ``mytorch`` first on ``sys.path``, and a plain stop if mytorch, numpy or matplotlib is
    still missing."""
    beside = os.path.isfile(os.path.join(COURSE, "mytorch", "__init__.py"))
    if beside and sys.path[:1] != [COURSE]:
        sys.path.insert(0, COURSE)
    absent = [name for name in ("mytorch", "numpy", "matplotlib") if importlib.util.find_spec(name) is None]
    if not absent:
        return
    folder = COURSE if beside else "FOLDER"
    lines = [f"This notebook's Python cannot import {' or '.join(absent)}.",
             "Install the course into it by running this in a cell:", f'    %pip install -e "{folder}"']
    if not beside:
        lines.append("(FOLDER: the course's folder, the one that holds mytorch/ and setup.py)")
    lines += ["then restart the kernel (Colab: Runtime > Restart session) and run the notebook again:",
              "a running kernel sees an editable install only after it restarts."]
    if not beside:
        lines += ["Or put this notebooks/ folder back in the course's folder, beside its mytorch/, and open",
                  "the notebook from there: mytorch then needs no install."]
    lines.append(f"This notebook's Python: {sys.executable}")
    raise NotReady("\n".join(lines))


if __name__ == "needs":             # a notebook's `from needs import needs` (the handout's builder loads this file
    ready()                         # under another name, only for part_ranges)


# NumPy is imported only when a part is tried, never by `from needs import needs`: notebook 10 sets its BLAS
# threads after that import, and NumPy reads them when it loads.
def _x():
    import numpy as np
    return np.linspace(-1.0, 1.0, 6).reshape(2, 3)       # N = 2, I = 3


def _cell(name, backward, **kwargs):
    def probe():
        import numpy as np

        import mytorch.nn as nn
        X = _x()
        cell = getattr(nn, name)(3, 4, rng=0, **kwargs)
        state = cell.forward(X)
        if backward:
            cell.backward(tuple(np.ones_like(s) for s in state) if isinstance(state, tuple) else np.ones_like(state))
    return probe


def _layer(name, **kwargs):
    def probe():
        import numpy as np

        import mytorch.nn as nn
        X = _x()
        layer = getattr(nn, name)(3, 4, num_layers=2, rng=0, **kwargs)
        layer.fast_path = False
        Y, _ = layer.forward(np.stack([X, X, X]), **({"lengths": np.array([3, 1])} if kwargs else {}))
        layer.backward(np.ones_like(Y))
    return probe


def _ctc(step):
    def probe():
        import numpy as np

        from mytorch.nn import ctc, ctc_decode
        from mytorch.nn.ctc_course import CTC, CTCLoss
        y = np.full((4, 3), 1.0 / 3.0)
        target = np.array([1, 2])
        if step == "extend":
            ctc.extend_target(target, 0)
        elif step in ("alpha", "beta", "gamma"):
            course = CTC()
            ext, skip = np.array([0, 1, 0, 2, 0]), np.array([0, 0, 0, 1, 0])
            alpha = course.get_forward_probs(y, ext, skip)
            if step != "alpha":
                beta = course.get_backward_probs(y, ext, skip)
                if step == "gamma":
                    course.get_posterior_probs(alpha, beta)
        elif step in ("loss", "loss backward"):
            loss = CTCLoss()
            loss(y[:, None], target[None], np.array([4]), np.array([2]))
            if step == "loss backward":
                loss.backward()
        elif step == "greedy":
            ctc_decode.collapse((1, 1, 0, 2))
        elif step == "beam":
            from mytorch.nn import beam_search
            beam_search(np.log(y), beam_width=2)
        elif step == "torch":
            from mytorch.nn import CTCLoss as TorchCTCLoss
            loss = TorchCTCLoss()
            loss(np.log(y)[:, None], target[None], np.array([4]), np.array([2]))
            loss.backward()
    return probe


def _fast(name):
    def probe():
        import numpy as np

        import mytorch.nn as nn
        X = _x()
        cell = getattr(nn, name)(3, 4, rng=0)
        Y, state = cell.sequence_forward(np.stack([X, X]), None)
        cell.sequence_backward(np.ones_like(Y), None)
    return probe


PROBES = {
    "1.1": _cell("RNNCell", False), "1.2": _cell("RNNCell", True),
    "2.1": _cell("GRUCell", False), "2.2": _cell("GRUCell", True),
    "3.1": _cell("GRUBlockCell", False), "3.2": _cell("GRUBlockCell", True),
    "4.1": _cell("GMUCell", False), "4.2": _cell("GMUCell", True),
    "5.1": _cell("TGRUCell", False), "5.2": _cell("TGRUCell", True),
    "6.1": _layer("RNN"), "6.2": _layer("GRU"), "6.3": _layer("GRUBlock"), "6.4": _layer("GMU"), "6.5": _layer("TGRU"),
    "7.1": _cell("LSTMCell", False), "7.2": _cell("LSTMCell", True), "7.3": _layer("LSTM", bidirectional=True),
    "8.1": _ctc("extend"), "8.2": _ctc("alpha"), "8.3": _ctc("beta"), "8.4": _ctc("gamma"), "8.5": _ctc("loss"),
    "8.6": _ctc("loss backward"), "8.7": _ctc("greedy"), "8.8": _ctc("beam"), "8.9": _ctc("torch"),
}
OPTIONAL = {"GRUCell fast path": _fast("GRUCell")}      # not graded: notebook 10 builds it


def part_ranges(parts):
    """'1.1-1.2, 6.1': consecutive parts of one section joined (the handout's builder uses it too)."""
    groups = []
    for part in parts:
        section, number = part.split(".")
        if groups and groups[-1][0] == section and int(number) == groups[-1][2] + 1:
            groups[-1][2] = int(number)
        else:
            groups.append([section, int(number), int(number)])
    return ", ".join(f"{s}.{a}" if a == b else f"{s}.{a}-{s}.{b}" for s, a, b in groups)


class Stop(Exception):
    """A plain stop: Jupyter (IPython) shows the message alone, not a traceback into this file."""

    heading = None

    def _render_traceback_(self):
        return ([self.heading] if self.heading else []) + [f"  {line}" for line in str(self).split("\n")]


class NotWritten(Stop, NotImplementedError):
    """An exercise of this notebook is still a TODO (the message says what to write in it)."""

    heading = "The notebook stops here until you write this cell's exercise:"


def todo(what):
    """The stop a notebook exercise's TODO raises: ``raise todo("rnn_step_backward: compute da")``."""
    return NotWritten(what)


class CheckFailed(Stop, AssertionError):
    """A check of this notebook disagrees (the message says what, where and by how much)."""

    heading = "A check failed; the notebook stops here:"


def _where(index):
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def check(name, got, want, tol=1e-10):
    """Print ``name: max rel error …`` and stop with what differs unless ``got`` matches ``want``.

    The error is the largest |got − want| over the largest |want| (the absolute difference when ``want`` is
    all zeros); ``got`` and ``want`` are arrays (or anything NumPy makes one of) of the same shape."""
    import numpy as np
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        raise CheckFailed(f"{name} has shape {got.shape}, but should have shape {want.shape}: compare how "
                          "each axis is made")
    if not np.isfinite(got).all():
        bad = np.argwhere(~np.isfinite(got))[0]
        raise CheckFailed(f"{name} holds {got[tuple(bad)]} at {_where(bad)} ({int((~np.isfinite(got)).sum())} "
                          "entries not finite): look for an overflow or a division by zero")
    scale = float(np.abs(want).max()) if want.size else 0.0
    diff = np.abs(got - want)
    error = float(diff.max()) / (scale if scale > 0 else 1.0) if diff.size else 0.0
    kind = "max rel error" if scale > 0 else "max abs error"            # against zeros: the difference itself
    if error <= tol:
        print(f"{name}: {kind} {error:.1e} ✓")
        return error
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    raise CheckFailed(f"{name}: {kind} {error:.1e}, above the tolerance {tol:.0e}\n"
                      f"the largest difference is at {_where(at)}: {got[at]:.6g} where {want[at]:.6g} is expected "
                      f"(off by {diff[at]:.2e}); {int((diff > tol * (scale or 1.0)).sum())} of {diff.size} entries "
                      "differ")


def check_below(name, value, limit):
    """Print ``name: 1.2e-09 ✓`` and stop unless the number ``value`` is below ``limit``."""
    value = float(value)
    if value < limit:
        print(f"{name}: {value:.1e} ✓ (below {limit:.0e})")
        return value
    raise CheckFailed(f"{name} is {value:.2e}, which should be below {limit:.0e}")


def check_errors(errors, limit=1e-6, title="finite differences"):
    """A relative error per parameter or input (as ``mytorch.gradcheck`` returns them): one line each, and a
    stop naming every one at or above ``limit``."""
    for name, value in errors.items():
        print(f"{title}, {name}: rel error {value:.1e} {'✓' if value < limit else '✗'}")
    wrong = [name for name, value in errors.items() if not value < limit]
    if wrong:
        raise CheckFailed(f"{title}: {', '.join(wrong)} off by a relative error of {limit:.0e} or more: the "
                          "gradients of these disagree with the change the loss really makes")


def expect(condition, message):
    """Stop with ``message`` (what is wrong, and what to look at) unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(message)


class MissingParts(Exception):
    """Parts this notebook runs are still TODOs (the message says which, and how to grade them).

    Nothing is broken, so Jupyter (IPython) shows the message alone, not a traceback into this file."""

    def _render_traceback_(self):
        return ["The notebook stops here until you write what it runs:"] + [f"  {line}" for line in str(self).split("\n")]


def missing(*parts):
    """The parts (and optional pieces) among ``parts`` whose code still raises NotImplementedError."""
    absent = []
    for part in parts:
        try:
            (PROBES.get(part) or OPTIONAL[part])()
        except NotImplementedError:
            absent.append(part)
        except Exception:                   # implemented, though perhaps wrong: the grader says
            pass
    return absent


def needs(*parts):
    """Stop the notebook with a clear message if any of ``parts`` is still a TODO: a section's first cell
    names the parts its own cells run, so the notebook runs as far as the parts written so far take it."""
    absent = missing(*parts)
    graded = sorted((p for p in absent if p in PROBES), key=lambda p: tuple(map(int, p.split("."))))
    optional = [p for p in absent if p not in PROBES]
    if not absent:
        print(f"this section runs parts {part_ranges([p for p in parts if p in PROBES])}"
              + (f" and the optional {', '.join(p for p in parts if p in OPTIONAL)}" if set(parts) & set(OPTIONAL)
                 else "") + ": all written")
        return
    lines = []
    if graded:
        sections = sorted({p.split(".")[0] for p in graded}, key=int)
        lines.append(f"this section needs parts {part_ranges(graded)}; run `python -m autograder {' '.join(sections)}`")
    for piece in optional:
        lines.append(f"this section needs the {piece} (optional, not graded: its TODOs are sequence_forward and "
                     "sequence_backward)")
    raise MissingParts("\n".join(lines))
