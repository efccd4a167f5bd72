"""Round-2 differential probes for the eager autograd semantics (review of tests/test_semantics.py).

Same harness and conventions as `tests/test_semantics.py` (whose `run_snippet`, `catch`, `warns`
and `edges` are reused): each snippet `(torch, rec)` runs once under PyTorch 2.13 and once under
adcompile, and the normalised observation lists must be equal. Names start with the spec id
(`/work/shared/spec/eager-semantics.md`; "S48" is item 48 of section 2). These probes go deeper
than the first corpus: engine execution order, which tensors each node saves, in-place forms on
non-leaves, retained grads under create_graph, inference-mode views, error types of misuse.
Kept in their own registry so the reviewed corpus in tests/test_semantics.py stays as it is.
"""

import difflib
import pathlib
import pprint
import sys

import numpy as np
import pytest
import torch as real_torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import adcompile  # noqa: E402
from test_semantics import catch, edges, run_snippet, warns  # noqa: E402,F401

SNIPPETS = {}


def snippet(fn):
    assert fn.__name__ not in SNIPPETS, fn.__name__
    SNIPPETS[fn.__name__] = fn
    return fn


# == 1. engine order, hooks, grad/backward variants, in-place, detach, modes, conversions ======

# ---- engine execution order -------------------------------------------------------------
@snippet
def I8_diamond_hook_order_by_sequence_nr(torch, rec):
    log = []
    x = torch.tensor(1.0, requires_grad=True)
    a = x * 2
    b = x * 3
    a.register_hook(lambda g: log.append("a"))
    b.register_hook(lambda g: log.append("b"))
    x.register_hook(lambda g: log.append(("x", g.item())))
    (a + b).backward()
    rec(log)
    log.clear()
    y = x * 1
    z1 = y.sin()
    z2 = y.cos()
    z1.register_hook(lambda g: log.append("z1"))
    z2.register_hook(lambda g: log.append("z2"))
    y.register_hook(lambda g: log.append("y"))
    (z1 + z2).backward()
    rec(log)
    log.clear()
    y2 = x + 0
    z2b = y2.cos()
    z1b = y2.sin()
    z1b.register_hook(lambda g: log.append("z1b"))
    z2b.register_hook(lambda g: log.append("z2b"))
    (z1b + z2b).backward()
    rec(log)


@snippet
def I16_accumulate_grad_runs_as_soon_as_ready(torch, rec):
    log = []
    x = torch.tensor(1.0, requires_grad=True)
    w = torch.tensor(2.0, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: log.append("x acc"))
    w.register_post_accumulate_grad_hook(lambda t: log.append("w acc"))
    a = x * 2
    b = w.sin()
    c = b * 3
    a.register_hook(lambda g: log.append("a"))
    b.register_hook(lambda g: log.append("b"))
    c.register_hook(lambda g: log.append("c"))
    (a + c).backward()
    rec(log)


@snippet
def S61_execution_order_seen_by_prehooks(torch, rec):
    log = []
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = a.exp().sin().clone().sum()
    node = out.grad_fn
    while node is not None:
        node.register_prehook(lambda go, n=node: log.append(n.name()))
        node = node.next_functions[0][0] if node.next_functions else None
    out.backward()
    rec(log)


@snippet
def S61_multi_branch_node_waits_for_all_inputs(torch, rec):
    log = []
    x = torch.tensor(2.0, requires_grad=True)
    y = x * x
    y.register_hook(lambda g: log.append(("y", g.item())))
    p = y * 2
    q = y.exp()
    r = q * p
    s = r + y
    s.backward()
    rec(log, x.grad)


# ---- hooks ------------------------------------------------------------------------------
@snippet
def S18_hook_counts_and_composition(torch, rec):
    counter = [0]
    x = torch.ones(2, requires_grad=True)
    y = x * 2 + 1
    h = y.register_hook(lambda g: counter.__setitem__(0, counter[0] + 1))
    y.sum().backward(retain_graph=True)
    y.sum().backward(retain_graph=True)
    h.remove()
    y.sum().backward(retain_graph=True)
    rec(counter, x.grad)
    y.retain_grad()
    h1 = y.register_hook(lambda g: g * 2)
    x.grad = None
    y.sum().backward(retain_graph=True)
    rec(y.grad, x.grad)
    y.register_hook(lambda g: g * 2)
    y.grad = None
    x.grad = None
    y.sum().backward(retain_graph=True)
    rec(y.grad, x.grad)
    h1.remove()
    y.grad = None
    x.grad = None
    y.sum().backward()
    rec(y.grad, x.grad)


@snippet
def I5_leaf_used_twice_hook_called_once(torch, rec):
    log = []
    x = torch.tensor(1.0, requires_grad=True)
    x.register_hook(lambda g: log.append(g.item()))
    (x * 2 + x * 3 + x).backward()
    rec(log, x.grad)
    y = x * 1
    y.register_hook(lambda g: log.append(("y", g.item())))
    (y * y + y).backward()
    rec(log, x.grad)


@snippet
def I9_retain_grad_does_not_see_node_prehooks(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.register_hook(lambda g: g + 1)
    (y * 3).sum().backward()
    rec(y.grad, x.grad)


@snippet
def H2_retain_grad_on_root_and_view_of_leaf(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.backward(torch.tensor([1.0, 10.0]))
    rec(y.grad, x.grad)
    v = x[0]
    v.retain_grad()
    rec(v.is_leaf, v.retains_grad, v.grad_fn)
    (v * 5).backward()
    rec(v.grad, x.grad)


@snippet
def H2_retain_grad_under_autograd_grad(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    rec(torch.autograd.grad((y * y).sum(), x), y.grad, x.grad)


@snippet
def I11_hook_returning_non_tensor(torch, rec):
    x = torch.ones(2, requires_grad=True)
    x.register_hook(lambda g: 3.0)
    rec(catch(lambda: x.sum().backward()), x.grad)
    y = torch.ones(2, requires_grad=True)
    m = y * 1
    m.register_hook(lambda g: [1.0, 1.0])
    rec(catch(lambda: m.sum().backward()), y.grad)


@snippet
def I1_hook_removes_itself(torch, rec):
    log = []
    x = torch.ones(2, requires_grad=True)
    hs = []

    def once(g):
        log.append("once")
        hs[0].remove()
        return g * 2

    hs.append(x.register_hook(once))
    x.register_hook(lambda g: log.append(("next", g.tolist())))
    x.sum().backward()
    x.sum().backward()
    rec(log, x.grad)


@snippet
def I12_node_post_hook_handle_remove_and_multi_output(torch, rec):
    log = []
    q = torch.ones(4, requires_grad=True)
    m = q * 1
    p0, p1 = m.split(2)
    node = p0.grad_fn
    h = node.register_hook(lambda gi, go: log.append(
        ("post", [None if g is None else g.tolist() for g in gi],
         [None if g is None else g.tolist() for g in go])))
    (p1 * 2).sum().backward(retain_graph=True)
    rec(log)
    h.remove()
    log.clear()
    (p0 * 3).sum().backward()
    rec(log, q.grad)


@snippet
def I6_hooks_under_grad_with_intermediate_inputs(torch, rec):
    log = []
    x = torch.tensor(1.0, requires_grad=True)
    y = x * 2
    z = y * 3
    x.register_hook(lambda g: log.append("x"))
    y.register_hook(lambda g: (log.append(("y", g.item())), g * 10)[1])
    z.register_hook(lambda g: log.append(("z", g.item())))
    rec(torch.autograd.grad(z, y, retain_graph=True), log)
    log.clear()
    rec(torch.autograd.grad(z, [x, y], retain_graph=True), log)
    log.clear()
    rec(torch.autograd.grad(z, x, grad_outputs=torch.tensor(2.0)), log, x.grad)


# ---- backward / grad variants -----------------------------------------------------------
@snippet
def F1_grad_of_tensor_wrt_itself(torch, rec):
    x = torch.tensor(3.0, requires_grad=True)
    rec(torch.autograd.grad(x, x))
    v = torch.ones(2, requires_grad=True)
    rec(torch.autograd.grad(v, v, torch.tensor([2.0, 5.0])))
    y = v * 2
    rec(torch.autograd.grad(y, y, torch.ones(2)))
    rec(torch.autograd.grad(y.sum(), [v, v]))
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w.backward(torch.tensor([3.0, 4.0]))
    w.backward(torch.tensor([3.0, 4.0]))
    rec(w.grad)


@snippet
def E12_backward_inputs_duplicates_and_errors(torch, rec):
    a = torch.tensor(2.0, requires_grad=True)
    (a * 3).backward(inputs=[a, a])
    rec(a.grad)
    c = torch.tensor(1.0)
    rec(catch(lambda: (a * 3).backward(inputs=[c])))
    rec(catch(lambda: torch.autograd.grad(a * 3, [a], grad_outputs=[torch.ones(1), torch.ones(1)])))
    rec(catch(lambda: torch.autograd.grad([a * 3, c * 2], [a])))


@snippet
def E10_backward_inputs_frees_only_nodes_that_ran(torch, rec):
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    z = (a + 1) + b.exp()
    z.backward(inputs=[a])
    z.backward(inputs=[b])
    rec(a.grad, b.grad)
    rec(catch(lambda: z.backward(inputs=[b])), catch(lambda: z.backward(inputs=[a])), a.grad)
    z2 = a * b + b.exp()
    z2.backward(inputs=[a])
    rec(catch(lambda: z2.backward(inputs=[b])), b.grad)


@snippet
def E11_grad_from_intermediate_root_after_partial_runs(torch, rec):
    x = torch.tensor(1.5, requires_grad=True)
    y = torch.tensor(0.5, requires_grad=True)
    f = x * y + y.sin()
    rec(catch(lambda: torch.autograd.grad(f, x)))
    rec(catch(lambda: torch.autograd.grad(f, y)))
    g = x.exp() + y.cos()
    rec(torch.autograd.grad(g, x), torch.autograd.grad(g, y))
    rec(catch(lambda: torch.autograd.grad(g, x)), catch(lambda: torch.autograd.grad(g, y)))


@snippet
def C11_create_graph_grad_requires_grad_only_when_needed(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    rec(torch.autograd.grad((x * 3).sum(), x, create_graph=True))
    rec(torch.autograd.grad(x.sum(), x, create_graph=True))
    rec(torch.autograd.grad((x * x).sum(), x, create_graph=True))
    rec(torch.autograd.grad(x.exp().sum(), x, create_graph=True))
    rec(torch.autograd.grad((x + 1).sum(), x, create_graph=True))
    g = torch.tensor([1.0, 1.0], requires_grad=True)
    rec(torch.autograd.grad(x * 3, x, grad_outputs=g, create_graph=True))
    rec(torch.autograd.grad(x * 3, x, grad_outputs=g))


@snippet
def F13_backward_with_gradient_requiring_grad(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    v = torch.tensor([1.0, 1.0], requires_grad=True)
    y = x * x
    y.backward(v, create_graph=True)
    rec(x.grad)
    x.grad.sum().backward()
    rec(v.grad, x.grad)


@snippet
def G2_grad_version_bumps_on_accumulation(torch, rec):
    x = torch.ones(2, requires_grad=True)
    x.sum().backward()
    g = x.grad
    v0 = g._version
    rec(g.stride(), g.is_contiguous())
    x.sum().backward()
    rec(g._version - v0, g)
    x.grad.add_(1)
    rec(g._version - v0, x.grad)
    e = torch.ones(2, 3, requires_grad=True)
    e.sum().backward()
    rec(e.grad.stride(), e.grad.is_contiguous())
    e.grad.mul_(2)
    rec(e.grad)


@snippet
def G2_grad_is_not_aliased_with_incoming(torch, rec):
    x = torch.ones(2, requires_grad=True)
    v = torch.tensor([1.0, 2.0])
    x.backward(v)
    rec(x.grad is v)
    x.grad.mul_(10)
    rec(v, x.grad)
    y = torch.ones(2, requires_grad=True)
    gout = torch.tensor([3.0, 4.0])
    (y * 1).backward(gout)
    y.grad.add_(1)
    rec(gout, y.grad)


# ---- in-place / version counter ---------------------------------------------------------
@snippet
def S46_no_grad_inplace_on_saved_non_leaf(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y
    with torch.no_grad():
        y.add_(1)
    rec(y._version, y.grad_fn, catch(lambda: z.sum().backward()))
    w = x * 1
    u = w.sin()
    with torch.no_grad():
        w[0] = 0.0
    rec(w._version, catch(lambda: u.sum().backward()))


@snippet
def J5_inplace_on_non_leaf_chain_and_grad(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(3)
    y.add_(x)
    y.pow_(2)
    rec(y, y._version, edges(y))
    y.sum().backward()
    rec(x.grad)


@snippet
def J7_copy_zero_fill_on_non_leaf(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    s = torch.tensor(5.0, requires_grad=True)
    y = x * 2
    y.copy_(s)
    rec(y, edges(y))
    y.sum().backward()
    rec(x.grad, s.grad)
    a = x * 2
    a.zero_()
    b = x * 2
    b.fill_(3.0)
    c = x * 2
    c.fill_(s)
    rec(a, b, c)
    (a + b + c).sum().backward()
    rec(x.grad, s.grad)


@snippet
def J10_detach_of_view_shares_counter(torch, rec):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    d = y[0:1].detach()
    d.add_(1)
    rec(d._version, y._version, d.is_leaf, d.requires_grad, y)
    rec(catch(lambda: y.sum().backward()))
    n = x * 2
    nd = n.detach()
    nd[0] = 100.0
    rec(n, n._version, nd._version)
    nd2 = n.data
    nd2[1] = 50.0
    rec(n, n._version, nd2._version, nd2.requires_grad)


@snippet
def J14_versions_of_various_inplace_ops(torch, rec):
    t = torch.ones(3)
    out = []
    for op in (lambda: t.add_(1), lambda: t.mul_(2), lambda: t.zero_(), lambda: t.fill_(2),
               lambda: t.copy_(torch.ones(3)), lambda: t.clamp_(0, 1), lambda: t.exp_(),
               lambda: t.__setitem__(slice(0, 1), 0.0), lambda: t.neg_(),
               lambda: t.requires_grad_(), lambda: t.detach(), lambda: t.view(3)):
        op()
        out.append(t._version)
    rec(out)


@snippet
def J2_leaf_inplace_variants(torch, rec):
    x = torch.ones(2, requires_grad=True)
    for op in (lambda: x.sub_(1), lambda: x.div_(2), lambda: x.pow_(2), lambda: x.exp_(),
               lambda: x.clamp_(0, 1), lambda: x.neg_(), lambda: x.relu_(),
               lambda: x.__setitem__(0, 2.0),
               lambda: x.masked_fill_(torch.tensor([True, False]), 0.0)):
        rec(catch(op))
    rec(x._version, x)
    p = torch.nn.Parameter(torch.ones(2))
    rec(catch(lambda: p.add_(1)), catch(lambda: p.__setitem__(0, 1.0)))


@snippet
def J13_inplace_on_input_of_add_or_sum_is_fine(torch, rec):
    x = torch.ones(3, requires_grad=True)
    y = x * 1
    s = y.sum()
    m = y.mean()
    c = y.clone()
    y.mul_(4)
    (s + m + c.sum()).backward()
    rec(x.grad)
    a = x * 1
    p = a.pow(2)
    a.zero_()
    rec(catch(lambda: p.sum().backward()))
    b = x * 1
    sg = b.sigmoid()
    b.zero_()
    sg.sum().backward()
    rec(x.grad)


@snippet
def J16_inplace_on_view_then_use_view_grad(torch, rec):
    r = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = r * 1
    v = base[1:]
    v.mul_(torch.tensor([2.0, 3.0]))
    w = v * v
    rec(v, base, edges(base))
    w.sum().backward()
    rec(r.grad)
    r.grad = None
    b2 = r * 1
    v2 = b2.view(3, 1)
    v2.add_(1)
    b2.sum().backward()
    rec(r.grad, v2.grad_fn, b2.grad_fn)


@snippet
def J16_view_of_view_inplace_then_base_backward(torch, rec):
    r = torch.ones(2, 3, requires_grad=True)
    base = r * 2
    row = base[1]
    el = row[1:]
    el.mul_(5)
    rec(base, row.grad_fn, el.grad_fn, base._version, row._version, el._version)
    (base * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    rec(r.grad)


@snippet
def J17_view_created_in_no_grad_of_non_leaf_then_base(torch, rec):
    x = torch.ones(3, requires_grad=True)
    y = x * 1
    with torch.no_grad():
        v = y[:2]
    rec(v.requires_grad, v.is_leaf, v.grad_fn)
    with torch.no_grad():
        v.mul_(2)
    rec(y, y._version)
    y.sum().backward()
    rec(x.grad)


@snippet
def J18_unbind_output_inplace_under_no_grad(torch, rec):
    x = torch.ones(2, 2, requires_grad=True)
    y = x * 1
    a, b = y.unbind(0)
    with torch.no_grad():
        r = catch(lambda: a.mul_(2))
    rec(r is a, y, catch(lambda: a.grad_fn), catch(lambda: b.grad_fn))
    c, d = torch.ones(2, 2).unbind(0)
    c.mul_(3)
    rec(c, catch(lambda: d.add_(torch.ones(2, requires_grad=True))))


@snippet
def J7_setitem_with_tensor_index_and_broadcast(torch, rec):
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    buf = torch.zeros(3, 2)
    buf[torch.tensor([0, 2])] = v
    rec(buf, edges(buf))
    buf.sum().backward()
    rec(v.grad)
    s = torch.tensor(3.0, requires_grad=True)
    m = torch.zeros(2, 2)
    m[:, 1] = s
    (m * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    rec(m, s.grad)


# ---- detach / data ----------------------------------------------------------------------
@snippet
def K3_requires_grad_on_no_grad_result(torch, rec):
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        n = x * 2
    n.requires_grad_()
    rec(n, n.is_leaf)
    (n * 3).sum().backward()
    rec(n.grad, x.grad)
    d = (x * 2).detach()
    d.requires_grad = True
    rec(d, d.is_leaf)
    dd = (x * 2).data
    rec(dd, dd.is_leaf, dd._version)


@snippet
def K4_detach_in_place_then_reuse(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    z = y * 3
    y.detach_()
    rec(y, z)
    z.sum().backward()
    rec(x.grad)
    w = x * 1
    w.detach_()
    rec(catch(lambda: w.retain_grad()), w.requires_grad_() is w, w.is_leaf, w)


# ---- grad modes -------------------------------------------------------------------------
@snippet
def L4_decorator_preserves_metadata_and_args(torch, rec):
    @torch.no_grad()
    def f(a, b=2, *, c=3):
        """doc"""
        return a * b * c, torch.is_grad_enabled()

    rec(f.__name__, f.__doc__, f(torch.ones(1, requires_grad=True), c=4))

    class M:
        @torch.no_grad()
        def meth(self, t):
            return (t * 2).requires_grad

    rec(M().meth(torch.ones(1, requires_grad=True)))
    rec(torch.autograd.no_grad is torch.no_grad, torch.autograd.enable_grad is torch.enable_grad,
        torch.autograd.set_grad_enabled is torch.set_grad_enabled)


@snippet
def L5_set_grad_enabled_misc(torch, rec):
    rec(type(torch.set_grad_enabled(True)).__name__, torch.is_grad_enabled())
    ng = torch.no_grad()
    with ng:
        rec(torch.is_grad_enabled())
    with ng:
        rec(torch.is_grad_enabled())
    rec(torch.is_grad_enabled())

    def raising():
        with torch.enable_grad():
            raise KeyError("k")

    with torch.no_grad():
        rec(catch(raising), torch.is_grad_enabled())
    with torch.inference_mode():
        pass
    rec(torch.is_inference_mode_enabled(), torch.is_grad_enabled())


@snippet
def L7_inference_decorator_and_views(torch, rec):
    @torch.inference_mode()
    def f(t):
        return t * 2

    x = torch.ones(3, requires_grad=True)
    y = f(x)
    rec(y.is_inference(), y.requires_grad, torch.is_inference_mode_enabled())
    with torch.inference_mode():
        v = y[:2]
        v.mul_(2)
        rec(v.is_inference(), y)
    rec(catch(lambda: y.mul_(2)), catch(lambda: y[0].add_(1)))
    rec(catch(lambda: torch.autograd.grad((y * x).sum(), x)))
    n = torch.ones(2)
    with torch.inference_mode():
        n.add_(1)
        rec(n.is_inference())
    rec(n, n.is_inference())


# ---- promotion / conversions ------------------------------------------------------------
@snippet
def M5_int_and_bool_operands_in_graph(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    i = torch.tensor([3, 4])
    b = torch.tensor([True, False])
    y = x * i + x * b
    rec(y, edges(x * i))
    y.sum().backward()
    rec(x.grad)
    h = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    d = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    out = h * d
    rec(out)
    out.sum().backward()
    rec(h.grad, d.grad)


@snippet
def P2_conversion_errors(torch, rec):
    t = torch.ones(2)
    rec(catch(lambda: int(t)), catch(lambda: float(t)), catch(lambda: bool(torch.ones(0))))
    rec(catch(lambda: len(torch.tensor(1.0))), len(torch.ones(3, 2)))
    rec(float(torch.tensor([2.5])), int(torch.tensor([[7]])), torch.tensor(True).item())
    rec([10, 20, 30][torch.tensor(1)], catch(lambda: [10, 20][torch.tensor(1.0)]))
    rec(warns(lambda: float(torch.tensor([2.5], requires_grad=True))))
    rec(warns(lambda: int(torch.tensor(2.5, requires_grad=True))))


@snippet
def P1_numpy_variants(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    rec(catch(lambda: np.asarray(x)))
    rec(catch(lambda: (x * 2).numpy()))
    d = x.detach().numpy()
    d[0] = 9.0
    rec(x, x._version)
    rec(x.tolist(), type(x.tolist()[0]).__name__)


# ---- nodes by hand ----------------------------------------------------------------------
@snippet
def O2_call_nodes_after_free_and_with_none(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    l = (x * y).sum()
    l.backward()
    rec(l.grad_fn(torch.tensor(2.0)))
    mul = l.grad_fn.next_functions[0][0]
    rec(catch(lambda: mul(torch.ones(2))))
    z = (x + y)
    rec(z.grad_fn(torch.tensor([1.0, 2.0])))
    e = x.exp()
    rec(e.grad_fn(torch.ones(2)))


# == 2. more backward/grad options, views, inference mode, promotion, nodes by hand ============

@snippet
def E3_single_element_non_scalar_and_empty(torch, rec):
    x = torch.ones(1, requires_grad=True)
    rec(catch(lambda: (x * 2).backward()), x.grad)
    m = torch.ones(1, 1, requires_grad=True)
    rec(catch(lambda: torch.autograd.grad(m * 3, m)))
    e = torch.ones(0, requires_grad=True)
    e.sum().backward()
    rec(e.grad)
    rec(catch(lambda: (e * 2).backward()))


@snippet
def E5_gradient_dtype_and_requires_grad(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    g = torch.tensor([1.0, 1.0], requires_grad=True)
    (x * 3).backward(g)
    rec(x.grad, g.grad)
    rec(torch.autograd.grad(x * 3, x, torch.ones(2, dtype=torch.float64)))
    h = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    (h * 2).backward(torch.ones(2))
    rec(h.grad)
    rec(catch(lambda: (x * 2).backward(torch.ones(2, 1))))
    rec(catch(lambda: (x * 2).backward([1.0, 1.0])))


@snippet
def E2_backward_root_errors(torch, rec):
    x = torch.tensor([1.0, 3.0], requires_grad=True)
    rec(catch(lambda: x.argmax().backward()))
    rec(catch(lambda: x.detach().sum().backward()))
    rec(catch(lambda: (x > 1).sum().backward()))
    rec(catch(lambda: torch.autograd.backward([])))
    rec(catch(lambda: torch.autograd.grad(x.sum(), 3)))


@snippet
def F4_dict_inputs_with_unused(torch, rec):
    x = torch.ones(2, requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    u = torch.tensor(1.0, requires_grad=True)
    out = (x * w).sum()
    r = torch.autograd.grad(out, {"u": u, "x": x}, allow_unused=True, retain_graph=True)
    rec(type(r).__name__, r)
    r = torch.autograd.grad(out, {"u": u}, materialize_grads=True, retain_graph=True)
    rec(r)
    rec(catch(lambda: torch.autograd.grad(out, {"u": u})))


@snippet
def H4_retained_grad_with_create_graph_and_reset(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    (y * y).sum().backward(create_graph=True)
    rec(y.grad, x.grad)
    y.grad = None
    x.grad = None
    (y * 2).sum().backward()
    rec(y.grad, x.grad)


@snippet
def H2_retain_grad_with_backward_inputs(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    y.retain_grad()
    u = w * 2
    u.retain_grad()
    (y.sum() + u.sum()).backward(inputs=[x])
    rec(y.grad, u.grad, x.grad, w.grad)


@snippet
def D1_edges_more_ops(torch, rec):
    x = torch.ones(2, requires_grad=True)
    c = torch.ones(2)
    mask = torch.tensor([True, False])
    exprs = [torch.where(mask, x, 0.0), torch.where(mask, c, x), torch.stack([c, x]),
             torch.maximum(x, c), x.masked_fill(mask, 0.0), x.pow(c), c.pow(x),
             torch.clamp(x, min=0.0), x.expand(3, 2), x.unsqueeze(0), x[mask],
             torch.cat([c, c, x]), x.max(dim=0).values, torch.dot(c, x), torch.outer(x, c)]
    for t in exprs:
        rec(t.grad_fn, edges(t))


@snippet
def D4_non_requiring_non_leaf_operand_is_none_edge(torch, rec):
    x = torch.ones(2, requires_grad=True)
    k = torch.ones(2) * 3
    y = k * x + (x * 2).detach() * x
    rec(edges(y))
    a, b = y.grad_fn.next_functions
    rec([(type(n).__name__ if n else None, i) for n, i in a[0].next_functions],
        [(type(n).__name__ if n else None, i) for n, i in b[0].next_functions])


@snippet
def S48_inplace_on_view_modify_base_makes_view_require_grad(torch, rec):
    r = torch.ones(1, requires_grad=True)
    x = torch.ones(5)
    v = x.select(0, 1)
    rec(v.requires_grad, v.grad_fn)
    x.add_(r)
    rec(v.requires_grad, v.grad_fn, v.is_leaf, x.grad_fn)
    (v * 3).backward()
    rec(r.grad)


@snippet
def S48_inplace_on_view_non_contig_leaf(torch, rec):
    root = torch.ones(2, 3, 2).select(2, 1).t().requires_grad_(True)
    rec(root.is_leaf, root.shape, root.is_contiguous())
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = v1.narrow(1, 1, 1)
    v2.mul_(2)
    x.sum().backward()
    rec(root.grad)


@snippet
def S48_inplace_on_view_backprop_view_and_leaf_errors(torch, rec):
    a = torch.tensor([2.0, 5.0])
    b = torch.tensor([3.0], requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    rec(res, a)
    res.sum().backward()
    rec(b.grad, a.grad)
    z = torch.zeros(1, requires_grad=True)
    y = z.view(1)
    rec(y.grad_fn, catch(lambda: y.add_(1)))


@snippet
def S55_inplace_under_inference_mode_on_normal_tensor(torch, rec):
    s = torch.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    out = a * a
    with torch.inference_mode():
        a.add_(2)
    rec(a.is_inference(), a._version, a)
    rec(catch(lambda: out.backward(torch.ones_like(out))))


@snippet
def S55_inference_tensor_creation_flags(torch, rec):
    with torch.inference_mode():
        c = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        rec(c.requires_grad, c.is_leaf, c.is_inference(), d.requires_grad)
        e = c * 2
        rec(e.requires_grad, e.grad_fn, e.is_inference())
    rec(c.is_inference(), catch(lambda: (c * 2).sum().backward()))


@snippet
def S57_max_dim_and_2d_ties(torch, rec):
    t = torch.tensor([1.0, 0.0, 1.0, 0.0], requires_grad=True)
    t.max(dim=0).values.backward()
    rec(t.grad)
    t.grad = None
    t.min(dim=0).values.backward()
    rec(t.grad)
    m = torch.tensor([[1.0, 5.0], [5.0, 1.0]], requires_grad=True)
    m.max().backward()
    rec(m.grad)
    m.grad = None
    m.max(dim=1).values.sum().backward()
    rec(m.grad)


@snippet
def S57_median_amax_ties(torch, rec):
    t = torch.tensor([1.0, 0.0, 1.0, 0.0], requires_grad=True)
    t.amax().backward()
    rec(t.grad)
    u = torch.tensor([2.0, 1.0, 2.0, 3.0, 2.0], requires_grad=True)
    u.median().backward()
    rec(u.grad)


@snippet
def M3_more_promotion_cases(torch, rec):
    f16 = torch.ones(2, dtype=torch.float16)
    i32 = torch.tensor([1, 2], dtype=torch.int32)
    rec([(torch.tensor(2) * f16).dtype, (i32 + torch.tensor(3)).dtype,
         (torch.tensor(1) + torch.tensor(1.0, dtype=torch.float16)).dtype,
         (torch.tensor([True]) + torch.tensor([True])).dtype,
         (torch.tensor([1, 2]) * 1.5).dtype, (i32 / i32).dtype, (i32 // 2).dtype,
         (torch.tensor([True]) + 1.5).dtype, (f16 + torch.tensor([1.0])).dtype])
    rec(torch.tensor([1, 2]) + torch.tensor([True, False]),
        torch.tensor([True]) + torch.tensor([True]))


@snippet
def M4_python_scalar_arith_values(torch, rec):
    rec(torch.tensor(-7.0) % 3, torch.tensor(7) % -3, torch.tensor(7) / 0,
        torch.tensor([-1.0]) // 0)
    rec(catch(lambda: torch.tensor(7) // 0))
    i = torch.ones(2, dtype=torch.int64)
    rec(catch(lambda: i.add_(1.5)), i)
    rec(catch(lambda: torch.ones(1).add_(torch.ones(2))))
    f = torch.ones(2)
    f.add_(torch.ones(2, dtype=torch.float64))
    rec(f)


@snippet
def O2_call_node_with_constant_edge(torch, rec):
    x = torch.ones(2, requires_grad=True)
    r = (x * 2).grad_fn(torch.tensor([1.0, 3.0]))
    rec(type(r).__name__, r)
    s = (x + torch.ones(2)).grad_fn(torch.ones(2))
    rec(s)
    t = x.sin().grad_fn(torch.ones(2))
    rec(type(t).__name__, t)


@snippet
def P1_numpy_shares_memory(torch, rec):
    t = torch.tensor([1.0, 2.0])
    n = t.numpy()
    n[0] = 5.0
    rec(t, t._version)
    t.add_(1)
    rec(n.tolist())
    rec(str(n.dtype), str(torch.tensor([1, 2]).numpy().dtype))


@snippet
def G4_grad_reset_between_retained_backwards(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad
    x.grad = None
    y.backward(retain_graph=True)
    g2 = x.grad
    rec(g1 is g2, g1, g2)
    x.grad.zero_()
    y.backward()
    rec(x.grad is g2, x.grad)


@snippet
def I14_hooks_with_retain_graph_fire_each_time(torch, rec):
    log = []
    x = torch.tensor(1.0, requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    y.grad_fn.register_prehook(lambda go: log.append("pre"))
    y.register_hook(lambda g: log.append("tensor"))
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    torch.autograd.grad(y, x)
    rec(log, x.grad)


@snippet
def I12_acc_prehook_replaces_grad(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: (go[0] * 100,))
    log = []
    x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.tolist()))
    y.sum().backward()
    rec(x.grad, log)


@snippet
def K6_clone_preserves_and_detach_clone(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    c.add_(10)
    rec(x, c, x._version, c._version)
    d = x.detach().clone()
    d.add_(5)
    rec(x, d, d.requires_grad)
    (c * 2).sum().backward()
    rec(x.grad)


# == 3. which tensors each node saves; AccumulateGrad lifetime; view flags =====================

_UNARY = ["sin", "cos", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "neg",
          "reciprocal", "rsqrt", "sign", "floor", "round", "clone", "sum", "mean", "prod",
          "max", "norm", "square", "log1p"]


def _unary_cases(torch):
    c = torch.tensor([2.0, 4.0])
    cases = [(n, (lambda n: lambda y: getattr(y, n)())(n)) for n in _UNARY]
    cases += [("pow2", lambda y: y ** 2), ("pow_half", lambda y: y ** 0.5),
              ("mul_self", lambda y: y * y), ("mul_const", lambda y: y * c),
              ("div_const", lambda y: y / c), ("rdiv_const", lambda y: c / y),
              ("add_const", lambda y: y + c), ("rsub", lambda y: 2 - y),
              ("clamp", lambda y: y.clamp(0.0, 1.5)), ("softmax", lambda y: y.softmax(0)),
              ("log_softmax", lambda y: y.log_softmax(0)), ("view", lambda y: y.view(2, 1)),
              ("select", lambda y: y[0]), ("to64", lambda y: y.double()),
              ("dot_const", lambda y: torch.dot(y, c)),
              ("where", lambda y: torch.where(c > 3, y, c)),
              ("maximum", lambda y: torch.maximum(y, c)), ("cat", lambda y: torch.cat([y, c])),
              ("unsqueeze", lambda y: y.unsqueeze(0)), ("mul_scalar", lambda y: y * 3),
              ("div_scalar", lambda y: y / 2)]
    return cases


@snippet
def J13_saved_input_table(torch, rec):
    for name, op in _unary_cases(torch):
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        y = x * 1
        o = op(y)
        y.mul_(2)
        r = catch(lambda: o.sum().backward())
        rec(name, r, x.grad)


@snippet
def J13_saved_output_table(torch, rec):
    for name, op in _unary_cases(torch):
        if name in ("view", "select", "unsqueeze"):
            continue
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        o = op(x * 1)
        o.mul_(2)
        r = catch(lambda: o.sum().backward())
        rec(name, o.grad_fn, r, x.grad)


@snippet
def J9_saved_output_modified_through_view(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y[0].add_(1)
    rec(y._version, y.grad_fn, catch(lambda: y.sum().backward()))
    z = x.exp()
    zv = z.view(2)
    zv.mul_(1)
    rec(z._version, zv._version, catch(lambda: z.sum().backward()))
    w = x.sigmoid()
    w.data.add_(1)
    w.sum().backward()
    rec(w._version, x.grad)


@snippet
def D7_accumulate_grad_survives_with_python_ref(torch, rec):
    log = []
    x = torch.ones(2, requires_grad=True)
    g1 = x * 1
    acc = g1.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append("acc pre"))
    del g1
    g2 = x * 2
    rec(g2.grad_fn.next_functions[0][0] is acc, acc.variable is x)
    g2.sum().backward()
    rec(log, x.grad, x.grad_fn)


@snippet
def E9_backward_create_graph_retains(torch, rec):
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 3
    y.backward(create_graph=True)
    y.backward()
    rec(x.grad)
    rec(catch(lambda: y.backward()))
    z = x ** 3
    z.backward(create_graph=True, retain_graph=False)
    rec(catch(lambda: z.backward()))


@snippet
def J3_view_of_leaf_flags(torch, rec):
    x = torch.ones(2, 2, requires_grad=True)
    for v in (x[0], x.view(4), x.t(), x[:, 1], x.unsqueeze(0), x.expand(2, 2, 2), x.detach()):
        rec(v.requires_grad, v.is_leaf, v.grad_fn, v._version)
    x2 = torch.ones(3, requires_grad=True)
    v2 = x2[1:]
    rec(catch(lambda: v2.zero_()), catch(lambda: v2.__setitem__(0, 3.0)),
        catch(lambda: v2.copy_(torch.ones(2))), x2._version)


@snippet
def B3_requires_grad_through_various_ops(torch, rec):
    x = torch.ones(2, requires_grad=True)
    c = torch.ones(2)
    rec([t.requires_grad for t in (x.detach() + c, torch.cat([c, x.detach()]),
                                   torch.stack([c, x]), torch.where(x > 0, c, c),
                                   x.sum() * 0, x.argmax().float(), (x > 0).float(),
                                   x.floor(), x.sign(), torch.zeros_like(x))])


@snippet
def F10_grad_with_outputs_list_errors(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    rec(catch(lambda: torch.autograd.grad([y.sum(), torch.ones(1).sum()], x)))
    rec(catch(lambda: torch.autograd.grad(y.sum(), [x], grad_outputs=[torch.ones(1)])))
    rec(catch(lambda: torch.autograd.grad([], x)))
    rec(torch.autograd.grad(outputs=[y], inputs=[x], grad_outputs=[torch.ones(2)]))


@snippet
def I13_new_node_per_op_and_stable_grad_fn(torch, rec):
    w = torch.ones(2, requires_grad=True)
    a = w + 1
    b = w + 1
    rec(a.grad_fn is b.grad_fn, a.grad_fn is a.grad_fn,
        a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0])
    n = a.grad_fn
    del a
    rec(n.next_functions[0][0].variable is w, type(n).__name__)


# == 4. in-place forms on non-leaves; grad dtypes through casts ================================

@snippet
def J5_inplace_forms_on_non_leaf_table(torch, rec):
    c = torch.tensor([3.0, 0.5])

    def iadd(y): y += 2
    def isub(y): y -= c
    def imul(y): y *= c
    def idiv(y): y /= c
    def ipow(y): y **= 2
    def setitem(y): y[0] = 7.0
    def setitem_t(y): y[1] = y[0] * 3

    ops = [("iadd", iadd), ("isub", isub), ("imul", imul), ("idiv", idiv), ("ipow", ipow),
           ("clamp_", lambda y: y.clamp_(0.6, 1.0)), ("exp_", lambda y: y.exp_()),
           ("log_", lambda y: y.log_()), ("sin_", lambda y: y.sin_()),
           ("neg_", lambda y: y.neg_()), ("relu_", lambda y: y.relu_()),
           ("sigmoid_", lambda y: y.sigmoid_()), ("tanh_", lambda y: y.tanh_()),
           ("sqrt_", lambda y: y.sqrt_()), ("abs_", lambda y: y.abs_()),
           ("zero_", lambda y: y.zero_()), ("fill_", lambda y: y.fill_(2.0)),
           ("copy_", lambda y: y.copy_(c)), ("add_alpha", lambda y: y.add_(c, alpha=2)),
           ("sub_alpha", lambda y: y.sub_(c, alpha=3)), ("mul_scalar", lambda y: y.mul_(4)),
           ("div_scalar", lambda y: y.div_(4)), ("pow_", lambda y: y.pow_(3)),
           ("masked_fill_", lambda y: y.masked_fill_(c > 1, 0.0)),
           ("setitem", setitem), ("setitem_t", setitem_t)]
    for name, op in ops:
        x = torch.tensor([0.5, 0.8], requires_grad=True)
        y = x * 1
        op(y)
        rec(name, y, y._version)
        y.sum().backward()
        rec(x.grad)


@snippet
def L4_inference_mode_without_parens_and_false(torch, rec):
    x = torch.ones(1, requires_grad=True)

    @torch.inference_mode
    def f():
        return torch.is_inference_mode_enabled(), (x * 2).requires_grad

    @torch.inference_mode(False)
    def g():
        return torch.is_inference_mode_enabled(), (x * 2).requires_grad

    rec(f(), g())
    with torch.inference_mode():
        rec(g())


@snippet
def E13_backward_list_with_none_and_tuples(torch, rec):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y2 = (x * x).sum()
    torch.autograd.backward((y1, y2), (torch.tensor([1.0, 10.0]), None))
    rec(x.grad)
    rec(catch(lambda: torch.autograd.backward([x * 3, x.sum()], [None, None])))
    rec(catch(lambda: torch.autograd.grad((x * 2, x * 3), x, (torch.ones(2), None))))


@snippet
def G9_grad_dtypes_through_casts(torch, rec):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.float().half()
    rec(y)
    (y * 3).sum().backward()
    rec(x.grad)
    h = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    (h.double() ** 2).sum().backward()
    rec(h.grad)
    f = torch.tensor([1.0, 2.0], requires_grad=True)
    i = torch.tensor([1, 2])
    (f * i).sum().backward()
    rec(f.grad)


@snippet
def I6_autograd_grad_with_retain_grad_and_hooks_on_inputs(torch, rec):
    log = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: (log.append(g.tolist()), g * 2)[1])
    r = torch.autograd.grad((y * y).sum(), y)
    rec(r, log, y.grad, x.grad)


# == 5. flag types, read-only attributes, bad hook arguments ===================================

@snippet
def B8_read_only_attributes_and_flag_types(torch, rec):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    rec(catch(lambda: setattr(y, "grad_fn", None)), catch(lambda: setattr(x, "is_leaf", False)),
        catch(lambda: setattr(x, "_version", 3)), catch(lambda: setattr(x, "data", 3)),
        catch(lambda: setattr(x, "retains_grad", True)))
    z = torch.ones(2)
    rec(catch(lambda: setattr(z, "requires_grad", "yes")), z.requires_grad)
    rec(catch(lambda: z.requires_grad_(1)), z.requires_grad)
    rec(catch(lambda: torch.tensor([1.0], requires_grad=1)))
    rec(y.grad_fn, x.is_leaf, x._version)


@snippet
def I11_bad_hook_arguments(torch, rec):
    x = torch.ones(2, requires_grad=True)
    r = catch(lambda: x.register_hook(3))
    rec(type(r).__name__ if not isinstance(r, tuple) else r)
    rec(catch(lambda: x.sum().backward()))
    y = torch.ones(2, requires_grad=True)
    rec(catch(lambda: torch.autograd.grad((y * 2).sum(), y, grad_outputs=3.0)))


# == the test ==================================================================================

@pytest.mark.parametrize("name", list(SNIPPETS))
def test_round2_snippet_matches_torch(name):
    fn = SNIPPETS[name]
    theirs = run_snippet(real_torch, fn, is_oracle=True)
    ours = run_snippet(adcompile, fn, is_oracle=False)
    if ours != theirs:
        diff = "\n".join(difflib.unified_diff(
            pprint.pformat(theirs, width=100).splitlines(),
            pprint.pformat(ours, width=100).splitlines(),
            "torch", "adcompile", lineterm=""))
        pytest.fail(f"{name}: observations differ\n{diff}", pytrace=False)
