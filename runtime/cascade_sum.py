"""float32 sums added in the order PyTorch's CPU kernel adds them, so results agree to the bit.

PyTorch sums float32 in float32 with a *cascade*: rows of SIMD vectors go into four
accumulators (instruction-level parallelism), each accumulator is a ladder of four levels that
is flushed upwards every 2**k rows (k >= 4), and the vector lanes and leftover scalars are
added last, one by one. numpy adds pairwise in blocks of 8, which differs in the last bit about
half the time; training loops that print `loss.item()` then drift from PyTorch's digits.

Every function here reduces axis 0 of its argument and treats all other axes as independent
*lanes* (they are what PyTorch computes in separate SIMD lanes or separate loop iterations), so
one numpy expression does the work of many of PyTorch's scalar loops.

Covered: C-contiguous float32 tensors reduced over all dims, over trailing dims (a row sum),
over leading dims (a column sum), or over one run of middle dims; vectors are PyTorch's x86 ones, 8 float32
lanes (its sum kernel is not built for AVX-512, so AVX-512 CPUs use the AVX2 one). Full reductions of 32768 elements or more are split per thread as PyTorch does with
the thread count it would use. Other layouts return None (the caller uses numpy's sum).
"""

import math
import os

import numpy as np

GRAIN_SIZE = 32768  # PyTorch's internal grain size: smaller reductions run on one thread
_LEVELS = 4
_ILP = 4


def _threads():
    """The intra-op thread count PyTorch starts with: OMP_NUM_THREADS, else the cores."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


LANES = 8  # PyTorch registers its sum kernel for AVX2 at most, also on AVX-512 CPUs
THREADS = _threads()


def _ceil_log2(n):
    return 0 if n <= 1 else (n - 1).bit_length()


def _groups(x, step):
    """Sums of consecutive groups of `step` rows (each added row after row), and the sum of
    the rows left over."""
    full = x.shape[0] - x.shape[0] % step
    sums = np.add.reduce(x[:full].reshape((full // step, step) + x.shape[1:]), axis=1)
    rest = np.add.reduce(x[full:], axis=0) if full < x.shape[0] else None
    return sums, rest


def multi_row_sum(x):
    """Sum axis 0 through PyTorch's ladder of four accumulators: level 0 adds rows, and every
    `step` additions a level is added into the next one up and cleared. What is left on each
    level at the end is added last, lowest level first."""
    if x.shape[0] < 16:  # the smallest step: everything stays on level 0
        return _reduce(x, axis=0) if x.shape[0] else np.zeros(x.shape[1:], np.float32)
    step = 1 << max(4, _ceil_log2(x.shape[0]) // _LEVELS)
    leftovers = []
    level = x
    for _ in range(_LEVELS - 1):
        if level.shape[0] < step:  # nothing reaches the next level
            break
        level, rest = _groups(level, step)
        leftovers.append(rest)
    leftovers.append(_reduce(level, axis=0) if level.shape[0] else None)
    total = None
    for acc in leftovers:
        if acc is not None:
            total = acc if total is None else total + acc
    return np.zeros(x.shape[1:], np.float32) if total is None else total


_reduce = np.add.reduce


def row_sum(x):
    """Sum axis 0 with four interleaved partial sums (rows i*4+k go to partial k); the rows
    left over go into partial 0, then partials 1-3 are added to it in turn."""
    size = x.shape[0]
    body = size - size % _ILP
    if not body:
        return _sequential(x)
    partial = multi_row_sum(x[:body].reshape((body // _ILP, _ILP) + x.shape[1:]))
    if body == size:
        return _sequential(partial)
    return _sequential(np.concatenate((partial[:1], x[body:], partial[1:])))


def _sequential(x):
    """x[0] + x[1] + ... along axis 0, one addition at a time. numpy reduces axis 0 of a
    C-ordered array with several lanes row after row (the lanes are its inner loop), which is
    this order; accumulate, the same order for any layout, makes one inner loop per lane."""
    if not x.shape[0]:
        return np.zeros(x.shape[1:], x.dtype)
    if x.ndim > 1 and x[0].size > 1:
        return _reduce(np.ascontiguousarray(x), axis=0)
    return np.add.accumulate(x, axis=0)[-1]


def inner_sum(x):
    """Sum axis 0 where axis 0 is contiguous in memory (PyTorch's inner reduction)."""
    n = x.shape[0]
    if n < LANES:
        return row_sum(x)
    vectors = n // LANES
    body = x[:vectors * LANES].reshape((vectors, LANES) + x.shape[1:])
    lanes = row_sum(body)  # one partial sum per SIMD lane
    return _sequential(np.concatenate([x[vectors * LANES:], lanes]))


def outer_sum(x):
    """Sum axis 0 where the last axis is contiguous in memory (PyTorch's outer reduction):
    columns go in blocks of four vectors (the ladder), the rest, single vectors and then
    columns one by one, through four interleaved partials (row_sum: its lanes are independent,
    so both kinds go in one call)."""
    columns = x.shape[-1]
    split = columns - columns % (_ILP * LANES if columns >= LANES else _ILP)
    if split == columns:
        return multi_row_sum(x)
    if split == 0:
        return row_sum(x)
    return np.concatenate((multi_row_sum(x[..., :split]), row_sum(x[..., split:])), axis=-1)


def _full(flat):
    n = flat.shape[0]
    threads = min(THREADS, -(-n // GRAIN_SIZE))
    if threads <= 1:
        return inner_sum(flat)
    chunk = -(-n // threads)
    buffer = np.zeros(THREADS, np.float32)
    for t in range(threads):
        buffer[t] = inner_sum(flat[t * chunk:(t + 1) * chunk])
    return inner_sum(buffer)


def torch_sum(a, dims):
    """Sum float32 array `a` over `dims` (a sorted tuple, or None for all) in PyTorch's order;
    None when the layout is not one this module follows."""
    if a.dtype != np.float32 or not a.flags.c_contiguous or a.size == 0:
        return None
    shape = a.shape
    if len(shape) == 2 and shape[0] > 1 and shape[1] > 1 and dims is not None \
            and len(dims) == 1:  # a matrix's column sums (a bias's gradient) or row sums
        return outer_sum(a) if dims[0] == 0 else inner_sum(a.T)
    dims = tuple(range(a.ndim)) if dims is None else dims
    kept = [d for d in range(a.ndim) if d not in dims and shape[d] != 1]
    summed = [d for d in dims if shape[d] != 1]
    if not summed:
        return None
    out_shape = [shape[d] for d in range(a.ndim) if d not in dims]
    if not kept:
        total = np.float32(_full(a.reshape(-1)) + np.float32(0))
        return np.reshape(total, out_shape) if out_shape else total
    lo, hi = summed[0], summed[-1]
    if hi - lo + 1 != len(summed) or len(summed) != len([d for d in range(lo, hi + 1)
                                                         if shape[d] != 1]):
        return None
    before = math.prod(shape[:lo])
    n = math.prod(shape[lo:hi + 1])
    after = math.prod(shape[hi + 1:])
    x = a.reshape(before, n, after)
    if after == 1:
        out = inner_sum(x[:, :, 0].T)
    else:
        out = outer_sum(x.transpose(1, 0, 2))
    # PyTorch's accumulators start at +0, so a sum of -0s is +0
    return (out + np.float32(0)).reshape(out_shape)


def sum_like_torch(a, axis=None, keepdims=False):
    """np.sum(a, axis, keepdims=keepdims) with float32 arrays added in PyTorch's order."""
    if a.__class__ is np.ndarray and a.dtype == np.float32 and a.size > 1:
        if axis is None:
            dims = None
        elif axis.__class__ is int:
            dims = (axis % a.ndim,)
        else:
            dims = tuple(sorted(d % a.ndim for d in axis))
        out = torch_sum(a, dims)
        if out is not None:
            if isinstance(out, np.ndarray):
                out = np.ascontiguousarray(out)  # a fresh C-ordered result, as PyTorch's
            if keepdims:
                out = np.reshape(out, [1 if dims is None or d in dims else n
                                       for d, n in enumerate(a.shape)])
            return out
    return np.sum(a, axis=axis, keepdims=keepdims)


def mean_like_torch(a, axis=None, keepdims=False):
    """np.mean, as PyTorch's CPU mean computes it: the sum above divided by the count."""
    if a.__class__ is not np.ndarray or a.dtype != np.float32 or a.size <= 1:
        return np.mean(a, axis=axis, keepdims=keepdims)
    total = sum_like_torch(a, axis, keepdims)
    count = a.size // max(np.size(total), 1)
    return np.divide(total, np.float32(count), dtype=np.float32)


_NLL_LEVELS = 8


def _in_order(x):
    return np.add.accumulate(x)[-1] if x.size else x.dtype.type(0)


def nll_sum(values, counted=None):
    """Sum of a 1-d float32 array as nll_loss's CPU kernel adds its samples: a ladder of eight
    levels, a value added to level 0 at each sample b (skipped where `counted` is False), and
    after it, while b is a multiple of step, step**2, ..., each level added into the next one
    up and cleared (so sample 0 goes straight up); the levels' leftovers are added last,
    lowest first."""
    power = max(4, _ceil_log2(values.shape[0]) // _NLL_LEVELS)
    if values.dtype == np.float32 and values.ndim == 1 and values.flags.c_contiguous:
        from runtime import simd_compiled  # the loop below, compiled (where llvmlite is)

        total = simd_compiled.nll_sum(values, counted, power)
        if total is not None:
            return total
    if counted is not None and not counted.all():
        return _nll_sum_loop(values, counted, power)
    step, seq, leftovers = 1 << power, values, []
    for _ in range(_NLL_LEVELS - 1):
        if seq.shape[0] <= 1:  # the levels above only pass it up (their leftovers are +0)
            break
        flushes = (seq.shape[0] - 1) // step + 1 if seq.shape[0] else 0
        full = (flushes - 1) * step if flushes else 0
        groups = seq[1:full + 1].reshape(-1, step)
        sums = np.add.accumulate(groups, axis=1)[:, -1] if groups.size else groups[:, 0]
        leftovers.append(_in_order(seq[full + 1:]))
        seq = np.concatenate([seq[:1], sums]) if flushes else seq[:0]
    leftovers.append(_in_order(seq))
    return _add_up(leftovers, values.dtype.type)


def _nll_sum_loop(values, counted, power):
    mask = (1 << power) - 1
    zero = values.dtype.type(0)
    levels = [zero] * _NLL_LEVELS
    for b in np.nonzero(counted)[0].tolist():
        levels[0] = levels[0] + values[b]
        for j in range(_NLL_LEVELS - 1):
            if b & (mask << (j * power)):
                break
            levels[j + 1] = levels[j + 1] + levels[j]
            levels[j] = zero
    return _add_up(levels, values.dtype.type)


def _add_up(parts, scalar):
    total = scalar(0)
    for part in parts:
        total = scalar(total + part)
    return total
