"""Programs the eager differential fuzzer (tests/eager_fuzz) found, shrunk, kept as regression
cases: each runs on PyTorch 2.13 and on adcompile with the fuzzer's own oracle
(`check.run` / `check.compare`) and must show the same at every statement.

A line's value is observed when it binds a name (`v = ...`) or changes one in place
(`v.add_(...)`, `v[...] = ...`); a line ending in `# layout` has its memory layout
(is_contiguous) compared too, as the fuzzer does for views, joins, indexing and scans;
`_g = x.grad` lines and lines ending in `# values` (create_graph results, whose node names
differ from PyTorch's by design) compare values and flags only.
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
    # the integer-division check comes before the bool check (bool tensors are integers there)
    "addcdiv_of_bools": """
b = torch.tensor([True, False, True])
c = torch.tensor([True, True, False])
y = torch.addcdiv(b, b, c)
f = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
z = torch.addcdiv(f, b, c)
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
    # the backward of an in-place op on (a view of) an expanded view: gradients of elements
    # sharing memory add up; where the written region itself shares memory, PyTorch refuses
    "inplace_on_expanded_view_backward": """
v1 = torch.tensor([-1.06, -2.98, -2.5, -0.18], requires_grad=True)
v2 = torch.add(v1, v1, alpha=-1)
v3 = v2[1]
v4 = v3.expand(())
v3.abs_()
v4.sum().backward()
w1 = torch.tensor([[2.01, -2.59, -0.8], [2.26, 2.61, -1.47]], requires_grad=True)
w2 = torch.sin(w1)
w3 = w2.expand(2, 2, -1)
w3[-1, 1, [1]] = -0.96
w2.pow(2).mean().backward()
u1 = torch.tensor([[1.03, 1.08], [-1.2, -2.6]], dtype=torch.float64, requires_grad=True)
u2 = u1.softmax(-2)
u3 = u2.expand(2, 2, -1)
u3.fill_(1)
r = (u3 * 2).sum().backward()
_g = v1.grad
_g = w1.grad
_g = u1.grad
""",
    # create_graph through the history an in-place op left (CopySlices, AsStridedBackward0):
    # the gradient stays differentiable
    "create_graph_through_inplace_on_view": """
v1 = torch.tensor([[-0.03, 2.87, 1.82]], requires_grad=True)
v3 = torch.matmul(v1, torch.tensor([[[-0.19, 1.09], [-0.4, -1.0], [-1.97, 0.5]]]))
v3.neg_()
gg = torch.autograd.grad(v3.pow(2).mean(), [v1], create_graph=True)[0]  # values
gg.sum().backward()
w1 = torch.tensor([0.56, -1.5], dtype=torch.float64, requires_grad=True)
w2 = torch.add(w1, 2)
w2[None, 0] = -2.7
hh = torch.autograd.grad(w2.pow(2).mean(), [w1], create_graph=True)[0]  # values
hh.sum().backward()
u1 = torch.tensor([-1.85, -2.64, -2.5, 0.5], requires_grad=True)
u2 = torch.lerp(u1, u1, 0.75)
u2[-2] = -0.8
u3 = u2.reciprocal()
kk = torch.autograd.grad(u3.sum(), [u1], create_graph=True)[0]  # values
kk.sum().backward()
_g = v1.grad
_g = w1.grad
_g = u1.grad
""",
    # atan2's gradient at the origin is 0 (PyTorch zeroes the infinite reciprocal)
    "atan2_gradient_at_origin": """
a = torch.tensor([0.0, 1.0, 0.0, 0.0, 1e-30], requires_grad=True)
b = torch.tensor([0.0, 2.0, 0.0, 1.0, 1e-30], requires_grad=True)
y = torch.atan2(a, b)
g = torch.autograd.grad(y, [a, b], torch.tensor([0.0, 1.0, 1.0, 2.0, 1.0]), retain_graph=True)
w = torch.tensor([1.0, 1.0, -1.0, 0.0, 1.0])
h = torch.autograd.grad(y, [a, b], w, create_graph=True)  # values
""",
    # writing into a tensor whose elements share memory (a gradient of sum(), expanded):
    # only a fill by a number is allowed, setitem's fill by a 0-dim tensor is not
    "setitem_into_expanded_gradient": """
v1 = torch.tensor([-2.1, 2.05, 0.08, -0.23], dtype=torch.float64, requires_grad=True)
v3 = torch.autograd.grad(v1.sum(), [v1], retain_graph=True)[0]
v7 = v3[:]
v7[None] = 1
v3.fill_(torch.tensor(3.0))
v3[0:2] = 1
v3[...] = torch.tensor(1.0)
v3.fill_(3)
""",
    # index_put_ (x[list] = tensor) needs equal dtypes; a bool mask with a 0-dim value is a
    # masked fill, which converts
    "index_put_dtype_mismatch": """
i = torch.tensor([1, 2])
i[[0]] = torch.tensor(1.5)
i[[0]] = torch.tensor([2], dtype=torch.int32)
i[[0]] = 2.5
f = torch.tensor([1.0, 2.0], requires_grad=True)
g = f * 1
g[[0]] = torch.tensor(2.0, dtype=torch.float64)
g[[True, False]] = torch.tensor(3.0, dtype=torch.float64)
g[g > 2] = torch.tensor(5, dtype=torch.int64)
g.index_put_((torch.tensor([0]),), torch.tensor(2.0, dtype=torch.float64))
""",
    # cat() skips a 1-d empty input; PyTorch gives it a fresh empty gradient
    "cat_legacy_empty_gradient": """
v1 = torch.tensor([], dtype=torch.float64, requires_grad=True)
v2 = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
v9 = torch.cat([v1, v2, v1], 0)
gs = torch.autograd.grad(v9.pow(2).sum(), [v1, v2], create_graph=True)  # values
""",
    # float32 remainder by a Python number is computed in float32; lerp_ of integers refuses
    "remainder_by_number_in_float32_and_integer_lerp_": """
v1 = torch.tensor([[0.85], [1.0], [-2.0]], requires_grad=True)
v3 = v1 % 0.02
i = torch.tensor([1, 2])
i.lerp_(i, 0.3)
b = i > 1
b.lerp_(b, 0.7)
""",
    # create_graph over setitem into a view of a stacked tensor, whose gradient is expanded
    "create_graph_setitem_on_stacked_view": """
v1 = torch.tensor([[-0.8], [-1.16], [-2.96]], requires_grad=True)
v2 = torch.stack([v1], -3)
v4 = torch.sub(v2, -2.74)
v4[..., 0] = 0.74
gg = torch.autograd.grad(v4.sum(), [v1], create_graph=True)[0]  # values
""",
    # layouts PyTorch gives: where() as TensorIterator orders its operands' strides, flip()
    # as empty_like(x), casts as empty_like(x), masked_fill() and repeat() contiguous
    "result_layouts": """
x = torch.tensor([[-0.01, 0.74, 0.13], [0.0, 0.89, 0.75], [2.0, 1.86, -2.7]], requires_grad=True)
t = x.permute(1, 0)
w1 = torch.where((t > 0), t, x)  # layout
w2 = torch.where((x > 0), t, x)  # layout
w3 = torch.where(t > 0, x[:, :1].expand(3, 3), x[:1].expand(3, 3))  # layout
d = x.double()
w4 = torch.where(x[:1] > 0, x[:, :1], d[0].expand(3, 3))  # layout
f1 = t.flip(1)  # layout
f2 = x.unsqueeze(0).expand(2, 3, 3).flip(0)  # layout
f3 = x[:, ::2].flip(0)  # layout
y = torch.tensor([-2.73], requires_grad=True)
f4 = y.flip(-1)
y2 = y.view_as(f4)
f4.floor_()
f5 = 0.3 + y2
c1 = x.unsqueeze(0).expand(2, 3, 3).int()  # layout
c2 = c1[-1]  # layout
m = t.masked_fill(t > 0, 1.21)
m2 = m[-3, ...]  # layout
r = t.repeat(1, 1)  # layout
k1 = x[:1].expand(2, 3, -1).clone()  # layout
k2 = t.clone()  # layout
""",
    # atan2 and hypot take two tensors; median refuses bools, and the median of nothing is
    # nan cast to the dtype
    "atan2_number_median_bool_and_empty": """
x = torch.tensor([1.0, 2.0], requires_grad=True)
a = torch.atan2(x, True)
b = x.hypot(2.0)
c = torch.atan2(2.0, x)
m = (x > 1).median()
n = (x > 1).median(0)
e = torch.tensor([], dtype=torch.int64).median()
f = torch.tensor([], dtype=torch.int32).median()
""",
    # the derivatives of sinh and cosh are cosh and sinh (their exp forms make nan of inf
    # in a second derivative); max() and min() of a nan pass the gradient to the nans
    "sinh_cosh_second_derivative_and_max_of_nan": """
v1 = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
v2 = torch.tensor([1.35, 2.0], dtype=torch.float64, requires_grad=True)
v3 = v2 / v1
v4 = v3.cosh()
gg = torch.autograd.grad(v4.sum(), [v1], create_graph=True)[0]  # values
hh = torch.autograd.grad(gg.sum(), [v1, v2], retain_graph=True)  # values
v5 = v3.sinh()
kk = torch.autograd.grad(v5.sum(), [v1], create_graph=True)[0]  # values
ll = torch.autograd.grad(kk.sum(), [v1, v2])  # values
w1 = torch.tensor(-2.92, dtype=torch.float64, requires_grad=True)
w2 = w1.log1p()
w3 = w2.min()
w3.backward()
_g = w1.grad
""",
    # the gradient autograd.grad gives for sum() is an expanded view made without grad mode
    "expanded_gradient_is_a_no_grad_view": """
v1 = torch.tensor([[2.33], [1.29], [-2.74]], requires_grad=True)
v2 = torch.autograd.grad(v1.sum(), [v1], retain_graph=True)[0]
v2.detach_()
v2.fill_(2)
v2.pow_(v1)
v2.pow_(2)
v2[0] = 3
u1 = torch.tensor([[], []], requires_grad=True)
u5 = torch.autograd.grad(u1.sum(), [u1], retain_graph=True)[0]
u5.pow_(u1)
""",
    # an operand over the target's bytes walked with other strides overlaps it partially
    "partial_overlap_by_strides": """
v1 = torch.tensor([[-1.55], [1.1]], requires_grad=True)
v7 = v1[[0]].sign().trunc()
v7[None, ...] *= v7
x = torch.ones(2, 3)
x.mul_(x.view(2, 3))
x.copy_(x[None])
y = torch.ones(1, 3)
y.mul_(y[0])
y.mul_(y.unsqueeze(0)[0])
z = torch.tensor([[-1.26, -1.78, 2.0], [-2.22, -2.89, -1.0]], dtype=torch.float64)
z[None] = z
z[...] = z[None]
z[:] = z
z.unsqueeze(0).copy_(z.unsqueeze(0))
w = torch.tensor([0.38], requires_grad=True).atan()
w[-2:1] = w.squeeze(-1)
""",
    # addcmul saves each factor only for the other's gradient, so changing a factor that
    # requires no grad in place does not break backward
    "addcmul_saves_factors_only_when_needed": """
v1 = torch.tensor([[0.33], [-2.82]], requires_grad=True)
v3 = v1 == 3
v4 = torch.addcmul(v1, v3, v3, value=2)
w = torch.addcdiv(v1, v3, v1)
v3.zero_()
g = torch.autograd.grad(v4.sum(), [v1])
h = torch.autograd.grad(w.sum(), [v1])
""",
    # a NotImplemented node (floor_divide) has AccumulateGrad's priority in the ready queue;
    # integer division by zero is not noticed when the result is empty; x.copy_(x) of an
    # expanded gradient writes nothing
    "not_implemented_first_and_empty_division": """
v1 = torch.tensor([2.15, -1.64, 0.55], requires_grad=True)
v2 = torch.tensor([[1.99, 0.49, -1.74], [1.57, 2.43, 0.31]], requires_grad=True)
v6 = v2 // 2.0
v9 = v1.max()
v6 -= v9
v6.sum().backward()
_g = v1.grad
u1 = torch.tensor([0.97, -0.61, 1.53, -1.47], requires_grad=True)
u2 = torch.tensor([[-2.0], [2.42], [-1.0]], requires_grad=True)
u7 = u2.tanh() // u2
u11 = u1 % u7
u11.pow(2).mean().backward()
_g = u1.grad
e = torch.tensor([], dtype=torch.int64)
f = torch.fmod(e, 0)
r = torch.remainder(e, 0)
q = e // 0
g = torch.autograd.grad(v1.sum(), [v1])[0]
g.copy_(g)
""",
    # float32 exp, log, tanh, acos, ... as PyTorch rounds them (computed in float64), where
    # an ulp is amplified downstream
    "float32_transcendentals_rounded_as_pytorch": """
v0 = torch.tensor([[1.79, -2.93, -1.62], [2.89, -0.7, -2.41], [1.45, -0.25, 2.07]])
v1 = v0.requires_grad_()
v3 = torch.expm1(v1)
v4 = v3.contiguous()
v4.tanh_()
v7 = torch.acos(v4)
w = torch.tensor([[[-0.83, 1.51, 0.79]], [[0.9, -2.99, -2.32]]])
w4 = torch.log(w)
w6 = torch.fmod(w, w4)
w7 = w6 % torch.tensor([[1.77], [2.56], [1.78]], dtype=torch.float64)
w9 = torch.remainder(w > 0, w7)
""",
    # a 0-dim weight takes part in lerp's type promotion: int tensors with a float weight
    # interpolate in float
    "lerp_promotes_with_a_0d_weight": """
v2 = torch.tensor(2.68, requires_grad=True)
v4 = torch.full((3, 3), -1)
v7 = 1 - v4
v9 = torch.lerp(v4, v7, v2)
w9 = torch.lerp(v4, v7, v2.double())
f = torch.ones(3, requires_grad=True)
y = torch.lerp(f, f * 2, torch.tensor(0.3, dtype=torch.float64))
z = torch.lerp(v4, v7, v4[0, 0])
v9.sum().backward()
y.sum().backward()
_g = v2.grad
_g = f.grad
""",
    # an advanced-index result is laid out by PyTorch's index kernel (a TensorIterator over
    # the source restrided and the index arrays), not always contiguous; matmul folds by
    # PyTorch's strides of size-1 dimensions
    "index_result_layout": """
v1 = torch.tensor([[[0.53, 0.14, -2.5], [-2.16, 1.62, -0.44]], [[1.33, -0.43, -0.41], [0.93, 2.7, 0.3]]])
v2 = v1.requires_grad_()
t = v2.permute(2, 1, 0)
a = t[[-2, 1, 1]]  # layout
b = t[:, [0, 1]]  # layout
c = t[:, :, [0]]  # layout
d = t[[0, 1], :, [1, 1]]  # layout
e = t[[[0], [1]], :, [0]]  # layout
f = v2[None, [1, -1, 1], 0:-2:2]  # layout
m = torch.matmul(f, torch.tensor([[1.1, 2.97]]))
""",
    # the median of an empty bool tensor is answered (True); floor and trunc division of
    # bools are refused, empty or not
    "bool_median_when_empty_and_bool_floor_division": """
b = torch.tensor([True, False])
e = b[:0]
m = e.median()
q = e // e
r = b // b
t = torch.div(b, b, rounding_mode='trunc')
u = b // True
""",
    # addcmul/addcdiv promote their three operands at once; x[list] = a value sharing x's
    # memory is refused
    "addcmul_joint_promotion_and_index_put_overlap": """
v1 = torch.tensor([[], []], dtype=torch.float64, requires_grad=True)
v3 = torch.tensor([2.79], dtype=torch.float64, requires_grad=True)
v4 = v3.squeeze(-1)
v6 = torch.sinh(v4)
v9 = v3 == v1
v13 = torch.addcmul(v6, v9, v4, value=0.5)
v14 = torch.addcdiv(v6, v4, (v9 == v9).float())
w1 = torch.tensor([0.5, -2.03, -0.86], requires_grad=True)
w2 = w1.softmax(-1)
w2[[-3, -3, 2]] = w2
w2[[0, 1]] = w2[1:]
""",
    # a fill by a 0-dim value that requires grad makes an int or bool target require grad
    # (PyTorch's fill_, masked_fill_ and index_put_ skip the dtype check copy_ makes)
    "fill_into_bool_tensor_requires_grad": """
v1 = torch.tensor(2.95, requires_grad=True)
v2 = torch.tensor([2.0, -2.58, -0.45, 1.33], requires_grad=True)
v5 = v2 != -1
v5[:2:1] = v1
i = torch.zeros(3, dtype=torch.int64)
i[i == 0] = v1.reshape(1)
j = i + 0.5
k = i.sum()
j.sum().backward()
w1 = torch.tensor([[[-1.48, -0.11, -0.52]], [[2.99, 2.22, 1.95]]], requires_grad=True)
w5 = w1 > -2
w6 = w5[1]
w6[::2] = v1
w7 = w5[0]
w8 = w7.float()
""",
    # x ** False is not PyTorch's exponent-0 shortcut: its gradient is 0 * x ** -1
    "pow_false_gradient": """
v3 = torch.tensor([[2.55, -1.43], [0.0, 2.0], [-1.79, 0.5]], dtype=torch.float64, requires_grad=True)
v7 = v3 ** False
(v7 * torch.tensor([[1.58, 2.02], [2.43, 1.85], [2.35, 1.48]], dtype=torch.float64)).sum().backward()
_g = v3.grad
""",
    # x.detach() modified in place by x: the target's old value is saved as a copy, so
    # backward needs no version of it (a.mul_(a) still saves a itself, which then changed);
    # an operand that is a detached alias of the target (w10) stays saved as it is, so
    # changing the target changes it, and backward refuses
    "inplace_on_a_detached_alias_by_its_source": """
v1 = torch.tensor([[-2.27], [1.0], [-2.11]], requires_grad=True)
v3 = v1.detach()
v3 *= v1
grads = torch.autograd.grad(v3.pow(2).mean(), [v1], allow_unused=True)
w2 = torch.tensor([2.4, 0.76, -0.45], requires_grad=True)
w4 = w2 * 2
w10 = w4.detach().requires_grad_()
w4 /= w10
w4.sum().backward()
""",
    # remainder and fmod save their operands only for the divisor's gradient, so changing a
    # divisor that requires no grad in place does not break backward
    "remainder_by_a_constant_tensor_changed_in_place": """
v1 = torch.tensor(1.28, requires_grad=True)
v2 = v1.argmin(0)
v3 = torch.remainder(v1, v2)
v4 = torch.fmod(v1, v2)
v2.floor_()
loss = (v3 * torch.tensor(-2.69, dtype=torch.float32)).sum(); loss.backward(retain_graph=True)
v4.sum().backward()
_g = v1.grad
""",
    # the gradient of a split into one piece is a new tensor (cat), not a view to detach
    "split_into_one_piece_gradient_is_not_a_view": """
v1 = torch.tensor([[1.0], [1.89], [1.0]], dtype=torch.float64, requires_grad=True)
v4 = v1.split(3, -1)[-1]
v6 = torch.autograd.grad(v4.sum(), [v1], retain_graph=True, allow_unused=True)[0]
v6.detach_()
""",
    # a leaf detached in place and then given history by an in-place op: its gradient
    # reaching AccumulateGrad raises
    "leaf_moved_into_the_graph_interior": """
v1 = torch.tensor([[-2.07, 2.6, -1.45], [-1.55, 0.79, 1.43]], dtype=torch.float64, requires_grad=True)
v2 = v1 + v1
v1.detach_()
v1.pow_(v2)
(v1 * torch.tensor([[-1.62, 1.0, -1.14], [-1.32, 0.48, 1.31]], dtype=torch.float64)).sum().backward()
""",
    # matmul folds a view by its own strides (size-1 dimensions included), as PyTorch does
    "matmul_folds_a_view_by_its_strides": """
v1 = torch.tensor([[[1.35, -1.27, 0.0]], [[1.16, 0.29, 2.19]]], requires_grad=True)
v5 = v1.split(1, 2)[1]
v6 = v5 @ torch.tensor([[-0.38, 2.39]], dtype=torch.float32)
""",
    # and an elementwise result by its own strides too (exp of a transpose keeps (4, 1, 2):
    # no fold, a bmm; seed 3730671716861)
    "matmul_folds_an_elementwise_result_by_its_strides": """
v1 = torch.tensor([[1.27], [1.73]], requires_grad=True)
v3 = torch.matmul(v1, torch.tensor([[[0.25, 1.73]]], dtype=torch.float32))
v10 = v3.mT.exp()
v12 = v10 @ torch.tensor([[2.0, -0.43], [0.45, -2.89]], dtype=torch.float32)
""",
    # prod's gradient over a slice holding a zero is PyTorch's exclusive products from both
    # sides, contiguous (it was laid out transposed; seed 3906262129292), and its double
    # backward differentiates those products
    "prod_gradient_with_a_zero": """
v1 = torch.tensor([[[-0.58, -1.44, 2.39]], [[1.43, -1.86, 0.0]], [[0.5, 0.0, 3.0]]], requires_grad=True)
v3 = v1.prod(-3)
v4 = torch.autograd.grad(v3.sum(), [v1], retain_graph=True)[0]
v5 = v4 // 1  # layout
v6 = v1.prod(2)
(g,) = torch.autograd.grad(v6.sum(), [v1], create_graph=True)
w = g * 1  # layout
(h,) = torch.autograd.grad((g * g).sum(), [v1])
""",
    # elementwise results are laid out as TensorIterator lays them out (the first operand
    # decides; expanded dimensions say nothing), and flip() in a backward makes a new tensor
    "elementwise_result_layouts": """
v1 = torch.tensor([[-1.42, 2.99, -2.91], [2.23, -0.96, -1.47], [2.87, 0.21, -2.39]], requires_grad=True)
v5 = v1.t()
v7 = torch.div(v5, v1)
v9 = v7[...]  # layout
a = torch.atan2(v5, v1)[...]  # layout
m = (v5 % v1)[...]  # layout
w = torch.tensor([[[1.61, -1.98, 1.3], [-2.66, -2.23, 0.73]], [[-2.58, 2.65, 1.8], [1.26, -2.94, 2.58]]], requires_grad=True)
w3 = w.expand(2, 2, 2, -1)
w4 = w3.cosh().chunk(3, 0)[-1]  # layout
w5 = w3.log().chunk(3, 0)[-1]  # layout
i = torch.tensor([[[5, 3, -1], [4, 3, 2]], [[2, 5, -1], [2, 4, -2]]]).expand(2, 2, 2, 3)
c = i.clamp_max(0.1)[0]  # layout
u = torch.tensor([[-2.51, 1.66, -1.36]], requires_grad=True)
g = torch.autograd.grad(u.cumsum(-1).sum(), [u])[0]
g0 = g[0]  # layout
""",
    # index_put_ checks its value against the tensor written only when both are dense
    "index_put_overlap_with_a_strided_target": """
v3 = torch.tensor([[-2.61, -1.23], [-2.51, -0.82], [-1.02, 0.78]], dtype=torch.float64, requires_grad=True)
v3.detach_()
v6 = v3[-3, 1:5]
v3[0::2, [0, 0]] = v6
w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
w[:, [0]] = w[:, 1:]
u = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
u[[0]] = u[1]
""",
    # hypot saves each operand only for its own gradient, lerp saves x and end only for the
    # weight's: changing in place an operand that needs none does not break backward; a
    # comparison's result of a transposed view is laid out as that view
    "hypot_lerp_saves_and_comparison_layout": """
v1 = torch.tensor([[[-0.77, 2.0, 1.86], [0.03, -2.61, -2.04]], [[0.01, -2.85, -0.06], [-2.27, -0.19, -2.37]]], requires_grad=True)
v2 = v1 != v1
v5 = torch.hypot(v2, v1)
v2.copy_(v2)
v5.sum().backward()
_g = v1.grad
u2 = torch.tensor([-2.53], requires_grad=True)
u4 = torch.tensor([[[1.0, 0.13, -2.77]], [[-1.32, 0.57, 0.0]]])
u5 = u2.clamp_min(-1.6)
u7 = torch.lerp(u5, u2, u4)
u5[[-1, -1]] = u2
grads = torch.autograd.grad(u7.pow(2).mean(), [u2])
w2 = torch.tensor([[-1.0, -2.5, 0.13], [0.53, 1.3, 1.46], [0.64, -1.46, 2.43]], requires_grad=True)
w7 = w2.T != w2
w8 = w7.flip(0)  # layout
""",
    # a number ** x saves x (PyTorch's PowBackward2 does): changing x in place before
    # backward is refused
    "rpow_saves_its_exponent": """
v1 = torch.tensor([[[-0.9, -1.0, -1.06], [2.48, 0.81, -0.27]], [[2.0, -2.2, 2.86], [1.22, 1.5, 1.48]]], requires_grad=True)
v2 = v1 + v1
v3 = 3 ** v2
v2[-1:-1, 0] = 0
v3.sum().backward()
w2 = torch.tensor([[1.48], [-1.76], [-1.9]], requires_grad=True)
w4 = torch.cat([w2, w2, w2], -2)
w8 = torch.tensor([-1.04], requires_grad=True)
w9 = 2.36 ** w4
w10 = w8.log_softmax(0)
w4.addcmul_(w10, w10)
grads = torch.autograd.grad(w9.sum(), [w2, w8], allow_unused=True)
u = torch.tensor([0.5, -1.0], requires_grad=True)
gg = torch.autograd.grad((2 ** u).sum(), [u], create_graph=True)[0]  # values
gg.sum().backward()
_g = u.grad
""",
    # the result saved by an in-place op on a view unpacks with the view's history (as
    # PyTorch's), so a create_graph gradient does not reach the node CopySlices wraps directly
    # and a later backward runs through it once
    "inplace_on_view_saved_result_double_backward": """
v1 = torch.tensor([-1.97, 1.59, 2.52, -1.33], dtype=torch.float64, requires_grad=True)
v3 = v1 / v1
v8 = v3.select(-1, -1)
v8.sqrt_()
gg = torch.autograd.grad(v8.pow(2).mean(), [v1], create_graph=True)[0]  # values
gg.sum().backward()
_g = v1.grad
""",
    # float32 nansum adds in sum()'s (PyTorch's cascade) order, so a floor division by it
    # lands on PyTorch's side of an integer
    "nansum_float32_order_floor_divide": """
v1 = torch.tensor([[[-1.81, 1.86, 2.89], [-2.67, 1.1, -2.52]], [[1.0, -2.14, 0.09], [1.41, -2.55, 1.0]]], requires_grad=True)
v2 = v1.nansum()
v4 = v2 // v1
""",
    # a small bmm adds its k products in order without FMA (PyTorch's own loop, not BLAS);
    # fmod by the product amplifies the last bit
    "small_bmm_order_fmod": """
v2 = torch.tensor([[[-1.47, -0.27, -1.58]], [[-0.33, -2.24, -0.21]]], dtype=torch.float64, requires_grad=True)
v3 = torch.tensor([[[-0.31, 1.47, 1.08], [2.9, -1.16, 1.41]], [[0.0, 1.34, 0.64], [2.38, 0.71, 0.84]]], requires_grad=True)
v6 = v2.nansum(2, keepdim=True)
v7 = torch.bmm(v3, torch.tensor([[[-2.02, 1.23, 0.42], [-1.26, -1.13, -2.39], [-2.65, 1.97, 0.51]], [[1.25, -1.68, -2.65], [2.68, 0.78, -1.42], [0.35, 0.0, 1.52]]], dtype=torch.float32))
v9 = torch.fmod(v6, v7)
""",
    # results keep TensorIterator's layout: floor division of a permuted operand, a
    # comparison with such a (non-view) result, lerp (x's layout first), and an operand
    # converted to the common dtype (laid out as .to() lays it out, not as numpy's astype)
    "iterator_layout_of_results": """
v2 = torch.tensor([[[0.77, 1.42, -2.5], [-2.6, 2.88, 2.23]], [[0.54, -2.62, 1.14], [0.5, -0.94, -1.12]]], requires_grad=True)
v4 = v2.permute(1, 0, 2)
v5 = v4 // v2  # layout
v8 = v5.sign() >= v2  # layout
v10 = v8.permute(1, 0, 2)  # layout
w1 = torch.tensor([[-1.3, -1.34, -0.56], [1.7, 0.5, 1.61], [1.16, 1.5, 1.45]], requires_grad=True)
w7 = torch.add(w1, 1.94).reshape(3, -1)
w9 = w7.mT
w10 = torch.lerp(w7, w9, 0.75)  # layout
w11 = torch.lerp(w9, w7, w7)  # layout
w12 = w10[None]  # layout
u2 = torch.tensor([-0.17, -2.22, -2.35, -2.52], dtype=torch.float64, requires_grad=True)
u3 = torch.tensor([[0.35], [1.94]], requires_grad=True)
u4 = u3.expand(2, 2, 1)
u6 = torch.remainder(u2, u4)  # layout
u13 = u6 @ u2
""",
    # a product of one column by one row keeps each product's signed zero (MKL's gemm), so
    # rsqrt of it is -inf where PyTorch's is; a dot product's sum starts from +0
    "outer_product_matmul_signed_zero": """
v1 = torch.tensor([[-1.88], [-0.23]], requires_grad=True)
v2 = torch.matmul(v1, torch.tensor([[[1.56, 2.0, 1.0]], [[0.0, -2.5, 0.87]]], dtype=torch.float32))
v4 = v2.rsqrt()
v4.sum().backward()
_g = v1.grad
d = torch.tensor([-1.0]) @ torch.tensor([0.0])
e = 1 / d
""",
    # w[0] = w for a (1, 1) w: the value, its leading ones dropped, is a 0-dim view expanded
    # over w's one element, a partial overlap for PyTorch (stride 0 against 1)
    "setitem_self_one_element": """
w = torch.tensor([[1.5]], requires_grad=True)
v = w.clone()
v[0] = v
u = torch.ones(1, 1)
u[0].copy_(u)
z = torch.ones(1, 3)
z[0] = z
""",
    # a view of a leaf detached in place, then changed through the base: the view's new
    # history (AsStridedBackward0) leads nowhere, as PyTorch's
    "view_of_base_detached_in_place": """
v2 = torch.tensor([-2.58, 1.96, -1.01, -2.93], requires_grad=True)
v4 = v2.T
v2.detach_()
v2[[-3, -4]] = -2
v14 = v4 + 1
v14.sum().backward()
_g = v2.grad
""",
    # stack's gradient selects from the cotangent, a view: of sum()'s expanded cotangent it
    # is a stride-0 view, not contiguous, as PyTorch's
    "stack_gradient_is_a_view": """
v1 = torch.tensor([-0.81, 1.54, 0.14], requires_grad=True)
v3 = torch.stack([v1], 0)
v6 = torch.autograd.grad(v3.sum(), [v1], retain_graph=True, allow_unused=True)[0]  # values
v8 = v6.view(1, 3)  # layout
""",
    # diag's gradient is the diagonal of the cotangent: of sum()'s expanded one, a stride-0
    # view whose elements share one memory location, so writing one writes all
    "diag_gradient_is_a_view": """
v2 = torch.tensor([-0.72, -0.67, 0.27], requires_grad=True)
v6 = v2.diag()
v8 = torch.autograd.grad(v6.sum(), [v2], retain_graph=True, allow_unused=True)[0]  # values
v8[-2::2] = -2  # layout
""",
    # amax/amin keep the first zero they meet, so 1 / amax is inf where PyTorch's is
    "amax_first_signed_zero": """
v2 = torch.tensor([[0.02, 1.86], [-1.67, 1.88], [0.5, -0.79]], requires_grad=True)
v3 = v2 % v2
v4 = v3.amax(-2)
v8 = torch.reciprocal(v4)
w = 1 / torch.tensor([0.0, -0.0, 0.0]).amax()
""",
    # the gradient of x ** e is 0 where e is 0, even for a nan cotangent (std of ones)
    "pow_tensor_exponent_zero_gradient": """
v1 = torch.tensor([[-2.74, 2.0, -2.5]], requires_grad=True)
v2 = torch.tensor(2.0, requires_grad=True)
v4 = torch.remainder(v2, True)
v7 = v1.mT ** v4
v8 = v7.std(1)
v12 = torch.autograd.grad(v8.sum(), [v1], retain_graph=True, allow_unused=True)[0]  # values
""",
    # integer powers with the lowest int32 as exponent (a cast of inf), and a copy_ into a
    # bool view that is one of split's outputs (nothing to record, so no view check)
    "int_pow_lowest_exponent_and_bool_split_copy": """
v1 = torch.tensor([-2.86, 2.67, 2.67], requires_grad=True)
v2 = torch.tensor([[-2.1], [0.0], [0.16]], requires_grad=True)
v4 = (v1 / v2).int()
v7 = v4.unbind(1)[1]
v8 = v7 ** v4
w2 = torch.tensor([[-0.34, 1.0, -0.28]], requires_grad=True)
w8 = w2 == torch.tensor([[1.63], [-1.03]])
w9 = w8.split(1, -2)[1]
w9.copy_(w2 % 0)
""",
    # clamp (number or tensor bounds), maximum and minimum keep x's zero on a tie of -0 and
    # +0, as PyTorch's max/min; floor division by the product then has PyTorch's signs
    "clamp_signed_zero_ties": """
v1 = torch.tensor([[[1.54, -2.5, 1.29], [0.65, 0.5, -1.99]], [[-1.59, -1.71, 2.75], [-0.63, -2.23, 0.36]]], dtype=torch.float64, requires_grad=True)
v3 = v1.floor().clamp(max=-0.0)
v4 = v3 * v1
v5 = v1 // v4
z = torch.tensor([0.0, -0.0, 1.0])
w = 1 / torch.clamp(z, min=torch.tensor(-0.0))
u = 1 / torch.maximum(z, torch.tensor(-0.0))
t = 1 / torch.minimum(-z, torch.tensor(0.0))
""",
    # a copy of a view walking the target's memory as the target does (an expanded gradient
    # into itself) returns at once in PyTorch, before any overlap check
    "copy_same_data_expanded": """
v2 = torch.tensor([-1.17, 0.52, -1.25, 2.02], requires_grad=True)
v3 = torch.autograd.grad(v2.sum(), [v2], retain_graph=True, allow_unused=True)[0]  # values
v3[None] = v3
""",
    # cumprod's gradient where the input holds zeros follows PyTorch's masked form (inf
    # and nan cotangents or inputs past the first zero do not reach the earlier elements),
    # and with create_graph its O(n^2) form
    "cumprod_gradient_at_zeros": """
v1 = torch.tensor([[1.12, 0.0], [0.06, -2.92], [-0.6, 2.98]], requires_grad=True)
v2 = v1.cumprod(-2)
v5 = v2 % v2
loss = v5.sum(); loss.backward(retain_graph=True)
_g = v1.grad
x = torch.tensor([2.0, 0.0, float("inf"), 4.0, 0.0, 3.0], requires_grad=True)
x.cumprod(0).sum().backward()
_g = x.grad
w = torch.tensor([[0.0, 2.0, 3.0], [2.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
c = torch.tensor([[1.0, 1.0, float("nan")], [1.0, float("inf"), 1.0]], dtype=torch.float64)
gw = torch.autograd.grad(w.cumprod(1), [w], c, create_graph=True)[0]  # values
""",
    # an advanced index's result is laid out as PyTorch's index kernel lays it out: by the
    # strides of the input restrided and of the index arrays viewed with ones around them
    # (their own strides, size-1 dimensions included), masks as vectors of positions
    "index_result_layout": """
v1 = torch.tensor([[[1.54, 2.56, -2.25], [-0.88, 2.98, 2.45]], [[1.75, -0.3, -1.36], [-2.14, 1.0, -0.78]]], requires_grad=True)
v7 = v1.permute(1, 2, 0)
v10 = v7[0::2, [-3, -2], :]  # layout
x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
y = x.T[None, [1, 0]]  # layout
z = y.view(4)
s = x.T[:, torch.tensor([True, False])].stride()
t = x.permute(1, 0)[None, [1, 0], None].stride()
""",
    # zeros_like / ones_like / full_like keep a dense input's strides (PyTorch's
    # preserve_format), so a view of them is laid out as PyTorch's
    "like_keeps_layout": """
v2 = torch.tensor([[[-2.46, -1.05, 2.85]], [[2.71, 1.13, -2.34]]], requires_grad=True)
v4 = v2.transpose(2, 0)
v11 = torch.ones_like(v4)
v16 = v11.permute(2, 1, 0)  # layout
v1 = torch.tensor([[-1.24, 1.13], [0.5, 0.58], [-2.14, 2.44]], requires_grad=True)
v8 = torch.zeros_like(v1.T)[1]  # layout
s = torch.full_like(v1.T, 2.0).stride()
""",
    # views keep PyTorch's strides along dimensions of size 1 (expand, view, unsqueeze,
    # squeeze), and the overlap check of an in-place op compares them as they are: v[::2]
    # of one element is not the same walk as v (strides 2 and 1), a view expanded to its
    # own shape is
    "size_one_strides_in_overlap_check": """
v = torch.tensor([1.5], requires_grad=True).clone()
v[-3::2] = v
v2 = torch.tensor([0.82], requires_grad=True)
v3 = v2.tanh()
v4 = v3.expand(-1)
v4.sub_(v3)
w = torch.tensor([[1.5, 2.0, 3.0]])
w[:, :1].copy_(w[:, :1].T)
s = torch.ones(1).expand(1, 1).stride()
s2 = torch.ones(2, 3)[:, :1].view(1, 2, 1).stride()
s3 = torch.ones(1, 3).squeeze(0).unsqueeze(1).stride()
""",
    # x[key] = value where nothing is selected: an empty list indexes as int64, and the
    # checks come in PyTorch's order (an index into an empty dimension, the value's shape,
    # its dtype, then positions out of range only where something is written)
    "setitem_selecting_nothing": """
v = torch.zeros(0, requires_grad=True).clone()
v[[]] = 2.0
e = torch.zeros(0)
e[[]] = torch.ones(1, requires_grad=True)
x = torch.zeros(2, 0)
x[:, []] = torch.ones(3, 1)
y = torch.zeros((1, 0, 2), dtype=torch.float64)
y[:0, [1]] = torch.ones(0, 3)
z = torch.zeros(2, 1, dtype=torch.float64)
z[:0, [1]] = torch.ones(0, dtype=torch.float64)
""",
    # an in-place op whose operand reads elements it writes (not refused: the operand is not
    # dense) reads them as PyTorch's kernel does, after they are written: element by element,
    # or a SIMD vector at a time along a contiguous run
    "inplace_operand_reads_written_elements": """
v3 = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], requires_grad=True).clone()
v3.copy_(v3[:, 0])
w = torch.arange(58.0, dtype=torch.float64).reshape(2, 29)
w[:, 1:].add_(w[:, :-1])
u = torch.arange(140.0).reshape(2, 70)
u.add_(u[:, 5:6])
t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
t[0] = t[:, 0]
""",
    # add/sub with alpha=0 still multiply: 0 * inf is nan, as in PyTorch (BLAS's saxpy
    # returns at once for a zero factor, so it is not used then)
    "add_alpha_zero_keeps_nan": """
v4 = torch.arange(4.0)
v9 = torch.relu(v4).log2()
v11 = torch.sub(v9, v9, alpha=0)
v1 = torch.tensor([[-1.66, 0.43, 2.7], [-0.65, -0.17, 2.59]], requires_grad=True)
v3 = torch.add(v1, v1.log1p(), alpha=0)
w = torch.tensor([1.0, 2.0]).add_(torch.tensor([float("inf"), 1.0]), alpha=0)
""",
    # alpha is checked against the result dtype: a float alpha for a bool result raises;
    # an in-place add of a 0-dim float32 tensor to itself with alpha (a fused multiply-add
    # landing on a tie) returns PyTorch's value
    "alpha_checks_and_0d_fma": """
v1 = torch.tensor([[[2.94, 0.1, -2.85]], [[2.22, -1.71, -2.29]]], dtype=torch.float64, requires_grad=True)
v2 = v1 >= v1
v4 = torch.add(v2, False, alpha=0.5)
u = torch.tensor(-2.94, requires_grad=True)
u.detach_()
u.add_(u, alpha=2)
a = torch.tensor([-0.47, 1.02, -0.86], requires_grad=True).max()
b = torch.lerp(a.view_as(a), torch.tensor(0.19, requires_grad=True), 0.5)
""",
    # an in-place op whose operands broadcast past the target's shape is refused for the
    # shape before its dtypes are looked at (bool pow_ / lerp_ are otherwise not implemented)
    "inplace_shape_checked_before_dtype": """
v1 = torch.tensor([[2.28], [2.05]], requires_grad=True)
v8 = v1[-2] >= v1[-2]
v9 = torch.tensor([True, False])
v8.pow_(v9)
w = torch.tensor([[[2.24, 0.77, -2.22], [-2.5, 2.0, -0.2]], [[0.07, 0.59, 0.59], [-1.22, 0.2, -1.71]]], dtype=torch.float64, requires_grad=True)
w2 = w.any(-2, keepdim=True)
w2.lerp_(w < w, 0.3)
""",
    # gradients that are the cotangent itself in PyTorch: prod over a slice of one element
    # holding zeros (so a create_graph gradient of a constant needs no grad), repeat with
    # nothing tiled (a stride-0 view of sum's cotangent)
    "gradient_is_the_cotangent": """
v1 = torch.tensor([[[0.0, -2.5, 1.26]], [[1.0, 0.57, -0.09]]], requires_grad=True)
v3 = v1.prod(1)[-1:]
gg = torch.autograd.grad(v3.sum(), [v1], create_graph=True)[0]  # values
v2 = torch.tensor([0.0, 2.73, 1.9, 2.6], requires_grad=True)
v4 = v2.repeat(1)
v5 = torch.autograd.grad(v4.sum(), [v2], retain_graph=True, allow_unused=True)[0]  # values
v8 = v5[-2:]  # layout
""",
    # var/std of float32 accumulate in float64 as PyTorch's: a constant slice has variance 0
    # exactly, so 0 ** x is 0 and not a tiny power
    "var_of_constant_is_zero": """
v2 = torch.tensor([[[1.31, 0.68, 2.42], [1.0, 0.0, 0.99]], [[0.5, 2.25, 2.01], [-2.38, 0.0, -2.88]]], requires_grad=True)
v8 = v2.clamp(0.3, -1.8).var(-1, keepdim=True)
v9 = v8 ** v2
""",
    # a list key holding lists, tensors, slices, None or Ellipsis is a tuple of indices
    # (numpy's old rule, kept by PyTorch), in getitem and setitem alike
    "list_key_read_as_tuple": """
x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
y = x[[[1, 0], [0, 2]]]
z = x[[torch.tensor(1), torch.tensor(2)]]
w = x.detach().clone()
w[[[0, 1], [1, 2]]] = 5.0
""",
    # cumsum over a dimension of size 1 hands its cotangent back (sum's stride-0 view), so
    # a transpose of that gradient is laid out as PyTorch's
    "cumsum_gradient_over_one_element": """
v1 = torch.tensor([[0.42, 1.59, 2.99]], requires_grad=True)
v2 = v1.cumsum(0)
v3 = torch.autograd.grad(v2.sum(), [v1], retain_graph=True, allow_unused=True)[0]  # values
v4 = v3.transpose(-1, -2)  # layout
""",
    # a view taken before its base had history, and never asked for its grad_fn since, is
    # still a leaf for PyTorch's in-place check (its history is made only when asked for)
    "inplace_on_view_older_than_base_history": """
v2 = torch.tensor([[0.96], [-2.5]], requires_grad=True)
v3 = torch.tensor([[2.82, 2.34, 1.22], [-2.06, -2.69, 0.3]])
v5 = v3[None, ::1]
v3.lerp_(v2, 0.3)
v5.zero_()
w3 = torch.tensor([[2.82, 2.34, 1.22], [-2.06, -2.69, 0.3]])
w5 = w3[None, ::1]
w3.lerp_(v2, 0.3)
w6 = w5 * 2
w5.zero_()
""",
    # x[key] = x: the value loses its leading ones (a view of its own) before the overlap
    # check, which an empty value then passes
    "setitem_self_empty_value": """
v1 = torch.tensor(1.88, requires_grad=True)
v9 = v1.argmax().data.reshape(1, 1)
v10 = v9.split([1, 0], 1)[1]
v10[[-1, -1, -1]] = v10
""",
    # PyTorch's overlap checks look at memory, not at version counters: an operand taken
    # through .data (a counter of its own) that overlaps part of the target is refused too
    "overlap_through_data": """
v1 = torch.tensor([[0.05, -2.5, -2.5], [1.22, -1.0, 2.5]], requires_grad=True)
v4 = v1.any(-1)
v12 = v4.data[-2::2]
v4.copy_(v12)
w = torch.arange(9.0).reshape(3, 3)
w.copy_(w.data[:, 0])
""",
    # a batch of matrix products with nothing to multiply (an empty result or inner
    # dimension) skips PyTorch's dtype check: zeros, or nothing, of the second operand's dtype
    "bmm_empty_product_mixed_dtypes": """
v1 = torch.tensor([], dtype=torch.float64, requires_grad=True)
v4 = v1[None, None]
v5 = torch.tensor([[-1.91], [2.27], [-1.68]], requires_grad=True)
v8 = v5 @ v4
v8.sum().backward()
_g = v5.grad
a = torch.zeros(1, 3, 0)
b = torch.zeros(1, 0, 2, dtype=torch.float64)
c = torch.bmm(a, b)
d = torch.bmm(b.transpose(1, 2), a.transpose(1, 2))
e = torch.bmm(torch.ones(1, 2, 3), torch.ones(1, 3, 2, dtype=torch.float64))
f = torch.ones(3, 1) @ torch.ones(1, 0, dtype=torch.float64)
""",
    # lerp checks the shapes before it looks for a kernel of the dtype (bool has none), and
    # lerp_ refuses a promoted dtype (a 0-dim int weight) its target cannot hold first
    "lerp_bool_check_order": """
b = torch.tensor([True, False])
e = torch.zeros(0, dtype=torch.bool)
y = torch.lerp(b, e, 0.5)
z = torch.lerp(b, b, e)
u = torch.lerp(b, b, torch.tensor(3))
w = b.clone()
w.lerp_(b, torch.tensor(3))
""",
    # a dense input's strides along size-1 dimensions (a permuted view's) are kept by an
    # elementwise result and decide where()'s order later; where() sees a converted operand
    # (an expanded float32 one promoted to float64) as .to() lays it out
    "where_layout_size_one_strides_and_converted_operands": """
c = torch.arange(6.0).reshape(1, 2, 3).permute(1, 0, 2) > 0
b = torch.arange(3.0, dtype=torch.float64).reshape(1, 3, 1, 1).permute(2, 3, 0, 1)
y = torch.where(c, torch.tensor(1.5), b)  # layout
a = torch.arange(3.0).reshape(1, 3, 1).expand(3, 3, 1)
d = torch.arange(18.0, dtype=torch.float64).reshape(3, 3, 2).permute(1, 0, 2)
z = torch.where(torch.tensor([[True, False]]), a, d)  # layout
""",
    # x[key] = value on a leaf that requires grad: autograd's check comes before index_put_
    # looks at the indices (out of range in an empty dimension) or the value's shape
    "setitem_leaf_checked_before_indices": """
x = torch.zeros(0, 3, requires_grad=True)
x[[0]] = torch.ones(5)
x[None, [1, -2]] = torch.ones(1, requires_grad=True)
""",
    # a view's history replayed after an in-place change (AsStridedBackward0): PyTorch's
    # as_strided backward gives plain zeros when the view or its base has no elements, so
    # the create_graph gradient does not require grad
    "create_graph_through_empty_replayed_view": """
v2 = torch.tensor([[], []], requires_grad=True)
v4 = torch.where((v2 > 0), v2, -1.33)
v7 = v4[-1, 1::1]
v7[None, :5:2] = -0.0
gg = torch.autograd.grad(v7.pow(2).mean(), [v2], create_graph=True)[0]  # values
w = torch.zeros(2, 3, requires_grad=True)
s = (w * 1)[:, 3:]
s.fill_(1.0)
gw = torch.autograd.grad(s.pow(2).sum(), [w], create_graph=True)[0]  # values
""",
    # a second Ellipsis moves an advanced index past the target's last dimension: PyTorch's
    # index kernel refuses that (IndexError) before it checks the value for overlap
    "setitem_index_past_last_dim_before_overlap": """
x = torch.zeros(0, 0, 1, dtype=torch.bool)
x[..., ..., [-1, -1, -1]] = x
y = torch.zeros(2, 2, 2)
y[..., ..., :, [0]] = y
""",
    # a float32 target += a float64 tensor: the gradient reaching the float64 operand is cast
    # back to float64 (it kept the target's float32 with create_graph)
    "inplace_promoted_operand_grad_dtype": """
a = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
e = torch.tensor([], dtype=torch.float64, requires_grad=True)
x = torch.zeros(2)
x += a
(g,) = torch.autograd.grad(x.pow(2).sum(), [a], create_graph=True)
gd = g.detach()
y = torch.tensor([])
y[3::2] += e
(h,) = torch.autograd.grad(y.pow(2).sum(), [e], create_graph=True)
hd = h.detach()
""",
    # the gradient through x.expand(()) is a sum (PyTorch's sum_to to shape ()), no view made
    # under no_grad, so an in-place op on it that records history is allowed
    "grad_of_0d_expand_modified_in_place": """
x = torch.tensor(1.12, requires_grad=True)
e = x.expand(())
g = torch.autograd.grad(e.sum(), [x], retain_graph=True)[0]
g.mul_(e)
""",
    # an elementwise result of a view with a size-1 dimension had numpy's stride there, so
    # its view_as no longer looked like the same memory to the in-place op's overlap check
    "imul_by_own_view_as": """
x = torch.arange(8.0).reshape(2, 4)[1::2]
y = -x
z = y.view_as(y)
y *= z
b = x > 5
c = b.view_as(b)
b &= c
""",
    # a leaf's hooks ran before its old AccumulateGrad raised (the leaf was detached and got a
    # history in place); PyTorch reads the hooks from the tensor then, and it has none
    "leaf_hook_after_detach_and_inplace": """
v1 = torch.tensor([[0.5, 1.5], [2.0, -1.0]], requires_grad=True)
v2 = v1.ceil()
v1.register_hook(hook('v1'))
v1.detach_()
v1 -= v2
v1.pow(2).mean().backward()
_log = list(log)
""",
}


def _target(line):
    m = (re.match(r"(\w+)\s*=[^=]", line) or re.match(r"(\w+)\.\w+_\(", line)
         or re.match(r"(\w+)\[.*\]\s*\S?=[^=]", line))
    return m.group(1) if m else None


def program(text):
    stmts = []
    for line in text.strip().splitlines():
        source, _, mark = line.partition("  # ")
        target = _target(source)
        mode = "values" if target == "_g" or mark == "values" else "full"
        tag = "view.finding" if mark == "layout" else "finding"
        stmts.append(Stmt(tag, source, target, mode))
    return Program(0, stmts)


@pytest.mark.parametrize("name", FINDINGS)
def test_fuzz_finding_matches_torch(name):
    prog = program(FINDINGS[name])
    finding = check.check(prog)
    assert finding is None, check.describe(prog, finding)


@pytest.mark.parametrize("reduce", ["var", "std"])
def test_var_backward_is_scaled_cotangent_times_centered(reduce):
    """var's recorded backward multiplies (2 / dof * g) by x - mean, in PyTorch's order: the
    graph of a create_graph gradient is Mul(None, Sub(x, Mean)) as in PyTorch, and its
    values are PyTorch's bits (from seed 3906262147190, whose double backward still differs
    in the rounding residue of sum(x - mean), a float32 reduction order)."""
    import torch

    import adcompile

    shown = []
    for lib in (torch, adcompile):
        x = lib.tensor([[0.86, 0.03, -1.42], [2.96, 0.0, -2.78]], requires_grad=True)
        y = getattr(x, reduce)(1)
        (g,) = lib.autograd.grad((y.expm1() ** 2).sum(), [x], create_graph=True)
        node = g.grad_fn
        names = []
        while node is not None and len(names) < 6:
            names.append(type(node).__name__)
            nexts = [n for n, _ in node.next_functions if n is not None]
            node = nexts[-1] if nexts else None
        shown.append((names, g.detach().numpy().tolist()))
    assert shown[0] == shown[1]
