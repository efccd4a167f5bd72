"""Derivative rules of linear-algebra primitives: each states its transpose."""

from runtime.rules import rule


@rule("dot")
def dot(ops, g, needs, a, b):
    return (ops.mul(g, b) if needs[0] else None, ops.mul(g, a) if needs[1] else None)


@rule("mm", "bmm")
def mm(ops, g, needs, a, b):
    ga = ops.matmul(g, ops.mT(b)) if needs[0] else None
    gb = ops.matmul(ops.mT(a), g) if needs[1] else None
    return ga, gb


@rule("mv")
def mv(ops, g, needs, m, v):
    gm = ops.outer(g, v) if needs[0] else None
    gv = ops.matmul(ops.mT(m), g) if needs[1] else None
    return gm, gv


@rule("addmm")
def addmm(ops, g, needs, m1, m2, beta, alpha):
    gbias = _scale(ops, g, beta) if needs[0] else None
    g1 = _scale(ops, ops.matmul(g, ops.mT(m2)), alpha) if needs[1] else None
    g2 = _scale(ops, ops.matmul(ops.mT(m1), g), alpha) if needs[2] else None
    return gbias, g1, g2


def _scale(ops, g, factor):
    return g if factor == 1 else ops.mul(g, factor)
