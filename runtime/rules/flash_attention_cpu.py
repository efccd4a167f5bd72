"""PyTorch's CPU flash attention (scaled_dot_product_attention's kernel for float32 without a
mask, dropout or causal masking; nn.MultiheadAttention's route when no weights are asked
for), reproduced on numpy to the bit for the sizes measured against torch 2.13 on one thread
(`applies`: heads of 4 values, 4 to 8 keys, 8 to 32 queries; the transformer example's 8 by
8 by 4).

Each matrix product is MKL's sgemm on these sizes: every output one chain of fused
multiply-adds in the shared dimension's order. Forward, per (batch, head):
    s = (q @ k.T) * scale,  e = exp(s - rowmax(s)) (correctly rounded: computed in float64),
    sum = the row of e added in order, out = (e @ v) * (1 / sum),
    lse = rowmax + logf(sum) (the C library's logf, not always correctly rounded).
Backward, with g the output's cotangent:
    d = rowsum(g * out) in order,  a = exp(q @ k.T * scale - lse) (SLEEF's expf_u10),
    v_bar = a.T @ g,  a_bar = a * (g @ v.T - d),  q_bar = (a_bar @ k) * scale,
    k_bar = (a_bar.T @ q) * scale,
the scale applied after the chain (MKL's alpha; 1/2 for heads of 4 values, exact).
"""

import math

import numpy as np

from runtime.fma import _midpoints, _sum_error, fma
from runtime.simd_softmax import sleef_expf

F32, F64 = np.float32, np.float64
# the sizes measured bit-equal (all combinations): heads of 4 values, 4 to 8 keys, 8 to 32
# queries (one block of the kernel's tiling)
HEAD, KEYS, QUERIES = 4, (4, 8), (8, 32)


def applies(q, k, v, scale):
    """Whether PyTorch's flash kernel on these float32 (batch, heads, length, head) arrays is
    the order reproduced here (the sizes measured: MKL's kernels for other ones sum
    differently)."""
    arrays = (q, k, v)
    return (all(a.dtype == F32 and a.ndim == 4 for a in arrays) and q.size > 0
            and k.shape == v.shape and q.shape[:2] == k.shape[:2] and q.shape[3] == k.shape[3]
            and q.shape[3] == HEAD and KEYS[0] <= k.shape[2] <= KEYS[1]
            and QUERIES[0] <= q.shape[2] <= QUERIES[1] and scale in (None, 1 / math.sqrt(HEAD)))


def _scale(q, scale):
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale


def _chain(a, b):
    """a (..., m, n) @ b (..., n, p), each output one FMA chain in n's order (compiled,
    runtime/simd_compiled.py, or on numpy)."""
    from runtime import simd_compiled

    out = simd_compiled.fma_chain(a, b)
    return _numpy_chain(a, b) if out is None else out


def _numpy_chain(a, b):
    """_chain on numpy: the products
    exact in float64, each step's float64 sum rounded to float32; where one of those sums was
    itself rounded onto a float32 midpoint (a false tie: rounding again could go the wrong
    way) the chain is redone by `fma` (runtime/fma.py)."""
    # step i's products first: (n, ..., m, p), each step one contiguous block
    products = np.multiply(np.moveaxis(a, -1, 0)[..., None], np.moveaxis(b, -2, 0)[..., None, :],
                           dtype=F64)
    sums = np.empty_like(products)
    sums[0] = products[0]
    acc = products[0].astype(F32)
    for i in range(1, a.shape[-1]):
        np.add(products[i], acc, out=sums[i])
        acc = sums[i].astype(F32)
    return _fma_chain(a, b) if _false_tie(products, sums) else acc


def _false_tie(products, sums):
    """Whether a chain step's float64 sum (of the product and the float32 running sum before
    it) on a float32 midpoint was rounded there."""
    where = np.nonzero(_midpoints(sums[1:]))
    if not where[0].size:
        return False
    step, before = (where[0] + 1, *where[1:]), where
    total = sums[step]
    return bool(np.count_nonzero(_sum_error(products[step], sums[before].astype(F32), total)))


def _fma_chain(a, b):
    acc = a[..., :, 0:1] * b[..., 0:1, :]
    for i in range(1, a.shape[-1]):
        acc = fma(a[..., :, i:i + 1], b[..., i:i + 1, :], acc)
    return acc


def _in_order(x):
    return np.add.accumulate(x, axis=-1)[..., -1]


def _t(x):
    return np.swapaxes(x, -1, -2)


def _logf(x):
    from runtime import simd_compiled

    y = simd_compiled.libm_logf(x)
    return np.log(x.astype(F64)).astype(F32) if y is None else y.reshape(x.shape)


def _forward(q, k, v, scale):
    s = _chain(q, _t(k)) * scale
    top = s.max(axis=-1)
    e = np.exp((s - top[..., None]).astype(F64)).astype(F32)
    total = _in_order(e)
    out = _chain(e, v) * (F32(1) / total)[..., None]
    return out, top + _logf(total)


def forward(q, k, v, scale=None):
    """(out, lse) of attention over float32 (B, H, L, E) arrays q and (B, H, S, E) k, v."""
    return _forward(q, k, v, F32(_scale(q, scale)))


def _chains(*pairs):
    """_chain of each (a, b) pair of one shape, as one call on the stacked pairs."""
    return _chain(np.stack([a for a, _ in pairs]), np.stack([b for _, b in pairs]))


def _expf(x):
    """SLEEF's expf_u10 of x: compiled (runtime/simd_compiled.py) where llvmlite is at hand,
    else simd_softmax.sleef_expf on numpy."""
    from runtime import simd_compiled

    out = simd_compiled.sleef_expf(x)
    return sleef_expf(x) if out is None else out


def _backward(g, q, k, v, out, lse, scale):
    d = _in_order(g * out)
    scores, g_v = _chains((q, _t(k)), (g, _t(v)))
    a = _expf(scores * scale - lse[..., None])
    a_bar = a * (g_v - d[..., None])
    v_bar, k_bar = _chains((_t(a), g), (_t(a_bar), q))
    return _chain(a_bar, k) * scale, k_bar * scale, v_bar


def backward(g, q, k, v, out, lse, scale=None):
    """(q_bar, k_bar, v_bar) of `forward`, g the cotangent of out."""
    return _backward(g, q, k, v, out, lse, F32(_scale(q, scale)))
