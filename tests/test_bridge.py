"""The bridge: a compiled function called with eager Tensors is one node of the eager graph.

Differential: each case is a compiled function and the same computation written with Tensor
operations; a small model (eager ops before and after the node) runs three ways — ours with
the compiled node, ours all-eager, and PyTorch 2.13 with a `torch.autograd.Function` computing
the same thing (the oracle; its backward differentiates the Tensor version, so it is itself
differentiable). Values, first and second derivatives, and the order of hooks must agree;
node hooks (pre/post) are compared with the oracle, which has one node as we do.
"""

import gc
import weakref

import numpy as np
import pytest
import torch as real_torch

import adcompile as torch
from adcompile import adcompile, grad
from adcompile.bridge import Derived
from adcompile.backends.llvm import native
from tests.slices import FULL_ONLY, full, sliced

# -- the functions, compiled and as Tensor operations ------------------------------------------


@adcompile
def poly(x, y):
    return np.sum(x ** 3 - 2.0 * x * y)


def poly_t(lib, x, y):
    return (x ** 3 - 2.0 * x * y).sum()


@adcompile
def recurrence(x, w):
    h = 0.0 * w
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


def recurrence_t(lib, x, w):
    h = 0.0 * w
    for i in range(x.shape[0]):
        h = (w * h + x[i]).tanh()
    return h


@adcompile
def sin_times(x, y):
    return np.sin(x) * y


def sin_times_t(lib, x, y):
    return x.sin() * y


@adcompile
def pair(x, y):
    return np.sin(x) * y, np.sum(x * x)


def pair_t(lib, x, y):
    return x.sin() * y, (x * x).sum()


@adcompile
def with_count(x, y):
    return np.sum(np.exp(x) * y), x.shape[0]


def with_count_t(lib, x, y):
    return (x.exp() * y).sum(), x.shape[0]


@adcompile
def layer(a, b):
    return np.tanh(a @ b)


def layer_t(lib, a, b):
    return (a @ b).tanh()


@adcompile
def logsumexp(x, y):
    z = x * y
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def logsumexp_t(lib, x, y):
    z = x * y
    m = z.max()
    return m + (z - m).exp().sum().log()


@adcompile
def rms(x, y):
    return np.sqrt(np.mean(x * x * y) + 1.0)


def rms_t(lib, x, y):
    return ((x * x * y).mean() + 1.0).sqrt()


@adcompile
def scan(x, y):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc * 0.5 + x[i] * y[i]
        out[i] = acc
    return out


def scan_t(lib, x, y):
    acc, items = 0.0, []
    for i in range(x.shape[0]):
        acc = acc * 0.5 + x[i] * y[i]
        items.append(acc)
    return lib.stack(items)


@adcompile
def two_shapes(a, b):
    return a @ b, np.sum(b * b, axis=0)


def two_shapes_t(lib, a, b):
    return a @ b, (b * b).sum(0)


@adcompile
def states(x, w):
    out = np.zeros_like(x)
    h = 0.0 * w
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])  # the reverse sweep needs each h: a tape
        out[i] = h
    return out


def states_t(lib, x, w):
    h, items = 0.0 * w, []
    for i in range(x.shape[0]):
        h = (w * h + x[i]).tanh()
        items.append(h)
    return lib.stack(items)


@adcompile
def iterated(x, w):
    v = x * 1.0
    for i in range(3):
        v = np.sin(v * w)  # each iteration's array on a tape
    return v


def iterated_t(lib, x, w):
    v = x * 1.0
    for i in range(3):
        v = (v * w).sin()
    return v


@adcompile
def rnn(x, w):
    h = 0.0 * x[0]
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + x[t])  # each step's state on a tape of arrays
    return h


def rnn_t(lib, x, w):
    h = 0.0 * x[0]
    for t in range(x.shape[0]):
        h = (w @ h + x[t]).tanh()
    return h


@adcompile
def halving(x, w):
    v = x * 1.0
    k = 0
    while k < 3:  # a while loop carrying an array: its shadows are taped (memory handed over)
        v = np.sin(v * w) + 0.5 * v
        k += 1
    return v


def halving_t(lib, x, w):
    v = x * 1.0
    for k in range(3):
        v = (v * w).sin() + 0.5 * v
    return v


# name -> (compiled, tensor version, shapes of the two arguments)
FUNCTIONS = {
    "poly": (poly, poly_t, (5,), (5,)),
    "recurrence": (recurrence, recurrence_t, (6,), ()),
    "sin_times": (sin_times, sin_times_t, (3, 4), (4,)),  # broadcasting
    "pair": (pair, pair_t, (4,), (4,)),
    "with_count": (with_count, with_count_t, (4,), (4,)),  # an int output
    "layer": (layer, layer_t, (3, 4), (4, 2)),
    "logsumexp": (logsumexp, logsumexp_t, (6,), (6,)),
    "rms": (rms, rms_t, (2, 3), (2, 3)),
    "scan": (scan, scan_t, (5,), (5,)),
    "two_shapes": (two_shapes, two_shapes_t, (2, 3), (3, 4)),
    "states": (states, states_t, (5,), ()),  # a taped loop: tape handed over as an array
    "iterated": (iterated, iterated_t, (4,), ()),  # a tape of arrays: handed over flat
    "rnn": (rnn, rnn_t, (5, 3), (3, 3)),  # h = tanh(W @ h + x[t]): a tape of states
    "halving": (halving, halving_t, (4,), ()),  # taped shadows: shadow memory handed over
}

# how the arguments reach the node: straight from an eager op, as views of a bigger tensor,
# non-contiguous (a transposed or strided view), in float32, or with y a constant
LAYOUTS = ("plain", "view", "strided", "float32", "y_const")


def _inputs(lib, name, layout, seed):
    rng = np.random.default_rng(seed)
    _, _, sx, sy = FUNCTIONS[name]
    dtype = lib.float32 if layout == "float32" else lib.float64
    if layout in ("view", "strided"):
        # leaves bigger than the arguments; the arguments are views cut from them
        bx = rng.uniform(0.2, 1.2, (2,) + sx[::-1] if layout == "strided" else (3,) + sx)
        by = rng.uniform(0.2, 1.2, (3,) + sy)
    else:
        bx, by = rng.uniform(0.2, 1.2, sx), rng.uniform(0.2, 1.2, sy)
    x = lib.tensor(bx, dtype=dtype, requires_grad=True)
    y = lib.tensor(by, dtype=dtype, requires_grad=layout != "y_const")
    return x, y


def _cut(layout, x, y):
    """The node's arguments made from the leaves by eager ops (so the node's edges are real
    nodes): views, transposes and strides for the view layouts."""
    if layout == "view":
        return x[1] * 1.5, y[2]
    if layout == "strided":
        xt = x[1].t() if x.dim() == 3 else x[1]  # transposed (2-d) or a row of a 2-row leaf
        return xt * 1.0, y[1]
    return x * 1.5, y * 1.0 if y.requires_grad else y


def _oracle(fn_t):
    class Oracle(real_torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return fn_t(real_torch, x, y)

        @staticmethod
        def backward(ctx, *gouts):
            x, y = ctx.saved_tensors
            create = real_torch.is_grad_enabled()
            with real_torch.enable_grad():
                xs = [t if create else t.detach().requires_grad_(t.requires_grad)
                      for t in (x, y)]
                out = fn_t(real_torch, *xs)
                out = out if isinstance(out, tuple) else (out,)
                diff = [(o, g) for o, g in zip(out, gouts)
                        if isinstance(o, real_torch.Tensor) and o.requires_grad]
                wrt = [t for t in xs if t.requires_grad]
                got = real_torch.autograd.grad([o for o, _ in diff], wrt,
                                               [g for _, g in diff], create_graph=create,
                                               allow_unused=True)
            it = iter(got)
            return tuple(next(it) if t.requires_grad else None for t in xs)

    return Oracle.apply


def _node(kind, name):
    compiled, fn_t, _, _ = FUNCTIONS[name]
    if kind == "compiled":
        return compiled
    if kind == "eager":
        return lambda x, y: fn_t(torch, x, y)
    return _oracle(fn_t)


def _loss(lib, out):
    outs = out if isinstance(out, tuple) else (out,)
    total = 0.0
    for k, o in enumerate(outs):
        if isinstance(o, int) or not o.is_floating_point():
            continue
        total = total + ((o * (k + 1.0)).exp() * 0.25).sum()  # nonlinear: a cotangent with history
    return total


def _lib(kind):
    return real_torch if kind == "oracle" else torch


def _arr(t):
    return None if t is None else t.detach().numpy().copy()


def run_first(kind, name, layout, mode):
    """Values, gradients and hook events of one backward (plain, twice with retain_graph, or
    with inputs=)."""
    lib = _lib(kind)
    x, y = _inputs(lib, name, layout, 0)
    events = []
    a, b = _cut(layout, x, y)
    for tag, t in (("x", x), ("y", y), ("a", a), ("b", b)):
        if t.requires_grad:
            t.register_hook(lambda g, tag=tag: events.append(("tensor", tag)))
    out = _node(kind, name)(a, b)
    first = out[0] if isinstance(out, tuple) else out
    first.register_hook(lambda g: events.append(("tensor", "out")))
    first.retain_grad()
    node_events = []
    if kind != "eager":
        node = first.grad_fn
        node.register_prehook(lambda go: node_events.append("pre"))
        node.register_hook(lambda gi, go: node_events.append(("post", len(gi))))
    loss = _loss(lib, out)
    if mode == "retain":
        loss.backward(retain_graph=True)
        loss.backward()
    elif mode == "inputs":
        loss.backward(inputs=[x])
    else:
        loss.backward()
    values = [_arr(o) if not isinstance(o, int) else o
              for o in (out if isinstance(out, tuple) else (out,))]
    return values, [_arr(x.grad), _arr(y.grad), _arr(first.grad)], events, node_events


def run_second(kind, name, layout):
    """Second derivatives: the gradient with create_graph, then the backward of a function of
    it (Hessian-vector products through the node)."""
    lib = _lib(kind)
    x, y = _inputs(lib, name, layout, 1)
    a, b = _cut(layout, x, y)
    loss = _loss(lib, _node(kind, name)(a, b))
    wrt = [t for t in (x, y) if t.requires_grad]
    grads = lib.autograd.grad(loss, wrt, create_graph=True)
    (sum((g * g).sum() for g in grads)).backward()
    return [_arr(g) for g in grads], [_arr(x.grad), _arr(y.grad)]


def _close(ours, theirs, layout):
    rtol = 2e-4 if layout == "float32" else 1e-9
    assert len(ours) == len(theirs)
    for p, q in zip(ours, theirs):
        if p is None or q is None or isinstance(p, int):
            assert p is None and q is None or p == q
            continue
        np.testing.assert_allclose(p, q, rtol=rtol, atol=rtol)


CASES = [(n, layout) for n in FUNCTIONS for layout in LAYOUTS]


@pytest.mark.parametrize("name,layout", CASES)
def test_first_order_matches_eager_and_oracle(name, layout):
    got = run_first("compiled", name, layout, "plain")
    for other in ("eager", "oracle"):
        ref = run_first(other, name, layout, "plain")
        _close(got[0], ref[0], layout)
        _close(got[1], ref[1], layout)
        assert got[2] == ref[2], f"tensor hook order differs from {other}"
    assert got[3] == ref[3]  # node hooks, as the oracle's node


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("mode", ["retain", "inputs"])
def test_retain_graph_and_inputs(name, mode):
    got = run_first("compiled", name, "plain", mode)
    for other in ("eager", "oracle"):
        ref = run_first(other, name, "plain", mode)
        _close(got[1], ref[1], "plain")
        assert got[2] == ref[2]


# CI: every function plain, and every other one of the other layouts
SECOND_ORDER = sliced([(n, lay) for n in FUNCTIONS for lay in ("plain", "strided", "y_const")
                       if n != "halving"], every=2, keep=lambda case: case[1] == "plain")


@pytest.mark.parametrize("name,layout", SECOND_ORDER)
def test_second_order_matches_eager_and_oracle(name, layout):
    got = run_second("compiled", name, layout)
    for other in ("eager", "oracle"):
        ref = run_second(other, name, layout)
        _close(got[0], ref[0], layout)
        _close(got[1], ref[1], layout)


def test_second_order_through_a_while_loop_carrying_an_array():
    """The pullback reaches its shadow arrays through tapes (the seed's add_at into the
    loop's result, read back as a popped item): its own pullback follows that memory."""
    got = run_second("compiled", "halving", "plain")
    ref = run_second("eager", "halving", "plain")
    _close(got[1], ref[1], "plain")


# -- the node's anatomy --------------------------------------------------------------------


def test_node_name_and_edges():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    a = x * 2.0
    out = recurrence(a, w)
    node = out.grad_fn
    assert type(node).__name__ == "CompiledFunctionBackward"
    assert node.next_functions == ((a.grad_fn, 0), (w.grad_fn or _acc(w), 0))
    c = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert sin_times(x, c).grad_fn.next_functions[1] == (None, 0)


def _acc(t):
    return (t * 1.0).grad_fn.next_functions[0][0]


def test_outputs_share_one_node_and_int_outputs_have_none():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    s, n = with_count(x, x * 1.0)
    assert n.dtype == torch.int64 and n.grad_fn is None and int(n) == 3
    u, v = pair(x, x * 2.0)
    assert u.grad_fn is v.grad_fn and (u._output_nr, v._output_nr) == (0, 1)


def test_no_grad_and_inference_mode_make_no_node():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        assert poly(x, x).grad_fn is None
    with torch.inference_mode():
        out = poly(x, x)
        assert out.grad_fn is None and not out.requires_grad
    y = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert poly(y, y).grad_fn is None and poly(y, y).item() == poly(y.numpy(), y.numpy())


def test_arguments_are_not_copied_and_zero_dim_is_a_scalar():
    from adcompile.ir import types as T

    @adcompile
    def head(x, s):
        return x[0:2] * s, x[0:2]

    x = torch.tensor(np.arange(6.0).reshape(2, 3))
    xt = x.t()  # non-contiguous: the machine code reads it in place
    scaled, view = head(xt, torch.tensor(2.0, dtype=torch.float64))
    assert np.shares_memory(view.numpy(), x.numpy())
    np.testing.assert_array_equal(scaled.numpy(), 2.0 * x.numpy().T[:2])
    (key,) = [k for k in head._cache if isinstance(k[0], T.Array)]  # the primal's signature
    assert isinstance(key[1], T.Scalar) and key[1].dtype == "f64" and not key[1].weak


def test_in_place_after_the_call_is_caught_at_backward():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = x * 1.0
    out = sin_times(a, a)
    a.mul_(2.0)
    with pytest.raises(RuntimeError, match="in-place"):
        out.sum().backward()


def test_saved_state_freed_after_backward():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = x * 1.0
    probe = weakref.ref(a)
    out = poly(a, a)
    node = out.grad_fn
    del a
    gc.collect()
    assert probe() is not None  # the node keeps its argument for backward
    out.backward()
    assert node._args is None
    gc.collect()
    assert probe() is None
    with pytest.raises(RuntimeError, match="retain_graph"):
        out.backward()


def test_allow_unused():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    z = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    out = poly(x, x)
    gx, gz = torch.autograd.grad(out, [x, z], allow_unused=True)
    assert gz is None and gx is not None
    with pytest.raises(RuntimeError):
        torch.autograd.grad(poly(x, x), [x, z])


def test_unsupported_dtype_names_the_parameter():
    x = torch.tensor([1, 2], dtype=torch.int32)
    with pytest.raises(TypeError, match="'y'.*torch.int32"):
        poly(torch.tensor([1.0, 2.0]), x)


def test_tensor_requiring_grad_inside_a_tuple_is_refused():
    @adcompile
    def first(t):
        return t[0] * 2.0

    x = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match="inside a tuple"):
        first((x, 1.0))
    with torch.no_grad():
        assert first((x, 1.0)).item() == 3.0


def test_writing_into_an_argument():
    @adcompile
    def fill(buf, v):
        buf[0] = v
        return v * 2.0

    buf = torch.zeros(2, dtype=torch.float64)
    version = buf._version
    fill(buf, 3.0)
    assert buf[0].item() == 3.0 and buf._version == version + 1
    leaf = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="writes into"):
        fill(leaf, 1.0)


def test_make_dot_shows_the_node():
    from runtime.viz import make_dot

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    dot = make_dot(poly(x * 2.0, x), params={"x": x})
    text = dot.source if hasattr(dot, "source") else str(dot)
    assert "CompiledFunctionBackward" in text and "MulBackward0" in text


def test_grad_program_on_tensors_is_a_node():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.5, 0.1], dtype=torch.float64)
    g = grad(poly)(x, y)  # 3x^2 - 2y
    assert type(g.grad_fn).__name__ == "CompiledFunctionBackward"
    g.sum().backward()  # d/dx sum(3x^2 - 2y) = 6x
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy())


def test_jvp_on_tensors():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.5, 0.1], dtype=torch.float64)
    t = torch.tensor([1.0, 0.0], dtype=torch.float64)
    value, tangent = torch.jvp(poly, (x, y), (t, None))
    assert value.grad_fn is not None
    tangent.backward()  # d/dx (3x0^2 - 2y0) = (6 x0, 0)
    np.testing.assert_allclose(x.grad.numpy(), [6 * 0.3, 0.0])


def test_third_order():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    w = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    results = []
    for f in (recurrence, lambda a, b: recurrence_t(torch, a, b)):
        out = f(x, w)
        (g,) = torch.autograd.grad(out, w, create_graph=True)
        (h,) = torch.autograd.grad(g, w, create_graph=True)
        (k,) = torch.autograd.grad(h, x)
        results.append(k.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_memory_stays_flat_over_many_calls():
    """benchmarks/bridge.py runs 10^5 calls; here a few thousand."""
    x = torch.tensor(np.linspace(-0.5, 0.5, 100), requires_grad=True)
    w = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    xs = torch.tensor(np.linspace(-0.5, 0.5, 100).reshape(25, 4), requires_grad=True)
    ws = torch.tensor(np.eye(4) * 0.3, requires_grad=True)
    # a scalar result (gradients from the forward call), an array result (residuals), a taped
    # loop with an array result (a tape of scalars handed over), a tape of arrays handed over,
    # and taped shadow arrays (the shadow memory's layout handed over)
    for f, a, b in ((recurrence, x, w), (sin_times, x, w), (states, x, w), (rnn, xs, ws),
                    (halving, x, w)):
        for _ in range(300):  # warm-up: compilation, allocator pools
            (f(a * 1.0, b) ** 2).sum().backward()
        native.settle()  # (the tier-up these calls started: its code is loaded once)
        gc.collect()
        before = _rss_mib()
        for _ in range(3000):
            (f(a * 1.0, b) ** 2).sum().backward()
        gc.collect()
        assert _rss_mib() - before < 2.0, f.__name__


def _split_programs(f, args):
    from adcompile.bridge import _facts

    active = (True,) * len(args)
    if not _facts(f, args).splittable(active):
        return None
    forward = Derived(f, active, "forward")
    result, residuals = forward(*args)
    leaves = result if isinstance(result, tuple) else (result,)
    cot = [np.ones_like(r) if isinstance(r, np.ndarray) else 1.0 for r in leaves]
    reverse = Derived(f, active, "reverse")
    rev_args = (*args, *residuals, *cot)
    return forward.ir(*args), reverse.ir(*rev_args), reverse(*rev_args)


def test_backward_does_not_recompute_the_primal():
    """Array results: the forward call returns residuals; the reverse sweep reads them and
    never computes the primal's sin / matmul+tanh again."""
    x, y = np.array([0.3, 0.9, 1.4]), np.array([0.5, 0.1, 0.2])
    fwd, rev, grads = _split_programs(pair, (x, y))
    assert " sin " in fwd and " sin " not in rev and " cos " in rev
    np.testing.assert_allclose(grads[0], np.cos(x) * y + 2 * x)
    a, b = np.ones((2, 3)) * 0.1, np.ones((3, 2)) * 0.2
    fwd, rev, _ = _split_programs(layer, (a, b))
    assert "tanh" in fwd and "tanh" not in rev and "matmul %a, %b" not in rev


def test_taped_loops_hand_their_tapes_over_as_arrays():
    x, w = np.array([0.1, 0.2, 0.7]), 0.5
    fwd, rev, grads = _split_programs(states, (x, w))
    assert "tape_size" in fwd and "tape_push" in rev
    pullback = Derived(states, (True, True), "pullback")(x, w, np.ones(3))
    np.testing.assert_array_equal(grads[0], pullback[0])
    assert grads[1] == pullback[1]


def test_tapes_of_arrays_are_handed_over_flat():
    """A loop carrying an array through nonlinear steps tapes each step's array: the forward
    copies the items into one flat array and a table of (offset, size, shape); the reverse
    rebuilds the tape from views of it and runs no primal op (no tanh, no w @ h)."""
    x, w = np.linspace(-0.4, 0.6, 12).reshape(4, 3), np.eye(3) * 0.5 + 0.1
    fwd, rev, grads = _split_programs(rnn, (x, w))
    assert "tape_size" in fwd and "tanh" in fwd and "matmul %w" in fwd
    assert "tanh" not in rev and "matmul %w" not in rev and "tape_push" in rev
    pullback = Derived(rnn, (True, True), "pullback")(x, w, np.ones(3))
    for got, want in zip(grads, pullback):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_taped_shadow_arrays_are_handed_over_as_their_layout():
    """A while loop carrying an array tapes each step's shadow array; the reverse sweep
    accumulates into them, and which of them share memory is what makes it right. The forward
    hands over where each one lies (tables of offsets, strides and shapes), the reverse makes
    them again as strided views of new zeroed memory and runs no primal op (no sin); twice
    (the second backward starts from fresh zeros), bit-identical to the pullback."""
    x, w = np.array([0.1, 0.2, 0.7]), 0.5
    fwd, rev, grads = _split_programs(halving, (x, w))
    assert "sin" in fwd and "sin" not in rev and "cos" in rev and "strided" in rev
    pullback = Derived(halving, (True, True), "pullback")(x, w, np.ones(3))
    for _ in range(2):
        _, _, grads = _split_programs(halving, (x, w))
        np.testing.assert_array_equal(grads[0], pullback[0])
        assert grads[1] == pullback[1]


def test_read_only_arrays_reach_both_halves():
    """The halves write only memory they made (the forward numbers its shadow allocations
    through items of its own tapes, the reverse accumulates into items of tapes it rebuilt):
    read-only arguments and cotangents (`sum`'s backward hands over a broadcast, read-only
    array) are taken as they are. (Before, every parameter counted as written, and the node's
    backward raised "read-only" here; the pullback program, writing through a loop's result,
    still counts them all, so it is run on copies.)"""
    x = np.broadcast_to(np.array([0.3]), (4,))
    active = (True, True)
    result, residuals = Derived(halving, active, "forward")(x, 0.5)
    cot = np.broadcast_to(np.array(1.0), (4,))
    got = Derived(halving, active, "reverse")(x, 0.5, *residuals, cot)
    want = Derived(halving, active, "pullback")(x.copy(), 0.5, cot.copy())
    np.testing.assert_array_equal(got[0], want[0])
    xt = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64, requires_grad=True)
    w = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    halving(xt, w).sum().backward()
    xe = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64, requires_grad=True)
    we = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    halving_t(torch, xe, we).sum().backward()
    np.testing.assert_allclose(_arr(xt.grad), _arr(xe.grad), rtol=1e-13)
    np.testing.assert_allclose(_arr(w.grad), _arr(we.grad), rtol=1e-13)


@pytest.fixture
def programs_run(monkeypatch):
    """The compiled programs run (on numpy values), by mode: "primal" for the function
    itself, else the Derived program's mode (vjp, forward, reverse, pullback)."""
    from adcompile import api
    from adcompile.bridge import has_tensor

    runs = []
    for cls, mode_of in ((Derived, lambda p: p.mode), (api.CompiledFunction, lambda p: "primal")):
        def spy(self, *args, _original=cls.__call__, _mode=mode_of):
            if not has_tensor(args):
                runs.append(_mode(self))
            return _original(self, *args)
        monkeypatch.setattr(cls, "__call__", spy)
    return runs


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_backward_runs_only_the_reverse_half(name, programs_run):
    """The forward call runs one program that keeps what the reverse sweep needs; backward
    (twice, retain_graph) runs only the reverse half: the primal is never run again. A
    float-scalar result gets its gradients from the forward call (nothing runs at backward).
    A loop taping shadow arrays ("halving") splits as the others do."""
    x, y = _inputs(torch, name, "plain", 2)
    out = _node("compiled", name)(x * 1.0, y * 1.0)
    forward_runs = list(programs_run)
    del programs_run[:]
    _loss(torch, out).backward(retain_graph=True)
    _loss(torch, out).backward()
    scalar = not isinstance(out, tuple) and out.dim() == 0
    if scalar:
        assert (forward_runs, programs_run) == (["vjp"], [])
    else:
        assert (forward_runs, programs_run) == (["forward"], ["reverse", "reverse"])


def test_create_graph_backward_is_the_pullback_node(programs_run):
    """With create_graph the backward is a compiled node for the pullback program (the
    documented design: a differentiable backward is a function of the inputs). This RNN's
    pullback keeps shadow arrays on tapes, so its vjp would need shadow memory rebuilt:
    such a pullback runs unsplit (its split halves are third-order-sized programs), so the
    node runs the pullback and its own backward the pullback's pullback; the Hessian-vector
    product agrees with the all-eager one and PyTorch's (the SECOND_ORDER cases check more)."""
    results = []
    for kind in ("compiled", "eager", "oracle"):
        lib = _lib(kind)
        x, w = _inputs(lib, "rnn", "plain", 4)
        out = _node(kind, "rnn")(x * 1.0, w)
        del programs_run[:]
        (gx,) = lib.autograd.grad(_loss(lib, out), x, create_graph=True)
        if kind == "compiled":
            assert programs_run == ["pullback"]
            node = gx.grad_fn.next_functions[0][0]  # (gx = that node's output * 1.0)
            assert type(node).__name__ == "CompiledFunctionBackward"
        (hv,) = lib.autograd.grad((gx * x.detach().cos()).sum(), x)
        if kind == "compiled":
            # the pullback's pullback, then the first node's backward for the cotangent's
            # history
            assert programs_run == ["pullback", "pullback", "reverse"]
        results.append((_arr(gx), _arr(hv)))
    for other in results[1:]:
        _close(results[0], other, "plain")


def test_output_changed_in_place_before_backward():
    a = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.float64, requires_grad=True)
    out = layer(a * 1.0, a * 2.0)  # the reverse sweep reads the output (tanh')
    out.mul_(2.0)
    with pytest.raises(RuntimeError, match="in-place"):
        out.sum().backward()


def test_value_and_grad_and_vjp_on_tensors():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.5, 0.1], dtype=torch.float64)
    value, g = torch.value_and_grad(poly)(x, y)
    assert isinstance(g, torch.Tensor) and value.grad_fn is g.grad_fn
    (g0,) = grad(poly, argnums=(0,))(x, y)
    np.testing.assert_allclose(g0.detach().numpy(), 3 * x.detach().numpy() ** 2 - 2 * 0.5 *
                               np.array([1.0, 0.2]))
    out, pullback = torch.vjp(sin_times, x, y)
    (gx, gy) = pullback(torch.ones(2, dtype=torch.float64))
    assert gx.grad_fn is not None  # x requires grad: the pullback is recorded
    np.testing.assert_allclose(gx.detach().numpy(), np.cos(x.detach().numpy()) * y.numpy())
    np.testing.assert_allclose(gy.detach().numpy(), np.sin(x.detach().numpy()))  # (every float one)


# -- autograd.functional and func transforms through the node -----------------------------------


def _func_oracle(fn_t):
    """The oracle for torch.func transforms: an autograd.Function with setup_context, its
    backward and jvp given by torch.func on the Tensor version, and a generated vmap rule."""

    class Oracle(real_torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, y):
            return fn_t(real_torch, x, y)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.inputs = inputs

        @staticmethod
        def backward(ctx, *gouts):
            _, pullback = real_torch.func.vjp(lambda a, b: fn_t(real_torch, a, b),
                                              *ctx.saved_tensors)
            return pullback(gouts[0] if len(gouts) == 1 else gouts)

        @staticmethod
        def jvp(ctx, tx, ty):
            return real_torch.func.jvp(lambda a, b: fn_t(real_torch, a, b), ctx.inputs,
                                       (tx, ty))[1]

    return Oracle.apply


def _sum_sin(f):
    """A scalar function of the node's outputs (float ones), nonlinear in them."""
    def loss(a, b):
        out = f(a, b)
        return sum((o * (k + 1.0)).sin().sum() for k, o in enumerate(
            out if isinstance(out, tuple) else (out,)))
    return loss


# name -> transform(lib, f, x, y): each calls one entry point of autograd.functional or func
TRANSFORMS = {
    "jacobian": lambda lib, f, x, y: lib.autograd.functional.jacobian(f, (x, y)),
    "jacobian_create_graph": lambda lib, f, x, y: lib.autograd.functional.jacobian(
        f, (x, y), create_graph=True),
    "jacobian_vectorize": lambda lib, f, x, y: lib.autograd.functional.jacobian(
        f, (x, y), vectorize=True),
    "hessian": lambda lib, f, x, y: lib.autograd.functional.hessian(_sum_sin(f), (x, y)),
    "vjp": lambda lib, f, x, y: lib.autograd.functional.vjp(
        lambda a, b: _sum_sin(f)(a, b) * 1.0, (x, y))[1],
    "jvp": lambda lib, f, x, y: lib.autograd.functional.jvp(
        _sum_sin(f), (x, y), (x * 0.5, y * 0.2))[1],
    "vhp": lambda lib, f, x, y: lib.autograd.functional.vhp(
        _sum_sin(f), (x, y), (x * 0.3, y * 0.1))[1],
    "hvp": lambda lib, f, x, y: lib.autograd.functional.hvp(
        _sum_sin(f), (x, y), (x * 0.3, y * 0.1))[1],
    "func.grad": lambda lib, f, x, y: lib.func.grad(_sum_sin(f), argnums=(0, 1))(x, y),
    "func.jacrev": lambda lib, f, x, y: lib.func.jacrev(f, argnums=(0, 1))(x, y),
    "func.jacfwd": lambda lib, f, x, y: lib.func.jacfwd(f, argnums=(0, 1))(x, y),
    "func.hessian": lambda lib, f, x, y: lib.func.hessian(_sum_sin(f), argnums=(0, 1))(x, y),
    "func.vjp": lambda lib, f, x, y: lib.func.vjp(_sum_sin(f), x, y)[1](
        lib.tensor(1.5, dtype=lib.float64)),
    "func.jvp": lambda lib, f, x, y: lib.func.jvp(_sum_sin(f), (x, y), (x * 0.5, y * 0.2))[1],
    "func.vmap": lambda lib, f, x, y: lib.func.vmap(lambda a: f(a, y))(lib.stack([x, x * 2.0])),
}
# functions whose Tensor version the transforms differentiate (floating outputs only)
TRANSFORMED = ("poly", "sin_times", "pair", "layer", "states", "rnn", "iterated")


def run_transform(kind, transform, name):
    lib = _lib(kind)
    compiled, fn_t, sx, sy = FUNCTIONS[name]
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.uniform(0.2, 1.2, sx), dtype=lib.float64)
    y = lib.tensor(rng.uniform(0.2, 1.2, sy), dtype=lib.float64)
    f = {"compiled": compiled, "eager": lambda a, b: fn_t(torch, a, b),
         "oracle": _func_oracle(fn_t) if transform.startswith("func.") else _oracle(fn_t)}[kind]
    out = TRANSFORMS[transform](lib, f, x, y)
    leaves = []
    _leaves(out, leaves)
    return leaves


def _leaves(out, leaves):
    if isinstance(out, (tuple, list)):
        for o in out:
            _leaves(o, leaves)
    else:
        leaves.append(_arr(out))


# hvp and func.hessian differentiate the double backward: third-order compiled programs whose
# LLVM compilation takes most of a minute over the seven functions; CI runs them on a slice
# of a broadcasting product, a taped loop and a two-output function (the rest: --time)
THIRD_ORDER = {"hvp", "func.hessian"}
THIRD_ORDER_SLICE = {"sin_times", "states", "pair"}


@pytest.mark.parametrize("name", TRANSFORMED)
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_transforms_through_the_node(transform, name, request):
    """jacobian, hessian, vjp/jvp/vhp/hvp and the func transforms of a function calling a
    compiled node agree with the same function all-eager and with PyTorch's (oracle)."""
    if (transform in THIRD_ORDER and name not in THIRD_ORDER_SLICE
            and not full(request.config)):
        pytest.skip("third-order transforms run on every function with --full")
    got = run_transform("compiled", transform, name)
    for other in ("eager", "oracle"):
        _close(got, run_transform(other, transform, name), "plain")


@FULL_ONLY
def test_hvp_through_a_loop_carrying_an_array():
    """autograd.functional.hvp differentiates the double backward with respect to its
    cotangent: a third-order compiled program, which reaches the second-order program's
    shadow arrays through its tapes. Its native compile alone is ~40 CPU-s, so CI leaves it
    to --full (the same hvp of rnn runs on the interpreter and the Python backend in
    tests/compiler/test_higher_order.py, and a taped loop's hvp natively in the slice above)."""
    _close(run_transform("compiled", "hvp", "rnn"), run_transform("eager", "hvp", "rnn"),
           "plain")
