"""Linear-algebra functions PyTorch builds from other ops (matrix_power, vecdot,
linalg.diagonal, matrix_rank), built here from the same ops in the same order, so their
backward graphs are torch's node for node and no derivative rule is new.
"""

import numpy as np

from runtime.ops import decompositions as D
from runtime.ops import matmul, mul, sum as sum_
from runtime.ops._core import wrap
from runtime.ops.indexing import diagonal as _diagonal
from runtime import dtypes


def _square_batches(a, name):
    if a.dim() < 2:
        raise RuntimeError(f"{name}: expected a matrix or a batch of matrices, got a tensor "
                           f"with {a.dim()} dimensions")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: expected square matrices, got {a.shape[-2]} by "
                           f"{a.shape[-1]} ones")


def matrix_power(A, n):
    """A @ A @ ... (n factors) by binary exponentiation (A^3 directly), as PyTorch multiplies;
    A^0 is the identity (a copy into a clone of A, so the graph still reaches A); A^-n
    inverts first."""
    _square_batches(A, "matrix_power")
    if n == 0:
        eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A._dtype.np), A._data.shape)
        return A.clone().copy_(wrap(eye, A._dtype))
    if n == 1:
        return A.clone()
    if n < 0:
        A, n = D.inv(A), -n
    if n == 1:
        return A
    if n == 3:
        return matmul(matmul(A, A), A)
    result = z = None
    while n:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def vecdot(x, y, *, dim=-1):
    """sum(conj(x) * y) along dim."""
    return sum_(mul(x.conj() if x.is_complex() else x, y), dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _diagonal(A, offset, dim1, dim2)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above max(atol, rtol * largest); with neither given,
    rtol is eps * max(rows, cols) of the dtype."""
    _at_least_matrix(A)
    values = np.linalg.svd(A._data, compute_uv=False, hermitian=hermitian)
    largest = values.max(-1, initial=0.0)
    if atol is None and rtol is None:
        rtol = np.finfo(A._data.dtype).eps * max(A.shape[-2:])
    tol = np.maximum(atol or 0.0, (rtol or 0.0) * largest)
    return wrap(np.asarray((values > tol[..., None]).sum(-1), np.int64), dtypes.int64)


def _at_least_matrix(A):
    if A.dim() < 2:
        raise RuntimeError(f"matrix_rank: expected a matrix or a batch of matrices, got a "
                           f"tensor with {A.dim()} dimensions")
