"""Runs one part's cases against a ``mytorch`` package, inside the child process, and reports plain data.

This is the only grader code that touches a submission. It is loaded by file path in the child; the grading
process reads only its tables of provided code (it never runs a case). It computes nothing itself: it builds
the cell or layer, feeds the case's inputs, and collects what comes back (plus what kind of object each value
was, which inputs or parameters were changed in place, and where an error was raised). Judging happens in the
parent.
"""
import contextlib
import importlib.util
import io
import json
import linecache
import os
import sys
import tokenize
import traceback
import warnings

import numpy as np


def _grader_module(package, name):
    """A module of the grader's, loaded by path (as the child's worker loads this one: before student code)."""
    grader = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(f"_autograder_{name}", os.path.join(grader, package, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


places = _grader_module("diagnosis", "places")          # where a student's BPTT decides what a recognised mistake changes

COURSE = ("Wrx", "Wzx", "Wnx", "Wrh", "Wzh", "Wnh", "brx", "bzx", "bnx", "brh", "bzh", "bnh")


def describe(value):
    """What kind of object ``value`` is, in words a student recognises."""
    t = type(value)
    if t is np.ndarray:
        return f"numpy.ndarray of dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"{t.__module__}.{t.__qualname__} (a subclass of numpy.ndarray)"
    return f"{t.__module__}.{t.__qualname__}".replace("builtins.", "")


class Recorder:
    """Collects one case's outputs: plain numeric ndarrays are kept, everything else is described."""

    def __init__(self):
        self.arrays, self.types = {}, {}

    def put(self, name, value):
        self.types[name] = describe(value)
        if type(value) is np.ndarray and value.dtype.kind in "fiub":
            self.arrays[name] = value.copy()

    def put_state(self, prefix, names, state):
        parts = state if isinstance(state, tuple) and len(names) > 1 else (state,)
        if len(parts) != len(names):
            self.types[prefix] = f"{describe(state)} of length {len(parts)}, expected {len(names)} parts"
            return
        for name, part in zip(names, parts):
            self.put(f"{prefix}{name}", part)


def _state(inputs, prefix, count):
    parts = tuple(inputs.get(f"{prefix}/{k}") for k in range(count))
    if all(p is None for p in parts):
        return None
    return parts[0] if count == 1 else parts


def _params(inputs):
    return {k[len("param/"):]: v for k, v in inputs.items() if k.startswith("param/")}


def _check_unchanged(module_params, params, out):
    for name, value in params.items():
        if name in module_params and not np.array_equal(module_params[name], value):
            out.mutated.append(f"parameter {name}")


def cell_case(mytorch, config, inputs, out):
    cls = getattr(mytorch.nn, config["cell"])
    names = config["states"]
    cell = cls(config["I"], config["H"], **config["flags"])
    params = _params(inputs)
    if config["interface"] == "course":
        H = config["H"]
        pieces = [params[f"weight_{side}"][k * H:(k + 1) * H] for side in ("ih", "hh") for k in range(3)]
        pieces += [params[f"bias_{side}"][k * H:(k + 1) * H] for side in ("ih", "hh") for k in range(3)]
        cell.init_weights(*[p.copy() for p in pieces])
    else:
        cell.load_state_dict({k: v.copy() for k, v in params.items()})
    state = _state(inputs, "state", len(names))
    for step in range(config["steps"]):
        state = cell.forward(inputs["x"][step], state)
    if config["kind"] == "forward":
        out.record.put_state("", [f"{n}_t" for n in names], state)
        for attr in config["exposed"] + (["x", "hidden"] if config["interface"] == "course" else []):
            out.record.put(attr, getattr(cell, attr, None))
    if config["cell"] == "GRUBlockCell" and config["kind"] == "forward":
        # the op is 2-D only; the case's own arrays are passed, so a change made in place is seen
        x, h = np.atleast_2d(inputs["x"][0]), np.atleast_2d(inputs["state/0"])
        for name, value in zip(("r", "u", "c", "h"), mytorch.nn.gru_block_cell(x, h, **params)):
            out.record.put(f"op/{name}", value)
    _check_unchanged(cell.params, params, out)
    if config["kind"] != "backward":
        return
    d_future, dxs, steps = None, [], config["steps"]
    for step in reversed(range(steps)):
        upstream = [inputs[f"d_state/{k}"][step] for k in range(len(names))]
        if step < steps - 1:                 # what the backward of step + 1 returned joins this step's
            carried = tuple(d_future) if isinstance(d_future, (tuple, list)) else (d_future,)
            _check_carried(cell, names, carried, upstream, step + 1, steps)
            upstream = [u + c for u, c in zip(upstream, carried)]
        d_state = tuple(upstream) if len(names) > 1 else upstream[0]
        given = [u.copy() for u in upstream]
        dx, d_future = cell.backward(d_state)
        out.mutated += [f"d_state[{k}] ({n}) given to backward at step {step + 1}"     # (the case's own inputs:
                        for k, (n, u, g) in enumerate(zip(names, upstream, given))       # after the case)
                        if not np.array_equal(u, g)]
        dxs.append(dx)
        if steps > 1 and config.get("record_steps"):    # the generator's run: what each call added
            for name in params:
                out.record.put(f"after_step/{step}/grad/{name}", cell.grads.get(name))
    _put_steps(out.record, "dx", dxs[::-1])
    out.record.put_state("d", [f"{n}_prev" for n in names], d_future)
    for name in params:
        out.record.put(f"grad/{name}", cell.grads.get(name))
    if config["interface"] == "course":
        for alias in COURSE:
            out.record.put(f"d{alias}", getattr(cell, f"d{alias}", None))
    if config["cell"] == "GRUBlockCell":
        x, h = np.atleast_2d(inputs["x"][0]), np.atleast_2d(inputs["state/0"])
        op_in = {k: inputs[f"op/{k}"] for k in ("r", "u", "c", "d_h")}
        grads = mytorch.nn.gru_block_cell_grad(x, h, **params, **op_in)
        for name, value in zip(("d_x", "d_h_prev", "d_c_bar", "d_r_bar_u_bar"), grads):
            out.record.put(f"op/{name}", value)
    _check_unchanged(cell.params, params, out)


def _put_steps(record, name, values):
    """One value per backward call, stacked on a leading step axis when every call returned the same kind of
    array; otherwise the first call's value, so its type is reported as the student's call returned it."""
    if all(type(v) is np.ndarray for v in values) and len({v.shape for v in values}) == 1:
        record.put(name, np.stack(values))
    else:
        record.put(name, next((v for v in values if type(v) is not np.ndarray), values[0]))
        record.arrays.pop(name, None)             # one call's value: never mistaken for the stacked array


class WrongShape(ValueError):
    """A value the student's code returned is unusable by the next call; the message says which and why."""


def _check_carried(cell, names, carried, upstream, step, steps):
    """The d_state_prev a backward returned must have the shape of the state its forward was given."""
    if len(carried) != len(names):
        error = WrongShape(f"{type(cell).__name__}.backward (step {step + 1} of {steps}) returned one d_state_prev "
                           f"where a tuple of {len(names)} was expected, ({', '.join('d' + n for n in names)})")
        error.culprit = type(cell).backward
        raise error
    for name, got, like in zip(names, carried, upstream):
        shape = getattr(got, "shape", None)
        if shape != like.shape:
            shown = f"shape {shape}" if shape is not None else f"type {describe(got)}"
            error = WrongShape(
                f"{type(cell).__name__}.backward (step {step + 1} of {steps}) returned d{name}_prev of {shown}, "
                f"expected {like.shape} like the {name} its forward was given; the backward of step {step} "
                "adds it to its own gradient")
            error.culprit = type(cell).backward
            raise error


def _state_form(config):
    """How the layer takes and gives states: 'array' (L·D, N, H), 'tuple' of such arrays, or 'list' of tuples."""
    return config.get("state_form", "array" if len(config["states"]) == 1 else "list")


def _layer_state(inputs, prefix, entries, count, form):
    per_entry = [_state(inputs, f"{prefix}/{k}", count) for k in range(entries)]
    if all(s is None for s in per_entry):
        return None
    if form == "array":
        return np.stack(per_entry)
    if form == "tuple":
        return tuple(np.stack([s[j] for s in per_entry]) for j in range(count))
    return per_entry


def sequence_case(mytorch, config, inputs, out):
    names = config["states"]
    L, form = config["layers"], _state_form(config)
    entries = L * (2 if config.get("bidirectional") else 1)
    options = dict(config["flags"], bidirectional=True) if config.get("bidirectional") else config["flags"]
    layer = getattr(mytorch.nn, config["layer"])(config["I"], config["H"], num_layers=L,
                                                 batch_first=config["batch_first"], **options)
    layer.fast_path = False                             # grade the per-step loop the student wrote
    out.layer = layer
    params = _params(inputs)
    layer.load_state_dict({k: v.copy() for k, v in params.items()})
    lengths = {} if config.get("lengths") is None else {"lengths": np.array(config["lengths"])}
    Y, state_T = layer.forward(inputs["X"], _layer_state(inputs, "state0", entries, len(names), form), **lengths)
    out.record.put("Y", Y)
    _put_layer_state(out, "state_T", names, state_T, entries, form)
    d_state_T = _layer_state(inputs, "d_state_T", entries, len(names), form)
    given = _arrays_of(d_state_T)
    copies = [a.copy() for a in given]
    dX, d_state0 = layer.backward(inputs["dY"], d_state_T)
    if any(not np.array_equal(a, c) for a, c in zip(given, copies)):        # made here: the case's inputs are
        out.mutated.append("d_state_T given to backward")                     # checked after the case
    out.record.put("dX", dX)
    if "state0/0/0" in inputs:
        _put_layer_state(out, "d_state0", names, d_state0, entries, form)
    for name in params:
        out.record.put(f"grad/{name}", layer.grads.get(name))
    _check_unchanged(layer.params, params, out)


def _put_layer_state(out, prefix, names, states, entries, form):
    try:
        if form == "tuple":                             # (h, c), each (L·D, N, ·): entry k is (h[k], c[k])
            per_entry = [tuple(states[j][k] for j in range(len(names))) for k in range(entries)]
        else:
            per_entry = [states[k] for k in range(entries)]
    except Exception:                                   # not indexable by entry
        out.record.put(prefix, states)
        return
    for k, state in enumerate(per_entry):
        out.record.put_state(f"{prefix}/{k}/", names, tuple(state) if len(names) > 1 else state)


# ---- section 8, CTC through CMU 11-785's course interface (mytorch/nn/ctc_course.py)

def _as_number(value):
    """A Python or NumPy scalar (or a one-entry float array) as a float64 array of shape (1,); anything else
    unchanged (the parent judges its type)."""
    if isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool):
        return np.array([float(value)])
    if type(value) is np.ndarray and value.size == 1 and value.dtype.kind == "f":
        return value.astype(np.float64).reshape(1)
    return value


def _as_log(value):
    """The log of a probability, so that the parent's tolerance means a relative one on tiny products of
    probabilities (a path of 20 steps has probability ~1e-9, below any absolute tolerance)."""
    value = _as_number(value)
    if type(value) is np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(value)
    return value


def _as_labels(value):
    """An integer or boolean array as int64 (the course builds these from Python lists); else unchanged."""
    if isinstance(value, (list, tuple)):
        try:
            value = np.array(value)
        except Exception:
            return value
    if type(value) is np.ndarray and value.dtype.kind in "iub":
        return value.astype(np.int64)
    return value


def _encode_path(value, symbol_set, steps):
    """A decoded string as its symbols' indices (a=1, b=2, …; -1 for any other character) padded with 0 to the
    ``steps`` it could at most hold, so that only arrays reach the parent and paths of any length compare."""
    if type(value) is not str or len(value) > steps:
        return value
    codes = [symbol_set.index(ch) + 1 if ch in symbol_set else -1 for ch in value]
    return np.array(codes + [0] * (steps - len(codes)), dtype=np.int64)


def ctc_case(mytorch, config, inputs, out):
    import importlib

    course = importlib.import_module("mytorch.nn.ctc_course")
    task, put = config["task"], out.record.put
    if task == "extend":
        ext, skip = course.CTC(BLANK=config["blank"]).extend_target_with_blank(inputs["target"])
        put("extended_symbols", _as_labels(ext))
        put("skip_connect", _as_labels(skip))
    elif task in ("alpha", "beta"):
        method = "get_forward_probs" if task == "alpha" else "get_backward_probs"
        put(task, getattr(course.CTC(), method)(inputs["logits"], inputs["extended_symbols"], inputs["skip_connect"]))
    elif task == "gamma":
        put("gamma", course.CTC().get_posterior_probs(inputs["alpha"], inputs["beta"]))
    elif task in ("loss", "loss_backward"):
        loss = course.CTCLoss(BLANK=0)
        value = loss(inputs["logits"], inputs["target"], inputs["input_lengths"], inputs["target_lengths"])
        if task == "loss":
            put("loss", _as_number(value))
        else:
            put("dY", loss.backward())
    elif task == "torch_loss":                            # mytorch.nn.CTCLoss, PyTorch's semantics
        loss = importlib.import_module("mytorch.nn.ctc").CTCLoss(blank=0, reduction=config["reduction"],
                                                                 zero_infinity=config["zero_infinity"])
        put("loss", _as_number(loss(inputs["log_probs"], inputs["targets"], inputs["input_lengths"],
                                    inputs["target_lengths"])))
        put("grad", loss.backward())
    elif task == "greedy":
        symbols = config["symbol_set"]
        path, prob = course.GreedySearchDecoder(symbols).decode(inputs["y_probs"])
        put("decoded_path", _encode_path(path, symbols, inputs["y_probs"].shape[1]))
        put("log_path_prob", _as_log(prob))
    elif task == "beam":
        symbols = config["symbol_set"]
        if config.get("prune") == "prefix":
            best, scores = _prefix_beam(importlib.import_module("mytorch.nn.ctc_decode"), symbols,
                                        config["beam_width"], inputs["y_probs"])
        else:
            best, scores = course.BeamSearchDecoder(symbols, config["beam_width"]).decode(inputs["y_probs"])
        put("best_path", _encode_path(best, symbols, inputs["y_probs"].shape[1]))
        if type(scores) is not dict:
            put("merged_path_scores", scores)
            return
        put("merged_path_count", np.array([len(scores)], dtype=np.int64))
        for key, score in scores.items():                 # keys made of the symbols alone, and not too many
            if type(key) is str and len(key) <= inputs["y_probs"].shape[1] and set(key) <= set(symbols) \
                    and len(out.record.arrays) < 5000:
                put(f"log_merged_path_scores/{key or '(empty)'}", _as_log(score))


def _arrays_of(value):
    """The arrays in a state the driver built: an array, or nested tuples and lists of them (per layer, per part)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays_of(v)]
    return []


def _prefix_beam(decode, symbols, beam_width, y_probs):
    """``(best, scores)`` as ``BeamSearchDecoder.decode`` gives them, from ``decode.prefix_beam_search`` called
    as a user calls it, with its default pruning (``prune='prefix'``), on one sequence's y_probs (C, T, 1)."""
    with np.errstate(divide="ignore"):
        ranked = decode.prefix_beam_search(np.log(y_probs[:, :, 0].T), beam_width, blank=0)
    if not (type(ranked) is list and ranked and all(
            type(pair) is tuple and len(pair) == 2 and type(pair[0]) is tuple
            and all(type(c) in (int, np.int64) and 1 <= c <= len(symbols) for c in pair[0]) for pair in ranked)):
        raise TypeError(f"prefix_beam_search returned {describe(ranked)}: expected a list of (prefix, log p) "
                        "pairs, best first, each prefix a tuple of label indices (1 … number of symbols)")
    spelled = [("".join(symbols[c - 1] for c in prefix), score) for prefix, score in ranked]
    return spelled[0][0], {prefix: float(np.exp(score)) for prefix, score in spelled}


class CaseResult:
    def __init__(self):
        self.record = Recorder()
        self.status, self.error, self.where, self.mutated, self.warnings = "ok", "", "", [], []
        self.mutated_at = ""             # the statement that changed the first input changed in place
        self.layer = None                # a sequence case's layer: its BPTT lines are reported (places.find)
        self.trace = None


# Provided code a student does not write: an error raised there is reported at the student's line that
# called it. Whole files, or (file, function) for the helpers next to the TODOs.
PROVIDED_FILES = {"mytorch/nn/cell.py", "mytorch/nn/module.py", "mytorch/functional.py", "mytorch/nn/init.py",
                  "mytorch/grad_mode.py"}
PROVIDED_FUNCTIONS = {("mytorch/nn/recurrent.py", f) for f in (
    "_parts", "_as_state", "_h", "_start_state", "_zeros_for_none", "_initial_state_grads", "_time_major", "_layout",
    "_lengths", "_split_states", "_public_states")}
PROVIDED_FUNCTIONS |= {("mytorch/nn/gru_block_cell.py", "_check_op"), ("mytorch/nn/tgru_cell.py", "_draw"),
                       ("mytorch/nn/tgru_cell.py", "_initialisers")}

# The functions the handout gives whole in the files students write in (each has no solution region; dunders
# left out). They are traced, their values are quantities of the reference trace, but they are never the
# student's: a wrong value first seen in one is reported with the student's call that led there.
# tests/test_diagnosis.py checks this table against the solution's markers.
HANDOUT_FUNCTIONS = {
    "mytorch/nn/rnn_cell.py": {
        "RNNCell._bias"},
    "mytorch/nn/gru_cell.py": {
        "GRUCell._gate_rows", "GRUCell.init_weights", "_both_names", "_grad_view",
        "_grad_view.<locals>.get", "_grad_view.<locals>.set_", "_param_view",
        "_param_view.<locals>.get", "_param_view.<locals>.set_"},
    "mytorch/nn/gru_block_cell.py": {
        "GRUBlockCell.forward", "_check_op"},
    "mytorch/nn/gmu_cell.py": set(),
    "mytorch/nn/tgru_cell.py": {
        "TGRUCell.initial_state_backward", "TGRUCell.initial_state_part", "TGRUCell.state_widths",
        "_draw", "_initialisers"},
    "mytorch/nn/lstm_cell.py": {
        "LSTMCell._bias", "LSTMCell.state_widths"},
    "mytorch/nn/recurrent.py": {
        "Recurrent._as_state", "Recurrent._h", "Recurrent._initial_state_grads", "Recurrent._layout",
        "Recurrent._lengths", "Recurrent._parts", "Recurrent._public_states", "Recurrent._split_states",
        "Recurrent._start_state", "Recurrent._time_major", "Recurrent._zeros_for_none"},
    "mytorch/nn/ctc.py": {
        "CTCLoss.backward", "CTCLoss.forward", "_int_array", "_lattice", "_lse", "_lse_last",
        "_prepare", "_reduce", "_shift", "class_sums", "ctc_loss", "final_states"},
    "mytorch/nn/ctc_course.py": {
        "BeamSearchDecoder.decode", "CTC.extend_target_with_blank", "CTC.get_backward_probs",
        "CTC.get_forward_probs", "CTC.get_posterior_probs", "GreedySearchDecoder.decode", "_log",
        "_per_sequence", "_symbols"},
    "mytorch/nn/ctc_decode.py": {
        "_add", "_batched", "beam_search", "best_path", "greedy_search", "prefix_beam_search"},
}

# provided checks of a public method's arguments: an error there is the caller's
VALIDATORS = {"_prepare", "_prepare_backward", "_array", "_split_state", "_split_states", "_lengths", "_time_major"}


def _inside(path, root):
    path = os.path.realpath(path)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else None


def handout_function(relpath, function):
    """Whether ``function`` (a qualified name, ``f.<locals>.g`` counting as ``f``'s) of ``relpath`` is one the
    handout gives whole (``HANDOUT_FUNCTIONS``) or a provided one (``PROVIDED_FUNCTIONS``)."""
    names = HANDOUT_FUNCTIONS.get(relpath, ())
    return function in names or function.split(".<locals>.")[0] in names or (relpath, function) in PROVIDED_FUNCTIONS


def _provided(relpath, function):
    relpath = relpath.replace(os.sep, "/")
    return relpath in PROVIDED_FILES or (relpath, function) in PROVIDED_FUNCTIONS


def _traced_not(relpath, function):
    """Code the trace skips: anything outside mytorch/ (the instructor's checkout holds the grader too) and the
    provided code."""
    return not relpath.startswith("mytorch/") or _provided(relpath, function)


def where_in(error, root):
    """``_where_in``, or '' if the error is too strange to locate (a student's object may be anything)."""
    try:
        return _where_in(error, root)
    except Exception:
        return ""


def _where_in(error, root):
    """The student's line the error came from, as 'mytorch/nn/gru_cell.py:87 in backward: <line>'.

    That is the innermost frame in the submission outside the provided helpers (an error inside ``_finish``
    is reported at the student's line that called it, with the helper named). A value the student returned
    that broke later (``error.culprit``, a function) is located at that function's definition.
    """
    root = os.path.realpath(root)
    if isinstance(error, SyntaxError) and error.filename and _inside(error.filename, root):    # does not parse
        return f"{_inside(error.filename, root)}:{error.lineno}: {(error.text or '').strip()}"
    culprit = getattr(error, "culprit", None)
    code = getattr(culprit, "__code__", None)
    if code is not None and _inside(code.co_filename, root):
        # co_qualname is Python 3.11's; before it, the function's own __qualname__ (the same when it was defined)
        name = getattr(code, "co_qualname", None) or getattr(culprit, "__qualname__", None)
        name = name if type(name) is str else code.co_name
        return f"{_inside(code.co_filename, root)}:{code.co_firstlineno} in {name}"
    chain, seen = [], error                  # a re-raise (`raise … from None`) keeps the first one as context
    while seen is not None and len(chain) < 5:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    frames = []
    for link in reversed(chain):             # the innermost exception that reached the submission
        frames = [(f, _inside(f.filename, root)) for f in traceback.extract_tb(link.__traceback__)]
        frames = [(f, rel) for f, rel in frames if rel]
        if frames:
            break
    if not frames:
        return ""
    theirs = [k for k, (f, rel) in enumerate(frames) if not _provided(rel, f.name)]
    k = theirs[-1] if theirs else len(frames) - 1
    inner, inner_rel = frames[-1]
    if inner.name in VALIDATORS and k > 0 and theirs and theirs[-1] == k and \
            inner.filename != frames[k][0].filename:
        # a method of the student's rejected its arguments: the fault is in the call, one frame further out
        f, rel = frames[k - 1]
        via = f" ({frames[k][0].name} rejected the arguments of this call)"
    else:
        f, rel = frames[k]
        via = "" if inner is f else f" (raised inside the provided {inner.name} in {inner_rel}, called here)"
    return f"{rel}:{f.lineno} in {f.name}: {without_comment(f.line or '')}{via}"


def without_comment(line):
    """One source line, stripped, without its trailing comment (a ``#`` inside a string stays); the line as it
    is if it does not tokenize alone (the first line of a statement that goes on)."""
    line = line.strip()
    try:
        for token in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return line


def _student_warnings(caught, root):
    """Warnings raised on a line of the submission: 'RuntimeWarning: overflow … at mytorch/…:12: <line>'."""
    root = os.path.realpath(root)
    found = []
    for w in caught:
        rel = _inside(w.filename, root) if w.filename else None
        if rel and len(found) < 5:
            line = without_comment(linecache.getline(w.filename, w.lineno))
            found.append(f"{w.category.__name__}: {w.message} at {rel}:{w.lineno}: {line}"[:500])
    return found


def describe_error(error):
    """'TypeName: message', also for an exception whose message cannot be turned into text."""
    name = type(error).__name__
    try:
        message = str(error)
        message = message if type(message) is str else str.__str__(message)
    except BaseException as inner:                      # a __str__ that raises, or returns a non-string
        return f"{name} (its message cannot be shown: str() of it raised {type(inner).__name__})"
    return f"{name}: {message}"[:2000]


NUMPY_DEFAULT_ERRORS = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
LINE_EVENTS = 200_000            # the most line events _where_changed watches


def _where_changed(mytorch, root, config, originals, name):
    """The submission's statement after which the case's input ``name`` first differs from what the case gave
    it ('mytorch/nn/recurrent.py:220: dY[t] *= 2'), found by running the case again on fresh copies under a line
    tracer that compares that input after each statement of the submission's files; '' if it is not found
    within LINE_EVENTS events (or the run differs this time)."""
    inputs = {k: v.copy() for k, v in originals.items()}
    watched, original, prefix = inputs[name], originals[name], os.path.realpath(root) + os.sep
    state = {"last": None, "found": "", "events": 0}

    def local(frame, event, arg):
        if state["found"] or state["events"] > LINE_EVENTS:
            return None
        state["events"] += 1
        if state["last"] is not None and not np.array_equal(watched, original):
            file, line = state["last"]
            text = linecache.getline(file, line).strip()
            state["found"] = f"{os.path.relpath(file, root).replace(os.sep, '/')}:{line}: {text[:160]}"
            return None
        if event == "line":
            state["last"] = (frame.f_code.co_filename, frame.f_lineno)
        return local

    def call(frame, event, arg):
        return local if os.path.realpath(frame.f_code.co_filename).startswith(prefix) else None
    run = {"sequence": sequence_case, "ctc": ctc_case}.get(config["kind"], cell_case)
    previous = sys.gettrace()
    sys.settrace(call)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            run(mytorch, config, inputs, CaseResult())
    except BaseException:                              # the first run said what it raised
        pass
    finally:
        sys.settrace(previous)
    return state["found"]


def run_case(mytorch, root, config, inputs, tracing=None):
    """One case. With ``config['trace']`` and the ``tracing`` module, the values the submission computes are
    recorded too (``result.trace``); a trace that fails costs only itself."""
    result = CaseResult()
    originals = {k: v.copy() for k, v in inputs.items()}
    trace = tracing.Tracer(root, _traced_not, given=handout_function) \
        if config.get("trace") and tracing is not None else None
    try:
        # NumPy's own defaults for each case, whatever the submission set at import (np.seterr(all="ignore")
        # there would hide the overflow of a naive sigmoid, which costs points)
        with warnings.catch_warnings(record=True) as caught, np.errstate(**NUMPY_DEFAULT_ERRORS):
            warnings.simplefilter("always")
            try:
                run = {"sequence": sequence_case, "ctc": ctc_case}.get(config["kind"], cell_case)
                with trace if trace is not None else contextlib.nullcontext():
                    run(mytorch, config, inputs, result)
            finally:
                result.warnings = _student_warnings(caught, root)
    except NotImplementedError as error:
        result.status, result.error = "not_implemented", describe_error(error).partition(": ")[2]
        result.where = where_in(error, root)
    except BaseException as error:                      # SystemExit and KeyboardInterrupt included
        result.status, result.error = "error", describe_error(error)
        result.where = where_in(error, root)
    for name, value in originals.items():
        if not np.array_equal(inputs[name], value):
            result.mutated.append(f"input {name}")
    changed = [m[len("input "):] for m in result.mutated if m.startswith("input ")]
    if changed and trace is None:
        result.mutated_at = _where_changed(mytorch, root, config, originals, changed[0])
    result.places = places.find(result.layer, root) if result.layer is not None else {}
    if trace is not None:
        try:
            result.trace = trace.pack()
        except Exception:                               # e.g. out of memory: the case keeps its result
            result.trace = None
    return result


def _load_files(mytorch, configs):
    """Import the files of ``mytorch`` the cases use before the first case runs, as ``import mytorch`` once did
    (the package now loads a cell's file on first use): what a file's own top level warns of is no case's
    (its values are checked where the case computes them), and what it raises, each case that uses the file
    raises again (a failed import is not kept)."""
    import importlib
    for config in configs:
        try:
            if config.get("kind") == "ctc":
                importlib.import_module("mytorch.nn.ctc_course")
            else:
                for name in (config.get("cell"), config.get("layer")):
                    if name:
                        getattr(mytorch.nn, name)
        except BaseException:                           # the cases report it, each where it uses the file
            pass


def run(mytorch, root, configs, inputs_list, tracing=None):
    """Every case; returns ``(arrays, report)`` ready for ``np.savez``."""
    arrays, report = {}, []
    _load_files(mytorch, configs)
    for k, (config, inputs) in enumerate(zip(configs, inputs_list)):
        result = run_case(mytorch, root, config, inputs, tracing)
        for name, value in result.record.arrays.items():
            arrays[f"{k}:{name}"] = value
        report.append({"status": result.status, "error": result.error, "where": result.where,
                       "types": result.record.types, "mutated": result.mutated, "mutated_at": result.mutated_at,
                       "warnings": result.warnings,
                       "places": result.places})
        if result.trace is not None:                    # see tracing.Tracer.pack
            report[-1]["trace"] = result.trace[0]
            arrays[f"{k}:{TRACE}"] = result.trace[1]
    return arrays, json.dumps(report)


TRACE = "__trace__"                                     # the array holding a traced case's values
