"""An independent NumPy oracle: each cell's forward written afresh from the reference systems' equations (no mytorch
code), and centred finite differences over it. Used to check the stored reference data."""
import numpy as np


def sig(a):
    with np.errstate(over="ignore"):            # exp(-a) = inf for a < -709 gives the exact limit 0
        return 1.0 / (1.0 + np.exp(-a))


def thirds(a):
    return np.split(a, 3, axis=0)


def step(cell, p, x, state, flags):
    """One step: (new state parts, intermediates). x (..., I); works batched or unbatched."""
    if cell == "RNNCell":
        (h,) = state
        a = x @ p["weight_ih"].T + h @ p["weight_hh"].T
        if "bias_ih" in p:
            a = a + p["bias_ih"] + p["bias_hh"]
        return (np.maximum(a, 0) if flags.get("nonlinearity") == "relu" else np.tanh(a),), {}
    if cell == "GRUCell":
        (h,) = state
        (W_ir, W_iz, W_in), (W_hr, W_hz, W_hn) = thirds(p["weight_ih"]), thirds(p["weight_hh"])
        (b_ir, b_iz, b_in), (b_hr, b_hz, b_hn) = thirds(p["bias_ih"]), thirds(p["bias_hh"])
        r = sig(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
        z = sig(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
        n = np.tanh(x @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
        return ((1 - z) * n + z * h,), {"r": r, "z": z, "n": n}
    if cell == "GRUBlockCell":
        (h,) = state
        H = h.shape[-1]
        ru = sig(np.concatenate([x, h], -1) @ p["w_ru"] + p["b_ru"])
        r, u = ru[..., :H], ru[..., H:]
        c = np.tanh(np.concatenate([x, r * h], -1) @ p["w_c"] + p["b_c"])
        return (u * h + (1 - u) * c,), {"r": r, "u": u, "c": c}
    if cell == "GMUCell":
        h, c = state
        a_i, a_m, a_o = np.split(x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"], 3, -1)
        i, m, o = np.tanh(a_i), sig(a_m + p["weight_ch_m"] * c), sig(a_o + p["weight_ch_o"] * c)
        return ((1 - m) * c + m * i, (1 - o) * i + o * c), {"i": i, "m": m, "o": o}
    if cell == "TGRUCell":
        h, mem = state
        a = x @ p["weight_ih"].T + mem @ p["weight_hh"].T
        a = a + p.get("bias_ih", 0) + p.get("bias_hh", 0)
        a_z, a_f, a_o = np.split(a, 3, -1)
        z, f, o = a_z, sig(a_f), np.tanh(a_o)
        return (f * h + z * o, x.copy()), {"z": z, "f": f, "o": o}
    if cell == "LSTMCell":
        h, c = state
        a = x @ p["weight_ih"].T + h @ p["weight_hh"].T
        if "bias_ih" in p:
            a = a + p["bias_ih"] + p["bias_hh"]
        a_i, a_f, a_g, a_o = np.split(a, 4, -1)
        i, f, g, o = sig(a_i), sig(a_f), np.tanh(a_g), sig(a_o)
        c_new = f * c + i * g
        h_new = o * np.tanh(c_new)
        if "weight_hr" in p:
            h_new = h_new @ p["weight_hr"].T
        return (h_new, c_new), {"i": i, "f": f, "g": g, "o": o}
    raise KeyError(cell)


def numeric_gradient(loss, array, eps=1e-6):
    grad = np.zeros_like(array)
    for idx in np.ndindex(array.shape):
        keep = array[idx]
        array[idx] = keep + eps
        up = loss()
        array[idx] = keep - eps
        down = loss()
        array[idx] = keep
        grad[idx] = (up - down) / (2 * eps)
    return grad
