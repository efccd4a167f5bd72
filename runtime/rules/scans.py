"""Derivative rules of issue 16's reductions and scans (nansum, var_mean/std_mean, logcumsumexp,
cummax/cummin). Value-selecting ops (sort, topk, kthvalue, median) reuse `amax_dim` and
`amax_all` from `runtime.rules.reductions`: the cotangent goes back to the selected elements.
"""

from runtime.rules import rule
from runtime.rules.reductions import _unreduce, _var_backward
from runtime.rules import reductions


@rule("nansum")
def nansum(ops, g, needs, x, dims, keepdim):
    """Multiplied by the not-nan mask (x == x), as PyTorch: an inf cotangent gives nan at nan
    inputs (nanmean of an all-nan row divides by a zero count)."""
    g = _unreduce(ops, g, ops.shape(x), dims, keepdim)
    return (ops.mul(g, ops.cast_like(ops.eq(x, x), g)),)


def _moment_cotangents(gs):
    """The two cotangents of a two-output node (None for an output without one)."""
    return gs if isinstance(gs, (list, tuple)) else [gs, None]


@rule("var_mean", "std_mean")
def moment_mean(ops, gs, needs, x, std, dims, correction, keepdim, count):
    """(var or std, mean) from one node: the two outputs' rules, added."""
    g_moment, g_mean = _moment_cotangents(gs)
    shape = ops.shape(x)
    total = None
    if g_moment is not None:
        g = _unreduce(ops, g_moment, shape, dims, keepdim)
        if std is not None:  # std = sqrt(var): var's rule on g / (2 std), 0 where std is 0
            std = _unreduce(ops, std, shape, dims, keepdim)
            g = ops.where(ops.eq(std, 0), 0.0, ops.div(g, ops.mul(std, 2)))
        total = _var_backward(ops, g, x, dims, correction)
    if g_mean is not None:
        part = ops.div(_unreduce(ops, g_mean, shape, dims, keepdim), count)
        total = part if total is None else ops.add(total, part)
    return (total,)


@rule("aminmax")
def aminmax(ops, gs, needs, x, low, high, dims, keepdim):
    """(amin, amax) from one node: amax's rule for each output that has a cotangent, added."""
    total = None
    for g, result in zip(_moment_cotangents(gs), (low, high)):
        if g is not None:
            (part,) = reductions.amax(ops, g, needs, x, result, dims, keepdim)
            total = part if total is None else ops.add(total, part)
    return (total,)


@rule("evenly_distribute", "amax_all")
def evenly_distribute(ops, g, needs, x, result):
    """median(), max() and min() of everything (PyTorch's evenly_distribute_backward): the
    elements equal to the result share the cotangent evenly;
    when the result is nan, the nan elements are the ones that equal it."""
    hit = ops.logical_or(ops.eq(x, result), ops.logical_and(ops.isnan(x), ops.isnan(result)))
    share = ops.div(g, ops.sum(ops.cast_like(hit, g)))
    return (ops.where(hit, share, 0.0),)


@rule("logcumsumexp")
def logcumsumexp(ops, g, needs, x, result, dim):
    """d out_j / d x_i = exp(x_i - out_j) for j >= i: a reversed cumulative sum of
    g_j exp(-out_j), times exp(x_i). Real cotangents go as PyTorch's, in log space (nothing
    overflows where out is large): the positive and the negative part of g each through a
    reversed logcumsumexp of log|g| - out, a zero entry being the dtype's lowest value; so
    the derivative in g at a zero g is nan, as PyTorch's."""
    if ops.ndim(x) == 0:
        return (g,)
    if ops.is_complex(g):
        weighted = ops.mul(g, ops.exp(ops.neg(result)))
        tail = ops.flip(ops.cumsum(ops.flip(weighted, dim), dim), dim)
        return (ops.mul(tail, ops.exp(x)),)
    log_abs, lowest = ops.log(ops.abs(g)), ops.lowest(g)
    positive = _log_space_tail(ops, ops.where(ops.gt(g, 0), log_abs, lowest), x, result, dim)
    negative = _log_space_tail(ops, ops.where(ops.lt(g, 0), log_abs, lowest), x, result, dim)
    return (ops.sub(positive, negative),)


def _log_space_tail(ops, log_g, x, result, dim):
    """exp(x_i + log sum_{j >= i} exp(log_g_j - out_j))."""
    shifted = ops.flip(ops.sub(log_g, result), dim)
    return ops.exp(ops.add(ops.flip(ops.logcumsumexp(shifted, dim), dim), x))


@rule("cummax")
def cummax(ops, g, needs, indices, dim, shape):
    """Each output takes the value of the running extreme: its cotangent is added there."""
    if len(shape) == 0:
        return (g,)
    return (ops.scatter_add_dim(g, dim, indices, shape),)
