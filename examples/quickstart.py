"""adcompile quickstart: PyTorch-style eager autograd on numpy, and a compiled function.

Run: python examples/quickstart.py

The compiled function is differentiated statically: its gradient is a new program, printed
below as readable Python, and compiled to machine code through LLVM; the last part times that
gradient against hand-written vectorised numpy.
"""

import timeit

import numpy as np

import adcompile as torch
from adcompile import adcompile
from adcompile import grad as adcompile_grad


def eager_autograd():
    print("== eager autograd (import adcompile as torch) ==")
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    z.backward()
    print(z, x.grad, y.grad)

    X = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    Y = torch.tensor([5.0, 6.0, 7.0], requires_grad=True)
    f = torch.sin(torch.dot(X, Y))
    print(f, f.grad_fn.next_functions)
    (df_dX,) = torch.autograd.grad(f, X, create_graph=True)
    print("df/dX =", df_dX)
    (hvp,) = torch.autograd.grad(df_dX.sum(), X)
    print("d(sum df/dX)/dX =", hvp)


def eager_speed():
    print("== eager overhead: a 100-op chain on a 0-dim tensor, forward + backward ==")

    def step():
        x = torch.tensor(0.5, requires_grad=True)
        y = x
        for _ in range(25):
            y = (y * 0.999 + 0.001).sin().tanh()
        y.backward()

    seconds = min(timeit.repeat(step, number=100, repeat=3)) / 100
    print(f"{seconds / 100 * 1e6:.2f} us per op (see benchmarks/eager_overhead.py for the "
          f"side-by-side with PyTorch)")


@adcompile
def dot(x, y):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosenbrock_numpy(x):
    """The same value and its gradient, vectorised and differentiated by hand."""
    a = x[1:] - x[:-1] ** 2
    b = 1.0 - x[:-1]
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * x[:-1] - 2.0 * b
    g[1:] += 200.0 * a
    return float(np.sum(100.0 * a**2 + b**2)), g


def compiled():
    print("== a compiled function: its IR and the Python source generated from it ==")
    x = np.linspace(0.0, 1.0, 5)
    y = np.arange(5.0)
    print("dot(x, y) =", dot(x, y), "(Python:", dot.fn(x, y), ")")
    print(dot.ir(x, y))
    print(dot.source(x, y))
    print("== its gradient, built statically from the IR (reverse mode) ==")
    grad_dot = adcompile_grad(dot, argnums=(0, 1))
    print("grad dot(x, y) =", grad_dot(x, y))
    print(grad_dot.source(x, y))


def compiled_speed():
    print("== value and gradient of a Rosenbrock loop, n = 1e6, as native code ==")
    value_and_grad = torch.value_and_grad(rosenbrock)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 1_000_000)
    value, g = value_and_grad(x)  # the first call compiles (and fills the on-disk cache)
    expected_value, expected_g = rosenbrock_numpy(x)
    print(f"value {value:.6f} (numpy {expected_value:.6f}); gradient max |difference| "
          f"{np.abs(g - expected_g).max():.1e}")
    ours = min(timeit.repeat(lambda: value_and_grad(x), number=5, repeat=5)) / 5
    theirs = min(timeit.repeat(lambda: rosenbrock_numpy(x), number=5, repeat=5)) / 5
    print(f"adcompile value_and_grad: {ours * 1e3:.2f} ms; vectorised numpy by hand: "
          f"{theirs * 1e3:.2f} ms ({theirs / ours:.1f}x slower)")
    print("(benchmarks/compiled.py compares with numba, JAX and PyTorch)")


if __name__ == "__main__":
    eager_autograd()
    eager_speed()
    compiled()
    compiled_speed()
