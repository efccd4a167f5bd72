"""GradBench det: the determinant by expansion by minors, and its gradient (the cofactors).

det(A) expands along the first remaining row of each minor, with alternating signs over
the remaining columns in ascending order (SPEC.md section 7): O(ell!) work, the point of
the benchmark. `objective` is the determinant (GradBench's `primal`), `derivative` its
gradient with respect to A, ell*ell numbers in row-major order (`gradient`).

adcompile compiles no recursion, so its version (numba runs the same) walks the expansion's
tree with an explicit stack: for each row, the column it is expanded at and the product of the
signed entries of the rows above it, which changes sign from one column to the next; the
columns a minor keeps are a linked list, as in the reference, so the next one is found in one
step; the last row's 1 x 1 minors are added up without a step of their own. JAX and PyTorch
expand one row at a time for all minors at once, from the last row up.

Run as a script to check adcompile against JAX and PyTorch at the quick size, or at another:
python benchmarks/gradbench/det.py [ell=9]
"""

import sys

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, spec_error

NAME = "det"
_ELL = [5, 6, 7, 8, 9, 10, 11]
# ell = 11 is left out: adcompile's gradient takes 14 s and 4.6 GB of tape there, and JAX's
# and PyTorch's tables of minors several GB
SIZES = [dict(ell=ell) for ell in _ELL[:-1]]
QUICK = [dict(ell=7)]


def make_input(ell):
    """GradBench's input for one workload: A is the workload's draw of rand(ell * ell) from
    the one legacy stream seeded with 31337 that all default workloads share, in their order
    (a size outside the defaults gets the stream's first draw)."""
    stream = np.random.RandomState(31337)
    for size in _ELL:
        a = stream.rand(size * size)
        if size == ell:
            break
    else:
        a = np.random.RandomState(31337).rand(ell * ell)
    return {"A": a.tolist(), "ell": ell, "min_runs": 1, "min_seconds": 1}


def label(ell):
    """GradBench's description of a workload."""
    return str(ell)


# -- adcompile: a depth-first walk over the rows' column choices -------------------------------


def det_by_minors(a):
    ell = a.shape[0]
    last = ell - 1
    if last == 0:
        return a[0, 0]
    # the columns of the current minor, linked in ascending order as the reference keeps them:
    # after[ell] is the first, after[j] the one after column j, and ell ends the list
    after = np.empty(ell + 1, dtype=np.int64)
    for j in range(ell + 1):
        after[j] = (j + 1) % (ell + 1)
    before = np.empty(ell, dtype=np.int64)  # before[k]: the entry before row k's column
    column = np.empty(ell, dtype=np.int64)  # column[k]: row k's column (out of the list)
    product = np.empty(ell)  # product[k]: rows 0..k-1's entries times row k's next sign
    det = 0.0
    k = 0
    before[0] = ell
    product[0] = 1.0
    while k >= 0:
        c = after[before[k]]
        if c == ell:  # row k has expanded every column of its minor: on to row k - 1's next
            k -= 1
            if k >= 0:
                after[before[k]] = column[k]
                before[k] = column[k]
                product[k] = -product[k]
        else:
            term = product[k] * a[k, c]
            after[before[k]] = after[c]
            if k == last - 1:  # row `last`'s minor is 1 x 1: the one column left
                det += term * a[last, after[ell]]
                after[before[k]] = c
                before[k] = c
                product[k] = -product[k]
            else:
                column[k] = c
                k += 1
                product[k] = term
                before[k] = ell
    return det


class Adcompile:
    def __init__(self, inp):
        ell = int(inp["ell"])
        self.args = (np.array(inp["A"], dtype=np.float64).reshape(ell, ell),)
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(det_by_minors)), self.args
        )
        self.primal = adcompile(det_by_minors)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)

    def derivative(self):
        return self.gradient(*self.args).ravel()


# -- JAX and PyTorch: the expansion one row at a time, for every minor at once --------------


def minor_levels(ell):
    """For each row k: the columns left free by each choice of columns for rows 0..k-1, an
    array of ell!/(ell-k)! rows (the choices in lexicographic order) of ell - k ascending
    columns, and the alternating signs of those columns' terms. The choices extending row j
    of level k are rows j*(ell-k) ... (j+1)*(ell-k) - 1 of level k + 1."""
    tables = [np.arange(ell)[None, :]]
    for width in range(ell, 1, -1):
        children = [np.delete(tables[-1], j, axis=1) for j in range(width)]
        tables.append(np.stack(children, axis=1).reshape(-1, width - 1))
    return [(free, (-1.0) ** np.arange(free.shape[1])) for free in tables]


def expand_by_rows(a, levels):
    """det(a) from the last row up: each minor is the alternating sum of its first row's
    entries times their own minors."""
    free, _ = levels[-1]
    minors = a[-1][free[:, 0]]
    for k in reversed(range(len(levels) - 1)):
        free, signs = levels[k]
        minors = (signs * a[k][free] * minors.reshape(free.shape)).sum(1)
    return minors[0]


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        ell = int(inp["ell"])
        self.a = jnp.array(inp["A"], dtype=jnp.float64).reshape(ell, ell)
        levels = [(jnp.array(free), jnp.array(signs)) for free, signs in minor_levels(ell)]

        def primal(a):
            return expand_by_rows(a, levels)

        self.primal = jax.jit(primal)
        self.gradient = jax.jit(jax.grad(primal))
        self.objective()
        self.derivative()

    def objective(self):
        return float(self.primal(self.a))

    def derivative(self):
        return np.asarray(self.gradient(self.a)).ravel()


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        ell = int(inp["ell"])
        self.a = torch.tensor(inp["A"], dtype=torch.float64).reshape(ell, ell)
        self.levels = [(torch.from_numpy(free), torch.from_numpy(signs))
                       for free, signs in minor_levels(ell)]

    def objective(self):
        return expand_by_rows(self.a, self.levels).item()

    def derivative(self):
        a = self.a.detach().requires_grad_()
        (grad,) = self.torch.autograd.grad(expand_by_rows(a, self.levels), a)
        return grad.numpy().ravel()


# -- numba: adcompile's loop --------------------------------------------------------------


class Numba:
    def __init__(self, inp):
        import numba

        ell = int(inp["ell"])
        self.args = (np.array(inp["A"], dtype=np.float64).reshape(ell, ell),)
        self.primal = numba.njit(det_by_minors)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)


if __name__ == "__main__":
    import run  # sets one thread for JAX before it loads

    given = run.script(sys.modules[__name__])
