"""Shared plumbing of the cells' fast paths: one direction of one layer over a whole sequence at once.

Every cell keeps its per-step ``forward``/``backward`` (the teaching API and the reference). Beside them a
cell may define

    Y, state_T = cell.sequence_forward(X, state0, lengths=None, reverse=False)
        X (T, N, I) time-major and batched; state0 the cell's batched state (an array (N, H) or a tuple of
        (N, width) arrays; a None entry means the cell's initial state); lengths an int array (N,) or None.
        Returns Y (T, N, H) and the final state; pushes ONE record on the cell's tape (none in no_grad()).
    dX, d_state0 = cell.sequence_backward(dY, d_state_T)
        dY (T, N, H); d_state_T like the state (None entries mean zero). Pops that record, adds to
        ``cell.grads`` exactly what T per-step backwards would add, returns dX (T, N, I) and d_state0.

which compute what T calls of ``forward`` and ``backward`` compute, arranged for speed: the input projection of
all steps as one matrix product per gate with the biases folded in, transposed weights made contiguous once per
call, every step's values written in place in arrays from the cell's workspace, laid out gate-major in the
forward, (G, T, N, H), so that each gate's block of a step is contiguous, and side by side in the backward,
(T, N, G·H), so that a step's recurrent gradient is one product for all the gates and each weight gradient
(and dX) one or two over all steps (the TGRU, with no recurrent product, keeps its gate-major one per gate).
This module holds what all cells share; the math is in each cell's file.

Memory: those per-call arrays are megabytes each ((G, T, N, H) floats), and taking fresh ones every call costs
more than the arithmetic done in them: freed memory goes back to the system, and the next call's first write
to each page faults it in again, a cost that swings with whatever else the machine does. So every array a call
keeps only for itself comes from the cell's ``Workspace`` and goes back to it when the call is done with it
(a forward's after its backward, or at once when nothing is recorded): a training loop over batches of one
shape allocates no large array after its first step. Arrays a call hands out (Y, the final state, dX, the
gradients) are always its own.

Step order: the cells run steps k = 0 … T-1, which is time t = k forward and t = T-1-k in reverse, so one
loop serves both directions (``Steps.order`` turns time order into step order and back).

Variable lengths: sequence n uses the steps t < lengths[n]. At any other step its state is kept and its
output is zero, and in backward such a step passes the state's gradient straight through and gets none
itself. In reverse, the steps past the end come first, so each sequence starts from state0 at its own end.
"""
import numpy as np

from mytorch.nn.cell import Cache


class SequenceRecord(Cache):
    """What one ``sequence_forward`` keeps for its ``sequence_backward``: named fields, one record per call,
    and ``buffers``, the workspace arrays those fields live in (given back when the backward is done)."""


class Workspace:
    """A cell's pool of per-call arrays, reused from call to call.

    ``Buffers`` take arrays from it by shape and dtype and give them back together. An array unused for
    ``KEEP_CALLS`` calls is dropped, so the pool holds what the latest calls need and no more (a run that
    changes T or N every batch keeps only its recent shapes)."""

    KEEP_CALLS = 4

    def __init__(self):
        self.calls = 0
        self._free = {}                            # (shape, dtype) -> [(array, the call that gave it back)]

    def take(self, shape, dtype):
        free = self._free.get((shape, dtype))
        return free.pop()[0] if free else np.empty(shape, dtype)

    def give_back(self, arrays):
        self.calls += 1
        for array in arrays:
            self._free.setdefault((array.shape, array.dtype), []).append((array, self.calls))
        for key, free in list(self._free.items()):
            free[:] = [(a, call) for a, call in free if call > self.calls - self.KEEP_CALLS]
            if not free:
                del self._free[key]


class Buffers:
    """The workspace arrays of one call: ``empty(shape)`` is ``np.empty(shape, cell.dtype)`` from the cell's
    workspace; ``give_back()`` returns them all, after which no view of them may be used."""

    def __init__(self, cell):
        workspace = cell.__dict__.get("_workspace")
        if workspace is None:
            workspace = cell._workspace = Workspace()
        self._workspace, self._dtype, self._taken = workspace, np.dtype(cell.dtype), []

    def empty(self, *shape):
        array = self._workspace.take(shape, self._dtype)
        self._taken.append(array)
        return array

    def give_back(self):
        self._workspace.give_back(self._taken)
        self._taken = []


class Steps:
    """The step order and the lengths mask of one ``sequence_forward`` call.

    Attributes:
        T, N: steps and batch. reverse: the direction.
        active (T, N, 1) float: 1.0 where step k is a real step of sequence n, 0.0 past its end (step order);
            None without lengths (every step is real).
        idle (T, N, 1) bool: the opposite of active (None without lengths).
    """

    def __init__(self, X, lengths, reverse):
        self.T, self.N = X.shape[:2]
        self.reverse = bool(reverse)
        self.active = self.idle = None
        if lengths is not None:
            lengths = np.asarray(lengths)
            if lengths.shape != (self.N,) or lengths.dtype.kind not in "iu":
                raise ValueError(f"sequence_forward: lengths must be an int array of shape ({self.N},), "
                                 f"got {lengths.dtype} {lengths.shape}")
            real = self.order(np.arange(self.T))[:, None] < lengths[None, :]        # T,N in step order
            self.active = real[:, :, None].astype(X.dtype)
            self.idle = ~real[:, :, None]

    def order(self, A):
        """A (T, ...) reordered between time order and step order (a view; its own inverse)."""
        return A[::-1] if self.reverse else A

    def keep_state(self, new, old, k):
        """Past a sequence's end its state does not change: ``new[n] = old[n]`` where step k is idle."""
        if self.idle is not None:
            np.copyto(new, old, where=self.idle[k])

    def mask(self, A):
        """A (T, N, ·) in step order, zeroed in place at idle steps (nothing to do without lengths); returns A."""
        if self.active is not None:
            A *= self.active
        return A

    def pass_through(self, factor):
        """``factor`` (T, N, H) where steps are real and 1 where idle: the multiplier that carries a state's
        gradient to the previous step (a new array with lengths, ``factor`` itself without)."""
        if self.active is None:
            return factor
        return factor * self.active + self.idle

    def outputs(self, S):
        """Y (T, N, H) in time order from the states S (T+1, N, H) in step order: h after each step, 0 if idle."""
        Y = S[1:] * self.active if self.active is not None else S[1:].copy()
        return self.order(Y)

    def output_gradient(self, dY):
        """dY (T, N, H) in step order, zero at idle steps (there Y is the constant 0)."""
        dY = self.order(dY)
        return dY * self.active if self.active is not None else dY


def batched_state(cell, state0, N):
    """``state0`` as a tuple of fresh (N, width) arrays of the cell's dtype, and which parts were None.

    A None state (or None entry) is the cell's initial state; which parts were None matters to a cell whose
    initial state is a trainable parameter (TGRU's ``train_state`` / ``train_memory``)."""
    count = len(cell.state_names)
    given = (state0,) if count == 1 else tuple(state0) if state0 is not None else (None,) * count
    parts = []
    for k, (part, width) in enumerate(zip(given, cell.state_widths)):
        part = cell.initial_state_part(k, N) if part is None else np.array(part, dtype=cell.dtype)
        if part.shape != (N, width):
            raise ValueError(f"{type(cell).__name__}.sequence_forward: state0 part {k} has shape {part.shape}, "
                             f"expected {(N, width)}")
        parts.append(part)
    return tuple(parts), tuple(p is None for p in given)


def state_gradient(d_state, shapes, dtype):
    """``d_state_T`` as a tuple of fresh (N, width) arrays, zeros for None entries."""
    parts = (d_state,) if len(shapes) == 1 else tuple(d_state) if d_state is not None else (None,) * len(shapes)
    return tuple(np.zeros(shape, dtype) if p is None else np.array(p, dtype=dtype) for p, shape in zip(parts, shapes))


def begin_forward(cell, X, state0, lengths, reverse):
    """What every ``sequence_forward`` starts with: returns ``(steps, X, state parts, which parts were None)``,
    X (T, N, I) of the cell's dtype in step order and the state as fresh (N, width) arrays."""
    X = np.asarray(X, dtype=cell.dtype)
    if X.ndim != 3 or X.shape[2] != cell.input_size:
        raise ValueError(f"{type(cell).__name__}.sequence_forward: X has shape {X.shape}, expected "
                         f"(T, N, {cell.input_size}) (time-major, batched)")
    steps = Steps(X, lengths, reverse)
    parts, defaulted = batched_state(cell, state0, steps.N)
    return steps, steps.order(X), parts, defaulted


def begin_backward(cell, dY, d_state_T):
    """What every ``sequence_backward`` starts with: returns ``(record, steps, dY, d_state parts)``, dY in step
    order and zero at idle steps, d_state_T as fresh (N, width) arrays (zeros for None)."""
    record = pop_sequence_record(cell)
    steps = record.steps
    dY = steps.output_gradient(np.asarray(dY, dtype=cell.dtype))
    d_parts = state_gradient(d_state_T, [(steps.N, w) for w in cell.state_widths], cell.dtype)
    return record, steps, dY, d_parts


def pop_sequence_record(cell):
    """Pop the newest record, which must come from ``sequence_forward``."""
    record = cell._pop("sequence_backward")
    if not isinstance(record, SequenceRecord):
        cell._tape.append(record)
        raise RuntimeError(f"{type(cell).__name__}.sequence_backward: the newest forward was a single step "
                           "(forward); call backward for it, or run the sequence with sequence_forward")
    return record


def transposed(W):
    """Wᵀ as a C-contiguous copy: per-step products with it run faster than with the transposed view."""
    return np.ascontiguousarray(W.T)


def gates_transposed(W, gates):
    """W (G·H, K), gates stacked by rows, as (G, K, H) with [g] = W_gᵀ contiguous: ``x @ result`` is (G, N, H),
    every gate's block contiguous (NumPy's elementwise calls on a gate's columns of an (N, G·H) array, a
    strided view, cost several times more than on a contiguous block)."""
    K = W.shape[1]
    return np.ascontiguousarray(W.reshape(gates, -1, K).transpose(0, 2, 1))


def gates_side_by_side(W, gates, order=None):
    """W (G·H, K), gates stacked by rows, as Wᵀ (K, G·H) contiguous with its gates' column blocks in ``order``:
    ``h @ result`` is every gate's term of a step in ONE product (one call and a longer row beat G products)."""
    blocks = W.reshape(gates, -1, W.shape[1])
    if order is not None:
        blocks = blocks[order]
    return np.ascontiguousarray(blocks.reshape(-1, W.shape[1]).T)


def add_gate_product(A_k, h, W_side, product):
    """``A_k`` (G, N, H), a step's gate-major block, += h @ W_side (``gates_side_by_side``): the product made
    into ``product`` (N, G·H) and added gate by gate (the strided read costs less than G products save)."""
    np.matmul(h, W_side, out=product)
    gates, N, H = A_k.shape
    A_k += product.reshape(N, gates, H).transpose(1, 0, 2)


def gate_rows(W, gates):
    """W (G·H, K) as (G, H, K), [g] = W_g (a view)."""
    return W.reshape(gates, -1, W.shape[1])


def sum_of_products(pairs, out=None, scratch=None):
    """Σ A @ B over ``pairs``, into ``out`` through ``scratch`` (arrays of the result's shape) when given, so that
    a per-step call allocates nothing."""
    (A, B), rest = pairs[0], pairs[1:]
    out = A @ B if out is None else np.matmul(A, B, out=out)
    for A, B in rest:
        out += A @ B if scratch is None else np.matmul(A, B, out=scratch)
    return out
