"""Forward kernels of issue 16's reductions and scans: amax/amin, nansum, var_mean/std_mean,
logcumsumexp, cummax/cummin, median, kthvalue, sort/argsort/topk, count_nonzero,
isclose/allclose, diff.

Value-selecting ops return PyTorch's named (values, indices) pairs; only `values` is
differentiable, through one node whose rule scatters the cotangent back to the selected
positions. Orderings are numpy's stable sorts, with nan sorting as the largest value.
"""

import builtins

import numpy as np

from runtime import dtypes, return_types
from runtime.cascade_sum import sum_like_torch
from runtime.autograd_meta import any_requires_grad, record, record_multi
from runtime.function import save_input, save_output
from runtime.ops._family import node, record_freed
from runtime.ops import introsort
from runtime.ops import shape as S
from runtime.ops._core import check_operand, is_tensor, wrap, wrap_reduced
from runtime.ops.reductions import _axes, _rule_dims, normalize_dims



SortResult = return_types.sort
TopkResult = return_types.topk
KthvalueResult = return_types.kthvalue
MedianResult = return_types.median
NanmedianResult = return_types.nanmedian
ModeResult = return_types.mode
CummaxResult = return_types.cummax
CumminResult = return_types.cummin

AmaxBackward0 = node("AmaxBackward0", "amax")
AminBackward0 = node("AminBackward0", "amin")
NansumBackward0 = node("NansumBackward0", "nansum")
LogcumsumexpBackward0 = node("LogcumsumexpBackward0", "logcumsumexp")
CummaxBackward0 = node("CummaxBackward0", "cummax")
CumminBackward0 = node("CumminBackward0", "cummax")
MedianBackward0 = node("MedianBackward0", "evenly_distribute")
MedianBackward1 = node("MedianBackward1", "amax_dim")
KthvalueBackward0 = node("KthvalueBackward0", "amax_dim")
NanmedianBackward0 = node("NanmedianBackward0", "evenly_distribute")
NanmedianBackward1 = node("NanmedianBackward1", "amax_dim")
ModeBackward0 = node("ModeBackward0", "amax_dim")
VarMeanBackward0 = node("VarMeanBackward0", "var_mean", multi_output=True)
StdMeanBackward0 = node("StdMeanBackward0", "std_mean", multi_output=True)
SortBackward0 = node("SortBackward0", "amax_dim")
SortBackward1 = node("SortBackward1", "amax_dim")  # sort(stable=...)
TopkBackward0 = node("TopkBackward0", "amax_dim")


def _dim1(dim, ndim):
    return normalize_dims(dim, ndim)[0]


def _check_nonempty(name, x, dims):
    shape = x._data.shape
    if dims is None and x._data.size == 0:
        raise RuntimeError(f"{name}(): an empty tensor has no {name}; pass dim= to reduce "
                           f"over non-empty dimensions")
    for d in dims or ():
        if shape and shape[d] == 0:
            raise IndexError(f"{name}(): dimension {d} has size 0, so it has no {name}")


# -- amax / amin / nansum ----------------------------------------------------------------------

def _amax(x, dim, keepdim, is_max):
    name = "amax" if is_max else "amin"
    dims = normalize_dims(dim, x._data.ndim)
    _check_nonempty(name, x, dims)
    kernel = np.max if is_max else np.min
    axes = _axes(dims, x._data.ndim)
    data = _first_zero_sign(x._data, axes, keepdim, kernel(x._data, axis=axes, keepdims=keepdim))
    out = wrap_reduced(data, x._dtype)
    if any_requires_grad((x,)):
        cls = AmaxBackward0 if is_max else AminBackward0
        record(cls, (x,), out, (save_input(x), save_output(out, cls.__name__),
                                _rule_dims(dims, x), keepdim))
    return out


def _first_zero_sign(d, axes, keepdim, extreme):
    """Where the extreme is a zero, PyTorch's amax/amin keep the first zero they meet (its
    sign); numpy's may keep a later one."""
    if d.dtype.kind != "f" or d.ndim == 0 or not np.any(np.equal(extreme, 0)):
        return extreme
    if axes is None:
        axes = tuple(range(d.ndim))
    axes = tuple(a % d.ndim for a in (axes if isinstance(axes, tuple) else (axes,)))
    moved = np.moveaxis(d, axes, range(d.ndim - len(axes), d.ndim))
    flat = moved.reshape(moved.shape[:d.ndim - len(axes)] + (-1,))
    first = np.take_along_axis(flat, np.argmax(flat == 0, axis=-1)[..., None], -1)[..., 0]
    if keepdim:
        first = np.expand_dims(first, axes)
    return np.where(np.equal(extreme, 0), first, extreme)


def amax(x, dim=(), keepdim=False):
    return _amax(x, dim, keepdim, True)


def amin(x, dim=(), keepdim=False):
    return _amax(x, dim, keepdim, False)


AminmaxBackward0 = node("AminmaxBackward0", "aminmax", multi_output=True)


def aminmax(x, *, dim=None, keepdim=False):
    """(amin, amax) over `dim` (everything when None), one node for both."""
    from runtime.grad_mode import no_grad

    reduced = () if dim is None else dim
    with no_grad():
        low, high = _amax(x, reduced, keepdim, False), _amax(x, reduced, keepdim, True)
    if any_requires_grad((x,)):
        dims = normalize_dims(reduced, x._data.ndim)
        name = AminmaxBackward0.__name__
        record_multi(AminmaxBackward0, (x,), (low, high),
                     (save_input(x), save_output(low, name), save_output(high, name),
                      _rule_dims(dims, x), keepdim))
    return return_types.aminmax(low, high)


def nansum(x, dim=None, keepdim=False, dtype=None):
    dims = normalize_dims(dim, x._data.ndim)
    dt = dtype or (x._dtype if x._dtype.category == dtypes.FLOAT else dtypes.int64)
    if dt.is_complex or x._dtype.is_complex:
        raise RuntimeError("nansum(): complex tensors are not supported (PyTorch's CPU "
                           "kernel has none)")
    data = x._data.astype(dt.np, copy=False)
    if data.dtype.kind in "fc":
        # nan counts as 0 in PyTorch's summation, which goes in sum()'s order (float32's is
        # not numpy's)
        data = np.where(np.isnan(data), data.dtype.type(0), data)
    data = sum_like_torch(data, _axes(dims, x._data.ndim), keepdim)
    out = wrap_reduced(np.asarray(data, dt.np), dt)
    if any_requires_grad((x,)):
        record(NansumBackward0, (x,), out, (save_input(x), _rule_dims(dims, x), keepdim))
    return out


def nanmean(x, dim=None, keepdim=False, dtype=None):
    """PyTorch's composition: nansum over the count of non-nan elements (an int64 tensor that
    does not require grad), so the graph is DivBackward0 over NansumBackward0."""
    from runtime.grad_mode import no_grad
    from runtime.ops.elementwise import div, isnan, logical_not
    from runtime.ops.reductions import sum as sum_

    for dt in (x._dtype, dtype or x._dtype):
        if not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError(f"nanmean(): needs a floating point input and dtype=, got "
                               f"{dt}")
    with no_grad():
        count = sum_(logical_not(isnan(x)), dim, keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):  # an all-nan slice: 0 / 0, quietly
        return div(nansum(x, dim, keepdim, dtype), count)


# -- var_mean / std_mean -----------------------------------------------------------------------

def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moment_mean(x, dim, unbiased, keepdim, correction, False)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moment_mean(x, dim, unbiased, keepdim, correction, True)


def _moment_mean(x, dim, unbiased, keepdim, correction, is_std):
    from runtime.ops.reductions import _moment, mean

    from runtime.grad_mode import no_grad

    if isinstance(dim, bool):
        unbiased, dim = dim, None
    with no_grad():
        moment = _moment(x, dim, unbiased, keepdim, correction, is_std)
        average = mean(x, dim, keepdim)
    if correction is None:
        correction = 0 if unbiased is False else 1
    if any_requires_grad((x,)):
        dims = normalize_dims(dim, x._data.ndim)
        count = x._data.size // builtins.max(average._data.size, 1) if x._data.size else 0
        cls = StdMeanBackward0 if is_std else VarMeanBackward0
        std = save_output(moment, cls.__name__) if is_std else None
        record_multi(cls, (x,), (moment, average),
                     (save_input(x), std, _rule_dims(dims, x), correction, keepdim, count))
    return moment, average


# -- scans -------------------------------------------------------------------------------------

def logcumsumexp(x, dim):
    d = _dim1(dim, x._data.ndim)
    data = x._data
    if data.ndim and data.shape[d]:
        with np.errstate(all="ignore"):
            data = np.logaddexp.accumulate(data, axis=d)
    out = wrap(np.array(data, copy=True, order="C"), x._dtype)
    if any_requires_grad((x,)):
        record(LogcumsumexpBackward0, (x,), out,
               (save_input(x), save_output(out, "LogcumsumexpBackward0"), d))
    return out


def _running_extreme(data, d, is_max):
    """Running max/min along axis d and the index it came from (the latest among ties;
    a nan takes over and stays, as PyTorch's cummax does)."""
    moved = np.moveaxis(data, d, -1)
    values = np.empty_like(moved)
    indices = np.zeros(moved.shape, np.int64)
    better = np.greater_equal if is_max else np.less_equal
    best = moved[..., 0] if moved.shape[-1] else None
    where = np.zeros(moved.shape[:-1], np.int64)
    for i in range(moved.shape[-1]):
        cur = moved[..., i]
        take = np.isnan(cur) | (~np.isnan(best) & better(cur, best)) if moved.dtype.kind == "f" \
            else better(cur, best)
        best = np.where(take, cur, best)
        where = np.where(take, i, where)
        values[..., i] = best
        indices[..., i] = where
    return np.moveaxis(values, -1, d), np.moveaxis(indices, -1, d)


def _cum_extreme(x, dim, is_max):
    d = _dim1(dim, x._data.ndim)
    data = x._data if x._data.ndim else x._data.reshape(1)
    values, indices = _running_extreme(data, d, is_max)
    shape = x._data.shape
    out = wrap(values.reshape(shape), x._dtype)
    idx = wrap(indices.reshape(shape), dtypes.int64)
    if any_requires_grad((x,)):
        cls = CummaxBackward0 if is_max else CumminBackward0
        record_freed(cls, (x,), out, (indices.reshape(shape), d, shape))
    return (CummaxResult if is_max else CumminResult)(out, idx)


def cummax(x, dim):
    return _cum_extreme(x, dim, True)


def cummin(x, dim):
    return _cum_extreme(x, dim, False)


# -- selections: sort, topk, kthvalue, median ---------------------------------------------------

def _order(data, d, descending):
    """Stable argsort along d; descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(data, axis=d, kind="stable")
    n = data.shape[d]
    flipped = np.argsort(np.flip(data, d), axis=d, kind="stable")
    return np.flip(n - 1 - flipped, d)


def _select(cls, result_type, x, idx, d, keepdim_shape=None):
    """values = x[idx] along d (idx keeps the dimension); a node that scatters back."""
    src = x._data if x._data.ndim else x._data.reshape(1)
    vals = np.take_along_axis(src, idx, d)
    shape = keepdim_shape if keepdim_shape is not None else idx.shape
    if x._data.ndim == 0:
        shape = ()
    values = wrap(vals.reshape(shape), x._dtype)
    indices = wrap(idx.reshape(shape).astype(np.int64), dtypes.int64)
    if any_requires_grad((x,)):
        record_freed(cls, (x,), values, (idx, idx.shape, src.shape, d, x._data.shape))
    return result_type(values, indices)


def sort(x, dim=-1, descending=False, *, stable=None):
    """Stable when asked; otherwise tied elements come out in the order PyTorch's unstable
    CPU sort leaves them (runtime.ops.introsort). Passing stable= selects PyTorch's other
    overload (SortBackward1)."""
    d = _dim1(dim, x._data.ndim)
    src = x._data if x._data.ndim else x._data.reshape(1)
    cls = SortBackward0 if stable is None else SortBackward1
    idx = _order(src, d, descending)
    if not stable and not _sorted_stably(src, d):
        _unstable_ties(src, idx, d, descending)
    return _select(cls, SortResult, x, idx, d)


_RADIX_FROM = 32768  # PyTorch sorts 1-D integer tensors this long with a stable radix sort


def _sorted_stably(src, d):
    """Where PyTorch's sort keeps equal elements in index order: a dimension of stride 0
    (all elements equal, left as they are) and long 1-D integer tensors."""
    return src.strides[d] == 0 or (src.ndim == 1 and src.size >= _RADIX_FROM
                                   and src.dtype.kind in "iu")


def _unstable_ties(src, idx, d, descending):
    """Rows with equal values: the permutation of PyTorch's unstable sort (in place)."""
    rows = np.moveaxis(src, d, -1)
    out = np.moveaxis(idx, d, -1)
    less = introsort.descending if descending else introsort.ascending
    for at in np.ndindex(rows.shape[:-1]):
        if introsort.has_ties(rows[at]):
            out[at] = introsort.order(rows[at].tolist(), less)


def argsort(x, dim=-1, descending=False, *, stable=False):
    return sort(x, dim, descending).indices


def msort(x):
    return sort(x, 0).values


def topk(x, k, dim=-1, largest=True, sorted=True):
    d = _dim1(dim, x._data.ndim)
    src = x._data if x._data.ndim else x._data.reshape(1)
    if not 0 <= k <= src.shape[d]:
        raise RuntimeError(f"topk(): k = {k} is out of range for a dimension of size "
                           f"{src.shape[d]}")
    idx = np.take(_order(src, d, largest), np.arange(k), axis=d)
    _topk_kernel_order(src, idx, d, k, largest, sorted)
    return _select(TopkBackward0, TopkResult, x, idx, d)


def _topk_kernel_order(src, idx, d, k, largest, sort):
    """Rows with ties (or results left unsorted): the order PyTorch's CPU kernel gives."""
    rows = np.moveaxis(src, d, -1)
    out = np.moveaxis(idx, d, -1)
    for at in np.ndindex(rows.shape[:-1]):
        if (not sort and k > 1) or introsort.has_ties(rows[at]):
            out[at] = introsort.topk(rows[at].tolist(), k, largest, sort)


def _pick(cls, result_type, x, position, d, keepdim, nan_wins=False):
    """The element at sorted `position` along d (kthvalue, median; for median a slice
    holding a nan gives its first nan)."""
    src = x._data if x._data.ndim else x._data.reshape(1)
    idx = np.take(_order(src, d, False), [position], axis=d)
    if nan_wins and src.dtype.kind == "f":
        nans = np.isnan(src)
        first_nan = np.argmax(nans, axis=d, keepdims=True)
        idx = np.where(np.any(nans, axis=d, keepdims=True), first_nan, idx)
    kept = idx.shape if keepdim else idx.shape[:d] + idx.shape[d + 1:]
    return _select(cls, result_type, x, idx, d, kept)


def kthvalue(x, k, dim=-1, keepdim=False):
    """Which of tied elements is picked follows PyTorch's CPU quickselect (`_quickselect`),
    so indices equal PyTorch's on ties too."""
    d = _dim1(dim, x._data.ndim)
    _check_nonempty("kthvalue", x, (d,))
    size = x._data.shape[d] if x._data.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): k = {k} is out of range for a dimension of size {size}")
    src = x._data if x._data.ndim else x._data.reshape(1)
    idx = np.take(_order(src, d, False), [k - 1], axis=d)
    _quickselect_ties(src, idx, k - 1, d)
    kept = idx.shape if keepdim else idx.shape[:d] + idx.shape[d + 1:]
    return _select(KthvalueBackward0, KthvalueResult, x, idx, d, kept)


def _quickselect_ties(src, idx, k, d):
    """Rows whose k-th value is tied: the index PyTorch's quickselect lands on (in place)."""
    rows = np.moveaxis(src, d, -1)
    picked = np.moveaxis(idx, d, -1)
    value = np.take_along_axis(rows, picked, -1)
    same = (rows == value) | (np.isnan(rows) & np.isnan(value))
    ties = same.sum(-1) > 1
    for at in np.ndindex(ties.shape):
        if ties[at]:
            picked[at] = _quickselect(rows[at].tolist(), k)


def _after(a, b):
    """PyTorch's order for selections: nan after everything, else greater."""
    return (a != a and b == b) or a > b


def _quickselect(arr, k):
    """PyTorch's CPU quick_select_template (median-of-three pivot, Hoare partition) on one
    row, carrying the original indices: the index that lands at position k."""
    idx = list(range(len(arr)))

    def swap(i, j):
        arr[i], arr[j] = arr[j], arr[i]
        idx[i], idx[j] = idx[j], idx[i]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if _after(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        for a, b in ((lo + 1, hi), (lo, hi), (lo + 1, lo)):
            if _after(arr[a], arr[b]):
                swap(a, b)
        i, j = _partition(arr, swap, lo, hi)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


def _partition(arr, swap, lo, hi):
    i, j, pivot = lo + 1, hi, arr[lo]
    while True:
        i += 1
        while _after(pivot, arr[i]):
            i += 1
        j -= 1
        while _after(arr[j], pivot):
            j -= 1
        if j < i:
            break
        swap(i, j)
    swap(lo, j)
    return i, j


def median(x, dim=None, keepdim=False):
    """The lower of the two middle values; without dim a 0-dim tensor whose gradient is
    shared among the elements equal to it."""
    if x._dtype is dtypes.bool_ and x._data.size:  # PyTorch answers for an empty one
        raise NotImplementedError("median() is not implemented for bool tensors")
    if dim is None:
        ordered = np.sort(x._data.reshape(-1), kind="stable")
        if ordered.size == 0:
            with np.errstate(invalid="ignore"):  # PyTorch's nan, cast as C casts it
                value = np.array(np.nan).astype(x._dtype.np)
        else:
            value = ordered[-1] if np.isnan(ordered[-1]) else ordered[(ordered.size - 1) // 2]
        return _median_of_all(x, value, MedianBackward0, "Median")
    d = _dim1(dim, x._data.ndim)
    _check_nonempty("median", x, (d,))
    size = x._data.shape[d] if x._data.ndim else 1
    return _pick(MedianBackward1, MedianResult, x, (size - 1) // 2, d, keepdim, nan_wins=True)


def _median_of_all(x, value, cls, name):
    """A 0-dim result whose gradient is shared among the elements equal to it."""
    out = wrap(np.asarray(value, x._dtype.np), x._dtype)
    if any_requires_grad((x,)):
        record(cls, (x,), out, (save_input(x), save_output(out, name)))
    return out


def nanmedian(x, dim=None, keepdim=False):
    """median ignoring nans (nan only where every element is nan); with dim, the index of
    the lower middle among the non-nan values in index order."""
    if dim is None:
        data = x._data.reshape(-1)
        kept = np.sort(data[~np.isnan(data)], kind="stable") if data.dtype.kind == "f" else \
            np.sort(data, kind="stable")
        value = kept[(kept.size - 1) // 2] if kept.size else np.nan
        return _median_of_all(x, value, NanmedianBackward0, "Nanmedian")
    d = _dim1(dim, x._data.ndim)
    _check_nonempty("nanmedian", x, (d,))
    src = x._data if x._data.ndim else x._data.reshape(1)
    order = _order(src, d, False)  # nans last, equal values in index order
    size = src.shape[d]
    count = size - np.sum(np.isnan(src), axis=d, keepdims=True) if src.dtype.kind == "f" \
        else np.full(np.take(src, [0], axis=d).shape, size)
    idx = np.take_along_axis(order, np.maximum(count - 1, 0) // 2, d)
    _all_nan_rows(src, idx, count, d)
    kept = idx.shape if keepdim else idx.shape[:d] + idx.shape[d + 1:]
    return _select(NanmedianBackward1, NanmedianResult, x, idx, d, kept)


def _all_nan_rows(src, idx, count, d):
    """PyTorch's kernel selects the first position among elements that never compare
    less than one another: the index its nth_element leaves there (in place)."""
    picked = np.moveaxis(idx, d, -1)
    empty = np.moveaxis(count, d, -1)[..., 0] == 0
    n = src.shape[d]
    for at in np.ndindex(empty.shape):
        if empty[at]:
            picked[at] = introsort.nth([0.0] * n, 0, introsort.never)


def mode(x, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest among equally frequent ones) and the
    index PyTorch's CPU kernel reports: the last of its run after an unstable sort."""
    d = _dim1(dim, x._data.ndim)
    src = x._data if x._data.ndim else x._data.reshape(1)
    _check_nonempty("mode", x, (d,))
    rows = np.moveaxis(src, d, -1)
    picked = np.zeros(rows.shape[:-1] + (1,), np.int64)
    for at in np.ndindex(rows.shape[:-1]):
        picked[at] = _mode_index(rows[at])
    idx = np.moveaxis(picked, -1, d)
    kept = idx.shape if keepdim else idx.shape[:d] + idx.shape[d + 1:]
    return _select(ModeBackward0, ModeResult, x, idx, d, kept)


def _mode_index(row):
    values = row.tolist()
    # a nan compares equal to everything under the kernel's `<`: emulate those rows too
    emulate = introsort.has_ties(row) or (row.dtype.kind == "f" and np.isnan(row).any())
    perm = introsort.order(values, introsort.plain_less) if emulate else \
        np.argsort(row, kind="stable").tolist()
    best, best_count, count = 0, 0, 0
    for k, i in enumerate(perm):
        count += 1
        if k == len(perm) - 1 or values[i] != values[perm[k + 1]]:
            if count > best_count:
                best, best_count = i, count
            count = 0
    return best


# -- counts and comparisons ---------------------------------------------------------------------

def count_nonzero(x, dim=None):
    dims = normalize_dims(dim, x._data.ndim)
    data = np.count_nonzero(x._data, axis=_axes(dims, x._data.ndim))
    return wrap_reduced(np.asarray(data, np.int64), dtypes.int64)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    b = check_operand(b, "isclose")
    if is_tensor(b) and b._dtype is not a._dtype:
        raise RuntimeError(f"isclose(): both tensors must have one dtype, got {a._dtype} and "
                           f"{b._dtype}")
    bd = b._data if is_tensor(b) else b
    try:
        data = np.isclose(a._data, bd, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except ValueError:
        raise RuntimeError(f"isclose(): shapes {list(a._data.shape)} and "
                           f"{list(np.shape(bd))} cannot be broadcast together") from None
    return wrap(np.asarray(data), dtypes.bool_)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.all(isclose(a, b, rtol, atol, equal_nan)._data))


def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim, built from slices and subtractions (so its
    graph is PyTorch's: SubBackward0 over two SliceBackward0)."""
    from runtime.ops.elementwise import logical_xor, sub

    if x._data.ndim == 0:
        raise RuntimeError("diff() needs a tensor with at least one dimension")
    if n < 0:
        raise RuntimeError(f"diff(): the order n must not be negative, got {n}")
    d = _dim1(dim, x._data.ndim)
    parts = [t for t in (prepend, x, append) if t is not None]
    if len(parts) > 1:
        x = S.cat(parts, d)
    step = logical_xor if x._dtype is dtypes.bool_ else sub
    for _ in range(n):
        size = x._data.shape[d]
        if size == 0:
            break
        x = step(S.narrow(x, d, 1, size - 1), S.narrow(x, d, 0, size - 1))
    return x


FUNCTIONS = ["amax", "amin", "aminmax", "nansum", "nanmean", "var_mean", "std_mean", "logcumsumexp", "cummax",
             "cummin", "median", "nanmedian", "mode", "kthvalue", "sort", "argsort", "msort",
             "topk", "count_nonzero", "isclose", "allclose", "diff"]
