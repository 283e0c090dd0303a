"""Layers of mytorch: the recurrent cells, the sequence layer, Linear and the losses."""
from mytorch.nn import init
from mytorch.nn.cell import RecurrentCell
from mytorch.nn.gmu_cell import GMUCell
from mytorch.nn.gru_block_cell import GRUBlockCell, gru_block_cell, gru_block_cell_grad
from mytorch.nn.gru_cell import GRUCell
from mytorch.nn.linear import Linear
from mytorch.nn.loss import CrossEntropyLoss, MSELoss
from mytorch.nn.module import Module
from mytorch.nn.recurrent import GMU, GRU, RNN, TGRU, GRUBlock, Recurrent
from mytorch.nn.rnn_cell import RNNCell
from mytorch.nn.tgru_cell import TGRUCell

CELLS = (RNNCell, GRUCell, GRUBlockCell, GMUCell, TGRUCell)

__all__ = ["init", "Module", "RecurrentCell", "RNNCell", "GRUCell", "GRUBlockCell", "GMUCell", "TGRUCell",
           "gru_block_cell", "gru_block_cell_grad", "Recurrent", "RNN", "GRU", "GRUBlock", "GMU", "TGRU",
           "Linear", "MSELoss", "CrossEntropyLoss", "CELLS"]
