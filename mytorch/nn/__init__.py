"""Layers of mytorch: the recurrent cells, the sequence layer, Linear and the losses.

Each cell's file is imported here, but a file that fails to import (a half-written exercise) does not break
the package: its names raise that file's error when used, and every other cell keeps working.
"""
import importlib

from mytorch.nn import init
from mytorch.nn.cell import RecurrentCell
from mytorch.nn.linear import Linear
from mytorch.nn.loss import CrossEntropyLoss, MSELoss
from mytorch.nn.module import Module
from mytorch.nn.recurrent import GMU, GRU, LSTM, RNN, TGRU, GRUBlock, Recurrent

_failed = {}                     # name -> the error its file raised on import


def _load(module, names):
    try:
        loaded = importlib.import_module(f"mytorch.nn.{module}")
    except Exception as error:   # SyntaxError, ImportError, NameError … in that file alone
        _failed.update(dict.fromkeys(names, error))
        return
    globals().update({name: getattr(loaded, name) for name in names})


_load("rnn_cell", ["RNNCell"])
_load("gru_cell", ["GRUCell"])
_load("gru_block_cell", ["GRUBlockCell", "gru_block_cell", "gru_block_cell_grad"])
_load("gmu_cell", ["GMUCell"])
_load("tgru_cell", ["TGRUCell"])
_load("lstm_cell", ["LSTMCell"])
_load("ctc", ["ctc_loss", "CTCLoss"])
_load("ctc_decode", ["greedy_search", "beam_search", "prefix_beam_search"])
CELL_NAMES = ("RNNCell", "GRUCell", "GRUBlockCell", "GMUCell", "TGRUCell", "LSTMCell")


def __getattr__(name):
    if name in _failed:
        raise _failed[name]
    if name == "CELLS":
        return tuple(globals().get(n) or __getattr__(n) for n in CELL_NAMES)
    raise AttributeError(f"module 'mytorch.nn' has no attribute {name!r}")


__all__ = ["init", "Module", "RecurrentCell", "Linear", "MSELoss", "CrossEntropyLoss", "Recurrent", "RNN", "GRU",
           "GRUBlock", "GMU", "TGRU", "LSTM", "CELLS", "gru_block_cell", "gru_block_cell_grad", *CELL_NAMES,
           "ctc_loss", "CTCLoss", "greedy_search", "beam_search", "prefix_beam_search"]
