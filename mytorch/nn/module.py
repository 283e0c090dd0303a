"""The base of every layer: named parameters, their gradients, and the record of forward steps.

``params`` and ``grads`` are dicts with the same keys and shapes. Parameter arrays are created once and only
ever changed in place (by ``load_state_dict`` and optimizers), so views of them (such as the GRU cell's
``Wrx``) and optimizers holding them stay valid.

Every forward that will be backpropagated pushes a named cache onto ``self._tape``; every backward pops
the newest one. Calling forward T times and backward T times therefore walks the steps last-in first-out:
backpropagation through time through a single object.
"""
import numpy as np

from mytorch.grad_mode import is_recording

#: dtype kinds an input may have: float, signed and unsigned int, bool (each cast to the module's dtype)
REAL_KINDS = "fiub"


class Module:
    """Named parameters and gradients, a LIFO record of forward steps, and torch-like conveniences."""

    def __init__(self, dtype=np.float64):
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"{type(self).__name__}: dtype must be a floating type, got {dtype}")
        self.dtype = dtype
        self.params = {}
        self.grads = {}
        self._tape = []

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ----------------------------------------------------------------------------------------------
    # parameters
    def _add_param(self, name, value):
        """Register parameter ``name`` (a copy of ``value`` in this module's dtype) and its zero gradient."""
        self.params[name] = np.array(value, dtype=self.dtype)
        self.grads[name] = np.zeros_like(self.params[name])

    def zero_grad(self):
        """Set every gradient to zero, in place."""
        for g in self.grads.values():
            g.fill(0)

    def state_dict(self):
        """A dict of copies of the parameters, keyed by name."""
        return {k: v.copy() for k, v in self.params.items()}

    def load_state_dict(self, state_dict, strict=True):
        """Copy parameters from ``state_dict`` (any array-likes, e.g. a torch state_dict's ``.numpy()`` values).

        Values are cast to this module's dtype and copied into the existing arrays. With ``strict``, the keys
        must match exactly. Nothing is changed unless every entry fits.
        """
        name = type(self).__name__
        given = dict(state_dict)
        missing = sorted(set(self.params) - set(given))
        unexpected = sorted(set(given) - set(self.params))
        if strict and (missing or unexpected):
            raise KeyError(f"{name}.load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        staged = {}
        for key in self.params.keys() & given.keys():
            value = np.asarray(given[key])
            if value.dtype.kind not in "fiu":
                raise TypeError(f"{name}.load_state_dict: '{key}' has dtype {value.dtype}, expected a real number type")
            if value.shape != self.params[key].shape:
                raise ValueError(f"{name}.load_state_dict: '{key}' has shape {value.shape}, "
                                 f"expected {self.params[key].shape}")
            staged[key] = value
        for key, value in staged.items():
            self.params[key][...] = value

    def num_parameters(self):
        """The total number of parameter entries."""
        return sum(p.size for p in self.params.values())

    def _array(self, value, what, method):
        """``value`` as a fresh array of this module's dtype, as NumPy users expect of a float computation.

        Accepted: float arrays of any precision, integer and boolean arrays (``np.random.randint`` inputs), and
        anything ``np.asarray`` turns into one of those (nested lists of numbers, scalars); each is cast to the
        module's dtype. Complex, object, string and date arrays are a TypeError naming ``what`` and its dtype:
        casting them would silently drop an imaginary part or guess at a meaning. Always a copy, so that later
        changes to the caller's array cannot reach a recorded cache.
        """
        try:
            a = np.asarray(value)
        except (ValueError, TypeError) as error:      # e.g. a ragged list
            raise ValueError(f"{type(self).__name__}.{method}: {what} is not an array ({error})") from None
        if a.dtype.kind not in REAL_KINDS:
            raise TypeError(f"{type(self).__name__}.{method}: {what} has dtype {a.dtype}, "
                            "expected real numbers (a float, int or bool array)")
        return np.array(a, dtype=self.dtype)

    # ----------------------------------------------------------------------------------------------
    # the record of forward steps
    def _record(self, cache):
        """Push one forward step's cache, unless inside ``no_grad()``."""
        if is_recording():
            self._tape.append(cache)

    def _pop(self, method="backward"):
        """Pop the newest forward step's cache; a backward with no forward left is a RuntimeError."""
        if not self._tape:
            raise RuntimeError(f"{type(self).__name__}.{method}: called without a matching forward (every backward "
                               "consumes one earlier forward, last in first out: a loop that calls backward more often "
                               "than forward, or before it, runs out; forwards inside no_grad() are not recorded)")
        return self._tape.pop()

    def clear_tape(self):
        """Forget every recorded forward step (e.g. after a forward that will not be backpropagated)."""
        self._tape.clear()

    @property
    def pending_steps(self):
        """How many recorded forward steps are waiting for a backward."""
        return len(self._tape)
