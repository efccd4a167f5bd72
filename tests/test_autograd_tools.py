"""torch.autograd.functional and torch.func, differential against PyTorch 2.13.

Each row is a call `fn(L, *inputs)` made once with L = torch and once with L = adcompile; the
whole result (nesting of tuples, and for each Tensor its shape, dtype, requires_grad and
values) must be equal. Further tables cover strict mode and error types.
"""

import numpy as np
import pytest
import torch

import adcompile
from difftools import assert_same_error

LIBS = (torch, adcompile)


def _describe(x):
    """A comparable picture of a (nested) result."""
    if isinstance(x, (tuple, list)):
        return ("seq", type(x).__name__ if type(x) in (tuple, list) else "tuple",
                [_describe(v) for v in x])
    if hasattr(x, "detach"):
        return ("tensor", tuple(x.shape), str(x.dtype), x.requires_grad,
                x.detach().numpy().copy())
    return ("other", x)


def _assert_same(a, b, path="result", tol=1e-6):
    assert a[0] == b[0], f"{path}: {a[0]} vs {b[0]}"
    if a[0] == "seq":
        assert a[1] == b[1] and len(a[2]) == len(b[2]), f"{path}: {a[1:2]} vs {b[1:2]}"
        for i, (x, y) in enumerate(zip(a[2], b[2])):
            _assert_same(x, y, f"{path}[{i}]", tol)
    elif a[0] == "tensor":
        assert a[1:4] == b[1:4], f"{path}: (shape, dtype, requires_grad) {a[1:4]} vs {b[1:4]}"
        np.testing.assert_allclose(a[4], b[4], rtol=tol, atol=tol * 1e-3, err_msg=path)
    else:
        assert a == b, path


_RUN = {"dtype": "float64"}  # the dtype of the row being run (inputs and v vectors)


def _inputs(L, specs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        shape, rg = (spec, False) if isinstance(spec, tuple) else (spec[0], True)
        out.append(L.tensor(rng.standard_normal(shape) * 0.8, dtype=getattr(L, _RUN["dtype"]),
                            requires_grad=rg))
    return out


def RG(shape):
    """An input that requires grad on entry (the transform must stay differentiable)."""
    return [shape]


def f_scalar(L, x):
    return (x.sin() * x).sum()


def f_vec(L, x):
    return x.exp()[:2] * x.sum()


def f_two(L, x, y):
    return (x[:2] * y.tanh(), (x * x).sum() * y.exp().sum())


def f_two_scalar(L, x, y):
    return (x.sin().sum() * y.exp()).sum()


def f_linear(L, x):
    return x * 3


def f_const(L, x, y):
    return y * 2


def _v(L, *shapes):
    vs = tuple(L.tensor(np.linspace(-1, 1, int(np.prod(s))).reshape(s),
                        dtype=getattr(L, _RUN["dtype"])) for s in shapes)
    return vs[0] if len(vs) == 1 else vs


AF = lambda L: L.autograd.functional  # noqa: E731
FN = lambda L: L.func  # noqa: E731

CASES = {
    # autograd.functional
    "vjp": (lambda L, x: AF(L).vjp(lambda a: f_vec(L, a), x, _v(L, (2,))), [(3,)]),
    "vjp_scalar_no_v": (lambda L, x: AF(L).vjp(lambda a: f_scalar(L, a), x), [(3,)]),
    "vjp_tuple": (lambda L, x, y: AF(L).vjp(lambda a, b: f_two(L, a, b), (x, y),
                                            _v(L, (2,), ())), [(3,), (2,)]),
    "vjp_create_graph": (lambda L, x: AF(L).vjp(lambda a: f_vec(L, a), x, _v(L, (2,)),
                                                create_graph=True), [RG((3,))]),
    "vjp_unused_input": (lambda L, x, y: AF(L).vjp(lambda a, b: f_const(L, a, b), (x, y),
                                                   _v(L, (2,))), [(3,), (2,)]),
    "jvp": (lambda L, x: AF(L).jvp(lambda a: f_vec(L, a), x, _v(L, (3,))), [(3,)]),
    "jvp_tuple": (lambda L, x, y: AF(L).jvp(lambda a, b: f_two(L, a, b), (x, y),
                                            _v(L, (3,), (2,))), [(3,), (2,)]),
    "jvp_create_graph": (lambda L, x: AF(L).jvp(lambda a: f_vec(L, a), x, _v(L, (3,)),
                                                create_graph=True), [RG((3,))]),
    "jvp_scalar_input": (lambda L, x: AF(L).jvp(lambda a: a.exp() * 2, x), [()]),
    "jacobian": (lambda L, x: AF(L).jacobian(lambda a: f_vec(L, a), x), [(3,)]),
    "jacobian_tuple": (lambda L, x, y: AF(L).jacobian(lambda a, b: f_two(L, a, b), (x, y)),
                       [(3,), (2,)]),
    "jacobian_tuple_input_single_output": (
        lambda L, x, y: AF(L).jacobian(lambda a, b: f_two_scalar(L, a, b), (x, y)),
        [(3,), (2,)]),
    "jacobian_create_graph": (lambda L, x: AF(L).jacobian(lambda a: f_vec(L, a), x,
                                                          create_graph=True), [RG((3,))]),
    "jacobian_vectorize": (lambda L, x: AF(L).jacobian(lambda a: f_vec(L, a), x,
                                                       vectorize=True), [(3,)]),
    "jacobian_forward_mode": (lambda L, x: AF(L).jacobian(lambda a: f_vec(L, a), x,
                                                          vectorize=True,
                                                          strategy="forward-mode"), [(3,)]),
    "jacobian_matrix": (lambda L, x: AF(L).jacobian(lambda a: a @ a.t(), x), [(2, 3)]),
    "jacobian_unused": (lambda L, x, y: AF(L).jacobian(lambda a, b: f_const(L, a, b), (x, y)),
                        [(3,), (2,)]),
    "hessian": (lambda L, x: AF(L).hessian(lambda a: f_scalar(L, a), x), [(3,)]),
    "hessian_tuple": (lambda L, x, y: AF(L).hessian(lambda a, b: f_two_scalar(L, a, b), (x, y)),
                      [(3,), (2,)]),
    "hessian_create_graph": (lambda L, x: AF(L).hessian(lambda a: f_scalar(L, a), x,
                                                        create_graph=True), [RG((3,))]),
    "hessian_linear": (lambda L, x: AF(L).hessian(lambda a: a.sum() * 2, x), [(3,)]),
    "hvp": (lambda L, x: AF(L).hvp(lambda a: f_scalar(L, a), x, _v(L, (3,))), [(3,)]),
    "vhp": (lambda L, x: AF(L).vhp(lambda a: f_scalar(L, a), x, _v(L, (3,))), [(3,)]),
    "hvp_tuple": (lambda L, x, y: AF(L).hvp(lambda a, b: f_two_scalar(L, a, b), (x, y),
                                            _v(L, (3,), (2,))), [(3,), (2,)]),
    "vhp_create_graph": (lambda L, x: AF(L).vhp(lambda a: f_scalar(L, a), x, _v(L, (3,)),
                                                create_graph=True), [RG((3,))]),
    "hvp_create_graph": (lambda L, x: AF(L).hvp(lambda a: f_scalar(L, a), x, _v(L, (3,)),
                                                create_graph=True), [RG((3,))]),
    # torch.func
    "func_grad": (lambda L, x: FN(L).grad(lambda a: f_scalar(L, a))(x), [(3,)]),
    "func_grad_argnums": (lambda L, x, y: FN(L).grad(lambda a, b: f_two_scalar(L, a, b),
                                                     argnums=(0, 1))(x, y), [(3,), (2,)]),
    "func_grad_argnum_1": (lambda L, x, y: FN(L).grad(lambda a, b: f_two_scalar(L, a, b),
                                                      argnums=1)(x, y), [(3,), (2,)]),
    "func_grad_has_aux": (lambda L, x: FN(L).grad(lambda a: (f_scalar(L, a), a.cos()),
                                                  has_aux=True)(x), [(3,)]),
    "func_grad_of_grad": (lambda L, x: FN(L).grad(lambda a: FN(L).grad(
        lambda b: f_scalar(L, b))(a).sum())(x), [(3,)]),
    "func_grad_requires_grad_input": (lambda L, x: FN(L).grad(lambda a: f_scalar(L, a))(x),
                                      [RG((3,))]),
    "func_grad_and_value": (lambda L, x: FN(L).grad_and_value(lambda a: f_scalar(L, a))(x),
                            [(3,)]),
    "func_grad_unused": (lambda L, x, y: FN(L).grad(lambda a, b: (b * 2).sum())(x, y),
                         [(3,), (2,)]),
    "func_vjp": (lambda L, x: (lambda r: (r[0], r[1](_v(L, (2,)))))(
        FN(L).vjp(lambda a: f_vec(L, a), x)), [(3,)]),
    "func_vjp_tuple": (lambda L, x, y: (lambda r: (r[0], r[1](_v(L, (2,), ()))))(
        FN(L).vjp(lambda a, b: f_two(L, a, b), x, y)), [(3,), (2,)]),
    "func_jvp": (lambda L, x, y: FN(L).jvp(lambda a, b: f_two(L, a, b), (x, y),
                                           _v(L, (3,), (2,))), [(3,), (2,)]),
    "func_jacrev": (lambda L, x: FN(L).jacrev(lambda a: f_vec(L, a))(x), [(3,)]),
    "func_jacrev_argnums": (lambda L, x, y: FN(L).jacrev(lambda a, b: f_two(L, a, b),
                                                         argnums=(0, 1))(x, y), [(3,), (2,)]),
    "func_jacfwd": (lambda L, x, y: FN(L).jacfwd(lambda a, b: f_two(L, a, b), argnums=1)(x, y),
                    [(3,), (2,)]),
    "func_jacrev_matrix": (lambda L, x: FN(L).jacrev(lambda a: a @ a.t())(x), [(2, 3)]),
    "func_hessian": (lambda L, x: FN(L).hessian(lambda a: f_scalar(L, a))(x), [(3,)]),
    "func_hessian_argnums": (lambda L, x, y: FN(L).hessian(lambda a, b: f_two_scalar(L, a, b),
                                                           argnums=(0, 1))(x, y), [(3,), (2,)]),
    "vmap": (lambda L, x: FN(L).vmap(lambda r: r.dot(r))(x), [(4, 3)]),
    "vmap_in_dims": (lambda L, x, y: FN(L).vmap(lambda a, b: a * b, in_dims=(0, None))(x, y),
                     [(2, 3), (3,)]),
    "vmap_in_dim_1_out_dim_1": (lambda L, x: FN(L).vmap(lambda a: a * 2, in_dims=1,
                                                        out_dims=1)(x), [(2, 3, 4)]),
    "vmap_tuple_out": (lambda L, x: FN(L).vmap(lambda a: (a.sum(), a.exp()))(x), [(3, 2)]),
    "vmap_nested": (lambda L, x: FN(L).vmap(FN(L).vmap(lambda a: a.sin()))(x), [(2, 3, 2)]),
    "vmap_of_grad": (lambda L, x: FN(L).vmap(FN(L).grad(lambda a: f_scalar(L, a)))(x),
                     [(4, 3)]),
    "vmap_top_level": (lambda L, x: L.vmap(lambda a: a.sum())(x), [(3, 2)]),
    "vmap_keeps_graph": (lambda L, x: FN(L).vmap(lambda a: a * a)(x), [RG((2, 3))]),
    "grad_through_vmap": (lambda L, x: FN(L).grad(lambda a: FN(L).vmap(
        lambda r: r.dot(r))(a).sum())(x), [(2, 3)]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_transform(name, dtype):
    fn, specs = CASES[name]
    _RUN["dtype"] = dtype
    try:
        results = [_describe(fn(L, *_inputs(L, specs, 0))) for L in LIBS]
    finally:
        _RUN["dtype"] = "float64"
    _assert_same(results[1], results[0], tol=1e-6 if dtype == "float64" else 1e-4)


ERRORS = {
    "vjp_v_missing": lambda L: AF(L).vjp(lambda a: a * 2, L.ones(3)),
    "vjp_v_wrong_shape": lambda L: AF(L).vjp(lambda a: a * 2, L.ones(3), L.ones(2)),
    "vjp_inputs_not_tensor": lambda L: AF(L).vjp(lambda a: a * 2, [1.0, 2.0]),
    "jacobian_output_not_tensor": lambda L: AF(L).jacobian(lambda a: 3.0, L.ones(2)),
    "jacobian_strict_unused": lambda L: AF(L).jacobian(lambda a, b: b * 2, (L.ones(2),
                                                                            L.ones(2)),
                                                       strict=True),
    "jacobian_strict_vectorize": lambda L: AF(L).jacobian(lambda a: a * 2, L.ones(2),
                                                          strict=True, vectorize=True),
    "jacobian_forward_no_vectorize": lambda L: AF(L).jacobian(lambda a: a, L.ones(2),
                                                              strategy="forward-mode"),
    "hessian_not_scalar": lambda L: AF(L).hessian(lambda a: a * 2, L.ones(2)),
    "hessian_strict_linear": lambda L: AF(L).hessian(lambda a: a.sum(), L.ones(2),
                                                     strict=True),
    "hvp_not_scalar": lambda L: AF(L).hvp(lambda a: a * a, L.ones(2), L.ones(2)),
    "jvp_strict_constant": lambda L: AF(L).jvp(lambda a: L.ones(2), L.ones(2), L.ones(2),
                                               strict=True),
    "func_grad_not_scalar": lambda L: FN(L).grad(lambda a: a * 2)(L.ones(2)),
    "func_grad_bad_argnums": lambda L: FN(L).grad(lambda a: a.sum(), argnums=2)(L.ones(2)),
    "vmap_size_mismatch": lambda L: FN(L).vmap(lambda a, b: a + b)(L.ones(2), L.ones(3)),
    "vmap_no_batched_input": lambda L: FN(L).vmap(lambda a: a, in_dims=None)(L.ones(2)),
    "vmap_bad_in_dims": lambda L: FN(L).vmap(lambda a: a, in_dims=(0, 0))(L.ones(2)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_transform_error_type(name):
    assert_same_error(ERRORS[name])


def test_create_graph_results_differentiate_like_torch():
    """A Hessian-vector product from functional.hvp(create_graph=True) differentiated again."""
    got = []
    for L in LIBS:
        x = L.tensor([0.3, -0.7, 1.1], dtype=L.float64, requires_grad=True)
        _, hv = L.autograd.functional.hvp(lambda a: (a.sin() * a).sum(), x,
                                          L.ones(3, dtype=L.float64), create_graph=True)
        (g,) = L.autograd.grad(hv.sum(), x)
        got.append(g.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-10)
