"""Second and third order through loops that carry arrays or write elements into arrays.

A reverse-mode program keeps its shadow arrays on tapes and reaches the same memory by
several names (an iteration's result is the next one's parameter; the seed writes into a
loop's result, which the adjoint loop reads back as a popped item); differentiating it again
must follow that memory (ad/aliases.py). Each case is a compiled function f(x, w) and the
same computation written with eager Tensors; each *tower* is a word over the transforms
applied to f, innermost first:
- "v": the pullback ((args..., cotangent leaves) -> cotangents: reverse mode);
- "j": the jvp ((args..., tangents) -> (value, tangent): forward mode);
- "g": grad with respect to both arguments (the cotangent fixed at 1; scalar cases only).
So "v" is first order, "vv" the pullback of the pullback (grad of grad), "vj" a jvp of the
pullback (Hessian times a vector), "vvv", "vvj" and "vjv" third order. Every program of a
tower is checked against the eager runtime differentiating the Tensor version to the same
order (create_graph), and against central differences of the program one order below (the
dot-product form: <P_k(p, c), d> = d/de <P_(k-1)(p + e d), c> for a pullback,
<P_k(p, d), c> for a jvp), on every backend.
"""

import numpy as np
import pytest

import adcompile as torch
from adcompile import adcompile
from adcompile.bridge import derived
from tests import test_bridge as bridge_cases
from tests.slices import sliced

# -- the cases: compiled, and as Tensor operations (`lib` is the eager runtime) ---------------


def for_carry(x, w):
    v = x * 1.0
    for i in range(3):  # a counted loop carrying an array
        v = np.sin(v * w) + 0.5 * v
    return v


def break_carry(x, w):
    v = x * 1.0
    for i in range(6):  # a range loop with break carrying an array (a while loop)
        v = np.cos(v * w) * v
        if i * w > 1.5:
            break
    return v


def break_carry_t(lib, x, w):
    v = x * 1.0
    for i in range(6):
        v = (v * w).cos() * v
        if i * float(w.detach()) > 1.5:
            break
    return v


def scan_write(x, w):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):  # element writes into an array
        acc = np.sin(acc * w + x[i])
        out[i] = acc * x[i]
    return out


def scan_write_t(lib, x, w):
    acc, items = 0.0 * w, []
    for i in range(x.shape[0]):
        acc = (acc * w + x[i]).sin()
        items.append(acc * x[i])
    return lib.stack(items)


def read_after_write(x, w):
    a = x * 1.0
    for i in range(1, a.shape[0]):  # each element written from the one written before
        a[i] = np.sin(a[i - 1] * w) + a[i]
    return a


def read_after_write_t(lib, x, w):
    items = [x[0]]
    for i in range(1, x.shape[0]):
        items.append((items[-1] * w).sin() + x[i])
    return lib.stack(items)


def while_write(x, w):
    out = np.zeros_like(x)
    acc = w * 1.0
    i = 0
    while i < x.shape[0]:  # a while loop writing elements
        acc = np.sin(acc + x[i])
        out[i] = acc * acc
        i += 1
    return out


def while_write_t(lib, x, w):
    acc, items = w * 1.0, []
    for i in range(x.shape[0]):
        acc = (acc + x[i]).sin()
        items.append(acc * acc)
    return lib.stack(items)


def break_write(x, w):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):  # element writes in a loop with break
        out[i] = np.exp(x[i] * w)
        if i >= 2:
            break
    return out * x


def break_write_t(lib, x, w):
    items = [(x[i] * w).exp() for i in range(3)]
    zeros = [x[i] * 0.0 for i in range(3, x.shape[0])]
    return lib.stack(items + zeros) * x


def carry_and_write(x, w):
    v = x * 1.0
    k = 0
    while k < 2:  # a while loop carrying an array it writes an element of
        v = v * w
        v[0] = np.sin(v[0] + v[1])
        k += 1
    return v


def carry_and_write_t(lib, x, w):
    v = x * 1.0
    for k in range(2):
        v = v * w
        v = lib.cat([(v[0] + v[1]).sin().reshape(1), v[1:]])
    return v


def if_merge(x, w):
    v = x * 1.0
    for i in range(4):  # an if merging arrays inside a loop
        if i % 2 == 0:
            v = np.sin(v * w)
        else:
            v = v * w + x
    return v


def if_merge_t(lib, x, w):
    v = x * 1.0
    for i in range(4):
        v = (v * w).sin() if i % 2 == 0 else v * w + x
    return v


def nested_write(x, w):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):  # nested loops adding into an element
        for j in range(i + 1):
            out[i] += np.sin(x[j] * w) * x[i]
    return out


def nested_write_t(lib, x, w):
    return lib.stack([sum((x[j] * w).sin() * x[i] for j in range(i + 1))
                      for i in range(x.shape[0])])


def row_writes(x, w):
    a = np.zeros((3, x.shape[0]))
    v = x * 1.0
    for i in range(3):  # whole rows written from a carried array
        v = np.tanh(v * w + a[i - 1])
        a[i, :] = v * v
    return a


def row_writes_t(lib, x, w):
    rows, v = [], x * 1.0
    for i in range(3):
        prev = rows[-1] if i > 0 else x * 0.0
        v = (v * w + prev).tanh()
        rows.append(v * v)
    return lib.stack(rows)


def cleared_then_added(x, w):
    a = np.zeros((2, x.shape[0]))
    t = x * w
    a[0] = x  # its adjoint clears a_bar[0] after a[0] += t's has read it
    a[0] += t
    a[1] = t * t
    return a


def cleared_then_added_t(lib, x, w):
    t = x * w
    return lib.stack([x + t, t * t])


def while_loss(x, w):
    v = x * 1.0
    k = 0
    while k < 3:
        v = np.sin(v * w) + 0.5 * v
        k += 1
    return np.sum(v * v)


def while_loss_t(lib, x, w):
    return (bridge_cases.halving_t(lib, x, w) ** 2).sum()


def scan_loss(x, w):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = np.sin(acc * w + x[i])
        out[i] = acc * x[i]
    return np.sum(np.exp(out))


def scan_loss_t(lib, x, w):
    return scan_write_t(lib, x, w).exp().sum()


# name -> (function, Tensor version, shape of x, shape of w)
CASES = {
    "for_carry": (for_carry, bridge_cases.halving_t, (4,), ()),  # (the same as a range loop)
    # (the bridge tests' functions: Python functions of their compiled ones)
    "iterated": (bridge_cases.iterated.fn, bridge_cases.iterated_t, (4,), ()),
    "rnn": (bridge_cases.rnn.fn, bridge_cases.rnn_t, (4, 3), (3, 3)),
    "while_carry": (bridge_cases.halving.fn, bridge_cases.halving_t, (4,), ()),
    "break_carry": (break_carry, break_carry_t, (3,), ()),
    "scan_write": (scan_write, scan_write_t, (5,), ()),
    "read_after_write": (read_after_write, read_after_write_t, (5,), ()),
    "while_write": (while_write, while_write_t, (4,), ()),
    "break_write": (break_write, break_write_t, (5,), ()),
    "carry_and_write": (carry_and_write, carry_and_write_t, (3,), ()),
    "if_merge": (if_merge, if_merge_t, (4,), ()),
    "nested_write": (nested_write, nested_write_t, (4,), ()),
    "row_writes": (row_writes, row_writes_t, (4,), ()),
    "cleared_then_added": (cleared_then_added, cleared_then_added_t, (3,), ()),
    "while_loss": (while_loss, while_loss_t, (4,), ()),
    "scan_loss": (scan_loss, scan_loss_t, (4,), ()),
}
SCALAR = ("while_loss", "scan_loss")
TOWERS = ("v", "vv", "vj", "vvv", "vvj", "vjv")
SCALAR_TOWERS = ("gv", "gj", "gvv", "gvj")


def _compiled(name, backend, memo={}):
    key = (name, backend)
    if key not in memo:
        memo[key] = adcompile(CASES[name][0], backend=backend)
    return memo[key]


# -- the towers: compiled and eager ----------------------------------------------------------


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


def _compiled_tower(f, tower, counts):
    """The program of each prefix of the tower, applied to `f`; counts[k]: how many arguments
    the program the k-th transform applies to takes."""
    programs = []
    for kind, n in zip(tower, counts):
        if kind == "g":
            f = torch.grad(f, argnums=tuple(range(n)))
        else:
            f = derived(f, (True,) * n, {"v": "pullback", "j": "jvp"}[kind])
        programs.append(f)
    return programs


def _eager_step(g, kind, n):
    """The eager counterpart of one transform of `g` (a function of n Tensors)."""
    def pullback(*args):
        got = torch.autograd.grad(_leaves(g(*args[:n])), args[:n], args[n:],
                                  create_graph=True, allow_unused=True)
        return tuple(a * 0.0 if d is None else d for a, d in zip(args[:n], got))

    def jvp(*args):
        return torch.autograd.functional.jvp(g, args[:n], args[n:], create_graph=True)

    def grad(*args):
        return pullback(*args, torch.tensor(1.0, dtype=torch.float64))

    return {"v": pullback, "j": jvp, "g": grad}[kind]


def _random_like(rng, a):
    return float(rng.uniform(-1, 1)) if np.ndim(a) == 0 else rng.uniform(-1, 1, np.shape(a))


def _inputs(name, tower):
    """The arguments of the whole tower (x, w, then the cotangents or tangents each
    transform adds, shaped like the outputs or inputs of the level below) and counts[k], how
    many of them the k-th level's program takes (counts[0] = 2: f's)."""
    rng = np.random.default_rng(len(tower))
    _, _, sx, sw = CASES[name]
    args = [rng.uniform(0.2, 1.2, sx), float(rng.uniform(0.3, 0.9)) if sw == () else
            rng.uniform(-0.6, 0.6, sw)]
    f, counts = _compiled(name, "python"), [2]
    for kind in tower:
        like = {"v": lambda: _leaves(f(*args)), "j": lambda: args, "g": lambda: []}[kind]()
        args = args + [_random_like(rng, a) for a in like]
        counts.append(len(args))
        (f,) = _compiled_tower(f, kind, counts[-2:-1])
    return args, counts


def _flat(values):
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in _leaves(values)])


def _eager(name, tower, args, counts):
    g = lambda x, w: CASES[name][1](torch, x, w)  # noqa: E731
    for kind, n in zip(tower, counts):
        g = _eager_step(g, kind, n)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    return _flat([o.detach().numpy() for o in _leaves(g(*tensors))])


def _finite_difference(below, tower, args, counts, program):
    """(<P_k, direction>, central difference of <P_(k-1), direction'>) for the tower's last
    transform (see the module docstring)."""
    kind, n = tower[-1], counts[-2]
    p = args[:n]
    rng = np.random.default_rng(7)
    if kind == "j":
        d = args[n:]
        c = [_random_like(rng, o) for o in _leaves(below(*p))]
        out = _leaves(program(*args))
        got = _flat(out[len(out) // 2:]) @ _flat(c)
    else:
        c = args[n:] if kind == "v" else [1.0]
        d = [_random_like(rng, a) for a in p]
        got = _flat(program(*args)) @ _flat(d)

    def phi(e):
        moved = [a + e * t for a, t in zip(p, d)]
        return _flat(below(*moved)) @ _flat(c)

    eps = 1e-6
    return got, (phi(eps) - phi(-eps)) / (2 * eps)


def _cases(towers, names, backends):
    return [(name, tower, backend) for name in names for tower in towers
            for backend in backends]


# every tower on the two Python-level backends; native code gets the second order of every
# case (CI: every other one; --full all) and the third of two (a third-order program of a
# while loop carrying an array has about 1000 ops and takes LLVM seconds to compile; all of
# them pass there too)
ARRAY = [n for n in CASES if n not in SCALAR]
ALL = _cases(TOWERS, ARRAY, ("interp", "python")) + \
    _cases(TOWERS + SCALAR_TOWERS, SCALAR, ("interp", "python")) + \
    sliced(_cases(("v", "vv", "vj"), ARRAY, ("llvm",)) + _cases(("gv", "gj"), SCALAR, ("llvm",)),
           every=2, keep=lambda case: case[1] == "v") + \
    _cases(("vvv", "vjv"), ("scan_write",), ("llvm",)) + \
    _cases(("vvv",), ("read_after_write",), ("llvm",))


@pytest.mark.parametrize("name,tower,backend", ALL)
def test_tower_matches_eager_and_finite_differences(name, tower, backend):
    args, counts = _inputs(name, tower)
    programs = _compiled_tower(_compiled(name, backend), tower, counts)
    got = _flat(programs[-1](*args))
    np.testing.assert_allclose(got, _eager(name, tower, args, counts), rtol=1e-9, atol=1e-10)
    below = programs[-2] if len(programs) > 1 else _compiled(name, backend)
    lhs, rhs = _finite_difference(below, tower, args, counts, programs[-1])
    assert lhs == pytest.approx(rhs, rel=1e-6, abs=1e-7)


# -- through a compiled node of the eager graph (the bridge) -----------------------------------


def _loss_of(f):
    return lambda x, w: f(x, w).sin().sum()


# name -> transform(f, x, w) of the eager runtime, differentiating a function that calls f
NODE_TRANSFORMS = {
    "func.hessian": lambda f, x, w: torch.func.hessian(_loss_of(f), argnums=(0, 1))(x, w),
    "func.jvp": lambda f, x, w: torch.func.jvp(_loss_of(f), (x, w), (x * 0.5, w * 0.2))[1],
    "hvp": lambda f, x, w: torch.autograd.functional.hvp(_loss_of(f), (x, w),
                                                         (x * 0.3, w * 0.1))[1],
    "double_backward": lambda f, x, w: _double_backward(f, x, w),
}


def _double_backward(f, x, w):
    x, w = (t.detach().requires_grad_() for t in (x, w))
    gx, gw = torch.autograd.grad(_loss_of(f)(x, w), (x, w), create_graph=True)
    return torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w))


# the four func.hessian / func.jvp cases of a loop carrying an array are the ones an earlier,
# coarser guard refused although they were right
NODE_CASES = [(t, n) for t in ("func.hessian", "func.jvp") for n in ("rnn", "iterated")] + \
    [(t, n) for t in ("hvp", "double_backward") for n in ("rnn", "iterated", "while_carry",
                                                         "scan_write", "carry_and_write")]


# (native code: the four and one second order; tests/test_bridge.py runs the third-order hvp
# of rnn natively with --time)
NODE_ALL = [(t, n, b) for t, n in NODE_CASES for b in ("interp", "python")] + \
    [(t, n, "llvm") for t, n in NODE_CASES[:4] + [("double_backward", "while_carry")]]


@pytest.mark.parametrize("transform,name,backend", NODE_ALL)
def test_transforms_through_a_compiled_node(transform, name, backend):
    _, fn_t, sx, sw = CASES[name]
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.uniform(0.2, 1.2, sx), dtype=torch.float64)
    w = torch.tensor(rng.uniform(0.3, 0.9, sw) if sw else 0.6, dtype=torch.float64)
    got = NODE_TRANSFORMS[transform](_compiled(name, backend), x, w)
    want = NODE_TRANSFORMS[transform](lambda a, b: fn_t(torch, a, b), x, w)
    np.testing.assert_allclose(_flat([t.detach().numpy() for t in _leaves(got)]),
                               _flat([t.detach().numpy() for t in _leaves(want)]),
                               rtol=1e-9, atol=1e-10)
