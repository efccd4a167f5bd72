"""float32 log_softmax and softmax over a contiguous last dimension, and their gradients, as
PyTorch's x86 CPU kernels compute them, so results agree to the bit (measured against torch
2.13).

PyTorch's kernel takes each row's maximum m, sums exp(x - m) in the lanes of one vector, LANES
of them (16 where PyTorch runs its AVX-512 build, 8 for its AVX2 one: runtime/cpu_capability.py;
measured on both, the AVX2 one through ATEN_CPU_CAPABILITY=avx2): a row shorter than a vector
in order, else lane j adds elements j, j + LANES, ... and the lanes fold as a tree. log_softmax
takes the logarithm of the sum and writes (x - m) - log(sum); its gradient is
g - exp(y) * sum(g), the product subtracted by one fused multiply-add, sum(g) in the same
lanes. softmax multiplies exp(x - m) by the reciprocal of its lane sum; its gradient is
(g - sum(g * y)) * y, the sum in the same lanes (the tail's products fused: `lane_dots`). On
one thread, as the project follows PyTorch throughout. exp and log are
SLEEF's 1-ulp float32 functions (expf_u10, logf_u10), written out here in numpy float32 with
the fused multiply-adds of runtime/fma.py: their results are not always the correctly rounded
ones, so float64 math rounded to float32 disagrees with PyTorch in ~0.2 % of elements.
"""

import numpy as np

from runtime import cpu_capability
from runtime.fma import deferred_ties, fma
from runtime.simd_pow import _div2, _horner, _two_sum

F32 = np.float32
# one vector of floats of PyTorch's build of the kernel (runtime/cpu_capability.py): its
# AVX-512 build is registered too, so an AVX-512 CPU runs 16 lanes, an AVX2 one 8
LANES = 16 if cpu_capability.capability() == "avx512" else 8
_INV_LN2 = F32(1.442695040888963407359924681001892137426645954152985934135449406931)
_LN2_UPPER, _LN2_LOWER = F32(0.693145751953125), F32(1.428606765330187045e-06)
_LN2 = (F32(0.69314718246459960938), F32(-1.904654323148236017e-09))
_EXP_POLY = (0.000198527617612853646278381, 0.00139304355252534151077271,
             0.00833336077630519866943359, 0.0416664853692054748535156,
             0.166666671633720397949219, 0.5)
_LOG_POLY = (0.3027294874, 0.3996108174, 0.6666694880)


def sleef_expf(d):
    """SLEEF's expf_u10 of a float32 array (finite input)."""
    q = np.rint(d * _INV_LN2)
    s = fma(q, -_LN2_UPPER, d)
    s = fma(q, -_LN2_LOWER, s)
    u = F32(1) + fma(s * s, _horner(_EXP_POLY, s), s)
    u = np.ldexp(u, q.astype(np.int32))
    u[d < -104] = 0
    u[d > 100] = np.inf
    return u


def sleef_logf(d):
    """SLEEF's logf_u10 of a positive, finite, normal float32 array."""
    _, exponent = np.frexp(d * F32(1 / 0.75))
    e = (exponent - 1).astype(F32)
    m = np.ldexp(d, 1 - exponent)
    s_hi = _LN2[0] * e
    s_lo = fma(_LN2[1], e, fma(_LN2[0], e, -s_hi))
    num, den = _two_sum(F32(-1), m), _two_sum(F32(1), m)
    x_hi, x_lo = _div2(num, den)
    x2 = x_hi * x_hi
    t = _horner(_LOG_POLY, x2)
    # (s_hi, s_lo) + 2 x, then + x^3 t, as SLEEF adds double-floats (larger operand first)
    a_hi, a_lo = x_hi * F32(2), x_lo * F32(2)
    hi = s_hi + a_hi
    lo = (((s_hi - hi) + a_hi) + s_lo) + a_lo
    tail = x2 * x_hi * t
    hi2 = hi + tail
    lo2 = ((hi - hi2) + tail) + lo
    return hi2 + lo2


def lane_sums(v, fold=True):
    """Each row of a float32 (rows, n) array summed as PyTorch's vector reduction does
    (fold False, n at least LANES: the LANES lanes before they are folded)."""
    n = v.shape[-1]
    if n < LANES:
        return np.add.accumulate(v, axis=-1)[..., -1]
    full = n - n % LANES
    # vector k of every row as row k of one C-ordered array: numpy reduces its first axis one
    # row after another, so each lane adds its elements in order
    vectors = v[..., :full].reshape(-1, full // LANES, LANES).transpose(1, 0, 2)
    acc = np.add.reduce(np.ascontiguousarray(vectors), axis=0).reshape(v.shape[:-1] + (LANES,))
    if n > full:
        acc[..., :n - full] += v[..., full:]
    return fold_lanes(acc) if fold else acc


def fold_lanes(acc):
    """The lanes of vector registers (the last axis) added up as PyTorch's vec_reduce_all
    folds them: lane j plus lane j + half, the half halving down to one lane."""
    half = acc.shape[-1] // 2
    while half:
        acc = acc[..., :half] + acc[..., half:2 * half]
        half //= 2
    return acc[..., 0]


def softmax(d):
    """softmax of a C-contiguous float32 array along its last axis as PyTorch's kernel
    computes it: m the row's maximum, e = exp(x - m) by SLEEF's expf_u10, the row of e
    summed in LANES lanes (`lane_sums`), then e times the reciprocal of that sum. None where
    a value is nan or +inf or a row's maximum is not finite (numpy's route keeps PyTorch's
    inf and nan results there); -inf gives an exact 0, as SLEEF's does."""
    rows = d.reshape(-1, d.shape[-1])
    top = rows.max(axis=1, keepdims=True)
    finite = np.isfinite(rows)
    if not (np.isfinite(top).all() and (finite | (rows == -np.inf)).all()):
        return None
    shifted = rows - top
    if not finite.all():
        shifted[~finite] = -200  # below expf's underflow bound: exactly 0
    e = _expf(shifted)
    return (e * (F32(1) / lane_sums(e))[:, None]).reshape(d.shape)


def softmax_grad(g, result):
    """softmax's gradient as PyTorch's kernel computes it: (g - sum(g * y)) * y along the
    last axis, sum(g * y) by `lane_dots`. None where a value is not finite."""
    rows = np.ascontiguousarray(g).reshape(-1, g.shape[-1])
    y = result.reshape(rows.shape)
    if not (np.isfinite(rows).all() and np.isfinite(y).all()):
        return None
    return ((rows - lane_dots(rows, y)[:, None]) * y).reshape(g.shape)


def lane_dots(a, b):
    """sum(a * b) of each row as the softmax gradient's kernel adds it: `lane_sums` of the
    rounded products, except that the elements after the last whole vector are added into
    their lanes by fused multiply-adds (the compiler contracts that step there, not the
    others; measured on both builds, PyTorch on one thread: with more threads its own
    results add those products unfused)."""
    n = a.shape[-1]
    if n < LANES:
        return lane_sums(a * b)
    full = n - n % LANES
    acc = lane_sums(a[..., :full] * b[..., :full], fold=False)
    if n > full:
        acc[..., :n - full] = fma(a[..., full:], b[..., full:], acc[..., :n - full])
    return fold_lanes(acc)


def _expf(x):
    """sleef_expf of finite float32 values, compiled where llvmlite is at hand."""
    from runtime import simd_compiled

    out = simd_compiled.sleef_expf(x)
    return sleef_expf(x) if out is None else out


def applies(d, axis):
    """Whether the kernels above are PyTorch's for (log_)softmax of d along axis (not for its
    build without vector instructions, ATEN_CPU_CAPABILITY=default: another exp, no FMA)."""
    return (d.dtype == np.float32 and d.ndim >= 1 and d.size > 0 and d.flags.c_contiguous
            and axis in (-1, d.ndim - 1) and cpu_capability.has_fma())


def log_softmax(d):
    """log_softmax of a C-contiguous float32 array along its last axis, or None where a value
    is not finite (numpy's float64 route keeps PyTorch's inf and nan results there)."""
    from runtime import simd_compiled

    rows = d.reshape(-1, d.shape[-1])
    out = np.empty_like(rows)
    if simd_compiled.log_softmax(rows, out):
        return out.reshape(d.shape)
    if not np.isfinite(rows).all():
        return None
    shifted = rows - rows.max(axis=1, keepdims=True)
    return deferred_ties(_log_softmax, shifted).reshape(d.shape)


def _log_softmax(shifted):
    total = lane_sums(sleef_expf(shifted))
    return shifted - sleef_logf(total)[:, None]


def log_softmax_grad(g, result):
    """g - exp(result) * sum(g) along the last axis, or None where a value is not finite."""
    from runtime import simd_compiled

    rows = np.ascontiguousarray(g).reshape(-1, g.shape[-1])
    out = result.reshape(rows.shape)
    grad = np.empty_like(rows)
    if simd_compiled.log_softmax_grad(rows, out, grad):
        return grad.reshape(g.shape)
    if not (np.isfinite(rows).all() and np.isfinite(out).all()):
        return None
    return deferred_ties(_log_softmax_grad, rows, out).reshape(g.shape)


def _log_softmax_grad(rows, out):
    total = lane_sums(rows)
    return fma(sleef_expf(out), -total[:, None], rows)
