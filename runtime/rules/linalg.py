"""Derivative rules of linear-algebra primitives: each states its transpose.

For complex operands the transpose is the conjugate transpose, as PyTorch's: d(a b) gives
a the cotangent g conj(b) (`_mH` and `ops.conj` below; on real values, and on the compiler's
real IR values, both are the plain transpose and no code).
"""

import numpy as np

from runtime.rules import rule


@rule("dot")
def dot(ops, g, needs, a, b):
    return (ops.mul(g, ops.conj(b)) if needs[0] else None,
            ops.mul(g, ops.conj(a)) if needs[1] else None)


@rule("linalg_cross")
def linalg_cross(ops, g, needs, a, b, dim):
    """The cross product is bilinear: a gets b x g and b gets g x a (conjugated operands
    for complex values)."""
    return (ops.cross(ops.conj(b), g, dim) if needs[0] else None,
            ops.cross(g, ops.conj(a), dim) if needs[1] else None)


@rule("vdot")
def vdot(ops, g, needs, a, b):
    """vdot(a, b) = sum(conj(a) * b): a's gradient conjugates g (for real tensors, dot's)."""
    return (ops.mul(ops.conj(g), b) if needs[0] else None, ops.mul(g, a) if needs[1] else None)


def _mH(ops, x):
    """The conjugate transpose of the last two axes (the transpose of real values)."""
    return ops.conj(ops.mT(x))


@rule("mm", "bmm")
def mm(ops, g, needs, a, b, a_colmajor=False, b_colmajor=False):
    ga = _product(ops, g, _mH(ops, b), a_colmajor) if needs[0] else None
    gb = _product(ops, _mH(ops, a), g, b_colmajor) if needs[1] else None
    return ga, gb


def _product(ops, x, y, colmajor):
    """x @ y; computed as (y.T @ x.T).T when the input it is the gradient of is column-major
    (e.g. weight.t()), so the gradient gets the same memory layout as that input."""
    if colmajor:
        return ops.mT(ops.matmul(ops.mT(y), ops.mT(x)))
    return ops.matmul(x, y)


@rule("mv")
def mv(ops, g, needs, m, v):
    gm = ops.outer(g, ops.conj(v)) if needs[0] else None
    gv = ops.matmul(_mH(ops, m), g) if needs[1] else None
    return gm, gv


@rule("addmm")
def addmm(ops, g, needs, m1, m2, beta, alpha, m1_colmajor=False, m2_colmajor=False):
    gbias = _scale(ops, g, beta) if needs[0] else None
    g1 = _scale(ops, _product(ops, g, _mH(ops, m2), m1_colmajor), alpha) if needs[1] else None
    g2 = _scale(ops, _product(ops, _mH(ops, m1), g, m2_colmajor), alpha) if needs[2] else None
    return gbias, g1, g2


def _scale(ops, g, factor):
    """g times the conjugate of a scalar factor (beta, alpha) of the forward."""
    return g if factor == 1 else ops.mul(g, ops.conj(factor))


@rule("matmul")
def matmul(ops, g, needs, a, b):
    """numpy's a @ b: a 1-d left operand is a row, a 1-d right operand a column, and the axis
    they add is not in the result. (Batch axes that were broadcast are summed by the caller.)"""
    ga = gb = None
    if ops.ndim(a) == 1 and ops.ndim(b) == 1:
        return dot(ops, g, needs, a, b)
    a, b = ops.conj(a), ops.conj(b)
    if ops.ndim(a) == 1:
        ga = ops.matmul(b, g) if needs[0] else None  # b (k, n) @ g (n,)
        gb = ops.outer(a, g) if needs[1] else None
    elif ops.ndim(b) == 1:
        ga = ops.outer(g, b) if needs[0] else None
        gb = ops.matmul(ops.mT(a), g) if needs[1] else None
    else:
        ga = ops.matmul(g, ops.mT(b)) if needs[0] else None
        gb = ops.matmul(ops.mT(a), g) if needs[1] else None
    return ga, gb


@rule("det")
def det(ops, g, needs, a, result):
    """d det(A) = tr(adj(A) dA): the cotangent is g adj(A)^T, the cofactor matrix (det(A)
    A^-T where A is invertible; at a singular A too, where it is 0 below rank n - 1)."""
    return (ops.mul(g, ops.cofactor(a)),)


@rule("cofactor")
def cofactor(ops, g, needs, a, result):
    """C = det(A) A^-T: dC = tr(A^-1 dA) C - C dA^T A^-T, so A's cotangent is
    <G, C> A^-T - A^-T G^T C (A invertible: the second derivative of det)."""
    inv_t = ops.mT(ops.inv(a))
    first = ops.mul(ops.sum(ops.mul(g, result)), inv_t)
    return (ops.sub(first, ops.matmul(ops.matmul(inv_t, ops.mT(g)), result)),)


@rule("inv")
def inv(ops, g, needs, result):
    """d A^-1 = -A^-1 dA A^-1: the cotangent is -A^-T g A^-T."""
    inv_t = ops.mT(result)
    return (ops.neg(ops.matmul(ops.matmul(inv_t, g), inv_t)),)


@rule("solve")
def solve(ops, g, needs, a, x):
    """x = A^-1 b: b's cotangent solves A^T gb = g, and A's is -gb x^T."""
    gb = ops.solve(ops.mT(a), g)
    ga = None
    if needs[0]:
        ga = ops.neg(ops.outer(gb, x) if ops.ndim(x) == 1 else ops.matmul(gb, ops.mT(x)))
    return ga, (gb if needs[1] else None)


@rule("addmv")
def addmv(ops, g, needs, mat, vec, beta, alpha):
    gin = _scale(ops, g, beta) if needs[0] else None
    gmat = _scale(ops, ops.outer(g, ops.conj(vec)), alpha) if needs[1] else None
    gvec = _scale(ops, ops.matmul(_mH(ops, mat), g), alpha) if needs[2] else None
    return gin, gmat, gvec


@rule("addr")
def addr(ops, g, needs, vec1, vec2, beta, alpha):
    gin = _scale(ops, g, beta) if needs[0] else None
    g1 = _scale(ops, ops.matmul(g, ops.conj(vec2)), alpha) if needs[1] else None
    g2 = _scale(ops, ops.matmul(ops.conj(vec1), g), alpha) if needs[2] else None
    return gin, g1, g2


@rule("baddbmm")
def baddbmm(ops, g, needs, b1, b2, beta, alpha):
    gin = _scale(ops, g, beta) if needs[0] else None
    g1 = _scale(ops, ops.matmul(g, _mH(ops, b2)), alpha) if needs[1] else None
    g2 = _scale(ops, ops.matmul(_mH(ops, b1), g), alpha) if needs[2] else None
    return gin, g1, g2


@rule("addbmm")
def addbmm(ops, g, needs, b1, b2, beta, alpha, batch):
    """input + sum_b b1[b] @ b2[b]: every batch entry sees the same cotangent."""
    gin = _scale(ops, g, beta) if needs[0] else None
    shape = ops.shape(g)
    gb = ops.expand(ops.unsqueeze(g, 0), (batch,) + tuple(shape))
    g1 = _scale(ops, ops.matmul(gb, _mH(ops, b2)), alpha) if needs[1] else None
    g2 = _scale(ops, ops.matmul(_mH(ops, b1), gb), alpha) if needs[2] else None
    return gin, g1, g2


@rule("reduce_extreme")
def reduce_extreme(ops, g, needs, x, result, dim, keepdim):
    """amax/amin along one dimension (matrix norms): ties share the cotangent evenly."""
    if not keepdim:
        g, result = ops.unsqueeze(g, dim), ops.unsqueeze(result, dim)
    hit = ops.cast_like(ops.eq(x, result), g)
    return (ops.div(ops.mul(g, hit), ops.sum_dim(hit, dim, True)),)


@rule("diagonal_dims")
def diagonal_dims(ops, g, needs, shape, dim1, dim2):
    """diagonal(x, 0, dim1, dim2) (its values on a new last axis): the cotangent goes back onto
    the diagonal of a zero tensor of the input's shape."""
    n = ops.shape(g)[-1]
    square = ops.where(np.eye(n, dtype=bool), ops.unsqueeze(g, -1), 0.0)
    rest = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    order = [0] * len(shape)
    for src, dst in enumerate(rest + [dim1, dim2]):
        order[dst] = src
    return (ops.permute(square, tuple(order)),)
