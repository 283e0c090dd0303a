"""Whether forward passes record what their backward needs.

Cells and layers keep a last-in first-out record of every forward step so that T forwards followed by T
backwards is backpropagation through time. Inference that never calls backward would let that record
grow; inside ``with mytorch.no_grad():`` nothing is recorded, as in PyTorch.
"""
import contextlib

_recording = True


def is_recording():
    """True unless inside ``no_grad()``."""
    return _recording


@contextlib.contextmanager
def no_grad():
    """Context manager: forward passes inside it record nothing (and so cannot be backpropagated)."""
    global _recording
    previous, _recording = _recording, False
    try:
        yield
    finally:
        _recording = previous
