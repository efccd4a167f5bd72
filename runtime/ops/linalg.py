"""Forward kernels of products: dot, mm, mv, bmm, matmul, outer, addmm."""

import numpy as np

from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.ops._core import data_of, result_dtype, wrap

DotBackward0 = node_class("DotBackward0", "dot")
MmBackward0 = node_class("MmBackward0", "mm")
MvBackward0 = node_class("MvBackward0", "mv")
BmmBackward0 = node_class("BmmBackward0", "bmm")
AddmmBackward0 = node_class("AddmmBackward0", "addmm")


def _check(a, b, name, ndims):
    if a._data.ndim != ndims[0] or b._data.ndim != ndims[1]:
        raise RuntimeError(f"{name}() expects {ndims[0]}-D and {ndims[1]}-D tensors, got "
                           f"{a._data.ndim}-D and {b._data.ndim}-D")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{name}() needs both operands to have the same dtype, got "
                           f"{a._dtype} and {b._dtype}")


def _product(cls, np_fn, a, b):
    try:
        data = np_fn(a._data, b._data)
    except ValueError:
        raise RuntimeError(f"{cls.__name__[:-9].lower()}(): shapes {list(a._data.shape)} and "
                           f"{list(b._data.shape)} cannot be multiplied") from None
    out = wrap(data, a._dtype)
    if any_requires_grad((a, b)):
        ra, rb = a.requires_grad, b.requires_grad
        args = (save_input(a) if rb else None, save_input(b) if ra else None)
        if cls is MmBackward0:
            args += (_colmajor(a), _colmajor(b))
        record(cls, (a, b), out, args)
    return out


def _colmajor(t):
    """Whether a matrix is stored column by column (a transposed view, like weight.t())."""
    flags = t._data.flags
    return flags.f_contiguous and not flags.c_contiguous


def dot(a, b):
    _check(a, b, "dot", (1, 1))
    if a._data.shape != b._data.shape:
        raise RuntimeError(f"dot(): the vectors have different lengths, {a._data.shape[0]} and "
                           f"{b._data.shape[0]}")
    return _product(DotBackward0, np.dot, a, b)


def mm(a, b):
    _check(a, b, "mm", (2, 2))
    return _product(MmBackward0, np.matmul, a, b)


def mv(a, b):
    _check(a, b, "mv", (2, 1))
    return _product(MvBackward0, np.matmul, a, b)


def bmm(a, b):
    _check(a, b, "bmm", (3, 3))
    return _product(BmmBackward0, np.matmul, a, b)


def matmul(a, b):
    """Dispatches by rank, building the same graph PyTorch builds."""
    from runtime.ops import shape as S

    na, nb = a._data.ndim, b._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError("matmul() needs tensors with at least one dimension")
    if na == 1 and nb == 1:
        return dot(a, b)
    if na == 2 and nb == 1:
        return mv(a, b)
    if na == 1 and nb == 2:
        return S.squeeze_dim_node(mm(S.unsqueeze(a, 0), b), 0, S.SqueezeBackward4)
    if na == 2 and nb == 2:
        return mm(a, b)
    return _batched(a, b)


def _batched(a, b):
    from runtime.ops import shape as S

    if b._data.ndim == 1:
        lead = a._data.shape[:-1]
        flat = S.reshape(a, (-1, a._data.shape[-1]))
        return S.unsafe_view(mv(flat, b), lead)
    if a._data.ndim == 1:  # vector @ batch: (b.mT @ a), as PyTorch computes it
        return matmul(S.transpose(b, -1, -2), a)
    if a._data.ndim == 2:  # matrix @ batch: (b.mT @ a.mT).mT, made contiguous
        return S.contiguous(S.transpose(matmul(S.transpose(b, -1, -2), S.transpose(a, -1, -2)),
                                        -1, -2))
    if b._data.ndim == 2:
        # fold the batch dimensions of `a` into rows: one mm, as PyTorch does
        lead = a._data.shape[:-1]
        flat = S.reshape(a, (-1, a._data.shape[-1]))
        return S.unsafe_view(mm(flat, b), lead + (b._data.shape[-1],))
    batch = np.broadcast_shapes(a._data.shape[:-2], b._data.shape[:-2])
    n, k = a._data.shape[-2:]
    m = b._data.shape[-1]
    a3 = S.reshape(S.expand(a, batch + (n, k)), (-1, n, k))
    b3 = S.reshape(S.expand(b, batch + (k, m)), (-1, k, m))
    return S.unsafe_view(bmm(a3, b3), batch + (n, m))


def outer(a, b):
    from runtime.ops import shape as S
    from runtime.ops.elementwise import mul

    return mul(S.view(a, (-1, 1)), b)


def addmm(bias, m1, m2, beta=1, alpha=1):
    dt = result_dtype(bias, m1, m2)
    prod = np.matmul(data_of(m1, dt.np), data_of(m2, dt.np))
    if alpha != 1:
        prod = prod * alpha
    data = prod + (data_of(bias, dt.np) if beta == 1 else beta * data_of(bias, dt.np))
    out = wrap(data, dt)
    if any_requires_grad((bias, m1, m2)):
        r1, r2 = m1.requires_grad, m2.requires_grad
        record(AddmmBackward0, (bias, m1, m2), out,
               (save_input(m1) if r2 else None, save_input(m2) if r1 else None, beta, alpha,
                _colmajor(m1), _colmajor(m2)))
    return out
