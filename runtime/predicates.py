"""Small torch.* functions with no derivative: the predicates is_nonzero and is_same_size, the
index factories tril_indices / triu_indices, and torch.clamp_ (Tensor.clamp_ as a function).
"""

import numpy as np

from runtime import dtypes
from runtime.ops._core import wrap


def is_nonzero(input):
    """The truth of a one-element tensor; several elements (or none) have no single truth."""
    if input.numel() != 1:
        raise RuntimeError(f"is_nonzero() needs a tensor of exactly one element, this one has "
                           f"{input.numel()}")
    return bool(input._data.reshape(()) != 0)


def is_same_size(input, other):
    return input.shape == other.shape


def _triangle_indices(pick, row, col, offset, dtype):
    dt = dtypes.int64 if dtype is None else dtype
    if row < 0 or col < 0:
        raise RuntimeError(f"the index factories need row >= 0 and col >= 0, got {row}, {col}")
    rows, cols = pick(row, offset, col)
    return wrap(np.stack([rows, cols]).reshape(2, -1).astype(dt.np), dt)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (row, column) indices of the lower triangle of a row x col matrix, row by row."""
    return _triangle_indices(np.tril_indices, row, col, offset, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (row, column) indices of the upper triangle of a row x col matrix, row by row."""
    return _triangle_indices(np.triu_indices, row, col, offset, dtype)


def clamp_(input, min=None, max=None):
    return input.clamp_(min, max)


FUNCTIONS = {"is_nonzero": is_nonzero, "is_same_size": is_same_size,
             "tril_indices": tril_indices, "triu_indices": triu_indices, "clamp_": clamp_}
METHODS = ["is_nonzero", "is_same_size"]
