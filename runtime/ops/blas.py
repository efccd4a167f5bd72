"""Forward kernels of the fused BLAS-style products: addmv, addr, baddbmm, addbmm.

Each computes beta * input + alpha * product in one node (AddmvBackward0, AddrBackward0,
BaddbmmBackward0, AddbmmBackward0) whose edges are (input, first factor, second factor), as PyTorch records
them. With beta = 0 the input is ignored, so nan or inf in it does not propagate.
"""

import numpy as np

from runtime import mkl
from runtime.autograd_meta import any_requires_grad, record, requires_grad
from runtime.function import node_class, save_input
from runtime.ops._core import wrap
from runtime.rules import numpy_ops

AddmvBackward0 = node_class("AddmvBackward0", "addmv")
AddrBackward0 = node_class("AddrBackward0", "addr")
BaddbmmBackward0 = node_class("BaddbmmBackward0", "baddbmm")
AddbmmBackward0 = node_class("AddbmmBackward0", "addbmm")


def _check(name, ndims, *operands):
    # PyTorch indexes the batch factors' third dimension first: too few dimensions are an
    # IndexError there, a RuntimeError elsewhere
    for t, nd in zip(operands[1:], ndims):
        if t._data.ndim != nd:
            error = IndexError if nd == 3 and t._data.ndim < 3 else RuntimeError
            raise error(f"{name}(): expected a {nd}-D tensor, got {t._data.ndim}-D")
    if len({t._dtype for t in operands}) != 1:
        raise RuntimeError(f"{name}(): all operands must have one dtype, got "
                           f"{', '.join(str(t._dtype) for t in operands)}")


def _combine(name, inp, prod, beta, alpha):
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        data = prod
    else:
        data = prod + (inp._data if beta == 1 else beta * inp._data)
    if data.shape != prod.shape:
        raise RuntimeError(f"{name}(): the input of shape {list(inp._data.shape)} cannot be "
                           f"broadcast to the product's shape {list(prod.shape)}")
    return data


def _product(name, a, b):
    try:
        return numpy_ops.matmul(a._data, b._data)
    except ValueError:
        raise RuntimeError(f"{name}(): shapes {list(a._data.shape)} and {list(b._data.shape)} "
                           f"cannot be multiplied") from None


def _fused(cls, name, inp, m1, m2, prod, beta, alpha, extra=(), data=None):
    try:
        data = _combine(name, inp, prod, beta, alpha) if data is None else data
    except ValueError:
        raise RuntimeError(f"{name}(): the input of shape {list(inp._data.shape)} cannot be "
                           f"broadcast to the product's shape {list(prod.shape)}") from None
    out = wrap(data, m1._dtype)
    if any_requires_grad((inp, m1, m2)):
        record(cls, (inp, m1, m2), out,
               (save_input(m1) if requires_grad(m2) else None,
                save_input(m2) if requires_grad(m1) else None, beta, alpha) + extra)
    return out


def addmv(inp, mat, vec, *, beta=1, alpha=1):
    _check("addmv", (2, 1), inp, mat, vec)
    data = _mkl_addmv(inp._data, mat._data, vec._data, beta, alpha)
    prod = _product("addmv", mat, vec) if data is None else None
    return _fused(AddmvBackward0, "addmv", inp, mat, vec, prod, beta, alpha, data=data)


def addr(inp, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * (the outer product of vec1 and vec2)."""
    _check("addr", (1, 1), inp, vec1, vec2)
    prod = np.multiply.outer(vec1._data, vec2._data)
    return _fused(AddrBackward0, "addr", inp, vec1, vec2, prod, beta, alpha)


def _mkl_addmv(inp, mat, vec, beta, alpha):
    """addmv as PyTorch computes it, the input scaled and added inside MKL's gemv; None
    without MKL or where the input does not fit the product's length (the error's path)."""
    if inp.shape not in ((), (1,), mat.shape[:1]) or not _real(beta) or not _real(alpha):
        return None
    return mkl.gemv(mat, vec, inp, alpha, beta)


def _real(number):
    return isinstance(number, (int, float)) and not isinstance(number, bool)


def baddbmm(inp, b1, b2, *, beta=1, alpha=1):
    _check("baddbmm", (3, 3), inp, b1, b2)
    _same_batch("baddbmm", b1, b2)
    return _fused(BaddbmmBackward0, "baddbmm", inp, b1, b2, _product("baddbmm", b1, b2), beta,
                  alpha)


def addbmm(inp, b1, b2, *, beta=1, alpha=1):
    _check("addbmm", (3, 3), inp, b1, b2)
    _same_batch("addbmm", b1, b2)
    prod = _product("addbmm", b1, b2).sum(axis=0)
    return _fused(AddbmmBackward0, "addbmm", inp, b1, b2, prod, beta, alpha,
                  (b1._data.shape[0],))


def _same_batch(name, b1, b2):
    if b1._data.shape[0] != b2._data.shape[0]:
        raise RuntimeError(f"{name}(): the batches have different sizes, "
                           f"{b1._data.shape[0]} and {b2._data.shape[0]}")
