"""Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_."""
import math

import numpy as np

from mytorch.optim.optimizer import parameter_pairs


def clip_grad_norm(modules, max_norm):
    """Scale every gradient in place so their joint L2 norm is at most ``max_norm``; return the norm before.

    The scale is max_norm / (norm + 1e-6) when that is below 1, as in PyTorch.
    """
    pairs = parameter_pairs(modules)
    total = math.sqrt(sum(float(np.sum(np.square(grad, dtype=np.float64))) for _, _, grad in pairs))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for _, _, grad in pairs:
            grad *= scale
    return total
