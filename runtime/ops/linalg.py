"""Forward kernels of products: dot, vdot, mm, mv, bmm, matmul, outer, addmm."""

import warnings

import numpy as np

from runtime import mkl
from runtime.autograd_meta import any_requires_grad, record, requires_grad
from runtime.function import node_class, save_input
from runtime.ops._core import wrap
from runtime.rules import numpy_ops

DotBackward0 = node_class("DotBackward0", "dot")
VdotBackward0 = node_class("VdotBackward0", "vdot")
MmBackward0 = node_class("MmBackward0", "mm")
MvBackward0 = node_class("MvBackward0", "mv")
BmmBackward0 = node_class("BmmBackward0", "bmm")
AddmmBackward0 = node_class("AddmmBackward0", "addmm")
LinalgCrossBackward0 = node_class("LinalgCrossBackward0", "linalg_cross")


def _check(a, b, name, ndims, any_dtypes=False):
    if a._data.ndim != ndims[0] or b._data.ndim != ndims[1]:
        raise RuntimeError(f"{name}() expects {ndims[0]}-D and {ndims[1]}-D tensors, got "
                           f"{a._data.ndim}-D and {b._data.ndim}-D")
    if a._dtype is not b._dtype and not any_dtypes:
        raise RuntimeError(f"{name}() needs both operands to have the same dtype, got "
                           f"{a._dtype} and {b._dtype}")


def _product(cls, np_fn, a, b, dt=None):
    try:
        data = np_fn(a._data, b._data)
    except ValueError:
        raise RuntimeError(f"{cls.__name__[:-9].lower()}(): shapes {list(a._data.shape)} and "
                           f"{list(b._data.shape)} cannot be multiplied") from None
    dt = dt or a._dtype
    out = wrap(data.astype(dt.np, copy=False), dt)
    if any_requires_grad((a, b)):
        ra, rb = requires_grad(a), requires_grad(b)
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
    _check_vectors(a, b, "dot")
    return _product(DotBackward0, _dot, a, b)


def vdot(a, b):
    """dot with the first vector conjugated; recorded as its own node, as PyTorch's is."""
    _check_vectors(a, b, "vdot")
    return _product(VdotBackward0, _vdot, a, b)


def _check_vectors(a, b, name):
    _check(a, b, name, (1, 1))
    if a._data.shape != b._data.shape:
        raise RuntimeError(f"{name}(): the vectors have different lengths, "
                           f"{a._data.shape[0]} and {b._data.shape[0]}")


def _vdot(a, b):
    return _dot(np.conj(a), b) if a.dtype.kind == "c" else _dot(a, b)


def _dot(a, b):
    """MKL's ?dot as PyTorch calls it (runtime/mkl.py) for float vectors where MKL is at
    hand, else np.dot; with PyTorch's sum starting from +0 (a sum of -0 products is +0)."""
    out = mkl.dot(a, b) if a.dtype.kind == "f" and a.ndim == 1 == b.ndim else None
    out = np.dot(a, b) if out is None else out
    return out + out.dtype.type(0) if out.dtype.kind == "f" else out


def mm(a, b):
    _check(a, b, "mm", (2, 2))
    return _product(MmBackward0, numpy_ops.matmul, a, b)


def mv(a, b):
    _check(a, b, "mv", (2, 1))
    return _product(MvBackward0, numpy_ops.matmul, a, b)


def bmm(a, b):
    """A batch of matrix products. As PyTorch's, a product with nothing to multiply (an
    empty result or an empty inner dimension) is not checked for dtypes: it is zeros (or
    nothing) of b's dtype."""
    sa, sb = a._data.shape, b._data.shape
    empty = len(sa) == len(sb) == 3 and 0 in (sa[0], sa[1], sa[2], sb[2])
    _check(a, b, "bmm", (3, 3), any_dtypes=empty)
    if sa[0] != sb[0]:
        raise RuntimeError(f"bmm(): the batch sizes differ ({sa[0]} and {sb[0]}); bmm does "
                           f"not broadcast, matmul does")
    return _product(BmmBackward0, numpy_ops.matmul, a, b, b._dtype)


def matmul(a, b):
    """Dispatches by rank, building the same graph PyTorch builds (its _matmul_impl)."""
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
    _check_inner(a, b)
    if _should_fold(a, b):
        return _folded(a, b)
    return _batched(a, b)


def _check_inner(a, b):
    k_a = a._data.shape[-1]
    k_b = b._data.shape[-2] if b._data.ndim > 1 else b._data.shape[0]
    if k_a != k_b:
        raise RuntimeError(f"matmul(): shapes {list(a._data.shape)} and {list(b._data.shape)} "
                           f"cannot be multiplied ({k_a} != {k_b})")


def _should_fold(a, b):
    """Whether to fold the batch dimensions of the larger operand into matrix rows (one mm
    or mv instead of a bmm): PyTorch does when the smaller operand requires grad (its
    gradient then comes from one mm), or when the fold needs no copy."""
    a_larger = a._data.ndim >= b._data.ndim
    big, small = (a, b) if a_larger else (b, a)
    if not (big._data.ndim >= 3 and small._data.ndim <= 2):
        return False
    if requires_grad(small):
        return True
    if a._data.ndim == 2:
        return False
    t1 = a._data if a_larger else np.swapaxes(b._data, -1, -2)
    if t1.size == 0:
        return True
    # the tensor's own strides, size-1 dimensions included: a view keeps its base's, and an
    # elementwise result of one the layout TensorIterator gave it ((1, 2, 2) of strides
    # (4, 1, 2) for exp of a transpose, which does not fold)
    shape, strides = t1.shape, t1.strides
    # the first n-1 dimensions (those folded into rows) must be contiguous among themselves
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def _folded(a, b):
    from runtime.ops import shape as S

    transpose = b._data.ndim > a._data.ndim
    if transpose:  # a @ b = (b.mT @ a.T).mT, with b.mT's batch folded into rows
        t1 = S.transpose(b, -1, -2)
        t2 = S.t(a) if a._data.ndim == 2 else a
    else:
        t1, t2 = a, b
    lead = t1._data.shape[:-1]
    folded = S.reshape(t1, (int(np.prod(lead)), t1._data.shape[-1]))
    if t2._data.ndim == 1:
        return S.unsafe_view(mv(folded, t2), lead)
    out = S.unsafe_view(mm(folded, t2), lead + (t2._data.shape[1],))
    return S.contiguous(S.transpose(out, -1, -2)) if transpose else out


def _batched(a, b):
    """Broadcast the batch dimensions, flatten them and run one bmm."""
    from runtime.ops import shape as S

    sa, sb = a._data.shape, b._data.shape
    na, nb = len(sa), len(sb)
    if na == 3 and nb == 3 and sa[0] != sb[0]:
        # a batch of one that requires grad is squeezed, so its gradient comes from an mm
        if sa[0] == 1 and requires_grad(a):
            return matmul(S.squeeze(a, 0), b)
        if sb[0] == 1 and requires_grad(b):
            return matmul(a, S.squeeze(b, 0))
    n = sa[-2] if na > 1 else 1
    k = sa[-1]
    p = sb[-1] if nb > 1 else 1
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise RuntimeError(f"matmul(): the batch dimensions of {list(sa)} and {list(sb)} "
                           f"cannot be broadcast together") from None
    size = int(np.prod(batch))
    a3 = S.reshape(S.expand(a, batch + (n, k)), (size, n, k))
    if nb == 1:
        b3 = S.unsqueeze(S.reshape(S.expand(b, batch + (k,)), (size, k)), 2)
        out = S.squeeze(bmm(a3, b3), -1)
    else:
        out = bmm(a3, S.reshape(S.expand(b, batch + (k, p)), (size, k, p)))
    shape = batch + ((n,) if na > 1 else ()) + ((p,) if nb > 1 else ())
    return S.unsafe_view(out, shape)


def linalg_cross(a, b, dim=-1):
    """torch.linalg.cross: the cross product along `dim` (of length 3 in both operands, whose
    other dims broadcast; both of one dtype and of as many dims)."""
    sa, sb = a._data.shape, b._data.shape
    if len(sa) != len(sb):
        raise RuntimeError(f"linalg.cross(): the operands have {len(sa)} and {len(sb)} dims; "
                           f"they must have as many")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"linalg.cross(): the operands have dtypes {a._dtype} and "
                           f"{b._dtype}; they must have one")
    from runtime.ops.reductions import normalize_dims

    (dim,) = normalize_dims(dim, len(sa))
    if sa[dim] != 3 or sb[dim] != 3:
        raise RuntimeError(f"linalg.cross(): dim {dim} must have length 3 in both operands, "
                           f"not {sa[dim]} and {sb[dim]}")
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        raise RuntimeError(f"linalg.cross(): shapes {list(sa)} and {list(sb)} do not "
                           f"broadcast") from None
    out = wrap(numpy_ops.cross(a._data, b._data, dim), a._dtype)
    if any_requires_grad((a, b)):
        ra, rb = requires_grad(a), requires_grad(b)
        record(LinalgCrossBackward0, (a, b), out,
               (save_input(a) if rb else None, save_input(b) if ra else None, dim))
    return out


def cross(a, b, dim=None):
    """torch.cross: linalg.cross, except that without `dim` it takes the first dim of length 3
    (with a warning that this default is deprecated)."""
    if dim is None:
        dim = next((d for d, n in enumerate(np.broadcast_shapes(a._data.shape, b._data.shape))
                    if n == 3), None)
        if dim is None:
            raise RuntimeError("cross(): no dim has length 3; pass dim=")
        warnings.warn("cross() without dim= takes the first dim of length 3; that default is "
                      "deprecated and will become dim=-1 as in linalg.cross: pass dim= or call "
                      "linalg.cross", UserWarning, stacklevel=2)
    return linalg_cross(a, b, dim)


def outer(a, b):
    from runtime.ops import shape as S
    from runtime.ops.elementwise import mul

    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(f"outer() expects two 1-D tensors, got {a._data.ndim}-D and "
                           f"{b._data.ndim}-D")
    return mul(S.reshape(a, (-1, 1)), b)  # PyTorch reshapes (ReshapeAlias when strided)


def addmm(bias, m1, m2, beta=1, alpha=1):
    _check_matrices(m1, m2, "addmm")
    out_shape = (m1._data.shape[0], m2._data.shape[1])
    bias_shape = bias._data.shape
    if bias_shape != out_shape[1:] and bias_shape != out_shape \
            and _broadcast(bias_shape, out_shape) != out_shape:  # (a Linear's bias is cheap)
        raise RuntimeError(f"addmm(): the input of shape {list(bias._data.shape)} cannot be "
                           f"broadcast to the product's shape {list(out_shape)}")
    if not (bias._dtype is m1._dtype is m2._dtype):
        raise RuntimeError(f"addmm() needs operands of one dtype, got {bias._dtype}, "
                           f"{m1._dtype} and {m2._dtype}")
    dt = m1._dtype
    if alpha == 1 == beta:  # PyTorch's sgemm adds the product's blocks onto the input
        data = numpy_ops.matmul(m1._data, m2._data, bias._data)
    else:
        data = _scaled_addmm(bias._data, m1._data, m2._data, beta, alpha)
    out = wrap(data, dt)
    if any_requires_grad((bias, m1, m2)):
        r1, r2 = requires_grad(m1), requires_grad(m2)
        record(AddmmBackward0, (bias, m1, m2), out,
               (save_input(m1) if r2 else None, save_input(m2) if r1 else None, beta, alpha,
                _colmajor(m1), _colmajor(m2)))
    return out


def _scaled_addmm(bias, m1, m2, beta, alpha):
    prod = mkl.gemm(m1, m2, bias, alpha, beta)  # PyTorch passes alpha and beta to gemm
    if prod is not None:
        return prod
    prod = numpy_ops.matmul(m1, m2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # the input is ignored, so nan or inf in it does not propagate
        return prod
    return prod + (bias if beta == 1 else beta * bias)


def _check_matrices(m1, m2, name):
    if m1._data.ndim != 2 or m2._data.ndim != 2:
        raise RuntimeError(f"{name}() expects 2-D matrices, got {m1._data.ndim}-D and "
                           f"{m2._data.ndim}-D")
    if m1._data.shape[1] != m2._data.shape[0]:
        raise RuntimeError(f"{name}(): shapes {list(m1._data.shape)} and "
                           f"{list(m2._data.shape)} cannot be multiplied")


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None
