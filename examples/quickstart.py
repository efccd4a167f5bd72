"""adcompile quickstart: PyTorch-style eager autograd on numpy, and a compiled function.

Run: python examples/quickstart.py

Derivatives of compiled functions and native code join this quickstart as they land.
"""

import timeit

import numpy as np

import adcompile as torch
from adcompile import adcompile


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


def compiled():
    print("== a compiled function: its IR and the Python source generated from it ==")
    x = np.linspace(0.0, 1.0, 5)
    print("dot(x, x) =", dot(x, x), "(Python:", dot.fn(x, x), ")")
    print(dot.ir(x, x))
    print(dot.source(x, x))


if __name__ == "__main__":
    eager_autograd()
    eager_speed()
    compiled()
