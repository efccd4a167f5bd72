"""torch.vander, built as PyTorch builds it so the graph is torch's: a fresh matrix whose
first column is 1, x copied into the other columns (CopySlices over UnsqueezeBackward0),
their running product written back (CopySlices over CumprodBackward0 of a slice), and the
columns flipped (FlipBackward0) unless `increasing`.
"""

import numpy as np

from runtime import dtypes
from runtime.ops._core import wrap
from runtime.ops.indexing import flip
from runtime.ops.misc import cumprod
from runtime.ops.shape import unsqueeze


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-d x: columns x**(N-1) ... x**0 (or the reverse)."""
    if x.dim() != 1:
        raise RuntimeError("vander(): x must be a one-dimensional tensor")
    n = x.shape[0]
    N = n if N is None else N
    if N < 0:
        raise RuntimeError("vander(): N must be non-negative")
    dt = x._dtype if x._dtype.category == dtypes.FLOAT else dtypes.int64
    data = np.zeros((n, N), dt.np)
    data[:, :1] = 1
    result = wrap(data, dt)
    if N > 1:
        result[:, 1:] = unsqueeze(x, 1)
        result[:, 1:] = cumprod(result[:, 1:], 1)
    return result if increasing else flip(result, 1)


FUNCTIONS = ["vander"]
METHODS = []
