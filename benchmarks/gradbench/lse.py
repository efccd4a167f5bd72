"""GradBench lse: log-sum-exp of a vector, built from max, exp, sum and log (SPEC.md section 4).

`objective` (GradBench's `primal`) is LSE(x) = a + log sum exp(x - a) with a = max x;
`derivative` (`gradient`) is its gradient, softmax(x), obtained by differentiating that
expression, the max included. Every tool writes the same numpy expression.
"""

import math

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, njit, spec_error

NAME = "lse"
_N = [2500 * 2**j for j in range(10)]
SIZES = [dict(n=n) for n in _N]
QUICK = [dict(n=10000)]


def make_input(n):
    """GradBench's generator: one legacy stream seeded with 31337 drawn for the default sizes
    in order, so n = 5000 starts at draw 2500 (a size outside the defaults: the first n)."""
    stream = np.random.RandomState(31337)
    for size in _N:
        x = stream.rand(size)
        if size == n:
            return {"x": x.tolist()}
    return {"x": np.random.RandomState(31337).rand(n).tolist()}


def lse(x):
    top = np.max(x)
    return top + np.log(np.sum(np.exp(x - top)))


class Adcompile:
    def __init__(self, inp):
        self.x = np.array(inp["x"], dtype=np.float64)
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(lse)), (self.x,)
        )
        self.primal = adcompile(lse)
        self.primal(self.x)

    def objective(self):
        return self.primal(self.x)

    def derivative(self):
        return self.gradient(self.x)


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        self.x = jnp.array(inp["x"], dtype=jnp.float64)

        def primal(x):
            top = jnp.max(x)
            return top + jnp.log(jnp.sum(jnp.exp(x - top)))

        self.primal = jax.jit(primal)
        self.gradient = jax.jit(jax.grad(primal))
        self.objective()
        self.derivative()

    def objective(self):
        return float(self.primal(self.x))

    def derivative(self):
        return np.asarray(self.gradient(self.x))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        self.x = torch.tensor(inp["x"], dtype=torch.float64)

    def _primal(self, x):
        top = self.torch.max(x)
        return top + self.torch.log(self.torch.sum(self.torch.exp(x - top)))

    def objective(self):
        return self._primal(self.x).item()

    def derivative(self):
        x = self.x.detach().requires_grad_()
        (grad,) = self.torch.autograd.grad(self._primal(x), x)
        return grad.numpy()


def lse_loops(x):
    top = x[0]
    for i in range(1, x.shape[0]):
        top = max(top, x[i])
    total = 0.0
    for i in range(x.shape[0]):
        total += math.exp(x[i] - top)
    return top + math.log(total)


class Numba:
    def __init__(self, inp):
        self.x = np.array(inp["x"], dtype=np.float64)
        self.primal = njit(lse_loops)
        self.primal(self.x)

    def objective(self):
        return self.primal(self.x)


def error(ours, ref):
    return spec_error(ours, ref)
