"""Stochastic gradient descent with momentum, weight decay and Nesterov, as torch.optim.SGD.

    g = dL/dθ + λθ;   v ← μ v + g   (v = g on the first step);   θ ← θ − lr · (g + μ v if nesterov else v)
"""
from mytorch.optim.optimizer import Optimizer


class SGD(Optimizer):
    """SGD(modules, lr, momentum=0, weight_decay=0, nesterov=False)."""

    def __init__(self, modules, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(modules, lr)
        if momentum < 0 or weight_decay < 0:
            raise ValueError("SGD: momentum and weight_decay must be >= 0")
        if nesterov and momentum == 0:
            raise ValueError("SGD: nesterov needs a momentum > 0")
        self.momentum, self.weight_decay, self.nesterov = momentum, weight_decay, nesterov

    def _update(self, state, param, grad):
        g = grad + self.weight_decay * param if self.weight_decay else grad
        if self.momentum:
            state["v"] = g.copy() if "v" not in state else self.momentum * state["v"] + g
            g = g + self.momentum * state["v"] if self.nesterov else state["v"]
        return self.lr * g
