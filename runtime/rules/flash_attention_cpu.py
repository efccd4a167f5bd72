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

from runtime.fma import deferred_ties, fma
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
    """a (..., m, n) @ b (..., n, p), each output one FMA chain in n's order."""
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
    return deferred_ties(_forward, q, k, v, F32(_scale(q, scale)))


def _backward(g, q, k, v, out, lse, scale):
    d = _in_order(g * out)
    a = sleef_expf(_chain(q, _t(k)) * scale - lse[..., None])
    v_bar = _chain(_t(a), g)
    a_bar = a * (_chain(g, _t(v)) - d[..., None])
    return _chain(a_bar, k) * scale, _chain(_t(a_bar), q) * scale, v_bar


def backward(g, q, k, v, out, lse, scale=None):
    """(q_bar, k_bar, v_bar) of `forward`, g the cotangent of out."""
    return deferred_ties(_backward, g, q, k, v, out, lse, F32(_scale(q, scale)))
