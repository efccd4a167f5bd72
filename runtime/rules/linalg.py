"""Derivative rules of linear-algebra primitives: each states its transpose."""

from runtime.rules import rule


@rule("dot")
def dot(ops, g, needs, a, b):
    return (ops.mul(g, b) if needs[0] else None, ops.mul(g, a) if needs[1] else None)


@rule("mm", "bmm")
def mm(ops, g, needs, a, b, a_colmajor=False, b_colmajor=False):
    ga = _product(ops, g, ops.mT(b), a_colmajor) if needs[0] else None
    gb = _product(ops, ops.mT(a), g, b_colmajor) if needs[1] else None
    return ga, gb


def _product(ops, x, y, colmajor):
    """x @ y; computed as (y.T @ x.T).T when the input it is the gradient of is column-major
    (e.g. weight.t()), so the gradient gets the same memory layout as that input."""
    if colmajor:
        return ops.mT(ops.matmul(ops.mT(y), ops.mT(x)))
    return ops.matmul(x, y)


@rule("mv")
def mv(ops, g, needs, m, v):
    gm = ops.outer(g, v) if needs[0] else None
    gv = ops.matmul(ops.mT(m), g) if needs[1] else None
    return gm, gv


@rule("addmm")
def addmm(ops, g, needs, m1, m2, beta, alpha, m1_colmajor=False, m2_colmajor=False):
    gbias = _scale(ops, g, beta) if needs[0] else None
    g1 = _scale(ops, _product(ops, g, ops.mT(m2), m1_colmajor), alpha) if needs[1] else None
    g2 = _scale(ops, _product(ops, ops.mT(m1), g, m2_colmajor), alpha) if needs[2] else None
    return gbias, g1, g2


def _scale(ops, g, factor):
    return g if factor == 1 else ops.mul(g, factor)
