"""Pictures drawn before the algebra: the RNN unrolled in time, and the GRU's and LSTM's gates as circuits.

    from diagrams import unrolled_rnn, gru_circuit, lstm_circuit
    unrolled_rnn()                  # three steps of RNNCell, the weights W_ih and W_hh shared by every step
    unrolled_rnn(backward=True)     # the same, with the gradient flowing back through diag(1 - h_t²) W_hh

Each function draws on ``ax`` (a new figure when None) and returns the axes; the names are those of the
code (x_t, h_{t-1}, weight_ih as W_ih, weight_hh as W_hh, the gates r, z, n and i, f, g, o, the cell state c).
Only matplotlib is used, never your ``mytorch``: the pictures run before any part is written. ``labels(ax)``
lists the text an axes holds (the tests read it).
"""
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

STATE, INPUT, GATE, GRAD = "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728"


def _axes(ax, size, xlim, ylim):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _box(ax, x, y, text, color, w=1.5, h=0.8, size=11):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05", fc="white", ec=color, lw=1.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=size)


def _node(ax, x, y, text, color="black", r=0.28):
    ax.add_patch(Circle((x, y), r, fc="white", ec=color, lw=1.5))
    ax.text(x, y, text, ha="center", va="center", fontsize=11)


def _arrow(ax, a, b, color="black", label=None, where=0.5, offset=(0.0, 0.2), style="-|>", ls="-", size=10, rad=0.0):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=12, color=color, lw=1.4, linestyle=ls,
                                 shrinkA=4, shrinkB=4, connectionstyle=f"arc3,rad={rad}"))
    if label:
        x = a[0] + where * (b[0] - a[0]) + offset[0]
        y = a[1] + where * (b[1] - a[1]) + offset[1]
        ax.text(x, y, label, ha="center", va="center", fontsize=size, color=color)


def unrolled_rnn(steps=3, backward=False, ax=None):
    """``steps`` calls of RNNCell, h_{t-1} -> h_t, each reading x_t; the same W_ih and W_hh at every step.

    With ``backward``: the gradient ∂L/∂h_t flowing right to left, multiplied at each step by the Jacobian
    ∂h_t/∂h_{t-1} = diag(1 - h_t²) W_hh."""
    names = ["t-1", "t", "t+1", "t+2", "t+3"][:steps] if steps <= 5 else [str(k) for k in range(1, steps + 1)]
    ax = _axes(ax, (2.6 * steps + 1.5, 3.6 if backward else 3.0), (-1.2, 3 * steps + 1.0), (-0.9, 3.6 if backward else 2.6))
    prev = {"t-1": "t-2", "t": "t-1", "t+1": "t", "t+2": "t+1", "t+3": "t+2"}
    for k, t in enumerate(names):
        cx = 3 * k + 1.5
        _box(ax, cx, 1.2, "RNNCell\n" + r"$h_{%s} = \tanh(\cdot)$" % t, STATE, w=1.9, h=1.0, size=9)
        ax.text(cx, -0.7, r"$x_{%s}$" % t, ha="center", fontsize=12, color=INPUT)
        _arrow(ax, (cx, -0.35), (cx, 0.68), INPUT, r"$W_{ih}$", offset=(0.35, 0))
        _arrow(ax, (cx - 3 + 0.95, 1.2), (cx - 0.95, 1.2), STATE, r"$W_{hh}$", offset=(0, 0.25))
        before = names[k - 1] if k > 0 else prev.get(t, f"{int(t) - 1}" if t.isdigit() else "0")
        ax.text(cx - 1.5, 0.75, r"$h_{%s}$" % before, ha="center", fontsize=11, color=STATE)
        if backward:
            _arrow(ax, (cx + 0.9, 2.5), (cx - 2.1, 2.5), GRAD, r"$\times\,\mathrm{diag}(1-h_{%s}^2)\,W_{hh}$" % t,
                   offset=(0, 0.3), ls="--", size=9)
            ax.text(cx + 0.9, 2.05, r"$\partial L/\partial h_{%s}$" % t, ha="center", fontsize=9, color=GRAD)
    last = 3 * (steps - 1) + 1.5
    _arrow(ax, (last + 0.95, 1.2), (last + 1.9, 1.2), STATE)
    ax.text(last + 1.5, 0.75, r"$h_{%s}$" % names[-1], ha="center", fontsize=11, color=STATE)
    ax.set_title("the RNN unrolled: one cell, the same $W_{ih}$ and $W_{hh}$ at every step"
                 + (";\nits gradient flows back through one Jacobian per step" if backward else ""), fontsize=10)
    return ax


def gru_circuit(ax=None):
    """The GRU step (PyTorch's convention) as a circuit: gates r, z from x_t and h_{t-1}; the candidate n sees
    h_{t-1} only through r; h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}, a mix of old and new chosen per unit by z."""
    ax = _axes(ax, (8.5, 4.6), (-0.6, 11.2), (-0.6, 6.0))
    top = 5.0
    ax.text(-0.4, top + 0.3, r"$h_{t-1}$", fontsize=12, color=STATE)
    ax.text(0.2, -0.4, r"$x_t$", fontsize=12, color=INPUT)
    gates = {"r": (1.8, r"$r=\sigma(\cdot)$"), "n": (5.0, r"$n=\tanh(\cdot)$"), "z": (8.2, r"$z=\sigma(\cdot)$")}
    for name, (gx, text) in gates.items():
        _box(ax, gx, 2.4, text, GATE, w=1.7)
        _arrow(ax, (0.5, -0.1), (gx - 0.3, 2.0), INPUT, rad=-0.1)
        if name != "n":
            _arrow(ax, (gx, top), (gx, 2.8), STATE)
    _arrow(ax, (-0.4, top), (6.52, top), STATE, style="-")
    ax.text(0.9, -0.5, r"$x_t W_{ih}^\top$ (rows r | z | n)", fontsize=9, color=INPUT)
    ax.text(0.4, 3.9, r"$h_{t-1} W_{hh}^\top$", fontsize=9, color=STATE)
    # the reset gate scales the recurrent part of the candidate, and only that
    _node(ax, 3.6, 3.7, r"$\odot$", GATE)
    _arrow(ax, (2.3, 2.8), (3.35, 3.55), GATE, r"$r$", offset=(-0.1, 0.3))
    _arrow(ax, (3.6, top), (3.6, 3.98), STATE, r"$W_{hn}$", offset=(0.45, 0.05))
    _arrow(ax, (3.8, 3.5), (4.6, 2.8), GATE)
    # h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}
    _node(ax, 6.8, top, r"$\odot$", GATE)
    _arrow(ax, (8.0, 2.8), (6.95, 4.73), GATE, r"$z$", offset=(0.3, 0.1))
    _node(ax, 9.5, 3.7, r"$\odot$", GATE)
    _arrow(ax, (5.85, 2.6), (9.22, 3.65), GATE, r"$n$", where=0.25, offset=(0, 0.25))
    _arrow(ax, (8.7, 2.8), (9.35, 3.45), GATE, r"$1-z$", offset=(0.45, -0.15), size=9)
    _node(ax, 9.5, top, "+")
    _arrow(ax, (7.08, top), (9.22, top), STATE, r"$z\odot h_{t-1}$", offset=(0, 0.3), size=9)
    _arrow(ax, (9.5, 3.98), (9.5, 4.72), GATE, r"$(1-z)\odot n$", offset=(1.0, 0), size=9)
    _arrow(ax, (9.78, top), (11.0, top), STATE)
    ax.text(10.4, top + 0.3, r"$h_t$", fontsize=12, color=STATE)
    ax.set_title("GRU: $r$ picks how much of $h_{t-1}$ the candidate $n$ sees; "
                 "$z$ keeps old or takes new, per unit", fontsize=10)
    return ax


def lstm_circuit(ax=None):
    """The LSTM step as a circuit: along the top the cell state, c_t = f ⊙ c_{t-1} + i ⊙ g (no matrix, no
    squashing on that path); along the bottom h_{t-1} and x_t feed the four gates i, f, g, o; h_t = o ⊙ tanh(c_t)."""
    ax = _axes(ax, (8.5, 4.6), (-0.6, 11.2), (-0.8, 6.0))
    top = 5.0
    ax.text(-0.4, top + 0.3, r"$c_{t-1}$", fontsize=12, color=STATE)
    ax.text(-0.4, 0.3, r"$h_{t-1}$", fontsize=12, color=STATE)
    ax.text(-0.4, -0.6, r"$x_t$", fontsize=12, color=INPUT)
    _arrow(ax, (-0.4, 0.0), (7.0, 0.0), STATE, style="-")
    _arrow(ax, (-0.4, -0.3), (7.0, -0.3), INPUT, style="-")
    ax.text(0.5, 0.9, r"$x_t W_{ih}^\top + h_{t-1} W_{hh}^\top$" + "\n(rows i | f | g | o)", fontsize=8)
    gates = {"f": (2.6, r"$f=\sigma$"), "i": (4.2, r"$i=\sigma$"), "g": (5.6, r"$g=\tanh$"), "o": (7.0, r"$o=\sigma$")}
    for name, (gx, text) in gates.items():
        _box(ax, gx, 2.0, text, GATE, w=1.2, h=0.7, size=10)
        _arrow(ax, (gx, 0.0), (gx, 1.62), STATE)
    _node(ax, 2.6, top, r"$\odot$", GATE)
    _arrow(ax, (-0.4, top), (2.32, top), STATE)
    _arrow(ax, (2.6, 2.38), (2.6, 4.72), GATE, r"$f$", offset=(0.25, 0))
    _node(ax, 4.9, 3.6, r"$\odot$", GATE)
    _arrow(ax, (4.2, 2.38), (4.75, 3.35), GATE, r"$i$", offset=(-0.25, 0))
    _arrow(ax, (5.6, 2.38), (5.05, 3.35), GATE, r"$g$", offset=(0.25, 0))
    _node(ax, 4.9, top, "+")
    _arrow(ax, (2.88, top), (4.62, top), STATE, r"$f\odot c_{t-1}$", offset=(0, 0.3), size=9)
    _arrow(ax, (4.9, 3.88), (4.9, 4.72), GATE)
    _arrow(ax, (5.18, top), (10.6, top), STATE)
    ax.text(10.0, top + 0.3, r"$c_t$", fontsize=12, color=STATE)
    _box(ax, 8.6, 3.9, r"$\tanh$", STATE, w=0.9, h=0.55, size=10)
    _arrow(ax, (8.6, top), (8.6, 4.2), STATE)
    _node(ax, 8.6, 2.0, r"$\odot$", GATE)
    _arrow(ax, (8.6, 3.6), (8.6, 2.28), STATE)
    _arrow(ax, (7.62, 2.0), (8.32, 2.0), GATE, r"$o$", offset=(0, 0.25))
    _arrow(ax, (8.88, 2.0), (10.6, 2.0), STATE)
    ax.text(9.7, 2.3, r"$h_t$", fontsize=12, color=STATE)
    ax.text(5.6, 5.55, "the cell-state path: one multiplication by f per step, no weight matrix",
            fontsize=8, ha="center", color=STATE)
    ax.set_title("LSTM: f keeps the memory, i lets g in, o lets it out", fontsize=10)
    return ax


def labels(ax):
    """The text drawn on ``ax``: every label and the title."""
    return [t.get_text() for t in ax.texts] + [ax.get_title()]
