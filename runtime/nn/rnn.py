"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, inter-layer
dropout).

A float32 LSTM runs each layer and direction as one fused node, MkldnnRnnLayerBackward0, as
PyTorch's CPU LSTM records it (kernel and rule in runtime/rules/rnn.py): the layers are
chained, the directions joined by cat, and h_n / c_n stacked from the nodes' second and third
outputs. Other dtypes and the RNN / GRU cells are composed step by step from differentiable
eager ops (linear, sigmoid, tanh), so backpropagation through time comes from the shared
rules.

Parameters are registered and initialised in PyTorch's order (per layer and direction:
weight_ih, weight_hh, bias_ih, bias_hh, each uniform in +-1/sqrt(hidden_size)), so the same
manual_seed gives the same weights. Gate order in the stacked weights is PyTorch's:
LSTM (input, forget, cell, output), GRU (reset, update, new).
"""

import math

import numpy as np

from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record_multi
from runtime.function import node_class, save_input
from runtime.nn import functional as NF
from runtime.nn.modules import Module, Parameter
from runtime.ops._core import wrap
from runtime.rules.rnn import by_batch, lstm_forward
from runtime.tensor import Tensor

MkldnnRnnLayerBackward0 = node_class("MkldnnRnnLayerBackward0", "lstm_layer", multi_output=True)


def lstm_layer(x, weights, h0, c0, reverse):
    """One fused LSTM layer over x (T, B, I): returns (out (T, B, H), h_T, c_T)."""
    w_ih, w_hh, b_ih, b_hh = weights
    bias = None if b_ih is None else b_ih._data + b_hh._data
    xd = x._data[::-1] if reverse else x._data
    hs, cells, tanh_c, gates = lstm_forward(xd, w_ih._data, w_hh._data, bias, h0._data,
                                            c0._data)
    out = hs[:0:-1] if reverse else hs[1:]
    outs = [wrap(by_batch(out), x._dtype), wrap(by_batch(hs[-1]), x._dtype),
            wrap(by_batch(cells[-1]), x._dtype)]
    inputs = (x, w_ih, w_hh, b_ih, b_hh, h0, c0)
    if any_requires_grad(inputs):
        saved = [None if t is None else save_input(t) for t in inputs]
        args = (*saved, (hs, cells, tanh_c, gates), reverse)
        record_multi(MkldnnRnnLayerBackward0, inputs, outs, args)
    return outs


def _rnn_tanh(ig, h, w):
    return F.tanh(F.add(NF.linear(h, w[1], w[3]), ig))


def _rnn_relu(ig, h, w):
    return F.relu(F.add(NF.linear(h, w[1], w[3]), ig))


def _lstm_cell(ig, state, w):
    """The composed LSTM cell (non-float32 dtypes), on the precomputed input projection."""
    h, c = state
    gates = F.add(NF.linear(h, w[1], w[3]), ig)
    i, f, g, o = F.unsafe_chunk(gates, 4, 1)
    c = F.add(F.mul(F.sigmoid(f), c), F.mul(F.sigmoid(i), F.tanh(g)))
    return F.mul(F.sigmoid(o), F.tanh(c)), c


def _gru_cell(ig, h, w):
    """PyTorch's GRU cell, node for node (its in-place adds and activations show as the
    out-of-place nodes recorded here)."""
    xr, xz, xn = F.unsafe_chunk(ig, 3, 1)
    hr, hz, hn = F.unsafe_chunk(NF.linear(h, w[1], w[3]), 3, 1)
    r = F.sigmoid(F.add(hr, xr))
    z = F.sigmoid(F.add(hz, xz))
    n = F.tanh(F.add(xn, F.mul(hn, r)))
    return F.add(F.mul(F.sub(h, n), z), n)


_CELLS = {"RNN_TANH": (_rnn_tanh, 1), "RNN_RELU": (_rnn_relu, 1), "LSTM": (_lstm_cell, 4),
          "GRU": (_gru_cell, 3)}


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM proj_size is not supported")
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout must be a number in [0, 1]")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size and num_layers must be positive")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        gates = _CELLS[mode][1] * hidden_size
        dt = dtype or F.get_default_dtype()
        self._weight_names = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[: 1 + bidirectional]:
                width = input_size if layer == 0 else hidden_size * (1 + bidirectional)
                names = self._add_layer(f"l{layer}{suffix}", gates, width, dt)
                self._weight_names.append(names)
        self.reset_parameters()

    def _add_layer(self, tag, gates, width, dt):
        shapes = {f"weight_ih_{tag}": (gates, width), f"weight_hh_{tag}": (gates,
                                                                          self.hidden_size)}
        if self.bias:
            shapes.update({f"bias_ih_{tag}": (gates,), f"bias_hh_{tag}": (gates,)})
        for name, shape in shapes.items():
            setattr(self, name, Parameter(Tensor._wrap(np.empty(shape, dt.np), dt)))
        return list(shapes) + [None] * (4 - len(shapes))

    def reset_parameters(self):
        from runtime.nn import init

        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _weights(self, index):
        return [None if n is None else getattr(self, n) for n in self._weight_names[index]]

    def _zeros(self, batch_shape, x):
        shape = (self.num_layers * (1 + self.bidirectional),) + batch_shape + \
            (self.hidden_size,)
        return Tensor._wrap(np.zeros(shape, x._data.dtype), x._dtype)

    def _run_direction(self, cell, x, state, weights, reverse):
        """One layer and direction, as PyTorch's CPU path runs it: the input projection for
        all steps at once, unbound into steps, the cell, the outputs stacked."""
        steps = list(F.unbind(NF.linear(x, weights[0], weights[2]), 0))
        outs = []
        for ig in (steps[::-1] if reverse else steps):
            state = cell(ig, state, weights)
            outs.append(state[0] if isinstance(state, tuple) else state)
        return F.stack(outs[::-1] if reverse else outs, 0), state

    def forward(self, input, hx=None):
        batched = input._data.ndim == 3
        if input._data.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__} expects a 2-d or 3-d input, got "
                             f"{input._data.ndim}-d")
        x = input if batched else F.unsqueeze(input, 1)
        fused = self.mode == "LSTM" and x._data.dtype == np.float32
        if batched and self.batch_first:
            x = F.transpose(x, 0, 1)
            x = F.clone(x) if fused else x  # PyTorch's kernel takes a contiguous copy
        states = self._initial_states(hx, x, batched)
        layers = self._fused_layers if fused else self._layers
        out, finals = layers(x, states)
        if batched and self.batch_first:
            # the composed path transposes its fresh output in place (TransposeBackward1)
            out = F.transpose(out, 0, 1) if fused else out.transpose_(0, 1)
        return self._package(out, finals, batched)

    def _initial_states(self, hx, x, batched):
        n_states = 2 if self.mode == "LSTM" else 1
        if hx is None:
            zeros = self._zeros((x._data.shape[1],), x)
            return [zeros] * n_states
        hx = list(hx) if isinstance(hx, (tuple, list)) else [hx]
        if len(hx) != n_states:
            raise RuntimeError(f"{type(self).__name__} expects {n_states} initial state(s)")
        expected = (self.num_layers * (1 + self.bidirectional), x._data.shape[1],
                    self.hidden_size)
        hx = [h if batched else F.unsqueeze(h, 1) for h in hx]
        for h in hx:
            if tuple(h._data.shape) != expected:
                raise RuntimeError(f"expected hidden size {expected}, got "
                                   f"{tuple(h._data.shape)}")
        return hx

    def _stacked(self, x, run_one):
        """Layers and directions: run_one(x, k, reverse) -> (output sequence, final state)
        for layer-direction k; directions are joined by cat, layers by (training) dropout."""
        finals = []
        dirs = 1 + self.bidirectional
        for layer in range(self.num_layers):
            results = []
            for d in range(dirs):
                out, final = run_one(x, layer * dirs + d, d == 1)
                results.append(out)
                finals.append(final)
            x = F.cat(results, -1) if dirs == 2 else results[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = NF.dropout(x, self.dropout, True)
        return x, finals

    def _layers(self, x, states):
        """Composed cells (RNN, GRU, non-float32 LSTM); h0 (and c0) are unbound per layer."""
        cell = _CELLS[self.mode][0]
        states = [F.unbind(s, 0) for s in states]

        def run_one(x, k, reverse):
            init = tuple(s[k] for s in states)
            init = init if self.mode == "LSTM" else init[0]
            return self._run_direction(cell, x, init, self._weights(k), reverse)

        return self._stacked(x, run_one)

    def _fused_layers(self, x, states):
        """The LSTM as one fused node per layer and direction."""

        def run_one(x, k, reverse):
            out, h, c = lstm_layer(x, self._weights(k), states[0][k], states[1][k], reverse)
            return out, (h, c)

        return self._stacked(x, run_one)

    def _package(self, out, finals, batched):
        def collect(i=None):
            h = F.stack([f if i is None else f[i] for f in finals], 0)
            return h if batched else F.squeeze(h, 1)

        if not batched:
            out = F.squeeze(out, 1)
        if self.mode == "LSTM":
            return out, (collect(0), collect(1))
        return out, collect()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        s += f", num_layers={self.num_layers}" if self.num_layers != 1 else ""
        s += f", bias={self.bias}" if self.bias is not True else ""
        s += f", batch_first={self.batch_first}" if self.batch_first is not False else ""
        s += f", dropout={self.dropout}" if self.dropout != 0 else ""
        s += f", bidirectional={self.bidirectional}" if self.bidirectional is not False else ""
        return s


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"unknown nonlinearity {nonlinearity!r} (use 'tanh' or 'relu')")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional)


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional)
