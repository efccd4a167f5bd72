"""Eager-mode overhead: adcompile vs PyTorch vs hand-written numpy, in one process.

Two measurements, printed as ratios:

1. Per-op overhead: a 100-op elementwise chain on 0-dim float32 tensors, forward + backward
   (the regime where the autograd bookkeeping, not the arithmetic, is the cost).
   Target: adcompile <= 0.8x PyTorch.
2. Bandwidth: the same chain on 1e6-element float32 tensors, against plain numpy doing the
   same forward and a hand-written backward. Target: adcompile <= 1.2x numpy.

Run: python benchmarks/eager_overhead.py [--repeat N]
"""

import argparse
import timeit

import numpy as np

import adcompile

BLOCKS = 25  # each block is 4 ops: mul, add, sin, tanh -> 100 ops


def chain(x):
    y = x
    for _ in range(BLOCKS):
        y = (y * 0.999 + 0.001).sin().tanh()
    return y


def autograd_step(lib, x_data):
    x = lib.tensor(x_data, requires_grad=True)
    y = chain(x)
    if y.dim():
        y = y.sum()
    y.backward()
    return x.grad


def numpy_step(x):
    """The same chain with a hand-written backward: what adcompile must not be far from."""
    saved = []
    y = x
    for _ in range(BLOCKS):
        s = y * 0.999 + 0.001
        t = np.tanh(np.sin(s))
        saved.append((s, t))
        y = t
    g = np.ones_like(y)
    for s, t in reversed(saved):
        g = g * (1 - t * t)
        g = g * np.cos(s)
        g = g * 0.999
    return g


def best(fn, repeat, number):
    return min(timeit.repeat(fn, repeat=repeat, number=number)) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    scalar = np.float32(0.5)
    t_ours = best(lambda: autograd_step(adcompile, scalar), args.repeat, 200)
    t_torch = best(lambda: autograd_step(torch, scalar), args.repeat, 200)
    ops = 4 * BLOCKS
    print(f"100-op chain, 0-dim float32, forward+backward ({ops} ops)")
    print(f"  adcompile {t_ours / ops * 1e6:7.2f} us/op")
    print(f"  pytorch   {t_torch / ops * 1e6:7.2f} us/op")
    print(f"  ratio adcompile/pytorch = {t_ours / t_torch:.2f}  (target <= 0.80)")

    big = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    g_ours = autograd_step(adcompile, big).numpy()
    np.testing.assert_allclose(g_ours, numpy_step(big), rtol=1e-4, atol=1e-6)
    t_ours = best(lambda: autograd_step(adcompile, big), args.repeat, 3)
    t_numpy = best(lambda: numpy_step(big), args.repeat, 3)
    t_torch = best(lambda: autograd_step(torch, big), args.repeat, 3)
    print("100-op chain, 1e6-element float32, forward+backward")
    print(f"  adcompile {t_ours * 1e3:7.1f} ms")
    print(f"  numpy     {t_numpy * 1e3:7.1f} ms  (hand-written backward)")
    print(f"  pytorch   {t_torch * 1e3:7.1f} ms")
    print(f"  ratio adcompile/numpy = {t_ours / t_numpy:.2f}  (target <= 1.20)")


if __name__ == "__main__":
    main()
