"""float32 `x ** y` as PyTorch's x86 CPU kernel computes it, so results agree to the bit.

PyTorch's pow kernel for float32 (any exponent but the few it computes by products) runs its
vector body through SLEEF's `powf` (1-ulp accuracy: about 2 % of its results are not the
correctly rounded ones), and the elements left over after the last pair of vectors (16 lanes
each on AVX-512, 8 on AVX2) through the C library's `powf` (glibc's, also within an ulp, wrong
in other places). numpy's float32 `power` array loop is a third algorithm again.

SLEEF's method is exp(y * log|x|) with the logarithm and the exponential carried as
*double-floats*: a value is an unevaluated sum hi + lo of two float32s, and each step is an
error-free transformation (Dekker, Knuth) made of float32 additions, products and fused
multiply-adds. Here every step is one numpy expression on whole arrays, in float32, with the
fused multiply-adds of runtime/fma.py.

Layout: the vector body and the leftover elements are counted along each *inner run* of the
kernel's loop; `torch_pow` covers C- or Fortran-contiguous operands (one run over memory) and
broadcasts whose last dimension is the run; other layouts go through the C library everywhere.
"""

import functools

import numpy as np

from runtime import cpu_capability
from runtime.cascade_sum import GRAIN_SIZE, THREADS
from runtime.fma import fma, horner

F32 = np.float32
# two vectors per step of PyTorch's loop: of 16 float32 lanes in its AVX-512 build (which an
# AVX-512 CPU runs), of 8 in its AVX2 one (runtime/cpu_capability.py; both measured)
VECTOR_PAIR = 32 if cpu_capability.capability() == "avx512" else 16
_LN2 = (F32(0.69314718246459960938), F32(-1.904654323148236017e-09))  # ln 2 as hi + lo
_LN2_UPPER, _LN2_LOWER = F32(0.693145751953125), F32(1.428606765330187045e-06)
_INV_LN2 = F32(1.442695040888963407359924681001892137426645954152985934135449406931)
_LOG_POLY = (0.240320354700088500976562, 0.285112679004669189453125, 0.400007992982864379882812)
_LOG_TAIL = (F32(0.66666662693023681640625), F32(3.69183861259614332084311e-09))
_EXP_POLY = (0.00136324646882712841033936, 0.00836596917361021041870117,
             0.0416710823774337768554688, 0.166665524244308471679688,
             0.499999850988388061523438)


def _exact_residual(a, b, hi):
    """a * b - hi for hi the float32 rounding of a * b: exact in float64 and in float32."""
    return (np.multiply(a, b, dtype=np.float64) - hi).astype(F32)


# double-float arithmetic: pairs (hi, lo) of float32 arrays

def _two_sum(x, y):
    hi = x + y
    v = hi - x
    return hi, (x - (hi - v)) + (y - v)


def _add2(a, b):
    """a + b for two double-floats, any magnitudes."""
    hi, lo = _two_sum(a[0], b[0])
    return hi, lo + (a[1] + b[1])


def _add2_float(a, y):
    hi, lo = _two_sum(a[0], y)
    return hi, lo + a[1]


def _add_fast(x, b):
    """x + b for a float x at least as large as the double-float b."""
    hi = x + b[0]
    return hi, ((x - hi) + b[0]) + b[1]


def _add_fast2(a, b):
    """a + b for double-floats with |a| >= |b|."""
    hi = a[0] + b[0]
    return hi, (((a[0] - hi) + b[0]) + a[1]) + b[1]


def _mul_float(a, y):
    hi = a[0] * y
    return hi, fma(a[1], y, _exact_residual(a[0], y, hi))


def _mul2(a, b):
    hi = a[0] * b[0]
    return hi, fma(a[0], b[1], fma(a[1], b[0], _exact_residual(a[0], b[0], hi)))


def _square(a):
    hi = a[0] * a[0]
    return hi, fma(a[0] + a[0], a[1], _exact_residual(a[0], a[0], hi))


def _div2(n, d):
    t = F32(1) / d[0]
    hi = n[0] * t
    u = _exact_residual(t, n[0], hi)
    lo = fma(-d[1], t, fma(-d[0], t, F32(1)))
    return hi, fma(hi, lo, fma(n[1], t, u))


def _normalize(a):
    hi = a[0] + a[1]
    return hi, (a[0] - hi) + a[1]


def _horner(coefficients, x):
    return horner([np.float64(F32(c)) for c in coefficients], np.asarray(x, F32))


def _log_df(d):
    """log(d) for positive float32 d, as a double-float: d = m * 2**e with m in [0.75, 1.5),
    log m = 2 atanh((m - 1) / (m + 1)) by an odd series."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = d * F32(1 / 0.75)
        e = (np.frexp(scaled)[1] - 1).astype(F32)  # the exponent of d / 0.75 in float32
        e = np.where(np.isinf(scaled), F32(128), e)
        m, k = np.frexp(d)  # d = m * 2**k, m in [0.5, 1)
        m = np.where(m < 0.75, m * 2, m).astype(F32)
        x = _div2(_two_sum(F32(-1), m), _two_sum(F32(1), m))
        x2 = _square(x)
        t = _horner(_LOG_POLY, x2[0])
        series = _mul2(_mul2(x2, x), _add2(_mul_float(x2, t), _LOG_TAIL))
        log = _add_fast2(_mul_float(_LN2, e), (x[0] * 2, x[1] * 2))
        return _add_fast2(log, series)


def _exp_df(d):
    """exp(hi + lo) rounded to float32: 2**q * exp(s) with s reduced by q * ln 2."""
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.rint((d[0] + d[1]) * _INV_LN2)
        s = _add2_float(d, q * -_LN2_UPPER)
        s = _add2_float(s, q * -_LN2_LOWER)
        s = _normalize(s)
        u = _horner(_EXP_POLY, s[0])
        t = _add_fast2(s, _mul_float(_square(s), u))
        t = _add_fast(F32(1), t)
        q = np.where(np.isfinite(q), q, 0).astype(np.int32)
        out = _ldexp(t[0] + t[1], q)
        return np.where(d[0] < -104, F32(0), out)


def _power_of_two(k):
    return ((k + 0x7F) << 23).astype(np.int32).view(F32)


def _ldexp(x, q):
    """x * 2**q in SLEEF's steps: four equal factors 2**m, then 2**(q - 4m); results below
    the normal range are rounded at the last product (not once, as np.ldexp rounds)."""
    sign = q >> 31
    m = (((sign + q) >> 6) - sign) << 4
    q = q - (m << 2)
    m = np.clip(m + 0x7F, 0, 0xFF)
    u = (m << 23).astype(np.int32).view(F32)
    return x * u * u * u * u * _power_of_two(q)


def sleef_pow(x, y):
    """SLEEF's powf(x, y) on float32 arrays (broadcast together), special values included."""
    x, y = np.broadcast_arrays(np.asarray(x, F32), np.asarray(y, F32))
    with np.errstate(all="ignore"):
        ax = np.abs(x)
        result = _exp_df(_mul_float(_log_df(ax), y))
        result = np.where(np.isnan(result), F32(np.inf), result)
        y_int = (np.trunc(y) == y) | (np.abs(y) > 1 << 24)
        y_odd = y_int & (np.abs(y) < 1 << 24) & (np.abs(np.fmod(y, 2)) == 1)
        sign = np.where(x > 0, F32(1), np.where(y_int, np.where(y_odd, F32(-1), F32(1)),
                                                  F32(np.nan)))
        result = result * sign
        efx = np.where(np.signbit(y), 1 - ax, ax - 1)  # (|x| - 1) times y's sign
        at_inf_y = np.where(efx < 0, F32(0), np.where(efx == 0, F32(1), F32(np.inf)))
        result = np.where(np.isinf(y), at_inf_y, result)
        at_edge = np.where(np.where(x == 0, -y, y) < 0, F32(0), F32(np.inf))
        edge_sign = np.where(y_odd, np.copysign(F32(1), x), F32(1))
        result = np.where(np.isinf(x) | (x == 0), edge_sign * at_edge, result)
        result = np.where(np.isnan(x) | np.isnan(y), F32(np.nan), result)
        return np.where((y == 0) | (x == 1), F32(1), result).astype(F32)


def double_pow(x, y):
    """float32 x to a Python-number power y, in double and rounded: PyTorch's scalar loop for a
    number exponent calls the double pow (numpy's float64 loop differs from glibc's pow in
    the last double bits only, which rounding to float32 hides but for ~2**-29 of results)."""
    with np.errstate(all="ignore"):
        return np.power(np.asarray(x, np.float64), float(y)).astype(F32)


def libm_pow(x, y):
    """The C library's powf, element by element: numpy's float32 scalars call it (its array
    loop does not), and glibc's powf is not correctly rounded, so nothing else reproduces it."""
    x, y = np.broadcast_arrays(np.asarray(x, F32), np.asarray(y, F32))
    with np.errstate(all="ignore"):
        values = [a ** b for a, b in zip(x.reshape(-1), y.reshape(-1))]
    return np.array(values, F32).reshape(x.shape)


def coalesced_run(shape, strides):
    """(length, inner strides) of the innermost run of PyTorch's loop over `shape` in C order:
    neighbouring dimensions merge while every operand steps through them evenly."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    if not dims:
        return 1, tuple(0 for _ in strides)
    inner = dims[-1]
    length = shape[inner]
    for d in reversed(dims[:-1]):
        if any(s[d] != s[inner] * length for s in strides):
            break
        length *= shape[d]
    return length, tuple(s[inner] for s in strides)


def vectorizable(inner_strides):
    """PyTorch's loop runs SIMD vectors when every operand is contiguous along the run, or
    all but one are (that one a scalar broadcast along it)."""
    if all(s == 1 for s in inner_strides):
        return True
    return len(inner_strides) > 1 and sorted(inner_strides)[1:] == [1] * (len(inner_strides) - 1) \
        and min(inner_strides) == 0


@functools.lru_cache(maxsize=64)
def vector_mask(n, run):
    """Which of n elements (runs of `run` in a row) PyTorch's loop computes in vector pairs:
    each call of its inner loop covers a run, or the part of one inside a thread's chunk, and
    leaves the last (length mod 32) elements to the scalar C function."""
    threads = min(THREADS, -(-n // GRAIN_SIZE))
    chunk = -(-n // threads) if threads > 1 else n
    i = np.arange(n)
    start = np.maximum(i // run * run, i // chunk * chunk)
    end = np.minimum(np.minimum(i // run * run + run, i // chunk * chunk + chunk), n)
    length = end - start
    mask = i - start < length - length % VECTOR_PAIR
    mask.flags.writeable = False
    return mask


def torch_pow(x, y):
    """x ** y for float32 x (array) and y (array or number) as PyTorch's CPU kernel computes
    it: SLEEF on the vector body of each run, the C library's powf on the rest."""
    x = np.asarray(x, F32)
    if np.ndim(y) == 0 and (x.flags.c_contiguous or x.flags.f_contiguous):
        out = np.empty_like(x)  # the same memory order as x, walked as one run
        flat = x.ravel(order="K")
        out.ravel(order="K")[...] = _runs_pow(flat, y, flat.shape[0], double_pow)
        return out
    scalar_loop = double_pow if np.ndim(y) == 0 and not isinstance(y, np.ndarray) else libm_pow
    xb, yb = np.broadcast_arrays(x, np.asarray(y, F32))
    strides = [tuple(s // 4 for s in a.strides) for a in (xb, yb)]
    run, inner = coalesced_run(xb.shape, strides[:1] if scalar_loop is double_pow else strides)
    if not vectorizable(inner):
        return scalar_loop(xb, y if scalar_loop is double_pow else yb)
    y_flat = y if scalar_loop is double_pow else yb.reshape(-1)
    return _runs_pow(xb.reshape(-1), y_flat, run, scalar_loop).reshape(xb.shape)


def _runs_pow(x, y, run, scalar_loop):
    """x ** y over flat operands in runs of `run`: SLEEF where PyTorch runs vectors, the
    scalar loop's function elsewhere."""
    n = x.shape[0]
    mask = vector_mask(n, run) if n else np.zeros(0, bool)
    tail = n - int(np.count_nonzero(mask))
    vector_y = F32(y) if np.ndim(y) == 0 else y
    if tail == 0:
        return sleef_pow(x, vector_y)
    out = scalar_loop(x, y)
    if tail < n:
        out[mask] = sleef_pow(x[mask], vector_y if np.ndim(y) == 0 else y[mask])
    return out
