"""GradBench lstm: a diagonal-weight LSTM's next-character log-loss (SPEC.md section 2).

main_params (2l x 4b: per layer a weight row and a bias row, each four blocks of b for the
forget, input, output and change gates) and extra_params (3 x b: input weight, output weight,
output bias) are differentiated; state (2l x b) and sequence (c x b bit rows) are constant.
`objective` is the loss, `derivative` its gradient as one flat list (main_params row-major,
then extra_params).

JAX and PyTorch loop over the time steps and the layers with array code on the length-b
vectors. adcompile and numba compile the reference's own scalar loops (`lstm_loops`, below):
GradBench's C++ reference loops over the b entries of each gate, and with b = 14 the
compiled loops beat array code whose every operation touches 14 numbers (adcompile's
gradient / objective 3.5-4.4 with the arrays, against ~2 with the loops, measured
2026-11-27).

GradBench's text, lstm_full.txt, is not in our snapshot: when /work/shared/gradbench has it
(evals/lstm/data/lstm_full.txt) it is used, else a stand-in of the same kind (the opening of
Shakespeare's first sonnet with typographic apostrophes, repeated), which gives b = 14 as the
real text does. The parameters are drawn after np.random.seed(31337) per workload, as SPEC.md
recommends (GradBench leaves them unseeded).
"""

import math
import os

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, njit, spec_error

NAME = "lstm"
SIZES = sorted(
    (dict(l=l, c=c) for l in (2, 4, 6) for c in (1024, 4096, 8192)),
    key=lambda size: size["l"] * size["c"],
)
QUICK = [dict(l=2, c=1024)]

_TEXT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                          "shared", "gradbench", "evals", "lstm", "data", "lstm_full.txt")
_STAND_IN = (
    "From fairest creatures we desire increase,\n"
    "That thereby beauty\u2019s rose might never die,\n"
    "But as the riper should by time decease,\n"
    "His tender heir might bear his memory:\n"
    "But thou contracted to thine own bright eyes,\n"
    "Feed\u2019st thy light\u2019s flame with self-substantial fuel,\n"
    "Making a famine where abundance lies,\n"
    "Thy self thy foe, to thy sweet self too cruel:\n\n"
)


def label(l, c):
    return f"l={l},c={c}"


def problem_size(l, c):
    """l c, layer steps."""
    return l * c


def _text(length):
    if os.path.exists(_TEXT_FILE):
        with open(_TEXT_FILE, encoding="utf-8") as f:
            return f.read(length)
    return (_STAND_IN * (length // len(_STAND_IN) + 1))[:length]


def make_input(l, c):
    """GradBench's generator on our text: b-bit rows, most significant bit first."""
    text = _text(c)
    b = math.ceil(math.log2(max(ord(ch) for ch in text)))
    sequence = [[float(ord(ch) >> (b - 1 - j) & 1) for j in range(b)] for ch in text]
    np.random.seed(31337)
    state = np.random.random((2 * l, b))
    main_params = np.random.random((2 * l, 4 * b))
    extra_params = np.random.random((3, b))
    return {"main_params": main_params.tolist(), "extra_params": extra_params.tolist(),
            "state": state.tolist(), "sequence": sequence}


def _arrays(inp):
    keys = ("main_params", "extra_params", "state", "sequence")
    return tuple(np.array(inp[key], dtype=np.float64) for key in keys)


# -- JAX: lax.scan over time; PyTorch: a Python loop --------------------------------------------


def _step_jax(main_params, extra_params, hidden, cell, u):
    """One time step through every layer: the new states and the prediction."""
    import jax
    import jax.numpy as jnp

    b = main_params.shape[1] // 4
    a = u * extra_params[0]
    hs, cs = [], []
    for i in range(main_params.shape[0] // 2):
        w, bias = main_params[2 * i], main_params[2 * i + 1]
        forget = jax.nn.sigmoid(a * w[:b] + bias[:b])
        ingate = jax.nn.sigmoid(hidden[i] * w[b : 2 * b] + bias[b : 2 * b])
        outgate = jax.nn.sigmoid(a * w[2 * b : 3 * b] + bias[2 * b : 3 * b])
        change = jnp.tanh(hidden[i] * w[3 * b :] + bias[3 * b :])
        cs.append(cell[i] * forget + ingate * change)
        a = outgate * jnp.tanh(cs[-1])
        hs.append(a)
    return jnp.stack(hs), jnp.stack(cs), a * extra_params[1] + extra_params[2]


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        self.args = tuple(jnp.asarray(a) for a in _arrays(inp))

        def objective(main_params, extra_params, state, sequence):
            def step(carry, pair):
                hidden, cell, total = carry
                u, target = pair
                hidden, cell, y = _step_jax(main_params, extra_params, hidden, cell, u)
                total += jnp.sum(target * (y - jnp.log(2.0 + jnp.sum(jnp.exp(y)))))
                return (hidden, cell, total), None

            start = (state[0::2], state[1::2], 0.0)
            (_, _, total), _ = jax.lax.scan(step, start, (sequence[:-1], sequence[1:]))
            return -total / ((sequence.shape[0] - 1) * sequence.shape[1])

        self.primal = jax.jit(objective)
        self.gradient = jax.jit(jax.grad(objective, argnums=(0, 1)))
        self.objective()
        self.derivative()

    def objective(self):
        return float(self.primal(*self.args))

    def derivative(self):
        main, extra = self.gradient(*self.args)
        return np.concatenate((np.asarray(main).ravel(), np.asarray(extra).ravel()))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        self.args = tuple(torch.from_numpy(a) for a in _arrays(inp))

    def _objective(self, main_params, extra_params, state, sequence):
        torch = self.torch
        layers, b = main_params.shape[0] // 2, main_params.shape[1] // 4
        hidden, cell = list(state[0::2]), list(state[1::2])
        total = 0.0
        for t in range(sequence.shape[0] - 1):
            a = sequence[t] * extra_params[0]
            for i in range(layers):
                w, bias = main_params[2 * i], main_params[2 * i + 1]
                forget = torch.sigmoid(a * w[:b] + bias[:b])
                ingate = torch.sigmoid(hidden[i] * w[b : 2 * b] + bias[b : 2 * b])
                outgate = torch.sigmoid(a * w[2 * b : 3 * b] + bias[2 * b : 3 * b])
                change = torch.tanh(hidden[i] * w[3 * b :] + bias[3 * b :])
                cell[i] = cell[i] * forget + ingate * change
                a = outgate * torch.tanh(cell[i])
                hidden[i] = a
            y = a * extra_params[1] + extra_params[2]
            log_norm = torch.log(2.0 + torch.sum(torch.exp(y)))
            total = total + torch.sum(sequence[t + 1] * (y - log_norm))
        return -total / ((sequence.shape[0] - 1) * b)

    def objective(self):
        with self.torch.no_grad():
            return self._objective(*self.args).item()

    def derivative(self):
        main, extra = (a.detach().requires_grad_() for a in self.args[:2])
        loss = self._objective(main, extra, *self.args[2:])
        grads = self.torch.autograd.grad(loss, (main, extra))
        return np.concatenate([g.numpy().ravel() for g in grads])


# -- adcompile and numba: the reference's scalar loops ----------------------------------------


def lstm_loops(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2
    b = main_params.shape[1] // 4
    c = sequence.shape[0]
    hidden = state[0::2].copy()
    cell = state[1::2].copy()
    a = np.empty(b)
    total = 0.0
    for t in range(c - 1):
        for j in range(b):
            a[j] = sequence[t, j] * extra_params[0, j]
        for i in range(layers):
            w = main_params[2 * i]
            bias = main_params[2 * i + 1]
            for j in range(b):
                forget = 1.0 / (1.0 + math.exp(-(a[j] * w[j] + bias[j])))
                ingate = 1.0 / (1.0 + math.exp(-(hidden[i, j] * w[b + j] + bias[b + j])))
                outgate = 1.0 / (1.0 + math.exp(-(a[j] * w[2 * b + j] + bias[2 * b + j])))
                change = math.tanh(hidden[i, j] * w[3 * b + j] + bias[3 * b + j])
                cell[i, j] = cell[i, j] * forget + ingate * change
                hidden[i, j] = outgate * math.tanh(cell[i, j])
                a[j] = hidden[i, j]
        norm = 2.0
        for j in range(b):
            a[j] = a[j] * extra_params[1, j] + extra_params[2, j]
            norm += math.exp(a[j])
        log_norm = math.log(norm)
        for j in range(b):
            total += sequence[t + 1, j] * (a[j] - log_norm)
    return -total / ((c - 1) * b)


class Adcompile:
    def __init__(self, inp):
        self.args = _arrays(inp)
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(lstm_loops), argnums=(0, 1)), self.args
        )
        self.primal = adcompile(lstm_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)

    def derivative(self):
        main, extra = self.gradient(*self.args)
        return np.concatenate((main.ravel(), extra.ravel()))


class Numba:
    def __init__(self, inp):
        self.args = _arrays(inp)
        self.primal = njit(lstm_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)
