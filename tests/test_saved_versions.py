"""Which operands a multi-input op saves for backward, seen through the version check, against
PyTorch 2.13: each op runs with every pattern of its two operands requiring grad, then one of
the operands (or the result) is changed in place, and backward must raise or succeed as in
PyTorch.

PyTorch's autograd code generator saves a tensor only when the gradient that reads it is
needed, but only where exactly one input's formula reads it; a tensor read by two formulas
(addcdiv's tensor2, div's divisor, maximum's operands) is saved whatever requires grad. The
eager fuzzer found addcdiv saving its tensor2 only when a factor required grad."""


import pytest
import torch

import adcompile as ac

OPS = {
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "sub": lambda L, a, b: a - b,
    "pow": lambda L, a, b: L.pow(a, b),
    "float_power": lambda L, a, b: L.float_power(a, b),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b),
    "xlogy": lambda L, a, b: L.xlogy(a, b),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "hypot": lambda L, a, b: L.hypot(a, b),
    "fmod": lambda L, a, b: L.fmod(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b),
    "lerp_end": lambda L, a, b: L.lerp(a, b, b),
    "lerp_weight": lambda L, a, b: L.lerp(b, b, a),
    "addcdiv_factor": lambda L, a, b: L.addcdiv(b, a, b),
    "addcdiv_self": lambda L, a, b: L.addcdiv(a, b, b),
    "addcmul_factor": lambda L, a, b: L.addcmul(b, a, b),
    "addcmul_self": lambda L, a, b: L.addcmul(a, b, b),
    "clamp_bounds": lambda L, a, b: L.clamp(a, b, b + 1),
    "clamp_self": lambda L, a, b: L.clamp(b, a, a + 1),
    "where": lambda L, a, b: L.where(b > 1, a, b),
    "mm": lambda L, a, b: a.view(1, 3) @ b.view(3, 1),
    "dot": lambda L, a, b: L.dot(a, b),
    "outer": lambda L, a, b: L.outer(a, b),
    "masked_fill": lambda L, a, b: a.masked_fill(b > 1, 0.0),
    "mse_loss": lambda L, a, b: L.nn.functional.mse_loss(a, b),
}
PATTERNS = [(True, True), (True, False), (False, True)]


def _outcome(L, name, requires, changed):
    a, b = ([1.5, 0.7, 2.0], [1.2, 2.5, 0.9])
    a, b = (L.tensor(v, requires_grad=r) * 1 if r else L.tensor(v) for v, r in zip((a, b), requires))
    out = OPS[name](L, a, b)
    {"a": a, "b": b, "out": out}[changed].mul_(1.0)
    try:
        out.sum().backward()
    except RuntimeError:
        return "RuntimeError"
    return "ok"


@pytest.mark.parametrize("changed", ["a", "b", "out"])
@pytest.mark.parametrize("requires", PATTERNS, ids=["both", "first", "second"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_saved_operands_are_version_checked_as_in_torch(name, requires, changed):
    assert _outcome(ac, name, requires, changed) == _outcome(torch, name, requires, changed)


def test_fill_of_a_ones_like_view_saved_by_addcdiv():
    """The fuzzer's program, shrunk: only self requires grad; tensor2, a view of a ones_like
    result, is filled in place before backward."""
    outcomes = []
    for L in (torch, ac):
        x = L.tensor([1.5, -0.5], requires_grad=True)
        ones = L.ones_like(x)
        view = ones[:]
        y = L.addcdiv(x, ones, view, value=0.5)
        ones.fill_(2.0)
        try:
            y.sum().backward()
            outcomes.append(x.grad.tolist())
        except RuntimeError:
            outcomes.append("RuntimeError")
    assert outcomes[0] == outcomes[1] == "RuntimeError"


