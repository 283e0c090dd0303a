"""Optimizers (SGD with momentum, Adam) and gradient clipping; each updates parameters in place."""
from mytorch.optim.adam import Adam
from mytorch.optim.clip import clip_grad_norm
from mytorch.optim.optimizer import Optimizer
from mytorch.optim.sgd import SGD

__all__ = ["SGD", "Adam", "Optimizer", "clip_grad_norm"]
