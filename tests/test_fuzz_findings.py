"""Programs the eager differential fuzzer (tests/eager_fuzz) found, shrunk, kept as regression
cases: each runs on PyTorch 2.13 and on adcompile with the fuzzer's own oracle
(`check.run` / `check.compare`) and must show the same at every statement.

A line's value is observed when it binds a name (`v = ...`) or changes one in place
(`v.add_(...)`, `v[...] = ...`); a line ending in `# layout` has its memory layout
(is_contiguous) compared too, as the fuzzer does for views, joins, indexing and scans;
`_g = x.grad` lines and create_graph results compare values and flags only.
"""

import re

import pytest

from tests.eager_fuzz import check
from tests.eager_fuzz.gen import Program, Stmt

FINDINGS = {
    # derivative formulas that subtract, negate or divide a bool tensor raise in PyTorch
    "pow_bool_exponent": """
x = torch.tensor([2.08, -0.6, -1.0], requires_grad=True)
b = x.bool()
y = x ** b
y.sum().backward()
""",
    "pow_bool_exponent_0d_base": """
x = torch.tensor(1.38, requires_grad=True)
b = torch.tensor([True, False])
y = torch.pow(x, b)
y.sum().backward()
""",
    "atan2_bool_y": """
x = torch.tensor([[-2.97, 1.65, 1.45]], requires_grad=True)
b = torch.tensor([True, False, True])
y = torch.atan2(b, x)
y.pow(2).mean().backward()
z = torch.atan2(x, b)
z.sum().backward()
_g = x.grad
""",
    "addcdiv_bool_or_int_divisor": """
x = torch.tensor([2.08, -0.6, -1.0], requires_grad=True)
f = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = x != f
y = torch.addcdiv(f, x, b, value=0.5)
y.sum().backward()
z = torch.addcdiv(f, x, b.int())
z.sum().backward()
w = torch.addcdiv(f, b, x)
w.sum().backward()
_g = x.grad
""",
    "lerp_bool_weight": """
x = torch.tensor([1.46, 2.45, -2.32], dtype=torch.float64, requires_grad=True)
e = x[-1]
b = torch.tensor(True)
y = torch.lerp(x, e, b)
y.sum().backward()
""",
    # a zero remainder keeps the sign of the dividend (fmod's), so 1 / (a % b) is -inf
    "remainder_signed_zero": """
a = torch.tensor([-2.0, 2.0, -0.0, 3.0, -2.5], requires_grad=True)
r = a % 1.0
s = 1 / r
t = torch.remainder(a, torch.tensor(-1.0))
u = 1 / t
""",
    # two Ellipses in a key: each stands for the dimensions the other indices leave, so the
    # second one moves past the last dimension, where only a slice from 0 by 1 applies
    "two_ellipses": """
x = torch.tensor([[1.92, -2.94, -0.74]], requires_grad=True)
s = torch.stack([x, x], -1)
a = s[..., ..., 0:5:1]  # layout
b = s[..., ..., 1:3]
c = s[[0, 0, -1], ..., ...]  # layout
d = s[..., [1], -1:-1, ...]  # layout
e = s[..., None, ...]  # layout
f = s[..., 0, ..., 1]
s[..., ..., 0:2] = 5
""",
    # an advanced index out of range is not noticed when the result is empty
    "out_of_range_index_empty_result": """
x = torch.tensor([[[2.11, -2.2, -2.17], [-2.94, 1.98, -2.5]]], requires_grad=True)
y = x * 2
a = y[:0, None, [-2, 1, -3]]  # layout
b = y[:, [7], :0]  # layout
c = y[:0][[5]]
y[:0, [7]] = 1
""",
}


def _target(line):
    m = re.match(r"\s*(\w+)\s*=[^=]", line) or re.match(r"\s*(\w+)\s*[.\[]", line)
    return m.group(1) if m else None


def program(text):
    stmts = []
    for line in text.strip().splitlines():
        source, _, mark = line.partition("  # ")
        target = _target(source)
        mode = "values" if target == "_g" else "full"
        tag = "view.finding" if mark == "layout" else "finding"
        stmts.append(Stmt(tag, source, target, mode))
    return Program(0, stmts)


@pytest.mark.parametrize("name", FINDINGS)
def test_fuzz_finding_matches_torch(name):
    prog = program(FINDINGS[name])
    finding = check.check(prog)
    assert finding is None, check.describe(prog, finding)
