"""torch.linalg: the public namespace of adcompile's linear algebra (forward kernels in
`runtime.ops.decompositions` and `runtime.linalg.norms`, derivative rules in
`runtime.rules.decompositions`; multi_dot in `runtime.ops.contractions`)."""

from runtime.linalg.norms import matrix_norm, norm, vector_norm  # noqa: F401
from runtime.ops.decompositions import (  # noqa: F401
    LinAlgError,
    cholesky,
    cholesky_ex,
    det,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    qr,
    slogdet,
    solve,
    solve_ex,
    svd,
    svdvals,
)
from runtime.ops.contractions import multi_dot  # noqa: F401
from runtime.ops.linalg import linalg_cross as cross  # noqa: F401
from runtime.linalg.compositions import (  # noqa: F401
    diagonal, matrix_power, matrix_rank, vecdot)


def matmul(a, b):
    from runtime.ops import matmul as mm

    return mm(a, b)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "eigh", "eigvalsh", "inv",
           "inv_ex", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "diagonal",
           "vecdot", "multi_dot", "norm", "qr", "slogdet", "solve",
           "solve_ex", "svd", "svdvals", "vector_norm"]
