"""Long float32 dot products summed as PyTorch's CPU convolution sums them: one fused
multiply-add chain, term after term, in a given order.

oneDNN (PyTorch's CPU convolution, single-threaded) accumulates a weight's gradient over every
(image, output position) in one register, one FMA per term, and the bias's gradient likewise
(an FMA by one is an exact add). sgemm's inner loop is such a chain over one block of the
shared dimension, but it splits long sums into blocks and adds the blocks' totals. Here each
sgemm call gets at most BLOCK terms and continues the running total through an identity
prefix: `total[:, j] * eye[j, :]` adds the total to its own column and exact zeros to the
others, so the chain goes on unbroken from one call to the next.

Whether a given sgemm kernel really chains every output element depends on OpenBLAS's
microkernel for that shape, so each (rows, columns) pair is calibrated once against an exact
emulation (one exact float32 FMA per term) and the first
layout that matches is used; when none does, `chained_matmul` answers None and the caller
sums as it did before (the values then differ from PyTorch's in the last bits only). Small
products (a few hundred outputs, as a first convolution layer's weight gradient) often run
on kernels that chain far more than BLOCK terms in one call, and there sgemm's cost per call
dominates: those are calibrated for WIDE_BLOCK terms a call first.
"""

import numpy as np

from runtime.fma import fma

BLOCK = 512
WIDE_BLOCK = 4096
WIDE_OUTPUTS = 256  # products of at most this many outputs try WIDE_BLOCK first
# calibration costs one float64 pass over rows * columns per term: bigger products keep the
# plain sums
MAX_OUTPUTS = 1 << 14
_LAYOUTS = {
    "c": lambda a, b: a @ b,
    "fortran": lambda a, b: np.asfortranarray(a) @ b,
    "transposed": lambda a, b: (np.ascontiguousarray(b.T) @ np.ascontiguousarray(a.T)).T,
}
_calibrated = {}  # (rows, columns) -> (layout name, terms a call) or None


def _chain(a, b, product, block):
    eye = np.eye(b.shape[1], dtype=a.dtype)
    total = None
    for start in range(0, a.shape[1], block):
        a_part, b_part = a[:, start:start + block], b[start:start + block]
        if total is not None:
            a_part = np.concatenate([total, a_part], axis=1)
            b_part = np.concatenate([eye, b_part])
        total = product(a_part, b_part)
    return total


def _reference(a, b):
    """The chain computed term by term, one exact float32 FMA per term (runtime/fma.py)."""
    total = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        total = fma(a[:, k, None], b[k], total)
    return total


def _calibrate(rows, columns, block):
    """The first layout that chains calls of `block` terms (and of block more after a running
    total) for this shape, or None."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, 2 * block + 3)).astype(np.float32)
    b = rng.standard_normal((2 * block + 3, columns)).astype(np.float32)
    want = _reference(a, b)
    return next((name for name, product in _LAYOUTS.items()
                 if np.array_equal(_chain(a, b, product, block), want)), None)


def _layout(rows, columns):
    key = (rows, columns)
    if key not in _calibrated:
        blocks = ([WIDE_BLOCK] if rows * columns <= WIDE_OUTPUTS else []) + [BLOCK]
        found = ((_calibrate(rows, columns, block), block) for block in blocks)
        _calibrated[key] = next((pair for pair in found if pair[0] is not None), None)
    return _calibrated[key]


def chained_matmul(a, b):
    """a @ b for float32 (rows, K) and (K, columns), each element one FMA chain over K in
    order; None where that cannot be had (other dtypes, more than MAX_OUTPUTS results,
    non-finite values, no sgemm layout that chains)."""
    if a.dtype != np.float32 or b.dtype != np.float32 or a.shape[0] * b.shape[1] > MAX_OUTPUTS:
        return None
    found = _layout(a.shape[0], b.shape[1])
    if found is None:
        return None
    total = _chain(a, b, _LAYOUTS[found[0]], found[1])
    return total if np.isfinite(total).all() else None


def conv_param_grads(g2, patches, with_bias):
    """(dL/dw2 (G, O/G, K) or None, dL/dbias (O,) or None) of a convolution from its output
    cotangent g2 (N, G, O/G, L) and input patches (N, G, K, L), each summed over (image,
    output position) as one chain; None where chained_matmul declines."""
    n, groups, og, length = g2.shape
    weights, biases = [], []
    for group in range(groups):
        k = 0 if patches is None else patches.shape[2]
        a = np.empty((k + with_bias, n * length), g2.dtype)  # one copy of the patches
        if k:
            np.copyto(a[:k].reshape(k, n, length), patches[:, group].transpose(1, 0, 2))
        a[k:] = 1
        b = np.ascontiguousarray(g2[:, group].transpose(0, 2, 1)).reshape(n * length, og)
        total = chained_matmul(a, b)
        if total is None:
            return None
        weights.append(None if patches is None else total[:patches.shape[2]].T)
        biases.append(total[-1] if with_bias else None)
    return (None if patches is None else np.stack(weights),
            np.concatenate(biases) if with_bias else None)
