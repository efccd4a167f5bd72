"""float32 fused multiply-add on numpy arrays: a * b + c rounded once, as the FMA instructions
PyTorch's vector kernels use (lerp, addcmul, add with alpha, SLEEF's functions) compute it.

numpy has no fma. The product of two float32s is exact in float64 (24 + 24 bits), so one
float64 addition leaves a single rounding before the final one to float32; the two roundings
disagree only where the float64 sum landed exactly halfway between two float32s, and there
the sum is moved off the tie towards the exact value (its error, from Knuth's two-sum).

The common case of a number times an array plus an array (SGD's `p.add_(buf, alpha=-lr)`,
lerp with a number weight) is BLAS's saxpy, whose x86 kernels are one hardware FMA per
element: 15-20x faster than the emulation. Whether this machine's kernel really fuses is
calibrated once against the emulation (on operands where the unfused sum differs), and the
emulation stays the reference and the fallback.

On small arrays (SLEEF's exp and log over a log_softmax's rows) the tie test and repair cost
more than the arithmetic; `deferred_ties` runs a whole kernel with fma rounding its sums
straight to float32, tests all the sums for ties in one pass at the end, and runs the kernel
again with the repairing fma only when one of them may have been a false tie.
"""

import bisect
import functools
import itertools
import math
import threading

import numpy as np

F32 = np.float32
_local = threading.local()


def scratch(shape, dtype):
    """A per-thread buffer of this shape and dtype, reused across calls: large temporaries
    allocated afresh each step cost their page faults every time."""
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = {}
    key = (shape, np.dtype(dtype).str)
    buf = cache.get(key)
    if buf is None:
        if len(cache) > 64:
            cache.clear()
        buf = cache[key] = np.empty(shape, dtype)
    return buf


CHUNK = 32768  # elements per pass: the float64 temporaries stay in the cache


def fma(a, b, c, out=None):
    """a * b + c rounded once to float32 (into `out` when given; it may be c itself)."""
    sums = getattr(_local, "sums", None)
    if sums is not None:
        return _unrepaired(a, b, c, out, sums)
    done = _saxpy(a, b, c, out)
    if done is not None:
        return done
    flat = _flat_operands(a, b, c, out)
    if flat is None:
        return _fma_slabs(a, b, c, out)
    for start in range(0, flat[3].shape[0], CHUNK):
        part = slice(start, start + CHUNK)
        _fma(*(x if x.ndim == 0 else x[part] for x in flat))
    return out


def deferred_ties(kernel, *args):
    """kernel(*args) with the deferred tie test described above; the same bits as running it
    with the repairing fma."""
    outer = getattr(_local, "sums", None)
    _local.sums = sums = []
    try:
        result = kernel(*args)
    finally:
        _local.sums = None
    try:
        return kernel(*args) if _any_false_tie(sums) else result
    finally:
        _local.sums = outer


def _unrepaired(a, b, c, out, sums):
    """fma's float64 sum rounded to float32 as it is, kept with its operands for the tie test
    (a large one is tested at once, and only a None kept where it has a false tie)."""
    total = np.multiply(a, b, dtype=np.float64)
    total = np.add(total, c, out=total if total.shape == np.shape(c) else None)
    if total.size <= CHUNK:
        sums.append((total, a, b, c))
    elif _false_ties(total, a, b, c):
        sums.append(None)
    if out is None:
        return total.astype(F32)
    np.copyto(out, total, casting="same_kind")
    return out


def _any_false_tie(sums):
    """Whether one of the kept sums was rounded onto a float32 midpoint; a first pass over all
    of them finds the midpoints (their low 29 bits are 1 followed by zeros)."""
    if not sums:
        return False
    if any(entry is None for entry in sums):
        return True
    totals = [entry[0] for entry in sums]
    at = np.flatnonzero(_midpoints(np.concatenate(totals, axis=None)))
    if not at.size:
        return False
    ends = list(itertools.accumulate(t.size for t in totals))
    entries = sorted({bisect.bisect_right(ends, i) for i in at.tolist()})
    return any(_false_ties(*sums[i]) for i in entries)


def _false_ties(total, a, b, c):
    """Whether a float64 sum a * b + c on a float32 midpoint got there by rounding (the exact
    sum lies off the midpoint: rounding it again to float32 could go the wrong way)."""
    where = np.nonzero(_midpoints(total))
    if not where[0].size:
        return False
    a_t, b_t, c_t = (_at(v, where, total.shape) for v in (a, b, c))
    return bool(np.count_nonzero(_sum_error(np.multiply(a_t, b_t, dtype=np.float64), c_t,
                                            total[where])))


def _at(v, where, shape):
    """v's elements at `where` of the broadcast shape (a number is itself)."""
    if v.__class__ is not np.ndarray or v.shape != shape:
        if np.ndim(v) == 0:
            return v
        v = np.broadcast_to(v, shape)
    return v[where]


def _midpoints(total, low=None, out=None):
    """Where a float64 sum lies exactly halfway between two float32s (its low 29 bits are 1
    followed by zeros): a tie, maybe a false one; `low` and `out` may be scratch (int64, bool)."""
    low = np.bitwise_and(total.view(np.int64), 0x1FFFFFFF, out=low)
    return np.equal(low, 0x10000000, out=out)


def horner(coefficients, x):
    """The polynomial with these coefficients (float32 values, highest degree first; numbers or
    arrays broadcasting to x's shape, float64 ones for speed) at a float32 array x, by a chain
    of fused multiply-adds, each rounded once to float32. Each step is one float64 product
    (exact) and sum, rounded; the elements where a sum landed exactly on a float32 midpoint
    (maybe a false tie, as in `fma`) have their chain redone by `fma`."""
    x64 = x.astype(np.float64)
    totals = np.empty((len(coefficients) - 1,) + x.shape)
    p = coefficients[0]
    for total, c in zip(totals, coefficients[1:]):
        np.multiply(p, x64, out=total)
        total += c
        p = total.astype(F32)
    ties = _midpoints(totals, low=totals.view(np.int64))  # the sums are not needed again
    if np.count_nonzero(ties):
        where = np.nonzero(ties.any(axis=0))
        redone = np.broadcast_to(coefficients[0], x.shape)[where].astype(F32)
        for c in coefficients[1:]:
            redone = fma(redone, x[where], np.broadcast_to(c, x.shape)[where].astype(F32))
        p[where] = redone
    return p


def _fma_slabs(a, b, c, out):
    """Broadcast operands of a large result, computed a slab of leading rows at a time (the
    float64 temporaries stay in the cache); an operand without the leading axis is used whole
    in every slab."""
    shape = _result_shape(a, b, c)
    size = math.prod(shape)
    if size <= CHUNK or len(shape) < 2 or shape[0] < 2:
        return _fma(a, b, c, out, shape)
    if out is None:
        out = np.empty(shape, F32)
    rows = max(1, CHUNK * shape[0] // size)
    operands = [(x, np.ndim(x) == len(shape) and np.shape(x)[0] == shape[0]) for x in (a, b, c)]
    for start in range(0, shape[0], rows):
        part = slice(start, start + rows)
        _fma(*(x[part] if leading else x for x, leading in operands), out[part], None)
    return out


def _flat_operands(a, b, c, out):
    """The operands as flat arrays (numbers as 0-dim) when a large `out` can be computed in
    chunks: every array operand C-contiguous and of out's shape."""
    if out is None or out.size <= CHUNK or not out.flags.c_contiguous:
        return None
    flat = []
    for x in (a, b, c, out):
        x = np.asarray(x)
        if x.ndim == 0:
            flat.append(x)
        elif x.shape == out.shape and x.flags.c_contiguous:
            flat.append(x.reshape(-1))
        else:
            return None
    return flat


def _result_shape(a, b, c):
    """The broadcast shape; without np.broadcast_shapes (~10 us) where the operands are
    arrays of one shape and numbers."""
    shapes = (np.shape(a), np.shape(b), np.shape(c))
    shape = ()
    for s in shapes:
        if s and s != shape:
            if shape:
                return np.broadcast_shapes(*shapes)
            shape = s
    return shape


def _fma(a, b, c, out, shape=None):
    if shape is None:
        shape = _result_shape(a, b, c)
    total = scratch(shape, np.float64)
    np.multiply(a, b, out=total, dtype=np.float64)  # exact: 24 + 24 bits
    np.add(total, c, out=total)
    # the float64 sum was rounded too; that second rounding only matters where it landed
    # exactly halfway between two float32s (a false tie), rare enough to repair case by case
    ties = _midpoints(total, scratch(shape, np.int64), scratch(shape, np.bool_))
    if np.count_nonzero(ties):  # much cheaper than ties.any() on small arrays
        where = np.nonzero(ties) if shape else ...  # numpy has no nonzero of a 0-dim array
        a_t, b_t, c_t = (np.broadcast_to(v, shape)[where] for v in (a, b, c))
        total[where] = _round_to_odd(np.multiply(a_t, b_t, dtype=np.float64), c_t, total[where])
    if out is None:
        return total.astype(F32)
    np.copyto(out, total, casting="same_kind")
    return out


def _sum_error(product, c, total):
    """(product + c) - total, exactly: Knuth's two-sum, for total the rounded sum."""
    back = total - product
    return (product - (total - back)) + (c - back)


def _round_to_odd(product, c, total):
    """total moved off its false tie towards the exact sum."""
    error = _sum_error(product, c, total)
    return np.where(error != 0, np.nextafter(total, np.copysign(np.inf, error)), total)


def _saxpy(a, b, c, out):
    """a * b + c through BLAS's saxpy when one factor is a float32 number, the other a
    C-contiguous float32 array of the result's shape, c float32 of that shape, and saxpy fuses;
    None otherwise (the caller emulates)."""
    if a.__class__ is F32:
        a, b = b, a
    # BLAS returns y untouched for a zero factor, where an FMA gives NaN from an infinite or
    # NaN x and +0 from -0 + +0
    if b.__class__ is not F32 or b == 0 or not _saxpy_operands(a, c, out):
        return None
    saxpy = _fused_saxpy()
    if saxpy is None:
        return None
    if out is None:
        out = np.array(c, F32, order="C")
    elif out is not c:
        np.copyto(out, c)
    saxpy(a.reshape(-1), out.reshape(-1), a=b)
    return out


def _saxpy_operands(x, c, out):
    if x.__class__ is not np.ndarray or x.dtype != F32 or not x.flags.c_contiguous \
            or not x.size:  # f2py refuses an empty array
        return False
    if getattr(c, "dtype", None) != F32 or c.shape != x.shape:
        return False
    if out is None:
        return True
    return (out.shape == x.shape and out.dtype == F32 and out.flags.c_contiguous
            and not np.may_share_memory(x, out))


@functools.cache
def _fused_saxpy():
    """scipy's saxpy when it rounds once per element on this machine (calibrated on first
    use), else None."""
    from scipy.linalg.blas import saxpy

    return saxpy if _saxpy_matches_emulation(saxpy) else None


def _saxpy_matches_emulation(saxpy):
    """saxpy against _fma on every length up to 80 (vector bodies and leftover elements) and
    a long run, on values where a product rounded before the addition often differs."""
    rng = np.random.default_rng(0)
    for n in list(range(1, 81)) + [4099]:
        x = rng.standard_normal(n).astype(F32)
        y = (rng.standard_normal(n) * 1e-3).astype(F32)
        for alpha in (F32(-0.01), F32(0.9), F32(3.7)):
            got = saxpy(x, y.copy(), a=alpha)
            want = _fma(x, alpha, y, None)
            if not np.array_equal(got.view(np.int32), want.view(np.int32)):
                return False
    return True



def fma_rows(a, b, y):
    """y[i] = a[i] * b[i] + y[i] in place for float32 C-contiguous a and y of one shape
    (R, ...) and b float32 (R,): one fma per row, so a saxpy where that fuses."""
    for i in range(a.shape[0]):
        fma(a[i], b[i], y[i], out=y[i])
    return y


def channel_major(a, out=None):
    """(C, N, L) C-contiguous copy of a C-contiguous (N, C, *S) array."""
    n, channels = a.shape[:2]
    if out is None:
        out = scratch((channels, n, a.size // max(1, n * channels)), a.dtype)
    np.copyto(out, a.reshape(n, channels, -1).transpose(1, 0, 2))
    return out


def fma_channels(a, b, c):
    """a * b + c, a C-contiguous float32 (N, C, *S), b float32 (C,) and c float32 either of
    a's shape or (C,) (one number per channel): a new C-contiguous array, each channel one
    fma_rows row of channel-major copies (strided per-plane saxpy calls cost more than the
    two transposes)."""
    out_t = np.empty((a.shape[1], a.shape[0], a.size // max(1, a.shape[0] * a.shape[1])), F32)
    if c.shape == a.shape:
        channel_major(c, out_t)
    else:
        out_t[...] = c[:, None, None]
    fma_rows(channel_major(a), b, out_t)
    return np.ascontiguousarray(out_t.transpose(1, 0, 2)).reshape(a.shape)


def one_minus_square64(t):
    """1 - t * t rounded once, for float64 t with |t| <= 1 (a tanh): Dekker's exact product
    t * t = p + e, Knuth's exact 1 - p = s + r; where r is 0 the one rounding of s - e is
    the answer, else r - e (exact as w + w_err) is rounded to odd before it is added to s,
    which then rounds as the exact sum would (w's ulp is far below s's there: Boldo and
    Melquiond's round-to-odd)."""
    t = np.asarray(t, np.float64)
    hi = t * 134217729.0  # Veltkamp's split: t = hi + lo, each half a product of t exact
    hi = hi - (hi - t)
    lo = t - hi
    p = t * t
    e = ((hi * hi - p) + 2 * hi * lo) + lo * lo
    s = 1 - p
    r = (1 - s) - p  # exact where s rounds (p < 1/2), else 0
    w = r - e
    w_err = (r - w) - e  # r - e = w + w_err exactly (|r| >= |e| or r = 0)
    bits = w.view(np.int64)
    inexact = (w_err != 0) & (bits & 1 == 0)
    away = np.sign(w_err) == np.sign(w)
    w_odd = np.where(inexact, (bits + np.where(away, 1, -1)).view(np.float64), w)
    return s + w_odd
