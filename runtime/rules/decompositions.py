"""Derivative rules of torch.linalg's factorizations and solvers, as PyTorch 2.13 states them
(its FunctionsManual formulas, real case), written against the `ops` namespace.

Where PyTorch's backward takes a different path under grad mode (create_graph) than without,
so do these rules: det's gradient at a singular matrix is zero on the plain path (an LU solve
with eps-perturbed pivots times det = 0) and the cofactor matrix under create_graph (through
an SVD); slogdet and solve use an unchecked LU solve on the plain path (inf/nan at singular
matrices) and a checked, differentiable solve under create_graph (LinAlgError). Repeated
eigenvalues or singular values divide by zero and give inf/nan, as in PyTorch.

The few operations beyond the generic namespace (solves, products along an axis, recomputing a
factorization so create_graph can differentiate through it) come from `_linalg(ops)`: numpy
LAPACK on the plain path, recorded Tensor operations under create_graph. Factor outputs are
recomputed from the saved input under create_graph, so the second-order graph meets them as
outputs of a fresh factorization node.
"""

import functools

import numpy as np

from runtime.rules import rule


def scipy_linalg():
    """scipy.linalg, imported on first use: importing it with the runtime would grow the
    heap every garbage collection scans, which slows the eager hot path measurably."""
    import scipy.linalg

    return scipy.linalg


_scipy = scipy_linalg


def quiet(fn):
    """Run a rule's numpy path without numpy's floating-point warnings: PyTorch returns the
    inf / nan of a degenerate input silently."""

    @functools.wraps(fn)
    def run(ops, g, *args):
        if recording(g):
            return fn(ops, g, *args)
        with np.errstate(all="ignore"):
            return fn(ops, g, *args)

    return run


def recording(g):
    """Whether a rule runs under create_graph (cotangents are Tensors, not numpy arrays)."""
    if isinstance(g, (list, tuple)):
        g = next((x for x in g if x is not None), None)
    return hasattr(g, "_grad_fn")


class _NumpyLinalg:
    """Linear-algebra helpers of the plain (numpy) backward."""

    @staticmethod
    def solve(a, b):
        from runtime.ops.decompositions import _batched, _lu_solve

        a, b = _broadcast_batch(a, b)
        with np.errstate(all="ignore"):
            return _batched(_lu_solve, a, b) if a.size and b.size else np.zeros(b.shape,
                                                                                 a.dtype)

    @staticmethod
    def solve_triangular(a, b, lower):
        from runtime.ops.decompositions import _batched

        def one(m, r):  # BLAS trsm: no singularity check, a zero pivot gives inf/nan
            trsm = _scipy().blas.get_blas_funcs("trsm", (m, r))
            return trsm(1.0, m, r, lower=int(lower))

        a, b = _broadcast_batch(a, b)
        with np.errstate(all="ignore"):
            return _batched(one, a, b) if a.size and b.size else np.zeros(b.shape, a.dtype)

    @staticmethod
    def prod(x, dim):
        return np.prod(x, axis=dim)

    @staticmethod
    def pinv(a):
        return np.linalg.pinv(a)


def _broadcast_batch(a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-2:])),
            np.ascontiguousarray(np.broadcast_to(b, batch + b.shape[-2:])))


class _TensorLinalg:
    """The same helpers as recorded Tensor operations (create_graph)."""

    @staticmethod
    def solve(a, b):
        from runtime.ops.decompositions import solve

        return solve(a, b)

    @staticmethod
    def solve_triangular(a, b, lower):
        """Unchecked, as PyTorch's triangular solves are: a zero pivot gives inf/nan."""
        from runtime.ops.decompositions import solve_ex

        return solve_ex(a, b).result

    @staticmethod
    def prod(x, dim):
        from runtime.ops import prod

        return prod(x, dim)

    @staticmethod
    def pinv(a):
        """The pseudo-inverse from a recorded SVD, singular values below max(m, n) * eps of
        the largest treated as zero (PyTorch's default cut-off)."""
        from runtime.ops import matmul, transpose, where
        from runtime.ops.decompositions import svd

        u, s, vh = svd(a, full_matrices=False)
        m, n = a._data.shape[-2:]
        largest = np.max(s._data, axis=-1, keepdims=True, initial=0.0)
        keep = _const(s._data > largest * (max(m, n) * np.finfo(a._data.dtype).eps))
        s_inv = where(keep, 1 / where(keep, s, 1.0), 0.0)
        return matmul(transpose(vh, -2, -1) * s_inv.unsqueeze(-2), transpose(u, -2, -1))


def _linalg(ops, g):
    return _TensorLinalg if recording(g) else _NumpyLinalg


# -- structural helpers on the generic namespace (masks are numpy constants) -------------------

def _eye_mask(n):
    return np.eye(n, dtype=bool)


def diag_embed(ops, v):
    n = ops.shape(v)[-1]
    return ops.where(_eye_mask(n), ops.unsqueeze(v, -1), 0.0)


def fill_diagonal(ops, x, value):
    """x with its diagonal replaced: a number, or a (batch of) vector(s)."""
    n = ops.shape(x)[-1]
    if not isinstance(value, (int, float)):
        value = ops.unsqueeze(value, -2)
    return ops.where(_eye_mask(n), value, x)


def tril(ops, x, k=0):
    rows, cols = ops.shape(x)[-2:]
    return ops.where(np.tri(rows, cols, k, dtype=bool), x, 0.0)


def triu(ops, x, k=0):
    rows, cols = ops.shape(x)[-2:]
    return ops.where(~np.tri(rows, cols, k - 1, dtype=bool), x, 0.0)


def right_solve(la, ops, a, b):
    """X with X A = B."""
    return ops.mT(la.solve(ops.mT(a), ops.mT(b)))


def _expand_diag(ops, v, shape):
    """diag_embed of `v` broadcast to the batch of `shape`."""
    return diag_embed(ops, ops.expand(v, tuple(shape[:-1])))


# -- determinants -------------------------------------------------------------------------------

@rule("linalg_det")
@quiet
def linalg_det(ops, g, needs, a, det):
    d = ops.mul(g, det)
    if not recording(g):
        return (_det_grad_lu(a, d),)
    return (_det_grad_recorded(ops, g, a, det, d),)


def _det_grad_lu(a, d):
    """PyTorch's plain path: solve A^T X = d I through an LU of A whose zero pivots are
    replaced by eps, so a singular matrix (d = 0) gets a zero gradient."""
    from runtime.ops.decompositions import _batched, lu_factor

    eps = np.finfo(a.dtype).eps
    d = np.asarray(d, a.dtype)

    def one(m, dm):
        lu, piv = lu_factor(m.T)
        diag = np.diagonal(lu).copy()
        lu[np.diag_indices_from(lu)] = np.where(diag == 0, eps, diag)
        rhs = dm * np.eye(len(m), dtype=m.dtype)
        return _scipy().lu_solve((lu, piv), rhs, check_finite=False)

    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    with np.errstate(all="ignore"):
        return _batched(one, a, d[..., None, None] * np.ones((1, 1), a.dtype))


def _det_grad_recorded(ops, g, a, det, d):
    """create_graph: solve A^T X = d I where det != 0, the SVD cofactor formula where det = 0."""
    from runtime.ops import where

    shape = ops.shape(a)
    singular = np.asarray(det._data == 0)
    eye = np.broadcast_to(np.eye(shape[-1], dtype=a._data.dtype), shape)
    out = None
    if not singular.all():
        safe = ops.where(singular[..., None, None], eye, a) if singular.any() else a
        out = _TensorLinalg.solve(ops.mT(safe), _expand_diag(ops, ops.unsqueeze(d, -1), shape))
    if singular.any():
        cof = _cofactor_svd(ops, g, a)
        out = cof if out is None else where(_const(singular[..., None, None]), cof, out)
    return out


def _const(mask):
    from runtime.ops._core import wrap

    return wrap(np.asarray(mask), None)


def _cofactor_svd(ops, g, a):
    from runtime.ops.decompositions import det, svd

    u, s, vh = svd(a)
    alpha = ops.mul(det(u), det(vh))
    scaled = ops.unsqueeze(ops.mul(g, alpha), -1)
    k = ops.shape(s)[-1]
    rows = ops.expand(ops.unsqueeze(s, -2), tuple(ops.shape(s)[:-1]) + (k, k))
    others = _TensorLinalg.prod(ops.where(_eye_mask(k), 1.0, rows), -1)
    return ops.matmul(ops.mul(u, ops.unsqueeze(ops.mul(scaled, others), -2)), vh)


@rule("linalg_slogdet")
@quiet
def linalg_slogdet(ops, g, needs, a):
    g_logabs = g[1]
    if g_logabs is None:
        return (None,)
    la = _linalg(ops, g)
    shape = ops.shape(a)
    d = _expand_diag(ops, ops.unsqueeze(g_logabs, -1), shape)
    return (la.solve(ops.mT(a), d),)


# -- inverse and solve --------------------------------------------------------------------------

@rule("linalg_inv")
@quiet
def linalg_inv(ops, g, needs, inverse):
    inv_t = ops.mT(inverse)
    return (ops.neg(ops.matmul(inv_t, ops.matmul(g, inv_t))),)


@rule("linalg_solve")
@quiet
def linalg_solve(ops, g, needs, a, x, left, vector):
    la = _linalg(ops, g)
    if vector:
        g, x = ops.unsqueeze(g, -1), ops.unsqueeze(x, -1)
    gb = la.solve(ops.mT(a), g) if left else right_solve(la, ops, ops.mT(a), g)
    ga = None
    if needs[0]:
        ga = ops.neg(ops.matmul(gb, ops.mT(x)) if left else ops.matmul(ops.mT(x), gb))
    if vector:
        gb = ops.reshape(gb, tuple(ops.shape(gb)[:-1]))
    return ga, (gb if needs[1] else None)


# -- factorizations -----------------------------------------------------------------------------

@rule("linalg_cholesky")
@quiet
def linalg_cholesky(ops, g, needs, low, upper):
    la = _linalg(ops, g)
    if upper:
        low, g = ops.mT(low), ops.mT(g)
    ga = tril(ops, ops.matmul(ops.mT(low), g))
    ga = ops.mul(ops.add(ga, ops.mT(tril(ops, ga, -1))), 0.5)
    ga = la.solve_triangular(ops.mT(low), ga, False)
    return (ops.mT(la.solve_triangular(ops.mT(low), ops.mT(ga), False)),)


def _factors(ops, g, saved, refactor):
    """The saved factor outputs, or under create_graph the outputs of a recorded refactor."""
    return refactor() if recording(g) else saved


@rule("linalg_eigh")
@quiet
def linalg_eigh(ops, g, needs, a, w, v, uplo):
    gw, gv = g
    if gw is None and gv is None:
        return (None,)
    from runtime.ops.decompositions import eigh

    w, v = _factors(ops, g, (w, v), lambda: eigh(a, uplo))
    if gv is None:
        return (ops.matmul(ops.mul(v, ops.unsqueeze(gw, -2)), ops.mT(v)),)
    vhgv = ops.matmul(ops.mT(v), gv)
    vhgv = ops.mul(ops.sub(vhgv, ops.mT(vhgv)), 0.5)
    gaps = fill_diagonal(ops, ops.sub(ops.unsqueeze(w, -2), ops.unsqueeze(w, -1)), 1.0)
    inner = ops.div(vhgv, gaps)
    if gw is not None:
        inner = fill_diagonal(ops, inner, gw)
    return (ops.matmul(v, ops.matmul(inner, ops.mT(v))),)


@rule("linalg_svd")
@quiet
def linalg_svd(ops, g, needs, a, u, s, vh, full):
    gu, gs, gvh = g
    if gu is None and gs is None and gvh is None:
        return (None,)
    from runtime.ops.decompositions import svd

    u, s, vh = _factors(ops, g, (u, s, vh), lambda: svd(a, full))
    m, n = ops.shape(a)[-2:]
    k = min(m, n)
    if full:
        u, vh = ops.narrow(u, -1, 0, k), ops.narrow(vh, -2, 0, k)
        gu = None if gu is None else ops.narrow(gu, -1, 0, k)
        gvh = None if gvh is None else ops.narrow(gvh, -2, 0, k)
    if gu is None and gvh is None:
        if m >= n:
            return (ops.matmul(u, ops.mul(ops.unsqueeze(gs, -1), vh)),)
        return (ops.matmul(ops.mul(u, ops.unsqueeze(gs, -2)), vh),)
    inner = _svd_inner(ops, u, s, vh, gu, gs, gvh)
    return (_svd_outer(ops, u, s, vh, gu, gvh, inner, m, n),)


def _skew(ops, x):
    return ops.sub(x, ops.mT(x))


def _svd_inner(ops, u, s, vh, gu, gs, gvh):
    """(U^T gU) S / E + S (V^T gV) / E, skew parts, with gS on the diagonal."""
    s2 = ops.mul(s, s)
    gaps = fill_diagonal(ops, ops.sub(ops.unsqueeze(s2, -2), ops.unsqueeze(s2, -1)), 1.0)
    uhgu = None if gu is None else _skew(ops, ops.matmul(ops.mT(u), gu))
    vhgv = None if gvh is None else _skew(ops, ops.matmul(vh, ops.mT(gvh)))
    if uhgu is not None and vhgv is not None:
        inner = ops.div(ops.add(ops.mul(uhgu, ops.unsqueeze(s, -2)),
                                ops.mul(ops.unsqueeze(s, -1), vhgv)), gaps)
    elif uhgu is not None:
        inner = ops.mul(uhgu, ops.div(ops.unsqueeze(s, -2), gaps))
    else:
        inner = ops.div(ops.mul(ops.unsqueeze(s, -1), vhgv), gaps)
    if gs is not None:
        inner = ops.add(inner, diag_embed(ops, gs))
    return inner


def _svd_outer(ops, u, s, vh, gu, gvh, inner, m, n):
    if m > n and gu is not None:
        ga = ops.matmul(u, inner)
        gu_sinv = ops.div(gu, ops.unsqueeze(s, -2))
        ga = ops.sub(ops.add(ga, gu_sinv), ops.matmul(u, ops.matmul(ops.mT(u), gu_sinv)))
        return ops.matmul(ga, vh)
    if m < n and gvh is not None:
        ga = ops.matmul(inner, vh)
        sinv_gvh = ops.div(gvh, ops.unsqueeze(s, -1))
        ga = ops.sub(ops.add(ga, sinv_gvh), ops.matmul(ops.matmul(sinv_gvh, ops.mT(vh)), vh))
        return ops.matmul(u, ga)
    if m >= n:
        return ops.matmul(u, ops.matmul(inner, vh))
    return ops.matmul(ops.matmul(u, inner), vh)


@rule("linalg_qr")
@quiet
def linalg_qr(ops, g, needs, a, q, r, mode):
    gq, gr = g
    m, n = ops.shape(a)[-2:]
    if mode == "r":
        raise RuntimeError("linalg.qr: with mode='r' Q is not computed, and the derivative "
                           "needs it; use mode='reduced'")
    if mode == "complete" and m > n:
        raise RuntimeError("linalg.qr: the derivative with mode='complete' is only defined "
                           "when the matrix has no more rows than columns")
    if gq is None and gr is None:
        return (None,)
    from runtime.ops.decompositions import qr

    q, r = _factors(ops, g, (q, r), lambda: qr(a, mode))
    la = _linalg(ops, g)
    if m >= n:
        return (_qr_tall(ops, la, q, r, gq, gr),)
    # A = [X | Y] with X square: X = Q U is the square case, Y = Q V with V = Q^T Y
    gu = gv = None
    if gr is not None:
        gu, gv = ops.narrow(gr, -1, 0, m), ops.narrow(gr, -1, m, n - m)
        extra = ops.matmul(ops.narrow(a, -1, m, n - m), ops.mT(gv))
        gq = extra if gq is None else ops.add(gq, extra)
    gx = _qr_tall(ops, la, q, ops.narrow(r, -1, 0, m), gq, gu)
    gy = ops.matmul(q, gv) if gv is not None else ops.zeros(
        tuple(ops.shape(a)[:-1]) + (n - m,), gx)
    return (ops.cat([gx, gy], -1),)


def _qr_tall(ops, la, q, r, gq, gr):
    """m >= n: gA = [gQ + Q syminvadj(triu(gR R^T - Q^T gQ))] R^-T."""
    if gq is None:
        ga = ops.matmul(gr, ops.mT(r))
    elif gr is None:
        ga = ops.neg(ops.matmul(ops.mT(q), gq))
    else:
        ga = ops.sub(ops.matmul(gr, ops.mT(r)), ops.matmul(ops.mT(q), gq))
    sym = triu(ops, ga)
    sym = ops.add(sym, ops.mT(sym))
    sym = fill_diagonal(ops, sym, ops.mul(_diagonal(ops, sym), 0.5))
    ga = ops.matmul(q, sym)
    if gq is not None:
        ga = ops.add(ga, gq)
    return ops.mT(la.solve_triangular(r, ops.mT(ga), False))  # X R^T = gA


def _diagonal(ops, x):
    return ops.sum_dim(ops.where(_eye_mask(ops.shape(x)[-1]), x, 0.0), -1, False)


@rule("linalg_lstsq")
@quiet
def linalg_lstsq(ops, g, needs, a, b, vector):
    gx = g[0]
    if gx is None:
        return (None, None)
    la = _linalg(ops, g)
    if vector:
        gx, b = ops.unsqueeze(gx, -1), ops.unsqueeze(b, -1)
    pinv = la.pinv(a)
    ga = gb = None
    if needs[0]:
        ga = _pinv_backward(ops, ops.matmul(gx, ops.mT(b)), pinv, a)
        ga = ops.sum_to(ga, ops.shape(a))
    if needs[1]:
        gb = ops.matmul(ops.mT(pinv), gx)
        if vector:
            gb = ops.reshape(gb, tuple(ops.shape(gb)[:-1]))
        gb = ops.sum_to(gb, ops.shape(b) if not vector else tuple(ops.shape(b)[:-1]))
    return ga, gb


def _pinv_backward(ops, g, pinv, a):
    """PyTorch's pinv_backward (real case), arranged for the smaller intermediate."""
    m, n = ops.shape(a)[-2:]
    mm = ops.matmul
    pinv_t, g_t = ops.mT(pinv), ops.mT(g)
    if m <= n:
        k = mm(g_t, pinv)
        k_pinv_t = mm(k, pinv_t)
        out = ops.add(ops.neg(ops.mT(mm(pinv, k))), k_pinv_t)
        out = ops.sub(out, mm(mm(a, pinv), k_pinv_t))
        return ops.add(out, mm(mm(pinv_t, pinv), ops.sub(g_t, mm(k, a))))
    k = mm(pinv, g_t)
    pinv_t_k = mm(pinv_t, k)
    out = ops.add(ops.neg(ops.mT(mm(k, pinv))), mm(mm(ops.sub(g_t, mm(a, k)), pinv), pinv_t))
    return ops.sub(ops.add(out, pinv_t_k), mm(mm(pinv_t_k, pinv), a))
