"""adcompile quickstart: PyTorch-style eager autograd on numpy.

Run: python examples/quickstart.py

The compiled half (@adcompile, derivative source, native code) joins this quickstart as it
lands; for now it shows the eager runtime with `import adcompile as torch`.
"""

import timeit

import adcompile as torch


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


if __name__ == "__main__":
    eager_autograd()
    eager_speed()
