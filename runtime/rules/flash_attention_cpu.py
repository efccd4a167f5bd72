"""PyTorch's CPU flash attention (scaled_dot_product_attention's kernel for float32 without a
mask, dropout or causal masking; nn.MultiheadAttention's route when no weights are asked
for), reproduced on numpy to the bit (measured against torch 2.13 on one thread, its AVX-512
and AVX2 builds: runtime/cpu_capability.py). `applies` says where: with MKL at hand any head
size and query count and up to KV_SPLIT keys (one block of keys: more are merged block by
block, not followed); without MKL the sizes measured on an Intel Xeon (heads of 4 values, 4
to 8 keys, 8 to 32 queries; the transformer example's 8 by 8 by 4), on Intel CPUs only.

Each matrix product is MKL's sgemm. With MKL at hand (runtime/mkl.py) it is called per
(batch, head, block of queries) with the kernel's own arguments (transposes, leading
dimensions, alpha and beta), so the products are PyTorch's on any CPU: MKL's kernel for a
small product depends on the host (an Intel Xeon with AVX-512 sums each output as one chain
of fused multiply-adds in the shared dimension's order; an AMD EPYC with AVX-512 does not).
Without MKL every product is that chain (the Xeon's order). Forward, per (batch, head):
    s = (q @ k.T) * scale,  e = exp(s - rowmax(s)),  sum = the row of e added up,
    out = (e @ v) * (1 / sum),  lse = rowmax + logf(sum) (the C library's logf),
where a row's whole vectors of LANES (16 in the AVX-512 build, 8 in the AVX2 one) take
PyTorch's exp_u20 and are summed lane by lane, the lanes folded as a tree, and the elements
after them take the C library's expf (correctly rounded: computed in float64) and are added
in order onto that (`_exp_and_sum`). Backward, with g the output's cotangent:
    d = rowsum(g * out) (simd_softmax.lane_sums),  a = exp(q @ k.T * scale - lse) (SLEEF's
    expf_u10),  v_bar = a.T @ g,  a_bar = a * (g @ v.T - d),  q_bar = (a_bar @ k) * scale,
    k_bar = (a_bar.T @ q) * scale,
the scale applied by the product (MKL's alpha; in the chains after it, exact for heads of 4).
"""

import math

import numpy as np

from runtime import cpu_capability
from runtime.fma import _midpoints, _sum_error, fma
from runtime.simd_softmax import LANES, fold_lanes, lane_sums, sleef_expf

F32, F64 = np.float32, np.float64
# without MKL, the sizes measured bit-equal (all combinations) with the chain: heads of 4
# values, 4 to 8 keys, 8 to 32 queries (one block of the kernel's tiling)
HEAD, KEYS, QUERIES = 4, (4, 8), (8, 32)
KV_SPLIT = 512  # the kernel's block of keys


def applies(q, k, v, scale):
    """Whether PyTorch's flash kernel on these float32 (batch, heads, length, head) arrays is
    reproduced here: with MKL (and rows it can read) up to KV_SPLIT keys, else the sizes
    measured with the chain on an Intel CPU (MKL's kernels on others sum otherwise); not
    for PyTorch's build without vector instructions (ATEN_CPU_CAPABILITY=default: its exp
    and sums are other ones)."""
    arrays = (q, k, v)
    if not (all(a.dtype == F32 and a.ndim == 4 for a in arrays) and q.size > 0
            and k.shape == v.shape and q.shape[:2] == k.shape[:2] and q.shape[3] == k.shape[3]
            and 0 < k.shape[2] <= KV_SPLIT and cpu_capability.has_fma()):
        return False
    if _sgemm(q, k, v) is not None:
        return True
    return (cpu_capability.vendor() == "GenuineIntel" and q.shape[3] == HEAD
            and KEYS[0] <= k.shape[2] <= KEYS[1] and QUERIES[0] <= q.shape[2] <= QUERIES[1]
            and scale in (None, 1 / math.sqrt(HEAD)))


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


def _t(x):
    return np.swapaxes(x, -1, -2)


def _logf(x):
    from runtime import simd_compiled

    y = simd_compiled.libm_logf(x)
    return np.log(x.astype(F64)).astype(F32) if y is None else y.reshape(x.shape)


def _forward(q, k, v, scale):
    s = _chain(q, _t(k)) * scale
    top = s.max(axis=-1)
    e, total = _exp_and_sum(s - top[..., None])
    out = _chain(e, v) * (F32(1) / total)[..., None]
    return out, top + _logf(total)


def _exp_and_sum(shifted):
    """(exp of shifted, its row sums) as the kernel's fused loop computes them over a row of
    scores less their maximum: the whole vectors of LANES (16 in PyTorch's AVX-512 build, 8
    in its AVX2 one) through exp_u20, summed lane by lane and the lanes folded as a tree
    (simd_softmax.fold_lanes); the elements after them through the C library's expf (glibc's
    is correctly rounded here: float64 rounded), added in order onto that."""
    n = shifted.shape[-1]
    full = n - n % LANES
    e = np.empty_like(shifted)
    e[..., full:] = np.exp(shifted[..., full:].astype(F64)).astype(F32)
    total = np.zeros(shifted.shape[:-1], F32)
    if full:
        e[..., :full] = exp_u20(shifted[..., :full])
        lanes = e[..., :LANES].copy()
        for start in range(LANES, full, LANES):
            lanes += e[..., start:start + LANES]
        total = fold_lanes(lanes)
    for j in range(full, n):
        total = total + e[..., j]
    return e, total


_U20_POLY = tuple(F32(c) for c in (0.00828929059, 0.0418978221, 0.166676521, 0.499991506,
                                   0.999999701, 1.0))
_LOG2E, _LN2F = (np.array(bits, np.uint32).view(F32) for bits in (0x3FB8AA3B, 0x3F317218))
_LN_FLT_MIN, _LN_FLT_MAX = (np.array(bits, np.uint32).view(F32) for bits in (0xC2AEAC50,
                                                                              0x42B17218))


def exp_u20(x):
    """PyTorch's vectorized exp_u20 of a float32 array (its fast exp, within 20 ulp): x
    clamped to the logarithms of the smallest and largest normal floats, n = floor(x log2(e)
    + 1/2) and r = x - n ln 2 each by one fused multiply-add, a degree-5 polynomial in r by
    fused multiply-adds, times 2**(n - 1) (zero where n - 1 is below the normal exponents),
    times 2; zero below the clamp."""
    src = np.clip(x, _LN_FLT_MIN, _LN_FLT_MAX)
    n = np.floor(fma(src, _LOG2E, F32(0.5)))
    n[np.isnan(n)] = 0  # a nan stays nan through r
    r = fma(-n, _LN2F, src)
    p = np.full_like(r, _U20_POLY[0])
    for c in _U20_POLY[1:]:
        p = fma(r, p, c)
    exponent = n.astype(np.int32) - 1
    scale = np.where(exponent >= -126, np.ldexp(F32(1), exponent), F32(0)).astype(F32)
    return np.where(x < _LN_FLT_MIN, F32(0), p * scale * F32(2))


def forward(q, k, v, scale=None):
    """(out, lse) of attention over float32 (B, H, L, E) arrays q and (B, H, S, E) k, v."""
    sgemm = _sgemm(q, k, v)
    if sgemm is not None:
        return _mkl_forward(sgemm, q, k, v, F32(_scale(q, scale)))
    return _forward(q, k, v, F32(_scale(q, scale)))


# -- MKL's own products, called as the kernel calls them ----------------------------------------

def _sgemm(*arrays):
    """MKL's sgemm (runtime/mkl.py) where it is at hand and every array walks its last axis
    contiguously (rows at positive strides, as the kernel reads them); else None."""
    from runtime import mkl

    if not all(a.strides[-1] == a.itemsize and min(a.strides) > 0 for a in arrays):
        return None
    return mkl.gemm_call(F32)


def _q_split(length):
    """The kernel's block of queries (its template argument, chosen by the query count)."""
    return 256 if length >= 768 else 64 if length >= 192 else 32


def _rows(x, i, j, start=0):
    """(address of x[i, j, start, 0], distance between x[i, j]'s rows in elements; a single
    row's, which nothing reads, at least a row's length, as BLAS asks)."""
    from runtime import mkl

    s0, s1, s2 = x.strides[:3]
    ld = s2 // x.itemsize if x.shape[2] > 1 else max(s2 // x.itemsize, x.shape[3])
    return mkl.address(x) + i * s0 + j * s1 + start * s2, ld


def _blocks(q):
    """(i, j, first query, query count) of each block the kernel walks, in its order."""
    b, h, length = q.shape[:3]
    split = min(_q_split(length), length)
    for i, j in np.ndindex(b, h):
        for m in range(0, length, split):
            yield i, j, m, min(split, length - m)


def _mkl_forward(sgemm, q, k, v, scale):
    """_forward with each product MKL's, called per (batch, head, block of queries) with the
    kernel's arguments: scores = k.T q (column-major, so q @ k.T row-major) with alpha 1,
    then out's rows = v.T weights."""
    from runtime import mkl

    s, e = k.shape[2], q.shape[3]
    scores = np.empty(q.shape[:3] + (s,), F32)
    for i, j, m, rows in _blocks(q):
        sgemm(True, False, s, rows, e, 1.0, *_rows(k, i, j), *_rows(q, i, j, m), 0.0,
              mkl.address(scores[i, j, m]), s)
    scores *= scale
    top = scores.max(axis=-1)
    weights, total = _exp_and_sum(scores - top[..., None])
    dst = np.empty(q.shape, F32)
    for i, j, m, rows in _blocks(q):
        sgemm(False, False, e, rows, s, 1.0, *_rows(v, i, j), mkl.address(weights[i, j, m]), s,
              0.0, mkl.address(dst[i, j, m]), e)
    return dst * (F32(1) / total)[..., None], top + _logf(total)


def _mkl_backward(sgemm, g, q, k, v, out, lse, scale):
    """_backward with MKL's products, per (batch, head, block of queries) as the kernel calls
    them: the gradients start at zero in (B, L, H, E) order (the kernel's layout, with
    g copied to it) and each product is added on with beta 1, alpha the scale where the
    kernel folds it in."""
    from runtime import mkl

    s, e = k.shape[2], q.shape[3]
    g_t = np.ascontiguousarray(np.swapaxes(g, 1, 2))
    grads = [np.zeros(np.swapaxes(x, 1, 2).shape, F32) for x in (q, k, v)]
    go, gq, gk, gv = (np.swapaxes(x, 1, 2) for x in (g_t, *grads))
    d = lane_sums(g * out)
    attn = np.empty(q.shape[:3] + (s,), F32)
    for i, j, m, rows in _blocks(q):
        sgemm(True, False, s, rows, e, float(scale), *_rows(k, i, j), *_rows(q, i, j, m), 0.0,
              mkl.address(attn[i, j, m]), s)
    attn = _expf(attn - lse[..., None])
    grad_attn = np.empty_like(attn)
    for i, j, m, rows in _blocks(q):
        a, ga = mkl.address(attn[i, j, m]), mkl.address(grad_attn[i, j, m])
        sgemm(False, True, e, s, rows, 1.0, *_rows(go, i, j, m), a, s, 1.0, *_rows(gv, i, j))
        sgemm(True, False, s, rows, e, 1.0, *_rows(v, i, j), *_rows(go, i, j, m), 0.0, ga, s)
    grad_attn = attn * (grad_attn - d[..., None])
    for i, j, m, rows in _blocks(q):
        ga = mkl.address(grad_attn[i, j, m])
        sgemm(False, False, e, rows, s, float(scale), *_rows(k, i, j), ga, s, 1.0,
              *_rows(gq, i, j, m))
        sgemm(False, True, e, s, rows, float(scale), *_rows(q, i, j, m), ga, s, 1.0,
              *_rows(gk, i, j))
    return tuple(np.ascontiguousarray(x) for x in (gq, gk, gv))


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
    d = lane_sums(g * out)
    scores, g_v = _chains((q, _t(k)), (g, _t(v)))
    a = _expf(scores * scale - lse[..., None])
    a_bar = a * (g_v - d[..., None])
    v_bar, k_bar = _chains((_t(a), g), (_t(a_bar), q))
    return _chain(a_bar, k) * scale, k_bar * scale, v_bar


def backward(g, q, k, v, out, lse, scale=None):
    """(q_bar, k_bar, v_bar) of `forward`, g the cotangent of out."""
    sgemm = _sgemm(q, k, v)
    if sgemm is not None:
        return _mkl_backward(sgemm, g, q, k, v, out, lse, F32(_scale(q, scale)))
    return _backward(g, q, k, v, out, lse, F32(_scale(q, scale)))
