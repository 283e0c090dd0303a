"""The sequence layer: any cell run over time, stacked in layers, in one or both directions, with
backpropagation through time.

    Y, state_T = layer.forward(X, state0=None, lengths=None)   X (T, N, I), or (N, T, I) with batch_first, or (T, I)
    dX, d_state0 = layer.backward(dY, d_state_T=None)          dY like Y; returns dX like X, d_state0 like state0

Size letters: T time, N batch, I input, H hidden, L layers, D directions (2 with ``bidirectional``), and H_out
the width of a cell's output h (H, or an LSTM's proj_size).

Y (T, N, D·H_out) is the top layer's h at every step, the directions side by side (forward first). Layer 0
reads X; layer l > 0 reads layer l−1's Y. With ``bidirectional=True`` every layer has a second cell that reads
the sequence backwards, from t = T−1 down to 0, as torch.nn.GRU's does.

Direction k of the whole stack (k = layer·D + direction; PyTorch's order: layer 0 forward, layer 0 reverse,
layer 1 forward, …) has one cell object, ``cells[k]``, and one state. States, as PyTorch gives them:
- one-state cells (RNN, GRU, GRUBlock): an array (L·D, N, H) (or (L·D, H) unbatched), as torch.nn.GRU's h_0;
- the LSTM: a tuple (h, c) of two such arrays, h (L·D, N, H_out) and c (L·D, N, H), as torch.nn.LSTM's;
- two-state cells whose parts cannot be stacked (GMU; TGRU, whose memory is I wide in layer 0 and D·H wide
  above): a list of L·D cell states (tuples).
``None`` (or a None entry) means each cell's initial state; in backward, a None entry means a zero gradient.

Variable lengths (``lengths``, an int array (N,), what ``pack_padded_sequence`` gives a PyTorch user): sequence
n uses only its steps t < lengths[n]. Past its end its state stops changing and its outputs are zero, so its
final state is the one at its own end; the reverse direction starts at each sequence's own end (its state
stays the initial state through the padding). In backward nothing flows from the padded steps: their dX is
exactly zero and they add nothing to any gradient. Y equals ``pad_packed_sequence`` of torch's output, and the
final states equal torch's h_n (and c_n).

Backward runs the layers from the top down and, in each direction, the steps in the opposite order of
forward: each cell's record is last-in first-out, so one cell object serves every step. ``forward`` starts a
new sequence: records of an earlier forward that was never backpropagated are dropped.

Each direction is run by ``_run_direction`` / ``_backward_direction``. They first try the cell's fast path
(``cell.sequence_forward`` / ``cell.sequence_backward``, when ``fast_path`` is True and the cell has one) and
otherwise step the cell once per time step; the layer remembers which path each direction took.

Parameters are named as the cell names them, with the layer as a suffix and ``_reverse`` for the reverse
direction (``weight_ih_l0``, ``w_ru_l1``, ``weight_hh_l0_reverse``), as torch.nn.GRU does, so a torch
model's ``state_dict()`` loads directly.
"""
import numpy as np

from mytorch.nn.cell import Cache
from mytorch.nn.module import Module


class Recurrent(Module):
    """Run ``cell_factory(in, hidden_size, dtype=, rng=, **cell_kwargs)`` cells over time in ``num_layers`` layers.

    Args:
        cell_factory: a cell class (or any callable building a cell with that signature).
        input_size (I), hidden_size (H), num_layers (L): sizes; layer l > 0 has input size D·H_out.
        batch_first: X and Y are (N, T, ·) instead of (T, N, ·).
        bidirectional: a second cell per layer reads the sequence backwards; outputs are concatenated.
        dtype, rng: passed to every cell (one Generator shared, so the cells differ).
        cell_kwargs: the cell's own options (``nonlinearity='relu'``, ``train_state=True``, ``proj_size=2``, …).

    Attributes:
        cells: the L·D cell objects, in PyTorch's order (layer 0 forward, layer 0 reverse, layer 1 forward, …).
        params / grads: the cells' arrays (the same objects), named ``<name>_l<l>`` and ``<name>_l<l>_reverse``.
        fast_path: try each cell's whole-sequence fast path first (default True; the grader sets False to run
            the per-step loop).
    """

    def __init__(self, cell_factory, input_size, hidden_size, num_layers=1, batch_first=False, bidirectional=False,
                 dtype=np.float64, rng=None, **cell_kwargs):
        super().__init__(dtype)
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be a positive integer, got {num_layers!r}")
        rng = np.random.default_rng(rng)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, int(num_layers)
        self.batch_first = bool(batch_first)
        self.bidirectional = bool(bidirectional)
        self.num_directions = 2 if self.bidirectional else 1
        self.fast_path = True
        self.cells = []
        for layer in range(self.num_layers):
            width = input_size if layer == 0 else self.num_directions * self.cells[0].state_widths[0]
            for direction in range(self.num_directions):
                cell = cell_factory(width, hidden_size, dtype=dtype, rng=rng, **cell_kwargs)
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                for key in cell.params:
                    self.params[key + suffix] = cell.params[key]          # shared arrays, not copies
                    self.grads[key + suffix] = cell.grads[key]
                self.cells.append(cell)
        first = self.cells[0]
        self.output_width = first.state_widths[0]                      # H_out: the width of a cell's h
        self._state_names = first.state_names
        if len(first.state_names) == 1:
            self._state_form = "array"                                 # (L·D, N, H)
        elif getattr(first, "stacked_state", False):
            self._state_form = "tuple"                                 # ((L·D, N, H_out), (L·D, N, H))
        else:
            self._state_form = "list"                                  # L·D cell states
        self._paths = {}                                               # id(cell) -> 'fast' or 'loop'

    def __repr__(self):
        cell = type(self.cells[0]).__name__
        return (f"{type(self).__name__}({cell}, {self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"batch_first={self.batch_first}, bidirectional={self.bidirectional}, dtype={self.dtype.name})")

    # ----------------------------------------------------------------------------------------------
    # the public passes: validation and state forms around the walk over layers
    def forward(self, X, state0=None, lengths=None):
        """Run the sequence; return ``(Y, state_T)``. See the module docstring for shapes and ``lengths``."""
        X = self._time_major(X, "X", "forward", self.input_size, self._layout(self.input_size))
        batched = X.ndim == 3
        X = X if batched else X[:, None]                               # T,N,I with N = 1 for unbatched input
        T, N = X.shape[:2]
        lengths = self._lengths(lengths, T, N, batched)
        given = self._split_states(state0, "state0", "forward", N, batched)
        for cell in self.cells:
            cell.clear_tape()
        self._tape.clear()                                             # a new sequence; an unfinished one is dropped
        self._paths = {}
        starts = [self._start_state(cell, parts, N) for cell, parts in zip(self.cells, given)]
        # BEGIN SOLUTION walk the layers bottom-up, each direction k with self._run_direction from starts[k]; set finals[k] and Y, the top layer's outputs (assignment/6-bptt.md, step 1)
        finals, inp = [None] * len(self.cells), X
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, reverse=direction == 1)
                outputs.append(Y_k)
            inp = np.concatenate(outputs, axis=2)                      # T,N,D·H_out: the next layer's input
        Y = inp
        # END SOLUTION
        self._record(Cache(y_shape=Y.shape if batched else Y[:, 0].shape, batch=N, batched=batched,
                           lengths=lengths, defaulted=[tuple(p is None for p in parts) for parts in given],
                           paths=dict(self._paths)))
        Y = Y if batched else Y[:, 0]
        if batched and self.batch_first:
            Y = Y.transpose(1, 0, 2)
        return Y, self._public_states(finals, batched)

    def backward(self, dY, d_state_T=None):
        """Backpropagate through time; return ``(dX, d_state0)``. Gradients accumulate into the cells' grads."""
        record = self._pop()
        try:
            width = self.num_directions * self.output_width
            dY = self._time_major(dY, "dY", "backward", width, "the shape of Y")
            if dY.shape != record.y_shape:
                raise ValueError(f"{type(self).__name__}.backward: dY has shape {dY.shape} (time-major), "
                                 f"expected {record.y_shape}, the shape of Y")
            given = self._split_states(d_state_T, "d_state_T", "backward", record.batch, record.batched)
        except (TypeError, ValueError):
            self._tape.append(record)                                  # a rejected call consumes nothing
            raise
        self._paths = record.paths
        dY = dY if record.batched else dY[:, None]                     # T,N,D·H_out
        d_finals = [self._zeros_for_none(cell, parts, record.batch) for cell, parts in zip(self.cells, given)]
        lengths, W = record.lengths, self.output_width
        # BEGIN SOLUTION walk the layers top-down, each direction k with self._backward_direction from d_finals[k]; set d_state0[k] and dX, layer 0's input gradient (assignment/6-bptt.md, step 3)
        d_state0, d_out = [None] * len(self.cells), dY
        for layer in reversed(range(self.num_layers)):                 # top layer first: LIFO across layers too
            d_in = 0.0
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, :, direction * W:(direction + 1) * W],
                                                             d_finals[k], lengths, reverse=direction == 1)
                d_in = d_in + dX_k                                     # both directions read the same input
            d_out = d_in
        dX = d_out
        # END SOLUTION
        for cell, defaulted, d in zip(self.cells, record.defaulted, d_state0):
            self._initial_state_grads(cell, defaulted, d)
        dX = dX if record.batched else dX[:, 0]
        if record.batched and self.batch_first:
            dX = dX.transpose(1, 0, 2)
        return dX, self._public_states(d_state0, record.batched)

    # ----------------------------------------------------------------------------------------------
    # one direction of one layer over the whole sequence
    def _run_direction(self, cell, X, state0, lengths, reverse):
        """Run ``cell`` over X (T, N, I_l) from ``state0`` (its batched state, never None).

        Steps t = 0 … T−1, or T−1 … 0 with ``reverse``; with ``lengths``, steps t >= lengths[n] leave sequence
        n's state unchanged and give Y[t, n] = 0. Returns Y (T, N, H_out) and the final state.
        """
        if self.fast_path:
            try:
                result = cell.sequence_forward(X, state0, lengths, reverse)
            except NotImplementedError:
                pass
            else:
                self._paths[id(cell)] = "fast"
                return result
        self._paths[id(cell)] = "loop"
        T, N = X.shape[:2]
        # BEGIN SOLUTION step the cell over time from state0, padded steps masked; set Y (T, N, H_out) and state, the final state (assignment/6-bptt.md, step 2)
        live = np.ones((T, N, 1), dtype=bool) if lengths is None else \
            (np.arange(T)[:, None] < lengths[None, :])[:, :, None]     # T,N,1: True where t < lengths[n]
        Y = [None] * T                                                 # Y[t]: (N, H_out), filled in step order
        state = state0
        steps = reversed(range(T)) if reverse else range(T)
        for t in steps:
            new = cell.forward(X[t], state)
            state = self._as_state(tuple(np.where(live[t], a, b)       # past a sequence's end, its state stays
                                         for a, b in zip(self._parts(new), self._parts(state))))
            Y[t] = np.where(live[t], self._h(new), 0.0)                # and its output is zero
        Y = np.stack(Y)
        # END SOLUTION
        return Y, state

    def _backward_direction(self, cell, dY, d_state_T, lengths, reverse):
        """Backpropagate one ``_run_direction``: dY (T, N, H_out), d_state_T (the state's structure, no None).

        Accumulates into ``cell.grads``; returns dX (T, N, I_l) and d_state0 (no None entries).
        """
        if self._paths.get(id(cell)) == "fast":
            return cell.sequence_backward(dY, d_state_T)
        T, N = dY.shape[:2]
        # BEGIN SOLUTION walk the steps in the opposite order of forward, carrying d_state and adding dY[t], padded steps masked; set dX (T, N, I_l) and d_state (assignment/6-bptt.md, step 4)
        live = np.ones((T, N, 1), dtype=bool) if lengths is None else \
            (np.arange(T)[:, None] < lengths[None, :])[:, :, None]
        dX = [None] * T                                                # dX[t]: (N, I_l)
        d_state = d_state_T
        steps = range(T) if reverse else reversed(range(T))           # the opposite order of forward
        for t in steps:
            with_output = (self._parts(d_state)[0] + dY[t],) + self._parts(d_state)[1:]
            d_new = self._as_state(tuple(np.where(live[t], d, 0.0) for d in with_output))
            dX[t], d_prev = cell.backward(d_new)
            d_state = self._as_state(tuple(np.where(live[t], a, b)    # a padded step passes d_state by
                                           for a, b in zip(self._parts(d_prev), self._parts(d_state))))
        dX = np.stack(dX)
        # END SOLUTION
        return dX, d_state

    # ----------------------------------------------------------------------------------------------
    # state structures: a one-state cell's state is an array, a two-state cell's a tuple of parts
    @staticmethod
    def _parts(state):
        """A state as a tuple of parts: ``(h,)`` for an array, ``(h, c)`` for a tuple."""
        return tuple(state) if isinstance(state, tuple) else (state,)

    def _as_state(self, parts):
        """A tuple of parts as the cell's state: the bare array for one-state cells."""
        return parts[0] if len(self._state_names) == 1 else tuple(parts)

    def _h(self, state):
        """The h part of a state: the cell's output."""
        return self._parts(state)[0]

    def _start_state(self, cell, parts, n):
        """A cell's batched start state from the parts given (None: the cell's own initial state for it)."""
        return self._as_state(tuple(cell.initial_state_part(j, n) if part is None else part
                                    for j, part in enumerate(parts)))

    def _zeros_for_none(self, cell, parts, n):
        """A cell's batched state gradient from the parts given (None: zeros)."""
        return self._as_state(tuple(np.zeros((n, w), dtype=self.dtype) if d is None else d
                                    for d, w in zip(parts, cell.state_widths)))

    @staticmethod
    def _initial_state_grads(cell, defaulted, d_state0):
        """A cell whose initial state is trainable (TGRU's train_state) gets the gradient of the parts it filled."""
        add = getattr(cell, "initial_state_backward", None)
        if add is not None:
            for k, (was_default, d) in enumerate(zip(defaulted, Recurrent._parts(d_state0))):
                if was_default:
                    add(k, d)

    # ----------------------------------------------------------------------------------------------
    # validation in, shapes out
    def _time_major(self, X, what, method, width, expected_text):
        X = self._array(X, what, method)
        if X.ndim not in (2, 3) or X.shape[-1] != width or X.shape[0] == 0 or (X.ndim == 3 and X.shape[1] == 0):
            raise ValueError(f"{type(self).__name__}.{method}: {what} has shape {X.shape}, expected {expected_text}")
        if X.ndim == 3 and self.batch_first:
            X = X.transpose(1, 0, 2)
        return X

    def _layout(self, width):
        T_N = "(N, T, {w})" if self.batch_first else "(T, N, {w})"
        return f"{T_N.format(w=width)} or (T, {width}) with T, N >= 1"

    def _lengths(self, lengths, T, N, batched):
        """``lengths`` as an int array (N,) with 0 <= lengths[n] <= T, or None."""
        if lengths is None:
            return None
        name = f"{type(self).__name__}.forward"
        values = np.asarray(lengths)                                   # a list, an array, a torch tensor
        if values.dtype.kind not in "iu":
            raise TypeError(f"{name}: lengths has dtype {values.dtype}, expected integers (one length per sequence)")
        expected = (N,) if batched else ((), (1,))
        if (batched and values.shape != (N,)) or (not batched and values.shape not in expected):
            raise ValueError(f"{name}: lengths has shape {values.shape}, expected {expected if batched else '()'} "
                             f"(one length per sequence{'' if batched else ': X is unbatched'})")
        values = values.reshape(N).astype(np.int64)
        if (values < 0).any() or (values > T).any():
            raise ValueError(f"{name}: lengths must lie between 0 and T = {T}, got {values.tolist()}")
        return values

    def _split_states(self, states, what, method, n, batched):
        """``state0`` / ``d_state_T`` as a list of L·D tuples of parts, each (n, width) or None, checked."""
        name, count, S = type(self).__name__, len(self.cells), len(self._state_names)
        if states is None:
            return [(None,) * S for _ in range(count)]
        unit = "layers" if self.num_directions == 1 else "entries (layer 0 forward, layer 0 reverse, …)"
        if self._state_form == "list":
            if not isinstance(states, (list, tuple)) or len(states) != count:
                got = f"{len(states)} entries" if isinstance(states, (list, tuple)) else type(states).__name__
                raise ValueError(f"{name}.{method}: {what} must be a list of {count} cell states "
                                 f"(tuples ({', '.join(self._state_names)})), got {got}")
            entries = []
            for k, state in enumerate(states):
                if state is not None and (not isinstance(state, (list, tuple)) or len(state) != S):
                    raise ValueError(f"{name}.{method}: {what}[{k}] must be a tuple "
                                     f"({', '.join(self._state_names)}) or None")
                entries.append((None,) * S if state is None else tuple(state))
        else:
            if self._state_form == "array":
                stacks = (states,)
            elif not isinstance(states, (list, tuple)) or len(states) != S:
                raise ValueError(f"{name}.{method}: {what} must be a tuple ({', '.join(self._state_names)}) of "
                                 f"arrays (L·D, N, ·), as torch.nn.LSTM's")
            else:
                stacks = tuple(states)
            columns = []
            for j, stack in enumerate(stacks):
                label = what if S == 1 else f"{what}[{j}] ({self._state_names[j]})"
                if stack is None:
                    columns.append([None] * count)
                    continue
                if self._state_form == "array" and isinstance(stack, (list, tuple)):
                    stack = [None if s is None else self._array(s, label, method) for s in stack]
                else:
                    stack = self._array(stack, label, method)
                if len(stack) != count:
                    raise ValueError(f"{name}.{method}: {label} has {len(stack)} {unit.split(' ')[0]}, expected "
                                     f"{count} {unit}")
                width = self.cells[0].state_widths[j]
                expected = (count, n, width) if batched else (count, width)
                if isinstance(stack, np.ndarray) and stack.shape != expected:
                    raise ValueError(f"{name}.{method}: {label} has shape {stack.shape}, expected {expected}" +
                                     (f" to match X's batch of {n}" if batched else " because X is unbatched"))
                columns.append(list(stack))
            entries = list(zip(*columns))
        checked = []
        for k, parts in enumerate(entries):
            cell, row = self.cells[k], []
            for j, part in enumerate(parts):
                if part is None:
                    row.append(None)
                    continue
                label = f"{what}[{k}]" if S == 1 else f"{what}[{k}] ({self._state_names[j]})"
                part = self._array(part, label, method)
                width = cell.state_widths[j]
                expected = (n, width) if batched else (width,)
                if part.shape != expected:
                    layer, direction = divmod(k, self.num_directions)
                    where = f"layer {layer}" + (" reverse" if direction else "")
                    raise ValueError(f"{name}.{method}: {label} ({where}) has shape {part.shape}, expected "
                                     f"{expected}" + (f" to match X's batch of {n}" if batched else
                                                      " because X is unbatched"))
                row.append(part if batched else part[None])
            checked.append(tuple(row))
        return checked

    def _public_states(self, states, batched):
        """L·D batched cell states in the caller's form (see the module docstring)."""
        per_part = [[self._parts(s)[j] if batched else self._parts(s)[j][0] for s in states]
                    for j in range(len(self._state_names))]
        if self._state_form == "array":
            return np.stack(per_part[0])
        if self._state_form == "tuple":
            return tuple(np.stack(p) for p in per_part)
        return [tuple(p[k] for p in per_part) for k in range(len(states))]


# --------------------------------------------------------------------------------------------------
# the layers by cell: each imports its cell when built, so a mistake in one cell's file breaks no other layer

class RNN(Recurrent):
    """Elman RNN layers, as torch.nn.RNN: ``Recurrent`` over ``RNNCell``.

    Args: input_size, hidden_size, num_layers; nonlinearity ('tanh' or 'relu'), bias (RNNCell's);
    batch_first, bidirectional, dtype, rng (``Recurrent``'s). States (L·D, N, H).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, nonlinearity="tanh", bias=True, batch_first=False,
                 bidirectional=False, dtype=np.float64, rng=None):
        from mytorch.nn.rnn_cell import RNNCell
        super().__init__(RNNCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng,
                         nonlinearity=nonlinearity, bias=bias)


class GRU(Recurrent):
    """GRU layers, as torch.nn.GRU: ``Recurrent`` over ``GRUCell``.

    Args: input_size, hidden_size, num_layers; bias (GRUCell's); batch_first, bidirectional, dtype, rng.
    States (L·D, N, H).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, bias=True, batch_first=False, bidirectional=False,
                 dtype=np.float64, rng=None):
        from mytorch.nn.gru_cell import GRUCell
        super().__init__(GRUCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng,
                         bias=bias)


class GRUBlock(Recurrent):
    """Layers of TensorFlow's GRU block cell: ``Recurrent`` over ``GRUBlockCell``.

    Args: input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng. States (L·D, N, H).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, batch_first=False, bidirectional=False,
                 dtype=np.float64, rng=None):
        from mytorch.nn.gru_block_cell import GRUBlockCell
        super().__init__(GRUBlockCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng)


class GMU(Recurrent):
    """GMU layers: ``Recurrent`` over ``GMUCell``.

    Args: input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng. States: a list of L·D
    tuples (h, c), each part (N, H).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, batch_first=False, bidirectional=False,
                 dtype=np.float64, rng=None):
        from mytorch.nn.gmu_cell import GMUCell
        super().__init__(GMUCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng)


class TGRU(Recurrent):
    """Strongly-typed GRU layers: ``Recurrent`` over ``TGRUCell``, with Lux's keyword arguments.

    Args: input_size, hidden_size, num_layers; use_bias, use_recurrent_bias, train_state, train_memory and the
    ``init_*`` initialisers (TGRUCell's, passed as keywords); batch_first, bidirectional, dtype, rng.
    States: a list of L·D tuples (h, m); m is I wide in layer 0 and D·H wide above.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, use_bias=True, use_recurrent_bias=True,
                 train_state=False, train_memory=False, batch_first=False, bidirectional=False, dtype=np.float64,
                 rng=None, **init_kwargs):
        from mytorch.nn.tgru_cell import TGRUCell
        super().__init__(TGRUCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng,
                         use_bias=use_bias, use_recurrent_bias=use_recurrent_bias, train_state=train_state,
                         train_memory=train_memory, **init_kwargs)


class LSTM(Recurrent):
    """LSTM layers, as torch.nn.LSTM: ``Recurrent`` over ``LSTMCell``.

    Args: input_size, hidden_size, num_layers; bias, proj_size, forget_bias (LSTMCell's); batch_first,
    bidirectional, dtype, rng.

    States as torch.nn.LSTM's: ``state0 = (h_0, c_0)`` with h_0 (L·D, N, H_out) and c_0 (L·D, N, H), where
    H_out = proj_size or H (either may be None: zeros); ``state_T = (h_n, c_n)``. Parameters weight_ih_l0,
    weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_hr_l0 (with proj_size), and ``_reverse``, as torch names them.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *, bias=True, batch_first=False, bidirectional=False,
                 proj_size=0, forget_bias=0.0, dtype=np.float64, rng=None):
        from mytorch.nn.lstm_cell import LSTMCell
        super().__init__(LSTMCell, input_size, hidden_size, num_layers, batch_first, bidirectional, dtype, rng,
                         bias=bias, proj_size=proj_size, forget_bias=forget_bias)
