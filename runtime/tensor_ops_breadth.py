"""Tensor versions of the `ops` functions that issue 16's derivative rules use (re-exported by
`runtime.tensor_ops`): recorded eager ops, so double backward works through them."""

import numpy as np

from runtime.autograd_meta import any_requires_grad, record
from runtime.ops._family import node
from runtime.ops import indexing as _indexing
from runtime.ops import special as _special
from runtime.ops._core import wrap
from runtime.rules import numpy_breadth

digamma = _special.digamma
i0 = _special.i0
i1 = _special.special_i1
roll = _indexing.roll
tril = _indexing.tril
triu = _indexing.triu


def div_rounded(a, b, mode, dtype):
    """a / b rounded by `mode`; the division promotes to `dtype` as PyTorch's does."""
    from runtime.ops import div

    return div(a, b, rounding_mode=mode)


def polygamma(n, x):
    return _special.digamma(x) if n == 0 else _special.polygamma(n, x)


def scatter_add_dim(g, dim, indices, shape):
    zeros = wrap(np.zeros(shape, g._dtype.np), g._dtype)
    return _indexing.scatter_add(zeros, dim, wrap(indices, None), g)


def scatter_prod(like, dim, index, src):
    """The product of the sources scattered to each position of `like` (1 where none is),
    recorded: scatter_reduce's prod weights differentiated under create_graph."""
    ones = wrap(np.ones(like._data.shape, like._dtype.np), like._dtype)
    return _indexing.scatter_reduce(ones, dim, index, src, "prod")


def diagonal_at(x, offset, d1, d2):
    return _indexing.diagonal(x, offset, d1, d2)


def unfold(x, d, size, step):
    return _indexing.unfold(x, d, size, step)


_CDIST_BACKWARD = node("CdistBackwardBackward0", "cdist_backward")


def cdist_backward(g, x1, x2, p, result, which):
    data = numpy_breadth.cdist_backward(g._data, x1._data, x2._data, p, result._data, which)
    out = wrap(data.astype(g._dtype.np, copy=False), g._dtype)
    if any_requires_grad((g, x1, x2)):
        record(_CDIST_BACKWARD, (g, x1, x2), out, ())
    return out


_DIAG_SCATTER = node("DiagonalBackwardBackward0", "diag_scatter")
_UNFOLD_BACKWARD = node("UnfoldBackwardBackward0", "unfold_backward")


def _linear(cls, g, data, args):
    out = wrap(data, g._dtype)
    if any_requires_grad((g,)):
        record(cls, (g,), out, args)
    return out


def diag_scatter(g, shape, offset, d1, d2):
    data = numpy_breadth.diag_scatter(g._data, shape, offset, d1, d2)
    return _linear(_DIAG_SCATTER, g, data, (offset, d1, d2))


def unfold_backward(g, shape, d, size, step):
    data = numpy_breadth.unfold_backward(g._data, shape, d, size, step)
    return _linear(_UNFOLD_BACKWARD, g, data, (d, size, step))
