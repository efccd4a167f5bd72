"""GradBench llsq: linear least squares, y(x) = 1/2 sum_i (sign(t_i) - sum_j x_j t_i^j)^2.

The n sample points t_i = -1 + 2i/(n-1) are fixed; the m coefficients x are differentiated
(SPEC.md section 5). `objective` is y (GradBench's `primal`), `derivative` is dy/dx as a
float64 array (`gradient`). Every tool builds the powers t^j by repeated multiplication, as
the reference does: adcompile and JAX subtract one power of t per coefficient from the
residuals, numba runs the reference's two loops, PyTorch multiplies the Vandermonde matrix.

Run as a script to check adcompile against JAX and PyTorch at the quick size, or at another:
python benchmarks/gradbench/llsq.py [n=16392]
"""

import itertools
import sys

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, spec_error

NAME = "llsq"
_N = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392]
_M = [128]
WORKLOADS = sorted(itertools.product(_N, _M), key=lambda w: w[0] * w[1])
SIZES = [dict(n=n, m=m) for n, m in WORKLOADS]
QUICK = [dict(n=1024, m=128)]


def make_input(n, m):
    """GradBench's input for one workload: x is the workload's draw of rand(m) from the one
    legacy stream seeded with 31337 that all default workloads share, in their order (a size
    outside the defaults gets the stream's first draw)."""
    stream = np.random.RandomState(31337)
    for size in WORKLOADS:
        x = stream.rand(size[1])
        if size == (n, m):
            break
    else:
        x = np.random.RandomState(31337).rand(m)
    return {"x": x.tolist(), "n": n, "min_runs": 1, "min_seconds": 1}


# -- adcompile: numpy code, one pass over the points per coefficient ----------------------------


def llsq_primal(x, n):
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    r = np.sign(t)
    power = np.ones(n)
    for j in range(x.shape[0]):
        r = r - x[j] * power
        power = power * t
    return 0.5 * np.sum(r * r)


class Adcompile:
    def __init__(self, inp):
        self.args = (np.array(inp["x"], dtype=np.float64), int(inp["n"]))
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(llsq_primal)), self.args
        )
        self.primal = adcompile(llsq_primal)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)

    def derivative(self):
        return self.gradient(*self.args)


# -- JAX: adcompile's loop as a fori_loop; PyTorch: the Vandermonde matrix times x ----------


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        n = int(inp["n"])
        self.x = jnp.array(inp["x"], dtype=jnp.float64)

        def primal(x):
            t = -1.0 + jnp.arange(n) * 2.0 / (n - 1)

            def step(j, carry):
                r, power = carry
                return r - x[j] * power, power * t

            r, _ = jax.lax.fori_loop(0, x.shape[0], step, (jnp.sign(t), jnp.ones(n)))
            return 0.5 * jnp.sum(r * r)

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
        self.n = int(inp["n"])

    def primal(self, x):
        torch = self.torch
        t = -1.0 + torch.arange(self.n, dtype=torch.float64) * 2.0 / (self.n - 1)
        r = torch.sign(t) - torch.vander(t, N=x.shape[0], increasing=True) @ x
        return 0.5 * torch.sum(r * r)

    def objective(self):
        return self.primal(self.x).item()

    def derivative(self):
        x = self.x.detach().requires_grad_()
        (grad,) = self.torch.autograd.grad(self.primal(x), x)
        return grad.numpy()


# -- numba: the reference's two loops ---------------------------------------------------------


def llsq_loops(x, n):
    y = 0.0
    for i in range(n):
        t = -1.0 + i * 2.0 / (n - 1)
        r = np.sign(t)
        power = 1.0
        for j in range(x.shape[0]):
            r -= x[j] * power
            power *= t
        y += r * r
    return 0.5 * y


class Numba:
    def __init__(self, inp):
        import numba

        self.args = (np.array(inp["x"], dtype=np.float64), int(inp["n"]))
        self.primal = numba.njit(llsq_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)


if __name__ == "__main__":
    import run  # sets one thread for JAX before it loads

    given = run.script(sys.modules[__name__])
