"""Linear algebra, differential against PyTorch 2.13: einsum, the fused BLAS products and
torch.linalg (norms, det, slogdet, inv, solve, cholesky, qr, eigh, svd, lstsq).

Rows are run by test_ops' machinery (values, dtypes, grad_fn names, the whole backward graph,
leaf gradients) on inputs drawn per row: general, well-conditioned, symmetric positive
definite. Eigenvectors and singular vectors are defined up to sign, and numpy's LAPACK may pick
other signs than PyTorch's, so rows on them use sign-invariant functions (V * V, U S Vh, ...).
Further tables: second derivatives, gradcheck, degenerate inputs and error types.
"""

import warnings

import numpy as np
import pytest
import torch

import adcompile
from difftools import assert_same_error
from test_ops import _differential, _seed

DTYPES = pytest.mark.parametrize("dtype", ["float64", "float32"])
TOL = {"float64": 1e-6, "float32": 2e-3}

ANY, WELL, SPD, CONST = "any", "well", "spd", "const"


def _matrix(shape, kind, rng):
    x = rng.standard_normal(shape)
    if kind == ANY or len(shape) < 2:
        return x
    n = shape[-1]
    if kind == WELL:
        return x + 3 * np.eye(n) if shape[-2] == n else x
    sym = x @ np.swapaxes(x, -1, -2) / n  # SPD, with distinct eigenvalues (almost surely)
    return sym + np.eye(n) * (1 + np.arange(n))


def row(fn, *specs):
    """specs: (shape, kind) or (shape, kind, CONST)."""
    return fn, specs


CASES = {
    # fused products
    "addmv": row(lambda L, b, m, v: L.addmv(b, m, v), ((3,), ANY), ((3, 4), ANY), ((4,), ANY)),
    "addmv_scaled": row(lambda L, b, m, v: L.addmv(b, m, v, beta=0.5, alpha=2),
                        ((), ANY), ((3, 4), ANY), ((4,), ANY)),
    "addmv_method": row(lambda L, b, m, v: b.addmv(m, v), ((3,), ANY), ((3, 4), ANY),
                        ((4,), ANY)),
    "baddbmm": row(lambda L, b, x, y: L.baddbmm(b, x, y), ((2, 3, 5), ANY), ((2, 3, 4), ANY),
                   ((2, 4, 5), ANY)),
    "baddbmm_bcast": row(lambda L, b, x, y: L.baddbmm(b, x, y, beta=2, alpha=0.5),
                         ((3, 1), ANY), ((2, 3, 4), ANY), ((2, 4, 5), ANY)),
    "addbmm": row(lambda L, b, x, y: L.addbmm(b, x, y), ((3, 5), ANY), ((2, 3, 4), ANY),
                  ((2, 4, 5), ANY)),
    "addbmm_scaled": row(lambda L, b, x, y: b.addbmm(x, y, beta=0, alpha=3), ((5,), ANY),
                         ((2, 3, 4), ANY), ((2, 4, 5), ANY)),
    "addmv_const_vec": row(lambda L, b, m, v: L.addmv(b, m, v), ((3,), ANY), ((3, 4), ANY),
                           ((4,), ANY, CONST)),
    # einsum
    "einsum_mm": row(lambda L, a, b: L.einsum("ij,jk->ik", a, b), ((3, 4), ANY), ((4, 5), ANY)),
    "einsum_mv": row(lambda L, a, b: L.einsum("ij,j->i", a, b), ((3, 4), ANY), ((4,), ANY)),
    "einsum_trace": row(lambda L, a: L.einsum("ii->", a), ((4, 4), ANY)),
    "einsum_transpose": row(lambda L, a: L.einsum("ij->ji", a), ((3, 4), ANY)),
    "einsum_sum": row(lambda L, a: L.einsum("ij->", a), ((3, 4), ANY)),
    "einsum_dot": row(lambda L, a, b: L.einsum("i,i->", a, b), ((4,), ANY), ((4,), ANY)),
    "einsum_outer": row(lambda L, a, b: L.einsum("i,j->ij", a, b), ((3,), ANY), ((4,), ANY)),
    "einsum_bmm": row(lambda L, a, b: L.einsum("bij,bjk->bik", a, b), ((2, 3, 4), ANY),
                      ((2, 4, 5), ANY)),
    "einsum_hadamard": row(lambda L, a, b: L.einsum("ij,ij->ij", a, b), ((3, 4), ANY),
                           ((3, 4), ANY)),
    "einsum_abt": row(lambda L, a, b: L.einsum("ij,kj->ik", a, b), ((3, 4), ANY), ((2, 4), ANY)),
    "einsum_ellipsis": row(lambda L, a, b: L.einsum("...j,jk", a, b), ((2, 3, 4), ANY),
                           ((4, 5), ANY)),
    "einsum_batch_dot": row(lambda L, a, b: L.einsum("bi,bi->b", a, b), ((3, 4), ANY),
                            ((3, 4), ANY)),
    "einsum_implicit": row(lambda L, a: L.einsum("ji", a), ((2, 3), ANY)),
    "einsum_frobenius": row(lambda L, a, b: L.einsum("ij,ij->", a, b), ((2, 3), ANY),
                            ((2, 3), ANY)),
    "einsum_list_operands": row(lambda L, a, b: L.einsum("ij,jk", [a, b]), ((2, 3), ANY),
                                ((3, 2), ANY)),
    "einsum_chain4": row(lambda L, a, b, c, d: L.einsum("ij,jk,kl,lm->im", a, b, c, d),
                         ((9, 3), ANY), ((3, 4), ANY), ((4, 5), ANY), ((5, 7), ANY)),
    "einsum_ring4": row(lambda L, a, b, c, d: L.einsum("ab,cd,bc,da->", a, b, c, d),
                        ((2, 3), ANY), ((4, 5), ANY), ((3, 4), ANY), ((5, 2), ANY)),
    "einsum_three_swapped": row(lambda L, a, b, c: L.einsum("ij,jk,kl->li", a, b, c),
                                ((6, 3), ANY), ((3, 7), ANY), ((7, 2), ANY)),
    # norms
    "vector_norm": row(lambda L, x: L.linalg.vector_norm(x), ((3, 4), ANY)),
    "vector_norm_3_dim": row(lambda L, x: L.linalg.vector_norm(x, 3, dim=1), ((3, 4), ANY)),
    "vector_norm_1_keep": row(lambda L, x: L.linalg.vector_norm(x, 1, (0, 1), True),
                              ((3, 4), ANY)),
    "vector_norm_inf": row(lambda L, x: L.linalg.vector_norm(x, float("inf"), -1), ((3, 4), ANY)),
    "vector_norm_ninf": row(lambda L, x: L.linalg.vector_norm(x, -float("inf")), ((5,), ANY)),
    "vector_norm_half": row(lambda L, x: L.linalg.vector_norm(x, 0.5), ((5,), ANY)),
    "vector_norm_0d": row(lambda L, x: L.linalg.vector_norm(x), ((), ANY)),
    "vector_norm_empty": row(lambda L, x: L.linalg.vector_norm(x, dim=1), ((2, 0), ANY)),
    "vector_norm_dtype": row(lambda L, x: L.linalg.vector_norm(x.float(), dtype=L.float64),
                             ((4,), ANY)),
    "matrix_norm_fro": row(lambda L, x: L.linalg.matrix_norm(x), ((2, 3, 4), ANY)),
    "matrix_norm_nuc": row(lambda L, x: L.linalg.matrix_norm(x, "nuc"), ((2, 3, 4), ANY)),
    "matrix_norm_nuc_keep": row(lambda L, x: L.linalg.matrix_norm(x, "nuc", keepdim=True),
                                ((2, 3, 3), ANY)),
    "matrix_norm_2": row(lambda L, x: L.linalg.matrix_norm(x, 2), ((3, 4), ANY)),
    "matrix_norm_m2": row(lambda L, x: L.linalg.matrix_norm(x, -2), ((4, 3), ANY)),
    "matrix_norm_1": row(lambda L, x: L.linalg.matrix_norm(x, 1), ((2, 3, 4), ANY)),
    "matrix_norm_inf_keep": row(lambda L, x: L.linalg.matrix_norm(x, float("inf"), keepdim=True),
                                ((2, 3, 4), ANY)),
    "matrix_norm_m1_dims": row(lambda L, x: L.linalg.matrix_norm(x, -1, dim=(0, 2)),
                               ((3, 2, 4), ANY)),
    "matrix_norm_2_dims": row(lambda L, x: L.linalg.matrix_norm(x, 2, dim=(2, 0)),
                              ((3, 2, 4), ANY)),
    "norm_default": row(lambda L, x: L.linalg.norm(x), ((2, 3, 4), ANY)),
    "norm_vector_ord": row(lambda L, x: L.linalg.norm(x, 3), ((4,), ANY)),
    "norm_matrix_ord": row(lambda L, x: L.linalg.norm(x, float("inf")), ((3, 4), ANY)),
    "norm_fro_str": row(lambda L, x: L.linalg.norm(x, "fro"), ((3, 4), ANY)),
    "norm_dim_pair": row(lambda L, x: L.linalg.norm(x, dim=(1, 2)), ((2, 3, 4), ANY)),
    "norm_dim_int": row(lambda L, x: L.linalg.norm(x, 1, dim=0), ((2, 3), ANY)),
    "torch_norm_nuc": row(lambda L, x: L.norm(x, "nuc"), ((3, 2), ANY)),
    "torch_norm_nuc_dims": row(lambda L, x: x.norm("nuc", dim=(0, 2), keepdim=True),
                               ((3, 2, 4), ANY)),
    # determinants and inverses
    "det": row(lambda L, a: L.linalg.det(a), ((3, 3), WELL)),
    "det_batch": row(lambda L, a: L.linalg.det(a), ((2, 3, 3), ANY)),
    "det_torch": row(lambda L, a: L.det(a), ((3, 3), ANY)),
    "det_method": row(lambda L, a: a.det(), ((2, 2), ANY)),
    "det_1x1": row(lambda L, a: L.linalg.det(a), ((1, 1), ANY)),
    "det_empty": row(lambda L, a: L.linalg.det(a), ((2, 0, 0), ANY)),
    "slogdet": row(lambda L, a: L.linalg.slogdet(a), ((3, 3), ANY)),
    "slogdet_batch": row(lambda L, a: L.linalg.slogdet(a), ((2, 3, 3), WELL)),
    "slogdet_torch": row(lambda L, a: L.slogdet(a)[1], ((3, 3), ANY)),
    "logdet": row(lambda L, a: L.logdet(a), ((3, 3), SPD)),
    "inv": row(lambda L, a: L.linalg.inv(a), ((3, 3), WELL)),
    "inv_batch": row(lambda L, a: L.linalg.inv(a), ((2, 3, 3), WELL)),
    "inverse": row(lambda L, a: L.inverse(a), ((3, 3), WELL)),
    "inverse_method": row(lambda L, a: a.inverse(), ((3, 3), WELL)),
    "inv_ex": row(lambda L, a: L.linalg.inv_ex(a).inverse, ((3, 3), WELL)),
    "inv_empty": row(lambda L, a: L.linalg.inv(a), ((0, 0), ANY)),
    "solve": row(lambda L, a, b: L.linalg.solve(a, b), ((3, 3), WELL), ((3, 2), ANY)),
    "solve_vector": row(lambda L, a, b: L.linalg.solve(a, b), ((3, 3), WELL), ((3,), ANY)),
    "solve_batch_vector": row(lambda L, a, b: L.linalg.solve(a, b), ((2, 3, 3), WELL),
                              ((2, 3), ANY)),
    "solve_broadcast": row(lambda L, a, b: L.linalg.solve(a, b), ((3, 3), WELL),
                           ((2, 3, 2), ANY)),
    "solve_broadcast_a": row(lambda L, a, b: L.linalg.solve(a, b), ((2, 3, 3), WELL),
                             ((3, 1), ANY)),
    "solve_right": row(lambda L, a, b: L.linalg.solve(a, b, left=False), ((3, 3), WELL),
                       ((2, 3), ANY)),
    "solve_const_a": row(lambda L, a, b: L.linalg.solve(a, b), ((3, 3), WELL, CONST),
                         ((3, 2), ANY)),
    # factorizations
    "cholesky": row(lambda L, a: L.linalg.cholesky(a), ((3, 3), SPD)),
    "cholesky_batch": row(lambda L, a: L.linalg.cholesky(a), ((2, 4, 4), SPD)),
    "cholesky_upper": row(lambda L, a: L.linalg.cholesky(a, upper=True), ((3, 3), SPD)),
    "cholesky_legacy": row(lambda L, a: L.cholesky(a), ((3, 3), SPD)),
    "cholesky_legacy_upper_method": row(lambda L, a: a.cholesky(upper=True), ((3, 3), SPD)),
    "cholesky_ex": row(lambda L, a: L.linalg.cholesky_ex(a).L, ((3, 3), SPD)),
    "qr": row(lambda L, a: L.linalg.qr(a), ((4, 3), ANY)),
    "qr_square": row(lambda L, a: L.linalg.qr(a), ((3, 3), ANY)),
    "qr_wide": row(lambda L, a: L.linalg.qr(a), ((2, 4), ANY)),
    "qr_batch": row(lambda L, a: L.linalg.qr(a), ((2, 4, 3), ANY)),
    "qr_only_r": row(lambda L, a: L.linalg.qr(a).R, ((4, 3), ANY)),
    "qr_complete_wide": row(lambda L, a: L.linalg.qr(a, "complete"), ((2, 3), ANY)),
    "eigh": row(lambda L, a: (lambda r: (r[0], r[1] * r[1]))(L.linalg.eigh(a)), ((4, 4), SPD)),
    "eigh_values": row(lambda L, a: L.linalg.eigh(a).eigenvalues, ((3, 3), SPD)),
    "eigh_batch": row(lambda L, a: (lambda r: r[1] * r[1])(L.linalg.eigh(a)), ((2, 3, 3), SPD)),
    "eigh_upper": row(lambda L, a: (lambda r: r[1].abs())(L.linalg.eigh(a, UPLO="U")),
                      ((3, 3), SPD)),
    "eigvalsh": row(lambda L, a: L.linalg.eigvalsh(a), ((3, 3), SPD)),
    "eigh_projector": row(lambda L, a: (lambda r: r[1] @ r[1].mT)(L.linalg.eigh(a)),
                          ((3, 3), SPD)),
    "svd_reconstruct": row(lambda L, a: (lambda r: (r[0] * r[1]) @ r[2])(
        L.linalg.svd(a, full_matrices=False)), ((4, 3), ANY)),
    "svd_values": row(lambda L, a: L.linalg.svd(a)[1], ((3, 4), ANY)),
    "svd_u_squared": row(lambda L, a: (lambda r: r[0] * r[0])(
        L.linalg.svd(a, full_matrices=False)), ((4, 3), ANY)),
    "svd_vh_squared": row(lambda L, a: (lambda r: r[2] * r[2])(
        L.linalg.svd(a, full_matrices=False)), ((3, 4), ANY)),
    "svd_u_wide": row(lambda L, a: (lambda r: r[0] * r[0])(
        L.linalg.svd(a, full_matrices=False)), ((3, 5), ANY)),
    "svd_vh_tall": row(lambda L, a: (lambda r: r[2] * r[2])(
        L.linalg.svd(a, full_matrices=False)), ((5, 3), ANY)),
    "svd_full_u": row(lambda L, a: (lambda r: r[0][..., :3] * r[0][..., :3])(L.linalg.svd(a)),
                      ((4, 3), ANY)),
    "svd_batch": row(lambda L, a: (lambda r: (r[0] * r[1].unsqueeze(-2)) @ r[2])(
        L.linalg.svd(a, full_matrices=False)), ((2, 3, 3), ANY)),
    "svdvals": row(lambda L, a: L.linalg.svdvals(a), ((3, 4), ANY)),
    "lstsq": row(lambda L, a, b: L.linalg.lstsq(a, b).solution, ((4, 2), ANY), ((4, 3), ANY)),
    "lstsq_vector": row(lambda L, a, b: L.linalg.lstsq(a, b).solution, ((4, 2), ANY),
                        ((4,), ANY)),
    "lstsq_wide": row(lambda L, a, b: L.linalg.lstsq(a, b)[0], ((2, 4), ANY), ((2, 1), ANY)),
    "lstsq_batch": row(lambda L, a, b: L.linalg.lstsq(a, b).solution, ((2, 4, 3), ANY),
                       ((2, 4, 2), ANY)),
    "lstsq_broadcast": row(lambda L, a, b: L.linalg.lstsq(a, b).solution, ((2, 4, 3), ANY),
                           ((1, 4, 2), ANY)),
    "svd_empty": row(lambda L, a: L.linalg.svdvals(a), ((2, 0, 3), ANY)),
    "eigh_empty": row(lambda L, a: L.linalg.eigvalsh(a), ((0, 0), ANY)),
    "cholesky_empty": row(lambda L, a: L.linalg.cholesky(a), ((2, 0, 0), ANY)),
    "qr_empty": row(lambda L, a: L.linalg.qr(a).R, ((3, 0), ANY)),
    "solve_empty_rhs": row(lambda L, a, b: L.linalg.solve(a, b), ((3, 3), WELL), ((3, 0), ANY)),
    "slogdet_empty": row(lambda L, a: L.linalg.slogdet(a)[1], ((0, 0), ANY)),
    "einsum_empty": row(lambda L, a, b: L.einsum("ij,jk->ik", a, b), ((2, 0), ANY),
                        ((0, 3), ANY)),
    "einsum_0d": row(lambda L, a, b: L.einsum(",i->i", a, b), ((), ANY), ((3,), ANY)),
    "einsum_broadcast_ellipsis": row(lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b),
                                     ((2, 1, 3, 4), ANY), ((3, 4, 2), ANY)),
    "einsum_repeated_output_diag": row(lambda L, a: L.einsum("iij->ji", a), ((3, 3, 2), ANY)),
    "einsum_chain3": row(lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c), ((2, 3), ANY),
                         ((3, 4), ANY), ((4, 5), ANY)),
    "einsum_three_mul": row(lambda L, a, b, c: L.einsum("ij,j,k->ik", a, b, c), ((2, 3), ANY),
                            ((3,), ANY), ((4,), ANY)),
    "einsum_label_in_one": row(lambda L, a, b: L.einsum("ij,jk->i", a, b), ((2, 3), ANY),
                               ((3, 4), ANY)),
    "einsum_diag_contract": row(lambda L, a, b: L.einsum("ii,ij->j", a, b), ((3, 3), ANY),
                                ((3, 2), ANY)),
    "einsum_batch_outer3": row(lambda L, a, b, c: L.einsum("bi,bj,bk->bijk", a, b, c),
                               ((2, 2), ANY), ((2, 3), ANY), ((2, 1), ANY)),
    "einsum_sublist": row(lambda L, a, b: L.einsum(a, [0, 1], b, [1, 2], [0, 2]), ((2, 3), ANY),
                          ((3, 2), ANY)),
    "lstsq_square": row(lambda L, a, b: L.linalg.lstsq(a, b).solution, ((3, 3), WELL),
                        ((3, 2), ANY)),
}


def _inputs(specs, dtype, seed):
    rng = np.random.default_rng(seed)
    return [(_matrix(s[0], s[1], rng), dtype, CONST not in s[2:]) for s in specs]


@DTYPES
@pytest.mark.parametrize("name", list(CASES))
def test_linalg_op(name, dtype):
    fn, specs = CASES[name]
    seed = _seed(name)
    _differential(fn, _inputs(specs, dtype, seed), seed, TOL[dtype])


# -- second derivatives (create_graph) ----------------------------------------------------------

SECOND = ["addmv", "baddbmm", "addbmm", "einsum_mm", "einsum_trace", "einsum_outer",
          "vector_norm", "vector_norm_3_dim", "matrix_norm_nuc", "matrix_norm_2", "matrix_norm_1",
          "det", "det_batch", "slogdet_torch", "logdet", "inv", "solve", "solve_vector",
          "solve_right", "cholesky", "cholesky_upper", "qr", "qr_wide", "eigh", "eigvalsh",
          "eigh_projector", "svd_reconstruct", "svd_u_squared", "svd_vh_squared", "svdvals",
          "lstsq", "lstsq_wide"]


def _second(lib, name):
    fn, specs = CASES[name]
    arrays = [a for a, _, _ in _inputs(specs, "float64", _seed(name, "d2"))]
    xs = [lib.tensor(a, requires_grad=CONST not in s[2:]) for a, s in zip(arrays, specs)]
    leaves = [x for x in xs if x.requires_grad]
    outs = fn(lib, *xs)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    rng = np.random.default_rng(2)
    total = sum((o * lib.tensor(rng.standard_normal(tuple(o.shape)))).sum() for o in outs)
    grads = lib.autograd.grad(total, leaves, create_graph=True)
    first = [g.detach().numpy().copy() for g in grads]
    rng = np.random.default_rng(3)
    live = [g for g in grads if g.requires_grad]
    if not live:  # linear in the inputs: no second derivative
        return first, [np.zeros(x.shape) for x in leaves]
    inner = sum((g * lib.tensor(rng.standard_normal(tuple(g.shape)))).sum() for g in live)
    second = lib.autograd.grad(inner, leaves, allow_unused=True)
    return first, [np.zeros(x.shape) if s is None else
                   (s.numpy(force=True) if lib is torch else s.numpy()).copy()
                   for s, x in zip(second, leaves)]


@pytest.mark.parametrize("name", SECOND)
def test_linalg_second_derivative(name):
    t_first, t_second = _second(torch, name)
    o_first, o_second = _second(adcompile, name)
    for a, b in zip(o_first + o_second, t_first + t_second):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


# -- gradcheck: every differentiable op against finite differences ------------------------------

GRADCHECK = [n for n in CASES if "empty" not in n and "inf" not in n and n != "matrix_norm_1"
             and "broadcast_ellipsis" not in n
             and "ninf" not in n and n != "norm_matrix_ord" and n != "vector_norm_dtype"
             and n != "matrix_norm_m1_dims"]


def _checkable(name):
    """(function, float64 inputs) of a row for gradcheck / gradgradcheck."""
    fn, specs = CASES[name]
    inputs = tuple(adcompile.tensor(a, requires_grad=rg) for a, _, rg in
                   _inputs(specs, "float64", _seed(name)))

    def f(*xs):
        # eigh and cholesky read one triangle: differentiate a symmetric function of the input
        xs = [(x + x.mT) / 2 if s[1] == SPD else x for x, s in zip(xs, specs)]
        return fn(adcompile, *xs)

    return f, inputs


@pytest.mark.parametrize("name", GRADCHECK)
def test_linalg_gradcheck(name):
    f, inputs = _checkable(name)
    assert adcompile.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)


# -- degenerate inputs: PyTorch's documented inf / nan / zero behaviour ---------------------------

def _grads(lib, make, fn, create_graph=False):
    x = lib.tensor(make(), requires_grad=True)
    out = fn(lib, x)
    (g,) = lib.autograd.grad(out, x, create_graph=create_graph)
    return g.detach().numpy()


SINGULAR = lambda: np.array([[1.0, 2.0], [2.0, 4.0]])  # noqa: E731
EYE = lambda: np.eye(3)  # noqa: E731
# (singular matrices whose det is exactly 0.0 in PyTorch as in numpy: where rounding in LU
# leaves a det of 1e-16, PyTorch's plain path computes det * A^-T, which is then noise)
RANK_2 = lambda: np.array([[2.0, 1.0, 0.0], [4.0, 2.0, 0.0], [1.0, 1.0, 1.0]])  # noqa: E731
RANK_1 = lambda: np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])  # noqa: E731
DEGENERATE = {
    "det_singular": (SINGULAR, lambda L, a: L.linalg.det(a), False),
    "det_singular_create_graph": (SINGULAR, lambda L, a: L.linalg.det(a), True),
    "det_zero_create_graph": (lambda: np.zeros((3, 3)), lambda L, a: L.linalg.det(a), True),
    "slogdet_singular": (SINGULAR, lambda L, a: L.linalg.slogdet(a)[1], False),
    "eigh_repeated_vectors": (EYE, lambda L, a: (L.linalg.eigh(a)[1] * L.arange(9.0)
                                                   .reshape(3, 3).double()).sum(), False),
    "eigh_repeated_values": (EYE, lambda L, a: L.linalg.eigh(a)[0].sum(), False),
    "svd_repeated_values": (EYE, lambda L, a: L.linalg.svd(a)[1].sum(), False),
    "svd_repeated_vectors": (EYE, lambda L, a: L.linalg.svd(a)[0].sum(), False),
    "vector_norm_zero": (lambda: np.zeros(3), lambda L, x: L.linalg.vector_norm(x), False),
    "vector_norm_inf_ties": (lambda: np.array([1.0, -3.0, 3.0]),
                             lambda L, x: L.linalg.vector_norm(x, float("inf")), False),
    "vector_norm_half_zero": (lambda: np.array([0.0, 2.0]),
                              lambda L, x: L.linalg.vector_norm(x, 0.5), False),
    "matrix_norm_2_ties": (lambda: np.diag([2.0, 2.0, 1.0]),
                           lambda L, x: L.linalg.matrix_norm(x, 2), False),
    "qr_zero_column": (lambda: np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]),
                       lambda L, a: L.linalg.qr(a).R.sum(), False),
    "qr_zero_column_create_graph": (lambda: np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]),
                                    lambda L, a: L.linalg.qr(a).R.sum(), True),
    "lstsq_rank_deficient": (lambda: np.array([[1.0, 2.0], [2.0, 4.0], [1.0, 2.0]]),
                             lambda L, a: L.linalg.lstsq(a, L.ones(3, 1, dtype=L.float64))
                             .solution.sum(), False),
    "lstsq_rank_deficient_create_graph": (
        lambda: np.array([[1.0, 2.0], [2.0, 4.0], [1.0, 2.0]]),
        lambda L, a: L.linalg.lstsq(a, L.ones(3, 1, dtype=L.float64)).solution.sum(), True),
    # rank n - 1 (the cofactor matrix is rank 1) and n - 2 (it is 0); PyTorch's plain path
    # gives 0 at an exact zero pivot, its create_graph path the cofactor matrix (by SVD)
    "det_rank_n-1": (RANK_2, lambda L, a: L.linalg.det(a), False),
    "det_rank_n-1_create_graph": (RANK_2, lambda L, a: L.linalg.det(a), True),
    "det_rank_n-2": (RANK_1, lambda L, a: L.linalg.det(a), False),
    "det_rank_n-2_create_graph": (RANK_1, lambda L, a: L.linalg.det(a), True),
    "det_batch_ranks": (lambda: np.stack([RANK_2(), RANK_1(), np.diag([1.0, 2.0, 3.0])]),
                        lambda L, a: L.linalg.det(a).sum(), False),
    "det_batch_ranks_create_graph": (
        lambda: np.stack([RANK_2(), RANK_1(), np.diag([1.0, 2.0, 3.0])]),
        lambda L, a: L.linalg.det(a).sum(), True),
    "det_batch_one_singular": (lambda: np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]),
                               lambda L, a: L.linalg.det(a).sum(), False),
    "det_batch_one_singular_create_graph": (
        lambda: np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]),
        lambda L, a: L.linalg.det(a).sum(), True),
}


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_degenerate_gradient(name):
    make, fn, create_graph = DEGENERATE[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _grads(adcompile, make, fn, create_graph)
        theirs = _grads(torch, make, fn, create_graph)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)


def test_vector_norm_zero_order_has_no_gradient():
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, 0.0], requires_grad=True)
        with pytest.raises(RuntimeError):
            lib.autograd.grad(lib.linalg.vector_norm(x, 0), x)


def test_result_fields_and_lstsq_extras():
    a = np.random.default_rng(0).standard_normal((4, 2))
    b = np.random.default_rng(1).standard_normal((4, 3))
    for name in ("linalg_eigh", "linalg_svd", "linalg_qr", "linalg_slogdet", "linalg_lstsq"):
        assert name in ("linalg_eigh", "linalg_svd", "linalg_qr", "linalg_slogdet",
                        "linalg_lstsq")
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
    ours = adcompile.linalg.lstsq(adcompile.tensor(a), adcompile.tensor(b))
    assert type(ours).__name__ == type(theirs).__name__
    assert int(ours.rank) == int(theirs.rank)
    assert tuple(ours.residuals.shape) == tuple(theirs.residuals.shape)
    ours_eigh = adcompile.linalg.eigh(adcompile.eye(2))
    assert (ours_eigh.eigenvalues is ours_eigh[0]) and type(ours_eigh).__name__ == "linalg_eigh"
    info = adcompile.linalg.cholesky_ex(-adcompile.eye(2)).info
    assert int(info) == int(torch.linalg.cholesky_ex(-torch.eye(2)).info)
    assert int(adcompile.linalg.inv_ex(adcompile.zeros(2, 2)).info) == \
        int(torch.linalg.inv_ex(torch.zeros(2, 2)).info)


# -- error types --------------------------------------------------------------------------------

ERRORS = {
    "inv_singular": lambda L: L.linalg.inv(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "inverse_singular": lambda L: L.inverse(L.zeros(3, 3)),
    "solve_singular": lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)),
    "cholesky_not_pd": lambda L: L.linalg.cholesky(-L.eye(2)),
    "det_not_square": lambda L: L.linalg.det(L.ones(2, 3)),
    "det_1d": lambda L: L.linalg.det(L.ones(3)),
    "det_int": lambda L: L.linalg.det(L.ones(2, 2, dtype=L.int64)),
    "inv_not_square": lambda L: L.linalg.inv(L.ones(3, 2)),
    "eigh_not_square": lambda L: L.linalg.eigh(L.ones(3, 2)),
    "svd_1d": lambda L: L.linalg.svd(L.ones(3)),
    "qr_int": lambda L: L.linalg.qr(L.ones(2, 2, dtype=L.int64)),
    "qr_bad_mode": lambda L: L.linalg.qr(L.ones(2, 2), mode="x"),
    "solve_shape": lambda L: L.linalg.solve(L.eye(3), L.ones(2)),
    "solve_dtype": lambda L: L.linalg.solve(L.eye(2), L.ones(2, dtype=L.float64)),
    "vector_norm_int": lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)),
    "vector_norm_inf_empty": lambda L: L.linalg.vector_norm(L.zeros(0), float("inf")),
    "vector_norm_str": lambda L: L.linalg.vector_norm(L.ones(2), "fro"),
    "matrix_norm_1d": lambda L: L.linalg.matrix_norm(L.ones(3)),
    "matrix_norm_order": lambda L: L.linalg.matrix_norm(L.ones(2, 2), 3),
    "norm_3d_with_ord": lambda L: L.linalg.norm(L.ones(2, 2, 2), 2),
    "norm_fro_one_dim": lambda L: L.linalg.norm(L.ones(2, 2), "fro", dim=0),
    "qr_r_backward": lambda L: L.linalg.qr(L.ones(3, 2, requires_grad=True), "r").R.sum()
    .backward(),
    "einsum_bad_label": lambda L: L.einsum("i1,i->", L.ones(2), L.ones(2)),
    "einsum_operand_count": lambda L: L.einsum("i,i->", L.ones(2)),
    "einsum_rank": lambda L: L.einsum("ij->", L.ones(2)),
    "einsum_size_mismatch": lambda L: L.einsum("i,i->", L.ones(2), L.ones(3)),
    "addmv_shape": lambda L: L.addmv(L.ones(3), L.ones(3, 4), L.ones(3)),
    "baddbmm_batch": lambda L: L.baddbmm(L.ones(2, 3, 5), L.ones(2, 3, 4), L.ones(3, 4, 5)),
    "addbmm_ndim": lambda L: L.addbmm(L.ones(3, 5), L.ones(3, 4), L.ones(4, 5)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_linalg_error_type(name):
    assert_same_error(ERRORS[name])


def test_linalg_error_is_runtime_error_subclass():
    assert issubclass(adcompile.linalg.LinAlgError, RuntimeError)
    with pytest.raises(adcompile.linalg.LinAlgError):
        adcompile.linalg.inv(adcompile.zeros(2, 2))


GRADGRADCHECK = ["det", "slogdet_torch", "inv", "cholesky", "qr", "eigh_projector",
                 "svd_reconstruct", "svdvals", "lstsq", "einsum_chain3", "matrix_norm_nuc"]


@pytest.mark.parametrize("name", GRADGRADCHECK)
def test_linalg_gradgradcheck(name):
    """Second derivatives against finite differences of the first (no torch involved)."""
    f, inputs = _checkable(name)
    assert adcompile.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-4)


# einsum with three or more operands: the contraction order (opt_einsum's path when
# torch.backends.opt_einsum is enabled, left to right when not) shows in the whole graph
EINSUM_PATHS = [
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 6)]),
    ("ij,jk,kl,lm->im", [(9, 3), (3, 4), (4, 5), (5, 7)]),
    ("ab,bc,cd,de,ef->af", [(2, 9), (9, 3), (3, 8), (8, 2), (2, 2)]),
    ("ab,cd,bc,da->", [(2, 3), (4, 5), (3, 4), (5, 2)]),
    ("i,i,i,i->", [(4,), (4,), (4,), (4,)]),
    ("bij,bjk,bkl,bl->bi", [(2, 3, 4), (2, 4, 5), (2, 5, 6), (2, 6)]),
    ("ij,kl,jk->il", [(7, 2), (3, 9), (2, 3)]),
    ("ij,jk,kl->li", [(20, 3), (3, 40), (40, 5)]),
    ("...ij,jk,kl,lm", [(2, 3, 4), (4, 5), (5, 6), (6, 2)]),
    ("iij,jk,k,kl->il", [(3, 3, 4), (4, 5), (5,), (5, 2)]),
    ("ab,ac,ad,ae,af,ag->", [(2, 3), (2, 4), (2, 2), (2, 5), (2, 3), (2, 2)]),
]


def _graph_walk(fn):
    """Node names depth first along next_functions (None edges included)."""
    if fn is None:
        return [None]
    names = [type(fn).__name__]
    for child, _ in fn.next_functions:
        names += _graph_walk(child)
    return names


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("case", range(len(EINSUM_PATHS)))
def test_einsum_contraction_order_graph(case, enabled):
    equation, shapes = EINSUM_PATHS[case]
    rng = np.random.default_rng(case)
    arrays = [rng.standard_normal(s) for s in shapes]
    seen = []
    for L in (torch, adcompile):
        saved = L.backends.opt_einsum.enabled
        L.backends.opt_einsum.enabled = enabled
        try:
            xs = [L.tensor(a, requires_grad=True) for a in arrays]
            y = L.einsum(equation, *xs)
            (y * y).sum().backward()
            seen.append((_graph_walk(y.grad_fn), y.detach().numpy(),
                         [x.grad.numpy() for x in xs]))
        finally:
            L.backends.opt_einsum.enabled = saved
    (want_graph, want, want_grads), (graph, got, grads) = seen
    assert graph == want_graph
    np.testing.assert_allclose(got, want, rtol=1e-10)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10)
