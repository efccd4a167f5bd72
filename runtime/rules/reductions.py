"""Derivative rules of reductions: the cotangent is broadcast back over the reduced axes."""

from runtime.rules import rule
from runtime.rules.elementwise import signum


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
    if not shape:  # the product of one 0-dim value is the value itself
        return (g,)
    g = _unreduce(ops, g, shape, dims, keepdim)
    if _known_count(shape, dims) == 1 and ops.any_zero(x):
        return (g,)  # PyTorch's zero-safe form hands a slice of one element its cotangent
    result = _unreduce(ops, result, shape, dims, keepdim)
    return (ops.mul(g, ops.prod_others(x, result, dims)),)


@rule("amax_dim")
def amax_dim(ops, g, needs, indices, kept_shape, shape, dim, in_shape):
    """max(dim)/min(dim): the cotangent goes to the selected element of each slice.

    `indices` keep the reduced axis (size 1, shape `kept_shape`); `shape` is the input's shape
    with at least one dimension, `in_shape` its true shape."""
    g = ops.reshape(g, kept_shape)
    return (ops.reshape(ops.scatter_dim(g, dim, indices, shape), in_shape),)


@rule("norm")
def norm(ops, g, needs, x, result, p, dims, keepdim):
    """PyTorch's norm_backward, case by case in p (p=0 has no gradient)."""
    if p == 0:
        return (None,)
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    if p == 1:
        return (ops.mul(signum(ops, x), g),)
    if p == 2:
        return (ops.mul(g, ops.where(ops.eq(result, 0), 0.0, ops.div(x, result))),)
    if p in (float("inf"), float("-inf")):
        # ties share the cotangent evenly; a nan element takes part as PyTorch's mask does
        magnitude = ops.abs(x)
        hit = ops.logical_or(ops.eq(magnitude, result), ops.isnan(magnitude))
        count = ops.sum_dim(ops.cast_like(hit, g), dims, True)
        return (ops.mul(signum(ops, x), ops.mul(ops.div(g, count), ops.cast_like(hit, g))),)
    if p < 1:
        powered = ops.where(ops.eq(x, 0), 0.0, ops.pow(ops.abs(x), p - 1))
        return (ops.mul(ops.mul(ops.mul(signum(ops, x), powered), g), ops.pow(result, 1 - p)),)
    scale = ops.where(ops.eq(result, 0), 0.0, ops.div(g, ops.pow(result, p - 1)))
    if p < 2:
        return (ops.mul(ops.mul(signum(ops, x), ops.pow(ops.abs(x), p - 1)), scale),)
    return (ops.mul(ops.mul(x, ops.pow(ops.abs(x), p - 2)), scale),)


@rule("var")
def var(ops, g, needs, x, dims, correction, keepdim):
    g = _unreduce(ops, g, ops.shape(x), dims, keepdim)
    return (_var_backward(ops, g, x, dims, correction),)


@rule("std")
def std(ops, g, needs, x, result, dims, correction, keepdim):
    """std = sqrt(var): var's rule applied to g / (2 std), which is 0 where std is 0."""
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    g = ops.where(ops.eq(result, 0), 0.0, ops.div(g, ops.mul(result, 2)))
    return (_var_backward(ops, g, x, dims, correction),)


def _var_backward(ops, g, x, dims, correction):
    """(2 / (n - correction) * g) * (x - mean), in PyTorch's var_backward's order (which a
    double backward's rounding and graph show: fuzz seed 3906262147190); with no degrees of
    freedom left (n <= correction) a full reduction gives nan where x equals the mean and
    inf elsewhere, a reduction over dims 2 / 0 = inf."""
    centered = ops.sub(x, ops.mean(x, dims, True))
    dof = _count(ops.shape(x), dims) - correction
    if dof > 0:
        return ops.mul(ops.mul(g, 2.0 / dof), centered)
    if dims is None:
        flat = ops.eq(centered, 0)
        return ops.where(flat, ops.mul(g, float("nan")), ops.mul(g, float("inf")))
    return ops.mul(g, ops.mul(centered, float("inf") if dof == 0 else 2.0 / dof))


def _count(shape, dims):
    n = 1
    for i, size in enumerate(shape):
        if dims is None or i in dims:
            n *= size
    return n


def _known_count(shape, dims):
    """_count where the sizes are numbers (eager); None where they are known only when the
    program runs (the compiler's shapes are IR values: its rules take the general form)."""
    return _count(shape, dims) if all(isinstance(n, int) for n in shape) else None


@rule("softmax")
def softmax(ops, g, needs, result, dim):
    exact = ops.softmax_grad(g, result, dim)  # PyTorch's bits on numpy, where known
    if exact is not None:
        return (exact,)
    inner = ops.sum_dim(ops.mul(g, result), dim, True)
    return (ops.mul(result, ops.sub(g, inner)),)


@rule("log_softmax")
def log_softmax(ops, g, needs, result, dim):
    exact = ops.log_softmax_grad(g, result, dim)  # PyTorch's bits on numpy, where known
    if exact is not None:
        return (exact,)
    return (ops.sub(g, ops.mul(ops.exp(result), ops.sum_dim(g, dim, True))),)


@rule("cumsum")
def cumsum(ops, g, needs, dim):
    shape = ops.shape(g)
    if not shape or shape[dim] == 1 or _known_count(shape, None) in (0, 1):  # g handed back
        return (g,)
    return (ops.flip(ops.cumsum(ops.flip(g, dim), dim), dim),)


@rule("cumprod")
def cumprod(ops, g, needs, x, result, dim):
    """PyTorch's three forms. Without zeros: reversed cumsum of (result * g), divided by x.
    With zeros, on arrays, its O(n) masked form (`ops.cumprod_zeros_grad`); recorded
    (create_graph) its O(n^2) form: grad_k = sum_j>=k g_j * prod(x[:k]) * prod(x[k+1:j+1]),
    each a differentiable op, so their infs and nans are PyTorch's too."""
    shape = ops.shape(x)
    if len(shape) == 0 or shape[dim] == 1 or 0 in shape:  # the identity: g itself
        return (g,)
    if not ops.any_zero(x):
        weighted = ops.flip(ops.cumsum(ops.flip(ops.mul(result, g), dim), dim), dim)
        return (ops.div(weighted, x),)
    exact = ops.cumprod_zeros_grad(g, x, result, dim)
    if exact is not None:
        return (exact,)
    n = shape[dim]
    grads = [ops.add(ops.select(g, dim, 0), _weighted_tail(ops, g, x, dim, 0, None))]
    for k in range(1, n):
        until = ops.prod_dim(ops.narrow(x, dim, 0, k), dim, True)
        tail = _weighted_tail(ops, g, x, dim, k, until)
        here = ops.sum_dim(ops.mul(ops.narrow(g, dim, k, 1), until), dim, False)
        grads.append(here if tail is None else ops.add(here, tail))
    return (ops.stack(grads, dim),)


def _weighted_tail(ops, g, x, dim, k, until):
    """sum_j>k g_j * until * prod(x[k+1:j+1]) along `dim` (None past the last element;
    `until` None stands for ones)."""
    n = ops.shape(x)[dim]
    if k == n - 1:
        return None
    products = ops.cumprod(ops.narrow(x, dim, k + 1, n - k - 1), dim)
    if until is not None:
        products = ops.mul(until, products)
    return ops.sum_dim(ops.mul(ops.narrow(g, dim, k + 1, n - k - 1), products), dim, False)


@rule("logsumexp")
def logsumexp(ops, g, needs, x, result, dims, keepdim):
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    return (ops.mul(g, ops.exp(ops.sub(x, result))),)


@rule("amax", "amin")
def amax(ops, g, needs, x, result, dims, keepdim):
    """max/min over `dims` (None: all): ties share the cotangent evenly, as PyTorch's amax."""
    shape = ops.shape(x)
    g = _unreduce(ops, g, shape, dims, keepdim)
    result = _unreduce(ops, result, shape, dims, keepdim)
    hit = ops.cast_like(ops.eq(x, result), g)
    count = ops.sum(hit) if dims is None else ops.sum_dim(hit, dims, True)
    return (ops.mul(ops.div(g, count), hit),)


@rule("dist")
def dist(ops, g, needs, diff, result, p, a_shape, b_shape):
    """dist(a, b) = norm(a - b): the norm's gradient for a, its negation for b, each summed
    back to its operand's shape."""
    (g_diff,) = norm(ops, g, (True,), diff, result, p, None, False)
    if g_diff is None:
        return (None,) * len(needs)
    ga = ops.sum_to(g_diff, a_shape) if needs[0] else None
    gb = ops.sum_to(ops.neg(g_diff), b_shape) if needs[1] else None
    return ga, gb
