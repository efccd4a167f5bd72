"""numpy kernels that issue 16's derivative rules ask of the `ops` namespace (re-exported by
`runtime.rules.numpy_ops`); their Tensor twins are in `runtime.tensor_ops_breadth`."""

import numpy as np
import scipy.special as sp


def div_rounded(a, b, mode, dtype):
    """a / b rounded by `mode`, computed in `dtype` (PyTorch's promotion, not numpy's)."""
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    with np.errstate(all="ignore"):
        return np.floor_divide(a, b) if mode == "floor" else np.trunc(a / b)


def digamma(x):
    return sp.digamma(x)


def polygamma(n, x):
    return sp.polygamma(n, x)


def i0(x):
    return sp.i0(x)


def i1(x):
    return sp.i1(x)


def _along(indices, dim):
    key = list(np.indices(indices.shape, sparse=True))
    key[dim] = indices
    return tuple(key)


def scatter_add_dim(g, dim, indices, shape):
    out = np.zeros(shape, g.dtype)
    np.add.at(out, _along(indices, dim), g)
    return out


def roll(x, shifts, dims):
    return np.roll(x, shifts, dims)


def tril(x, k):
    return np.tril(x, k)


def triu(x, k):
    return np.triu(x, k)


def diagonal_view(a, offset, d1, d2):
    """np.diagonal as a view that can be written when `a` can (numpy's is read-only)."""
    shape = np.diagonal(a, offset, d1, d2).shape
    key = [slice(None)] * a.ndim
    key[d2 if offset >= 0 else d1] = slice(abs(offset), None)
    start = a[tuple(key)]
    rest = tuple(s for i, s in enumerate(a.strides) if i not in (d1, d2))
    strides = rest + (a.strides[d1] + a.strides[d2],)
    return np.lib.stride_tricks.as_strided(start, shape, strides,
                                           writeable=a.flags.writeable)


def diagonal_at(x, offset, d1, d2):
    """x's diagonal: a copy, except of an expanded x (a cotangent sum() broadcast), whose
    diagonal PyTorch's view keeps as a stride-0 view of the same memory."""
    d = np.diagonal(x, offset, d1, d2)
    return d if 0 in d.strides and d.size > 1 else d.copy()


def diag_scatter(g, shape, offset, d1, d2):
    out = np.zeros(shape, g.dtype)
    diagonal_view(out, offset, d1, d2)[...] = g
    return out


def unfold_view(a, d, size, step):
    """Windows of `size` elements every `step` along d, as a new last axis (a view); a 0-dim
    array is one window of its one element."""
    if a.ndim == 0:
        return np.lib.stride_tricks.as_strided(a, (size,), (0,), writeable=a.flags.writeable)
    count = (a.shape[d] - size) // step + 1
    shape = a.shape[:d] + (count,) + a.shape[d + 1:] + (size,)
    strides = a.strides[:d] + (a.strides[d] * step,) + a.strides[d + 1:] + (a.strides[d],)
    return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)


def unfold(x, d, size, step):
    return unfold_view(x, d, size, step).copy()


def unfold_backward(g, shape, d, size, step):
    """Add each window's cotangent back to the elements it covers (windows may overlap:
    one pass per position inside the window, whose targets are then distinct)."""
    if len(shape) == 0:
        return np.sum(g)
    out = np.zeros(shape, g.dtype)
    count = g.shape[d]
    moved_out = np.moveaxis(out, d, -1)
    moved_g = np.moveaxis(g, d, -2)
    for k in range(size):
        moved_out[..., k + step * np.arange(count)] += moved_g[..., k]
    return out


def _register_view_steps():
    """View steps that `replay_view` must know for diagonal() and unfold() views."""
    from runtime.rules import numpy_ops

    numpy_ops._VIEW_STEPS["diagonal_at"] = lambda a, arg: diagonal_view(a, *arg)
    numpy_ops._VIEW_STEPS["unfold"] = lambda a, arg: unfold_view(a, *arg)


_register_view_steps()


def _cdist_slope(diff, dist, p):
    """d dist / d diff for each row pair and column, 0 where the distance is 0."""
    d = dist[..., None]
    if p == 0:
        return np.zeros_like(diff)
    if p == 1:
        return np.sign(diff)
    if p == 2:
        return np.where(d == 0, 0.0, diff / d)
    if p == float("inf"):
        return np.sign(diff) * (np.abs(diff) == d)
    slope = diff * np.abs(diff) ** (p - 2) / d ** (p - 1)
    return np.where(d == 0, 0.0, slope)


def cdist_backward(g, x1, x2, p, result, which):
    """The gradient of cdist in x1 (which = 0) or x2 (which = 1), before any broadcast batch
    dims are summed away."""
    from runtime.ops.distance import pairwise_differences

    with np.errstate(all="ignore"):
        weighted = g[..., None] * _cdist_slope(pairwise_differences(x1, x2), result, p)
    return weighted.sum(-2) if which == 0 else -weighted.sum(-3)
