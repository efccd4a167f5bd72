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
# name: (memory order of a, of b, whether sgemm is given the transposed product b^T a^T);
# tried in this order, the cheapest to build from a convolution's arrays first
_LAYOUTS = {
    "c": ("C", "C", False),
    "fortran_both": ("F", "F", False),
    "fortran": ("F", "C", False),
    "transposed": ("F", "F", True),
}
_calibrated = {}  # (rows, columns) -> (layout name, terms a call) or None


def _chain(a, b, layout, block):
    """a @ b in sgemm calls of `block` terms, each call after the first continuing the
    running total through an identity prefix (operands copied once into the layout's memory
    orders, each call's operands slices of two buffers)."""
    order_a, order_b, transposed = _LAYOUTS[layout]
    a, b = np.asarray(a, order=order_a), np.asarray(b, order=order_b)
    product = (lambda x, y: (y.T @ x.T).T) if transposed else np.matmul
    total = product(a[:, :block], b[:block])
    columns = b.shape[1]
    a_ext = np.empty((a.shape[0], columns + block), a.dtype, order=order_a)
    b_ext = np.zeros((columns + block, columns), a.dtype, order=order_b)
    b_ext[:columns] = np.eye(columns, dtype=a.dtype)
    for start in range(block, a.shape[1], block):
        m = min(block, a.shape[1] - start)
        a_ext[:, :columns] = total
        a_ext[:, columns:columns + m] = a[:, start:start + m]
        b_ext[columns:columns + m] = b[start:start + m]
        total = product(a_ext[:, :columns + m], b_ext[:columns + m])
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
    return next((name for name in _LAYOUTS if np.array_equal(_chain(a, b, name, block), want)),
                None)


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
    total = _chain(a, b, found[0], found[1])
    return total if np.isfinite(total).all() else None


def _rows(blocks, order, ones):
    """The (K (+ 1), n * L) matrix whose row k is blocks[:, k] (n, K, L) laid end to end (and a
    last row of ones), in the given memory order: one copy."""
    n, k, length = blocks.shape
    if order == "C":
        m = np.empty((k + ones, n * length), blocks.dtype)
        np.copyto(m.reshape(k + ones, n, length)[:k], blocks.transpose(1, 0, 2))
    else:
        m = np.empty((n * length, k + ones), blocks.dtype)
        np.copyto(m.reshape(n, length, k + ones)[..., :k], blocks.transpose(0, 2, 1))
        m = m.T
    m[k:] = 1
    return m


def conv_param_grads(g2, patches, with_bias):
    """(dL/dw2 (G, O/G, K) or None, dL/dbias (O,) or None) of a convolution from its output
    cotangent g2 (N, G, O/G, L) and input patches (N, G, K, L), each summed over (image,
    output position) as one chain; None where chained_matmul declines. The operands are
    built in the memory orders of the layout this shape chains in."""
    n, groups, og, length = g2.shape
    k = 0 if patches is None else patches.shape[2]
    found = None
    if g2.dtype == np.float32 and (k + with_bias) * og <= MAX_OUTPUTS:
        found = _layout(k + with_bias, og)
    order_a, order_b = _LAYOUTS[found[0]][:2] if found else ("C", "C")
    weights, biases = [], []
    for group in range(groups):
        blocks = np.zeros((n, 0, length), g2.dtype) if patches is None else patches[:, group]
        a = _rows(blocks, order_a, with_bias)
        b = _rows(g2[:, group], "F" if order_b == "C" else "C", False).T
        total = chained_matmul(a, b)
        if total is None:
            return None
        weights.append(None if patches is None else total[:k].T)
        biases.append(total[-1] if with_bias else None)
    return (None if patches is None else np.stack(weights),
            np.concatenate(biases) if with_bias else None)
