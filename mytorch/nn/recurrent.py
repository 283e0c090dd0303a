"""The sequence layer: any cell run over time, stacked in layers, with backpropagation through time.

    Y, state_T = layer.forward(X, state0=None)          X (T, N, I), or (N, T, I) with batch_first, or (T, I)
    dX, d_state0 = layer.backward(dY, d_state_T=None)   dY like Y; returns dX like X, d_state0 like state0

Y (T, N, H) is the top layer's h at every step. Layer 0 reads X; layer l > 0 reads layer l−1's h.

States, per layer: for one-state cells (RNN, GRU, GRUBlock) ``state0`` and ``state_T`` are arrays
(L, N, H) (or (L, H) unbatched), as torch.nn.GRU's h_0 / h_n; for two-state cells (GMU, TGRU) they are a
list of L tuples, one cell state per layer (TGRU's memory is I wide in layer 0 and H wide above, so the
layers' states cannot be stacked). ``None`` means each cell's initial state.

Backward walks the steps in reverse: at step t, from the top layer down, the gradient reaching a layer's h
is what the layer above sent back through its input plus what step t+1 sent back through the state
(dY_t for the top layer). Each cell's own record is last-in first-out, so one cell object per layer serves
every step. ``forward`` starts a new sequence: records of an earlier forward that was never backpropagated
are dropped.

Parameters are named as the cell names them, with the layer as a suffix (``weight_ih_l0``, ``w_ru_l1``), as
torch.nn.GRU does, so a torch model's ``state_dict()`` loads directly.
"""
import importlib

import numpy as np

from mytorch.nn.cell import Cache
from mytorch.nn.module import Module


class Recurrent(Module):
    """Run ``cell_factory(in, hidden_size, dtype=, rng=, **cell_kwargs)`` cells over time in ``num_layers`` layers.

    Args:
        cell_factory: a cell class (or any callable building a cell with that signature).
        input_size (I), hidden_size (H), num_layers (L): sizes; layer l > 0 has input size H.
        batch_first: X and Y are (N, T, ·) instead of (T, N, ·).
        dtype, rng: passed to every cell (one Generator shared, so the layers differ).
        cell_kwargs: the cell's own options (``nonlinearity='relu'``, ``train_state=True``, …).

    Attributes:
        cells: the L cell objects. params / grads: the cells' arrays (the same objects), named ``<name>_l<l>``.
    """

    def __init__(self, cell_factory, input_size, hidden_size, num_layers=1, batch_first=False,
                 dtype=np.float64, rng=None, **cell_kwargs):
        super().__init__(dtype)
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be a positive integer, got {num_layers!r}")
        rng = np.random.default_rng(rng)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, int(num_layers)
        self.batch_first = bool(batch_first)
        self.cells = [cell_factory(input_size if layer == 0 else hidden_size, hidden_size, dtype=dtype, rng=rng,
                                   **cell_kwargs) for layer in range(self.num_layers)]
        for layer, cell in enumerate(self.cells):
            for key in cell.params:
                self.params[f"{key}_l{layer}"] = cell.params[key]       # shared arrays, not copies
                self.grads[f"{key}_l{layer}"] = cell.grads[key]
        self._stacked = len(self.cells[0].state_names) == 1          # one-state cells: states as (L, N, H)

    def __repr__(self):
        cell = type(self.cells[0]).__name__
        return (f"{type(self).__name__}({cell}, {self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"batch_first={self.batch_first}, dtype={self.dtype.name})")

    # ----------------------------------------------------------------------------------------------
    def _per_layer(self, states, what, method):
        """``state0`` / ``d_state_T`` as a list of L per-layer cell states (entries may be None)."""
        name = type(self).__name__
        if states is None:
            return [None] * self.num_layers
        if self._stacked and not isinstance(states, (list, tuple)):
            states = self._array(states, what, method)
        if len(states) != self.num_layers:
            form = "an array (L, N, H)" if self._stacked else "a list of L per-layer tuples"
            raise ValueError(f"{name}.{method}: {what} has {len(states)} layers, expected {self.num_layers} "
                             f"({form})")
        return list(states)

    def _public_states(self, states):
        return np.stack(states) if self._stacked else [tuple(s) for s in states]

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

    def forward(self, X, state0=None):
        """Run the sequence; return ``(Y, state_T)``. See the module docstring for shapes."""
        X = self._time_major(X, "X", "forward", self.input_size, self._layout(self.input_size))
        states = self._per_layer(state0, "state0", "forward")
        for cell in self.cells:
            cell.clear_tape()
        self._tape.clear()                           # a new sequence; an unfinished one is dropped
        outputs = []
        # BEGIN SOLUTION for each step t, feed X[t] up through the layers (cell.forward, keeping each layer's state in states[layer]) and append the top layer's h to outputs
        for t in range(X.shape[0]):
            inp = X[t]
            for layer, cell in enumerate(self.cells):
                try:
                    states[layer] = cell.forward(inp, states[layer])
                except (TypeError, ValueError) as error:
                    raise type(error)(f"{type(self).__name__}.forward, layer {layer}, step {t}: {error}") from None
                inp = states[layer] if self._stacked else states[layer][0]
            outputs.append(inp)
        # END SOLUTION
        Y = np.stack(outputs)                        # T,N,H or T,H
        self._record(Cache(steps=X.shape[0], y_shape=Y.shape, batched=X.ndim == 3))
        if Y.ndim == 3 and self.batch_first:
            Y = Y.transpose(1, 0, 2)
        return Y, self._public_states(states)

    def backward(self, dY, d_state_T=None):
        """Backpropagate through time; return ``(dX, d_state0)``. Gradients accumulate into the cells' grads."""
        record = self._pop()
        try:
            dY = self._time_major(dY, "dY", "backward", self.hidden_size, "the shape of Y")
            if dY.shape != record.y_shape:
                raise ValueError(f"{type(self).__name__}.backward: dY has shape {dY.shape} (time-major), "
                                 f"expected {record.y_shape}, the shape of Y")
            d_states = self._per_layer(d_state_T, "d_state_T", "backward")
        except (TypeError, ValueError):
            self._tape.append(record)                # a rejected call consumes nothing
            raise
        dX = []
        # BEGIN SOLUTION for t from the last step down, and each layer from the top down, call cell.backward with the gradient from step t+1 (d_states[layer]) plus, on h, the gradient from above (self._add_to_h); append the bottom layer's dx to dX
        for t in reversed(range(record.steps)):
            d_inp = dY[t]
            for layer in reversed(range(self.num_layers)):
                d_state = self._add_to_h(d_states[layer], d_inp)
                d_inp, d_states[layer] = self.cells[layer].backward(d_state)
            dX.append(d_inp)
        # END SOLUTION
        dX = np.stack(dX[::-1])
        if dX.ndim == 3 and self.batch_first:
            dX = dX.transpose(1, 0, 2)
        return dX, self._public_states(d_states)

    def _add_to_h(self, d_state, d_h):
        """The gradient from the future (``d_state``, possibly None) plus ``d_h`` on its h part."""
        if self._stacked:
            return d_h if d_state is None else d_state + d_h
        if d_state is None:
            return (d_h,) + (None,) * (len(self.cells[0].state_names) - 1)
        first = d_h if d_state[0] is None else d_state[0] + d_h
        return (first,) + tuple(d_state[1:])


def _sequence_layer(name, module, cell_name, options):
    """``name``: a ``Recurrent`` over ``mytorch.nn.<module>.<cell_name>``, imported when a layer is built (so a
    mistake in one cell's file does not break the others)."""

    def __init__(self, input_size, hidden_size, num_layers=1, batch_first=False, **cell_kwargs):
        cell = getattr(importlib.import_module(f"mytorch.nn.{module}"), cell_name)
        Recurrent.__init__(self, cell, input_size, hidden_size, num_layers, batch_first, **cell_kwargs)

    doc = (f"``Recurrent`` over ``{cell_name}``: ``{name}(input_size, hidden_size, num_layers=1, "
           f"batch_first=False, {options}dtype=np.float64, rng=None)``. See ``Recurrent`` and ``{cell_name}``.")
    return type(name, (Recurrent,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


RNN = _sequence_layer("RNN", "rnn_cell", "RNNCell", "nonlinearity='tanh', bias=True, ")
GRU = _sequence_layer("GRU", "gru_cell", "GRUCell", "bias=True, ")
GRUBlock = _sequence_layer("GRUBlock", "gru_block_cell", "GRUBlockCell", "")
GMU = _sequence_layer("GMU", "gmu_cell", "GMUCell", "")
TGRU = _sequence_layer("TGRU", "tgru_cell", "TGRUCell", "use_bias=True, use_recurrent_bias=True, train_state=False, "
                                                      "train_memory=False, init_*=…, ")
