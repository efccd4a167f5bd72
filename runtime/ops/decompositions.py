"""Forward kernels of torch.linalg's factorizations and solvers, on numpy/scipy LAPACK.

Every kernel works on batches of matrices (the last two dimensions), computes in the input's
own precision (float32 stays float32, as LAPACK's s-routines do in PyTorch), checks its
arguments the way PyTorch does (RuntimeError for shapes and dtypes, LinAlgError when the
factorization fails), and records one node named as PyTorch 2.13 names it. Multi-output
factorizations (slogdet, eigh, svd, qr, lstsq) record one multi-output node.

Eigenvectors and singular vectors are only defined up to sign; numpy's LAPACK (OpenBLAS) and
PyTorch's (MKL) may pick different signs, exactly as two PyTorch builds may.
"""


import numpy as np

from runtime import dtypes, return_types
from runtime.autograd_meta import any_requires_grad, record, record_multi
from runtime.function import node_class, save_input, save_output
from runtime.ops._core import wrap
from runtime.rules.decompositions import scipy_linalg as _scipy


class LinAlgError(RuntimeError):
    """A factorization or solve failed on the values (singular, not positive-definite)."""


LinAlgError.__module__ = "torch.linalg"

LinalgDetBackward0 = node_class("LinalgDetBackward0", "linalg_det")
LinalgInvExBackward0 = node_class("LinalgInvExBackward0", "linalg_inv")
LinalgSolveExBackward0 = node_class("LinalgSolveExBackward0", "linalg_solve")
LinalgCholeskyExBackward0 = node_class("LinalgCholeskyExBackward0", "linalg_cholesky")
CholeskyBackward0 = node_class("CholeskyBackward0", "linalg_cholesky")
LinalgSlogdetBackward0 = node_class("LinalgSlogdetBackward0", "linalg_slogdet", True)
LinalgEighBackward0 = node_class("LinalgEighBackward0", "linalg_eigh", True)
LinalgSvdBackward0 = node_class("LinalgSvdBackward0", "linalg_svd", True)
LinalgQrBackward0 = node_class("LinalgQrBackward0", "linalg_qr", True)
LinalgLstsqBackward0 = node_class("LinalgLstsqBackward0", "linalg_lstsq", True)

Slogdet, Eigh = return_types.linalg_slogdet, return_types.linalg_eigh
Svd, Qr = return_types.linalg_svd, return_types.linalg_qr
InvEx, CholeskyEx = return_types.linalg_inv_ex, return_types.linalg_cholesky_ex
SolveEx, Lstsq = return_types.linalg_solve_ex, return_types.linalg_lstsq


def check_matrix(a, name, square=True):
    """PyTorch's checks of a matrix argument: at least 2-d, float, square where needed."""
    nd = a._data.ndim
    if nd < 2:
        raise RuntimeError(f"linalg.{name}: the input must have at least 2 dimensions (a "
                           f"batch of matrices), got {nd}")
    if a._dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"linalg.{name}: expected a floating point tensor, got {a._dtype}")
    if a._dtype is dtypes.float16:
        raise NotImplementedError(f"linalg.{name} is not implemented for float16")
    rows, cols = a._data.shape[-2:]
    if square and rows != cols:
        raise RuntimeError(f"linalg.{name}: A must be a (batch of) square matrices, but it is "
                           f"{rows} by {cols}")


def colmajor(x, dtype):
    """`x` stored matrix by matrix in column-major order, as LAPACK (and PyTorch) leave
    factors: later reshapes then view or copy exactly where PyTorch's do."""
    x = np.asarray(x, dtype)
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)


def _batched(fn, a, *rest):
    """Apply a per-matrix numpy function over the batch dimensions of `a` (and `rest`)."""
    batch = a.shape[:-2]
    if not batch:
        return fn(a, *rest)
    results = [fn(a[i], *(r[i] for r in rest)) for i in np.ndindex(*batch)]
    if isinstance(results[0], tuple):
        return tuple(np.stack(part).reshape(batch + part[0].shape) for part in zip(*results))
    return np.stack(results).reshape(batch + results[0].shape) if results else results


# -- determinants -------------------------------------------------------------------------------

def det(a):
    check_matrix(a, "det")
    data = np.linalg.det(a._data) if a._data.size else np.ones(a._data.shape[:-2])
    out = wrap(np.asarray(data, a._dtype.np), a._dtype)
    if any_requires_grad((a,)):
        record(LinalgDetBackward0, (a,), out,
               (save_input(a), save_output(out, "LinalgDetBackward0")))
    return out


def slogdet(a):
    check_matrix(a, "slogdet")
    sign, logabs = np.linalg.slogdet(a._data)
    outs = [wrap(np.asarray(sign, a._dtype.np), a._dtype),
            wrap(np.asarray(logabs, a._dtype.np), a._dtype)]
    if any_requires_grad((a,)):
        record_multi(LinalgSlogdetBackward0, (a,), outs, (save_input(a),))
    return Slogdet(*outs)


def logdet(a):
    """log det(A): nan where det < 0, -inf where singular (sign * exp(logabsdet) logic as
    PyTorch: where(sign == -1, nan, logabsdet))."""
    from runtime.ops.elementwise import where

    sign, logabs = slogdet(a)
    bad = wrap(sign._data == -1, dtypes.bool_)
    return where(bad, float("nan"), logabs)


# -- inverse and solve --------------------------------------------------------------------------

def _lu_info(a):
    """LAPACK's info for an LU factorization of each matrix: 0, or the 1-based index of the
    first zero pivot (PyTorch's error names it)."""
    getrf = _scipy().lapack.get_lapack_funcs("getrf", (a,))
    flat = a.reshape((-1,) + a.shape[-2:])
    infos = [getrf(m)[2] for m in flat]
    return np.array(infos, np.int32).reshape(a.shape[:-2])


def inv_ex(a, check_errors=False):
    check_matrix(a, "inv")
    data = a._data
    info = _lu_info(data) if data.size else np.zeros(data.shape[:-2], np.int32)
    if np.any(info):
        if check_errors:
            raise _singular("inv", info)
        with np.errstate(all="ignore"):
            inverse = _batched(_lu_inverse, data)
    else:
        inverse = np.linalg.inv(data) if data.size else np.zeros_like(data)
    out = wrap(colmajor(inverse, a._dtype.np), a._dtype)
    if any_requires_grad((a,)):
        record(LinalgInvExBackward0, (a,), out, (save_output(out, "LinalgInvExBackward0"),))
    return InvEx(out, wrap(info, dtypes.int32))


def _lu_inverse(m):
    return _scipy().lu_solve(lu_factor(m), np.eye(len(m), dtype=m.dtype), check_finite=False)


def lu_factor(m):
    """scipy's LU, without its warning about exactly singular matrices (callers want the
    inf/nan a zero pivot gives, as PyTorch's unchecked solves do)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _scipy().lu_factor(m, check_finite=False)


def inv(a):
    return inv_ex(a, check_errors=True).inverse


def _singular(name, info):
    first = int(np.ravel(info)[np.flatnonzero(np.ravel(info))[0]])
    return LinAlgError(f"linalg.{name}: the matrix is singular (the LU factorization has a "
                       f"zero pivot at position {first}), so it cannot be inverted")


def is_vector_rhs(a, b):
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-d, or has one dimension less
    than A and A's shape without its last dimension."""
    nb = b._data.ndim
    return nb == 1 or (nb == a._data.ndim - 1 and b._data.shape == a._data.shape[:-1])


def solve_ex(a, b, left=True, check_errors=False):
    check_matrix(a, "solve")
    if b._dtype is not a._dtype:
        raise RuntimeError(f"linalg.solve: A and B must have the same dtype, got {a._dtype} "
                           f"and {b._dtype}")
    vector = is_vector_rhs(a, b)
    x = _solve_data(a._data, b._data, vector, left)
    info = _lu_info(a._data) if a._data.size else np.zeros(a._data.shape[:-2], np.int32)
    if check_errors and np.any(info):
        raise _singular("solve", info)
    out = wrap(np.asarray(x, a._dtype.np), a._dtype)
    if any_requires_grad((a, b)):
        record(LinalgSolveExBackward0, (a, b), out,
               (save_input(a), save_output(out, "LinalgSolveExBackward0"), left, vector))
    return SolveEx(out, wrap(info, dtypes.int32))


def _solve_data(a, b, vector, left):
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(_solve_data(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2),
                                       vector, True), -1, -2)
    rhs = b[..., None] if vector else b
    if rhs.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"linalg.solve: incompatible shapes of A {list(a.shape)} and B "
                           f"{list(b.shape)}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dimensions of A {list(a.shape)} and B "
                           f"{list(b.shape)} cannot be broadcast") from None
    a = np.broadcast_to(a, batch + a.shape[-2:])
    rhs = np.broadcast_to(rhs, batch + rhs.shape[-2:])
    with np.errstate(all="ignore"):
        x = _batched(_lu_solve, np.ascontiguousarray(a), np.ascontiguousarray(rhs)) \
            if a.size and rhs.size else np.zeros(rhs.shape, a.dtype)
    return x[..., 0] if vector else x


def _lu_solve(m, rhs, trans=0):
    """LAPACK getrf + getrs without the singularity check: a zero pivot gives inf/nan, as
    PyTorch's lu_solve does in the derivative formulas that use it."""
    return _scipy().lu_solve(lu_factor(m), rhs, trans=trans, check_finite=False)


def solve(a, b, left=True):
    return solve_ex(a, b, left=left, check_errors=True).result


# -- factorizations -----------------------------------------------------------------------------

def cholesky_ex(a, upper=False, check_errors=False, _legacy=False):
    check_matrix(a, "cholesky")
    data = a._data
    sym = np.tril(data) + np.swapaxes(np.tril(data, -1), -1, -2)  # LAPACK reads one triangle
    try:
        low = np.linalg.cholesky(sym) if data.size else np.zeros_like(data)
        info = np.zeros(data.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        if check_errors:
            raise LinAlgError("linalg.cholesky: the input is not positive-definite, so the "
                              "factorization could not be completed") from None
        low, info = _partial_cholesky(sym)
    result = np.swapaxes(low, -1, -2) if upper else low
    out = wrap(colmajor(result, a._dtype.np), a._dtype)
    if any_requires_grad((a,)):
        cls = CholeskyBackward0 if _legacy else LinalgCholeskyExBackward0
        record(cls, (a,), out, (save_output(out, cls.__name__), upper))
    return CholeskyEx(out, wrap(info, dtypes.int32))


def _partial_cholesky(sym):
    """Per-matrix potrf results and info codes, for cholesky_ex on a failing batch."""
    potrf = _scipy().lapack.get_lapack_funcs("potrf", (sym,))
    flat = sym.reshape((-1,) + sym.shape[-2:])
    lows, infos = [], []
    for m in flat:
        c, info = potrf(m, lower=True, clean=True)
        lows.append(np.tril(c))
        infos.append(info)
    return (np.stack(lows).reshape(sym.shape) if lows else sym.copy(),
            np.array(infos, np.int32).reshape(sym.shape[:-2]))


def cholesky(a, upper=False):
    return cholesky_ex(a, upper=upper, check_errors=True).L


def qr(a, mode="reduced"):
    check_matrix(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    m, n = a._data.shape[-2:]
    q, r = _qr_data(a._data, "complete" if mode == "complete" else "reduced")
    q = np.zeros((0,), a._dtype.np) if mode == "r" else colmajor(q, a._dtype.np)
    outs = [wrap(q, a._dtype), wrap(colmajor(r, a._dtype.np), a._dtype)]
    if any_requires_grad((a,)):
        record_multi(LinalgQrBackward0, (a,), outs,
                     (save_input(a), save_output(outs[0], "LinalgQrBackward0"),
                      save_output(outs[1], "LinalgQrBackward0"), mode))
    return Qr(*outs)


def _qr_data(a, mode):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        cols = m if mode == "complete" else k
        q = np.broadcast_to(np.eye(m, cols, dtype=a.dtype), a.shape[:-2] + (m, cols)).copy()
        return q, np.zeros(a.shape[:-2] + (cols, n), a.dtype)
    return np.linalg.qr(a, mode=mode)


def eigh(a, UPLO="L"):
    check_matrix(a, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if a._data.size:
        w, v = np.linalg.eigh(a._data, UPLO=UPLO)
    else:
        w, v = np.zeros(a._data.shape[:-1], a._dtype.np), np.zeros_like(a._data)
    outs = [wrap(np.asarray(w, a._dtype.np), a._dtype),
            wrap(colmajor(v, a._dtype.np), a._dtype)]
    if any_requires_grad((a,)):
        record_multi(LinalgEighBackward0, (a,), outs,
                     (save_input(a), save_output(outs[0], "LinalgEighBackward0"),
                      save_output(outs[1], "LinalgEighBackward0"), UPLO))
    return Eigh(*outs)


def eigvalsh(a, UPLO="L"):
    return eigh(a, UPLO).eigenvalues  # the eigenvectors stay saved in the node


def svd(a, full_matrices=True):
    check_matrix(a, "svd", square=False)
    u, s, vh = _svd_data(a._data, full_matrices)
    outs = [wrap(np.ascontiguousarray(s, a._dtype.np) if x is s else colmajor(x, a._dtype.np),
                 a._dtype) for x in (u, s, vh)]
    if any_requires_grad((a,)):
        record_multi(LinalgSvdBackward0, (a,), outs,
                     (save_input(a), *(save_output(o, "LinalgSvdBackward0") for o in outs),
                      full_matrices))
    return Svd(*outs)


def _svd_data(a, full):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        batch = a.shape[:-2]
        mu, nv = (m, n) if full else (k, k)
        return (np.broadcast_to(np.eye(m, mu, dtype=a.dtype), batch + (m, mu)).copy(),
                np.zeros(batch + (k,), a.dtype),
                np.broadcast_to(np.eye(nv, n, dtype=a.dtype), batch + (nv, n)).copy())
    return np.linalg.svd(a, full_matrices=full)


def svdvals(a):
    check_matrix(a, "svdvals", square=False)
    return svd(a, full_matrices=False).S


def lstsq(a, b, rcond=None, driver=None):
    check_matrix(a, "lstsq", square=False)
    if b._dtype is not a._dtype:
        raise RuntimeError(f"linalg.lstsq: A and B must have the same dtype, got {a._dtype} "
                           f"and {b._dtype}")
    vector = b._data.ndim == a._data.ndim - 1
    bd = b._data[..., None] if vector else b._data
    if bd.ndim < 2 or bd.shape[-2] != a._data.shape[-2]:
        raise RuntimeError(f"linalg.lstsq: A {list(a._data.shape)} and B {list(b._data.shape)} "
                           f"do not have the same number of rows")
    batch = np.broadcast_shapes(a._data.shape[:-2], bd.shape[:-2])
    ad = np.broadcast_to(a._data, batch + a._data.shape[-2:])
    bd = np.broadcast_to(bd, batch + bd.shape[-2:])
    x = _batched(lambda m, r: np.linalg.lstsq(m, r, rcond=rcond)[0], ad, bd) if ad.size \
        else np.zeros(batch + (a._data.shape[-1], bd.shape[-1]), a._dtype.np)
    x = x[..., 0] if vector else x
    rank = np.asarray(_batched(np.linalg.matrix_rank, ad) if ad.size else 0, np.int64)
    dt = a._dtype
    outs = [wrap(np.asarray(x, dt.np) if vector else colmajor(x, dt.np), dt),
            wrap(np.zeros((0,), dt.np), dt)]
    if any_requires_grad((a, b)):
        record_multi(LinalgLstsqBackward0, (a, b), outs, (save_input(a), save_input(b), vector))
    return Lstsq(outs[0], outs[1], wrap(rank, dtypes.int64), wrap(np.zeros((0,), dt.np), dt))


def pinv(a):
    """The Moore-Penrose pseudo-inverse (numpy's SVD cut-off), used by lstsq's gradient."""
    return wrap(np.linalg.pinv(a._data) if a._data.size else
                np.zeros(a._data.shape[:-2] + a._data.shape[-2:][::-1], a._dtype.np), a._dtype)
