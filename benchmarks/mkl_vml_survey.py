"""Which of PyTorch 2.13's float32/float64 element-wise kernels give MKL's VML results, and how
often adcompile's give PyTorch's bits: per op and dtype, the share of elements equal to
torch's bit for bit, for MKL's VML function (HA mode, as PyTorch calls it) and for
adcompile's op, over several input ranges, sizes (not multiples of the vector width, tiny
ones) and layouts (contiguous, every other element, transposed).

Run: PYTHONPATH=$PWD python benchmarks/mkl_vml_survey.py [--ops sin,cos] [--threads 1]
"""

import argparse
import math

import numpy as np
import torch

import adcompile
from runtime import mkl

WIDE = (-1e4, 1e4)
# op: (MKL's name, input ranges)
OPS = {
    "sin": ("Sin", [(-math.pi, math.pi), (-100, 100), WIDE]),
    "cos": ("Cos", [(-math.pi, math.pi), (-100, 100), WIDE]),
    "tan": ("Tan", [(-1.5, 1.5), (-100, 100)]),
    "sqrt": ("Sqrt", [(0, 1), (0, 1e6), (0, 1e-30)]),
    "rsqrt": ("InvSqrt", [(0, 1), (0, 1e6)]),
    "exp": ("Exp", [(-5, 5), (-80, 80), (-700, 700)]),
    "expm1": ("Expm1", [(-1, 1), (-80, 80)]),
    "exp2": ("Exp2", [(-5, 5), (-100, 100)]),
    "log": ("Ln", [(0, 2), (0, 1e6), (0, 1e-30)]),
    "log10": ("Log10", [(0, 2), (0, 1e6)]),
    "log2": ("Log2", [(0, 2), (0, 1e6)]),
    "log1p": ("Log1p", [(-1, 1), (0, 1e6)]),
    "tanh": ("Tanh", [(-1, 1), (-10, 10)]),
    "sinh": ("Sinh", [(-1, 1), (-80, 80)]),
    "cosh": ("Cosh", [(-1, 1), (-80, 80)]),
    "asin": ("Asin", [(-1, 1)]),
    "acos": ("Acos", [(-1, 1)]),
    "atan": ("Atan", [(-2, 2), (-1e4, 1e4)]),
    "asinh": ("Asinh", [(-2, 2), (-1e4, 1e4)]),
    "acosh": ("Acosh", [(1, 3), (1, 1e4)]),
    "atanh": ("Atanh", [(-1, 1)]),
    "erf": ("Erf", [(-3, 3)]),
    "erfc": ("Erfc", [(-3, 3), (0, 9)]),
    "erfinv": ("ErfInv", [(-1, 1)]),
    "lgamma": ("LGamma", [(0, 10), (-10, 10)]),
    "sigmoid": (None, [(-10, 10)]),
    "trunc": ("Trunc", [(-100, 100)]),
    "ceil": ("Ceil", [(-100, 100)]),
    "floor": ("Floor", [(-100, 100)]),
    "round": ("Round", [(-100, 100)]),
    "reciprocal": ("Inv", [(-100, 100)]),
    "abs": ("Abs", [(-100, 100)]),
}
SIZES = (1, 3, 7, 15, 17, 33, 100, 1001, 4099, 65539)
DTYPES = (np.float32, np.float64)


def layouts(x):
    """(name, numpy view) for each layout the op is tried on."""
    yield "contiguous", x
    wide = np.repeat(x, 2)
    yield "strided", wide[::2]
    if x.size >= 4 and x.size % 2 == 0:
        yield "transposed", x.reshape(2, -1).T


def inputs(ranges, dtype, seed=0):
    rng = np.random.default_rng(seed)
    for lo, hi in ranges:
        for n in SIZES:
            yield (lo, hi, n), rng.uniform(lo, hi, n).astype(dtype)


def bits_equal(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    same = a.view(np.uint8).reshape(a.size, -1) == b.view(np.uint8).reshape(b.size, -1)
    return same.all(axis=1) | (np.isnan(a) & np.isnan(b)).ravel()


def survey(op, dtype):
    """{layout: [elements, MKL equal, adcompile equal]}."""
    mkl_name, ranges = OPS[op]
    kernel = mkl.vml_unary(mkl_name, None) if mkl_name else None
    counts = {}
    for _, x in inputs(ranges, dtype):
        for layout, view in layouts(x):
            strided = _torch_view(view)
            expected = getattr(torch, op)(strided).numpy()
            ours = getattr(adcompile, op)(adcompile.from_numpy(view)).numpy()
            row = counts.setdefault(layout, [0, 0, 0])
            row[0] += view.size
            if kernel is not None and mkl.available():
                row[1] += bits_equal(kernel(np.ascontiguousarray(view)), expected).sum()
            row[2] += bits_equal(ours, expected).sum()
    return counts


def _torch_view(view):
    """The same layout in torch: a strided view of a torch copy of the base."""
    base = np.repeat(view.ravel(order="K"), 1)
    t = torch.from_numpy(base.copy())
    if view.flags.c_contiguous:
        return t.reshape(view.shape)
    if view.ndim == 1:
        return torch.from_numpy(np.repeat(view, 2).copy())[::2]
    return t.reshape(view.shape[::-1]).T


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"MKL: {mkl.status()}; torch threads {args.threads}")
    print(f"{'op':<11}{'dtype':<9}{'layout':<12}{'elements':>9}{'MKL=torch':>11}"
          f"{'ours=torch':>12}")
    for op in args.ops.split(","):
        for dtype in DTYPES:
            for layout, (n, by_mkl, by_us) in survey(op, dtype).items():
                print(f"{op:<11}{np.dtype(dtype).name:<9}{layout:<12}{n:>9}"
                      f"{by_mkl / n:>11.4%}{by_us / n:>12.4%}")


if __name__ == "__main__":
    main()
