"""The trapezoid rule: trapezoid (torch.trapz as well) and cumulative_trapezoid, built from
recorded ops in PyTorch's order, so their graphs are torch's (MulBackward1, SubBackward0,
SumBackward1, ... ) and no derivative rule is new.
"""

from runtime.autograd_meta import any_requires_grad, record
from runtime.ops import add, div, mul, sub, sum as sum_
from runtime.ops._core import is_tensor
from runtime.ops._family import node
from runtime.ops.shape import narrow, reshape, select

# ATen's own `tensor * double` and `tensor / double`: one edge, unlike a Python number's
_BY_NUMBER = {mul: node("MulBackward1", "mul_scalar"), div: node("DivBackward1", "div_scalar")}


def _by_number(fn, x, c):
    from runtime.grad_mode import no_grad

    with no_grad():
        out = fn(x, c)
    if any_requires_grad((x,)):
        record(_BY_NUMBER[fn], (x,), out, (c,))
    return out


def _pairs(y, dim):
    """(y[1:], y[:-1]) along dim."""
    n = y.shape[dim]
    return narrow(y, dim, 1, n - 1), narrow(y, dim, 0, n - 1)


def _spacing(x, y, dim):
    """The gaps between sample points, a 1-d x viewed first to broadcast against y."""
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = reshape(x, tuple(shape))
    upper, lower = _pairs(x, dim)
    return sub(upper, lower)


def _check_spacing(name, x, dx):
    if x is not None and (not is_tensor(x) or dx is not None):
        raise TypeError(f"{name}() takes sample points x (a tensor) or a spacing dx=, not "
                        f"both")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoid rule: with sample points x, or a spacing
    dx (1 by default)."""
    _check_spacing("trapezoid", x, dx)
    if x is not None:
        upper, lower = _pairs(y, dim)
        return _by_number(div, sum_(mul(add(upper, lower), _spacing(x, y, dim)), dim), 2.0)
    spacing = 1.0 if dx is None else dx
    ends = add(select(y, dim, 0), select(y, dim, -1))
    return _by_number(mul, sub(sum_(y, dim), _by_number(mul, ends, 0.5)), spacing)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integrals of y along dim (one fewer than y's points)."""
    from runtime.ops import cumsum

    _check_spacing("cumulative_trapezoid", x, dx)
    upper, lower = _pairs(y, dim)
    if x is not None:
        return _by_number(div, cumsum(mul(add(upper, lower), _spacing(x, y, dim)), dim), 2.0)
    spacing = 1.0 if dx is None else dx
    return cumsum(_by_number(mul, add(lower, upper), spacing / 2.0), dim)


FUNCTIONS = ["trapezoid", "trapz", "cumulative_trapezoid"]
METHODS = []
