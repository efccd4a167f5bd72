"""cov and corrcoef, built from recorded ops in PyTorch's order, so their graphs are torch's
(SumBackward1, DivBackward0 by a 0-d count, SubBackward0, MmBackward0 with TBackward0,
SqueezeBackward0; corrcoef adds DiagonalBackward0, SqrtBackward0, two DivBackward0 and
ClampBackward1) and no derivative rule is new. Complex inputs are not handled.
"""

import warnings

import numpy as np

from runtime import dtypes
from runtime.ops import div, mul, sqrt, sub, sum as sum_
from runtime.autograd_meta import any_requires_grad, record
from runtime.ops._core import wrap
from runtime.ops._family import node
from runtime.ops.elementwise import clamp
from runtime.ops.indexing import diagonal
from runtime.ops.linalg import mm
from runtime.ops.shape import squeeze, t, unsqueeze, view


def _check_weights(name, w, n, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input, but got {w.numel()} != {n}")
    if integral and w._dtype.category == dtypes.FLOAT:
        raise RuntimeError("cov(): expected fweights to have integral dtype")
    if not integral and w._dtype.category != dtypes.FLOAT:
        raise RuntimeError("cov(): expected aweights to have floating point dtype")
    if (w._data < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _weights(fweights, aweights, n):
    """The observation weights (fweights times aweights), or None when neither is given."""
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
    if fweights is None:
        return aweights
    return fweights if aweights is None else mul(fweights, aweights)


_MUL_BY_NUMBER = node("MulBackward1", "mul_scalar")


def _times_number(x, c):
    """ATen's `tensor * double`: one edge (MulBackward1), unlike mul with a Python number."""
    from runtime.grad_mode import no_grad

    with no_grad():
        out = mul(x, c)
    if any_requires_grad((x,)):
        record(_MUL_BY_NUMBER, (x,), out, (c,))
    return out


def _norm_factor(w, w_sum, aweights, correction):
    if w is None or correction == 0:
        return sub(w_sum, correction) if correction else w_sum
    if aweights is None:
        return sub(w_sum, correction)
    return sub(w_sum, div(_times_number(sum_(mul(w, aweights)), correction), w_sum))


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows of `input` (variables) over its columns (observations)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else view(input, 1, -1)
    n = x.shape[1]
    w = _weights(fweights, aweights, n)
    if w is None:
        w_sum = wrap(np.asarray(n, np.int64), dtypes.int64)
        avg = div(sum_(x, 1), w_sum)
    else:
        w_sum = sum_(w)
        avg = div(sum_(mul(x, w), 1), w_sum)
    norm_factor = _norm_factor(w, w_sum, aweights, correction)
    if norm_factor._data <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = clamp(norm_factor, 0)
    xm = sub(x, unsqueeze(avg, 1))
    xw = xm if w is None else mul(xm, w)
    return squeeze(div(mm(xm, t(xw)), norm_factor))


def corrcoef(input):
    """The Pearson correlation coefficients of the rows of `input`, clamped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return div(c, c)
    stddev = sqrt(diagonal(c))
    c = div(c, view(stddev, -1, 1))
    c = div(c, view(stddev, 1, -1))
    return clamp(c, -1, 1)


FUNCTIONS = ["cov", "corrcoef"]
METHODS = ["cov", "corrcoef"]
