"""Derivative rules of reductions: the cotangent is broadcast back over the reduced axes."""

from runtime.rules import rule


def _unreduce(ops, g, shape, dims, keepdim):
    """Broadcast a reduced cotangent back to the input `shape`."""
    if dims is not None and not keepdim:
        g = ops.reshape(g, _kept_shape(shape, dims))
    return ops.expand(g, shape)


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


@rule("sum")
def sum_(ops, g, needs, shape, dims, keepdim):
    return (_unreduce(ops, g, shape, dims, keepdim),)


@rule("mean")
def mean(ops, g, needs, shape, dims, keepdim, count):
    return (ops.div(_unreduce(ops, g, shape, dims, keepdim), count),)


@rule("prod")
def prod(ops, g, needs, x, result, dims, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    return (ops.mul(g, ops.prod_others(x, result, dims)),)


@rule("amax_all")
def amax_all(ops, g, needs, x, result):
    """max()/min() over everything: ties share the cotangent evenly."""
    hit = ops.eq(x, result)
    share = ops.div(g, ops.sum(ops.cast_like(hit, g)))
    return (ops.where(hit, share, 0.0),)


@rule("amax_dim")
def amax_dim(ops, g, needs, indices, shape, dim, in_shape):
    """max(dim)/min(dim): the cotangent goes to the selected element of each slice.

    `indices` keep the reduced axis (size 1); `shape` is the input's shape with at least one
    dimension, `in_shape` its true shape."""
    g = ops.reshape(g, ops.shape(indices))
    return (ops.reshape(ops.scatter_dim(g, dim, indices, shape), in_shape),)


@rule("norm")
def norm(ops, g, needs, x, result, p, dims, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    if p == 2:
        scaled = ops.div(x, result)
    else:
        scaled = ops.div(ops.mul(x, ops.pow(ops.abs(x), p - 2)), ops.pow(result, p - 1))
    return (ops.mul(g, ops.where(ops.eq(result, 0), 0.0, scaled)),)


@rule("var")
def var(ops, g, needs, x, dims, correction, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    centered = ops.sub(x, ops.mean(x, dims, True))
    dof = _count(shape, dims) - correction
    return (ops.mul(g, ops.mul(centered, 2.0 / dof)),)


@rule("std")
def std(ops, g, needs, x, result, dims, correction, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    centered = ops.sub(x, ops.mean(x, dims, True))
    dof = _count(shape, dims) - correction
    return (ops.mul(g, ops.div(centered, ops.mul(result, dof))),)


def _count(shape, dims):
    n = 1
    for i, size in enumerate(shape):
        if dims is None or i in dims:
            n *= size
    return n


@rule("softmax")
def softmax(ops, g, needs, result, dim):
    inner = ops.sum_dim(ops.mul(g, result), dim, True)
    return (ops.mul(result, ops.sub(g, inner)),)


@rule("log_softmax")
def log_softmax(ops, g, needs, result, dim):
    return (ops.sub(g, ops.mul(ops.exp(result), ops.sum_dim(g, dim, True))),)


@rule("cumsum")
def cumsum(ops, g, needs, dim):
    return (ops.flip(ops.cumsum(ops.flip(g, dim), dim), dim),)


@rule("logsumexp")
def logsumexp(ops, g, needs, x, result, dims, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    return (ops.mul(g, ops.exp(ops.sub(x, result))),)
