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
"""

import functools
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
    low = np.bitwise_and(total.view(np.int64), 0x1FFFFFFF, out=scratch(shape, np.int64))
    ties = np.equal(low, 0x10000000, out=scratch(shape, np.bool_))
    if np.count_nonzero(ties):  # much cheaper than ties.any() on small arrays
        where = np.nonzero(ties) if shape else ...  # numpy has no nonzero of a 0-dim array
        a_t, b_t, c_t = (np.broadcast_to(v, shape)[where] for v in (a, b, c))
        total[where] = _round_to_odd(np.multiply(a_t, b_t, dtype=np.float64), c_t, total[where])
    if out is None:
        return total.astype(F32)
    np.copyto(out, total, casting="same_kind")
    return out


def _round_to_odd(product, c, total):
    """total moved off its false tie towards the exact sum (Knuth's two-sum gives the error)."""
    back = total - product
    error = (product - (total - back)) + (c - back)
    return np.where(error != 0, np.nextafter(total, np.copysign(np.inf, error)), total)


def _saxpy(a, b, c, out):
    """a * b + c through BLAS's saxpy when one factor is a float32 number, the other a
    C-contiguous float32 array of the result's shape, c float32 of that shape, and saxpy fuses;
    None otherwise (the caller emulates)."""
    if a.__class__ is F32:
        a, b = b, a
    if b.__class__ is not F32 or not b or not _saxpy_operands(a, c, out):
        return None  # BLAS returns at once for a zero factor: 0 * inf would not be nan
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
