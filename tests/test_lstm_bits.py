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
