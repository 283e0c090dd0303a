"""Layers of mytorch: the recurrent cells, the sequence layer, Linear and the losses.

Each file of a cell, a layer or a loss is imported when one of its names is first used (``mytorch.nn.GRUCell``,
``from mytorch.nn import GRUCell``), not with the package: a program that uses one cell loads that cell's file
alone, and a file that fails to import (a half-written exercise) breaks nothing else: its names raise that
file's error when used, every time, and everything else keeps working.
"""
import importlib

from mytorch.nn import init
from mytorch.nn.cell import RecurrentCell
from mytorch.nn.module import Module

_FILES = {"linear": ["Linear"],                   # file -> the names it gives the package
          "loss": ["CrossEntropyLoss", "MSELoss"],
          "recurrent": ["GMU", "GRU", "LSTM", "RNN", "TGRU", "GRUBlock", "Recurrent"],
          "rnn_cell": ["RNNCell"],
          "gru_cell": ["GRUCell"],
          "gru_block_cell": ["GRUBlockCell", "gru_block_cell", "gru_block_cell_grad"],
          "gmu_cell": ["GMUCell"],
          "tgru_cell": ["TGRUCell"],
          "lstm_cell": ["LSTMCell"],
          "ctc": ["ctc_loss", "CTCLoss"],
          "ctc_decode": ["greedy_search", "beam_search", "prefix_beam_search"]}
_FILE_OF = {name: file for file, names in _FILES.items() for name in names}
_failed = {}                     # file -> the error it raised on import
CELL_NAMES = ("RNNCell", "GRUCell", "GRUBlockCell", "GMUCell", "TGRUCell", "LSTMCell")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def __getattr__(name):
    """A name of one of ``_FILES``, its file imported on first use; ``CELLS``: the six cell classes."""
    if name == "CELLS":
        return tuple(__getattr__(n) for n in CELL_NAMES)
    file = _FILE_OF.get(name)
    if file is None:
        raise AttributeError(f"module 'mytorch.nn' has no attribute {name!r}")
    if file in _failed:
        raise _failed[file]
    try:
        loaded = importlib.import_module(f"mytorch.nn.{file}")
    except Exception as error:   # SyntaxError, ImportError, NameError … in that file alone
        _failed[file] = error
        raise
    globals().update({n: getattr(loaded, n) for n in _FILES[file]})
    return globals()[name]


__all__ = ["init", "Module", "RecurrentCell", "Linear", "MSELoss", "CrossEntropyLoss", "Recurrent", "RNN", "GRU",
           "GRUBlock", "GMU", "TGRU", "LSTM", "CELLS", "gru_block_cell", "gru_block_cell_grad", *CELL_NAMES,
           "ctc_loss", "CTCLoss", "greedy_search", "beam_search", "prefix_beam_search"]
