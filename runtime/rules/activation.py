"""Derivative rules of the nn activations and of embedding lookup.

Elementwise rules give the partial derivative times g. GELU's rule takes the normal CDF
the forward pass computed as a constant tensor (no erf op exists yet in the ops namespaces),
so its first derivative is exact and its second derivative lacks the CDF's own term.
"""

import math

from runtime.rules import rule


def _sigmoid(ops, x):
    return ops.pow(ops.add(ops.exp(ops.neg(x)), 1.0), -1.0)


@rule("silu")
def silu(ops, g, needs, x):
    s = _sigmoid(ops, x)
    return (ops.mul(g, ops.mul(s, ops.add(ops.mul(x, ops.rsub(s, 1.0)), 1.0))),)


@rule("leaky_relu")
def leaky_relu(ops, g, needs, x, slope):
    return (ops.where(ops.gt(x, 0.0), g, ops.mul(g, slope)),)


@rule("elu")
def elu(ops, g, needs, x, alpha):
    return (ops.where(ops.gt(x, 0.0), g, ops.mul(g, ops.mul(ops.exp(x), alpha))),)


@rule("softplus")
def softplus(ops, g, needs, x, beta, threshold):
    bx = ops.mul(x, beta)
    return (ops.where(ops.gt(bx, threshold), g, ops.mul(g, _sigmoid(ops, bx))),)


def _gelu_erf(ops, x, cdf):
    if cdf is None:  # not saved where the forward was oneDNN's
        cdf = ops.mul(ops.add(ops.erf(ops.mul(x, math.sqrt(0.5))), 1.0), 0.5)
    pdf = ops.mul(ops.exp(ops.mul(ops.mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return ops.add(cdf, ops.mul(x, pdf))


def _gelu_tanh(ops, x, inner_tanh):
    """d/dx 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)."""
    k = math.sqrt(2.0 / math.pi)
    du = ops.mul(ops.add(ops.mul(ops.mul(x, x), 3 * 0.044715), 1.0), k)
    sech2 = ops.rsub(ops.mul(inner_tanh, inner_tanh), 1.0)
    return ops.add(ops.mul(ops.add(inner_tanh, 1.0), 0.5), ops.mul(ops.mul(x, 0.5),
                                                                   ops.mul(sech2, du)))


_GELU_PARTIAL = {"none": _gelu_erf, "tanh": _gelu_tanh}


@rule("gelu")
def gelu(ops, g, needs, x, saved, approximate):
    """`saved` is the forward's normal CDF (exact form; None where not kept) or tanh of the
    inner term;
    `ops.gelu_slope` answers with PyTorch's bits where it knows them (None elsewhere)."""
    slope = ops.gelu_slope(x, approximate)
    if slope is None:
        slope = _GELU_PARTIAL[approximate](ops, x, saved)
    return (ops.mul(g, slope),)


@rule("embedding")
def embedding(ops, g, needs, shape, kept, rows):
    """Rows of g for the kept (non-padding) indices are added into the weight's rows."""
    g2 = ops.getitem(ops.reshape(g, (-1, shape[1])), kept)
    return (ops.embed_add(g2, shape, rows),)
