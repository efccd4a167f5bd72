"""Autograd semantics, differential against PyTorch 2.13: one snippet per behaviour of
`../shared/spec/eager-semantics.md` (the id in each name), run with `torch` bound to PyTorch and
to adcompile. A snippet records observations with `rec`; tensors are recorded as (dtype, shape,
values, requires_grad, is_leaf, grad_fn name); exceptions by type only (`catch`), warnings by
category and count (`warns`), since our messages are our own words."""

import gc
import warnings

import numpy as np
import pytest
import torch as real_torch

import adcompile

SNIPPETS = {}


def snippet(fn):
    SNIPPETS[fn.__name__] = fn
    return fn


class Recorder:
    def __init__(self, lib):
        self.lib = lib
        self.seen = []

    def __call__(self, *values):
        self.seen.append(tuple(self.norm(v) for v in values))

    def norm(self, v):
        if isinstance(v, self.lib.Tensor):
            vals = _significant(np.asarray(v.detach().numpy(), dtype=np.float64))
            return ("T", str(v.dtype), list(v.shape), vals, v.requires_grad, v.is_leaf,
                    type(v.grad_fn).__name__ if v.grad_fn is not None else None)
        if isinstance(v, (tuple, list)):
            return type(v).__name__, [self.norm(x) for x in v]
        if isinstance(v, dict):
            return {k: self.norm(x) for k, x in v.items()}
        if type(v).__name__.endswith(("Backward", "Backward0", "Backward1", "Backward2",
                                      "Backwards", "AccumulateGrad", "CopySlices")):
            return "node:" + type(v).__name__
        if isinstance(v, float):
            return float(f"{v:.5g}")
        return v

    def catch(self, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the type is the observation
            self.seen.append(("raise", type(e).__name__))
            return
        self.seen.append(("ok",))

    def warns(self, fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn()
        self.seen.append(("warnings", sorted(w.category.__name__ for w in caught)))
        return result


def _significant(values):
    """Values to 5 significant digits: float32 results may differ in the last bit."""
    return np.vectorize(lambda x: float(f"{x:.5g}"), otypes=[float])(values).tolist() \
        if values.size else values.tolist()


def edges(t):
    return [(type(n).__name__ if n is not None else None, i)
            for n, i in t.grad_fn.next_functions]


# -- B: requires_grad, is_leaf -----------------------------------------------------------------

@snippet
def B1_requires_grad_(torch, rec):
    t = torch.ones(2)
    rec(t.requires_grad_() is t, t.requires_grad)
    t.requires_grad_(False)
    rec(t.requires_grad)


@snippet
def B3_contagion(torch, rec):
    a = torch.ones(2)
    rec(a * a)
    b = torch.ones(2, requires_grad=True)
    rec(a * b)


@snippet
def B8_B9_non_leaf_flags(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2

    def set_false():
        y.requires_grad = False

    def set_true():
        y.requires_grad = True

    rec.catch(set_false)
    rec.catch(lambda: y.requires_grad_(False))
    rec.catch(set_true)
    rec(y.requires_grad_() is y)


@snippet
def B10_int_tensors(torch, rec):
    rec.catch(lambda: torch.tensor([1, 2], requires_grad=True))
    rec.catch(lambda: torch.ones(2, dtype=torch.int32, requires_grad=True))
    rec.catch(lambda: torch.tensor([1, 2]).requires_grad_())
    rec.catch(lambda: torch.arange(3).requires_grad_())

    def set_attr():
        t = torch.tensor([True])
        t.requires_grad = True

    rec.catch(set_attr)
    t = torch.tensor([1])
    t.requires_grad = False
    rec(t.requires_grad)


@snippet
def B5_check_table(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    for t in (torch.tensor([1.0]), x, x + 1, x.to(torch.float64), x.to(torch.float32),
              torch.tensor([1.0]) + 1, x.float(), x.contiguous()):
        rec(t.is_leaf, t.requires_grad, type(t.grad_fn).__name__ if t.grad_fn else None,
            t is x)
    rec.catch(lambda: x.cuda())


@snippet
def B11_non_differentiable_outputs(torch, rec):
    x = torch.tensor([1.0, -1.0], requires_grad=True)
    rec(x > 0, x.argmax(), x.long(), x.round())


# -- D: next_functions ------------------------------------------------------------------------

@snippet
def D2_walk(torch, rec):
    A = torch.tensor([[1.0, 2], [3, 4]], requires_grad=True)
    C = (5 * (A + A)).mean()
    f = C.grad_fn
    rec(f, f.next_functions)
    f = f.next_functions[0][0]
    rec(f.next_functions)
    f = f.next_functions[0][0]
    acc = f.next_functions
    rec(acc, acc[0][0] is acc[1][0], acc[0][0].variable is A, acc[0][0].next_functions,
        acc[0][0].name())


@snippet
def D4_D5_constants(torch, rec):
    x = torch.ones(2, requires_grad=True)
    c = torch.ones(2)
    for t in (x + c, c + x, c * x, 2 * x, x * 2, 8 * x + c, x.sum(), 2 - x, 2 / x, 2 ** x,
              x - 2, c - x, x / c, c / x):
        rec(type(t.grad_fn).__name__, edges(t))
    b = x + 5
    rec(b.grad_fn.next_functions[1][0] is None, b.grad_fn is b.grad_fn)


@snippet
def D6_multi_output(torch, rec):
    q = torch.ones(4, requires_grad=True)
    p0, p1 = q.chunk(2)
    rec(edges(p0 + p1))
    a, b, c = q.split([1, 1, 2])
    rec(edges(a + b), type(c.grad_fn).__name__)


@snippet
def D7_shared_accumulator(torch, rec):
    x = torch.ones(1, requires_grad=True)
    a, b = x * 1, x * 2
    rec(a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0])


# -- E: backward -------------------------------------------------------------------------------

@snippet
def E1_E2_scalar(torch, rec):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    rec(z.backward(), x.grad, y.grad)
    s = torch.tensor(5.0, requires_grad=True)
    s.backward()
    rec(s.grad)
    w = torch.tensor(1.0, requires_grad=True)
    torch.autograd.backward(w * 3)
    rec(w.grad)


@snippet
def E3_E5_non_scalar(torch, rec):
    x = torch.ones(2, requires_grad=True)
    z = x + 2
    rec.catch(lambda: z.backward())
    rec.catch(lambda: z.backward(torch.ones(3)))
    rec.catch(lambda: (x.sum()).backward(torch.ones(1)))
    z.backward(torch.ones(2, dtype=torch.float64))
    rec(x.grad)


@snippet
def E4_scaled(torch, rec):
    x = torch.tensor(3.0, requires_grad=True)
    a = torch.tensor([4.0, 2.0], requires_grad=True)
    (x + a).backward(torch.tensor([1000.0, 1000.0]))
    rec(x.grad, a.grad)


@snippet
def E6_grad_variables(torch, rec):
    x = torch.ones(2, requires_grad=True)
    rec.warns(lambda: torch.autograd.backward([x * 2], grad_variables=[torch.ones(2)]))
    rec(x.grad)


@snippet
def E7_second_backward(torch, rec):
    y = torch.ones(2, requires_grad=True) * 3
    z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward(retain_graph=True)
    z.backward()
    rec.catch(lambda: z.backward())


@snippet
def E8_freeing_per_node(torch, rec):
    a = torch.ones(2, requires_grad=True)
    for make in (lambda: (a + 1).sum(), lambda: (-a).sum(), lambda: (a * 3).sum(),
                 lambda: (a / 2).sum(), lambda: a.exp().sum(), lambda: a.clone().sum(),
                 lambda: a[0] * 1, lambda: torch.cat([a, a]).sum(), lambda: a.mean(),
                 lambda: a.view(2, 1).expand(2, 3).sum(), lambda: (a * a).sum()):
        out = make()
        out.backward()
        rec.catch(lambda: out.backward())


@snippet
def E10_grad_then_grad(torch, rec):
    x = torch.tensor([4.0], requires_grad=True)
    y = torch.tensor([0.0], requires_grad=True)
    f = 5 * x**2 + 3 * torch.sin(y)
    rec(torch.autograd.grad(f, x), torch.autograd.grad(f, y))
    rec.catch(lambda: torch.autograd.grad(f, x))
    f = 5 * x**2 + 3 * torch.sin(y)
    f.backward()
    rec.catch(lambda: torch.autograd.grad(f, y))


@snippet
def E11_intermediate(torch, rec):
    a = torch.tensor(2.0, requires_grad=True)
    m = a.exp()
    o = m * m
    rec(torch.autograd.grad(o, m))
    rec(torch.autograd.grad(m, a))
    rec.catch(lambda: torch.autograd.grad(o, a))


@snippet
def E12_backward_inputs(torch, rec):
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    z = a * b
    z.backward(inputs=[a], retain_graph=True)
    rec(a.grad, b.grad)
    m = a * 3
    out = m * b
    out.backward(inputs=[m])
    rec(m.grad)
    c = torch.tensor(1.0, requires_grad=True)
    (a * 2).backward(inputs=[c])
    rec(c.grad)
    rec.catch(lambda: (a * 2).backward(inputs=[]))


@snippet
def E13_E14_multiple_roots(torch, rec):
    a = torch.tensor(1.0, requires_grad=True)
    torch.autograd.backward([a * 2, a * 3])
    rec(a.grad)
    a.grad = None
    r = a * 2
    torch.autograd.backward([r, r])
    rec(a.grad)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    torch.autograd.backward([y, y**3], [torch.ones(2), torch.ones(2)])
    rec(x.grad)
    v = torch.tensor(2.0, requires_grad=True)
    (v * v + v * 3 + v.exp()).backward()
    rec(v.grad)


@snippet
def E15_backward_in_no_grad(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    with torch.no_grad():
        y.backward()
    rec(x.grad)


# -- F: autograd.grad --------------------------------------------------------------------------

@snippet
def F1_F3_tuple_and_sum(torch, rec):
    x = torch.tensor(2.0, requires_grad=True)
    g = torch.autograd.grad(x**2, x)
    rec(type(g).__name__, g, x.grad)
    a = torch.tensor(1.0, requires_grad=True)
    rec(torch.autograd.grad([a * 5, a * 2], [a]))


@snippet
def F4_dict_inputs(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    rec(torch.autograd.grad((x * w).sum(), {"x": x, "w": w}))


@snippet
def F6_F9_second_and_unused(torch, rec):
    x = torch.tensor([4.0], requires_grad=True)
    y = torch.tensor([1.0], requires_grad=True)
    f = 5 * x**2 * y
    dfdx = torch.autograd.grad(f, x, create_graph=True)[0]
    rec(dfdx, torch.autograd.grad(dfdx, x))
    dfdy = torch.autograd.grad(f, y, create_graph=True)[0]
    rec(dfdy)
    rec.catch(lambda: torch.autograd.grad(dfdy, y, retain_graph=True))
    rec(torch.autograd.grad(dfdy, y, allow_unused=True, retain_graph=True))
    rec(torch.autograd.grad(dfdy, y, materialize_grads=True, retain_graph=True))
    rec.catch(lambda: torch.autograd.grad(dfdy, y, allow_unused=False, materialize_grads=True))


@snippet
def F10_bad_calls(torch, rec):
    x = torch.ones(2, requires_grad=True)
    c = torch.ones(2)
    rec.catch(lambda: torch.autograd.grad((x * 2).sum(), c))
    rec.catch(lambda: torch.autograd.grad(c.sum(), x))
    rec.catch(lambda: torch.autograd.grad((x * 2).sum(), []))
    rec.catch(lambda: torch.autograd.grad(x * 2, x))
    rec(torch.autograd.grad(x * 2, x, torch.ones(2)))
    rec(torch.autograd.grad(x * 2, x, [torch.ones(2)], only_inputs=True))


@snippet
def F11_non_leaf_inputs(torch, rec):
    a = torch.tensor(2.0, requires_grad=True)
    m = a * 2
    o = m * m
    rec(torch.autograd.grad(o, m, retain_graph=True), torch.autograd.grad(o, [a, m]))


@snippet
def F12_higher_order(torch, rec):
    a = torch.tensor(2.0, requires_grad=True)
    y = a**3
    g1 = torch.autograd.grad(y, a, create_graph=True)[0]
    g2 = torch.autograd.grad(g1, a, create_graph=True)[0]
    g3 = torch.autograd.grad(g2, a)[0]
    rec(g1, g2, g3)


@snippet
def F13_backward_create_graph(torch, rec):
    b = torch.tensor(2.0, requires_grad=True)
    rec.warns(lambda: (b**3).backward(create_graph=True))
    rec(b.grad)
    b.grad.backward()
    rec(b.grad)
    c = torch.tensor(1.0, requires_grad=True)
    rec.warns(lambda: torch.autograd.grad(c * c, c, create_graph=True))


@snippet
def F15_hvp(torch, rec):
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    q = torch.tensor([3.0, 4.0], requires_grad=True)
    z = (p**2 + q * p + q**2).sum()
    gp, gq = torch.autograd.grad(z, [p, q], create_graph=True)
    rec(gp, gq)
    rec(torch.autograd.grad(2 * gp + gq, [p, q], torch.ones(2)))


# -- G: accumulation ---------------------------------------------------------------------------

@snippet
def G1_G5_in_place_accumulation(torch, rec):
    x = torch.ones(2, requires_grad=True)
    (x * 3).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    rec(first is x.grad, first)
    z = x.grad.zero_()
    rec(z is x.grad)
    (x * 2).sum().backward()
    rec(first is x.grad, x.grad)
    x.grad = None
    (x * 2).sum().backward()
    rec(first is x.grad, first, x.grad)
    mine = torch.ones(2)
    x.grad = mine
    (x * 2).sum().backward()
    rec(mine is x.grad, mine, x.grad.is_leaf, x.grad.requires_grad)


@snippet
def G9_grad_dtype_follows_leaf(torch, rec):
    h = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    (h * torch.ones(2)).sum().backward()
    rec(h.grad)


@snippet
def G10_grad_assignment(torch, rec):
    x = torch.ones(2, requires_grad=True)

    def assign(v):
        def go():
            x.grad = v
        return go

    rec.catch(assign(torch.ones(3)))
    rec.catch(assign(torch.ones(2, dtype=torch.float64)))
    rec.catch(assign(0))
    rec.catch(assign(x))
    x.grad = torch.ones(2)
    del x.grad
    rec(x.grad)


@snippet
def G11_unused_leaf(torch, rec):
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1, requires_grad=True)
    (a * 2).sum().backward()
    rec(b.grad)


# -- H: retain_grad ----------------------------------------------------------------------------

@snippet
def H1_non_leaf_grad_warning(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    rec(rec.warns(lambda: y.grad))
    rec(rec.warns(lambda: x.grad))
    rec(rec.warns(lambda: torch.ones(1).grad))
    rec(rec.warns(lambda: y.detach().grad))


@snippet
def H2_H5_retain_grad(torch, rec):
    A = torch.tensor([[1.0, 2], [3, 4]], requires_grad=True)
    B = 5 * (A + 3)
    rec(B.retain_grad(), B.retains_grad, A.retains_grad, B.grad)
    C = B.mean()
    C.backward(retain_graph=True)
    rec(A.grad, B.grad)
    C.backward()
    rec(B.grad)
    A.retain_grad()
    rec(A.retains_grad)
    rec.catch(lambda: torch.ones(1).retain_grad())


@snippet
def H3_chain(torch, rec):
    x = torch.tensor(2.0, requires_grad=True)
    y = x**2
    y.retain_grad()
    z = 2 * y
    z.retain_grad()
    z.backward()
    rec(z.grad, y.grad, x.grad)


@snippet
def H6_retain_then_inplace(torch, rec):
    a = torch.tensor([1.0], requires_grad=True)
    b = a * 3
    b.retain_grad()
    b.mul_(2)
    b.sum().backward()
    rec(b.grad, b.retains_grad, a.grad)


# -- I: hooks ----------------------------------------------------------------------------------

@snippet
def I2_seed_hook(torch, rec):
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(2, 2))
    seen = []
    w.register_hook(lambda g: seen.append(g.clone()) or g / 2)
    ((w - 1) ** 2).mean().backward()
    rec(seen, w.grad)


@snippet
def I3_I4_hook_chain(torch, rec):
    v = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_hook(lambda g: g * 2)
    v.backward(torch.tensor([1.0, 2.0, 3.0]))
    rec(v.grad)
    h.remove()
    h.remove()
    v.grad = None
    v.backward(torch.tensor([1.0, 2.0, 3.0]))
    rec(v.grad)
    x = torch.ones(2, requires_grad=True)
    log = []
    x.register_hook(lambda g: log.append(("h1", g.tolist())) or g * 10)
    x.register_hook(lambda g: log.append(("h2", g.tolist())))
    x.register_hook(lambda g: log.append(("h3", g.tolist())) or g + 1)
    (x * 3).sum().backward()
    rec(log, x.grad)


@snippet
def I5_I7_leaf_hooks(torch, rec):
    x = torch.ones(2, requires_grad=True)
    log = []
    x.register_hook(lambda g: log.append(g.tolist()))
    x.sum().backward()
    (x * 2).sum().backward()
    rec(log, x.grad)
    log.clear()
    torch.autograd.grad((x * 4).sum(), x)
    rec(log, x.grad)
    y = torch.ones(2, requires_grad=True)
    y.register_hook(lambda g: g.mul_(5))
    (y * 1).sum().backward()
    rec(y.grad)


@snippet
def I8_order(torch, rec):
    x = torch.tensor(1.0, requires_grad=True)
    p = x * 2
    q = p * 3
    r = q * 2
    log = []
    for name, t in (("p", p), ("q", q), ("r", r)):
        t.register_hook(lambda g, name=name: log.append((name, g.item())))
    r.backward()
    rec(log)


@snippet
def I9_retain_sees_all_hooks(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 100)
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    (y * torch.tensor([4.0, 8.0])).sum().backward()
    rec(y.grad, x.grad)


@snippet
def I10_hook_and_inplace(torch, rec):
    base = torch.tensor([2.0], requires_grad=True)
    a = base * 1
    log = []
    a.register_hook(lambda g: log.append(("before", g.tolist())))
    a.mul_(4)
    a.register_hook(lambda g: log.append(("after", g.tolist())))
    a.sum().backward()
    rec(log, base.grad)


@snippet
def I11_hook_errors(torch, rec):
    x = torch.ones(2, requires_grad=True)
    x.register_hook(lambda g: torch.ones(3))
    rec.catch(lambda: x.sum().backward())
    rec.catch(lambda: torch.ones(2).register_hook(lambda g: g))


@snippet
def I12_I13_node_hooks(torch, rec):
    w = torch.ones(2, requires_grad=True)
    log = []
    w.register_hook(lambda g: log.append("parameter hook"))
    y = w + 1
    y.grad_fn.register_hook(lambda gi, go: log.append(("node", len(gi), gi[1] is None)))
    y.sum().backward()
    z = w + 1
    rec(y.grad_fn is z.grad_fn)
    z.sum().backward()
    rec(log)
    acc = (w * 1).grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: log.append(("acc", gi)))
    (w * 1).sum().backward()
    rec(log[-2:])


@snippet
def I14_prehook_ordering(torch, rec):
    def run(kind):
        a = torch.tensor(2.0, requires_grad=True)
        b = a * 3
        c = b * b
        log = []
        b.register_hook(lambda g: log.append(1))
        b.grad_fn.register_prehook(lambda gs: log.append(2))
        b.register_hook(lambda g: log.append(1))
        b.grad_fn.register_prehook(lambda gs: log.append(2))
        a.register_hook(lambda g: log.append(1))
        acc = b.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda gs: log.append(2))
        if kind == "backward":
            c.backward()
            return log, a.grad
        if kind == "grad":
            return log, torch.autograd.grad(c, (a,))
        c.backward(inputs=(b,))
        return log, b.grad

    for kind in ("backward", "grad", "inputs"):
        rec(run(kind))


@snippet
def I15_hook_return_values(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 3
    y.grad_fn.register_prehook(lambda gs: (gs[0] * 10,))
    y.sum().backward()
    rec(x.grad)
    x.grad = None
    y = x + 1
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 100, None))
    y.sum().backward()
    rec(x.grad)
    y = x + 1
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    rec.catch(lambda: y.sum().backward())
    y = x + 1
    y.grad_fn.register_prehook(lambda gs: gs[0])
    rec.catch(lambda: y.sum().backward())


@snippet
def I16_post_accumulate(torch, rec):
    x = torch.ones(2, requires_grad=True)
    log = []
    x.register_hook(lambda g: log.append("pre") or g * 3)
    acc = (x * 1).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda gs: log.append("acc pre"))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    acc.register_hook(lambda gi, go: log.append("acc post"))
    (x * 1).sum().backward()
    rec(log)
    log.clear()
    torch.autograd.grad((x * 1).sum(), x)
    rec(log)
    rec.catch(lambda: (x * 1).register_post_accumulate_grad_hook(lambda t: None))
    rec.catch(lambda: torch.ones(1).register_post_accumulate_grad_hook(lambda t: None))
    y = torch.ones(1, requires_grad=True)
    y.register_post_accumulate_grad_hook(lambda t: 1)
    rec.catch(lambda: y.sum().backward())


@snippet
def I17_hooks_run_without_grad(torch, rec):
    x = torch.ones(1, requires_grad=True)
    log = []
    x.register_hook(lambda g: log.append(torch.is_grad_enabled()))
    (x * 2).sum().backward()
    (x * 2).sum().backward(create_graph=True) if False else None
    torch.autograd.grad((x * x).sum(), x, create_graph=True)
    rec(log)


# -- J: in-place and versions ------------------------------------------------------------------

@snippet
def J1_J2_leaf_inplace(torch, rec):
    x = torch.ones(1)
    before = id(x)
    x += 1
    x.add_(1)
    rec(id(x) == before, x)
    v = torch.ones(3, requires_grad=True)

    def iadd():
        nonlocal v
        v += 1

    for op in (iadd, lambda: v.zero_(), lambda: v.fill_(1), lambda: v.add_(1),
               lambda: v.mul_(2), lambda: v.copy_(torch.zeros(3))):
        rec.catch(op)
    rec(v._version)


@snippet
def J3_view_of_leaf(torch, rec):
    v = torch.ones(3, requires_grad=True)

    def setitem():
        v[0] = 1.0

    for op in (lambda: v[:2].mul_(2), lambda: v.view(3).add_(1), setitem):
        rec.catch(op)


@snippet
def J4_no_grad_inplace(torch, rec):
    v = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        v.mul_(2)
        v[0] = 5.0
    rec(v, v._version, v.is_leaf, v.grad_fn)


@snippet
def J5_non_leaf_inplace(torch, rec):
    x = torch.tensor(1.0, requires_grad=True)
    y = 2 * x
    rec(y._version)
    y += 2
    rec(y, y._version, edges(y))
    y.log_()
    rec(y, y._version)
    y.backward()
    rec(x.grad)


@snippet
def J7_inplace_makes_requires_grad(torch, rec):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    z = torch.zeros(2)
    z.add_(w)
    rec(z, edges(z))
    a = torch.ones(3)
    b = torch.tensor([5.0], requires_grad=True)
    a.narrow(0, 1, 1).mul_(b)
    rec(a, a.is_leaf, edges(a))
    a.sum().backward()
    rec(b.grad)


@snippet
def J9_J11_version_errors(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    y.add_(1)
    rec.catch(lambda: y.sum().backward())
    s = x.sigmoid()
    s.mul_(2)
    rec.catch(lambda: s.sum().backward())
    y = x * 1
    z = y * y
    y.add_(1)
    rec.catch(lambda: z.sum().backward())
    leaf = torch.ones(2, requires_grad=True)
    out = leaf * leaf
    with torch.no_grad():
        leaf.add_(1)
    rec.catch(lambda: out.sum().backward())


@snippet
def J12_seed_slicing(torch, rec):
    x = torch.tensor(1.0, requires_grad=True)
    s = torch.ones(2)
    s[1] = s[0] * x
    rec(s, s._version, edges(s))
    rec.catch(lambda: s.sum().backward())
    s = torch.ones(2)
    s[1] = s[0].clone() * x
    s.sum().backward()
    rec(x.grad)


@snippet
def J13_unsaved_inplace_is_fine(torch, rec):
    u = torch.ones(2, requires_grad=True)
    t = u + 1
    t.mul_(2)
    t.sum().backward()
    rec(u.grad)
    x = torch.ones(2, requires_grad=True)
    h = x * 1
    k = h * 2
    h.add_(1)
    k.sum().backward()
    rec(x.grad)


@snippet
def J14_versions_shared_with_views(torch, rec):
    a = torch.zeros(4)
    v = a[1:3]
    v.add_(1)
    a[0] = 2
    rec(a._version, v._version, a.detach()._version, a.data._version)


@snippet
def J15_setitem_grads(torch, rec):
    a = torch.ones(5, requires_grad=True)
    b = a * 1
    b[1] = 2
    b.sum().backward()
    rec(a.grad, type(b.grad_fn).__name__)
    r = torch.tensor([1.0, 2.0], requires_grad=True)
    buf = torch.zeros(2, 2)
    for i in range(2):
        buf[i] = r * (i + 1)
    rec(buf, edges(buf))
    buf.sum().backward()
    rec(r.grad)
    m = torch.ones(4, requires_grad=True) * 1
    m[m > 0.5] = 0.0
    rec(type(m.grad_fn).__name__)
    n = torch.zeros(3)
    n[[0, 2]] = torch.tensor([1.0, 2.0], requires_grad=True)
    rec(n, edges(n))


@snippet
def J16_view_of_non_leaf(torch, rec):
    r = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = r * 1
    view = base[:2]
    view.mul_(2)
    rec(type(base.grad_fn).__name__, type(view.grad_fn).__name__, base._version, view._version)
    base.sum().backward()
    rec(r.grad)


@snippet
def J17_no_grad_view(torch, rec):
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        xv = x[0]
    rec(xv.requires_grad, xv.grad_fn, xv.is_leaf)
    y = x * 1
    with torch.no_grad():
        yv = y[0]
    rec.catch(lambda: yv.mul_(2))


@snippet
def J18_multi_output_views(torch, rec):
    x = torch.ones(4, requires_grad=True) * 1
    a, b = x.unbind(0)[:2]
    rec.catch(lambda: a.mul_(2))
    c, d = x.split(2)
    rec.catch(lambda: c.add_(1))
    e, f = x.chunk(2)
    rec.catch(lambda: f.zero_())


@snippet
def J8_out_argument(torch, rec):
    x = torch.ones(2, requires_grad=True)
    rec.catch(lambda: torch.exp(x, out=torch.empty(2)))


# -- K: detach, .data --------------------------------------------------------------------------

@snippet
def K1_K3_detach(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.detach()
    y[0] = 5
    rec(x, y, y.requires_grad, y.is_leaf, x._version, y._version)
    a = torch.ones(2, requires_grad=True)
    (a + (a * 2).detach()).sum().backward()
    rec(a.grad)
    n = x.detach().requires_grad_()
    rec(n.is_leaf, n.requires_grad, n is x)


@snippet
def K4_K5_detach_(torch, rec):
    A = torch.tensor([1.0, 2.0], requires_grad=True)
    B = A.mean()
    B.backward()
    rec(B.detach_() is B, B)
    rec.catch(lambda: B.backward())
    v = (A * 1)[:1]
    rec.catch(lambda: v.detach_())
    leaf = torch.ones(1, requires_grad=True)
    leaf.detach_()
    rec(leaf)


@snippet
def K6_clone_cases(torch, rec):
    for case in "ABCDE":
        x = torch.tensor(3.0).requires_grad_(True)
        y = {"A": lambda: torch.tensor(3.0).requires_grad_(True), "B": lambda: x,
             "C": lambda: torch.tensor(1.0), "D": lambda: x.detach().clone(),
             "E": lambda: x.clone()}[case]()
        z = x + y * y
        z.backward()
        rec(case, z, x.grad, y.grad if y.is_leaf else None, y.requires_grad)
    with torch.no_grad():
        rec(x.clone())


@snippet
def K7_K8_data_vs_detach(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    d[0] = 10
    rec(x._version, d._version, d.requires_grad, d.is_leaf)
    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    y.data.zero_()
    y.sum().backward()
    rec(x.grad)
    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    y.detach().zero_()
    rec.catch(lambda: y.sum().backward())


@snippet
def K9_set_data(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    before = id(x)
    x.data = torch.tensor([7.0, 8.0, 9.0])
    rec(id(x) == before, x)

    def set_int():
        x.data = torch.tensor([1, 2])

    def set_none():
        x.data = None

    rec.catch(set_int)
    rec.catch(set_none)


@snippet
def K10_parameter_data(torch, rec):
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    p.grad = torch.ones(2)
    p.data -= 0.1 * p.grad
    rec(p, p._version, type(p).__name__, type(p.detach()).__name__, type(p.data).__name__,
        type(p * 1).__name__, type(p.clone()).__name__)


# -- L: grad modes -----------------------------------------------------------------------------

@snippet
def L1_L3_modes(torch, rec):
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        rec(x**2, torch.ones(2, requires_grad=True), x.clone())
        with torch.enable_grad():
            rec(x * 2)
    rec(torch.is_grad_enabled())


@snippet
def L4_decorators(torch, rec):
    x = torch.ones(1, requires_grad=True)

    @torch.no_grad()
    def f1():
        return x * 2

    @torch.no_grad
    def f2():
        return x * 2

    @torch.enable_grad()
    def f3():
        return x * 2

    @torch.set_grad_enabled(False)
    def f4():
        return x * 2

    @torch.inference_mode()
    def f5():
        return x * 2

    @torch.no_grad()
    def gen():
        yield torch.is_grad_enabled()
        yield torch.is_grad_enabled()

    rec([f().requires_grad for f in (f1, f2, f3, f4, f5)], list(gen()), torch.is_grad_enabled(),
        type(torch.no_grad()).__name__)


@snippet
def L5_set_grad_enabled(torch, rec):
    torch.set_grad_enabled(False)
    rec(torch.is_grad_enabled())
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        rec(torch.is_grad_enabled())
    rec(torch.is_grad_enabled())

    def boom():
        with torch.no_grad():
            raise ValueError("inside")

    rec.catch(boom)
    rec(torch.is_grad_enabled())


@snippet
def L7_inference_mode(torch, rec):
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        made = torch.ones(2)
        rec(torch.is_inference_mode_enabled(), torch.is_grad_enabled())
    rec(y.requires_grad, y.is_inference(), made.is_inference(), x.is_inference())
    rec.catch(lambda: (y * x).sum().backward())
    rec.catch(lambda: y.add_(1))
    rec.catch(lambda: made.requires_grad_())
    c = y + x
    rec(c.requires_grad, c.is_inference())
    with torch.inference_mode(mode=False):
        rec(torch.is_grad_enabled(), (x * 2).requires_grad)


# -- M: broadcasting ---------------------------------------------------------------------------

@snippet
def M1_M2_broadcast_grads(torch, rec):
    x = torch.tensor(3.0, requires_grad=True)
    a = torch.tensor([4.0, 2.0], requires_grad=True)
    (x + a).sum().backward()
    rec(x.grad, a.grad)
    p = torch.ones(2, 1, requires_grad=True)
    q = torch.ones(1, 3, requires_grad=True)
    (p + q * 2).sum().backward()
    rec(p.grad, q.grad)
    o = torch.ones(1, requires_grad=True)
    (o * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    rec(o.grad)
    e = torch.ones(2, requires_grad=True)
    e.expand(3, 2).sum().backward()
    rec(e.grad)


# -- O: nodes called by hand -------------------------------------------------------------------

@snippet
def O1_O4_call_nodes(torch, rec):
    torch.manual_seed(6)
    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    z = x * y
    l = z.sum()
    back_sum = l.grad_fn
    dz = back_sum(torch.tensor(1.0))
    rec(dz, dz.stride())
    back_mul = back_sum.next_functions[0][0]
    out = back_mul(dz)
    rec(type(out).__name__, len(out), out)
    acc = back_mul.next_functions[0][0]
    rec(acc(out[0]), x.grad)
    rec.catch(lambda: back_mul())
    with torch.no_grad():
        rec(back_mul(dz))


# -- P: conversions ----------------------------------------------------------------------------

@snippet
def P1_P3_conversions(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    rec.catch(lambda: x.numpy())
    with torch.no_grad():
        rec(x.numpy().tolist())
    rec(x.detach().numpy().tolist())
    rec.catch(lambda: x.grad.numpy())
    rec.catch(lambda: x.item())
    s = torch.tensor(2.5, requires_grad=True)
    rec(rec.warns(lambda: (s.item(), int(s), bool(s), s.tolist(), f"{s}")))
    rec(rec.warns(lambda: float(s)))
    rec.catch(lambda: bool(torch.ones(2)))


# -- Q: seed 001 dot/sin -----------------------------------------------------------------------

@snippet
def Q1_Q3_sin_dot(torch, rec):
    X = torch.tensor([1.0, 2, 3], requires_grad=True)
    Y = torch.tensor([5.0, 6, 7], requires_grad=True)
    f = torch.sin(torch.dot(X, Y))
    rec(f, edges(f))
    f.backward()
    rec(X.grad, Y.grad, Y * torch.cos(torch.dot(X, Y)))
    f = torch.sin(torch.dot(X, Y))
    rec(torch.autograd.grad(f, X, create_graph=True), torch.autograd.grad(f, Y), X.grad)


# -- section 2: test_autograd.py items ---------------------------------------------------------

@snippet
def T10_zero_numel(torch, rec):
    a = torch.ones(4, 0, requires_grad=True)
    b = torch.ones(4, 1, requires_grad=True)
    (a + b).sum().backward()
    rec(a.grad, b.grad)


@snippet
def T26_hook_not_called_for_none(torch, rec):
    x = torch.ones(2, requires_grad=True)
    a, b = x.split(1)
    log = []
    b.register_hook(lambda g: log.append(1))
    a.sum().backward()
    rec(log, x.grad)


@snippet
def T42_no_aliasing_between_consumers(torch, rec):
    x = torch.ones(1, requires_grad=True)
    y = torch.ones(1, requires_grad=True)
    s = x + y
    (s * 17).sum().backward()
    x.grad.mul_(2)
    rec(x.grad, y.grad)


@snippet
def T56_index_duplicates(torch, rec):
    x = torch.ones(4, requires_grad=True)
    x[[0, 0, 1, 3, 3, 3]].sum().backward()
    rec(x.grad)
    m = torch.ones(2, 3, requires_grad=True)
    m[torch.tensor([[True, False, True], [False, True, False]])].sum().backward()
    rec(m.grad)


@snippet
def T59_type_conversions(torch, rec):
    x = torch.ones(2, requires_grad=True)
    x.double().sum().backward()
    rec(x.grad)
    y = torch.ones(2, dtype=torch.float64, requires_grad=True)
    (y.float() * 2).sum().backward()
    rec(y.grad)


@snippet
def T60_isolated_integer_branch(torch, rec):
    x = torch.tensor([1.0, 3.0, 2.0], requires_grad=True)
    i = x.argmax()
    (x[i] * 2).backward()
    rec(x.grad)


@snippet
def T_custom_nan_where(torch, rec):
    x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    g = torch.tensor([float("nan"), -0.0, -3.0])
    x.relu().backward(g)
    rec(x.grad.tolist())


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_behaviour_matches_torch(name):
    observations = []
    for lib in (real_torch, adcompile):
        rec = Recorder(lib)
        real_torch.set_grad_enabled(True)
        adcompile.set_grad_enabled(True)
        SNIPPETS[name](lib, rec)
        observations.append(rec.seen)
        gc.collect()
    theirs, ours = observations
    assert len(ours) == len(theirs), (ours, theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"observation {i}: adcompile {a!r} vs torch {b!r}"


def test_hundred_thousand_op_chain_has_no_recursion():
    x = adcompile.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0000001
    y.backward()
    assert np.isfinite(x.grad.item()) and abs(x.grad.item() - 1.0101) < 0.01
    del y
    gc.collect()
