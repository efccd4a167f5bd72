"""torch.linalg's norms, composed as PyTorch 2.13 composes them: vector_norm is one
LinalgVectorNormBackward0 node; matrix norms reduce singular values ('nuc', 2, -2) or column /
row 1-norms (1, -1, inf, -inf) with sum / amax / amin after moving the two matrix dimensions
to the end, so their graphs have PyTorch's nodes (PermuteBackward0, LinalgSvdBackward0 output 1,
AmaxBackward0, ...)."""

import math

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import Node, save_input, save_output
from runtime.ops._core import wrap
from runtime.rules import RULES

_INF = math.inf


def _extreme_class(name):
    return type(name, (Node,), {"__slots__": (), "_rule": staticmethod(RULES["reduce_extreme"])})


# Made here rather than through node_class: another family may register amax/amin under the
# same PyTorch names with rules of a different signature.
AmaxBackward0 = _extreme_class("AmaxBackward0")
AminBackward0 = _extreme_class("AminBackward0")


def extreme(x, dim, keepdim, largest):
    """amax (largest) / amin of `x` along one dimension."""
    fn = np.max if largest else np.min
    out = wrap(fn(x._data, axis=dim, keepdims=keepdim), x._dtype)
    if any_requires_grad((x,)):
        cls = AmaxBackward0 if largest else AminBackward0
        record(cls, (x,), out, (save_input(x), save_output(out, cls.__name__),
                                dim % x._data.ndim, keepdim))
    return out


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    from runtime import ops as F

    if isinstance(ord, str):
        raise TypeError(f"linalg.vector_norm(): ord must be a number, not {ord!r}")
    if x._dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"linalg.vector_norm: expected a floating point tensor, got "
                           f"{x._dtype}")
    if abs(ord) == _INF and _reduces_empty(x, dim):
        raise RuntimeError("linalg.vector_norm: the inf norm of an empty tensor is undefined "
                           "(max and min have no identity)")
    if dtype is None or dtype is x._dtype:
        return F.norm(x, ord, dim, keepdim)
    return _norm_in_dtype(x, ord, dim, keepdim, dtype)


def _norm_in_dtype(x, ord, dim, keepdim, dtype):
    """The norm computed in `dtype`, recorded as one node on `x` itself (PyTorch converts
    inside the kernel: no ToCopyBackward0); the gradient is cast back to x's dtype."""
    from runtime import ops as F
    from runtime.grad_mode import no_grad
    from runtime.ops.reductions import NormBackward, _rule_dims, normalize_dims

    with no_grad():
        out = F.norm(F.to_dtype(x, dtype), ord, dim, keepdim)
    if any_requires_grad((x,)):
        dims = normalize_dims(dim, x._data.ndim)
        record(NormBackward, (x,), out, (save_input(x), save_output(out, NormBackward.__name__),
                                         ord, _rule_dims(dims, x), keepdim))
    return out


def _reduces_empty(x, dim):
    shape = x._data.shape
    if dim is None:
        return x._data.size == 0
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return x._data.size == 0 and any(shape[d] == 0 for d in dims) if dims else x._data.size == 0


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    nd = a._data.ndim
    if nd < 2:
        raise RuntimeError(f"linalg.matrix_norm: the input must have at least 2 dimensions, "
                           f"got {nd}")
    dims = list(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a pair of dimensions, got {dim}")
    dims = [d % nd for d in dims]
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: the two dimensions must differ, got {dim}")
    if ord == "fro":
        return vector_norm(a, 2, tuple(dim), keepdim, dtype=dtype)
    if ord == "nuc" or (not isinstance(ord, str) and abs(ord) == 2):
        return _spectral(a, ord, dims, keepdim, dtype)
    if isinstance(ord, str) or abs(ord) not in (1, _INF):
        raise RuntimeError(f"linalg.matrix_norm: order {ord} is not supported")
    return _induced(a, ord, dims, keepdim, dtype)


def _spectral(a, ord, dims, keepdim, dtype):
    """'nuc', 2, -2: reductions of the singular values, dims moved to the end first."""
    from runtime import ops as F
    from runtime.ops.decompositions import svdvals

    nd = a._data.ndim
    if dtype is not None and dtype is not a._dtype:
        a = F.to_dtype(a, dtype)
    perm = [d for d in range(nd) if d not in dims] + dims
    s = svdvals(F.permute(a, *perm))
    if ord == "nuc":
        out = F.sum(s, -1, keepdim)
    else:
        out = extreme(s, -1, keepdim, ord > 0)
    if keepdim:
        out = F.permute(F.unsqueeze(out, -1), *np.argsort(perm).tolist())
    return out


def _induced(a, ord, dims, keepdim, dtype):
    """1, -1 (column sums), inf, -inf (row sums): an extreme of vector 1-norms."""
    first, second = dims if abs(ord) == 1 else dims[::-1]
    if not keepdim and first < second:
        second -= 1
    sums = vector_norm(a, 1, first, keepdim, dtype=dtype)
    return extreme(sums, second, keepdim, ord > 0)


def norm(a, ord=None, dim=None, keepdim=False, *, dtype=None):
    nd = a._data.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: dim must have 1 or 2 entries, got {dim}")
    if dim is None and (ord is not None or isinstance(ord, str)) and nd not in (1, 2):
        raise RuntimeError(f"linalg.norm: with ord given and no dim the input must be 1-D or "
                           f"2-D, got {nd}-D")
    if isinstance(ord, str):
        return matrix_norm(a, ord, dim or (0, 1), keepdim, dtype=dtype)
    if ord is not None and ((dim is not None and len(dim) == 2) or (dim is None and nd == 2)):
        return matrix_norm(a, ord, dim or (0, 1), keepdim, dtype=dtype)
    return vector_norm(a, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
