"""The stored reference data agrees with an independent oracle (equations written afresh in tests/oracle.py,
finite differences for every gradient; torch for the RNN and GRU parts when installed), and it is exactly
what the generator computes from the fixed seed."""
import numpy as np
import pytest

from autograder.parts import course, data, spec
from tests import oracle
from tests.conftest import needs_torch
from tests.test_gru_block_ops import kernel_grad

CELL_PARTS = [p for p in spec.PARTS if p.kind not in ("sequence", "ctc")]
SEQ_PARTS = [p for p in spec.PARTS if p.kind == "sequence"]
STATE_NAMES = {"RNNCell": ("h",), "GRUCell": ("h",), "GRUBlockCell": ("h",), "GMUCell": ("h", "c"),
               "TGRUCell": ("h", "m"), "LSTMCell": ("h", "c")}
TOL = dict(rtol=1e-5, atol=1e-7)     # finite differences in float64 reach ~1e-9 here


def cases(part):
    stored = data.load_part(part.number)
    return list(zip(stored.configs, stored.inputs, stored.expected))


def initial_state(config, inputs, params, n_shape, prefix="state"):
    widths = spec.state_widths(config["cell"], config["I"], config["H"], config["flags"])
    parts = []
    for k, w in enumerate(widths):
        key = f"{prefix}/{k}"
        if key in inputs:
            parts.append(inputs[key].copy())
        else:
            vector = params[("hidden_state", "memory")[k]] if config["flags"].get(("train_state", "train_memory")[k]) \
                else np.zeros(w)
            parts.append(np.broadcast_to(vector, n_shape + (w,)).copy())
    return parts


def params_of(inputs):
    return {k[len("param/"):]: v.copy() for k, v in inputs.items() if k.startswith("param/")}


@pytest.mark.parametrize("part", CELL_PARTS, ids=lambda p: p.number)
def test_cell_parts_against_the_oracle(part):
    for config, inputs, expected in cases(part):
        p, cell, flags = params_of(inputs), config["cell"], config["flags"]
        x = inputs["x"].copy()
        n_shape = () if config["n"] is None else (config["n"],)
        state0 = initial_state(config, inputs, p, n_shape)
        names = STATE_NAMES[cell]

        trainable = [config["flags"].get(f) for f in ("train_state", "train_memory")][:len(state0)]
        if any(trainable):                       # state = broadcast(parameter) + delta; delta is what d*_prev is of
            state0 = [np.zeros_like(s) for s in state0]

        def start():
            return [delta + np.broadcast_to(p[("hidden_state", "memory")[k]], delta.shape) if trainable[k] else delta
                    for k, delta in enumerate(state0)] if any(trainable) else state0

        def run(record=None):
            state = start()
            for s in range(config["steps"]):
                state, extra = oracle.step(cell, p, x[s], state, flags)
                if record is not None:
                    record.append((state, extra))
            return state

        if part.kind == "forward":
            trace = []
            state = run(trace)
            for k, name in enumerate(names):
                np.testing.assert_allclose(expected[f"{name}_t"], state[k], rtol=1e-12, atol=1e-14)
            for name, value in trace[-1][1].items():
                np.testing.assert_allclose(expected[name], value, rtol=1e-12, atol=1e-14)
            if cell == "GRUBlockCell":
                _, extra = oracle.step(cell, p, np.atleast_2d(x[0]), [np.atleast_2d(inputs["state/0"])], flags)
                for name in ("r", "u", "c"):
                    np.testing.assert_allclose(expected[f"op/{name}"], extra[name], rtol=1e-12)
            continue

        def loss():
            total, state = 0.0, start()
            for s in range(config["steps"]):
                state, _ = oracle.step(cell, p, x[s], state, flags)
                total += sum(np.sum(inputs[f"d_state/{k}"][s] * state[k]) for k in range(len(names)))
            return total

        # with |x| ~ 5000 a difference step is ~1e-10 of x: rounding in x + step costs about 1e-6 absolute
        tol = dict(rtol=1e-4, atol=1e-5) if config.get("scale") else TOL
        np.testing.assert_allclose(expected["dx"], oracle.numeric_gradient(loss, x), **tol)
        for k, name in enumerate(names):
            np.testing.assert_allclose(expected[f"d{name}_prev"], oracle.numeric_gradient(loss, state0[k]), **tol)
        for name in p:
            np.testing.assert_allclose(expected[f"grad/{name}"], oracle.numeric_gradient(loss, p[name]), **tol)
        if config["interface"] == "course":
            H = config["H"]
            np.testing.assert_array_equal(expected["dWzh"], expected["grad/weight_hh"][H:2 * H])
            np.testing.assert_array_equal(expected["dbnx"], expected["grad/bias_ih"][2 * H:])
        if cell == "GRUBlockCell":
            x2, h2 = np.atleast_2d(x[0]), np.atleast_2d(inputs["state/0"])
            op = kernel_grad(x2, h2, p["w_ru"], p["w_c"], *(inputs[f"op/{k}"] for k in ("r", "u", "c", "d_h")))
            for name, value in zip(("d_x", "d_h_prev", "d_c_bar", "d_r_bar_u_bar"), op):
                np.testing.assert_allclose(expected[f"op/{name}"], value, rtol=1e-12, atol=1e-14)


def directions(config):
    return 2 if config.get("bidirectional") else 1


def entry_params(p, k, D):
    """The parameters of direction entry k (= layer·D + direction), without their suffix."""
    suffix = f"_l{k // D}" + ("_reverse" if k % D else "")
    return {name[:-len(suffix)]: v for name, v in p.items() if name.endswith(suffix)}


def entry_input_width(config, k):
    H_out = spec.state_widths(config["cell"], config["I"], config["H"], config["flags"])[0]
    return config["I"] if k < directions(config) else directions(config) * H_out


def sequence_forward(config, inputs, p, X, state0):
    """The layer, from the oracle's cells, one direction at a time with per-sequence masks written out:
    returns (Y time-major, final states per direction entry)."""
    cell, L, D, T = config["cell"], config["layers"], directions(config), X.shape[0]
    lengths = config.get("lengths") or [T] * (1 if X.ndim == 2 else X.shape[1])
    finals, inp = [], X
    for layer in range(L):
        outputs = []
        for direction in range(D):
            k = layer * D + direction
            state, Y = list(state0[k]), [None] * T
            for t in (reversed(range(T)) if direction else range(T)):
                new, _ = oracle.step(cell, entry_params(p, k, D), inp[t], state, config["flags"])
                live = np.array([t < length for length in lengths])
                live = live[0] if X.ndim == 2 else live[:, None]
                state = [np.where(live, a, b) for a, b in zip(new, state)]
                Y[t] = np.where(live, new[0], 0.0)
            outputs.append(np.stack(Y))
            finals.append(state)
        inp = np.concatenate(outputs, axis=-1)
    return inp, finals


@pytest.mark.parametrize("part", SEQ_PARTS, ids=lambda p: p.number)
def test_sequence_parts_against_the_oracle(part):
    for config, inputs, expected in cases(part):
        p, L = params_of(inputs), config["layers"] * directions(config)
        D = directions(config)
        X = inputs["X"].copy()
        time_major = X if X.ndim == 2 or not config["batch_first"] else X.transpose(1, 0, 2)
        dY = inputs["dY"] if X.ndim == 2 or not config["batch_first"] else inputs["dY"].transpose(1, 0, 2)
        n_shape = () if config["n"] is None else (config["n"],)
        state0 = []
        for layer in range(L):                                        # one entry per direction of each layer
            layer_config = dict(config, I=entry_input_width(config, layer))
            lp = entry_params(p, layer, D)
            state0.append(initial_state(layer_config, inputs, lp, n_shape, prefix=f"state0/{layer}"))
            if not any(k.startswith("state0/") for k in inputs):     # trainable: the state comes from params
                for k in range(len(state0[-1])):
                    state0[-1][k] = None
        names = STATE_NAMES[config["cell"]]

        def materialise():
            out = []
            for layer, parts in enumerate(state0):
                lp = entry_params(p, layer, D)
                layer_config = dict(config, I=entry_input_width(config, layer))
                out.append([part if part is not None else initial_state(layer_config, {}, lp, n_shape)[k]
                            for k, part in enumerate(parts)])
            return out

        Y, final = sequence_forward(config, inputs, p, time_major, materialise())
        Y_user = Y if X.ndim == 2 or not config["batch_first"] else Y.transpose(1, 0, 2)
        np.testing.assert_allclose(expected["Y"], Y_user, rtol=1e-12, atol=1e-14)
        for layer in range(L):
            for k, name in enumerate(names):
                np.testing.assert_allclose(expected[f"state_T/{layer}/{name}"], final[layer][k], rtol=1e-12, atol=1e-14)

        def loss():
            Y, final = sequence_forward(config, inputs, p, time_major, materialise())
            total = np.sum(dY * Y)
            for layer in range(L):
                total += sum(np.sum(inputs[f"d_state_T/{layer}/{k}"] * final[layer][k]) for k in range(len(names)))
            return total

        dX = oracle.numeric_gradient(loss, time_major)
        np.testing.assert_allclose(expected["dX"], dX if X.ndim == 2 or not config["batch_first"]
                                   else dX.transpose(1, 0, 2), **TOL)
        for name in p:
            np.testing.assert_allclose(expected[f"grad/{name}"], oracle.numeric_gradient(loss, p[name]), **TOL)
        if state0[0][0] is not None:
            for layer in range(L):
                for k, name in enumerate(names):
                    np.testing.assert_allclose(expected[f"d_state0/{layer}/{name}"],
                                               oracle.numeric_gradient(loss, state0[layer][k]), **TOL)


@needs_torch
@pytest.mark.parametrize("number", ["1.2", "2.2", "6.1", "6.2"])
def test_rnn_and_gru_parts_against_torch(number):
    import torch
    part = spec.PARTS_BY_NUMBER[number]
    for config, inputs, expected in cases(part):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in params_of(inputs).items()}
        if part.kind == "sequence":
            bidirectional = config.get("bidirectional", False)
            cells = config["layers"] * (2 if bidirectional else 1)   # entry k = layer·D + direction, as PyTorch's
            module = (torch.nn.RNN if config["cell"] == "RNNCell" else torch.nn.GRU)(
                config["I"], config["H"], num_layers=config["layers"], batch_first=config["batch_first"],
                bidirectional=bidirectional).double()
            X = torch.tensor(inputs["X"], requires_grad=True)
            given = "state0/0/0" in inputs                  # a case without state0 starts from zeros
            state0 = torch.tensor(np.stack([inputs[f"state0/{l}/0"] if given else np.zeros(X.shape[1:-1] + (config["H"],))
                                            for l in range(cells)]), requires_grad=True)
            if config.get("lengths") is not None:          # padded: PyTorch's packed sequence is the oracle
                pack = torch.nn.utils.rnn
                packed = pack.pack_padded_sequence(X, torch.tensor(config["lengths"]), config["batch_first"],
                                                   enforce_sorted=False)
                Y, h_n = torch.func.functional_call(module, p, (packed, state0))
                Y = pack.pad_packed_sequence(Y, config["batch_first"], total_length=config["steps"])[0]
            else:
                Y, h_n = torch.func.functional_call(module, p, (X, state0))
            d_hn = np.stack([inputs[f"d_state_T/{l}/0"] for l in range(cells)])
            ((Y * torch.tensor(inputs["dY"])).sum() + (h_n * torch.tensor(d_hn)).sum()).backward()
            np.testing.assert_allclose(expected["Y"], Y.detach().numpy(), rtol=1e-10)
            np.testing.assert_allclose(expected["dX"], X.grad.numpy(), rtol=1e-10, atol=1e-12)
            for l in range(cells if given else 0):
                np.testing.assert_allclose(expected[f"d_state0/{l}/h"], state0.grad[l].numpy(), rtol=1e-10, atol=1e-12)
        else:
            module = (torch.nn.RNNCell(config["I"], config["H"], **config["flags"]) if config["cell"] == "RNNCell"
                      else torch.nn.GRUCell(config["I"], config["H"])).double()
            x = torch.tensor(inputs["x"], requires_grad=True)
            h = torch.tensor(inputs["state/0"], requires_grad=True)
            state, total = h, 0
            for s in range(config["steps"]):
                state = torch.func.functional_call(module, p, (x[s], state))
                total = total + (state * torch.tensor(inputs["d_state/0"][s])).sum()
            total.backward()
            np.testing.assert_allclose(expected["dx"], x.grad.numpy(), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(expected["dh_prev"], h.grad.numpy(), rtol=1e-10, atol=1e-12)
        for name, tensor in p.items():
            np.testing.assert_allclose(expected[f"grad/{name}"], tensor.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def solution_zygote():
    """One zygote of the solution's for the module's checks (the generator shares its own across parts too)."""
    from autograder.sandbox import zygotes
    with zygotes.running(1) as workers:
        yield workers


@pytest.mark.parametrize("part", [p.number for p in spec.PARTS])
def test_reference_data_is_what_the_generator_computes(part, solution_zygote):
    from autograder.instructor import generate
    assert generate.check(parts=[spec.PARTS_BY_NUMBER[part]], workers=solution_zygote) == []


def test_manifest_lists_every_part():
    manifest = data.read_manifest()
    assert manifest["seed"] == course.load_course().seed
    assert set(manifest["files"]) == {data.file_name(p.number) for p in spec.PARTS}


@needs_torch
def test_lstm_layer_part_against_torch_packed_sequences():
    """Part 7.3 against torch.nn.LSTM over pack_padded_sequence (enforce_sorted=False), every array."""
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    tol = dict(rtol=1e-10, atol=1e-12)
    for config, inputs, expected in cases(spec.PARTS_BY_NUMBER["7.3"]):
        L, T, bf, entries = config["layers"], config["steps"], config["batch_first"], 2 * config["layers"]
        batch_axis = 0 if bf else 1

        def batched(a, axis=batch_axis):
            """torch's packing needs a batch: an unbatched case becomes a batch of one."""
            return a if config["n"] is not None else np.expand_dims(a, axis)

        def stacked(prefix, j, grad=False):
            return torch.tensor(batched(np.stack([inputs[f"{prefix}/{k}/{j}"] for k in range(entries)]), 1),
                                requires_grad=grad)

        module = torch.nn.LSTM(config["I"], config["H"], num_layers=L, batch_first=bf, bidirectional=True,
                               proj_size=config["flags"].get("proj_size", 0)).double()
        p = {k: torch.tensor(v, requires_grad=True) for k, v in params_of(inputs).items()}
        h0, c0 = stacked("state0", 0, True), stacked("state0", 1, True)
        X = torch.tensor(batched(inputs["X"]), requires_grad=True)
        packed = pack_padded_sequence(X, torch.tensor(config["lengths"]), batch_first=bf, enforce_sorted=False)
        out, (h_n, c_n) = torch.func.functional_call(module, p, (packed, (h0, c0)))
        Y, _ = pad_packed_sequence(out, batch_first=bf, total_length=T)
        loss = (Y * torch.tensor(batched(inputs["dY"]))).sum()
        (loss + (h_n * stacked("d_state_T", 0)).sum() + (c_n * stacked("d_state_T", 1)).sum()).backward()
        np.testing.assert_allclose(batched(expected["Y"]), Y.detach().numpy(), **tol)
        np.testing.assert_allclose(batched(expected["dX"]), X.grad.numpy(), **tol)
        for k in range(entries):
            for name, final, initial in (("h", h_n, h0), ("c", c_n, c0)):
                np.testing.assert_allclose(batched(expected[f"state_T/{k}/{name}"], 0), final[k].detach().numpy(), **tol)
                np.testing.assert_allclose(batched(expected[f"d_state0/{k}/{name}"], 0), initial.grad[k].numpy(), **tol)
        for name, tensor in p.items():
            np.testing.assert_allclose(expected[f"grad/{name}"], tensor.grad.numpy(), **tol)


# ---- the grader's own reader of the part files against NumPy's

def _as_numpy_reads_it(path):
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _same(mine, theirs):
    return mine.dtype == theirs.dtype and mine.shape == theirs.shape and np.array_equal(mine, theirs, equal_nan=True)


@pytest.mark.parametrize("part", spec.PARTS, ids=[p.number for p in spec.PARTS])
def test_a_part_file_reads_as_numpy_reads_it(part):
    """``data``'s reader (its own zip directory and .npy header parsing, hints and traces read on first use)
    gives every configuration, input, output, hint and trace that ``np.load`` gives, and nothing else."""
    import json
    import os
    stored = data.load_part(part.number)
    theirs = _as_numpy_reads_it(os.path.join(data.DATA_DIR, data.file_name(part.number)))
    assert stored.configs == json.loads(str(theirs.pop("__configs__")))
    hints, metas = json.loads(str(theirs.pop("__hints__"))), json.loads(str(theirs.pop("__traces__")))
    for k in range(len(stored.configs)):
        for kind, mine in (("in", stored.inputs[k]), ("out", stored.expected[k])):
            for name, array in mine.items():
                assert _same(array, theirs.pop(f"{k}:{kind}:{name}")), (k, kind, name)
        for name, pairs in stored.variants[k].items():
            assert len(pairs) == len(list(pairs))
            for text, array in pairs:
                hint_id = next(h for h in hints if hints[h] == text and f"{k}:hint:{h}:{name}" in theirs)
                assert _same(array, theirs.pop(f"{k}:hint:{hint_id}:{name}")), (k, hint_id, name)
        if str(k) in metas:
            meta, values = stored.traces[k]
            assert meta == metas[str(k)] and _same(values, theirs.pop(f"{k}:trace"))
        else:
            assert stored.traces[k] is None
    assert not theirs                                           # every array was read by both


@pytest.mark.parametrize("compressed", [True, False], ids=["deflated", "stored"])
def test_a_part_file_of_either_kind_of_member_reads_back(tmp_path, compressed, monkeypatch):
    """A file written with ``np.savez`` (members stored, not deflated) reads as one written compressed."""
    if not compressed:
        monkeypatch.setattr(np, "savez_compressed", np.savez)
    configs = [{"a": 1}, {"b": [2, 3]}]
    inputs = [{"x": np.arange(6.0).reshape(2, 3)}, {"x": np.array([1, 2], dtype=np.int64)}]
    expected = [{"y": np.eye(2)}, {"y": np.array([True, False])}]
    variants = [{"h1": {"y": np.eye(2) * 2}}, {}]
    path = data.write_part("9.9", configs, inputs, expected, variants, {"h1": "a hint"}, data_dir=str(tmp_path),
                           traces=[({"lines": 3}, np.arange(3.0)), None])
    with open(path, "rb") as f:
        read = data._read(f.read())
    assert read.configs == configs
    assert all(_same(read.inputs[k]["x"], inputs[k]["x"]) and _same(read.expected[k]["y"], expected[k]["y"])
               for k in range(2))
    [(text, array)] = list(read.variants[0]["y"])
    assert text == "a hint" and _same(array, np.eye(2) * 2) and read.variants[1] == {}
    assert read.traces[0][0] == {"lines": 3} and _same(read.traces[0][1], np.arange(3.0)) and read.traces[1] is None
