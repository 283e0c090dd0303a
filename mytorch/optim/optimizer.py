"""What every optimizer shares: the (parameter, gradient) pairs it updates, in place."""


def parameter_pairs(modules):
    """``[(name, param, grad), …]`` from a module or a list of modules (anything with params/grads dicts)."""
    if hasattr(modules, "params"):
        modules = [modules]
    pairs, seen = [], set()
    for index, module in enumerate(modules):
        if not hasattr(module, "params") or not hasattr(module, "grads"):
            raise TypeError(f"expected modules with .params and .grads, got {type(module).__name__}")
        for name, param in module.params.items():
            if id(param) not in seen:                # a parameter shared by two modules is updated once
                seen.add(id(param))
                pairs.append((f"{index}.{name}", param, module.grads[name]))
    return pairs


class Optimizer:
    """Base class: holds the pairs; ``zero_grad()`` clears every gradient; ``step()`` updates in place."""

    def __init__(self, modules, lr):
        if not lr > 0:
            raise ValueError(f"{type(self).__name__}: lr must be positive, got {lr!r}")
        self.lr = lr
        self.pairs = parameter_pairs(modules)
        self.state = {name: {} for name, _, _ in self.pairs}

    def zero_grad(self):
        for _, _, grad in self.pairs:
            grad.fill(0)

    def step(self):
        for name, param, grad in self.pairs:
            param -= self._update(self.state[name], param, grad).astype(param.dtype, copy=False)

    def _update(self, state, param, grad):
        raise NotImplementedError
