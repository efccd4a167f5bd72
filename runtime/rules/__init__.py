"""THE derivative rules of adcompile, written once against an abstract `ops` namespace.

A rule is `rule(ops, g, needs, *args) -> tuple`, one entry per differentiable input of the
primitive (None where `needs[i]` is False or the input gets no gradient). `g` is the cotangent
of the output (a tuple of cotangents, some None, for multi-output primitives); `args` are the
values the forward pass saved, in the primitive's own order.

The same rule runs three ways: with `NUMPY_OPS` it is the eager backward, with `TENSOR_OPS` it
records a differentiable graph (`create_graph=True`, double backward), and with the compiler's
IR builder it will emit adjoint code. Rules never reduce broadcast dimensions or cast dtypes:
the caller fits each gradient to its input's shape and dtype with `ops.sum_to` / `ops.cast`.

Elementwise rules state partial derivatives; linear rules state their transpose.
"""

RULES = {}


def rule(*names):
    """Register the decorated function as the vjp rule of each primitive in `names`."""

    def register(fn):
        for name in names:
            if name in RULES:
                raise ValueError(f"two derivative rules for primitive {name!r}")
            RULES[name] = fn
        return fn

    return register


from runtime.rules import elementwise, reductions, linalg, shape  # noqa: E402,F401
from runtime.rules import special, scans, indexing  # noqa: E402,F401  (issue 16 families)
from runtime.rules import decompositions  # noqa: E402,F401
from runtime.rules import conv  # noqa: E402,F401
from runtime.rules import activation  # noqa: E402,F401
from runtime.rules import norm  # noqa: E402,F401
from runtime.rules import rnn  # noqa: E402,F401
from runtime.rules import attention  # noqa: E402,F401
from runtime.rules import distance  # noqa: E402,F401
