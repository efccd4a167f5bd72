"""The linear-algebra names of the `torch` namespace and Tensor methods (torch.det,
torch.inverse, torch.einsum, Tensor.slogdet, ...), as thin calls into the kernels.

`install(Tensor)` adds the methods; `runtime/__init__.py` re-exports `__all__`.
"""

import warnings

from runtime.ops import decompositions as D
from runtime.ops.blas import addbmm, addmv, baddbmm
from runtime.ops.einsum import einsum
from runtime.linalg.compositions import matrix_power


def det(a):
    return D.det(a)


def inverse(a):
    return D.inv(a)


def slogdet(a):
    return D.slogdet(a)


def logdet(a):
    return D.logdet(a)


def cholesky(a, upper=False):
    """The deprecated torch.cholesky: recorded as CholeskyBackward0."""
    warnings.warn("torch.cholesky is deprecated; use torch.linalg.cholesky (and .mH for the "
                  "upper factor)", UserWarning, stacklevel=2)
    return D.cholesky_ex(a, upper=upper, check_errors=True, _legacy=True).L


__all__ = ["addbmm", "addmv", "baddbmm", "cholesky", "det", "einsum", "inverse", "logdet",
           "matrix_power", "slogdet"]

_METHODS = ["addbmm", "addmv", "baddbmm", "cholesky", "det", "inverse", "logdet", "matrix_power",
            "slogdet"]


def install(tensor_cls):
    for name in _METHODS:
        if not hasattr(tensor_cls, name):
            setattr(tensor_cls, name, globals()[name])
