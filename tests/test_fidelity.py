"""Differential fidelity cases against PyTorch 2.13, round 2 (issue 15, items 1-9).

Each case is a snippet `(torch, rec)` run once on PyTorch and once on adcompile with the
harness of `test_semantics.py`; the observation lists must be equal. The cases are grouped by
the item of the issue they pin down: graph nodes and edges, memory layout, create_graph flags,
safety checks, values, dtype flow, escaped numpy exceptions, error classes and dtype checks.
"""

import pytest
from test_semantics import Raised, assert_matches_torch, catch, edges

CASES = {}


def case(fn):
    assert fn.__name__ not in CASES
    CASES[fn.__name__] = fn
    return fn


def graph(t, depth=3):
    """grad_fn names along next_functions, breadth first, `depth` levels deep."""
    out = []
    level = [t.grad_fn]
    for _ in range(depth):
        out.append([type(n).__name__ if n is not None else None for n in level])
        level = [m for n in level if n is not None for m, _ in n.next_functions]
    return out


# == 1. grad_fn names and graph edges =========================================================

@case
def n1_addcmul_lerp_nodes(torch, rec):
    a = torch.ones(3, requires_grad=True)
    b = torch.full((3,), 2.0, requires_grad=True)
    c = torch.full((3,), 3.0)
    for y in (torch.addcmul(a, b, c, value=0.5), torch.lerp(a, b, 0.25),
              torch.lerp(a, b, c), a.addcmul(b, c), a.lerp(b, 0.5)):
        rec(y, edges(y))
        y.sum().backward()
    rec(a.grad, b.grad)


@case
def n1_setitem_ellipsis_is_copy(torch, rec):
    v = torch.ones(2, 3, requires_grad=True)
    x = torch.zeros(2, 3)
    x[...] = v
    rec(x, edges(x))
    x.sum().backward()
    rec(v.grad)
    y = torch.zeros(2, 3)
    y[:] = v * 2
    rec(y, edges(y))


@case
def n1_full_range_slices(torch, rec):
    x = torch.ones(2, 3, requires_grad=True)
    for y in (x[:], x[:, 0:3], x[0:2], x[:, :], x[:, 0:5], x[0:2, 1:], x[..., :],
              x[:, ::1], x[-5:]):
        rec(y, graph(y), y._base is x)


@case
def n1_copyslices_after_scalar_fill(torch, rec):
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    y[0] = 5.0
    rec(y, graph(y))
    z = x.clone()
    z[1:] = 0
    rec(z, graph(z))
    z.sum().backward()
    rec(x.grad)


@case
def n1_chunk_on_empty_dim(torch, rec):
    x = torch.ones(0, 3, requires_grad=True)
    parts = x.chunk(2)
    rec(len(parts), [graph(p, 1) for p in parts])
    parts = x.chunk(3, 1)
    rec(len(parts), [graph(p, 1) for p in parts])


@case
def n1_matmul_3d_1d_and_outer(torch, rec):
    a = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    v = torch.arange(4.0, requires_grad=True)
    y = a @ v
    rec(y, graph(y, 4))
    y.sum().backward()
    rec(a.grad, v.grad)
    u = torch.arange(3.0, requires_grad=True)
    o = torch.outer(u, v)
    rec(o, graph(o, 3))
    o.sum().backward()
    rec(u.grad)
    w = u @ a
    rec(w, graph(w, 4))


@case
def n1_matmul_shapes(torch, rec):
    shapes = [((2, 3, 4), (4,)), ((3,), (2, 3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
              ((2, 1, 3, 4), (4, 2)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
              ((4,), (4,)), ((2, 3, 4), (2, 4, 5))]
    for sa, sb in shapes:
        for ra, rb in ((True, True), (True, False), (False, True)):
            a = torch.ones(sa).requires_grad_(ra)
            b = torch.ones(sb).requires_grad_(rb)
            y = a @ b
            rec(y, graph(y, 4), y.stride())
            y.sum().backward()
            rec(a.grad, b.grad)
    u = torch.ones(3, requires_grad=True)
    o = torch.outer(u, torch.ones(2))
    rec(o, graph(o, 3))


# == 2. memory layout =========================================================================

@case
def l2_results_contiguous_as_torch(torch, rec):
    a = torch.arange(6.0).reshape(2, 3)
    b = torch.arange(12.0).reshape(3, 4)
    c = torch.arange(6.0).reshape(3, 2).t()
    results = {
        "matmul": a @ b, "matmul_t": c @ b, "mT@": a.mT @ a, "mm": torch.mm(c, b),
        "stack0": torch.stack([a, a]), "stack1": torch.stack([a, a], 1),
        "stack2": torch.stack([a, a], 2), "stack_t": torch.stack([c, c], 1),
        "where": torch.where(a > 2, a, c), "where_t": torch.where(c > 2, c, c),
        "adv": a[[1, 0]], "adv1": a[:, [2, 0]], "adv_t": c[:, [1, 0]],
        "mask": a[a > 2], "adv2": a[[0, 1], [1, 2]], "bmm": torch.bmm(a[None], b[None]),
        "cat1": torch.cat([c, c], 1), "mul_t": c * 2, "add_tt": c + c,
        "exp_t": c.exp(), "sum_t": c.sum(0),
    }
    for name, r in results.items():
        rec(name, r, r.is_contiguous(), r.stride(), catch(lambda: r.view(-1).shape))
        rec(r.contiguous() is r)


# == 3. create_graph flags ====================================================================

@case
def g3_create_graph_requires_grad(torch, rec):
    x = torch.tensor([[1.5, 2.0]], requires_grad=True)
    ops = [lambda x: x.cumprod(0), lambda x: x.cumprod(1), lambda x: x * 3, lambda x: x + 1,
           lambda x: x.exp(), lambda x: x.sum(0) * 2, lambda x: x.abs(), lambda x: x.relu(),
           lambda x: x.floor(), lambda x: x.sign(), lambda x: x.clamp(0, 1.8),
           lambda x: x.mean(), lambda x: x.expand(3, 2), lambda x: x.max(),
           lambda x: x.cumsum(1), lambda x: x[0, 1]]
    for f in ops:
        (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
        rec(g, g.requires_grad)


# == 4. safety checks =========================================================================

@case
def s4_second_backward_through_index(torch, rec):
    x = torch.arange(6.0, requires_grad=True)
    y = x[[0, 2, 2]]
    z = (y * y).sum()
    z.backward()
    rec(catch(lambda: z.backward()))
    w = x.reshape(2, 3)[[1, 0]]
    s = w.sum()
    s.backward()
    rec(catch(lambda: s.backward()), x.grad)


@case
def s4_inplace_operand_is_target(torch, rec):
    for op in ("pow_", "div_", "mul_", "add_", "sub_"):
        x = torch.tensor([1.5, 2.0, 3.0], requires_grad=True)
        a = x * 1
        r = catch(lambda: getattr(a, op)(a))
        rec(op, r)
        if not isinstance(r, Raised):
            rec(catch(lambda: a.sum().backward()), x.grad)


@case
def s4_inplace_operand_is_target_on_view(torch, rec):
    x = torch.tensor([1.5, 2.0, 3.0, 4.0], requires_grad=True)
    a = x * 1
    v = a[1:3]
    s = v * v
    a.mul_(2)
    v2 = a[1:3]
    r = catch(lambda: v2.div_(v2))
    rec(r, catch(lambda: s.sum().backward()))


@case
def s4_detach_inplace_of_saved(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.detach_()
    rec(y, catch(lambda: z.sum().backward()), x.grad)


@case
def s4_leaf_detached_after_use(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()
    x.detach_()
    rec(x, catch(lambda: y.backward()), x.grad)


@case
def s4_overlapping_copy(torch, rec):
    x = torch.arange(5.0)
    rec(catch(lambda: x[1:].copy_(x[:-1])), x)
    y = torch.arange(5.0)
    rec(catch(lambda: y[1:3].copy_(y[3:5])), y)
    z = torch.arange(4.0)
    rec(catch(lambda: z.copy_(z)), z)


# == 5. values ================================================================================

@case
def v5_setitem_mixed_advanced_order(torch, rec):
    x = torch.zeros(2, 3, 4)
    x[0, :, [1, 2]] = torch.arange(6.0).reshape(3, 2)
    rec(x)
    y = torch.zeros(2, 3, 4)
    y[:, 1, [0, 3]] = torch.arange(4.0).reshape(2, 2)
    rec(y)
    z = torch.zeros(2, 3, 4)
    z[[0, 1], :, 2] = torch.arange(6.0).reshape(2, 3)
    rec(z)
    w = torch.zeros(2, 3, 4)
    w[1, [0, 2], :] = torch.arange(8.0).reshape(2, 4)
    rec(w, catch(lambda: w[0, :, [1, 2]]))


@case
def v5_add_bool_alpha(torch, rec):
    t = torch.tensor([True, False])
    f = torch.tensor([True, True])
    rec(catch(lambda: torch.add(t, f, alpha=2)), catch(lambda: torch.add(t, f, alpha=True)))


@case
def v5_integer_pow_negative(torch, rec):
    b = torch.tensor([2, 3, 1, -1])
    rec(catch(lambda: b ** -1), catch(lambda: torch.pow(b, torch.tensor([-1, -2, -3, -3]))))
    rec(catch(lambda: torch.tensor([0, 2]) ** torch.tensor([-1, 0])))


@case
def v5_nan_gradients(torch, rec):
    nan = float("nan")
    for name in ("maximum", "minimum"):
        a = torch.tensor([nan, 1.0, nan, 2.0], requires_grad=True)
        b = torch.tensor([1.0, nan, nan, 2.0], requires_grad=True)
        getattr(torch, name)(a, b).sum().backward()
        rec(name, a.grad, b.grad)
    for name in ("relu", "abs", "sign"):
        x = torch.tensor([nan, -1.0, 0.0, 2.0], requires_grad=True)
        getattr(x, name)().sum().backward()
        rec(name, x.grad)


@case
def v5_signed_zeros(torch, rec):
    x = torch.tensor([-0.0, 0.0, -1.0, 2.0])
    r = x.relu()
    c = torch.tensor([-0.0, -0.0, 1.0, -1.0]).cumsum(0)
    rec(r, [str(v) for v in r.tolist()], [str(v) for v in c.tolist()])
    rec([str(v) for v in torch.tensor([-0.0]).sum().reshape(1).tolist()])


@case
def v5_log_softmax_huge(torch, rec):
    x = torch.tensor([1e308, -1e308, 1e307, 1e308], dtype=torch.float64)
    rec(x.log_softmax(0), x.softmax(0), torch.logsumexp(x, 0))
    y = torch.tensor([3e38, -3e38, 1.0])
    rec(y.log_softmax(0))


# == 6. dtype flow ============================================================================

@case
def d6_float_into_int_tensor(torch, rec):
    v = torch.tensor([1.5, 2.5], requires_grad=True)
    x = torch.zeros(3, dtype=torch.int64)
    x[:2] = v
    rec(x, x.requires_grad, x.grad_fn)
    y = torch.zeros(2, dtype=torch.int32)
    y.copy_(v)
    rec(y, y.requires_grad)
    z = torch.zeros(2, dtype=torch.bool)
    z[0] = v[1]
    rec(z)


@case
def d6_fill_into_int_tensor_requires_grad(torch, rec):
    """PyTorch's quirk, reproduced: copy_ into an integer tensor checks its dtype, the other
    in-place ops do not, so a fill by a 0-dim value that requires grad (fill_, masked_fill_,
    index_put_ with a mask, and setitem wherever it fills: `x[0:1] = v0`, `x[...] = v0`,
    `x[None] = v0`, `x[True] = v0`, a mask with a one-element value) makes an integer or bool
    tensor require grad; an op giving an integer result from it then raises, a float result
    is recorded, and backward into it raises."""
    fills = [lambda x, v: x.fill_(v), lambda x, v: x.masked_fill_(x == 0, v),
             lambda x, v: x.__setitem__(slice(0, 1), v), lambda x, v: x.__setitem__(..., v),
             lambda x, v: x.__setitem__(None, v), lambda x, v: x.__setitem__(True, v),
             lambda x, v: x.__setitem__(x == 0, v.reshape(1)),
             lambda x, v: x.__setitem__(0, v), lambda x, v: x.copy_(v),
             lambda x, v: x[0:2].fill_(v), lambda x, v: x.__setitem__(False, v),
             lambda x, v: x.__setitem__(slice(1, None), v * 2)]
    for dtype in (torch.int64, torch.bool):
        for fill in fills:
            x = torch.zeros(3, dtype=dtype)
            v = torch.tensor(1.5, requires_grad=True)
            fill(x, v)
            rec(x, x.requires_grad, x.is_leaf, type(x.grad_fn).__name__)
    x = torch.zeros(3, dtype=torch.int64)
    v = torch.tensor(1.5, requires_grad=True)
    x.fill_(v)
    for op in (lambda: x + 1, lambda: x.sum(), lambda: x[0], lambda: -x, lambda: x.abs(),
               lambda: x.split(1), lambda: x // 2, lambda: x > 0, lambda: x + 1.5,
               lambda: x.float(), lambda: x.clamp(0.5, 1), lambda: x.long()):
        r = catch(op)
        rec(r if isinstance(r, Raised) else (r, r.requires_grad) if not isinstance(r, tuple)
            else r[0])
    y = x * torch.ones(3, requires_grad=True)
    rec(y, catch(lambda: y.sum().backward()), v.grad)


# == 7. numpy exceptions escaping =============================================================

@case
def e7_numpy_errors(torch, rec):
    s = torch.tensor(2.0)
    e = torch.ones(3, 0)
    cases = [
        lambda: s.transpose(0, 0), lambda: s.t(), lambda: s.transpose(0, 1),
        lambda: torch.ones(3).expand(2, 3).add_(1), lambda: torch.ones(1).expand(3).mul_(2),
        lambda: torch.tensor([True, False]).sign(),
        lambda: e.softmax(1), lambda: e.softmax(0), lambda: e.log_softmax(1),
        lambda: torch.logsumexp(e, 1), lambda: torch.logsumexp(e, 0),
        lambda: e.argmax(1), lambda: e.argmax(0), lambda: e.argmax(), lambda: e.max(1),
        lambda: e.max(0), lambda: e.max(), lambda: e.min(1), lambda: e.norm(dim=1),
        lambda: e.norm(dim=0), lambda: e.norm(),
        lambda: torch.cat([torch.ones(0), torch.ones(2, 2)]),
        lambda: torch.cat([torch.ones(0), torch.ones(0)]),
        lambda: torch.cat([torch.ones(2, 0), torch.ones(3, 0)]),
        lambda: torch.cat([torch.ones(2, 0), torch.ones(3, 0)], 1),
        lambda: e.flatten(), lambda: e.flatten(0, 1), lambda: torch.ones(0, 2, 0).flatten(1),
        lambda: e.view(-1), lambda: e.reshape(0, -1), lambda: e.prod(1), lambda: e.mean(1),
    ]
    for k, f in enumerate(cases):
        rec(k, catch(f))


# == 8. error classes =========================================================================

@case
def c8_error_classes(torch, rec):
    a = torch.ones(2, 3)
    b = torch.ones(4)
    s = torch.tensor(1.0)
    cases = [
        lambda: a < b, lambda: a == b, lambda: a >= b, lambda: a.eq(b), lambda: a != b,
        lambda: a.add_(torch.ones(2, 1, 3)), lambda: a.mul_(b), lambda: torch.ones(1).add_(a),
        lambda: b.mT, lambda: s.mT, lambda: s.mH,
        lambda: s.chunk(2), lambda: s.split(1), lambda: s.narrow(0, 0, 1),
        lambda: torch.mv(a, torch.ones(2)), lambda: torch.mv(b, b), lambda: torch.mv(a, a),
        lambda: torch.stack([a, a], 3), lambda: torch.stack([a, a], -4),
        lambda: torch.stack([a, a], 2).shape,
    ]
    for k, f in enumerate(cases):
        rec(k, catch(f))


@case
def c8_reverse_slice_setitem(torch, rec):
    x = torch.zeros(3, 2)
    rec(catch(lambda: x.__setitem__((slice(None, None, -1), [0]), 1.0)), x)


# == 9. dtype checks ==========================================================================

@case
def t9_dtype_checks(torch, rec):
    m = torch.tensor([True, False])
    i = torch.tensor([1, 2])
    f = torch.tensor([1.0, 2.0])
    cases = [
        lambda: m.relu(), lambda: torch.relu(m), lambda: m.argmax(), lambda: m.abs(),
        lambda: m.floor(), lambda: m ** 2, lambda: m.pow(m), lambda: torch.pow(2, m),
        lambda: torch.addcmul(m, m, m), lambda: torch.addcmul(f, m, m),
        lambda: torch.add(i, i, alpha=0.5), lambda: torch.sub(i, i, alpha=0.5),
        lambda: torch.add(f, i, alpha=0.5), lambda: torch.add(i, 1.0, alpha=0.5),
        lambda: torch.lerp(f, f.double(), 0.5), lambda: torch.lerp(f, f, f.double()),
        lambda: torch.lerp(i, i, 0.5), lambda: m.ceil(), lambda: i.floor(), lambda: m.sum(),
    ]
    for k, fn in enumerate(cases):
        rec(k, catch(fn))


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_torch(name):
    assert_matches_torch(name, CASES[name])
