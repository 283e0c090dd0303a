"""Adam, as torch.optim.Adam (L2 weight decay added to the gradient).

    g = dL/dθ + λθ;   m ← β₁m + (1 − β₁)g;   v ← β₂v + (1 − β₂)g²
    θ ← θ − lr · (m / (1 − β₁ᵗ)) / (sqrt(v / (1 − β₂ᵗ)) + ε)
"""
import numpy as np

from mytorch.optim.optimizer import Optimizer


class Adam(Optimizer):
    """Adam(modules, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)."""

    def __init__(self, modules, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(modules, lr)
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"Adam: betas must be in [0, 1), got {betas}")
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay

    def _update(self, state, param, grad):
        b1, b2 = self.betas
        g = grad + self.weight_decay * param if self.weight_decay else grad
        if not state:
            state.update(t=0, m=np.zeros_like(param), v=np.zeros_like(param))
        state["t"] += 1
        state["m"] = b1 * state["m"] + (1 - b1) * g
        state["v"] = b2 * state["v"] + (1 - b2) * g * g
        m_hat = state["m"] / (1 - b1 ** state["t"])
        v_hat = state["v"] / (1 - b2 ** state["t"])
        return self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
