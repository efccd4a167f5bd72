"""A float32 LSTM agrees with PyTorch 2.13's CPU LSTM (oneDNN, one thread) to the bit: the
output sequence, h_n and c_n, and the gradients of the input, the initial states and every
weight and bias, on a table of layers covering each path of runtime/rules/rnn.py (one and
several layers, both directions, no bias, batch_first, a batch of one, sequences whose weight
products sum over more than 384 rows). The gate activations (runtime/dnnl_eltwise.py) are
checked alone through a one-unit LSTM whose cell state reads out one gate."""

import numpy as np
import pytest
import torch

import adcompile
from runtime import dnnl_eltwise


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/conftest.py


# (steps, batch, input, hidden, options)
LAYERS = [
    (12, 16, 16, 24, {"batch_first": True}),  # the char_lstm example's layer
    (5, 3, 7, 10, {"num_layers": 2}),
    (6, 4, 5, 8, {"bidirectional": True}),
    (30, 16, 16, 24, {}),  # weight products over 480 rows
    (4, 1, 3, 5, {}),  # a batch of one: oneDNN's gemv
    (7, 8, 9, 33, {"states": True}),
    (3, 5, 4, 6, {"bias": False}),
    (8, 20, 40, 64, {"states": True, "num_layers": 2, "bidirectional": True}),
    (1, 2, 3, 4, {}),
]


def _run(lib, steps, batch, inputs, hidden, options, seed):
    options = dict(options)
    with_states = options.pop("states", False)
    lib.manual_seed(seed)
    layer = lib.nn.LSTM(inputs, hidden, **options)
    rng = np.random.default_rng(seed)
    directions = layer.num_layers * (2 if layer.bidirectional else 1)
    shape = (batch, steps, inputs) if layer.batch_first else (steps, batch, inputs)
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    states = [lib.tensor(rng.standard_normal((directions, batch, hidden)).astype(np.float32),
                         requires_grad=True) for _ in range(2)] if with_states else []
    out, (h, c) = layer(x, tuple(states)) if states else layer(x)
    grads = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in (out, h, c)]
    lib.autograd.backward([out, h, c], [lib.tensor(g) for g in grads])
    found = {"out": out, "h_n": h, "c_n": c, "x.grad": x.grad}
    found.update({f"state{i}.grad": s.grad for i, s in enumerate(states)})
    found.update({f"{n}.grad": p.grad for n, p in layer.named_parameters()})
    return {k: v.detach().numpy() for k, v in found.items()}


@pytest.mark.parametrize("steps,batch,inputs,hidden,options", LAYERS)
def test_lstm_outputs_and_gradients_bit_equal(steps, batch, inputs, hidden, options):
    for seed in range(2):
        ours = _run(adcompile, steps, batch, inputs, hidden, options, seed)
        theirs = _run(torch, steps, batch, inputs, hidden, options, seed)
        assert ours.keys() == theirs.keys()
        for name in theirs:
            differ = ours[name].view(np.int32) != theirs[name].view(np.int32)
            assert not differ.any(), f"{name}: {differ.sum()} of {differ.size} differ"


def _gate_probe(values, gate):
    """PyTorch's LSTM on one step of one input to one unit, weights chosen so the cell state
    is the activation of `values`: sigmoid(input gate) times tanh(200), or tanh(cell gate)
    times sigmoid(200); both factors 1 exactly."""
    layer = torch.nn.LSTM(1, 1)
    row = {"sigmoid": 0, "tanh": 2}[gate]
    with torch.no_grad():
        for p in layer.parameters():
            p.zero_()
        layer.weight_ih_l0[row, 0] = 1.0
        layer.bias_ih_l0.copy_(torch.tensor([200.0, 0.0, 200.0, 200.0]))
        layer.bias_ih_l0[row] = 0.0
        _, (_, cell) = layer(torch.tensor(values.reshape(1, -1, 1)))
    return cell.numpy().reshape(-1)


@pytest.mark.parametrize("gate", ["sigmoid", "tanh"])
def test_gate_activations_bit_equal(gate):
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.standard_normal(4000) * 3, rng.uniform(-20, 20, 4000),
                             rng.standard_normal(2000) * 1e-3, [0.0, 4.2e-4, 9.0109, 9.02, 90.0,
                                                                -90.0, -88.0, 88.0]])
    values = values.astype(np.float32)
    ours = getattr(dnnl_eltwise, gate)(values)
    theirs = _gate_probe(values, gate)
    ours = ours + np.float32(0)  # the probe's cell state adds +0 (a -0 reads +0)
    assert np.array_equal(ours.view(np.int32), theirs.view(np.int32))


def _step_operands(rng, hidden, batch, scale):
    """pre (4H, B), bias (4H, 1) and c_prev (H, B) at this scale, with large, tiny,
    signed-zero, subnormal and non-finite values mixed in."""
    pre = rng.standard_normal((4 * hidden, batch)) * scale
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 4.2e-4, -4.2e-4,
                        9.0109, 9.02, 80.0, -80.0, 87.0, -87.5, 88.8, -104.0, 1e30, -1e30,
                        3e-39])
    where = rng.random(pre.shape) < 0.2
    pre[where] = rng.choice(special, where.sum())
    bias = rng.standard_normal((4 * hidden, 1)) * scale
    c_prev = rng.standard_normal((hidden, batch)) * scale * 4
    c_prev[rng.random(c_prev.shape) < 0.1] = rng.choice(special)
    return [a.astype(np.float32) for a in (pre, bias, c_prev)]


@pytest.mark.parametrize("seed", range(8))
def test_compiled_lstm_step_equals_the_numpy_one(seed):
    """runtime/simd_compiled.py's LSTM step (llvmlite) gives the numpy step's bits
    (rnn.CellStep: dnnl_eltwise's gates, the cell update) on every kind of value:
    gates and states of every scale, signed zeros, subnormals, infinities and nans (a nan
    only as a nan), with and without a bias, batches of one and more."""
    from runtime import simd_compiled
    from runtime.rules import rnn

    pytest.importorskip("llvmlite")
    assert simd_compiled.kernels() is not None
    rng = np.random.default_rng(seed)
    for hidden, batch in [(1, 1), (5, 1), (24, 16), (7, 3), (64, 20)]:
        for scale in (1e-3, 1.0, 8.0, 60.0):
            pre, bias, c_prev = _step_operands(rng, hidden, batch, scale)
            step = rnn.CellStep(hidden, batch)
            for b in (bias, None):
                # (cells, gates, tanh_c, hs) of a one-step layer, c_prev its first cell
                outs = [[np.empty((k, rows * hidden, batch), np.float32)
                         for k, rows in ((2, 1), (1, 4), (1, 1), (2, 1))] for _ in range(2)]
                flat = None if b is None else b.reshape(-1)
                cells, gates, tanh_c, hs = outs[0]
                cells[0] = c_prev
                simd_compiled.lstm_steps(pre.copy(), flat, cells, gates, tanh_c, hs)(0)
                cells, gates, tanh_c, hs = outs[1]
                with np.errstate(all="ignore"):  # the non-finite values
                    step(pre.copy(), b, c_prev, gates[0], cells[1], tanh_c[0], hs[1])
                for got, want in zip(*outs):
                    _same_or_both_nan(got[-1], want[-1])


def _same_or_both_nan(got, want):
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.int32), want[~nan].view(np.int32))


@pytest.mark.parametrize("steps,batch,inputs,hidden,options", LAYERS[:4:2] + LAYERS[4:5])
def test_lstm_bit_equal_with_the_numpy_step(steps, batch, inputs, hidden, options,
                                            monkeypatch):
    """The LSTM layers above, bit-equal to PyTorch's with the compiled step switched off."""
    from runtime import simd_compiled

    monkeypatch.setattr(simd_compiled, "kernels", lambda: None)
    test_lstm_outputs_and_gradients_bit_equal(steps, batch, inputs, hidden, options)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_lstm_step_back_equals_the_numpy_one(seed):
    """simd_compiled's backward step gives rnn._cell_step_numpy's bits (signed zeros,
    infinities and nans among the cotangents and gates), with and without an output
    cotangent."""
    from runtime import simd_compiled
    from runtime.rules import rnn

    pytest.importorskip("llvmlite")
    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1e30, -1e30])
    for hidden, batch in [(1, 1), (24, 16), (7, 3)]:
        def draw(rows, scale=1.0):
            a = rng.standard_normal((rows * hidden, batch)) * scale
            a[rng.random(a.shape) < 0.1] = rng.choice(special)
            return a.astype(np.float32)

        dh, g_out, dc, tanh_slope, tanh_c, c_prev = (draw(1, s) for s in (1, 1, 3, 1, 1, 5))
        gates, slope = draw(4), draw(4)
        for g in (g_out[None], None):
            got, want = (np.empty((1, 4 * hidden, batch), np.float32) for _ in range(2))
            dc_got = dc.copy()
            simd_compiled.lstm_steps_back(dh, g, dc_got, gates[None], slope[None],
                                          tanh_slope[None], tanh_c[None], c_prev[None],
                                          got)(0)
            with np.errstate(all="ignore"):
                dh_sum = dh if g is None else g[0] + dh
                dc_want = rnn._cell_step_numpy(want[0], dh_sum, dc, gates, slope, tanh_slope,
                                               tanh_c, c_prev)
            _same_or_both_nan(got, want)
            _same_or_both_nan(dc_got, dc_want)
