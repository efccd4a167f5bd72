"""Products composed from recorded operations, in the order PyTorch 2.13's composite ATen
implementations compose them: tensordot, inner, ger, kron, linalg.multi_dot, chain_matmul.

None of them has a backward node of its own: their graphs are the permutes, views, sums,
mm / dot / mul they are built from, so values, gradients and grad_fn chains equal PyTorch's.
(vdot has its own node, VdotBackward0, and lives with dot in `runtime.ops.linalg`.)
"""

import warnings

import numpy as np

from runtime.ops import reductions as R
from runtime.ops import shape as S
from runtime.ops._core import is_tensor
from runtime.ops.elementwise import mul
from runtime.ops.linalg import dot, mm, outer

# -- tensordot ----------------------------------------------------------------------------------


def tensordot(a, b, dims=2):
    """Contract `dims` of a with those of b: an int n (a's last n with b's first n), or a pair
    (dims of a, dims of b)."""
    if not isinstance(dims, (tuple, list, int)) and not is_tensor(dims):
        raise RuntimeError(f"tensordot(): dims must be an int or a pair of lists of dims, "
                           f"got {dims!r}")
    return _tensordot(a, b, *_dim_lists(a, b, dims))


def _dim_lists(a, b, dims):
    if is_tensor(dims):  # one count, or two rows of dims
        dims = _tensor_dims(dims)
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims  # ValueError for anything but a pair, as PyTorch's unpacking
        return _int_list(dims_a), _int_list(dims_b)
    if dims < 0:
        raise RuntimeError(f"tensordot(): dims must not be negative, got {dims}")
    if dims > min(a._data.ndim, b._data.ndim):
        raise RuntimeError(f"tensordot(): cannot contract {dims} dims of tensors with "
                           f"{a._data.ndim} and {b._data.ndim} dims")
    return list(range(-dims, 0)), list(range(dims))


def _tensor_dims(dims):
    if dims.numel() <= 1:
        return int(dims.item())
    if dims.shape[0] != 2:  # PyTorch asserts this (AssertionError, not RuntimeError)
        raise AssertionError(f"tensordot(): a tensor of dims needs 2 rows, got {dims.shape[0]}")
    return dims.tolist()


def _int_list(dims):
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"tensordot(): each side of dims must be a list of ints, got {dims!r}")
    return [int(d) for d in dims]


def _tensordot(a, b, dims_a, dims_b):
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"tensordot(): the two dim lists differ in length ({len(dims_a)} "
                           f"and {len(dims_b)})")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"tensordot() needs both operands to have the same dtype, got "
                           f"{a._dtype} and {b._dtype}")
    t1, t2, csize = _sum_broadcast_dims(a, b, dims_a, dims_b)
    free_a = _free_dims(a, dims_a)
    free_b = _free_dims(b, dims_b)
    p1, p2 = free_a + dims_a, dims_b + free_b
    rsizes = tuple(t1._data.shape[i] for i in free_a) + tuple(t2._data.shape[i] for i in free_b)
    size1, size2 = int(np.prod(rsizes[:len(free_a)])), int(np.prod(rsizes[len(free_a):]))
    if size1 != 1 or size2 != 1:
        t1 = S.reshape(S.permute(t1, p1), (size1, csize))
        t2 = S.reshape(S.permute(t2, p2), (csize, size2))
        return S.reshape(mm(t1, t2), rsizes)
    return S.reshape(_full_contraction(S.permute(t1, p1), S.permute(t2, p2)), rsizes)


def _sum_broadcast_dims(a, b, dims_a, dims_b):
    """A contracted dim of size 1 on one side is summed out of the other side first."""
    t1, t2, csize = a, b, 1
    for da, db in zip(dims_a, dims_b):
        s1, s2 = _size(a, da), _size(b, db)
        if s2 == 1:
            t1 = R.sum(t1, da, True, t1._dtype)
        elif s1 == 1:
            t2 = R.sum(t2, db, True, t2._dtype)
        elif s1 != s2:
            raise RuntimeError(f"tensordot(): contracted dims differ in size: {s1} (dim {da} "
                               f"of the first) and {s2} (dim {db} of the second)")
        else:
            csize *= s1
    return t1, t2, csize


def _size(x, d):
    nd = x._data.ndim
    if not -max(nd, 1) <= d < max(nd, 1):
        raise IndexError(f"dim {d} is out of range for a tensor with {nd} dims")
    return x._data.shape[d] if nd else 1


def _free_dims(x, dims):
    nd = x._data.ndim
    wrapped = [S._dim(d, nd) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"tensordot(): a dim is contracted twice in {list(dims)}")
    return [i for i in range(nd) if i not in wrapped]


def _full_contraction(t1, t2):
    """Everything contracted: one dot of flat views, or mul and sum where a view would copy."""
    if t1.is_contiguous() and t2.is_contiguous():
        return dot(S.flatten(t1), S.flatten(t2))
    return R.sum(mul(S.squeeze(t1), S.squeeze(t2)), dtype=t1._dtype)


# -- inner, ger, kron ---------------------------------------------------------------------------


def inner(a, b):
    """Contract the last dim of a with the last dim of b (a product where one is 0-d)."""
    if a._data.ndim == 0 or b._data.ndim == 0:
        return mul(a, b)
    if a._data.shape[-1] != b._data.shape[-1]:
        raise RuntimeError(f"inner(): the last dims differ, shapes {list(a._data.shape)} and "
                           f"{list(b._data.shape)}")
    return _tensordot(a, b, [-1], [-1])


def ger(a, b):
    """The older name of outer."""
    return outer(a, b)


def kron(a, b):
    """The Kronecker product: a's dims interleaved with b's (unit dims padding the shorter)
    by unsafe views, one broadcasting mul, and one unsafe view to the result's shape."""
    nd = max(a._data.ndim, b._data.ndim)
    sa = (1,) * (nd - a._data.ndim) + a._data.shape
    sb = (1,) * (nd - b._data.ndim) + b._data.shape
    a_view = _strict_unsafe_view(a, sum(((n, 1) for n in sa), ()))
    b_view = _strict_unsafe_view(b, sum(((1, n) for n in sb), ()))
    return _strict_unsafe_view(mul(a_view, b_view), tuple(x * y for x, y in zip(sa, sb)))


def _strict_unsafe_view(x, shape):
    """PyTorch's _unsafe_view, which (unlike reshape) refuses a layout that needs a copy."""
    try:
        S._viewed(x._data, shape)
    except ValueError:
        raise RuntimeError(f"kron(): a tensor of shape {list(x._data.shape)} cannot be viewed "
                           f"as {list(shape)} without a copy (its memory layout does not "
                           f"allow it); pass .contiguous() operands") from None
    return S.unsafe_view(x, shape)


# -- multi_dot, chain_matmul --------------------------------------------------------------------


def multi_dot(tensors):
    """The product of a chain of matrices, multiplied in the cheapest order; the first may be
    a row vector and the last a column vector (1-D), which the result then drops."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot() needs at least 2 tensors, got {n}")
    mats, out_shape = _as_matrices(tensors)
    _check_chain(tensors, mats)
    if n == 2:
        return S.view(mm(mats[0], mats[1]), out_shape)
    if n == 3:
        return S.view(_three(*mats), out_shape)
    split = _chain_order([m._data.shape for m in mats])
    return S.view(_multiply(mats, split, 0, n - 1), out_shape)


def _as_matrices(tensors):
    first, last = tensors[0], tensors[-1]
    mats = list(tensors)
    out_shape = []
    for end, x, unit_dim, keep in (("first", first, 0, 0), ("last", last, -1, 1)):
        if x._data.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {end} tensor must be 1-D or 2-D, got "
                               f"{x._data.ndim}-D")
        if x._data.ndim == 1:
            mats[unit_dim] = S.unsqueeze(x, unit_dim)
        else:
            out_shape.append(x._data.shape[keep])
    for i, x in enumerate(tensors[1:-1], 1):
        if x._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2-D, got {x._data.ndim}-D")
    return mats, tuple(out_shape)


def _check_chain(tensors, mats):
    for i in range(1, len(mats)):
        if mats[i]._dtype is not mats[0]._dtype:
            raise RuntimeError(f"multi_dot() needs tensors of one dtype, but tensor 0 is "
                               f"{mats[0]._dtype} and tensor {i} is {mats[i]._dtype}")
        if mats[i - 1]._data.shape[-1] != mats[i]._data.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} cannot be multiplied "
                               f"(shapes {list(tensors[i - 1]._data.shape)} and "
                               f"{list(tensors[i]._data.shape)})")


def _three(a, b, c):
    """(a @ b) @ c unless a @ (b @ c) takes fewer multiplications."""
    (p, q), (r, s) = a._data.shape, c._data.shape
    if p * r * (q + s) > q * s * (p + r):
        return mm(a, mm(b, c))
    return mm(mm(a, b), c)


def _chain_order(shapes):
    """split[i][j]: where the cheapest product of matrices i..j splits (the first of equally
    cheap splits, as PyTorch's dynamic program keeps)."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _multiply(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return mm(_multiply(mats, split, i, k), _multiply(mats, split, k + 1, j))


_warned_chain_matmul = []  # non-empty once chain_matmul has warned (PyTorch warns once)


def chain_matmul(*matrices):
    """The deprecated form of linalg.multi_dot, for 2-D tensors only."""
    if not _warned_chain_matmul:
        _warned_chain_matmul.append(True)
        warnings.warn("torch.chain_matmul is deprecated; use torch.linalg.multi_dot, which "
                      "takes a list of tensors", UserWarning, stacklevel=2)
    for i, m in enumerate(matrices):
        if m._data.ndim != 2:
            raise RuntimeError(f"chain_matmul() takes 2-D tensors, but tensor {i} is "
                               f"{m._data.ndim}-D")
    if not matrices:
        raise RuntimeError("chain_matmul() needs at least one matrix")
    if len(matrices) == 1:
        return S.clone(matrices[0], "C")
    return multi_dot(matrices)


FUNCTIONS = ["tensordot", "inner", "ger", "kron", "chain_matmul"]
METHODS = ["inner", "ger", "kron"]
COPY_OUT = {"tensordot", "inner"}  # out= copies the recorded result (so takes grad), as torch's
