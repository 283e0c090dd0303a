"""The base class of every recurrent cell: the contract shared by RNN, GRU, GRU block, GMU and TGRU cells.

Size letters, used the same way everywhere: N batch, T time, I input_size, H hidden_size.

    new_state = cell.forward(x, state=None)        x: (N, I) or unbatched (I,)
    dx, d_state_prev = cell.backward(d_state)       d_state: dL/d(new_state), same structure as the state

A state is an array ``h`` for one-state cells and a tuple for two-state cells (GMU ``(h, c)``, TGRU
``(h, m)``); ``None`` (or a ``None`` entry of a tuple) means the cell's initial state, and in ``backward``
a ``None`` entry means a zero gradient. ``backward`` *accumulates* (``+=``) parameter gradients into
``cell.grads`` and consumes the newest recorded forward step, so T forwards then T backwards is BPTT.

Inputs, states and gradients may be float, integer or boolean arrays, or nested lists of numbers: each is
cast to (a copy in) the cell's dtype, as NumPy would compute with them. Complex, object, string and date
arrays are a TypeError naming the cell, the argument and the dtype.

Subclasses implement the math on 2-D arrays: ``forward`` calls ``self._prepare`` (validation, unbatched
→ batch of one, initial state) and ``self._finish`` (record the cache, expose attributes, restore the
caller's shapes); ``backward`` calls ``self._prepare_backward`` and ``self._finish_backward``.
"""
import types

import numpy as np

from mytorch.nn.module import Module


class Cache(types.SimpleNamespace):
    """What one forward step keeps for its backward: named fields, never an anonymous tuple."""


def _shape_text(widths):
    return "(N, " + ", ".join(map(str, widths)) + ")"


class RecurrentCell(Module):
    """Shared machinery of the cells; see the module docstring for the contract."""

    #: names of the parts of the state, in order; one name means the state is a bare array
    state_names = ("h",)
    #: cache fields also set as attributes after forward (in the caller's shape), for inspection and grading
    exposed = ()

    def __init__(self, input_size, hidden_size, dtype=np.float64, rng=None):
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{type(self).__name__}: {arg} must be a positive integer, got {value!r}")
        super().__init__(dtype)
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.rng = np.random.default_rng(rng)

    def __repr__(self):
        return f"{type(self).__name__}({self.input_size}, {self.hidden_size}, dtype={self.dtype.name})"

    @property
    def state_widths(self):
        """The width of each part of the state (all H, except TGRU's memory, which is I)."""
        return (self.hidden_size,) * len(self.state_names)

    def initial_state_part(self, k, n):
        """Part ``k`` of the initial state for a batch of ``n``: zeros unless a cell says otherwise."""
        return np.zeros((n, self.state_widths[k]), dtype=self.dtype)

    # ----------------------------------------------------------------------------------------------
    # forward: validation in, shapes out
    def _prepare(self, x, state):
        """Validate ``x`` and ``state``; return ``x`` as (N, I), the state parts as (N, width), and flags.

        Returns ``(x, parts, batched, defaulted)``; ``defaulted[k]`` says part k came from the initial state.
        """
        name = type(self).__name__
        x = self._array(x, "x", "forward")
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}.forward: x has shape {x.shape}, "
                             f"expected (N, {self.input_size}) or ({self.input_size},)")
        batched = x.ndim == 2
        x2 = x if batched else x[None]
        n = self._forward_batch = x2.shape[0]          # for _finish: the batch, whatever shape forward returns
        given = self._split_state(state, "state", "forward")
        parts, defaulted = [], []
        for k, (part, width) in enumerate(zip(given, self.state_widths)):
            label = self._part_label("state", k)
            if part is None:
                parts.append(self.initial_state_part(k, n))
                defaulted.append(True)
                continue
            part = self._array(part, label, "forward")
            expected = (n, width) if batched else (width,)
            if part.shape != expected:
                why = f"to match x's batch of {n}" if batched else "because x is unbatched"
                raise ValueError(f"{name}.forward: {label} has shape {part.shape}, expected {expected} {why}")
            parts.append(part if batched else part[None])
            defaulted.append(False)
        return x2, tuple(parts), batched, tuple(defaulted)

    def _split_state(self, state, what, method):
        """A state as a tuple of parts (entries may be None), checking a tuple state's length."""
        count = len(self.state_names)
        if state is None:
            return (None,) * count
        if count == 1:
            if isinstance(state, tuple):              # a list is array-like: nested lists of numbers are fine
                raise TypeError(f"{type(self).__name__}.{method}: {what} must be one array "
                                f"{_shape_text(self.state_widths)}, got a {type(state).__name__}")
            return (state,)
        if not isinstance(state, (tuple, list)) or len(state) != count:
            got = f"length {len(state)}" if isinstance(state, (tuple, list)) else type(state).__name__
            raise ValueError(f"{type(self).__name__}.{method}: {what} must be a tuple "
                             f"({', '.join(self.state_names)}) of {count} arrays, got {got}")
        return tuple(state)

    def _part_label(self, what, k):
        if len(self.state_names) == 1:
            return what
        return f"{what}[{k}] ({'d' if what.startswith('d') else ''}{self.state_names[k]})"

    def _finish(self, cache, new_parts, batched):
        """Record ``cache``, expose its named fields, and return the new state in the caller's shape."""
        cache.batched = batched
        cache.batch = getattr(self, "_forward_batch", None) or new_parts[0].shape[0]   # x's (a squeezed state has none)
        self._record(cache)
        for field in self.exposed:
            value = getattr(cache, field)
            setattr(self, field, value if batched else value[0])
        return self._public(new_parts, batched)

    def _public(self, parts, batched):
        parts = tuple(p if batched else p[0] for p in parts)
        return parts[0] if len(parts) == 1 else parts

    # ----------------------------------------------------------------------------------------------
    # backward: validation in, shapes out
    def _prepare_backward(self, d_state):
        """Pop the newest forward step; return ``(cache, d_parts)`` with d_parts as (N, width), zeros for None."""
        cache = self._pop()
        name = type(self).__name__
        try:
            given = self._split_state(d_state, "d_state", "backward")
            d_parts = []
            for k, (part, width) in enumerate(zip(given, self.state_widths)):
                if part is None:
                    d_parts.append(np.zeros((cache.batch, width), dtype=self.dtype))
                    continue
                label = self._part_label("d_state", k)
                part = self._array(part, label, "backward")
                expected = (cache.batch, width) if cache.batched else (width,)
                if part.shape != expected:
                    raise ValueError(f"{name}.backward: {label} has shape {part.shape}, expected {expected} "
                                     "(the shape of the state this step's forward returned)")
                d_parts.append(part if cache.batched else part[None])
        except (TypeError, ValueError):
            self._tape.append(cache)                  # a rejected call consumes nothing
            raise
        return cache, tuple(d_parts)

    def _finish_backward(self, cache, dx, d_parts):
        """Return ``(dx, d_state_prev)`` in the shapes of the forward step's inputs."""
        return (dx if cache.batched else dx[0]), self._public(d_parts, cache.batched)

    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """Fast path over a whole sequence (see Recurrent); cells without one raise NotImplementedError."""
        raise NotImplementedError

    def sequence_backward(self, dY, d_state_T):
        """Fast path over a whole sequence (see Recurrent); cells without one raise NotImplementedError."""
        raise NotImplementedError
