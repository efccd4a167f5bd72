"""The numpy-style stacking and splitting family: atleast_1d/2d/3d, hstack, vstack, row_stack,
dstack, column_stack, hsplit, vsplit, dsplit; and rot90, one node (Rot90Backward0) as in torch.

Each is a composition of recorded views and `cat` / `tensor_split`, in the order PyTorch
composes them, so the backward graphs match torch's node for node (ViewBackward0 from a
reshape, UnsqueezeBackward0, CatBackward0, SliceBackward0) and no derivative rule is new.
"""

import numpy as np

from runtime.autograd_meta import any_requires_grad, record
from runtime.ops._core import get_default_dtype, wrap
from runtime.ops._family import node
from runtime.ops.indexing import tensor_split
from runtime.ops.reductions import normalize_dims
from runtime.ops.shape import cat, reshape, unsqueeze


def _atleast(name, promote):
    def op(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        out = tuple(promote(t) for t in tensors)
        return out[0] if len(out) == 1 else out

    op.__name__ = name
    op.__doc__ = f"{name}: each tensor with at least {name[-2]} dimensions."
    return op


def _promote_1d(t):
    return reshape(t, (1,)) if t.dim() == 0 else t


def _promote_2d(t):
    return {0: lambda: reshape(t, (1, 1)), 1: lambda: unsqueeze(t, 0)}.get(t.dim(), lambda: t)()


def _promote_3d(t):
    ways = {0: lambda: reshape(t, (1, 1, 1)), 1: lambda: unsqueeze(unsqueeze(t, 0), -1),
            2: lambda: unsqueeze(t, -1)}
    return ways.get(t.dim(), lambda: t)()


atleast_1d = _atleast("atleast_1d", _promote_1d)
atleast_2d = _atleast("atleast_2d", _promote_2d)
atleast_3d = _atleast("atleast_3d", _promote_3d)


def _nonempty(name, tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name}() needs at least one tensor to stack")
    return tensors


def hstack(tensors):
    """Concatenate along the columns: dim 0 for 1-d tensors, dim 1 otherwise."""
    parts = [_promote_1d(t) for t in _nonempty("hstack", tensors)]
    return cat(parts, 0 if parts[0].dim() == 1 else 1)


def vstack(tensors):
    return cat([_promote_2d(t) for t in _nonempty("vstack", tensors)], 0)


def dstack(tensors):
    return cat([_promote_3d(t) for t in _nonempty("dstack", tensors)], 2)


def _as_column(t):
    return reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t


def column_stack(tensors):
    """Stack 0-d and 1-d tensors as columns (other tensors as they are) along dim 1."""
    return cat([_as_column(t) for t in _nonempty("column_stack", tensors)], 1)


row_stack = vstack


def _split(name, dim, least):
    def op(x, indices_or_sections):
        if x.dim() < least:
            raise RuntimeError(f"{name}() splits tensors of {least} or more dimensions; this "
                               f"one has {x.dim()}")
        axis = 0 if name == "hsplit" and x.dim() == 1 else dim
        size = x.shape[axis]
        if isinstance(indices_or_sections, int) and (
                indices_or_sections == 0 or size % indices_or_sections):
            raise RuntimeError(f"{name}(): dimension {axis} has size {size}, which "
                               f"{indices_or_sections} sections cannot divide evenly")
        return tensor_split(x, indices_or_sections, axis)

    op.__name__ = name
    op.__doc__ = f"{name}: tensor_split along dim {dim}, into equal parts when given a count."
    return op


hsplit = _split("hsplit", 1, 1)
vsplit = _split("vsplit", 0, 2)
dsplit = _split("dsplit", 2, 3)

Rot90Backward0 = node("Rot90Backward0", "rot90")


def rot90(x, k=1, dims=(0, 1)):
    """x turned k quarter turns in the plane of dims, from the first towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"rot90() takes two dims, got {len(dims)}")
    if x.dim() < 2:
        raise RuntimeError(f"rot90() needs a tensor of 2 or more dimensions, got {x.dim()}")
    dims = tuple(normalize_dims(list(dims), x.dim()))
    if dims[0] == dims[1]:
        raise RuntimeError(f"rot90() needs two different dims, got {dims[0]} twice")
    out = wrap(np.ascontiguousarray(np.rot90(x._data, k, dims)), x._dtype)
    if any_requires_grad((x,)):
        record(Rot90Backward0, (x,), out, (k, dims))
    return out


BlockDiagBackward0 = node("BlockDiagBackward0", "block_diag")


def block_diag(*tensors):
    """The tensors (0-d as 1x1, 1-d as one row) placed along the diagonal of a zero matrix, in
    their promoted dtype; one node, BlockDiagBackward0, as in torch."""
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"block_diag(): input tensors must have 2 or fewer dimensions; "
                               f"input {i} has {t.dim()}")
    from runtime.ops._core import result_dtype

    dt = result_dtype(*tensors) if tensors else get_default_dtype()
    blocks = [np.reshape(t._data, (1, -1)) if t.dim() < 2 else t._data for t in tensors]
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    data = np.zeros((rows if blocks else 1, cols), dt.np)
    r = c = 0
    for b in blocks:
        data[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    out = wrap(data, dt)
    if any_requires_grad(tensors):
        record(BlockDiagBackward0, tensors, out, ([tuple(t.shape) for t in tensors],))
    return out


FUNCTIONS = ["block_diag", "rot90", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack",
             "row_stack", "dstack", "column_stack", "hsplit", "vsplit", "dsplit"]
METHODS = ["rot90", "hsplit", "vsplit", "dsplit"]
