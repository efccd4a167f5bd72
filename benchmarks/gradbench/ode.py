"""GradBench ode: the fourth-order Runge-Kutta solution of a chain of linear ODEs.

The field is f(y)_0 = x_0 and f(y)_i = x_i y_(i-1); from y = 0, s RK4 steps of h = 2/s
reach t = 2 (SPEC.md section 6). `objective` is the final state y (GradBench's `primal`),
`derivative` the gradient of its last component with respect to x (`gradient`), both
float64 arrays. adcompile, JAX and PyTorch write the field as array code and the steps as a
loop; numba runs the reference's loops.

Each RK4 stage moves information one index on, so on every default workload (n - 1 >= 4s)
the last component and its gradient are exactly zero. Running this file without a size
also checks n = 8, s = 10, where they are not, relative to the gradient's size (GradBench's
measure is absolute below 1 and would pass any gradient there).

Run as a script to check adcompile against JAX and PyTorch at the quick size, or at another:
python benchmarks/gradbench/ode.py [n=100000 s=10]
"""

import itertools
import sys

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, spec_error

NAME = "ode"
_N = [1000, 10000, 100000]
_S = [1, 10, 100]
WORKLOADS = sorted(itertools.product(_N, _S), key=lambda w: w[0] * w[1])
SIZES = [dict(n=n, s=s) for n, s in WORKLOADS]
QUICK = [dict(n=1000, s=10)]


def make_input(n, s):
    """GradBench's input for one workload: x is the workload's draw of rand(n) from the one
    legacy stream seeded with 31337 that all default workloads share, in their order (a size
    outside the defaults gets the stream's first draw)."""
    stream = np.random.RandomState(31337)
    for size in WORKLOADS:
        x = stream.rand(size[0])
        if size == (n, s):
            break
    else:
        x = np.random.RandomState(31337).rand(n)
    return {"x": x.tolist(), "s": s, "min_runs": 1, "min_seconds": 1}


# -- adcompile: the RK4 steps as a loop, the field as array code -------------------------------


def field(x, y):
    return np.concatenate((x[:1], x[1:] * y[:-1]))


def ode_primal(x, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = field(x, y)
        k2 = field(x, y + h / 2 * k1)
        k3 = field(x, y + h / 2 * k2)
        k4 = field(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def ode_last(x, s):
    return ode_primal(x, s)[-1]


class Adcompile:
    def __init__(self, inp):
        self.args = (np.array(inp["x"], dtype=np.float64), int(inp["s"]))
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(ode_last)), self.args
        )
        self.primal = adcompile(ode_primal)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)

    def derivative(self):
        return self.gradient(*self.args)


# -- JAX: the same steps in a fori_loop; PyTorch: in a Python loop ----------------------------


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        s = int(inp["s"])
        self.x = jnp.array(inp["x"], dtype=jnp.float64)

        def field(x, y):
            return jnp.concatenate((x[:1], x[1:] * y[:-1]))

        def primal(x):
            h = 2.0 / s

            def step(_, y):
                k1 = field(x, y)
                k2 = field(x, y + h / 2 * k1)
                k3 = field(x, y + h / 2 * k2)
                k4 = field(x, y + h * k3)
                return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

            return jax.lax.fori_loop(0, s, step, jnp.zeros_like(x))

        self.primal = jax.jit(primal)
        self.gradient = jax.jit(jax.grad(lambda x: primal(x)[-1]))
        self.objective()
        self.derivative()

    def objective(self):
        return np.asarray(self.primal(self.x))

    def derivative(self):
        return np.asarray(self.gradient(self.x))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        self.x = torch.tensor(inp["x"], dtype=torch.float64)
        self.s = int(inp["s"])

    def field(self, x, y):
        return self.torch.cat((x[:1], x[1:] * y[:-1]))

    def primal(self, x):
        h = 2.0 / self.s
        y = self.torch.zeros_like(x)
        for _ in range(self.s):
            k1 = self.field(x, y)
            k2 = self.field(x, y + h / 2 * k1)
            k3 = self.field(x, y + h / 2 * k2)
            k4 = self.field(x, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    def objective(self):
        return self.primal(self.x).numpy()

    def derivative(self):
        x = self.x.detach().requires_grad_()
        (grad,) = self.torch.autograd.grad(self.primal(x)[-1], x)
        return grad.numpy()


# -- numba: the reference's loops -----------------------------------------------------------


def ode_loops(x, s):
    n = x.shape[0]
    h = 2.0 / s
    y = np.zeros(n)
    k = np.zeros((4, n))
    for _ in range(s):
        for stage in range(4):
            step = h if stage == 3 else h / 2
            for i in range(n):
                previous = 1.0
                if i > 0:
                    previous = y[i - 1] + (step * k[stage - 1, i - 1] if stage > 0 else 0.0)
                k[stage, i] = x[i] * previous
        for i in range(n):
            y[i] += h / 6 * (k[0, i] + 2 * k[1, i] + 2 * k[2, i] + k[3, i])
    return y


class Numba:
    def __init__(self, inp):
        import numba

        self.args = (np.array(inp["x"], dtype=np.float64), int(inp["s"]))
        self.primal = numba.njit(ode_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)


def _check_nonzero():
    """The largest difference of adcompile's gradient from JAX's and PyTorch's at n = 8,
    s = 10, relative to the largest entry of theirs."""
    inp = make_input(n=8, s=10)
    ours = Adcompile(inp).derivative()
    for name, tool in (("JAX", Jax(inp)), ("PyTorch", Torch(inp))):
        ref = tool.derivative()
        print(f"ode n=8,s=10: gradient vs {name}: largest entry {np.abs(ref).max():.2e}, "
              f"difference relative to it {np.abs(ours - ref).max() / np.abs(ref).max():.1e}")


if __name__ == "__main__":
    import run  # sets one thread for JAX before it loads

    given = run.script(sys.modules[__name__])
    if not given:
        _check_nonzero()
