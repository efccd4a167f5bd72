"""Whole-array numpy code on every backend (issue 11): the array corpus must give numpy's
answers and correct derivatives.

Checks, one test each, per case of tests/compiler/array_corpus.py:
- values: on interp, python and llvm the result equals the plain numpy call (same type, dtype
  and shape; rtol 1e-12 for float64, 1e-5 for float32; integers and booleans exactly), and the
  arguments afterwards hold what numpy leaves in them (unchanged unless the function writes
  into them);
- grad (interp, python): the gradient of a scalar result equals central finite differences of
  the numpy function in float64, has the argument's shape and dtype, and leaves the arguments
  untouched;
- jvp_vjp (python): jvp in a random direction equals a finite-difference directional
  derivative, and vjp passes the dot-product test <J t, c> == <t, J^T c>;
- value_and_grad (python): the value is numpy's, the gradient the finite differences';
- torch (interp, python; 33 cases): the gradient equals PyTorch's, from a hand-written torch
  version of the function (the oracle is itself checked against numpy and finite differences);
- hessian and jacobian (python, small cases): against finite differences.
The derivative checks run on llvm too, for the cases in LLVM_DERIVATIVES: compiling derivative
programs to native code takes seconds per case (tens of seconds for the RK4 loop), so all of
them would take the file from about a minute to about twenty. ADCOMPILE_ARRAY_CORPUS_FULL=1
runs every derivative check on llvm as well.

Cases that fail because issue 11 is not done yet are listed in NOT_YET and xfail strictly, so
the list has to shrink as the compiler grows. An entry is "case" (every check), "case/check"
(every backend) or "case/check/backend". To recompute it, run this file with
ADCOMPILE_IGNORE_NOT_YET=1 and list what fails.
"""

import functools
import math
import os
from collections import namedtuple

import numpy as np
import pytest
import torch

import adcompile as ac
from tests.compiler import array_corpus as corpus

BACKENDS = ("interp", "python", "llvm")
Case = namedtuple("Case", "name fn args differentiate")
CASES = [Case(*row) for row in corpus.CASES]
BY_NAME = {c.name: c for c in CASES}

NOT_YET = set()

FULL = bool(os.environ.get("ADCOMPILE_ARRAY_CORPUS_FULL"))
# cheap to compile and between them covering what the derivative programs do on native code:
# views and strides, float32, empty arrays, gathers and masks, linear algebra, joins, reductions
LLVM_DERIVATIVES = {
    "sum_of_squares-strided", "vector_norm-f32", "pick_at_argmax", "builtin_sum_len",
    "det_loss", "det_loss-2x2", "positive_part_sum", "rows_dot_squared", "gather_sum",
    "least_squares-empty-rows", "float32_through_float64", "quadratic_form", "trace_product",
    "reshape_transpose_ravel", "array_of_scalars", "gather_literal", "sum_axis_tuple",
    "jacobian_2x2", "even_minus_odd-strided", "normalize", "concatenate_list", "newton_2d",
    "dot_matvec", "batched_matmul-broadcast", "ellipsis_ends", "vector_sum_axis0",
    "rebuilt_sum", "rnn_loss", "scaled_state", "nested_carry", "carry_from_slice",
    "stores_then_sum", "rows_updated_in_place", "gmm_by_component", "column_scaled",
    "view_read_after_write", "view_carried_across_writes", "reshape_read_before_write",
    "chain_ode",
}


def _backends(case, backends):
    """`backends` for a derivative check of `case`: llvm only where LLVM_DERIVATIVES has it."""
    return [b for b in backends if b != "llvm" or FULL or case.name in LLVM_DERIVATIVES]


def _not_yet(name, check, backend=None):
    if os.environ.get("ADCOMPILE_IGNORE_NOT_YET"):
        return False
    keys = {name, f"{name}/{check}", f"{name}/{check}/{backend}"}
    return bool(keys & NOT_YET)


def _param(case, check, backend, *extra):
    marks = ()
    if _not_yet(case.name, check, backend):
        marks = pytest.mark.xfail(strict=True, reason="issue 11: not implemented yet")
    return pytest.param(case, backend, *extra, marks=marks, id=f"{case.name}-{backend}")


@functools.cache
def _compiled(fn, backend):
    """One compiled function per (function, backend), shared by the checks, so a grad or a jvp
    reuses the primal program the value check built."""
    return ac.adcompile(fn, backend=backend, verify=True)


# -- comparing results --------------------------------------------------------------------------

def _single(case):
    """Whether float32 arithmetic takes part: then float32 tolerances apply, even to a float64
    result (a float32 product promoted by a numpy float64 scalar)."""
    return any(np.asarray(a).dtype == np.float32 for a in case.args())


def _check_same(ours, expected, what, single=False):
    """`ours` is what numpy computed as `expected`: same kind of object, dtype, shape, values
    (to 1e-12, or 1e-5 where float32 arithmetic takes part)."""
    if isinstance(expected, np.ndarray):
        assert isinstance(ours, np.ndarray), f"{what}: got a {type(ours).__name__}, numpy " \
                                             f"gives an array"
        assert ours.dtype == expected.dtype, f"{what}: dtype {ours.dtype}, numpy " \
                                             f"{expected.dtype}"
        assert ours.shape == expected.shape, f"{what}: shape {ours.shape}, numpy " \
                                             f"{expected.shape}"
    else:
        assert not isinstance(ours, np.ndarray), f"{what}: got an array of shape " \
                                                 f"{ours.shape}, numpy gives a scalar"
        got, want = np.asarray(ours).dtype, np.asarray(expected).dtype
        assert got == want, f"{what}: a {type(ours).__name__} ({got}), numpy gives a " \
                            f"{type(expected).__name__} ({want})"
    if np.asarray(expected).dtype.kind in "biu":
        np.testing.assert_array_equal(ours, expected, err_msg=what)
    else:
        single = single or np.asarray(expected).dtype == np.float32
        rtol, atol = (1e-5, 1e-6) if single else (1e-12, 1e-12)
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=what)


def _check_arguments(after, expected_after, what):
    """The array arguments hold exactly what numpy leaves in them."""
    for k, (ours, theirs) in enumerate(zip(after, expected_after)):
        if isinstance(theirs, np.ndarray):
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{what}: argument {k} "
                                                                f"afterwards")


def _is_float(value):
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "f"
    return isinstance(value, (float, np.floating))


def _as_f64(value):
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def _f64_args(case):
    """Fresh arguments with every float in float64: finite differences run in float64 even
    for float32 cases."""
    return tuple(_as_f64(a) for a in case.args())


def _param_name(case, k):
    return case.fn.__code__.co_varnames[k]


# -- finite-difference references ---------------------------------------------------------------

STEP = 1e-6


def _with(args, k, value):
    args = list(args)
    args[k] = value
    return tuple(args)


@functools.cache
def _numeric_grad(name, k):
    """d fn / d args[k] of a scalar case, by central differences in float64."""
    case = BY_NAME[name]
    x = _f64_args(case)[k]
    if not isinstance(x, np.ndarray):
        up = case.fn(*_with(_f64_args(case), k, x + STEP))
        down = case.fn(*_with(_f64_args(case), k, x - STEP))
        return float(up - down) / (2 * STEP)
    grad = np.zeros(x.size)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = STEP
        up = case.fn(*_with(_f64_args(case), k, x + e.reshape(x.shape)))
        down = case.fn(*_with(_f64_args(case), k, x - e.reshape(x.shape)))
        grad[j] = (up - down) / (2 * STEP)
    return grad.reshape(x.shape)


def _numeric_directional(case, tangents):
    def shifted(sign):
        args = _f64_args(case)
        return tuple(a if t is None else a + sign * STEP * _as_f64(t)
                     for a, t in zip(args, tangents))

    up = np.asarray(case.fn(*shifted(1.0)), dtype=np.float64)
    down = np.asarray(case.fn(*shifted(-1.0)), dtype=np.float64)
    return (up - down) / (2 * STEP)


@functools.cache
def _numeric_jacobian(name, k):
    case = BY_NAME[name]
    x = _f64_args(case)[k]
    columns = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1.0
        tangents = [None] * len(_f64_args(case))
        tangents[k] = e.reshape(x.shape)
        columns.append(_numeric_directional(case, tangents))
    out_shape = np.shape(case.fn(*_f64_args(case)))
    if not columns:
        return np.zeros(out_shape + x.shape)
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def _grad_tolerance(dtype, reference, value):
    """Finite differences in float64 are good to ~1e-10 |f|; a float32 gradient only to what
    float32 arithmetic keeps."""
    scale = 1.0 + float(np.max(np.abs(reference), initial=0.0)) + abs(float(value))
    if np.dtype(dtype) == np.float32:
        return 1e-3, 1e-4 * scale
    return 1e-5, 1e-6 * scale


def _check_gradient(g, arg, reference, value, what):
    if isinstance(arg, np.ndarray):
        assert isinstance(g, np.ndarray), f"{what}: a {type(g).__name__}, not an array"
        assert g.shape == arg.shape, f"{what}: shape {g.shape}, the argument's is {arg.shape}"
        assert g.dtype == arg.dtype, f"{what}: dtype {g.dtype}, the argument's is {arg.dtype}"
        dtype = arg.dtype
    else:
        assert isinstance(g, (float, np.floating)), f"{what}: a {type(g).__name__}"
        dtype = np.float64
    rtol, atol = _grad_tolerance(dtype, reference, value)
    np.testing.assert_allclose(np.asarray(g, dtype=np.float64), reference, rtol=rtol,
                               atol=atol, err_msg=what)


def _random_like(value, rng):
    if isinstance(value, np.ndarray):
        return rng.standard_normal(value.shape).astype(value.dtype)
    if isinstance(value, np.float32):
        return np.float32(rng.standard_normal())
    return float(rng.standard_normal())


def _flat(value):
    return np.asarray(value, dtype=np.float64).ravel()


# -- the corpus itself ----------------------------------------------------------------------------

def _functions():
    return {c.fn for c in CASES}


def test_corpus_is_large_and_varied():
    assert len(_functions()) >= 85
    f32 = {c.fn for c in CASES if any(getattr(a, "dtype", None) == np.float32 for a in c.args())}
    assert len(f32) >= 15
    views = [c for c in CASES if any(isinstance(a, np.ndarray) and a.ndim and
                                     not a.flags.c_contiguous for a in c.args())]
    assert len(views) >= 10
    empty = [c for c in CASES if any(isinstance(a, np.ndarray) and a.size == 0
                                     for a in c.args()) or "empty" in c.name]
    assert len(empty) >= 8


CHECKS = ("values", "grad", "jvp_vjp", "value_and_grad", "torch", "hessian", "jacobian")


def test_tables_name_real_cases():
    for entry in NOT_YET:
        name, *rest = entry.split("/")
        assert name in BY_NAME, f"NOT_YET: no case {name!r}"
        assert not rest or rest[0] in CHECKS, f"NOT_YET: no check {rest[0]!r}"
        assert len(rest) < 2 or rest[1] in BACKENDS, f"NOT_YET: no backend {rest[1]!r}"
    assert LLVM_DERIVATIVES <= {c.name for c in CASES if c.differentiate is not None}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_runs_under_numpy(case):
    """Each case is plain numpy that runs, its factory gives the same data each time, and a
    differentiated case has float arguments where it says and a float result."""
    first, second = case.args(), case.args()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    with np.errstate(all="raise"):
        value = case.fn(*first)
    assert isinstance(value, (np.ndarray, float, np.floating, np.integer, int))
    if case.differentiate is not None:
        assert all(_is_float(first[k]) for k in case.differentiate), case.name
        assert np.asarray(value).dtype.kind == "f" and np.all(np.isfinite(value))


# -- values on every backend ----------------------------------------------------------------------

VALUE_PARAMS = [_param(c, "values", b) for c in CASES for b in BACKENDS]


@pytest.mark.parametrize("case,backend", VALUE_PARAMS)
def test_values(case, backend):
    expected_args = case.args()
    expected = case.fn(*expected_args)
    args = case.args()
    ours = _compiled(case.fn, backend)(*args)
    what = f"{case.name} on {backend}"
    _check_same(ours, expected, f"{what}: result", _single(case))
    _check_arguments(args, expected_args, what)


# -- derivatives --------------------------------------------------------------------------------

def _is_scalar_case(case):
    return case.differentiate is not None and not isinstance(case.fn(*case.args()), np.ndarray)


SCALAR = [c for c in CASES if _is_scalar_case(c)]
DIFFERENTIABLE = [c for c in CASES if c.differentiate is not None]
GRAD_PARAMS = [_param(c, "grad", b) for c in SCALAR for b in _backends(c, BACKENDS)]


@pytest.mark.parametrize("case,backend", GRAD_PARAMS)
def test_grad(case, backend):
    args = case.args()
    value = case.fn(*case.args())
    grads = ac.grad(_compiled(case.fn, backend), argnums=case.differentiate)(*args)
    what = f"{case.name} on {backend}: grad"
    assert isinstance(grads, tuple) and len(grads) == len(case.differentiate), \
        f"{what}: {len(case.differentiate)} gradients expected, got {grads!r}"
    for k, g in zip(case.differentiate, grads):
        _check_gradient(g, args[k], _numeric_grad(case.name, k), value,
                        f"{what} with respect to '{_param_name(case, k)}' against finite "
                        f"differences")
    _check_arguments(args, case.args(), what)


DERIVATIVE_BACKENDS = ("python", "llvm")  # the transforms are IR -> IR; interp adds little
JVP_PARAMS = [_param(c, "jvp_vjp", b) for c in DIFFERENTIABLE
              for b in _backends(c, DERIVATIVE_BACKENDS)]


@pytest.mark.parametrize("case,backend", JVP_PARAMS)
def test_jvp_and_vjp_dot_product(case, backend):
    rng = np.random.default_rng(sum(map(ord, case.name)))
    args = case.args()
    tangents = tuple(_random_like(a, rng) if k in case.differentiate else None
                     for k, a in enumerate(args))
    compiled = _compiled(case.fn, backend)
    what = f"{case.name} on {backend}"
    expected = case.fn(*case.args())
    out, out_dot = ac.jvp(compiled, args, tangents)
    _check_same(out, expected, f"{what}: jvp's primal result", _single(case))
    reference = _numeric_directional(case, tangents)
    assert np.shape(out_dot) == np.shape(expected), f"{what}: jvp tangent has shape " \
                                                    f"{np.shape(out_dot)}"
    assert np.asarray(out_dot).dtype == np.asarray(expected).dtype, \
        f"{what}: jvp tangent dtype {np.asarray(out_dot).dtype}"
    dtype = np.float32 if _single(case) else np.float64
    rtol, atol = _grad_tolerance(dtype, reference, np.max(np.abs(expected), initial=0.0))
    np.testing.assert_allclose(_flat(out_dot), reference.ravel(), rtol=rtol, atol=atol,
                               err_msg=f"{what}: jvp against finite differences")

    out, pullback = ac.vjp(compiled, *case.args())
    _check_same(out, expected, f"{what}: vjp's primal result", _single(case))
    cotangent = _random_like(expected, rng)
    grads = pullback(cotangent)
    assert len(grads) == len(args), f"{what}: vjp gave {len(grads)} cotangents for " \
                                    f"{len(args)} arguments"
    lhs = float(np.dot(_flat(out_dot), _flat(cotangent)))
    rhs = sum(float(np.dot(_flat(t), _flat(grads[k])))
              for k, t in enumerate(tangents) if t is not None)
    tol = 1e-4 if _single(case) else 1e-9
    assert lhs == pytest.approx(rhs, rel=tol, abs=tol), \
        f"{what}: <J t, c> = {lhs!r} but <t, J^T c> = {rhs!r}"


VALUE_AND_GRAD_PARAMS = [_param(c, "value_and_grad", b) for c in SCALAR
                         for b in _backends(c, DERIVATIVE_BACKENDS)]


@pytest.mark.parametrize("case,backend", VALUE_AND_GRAD_PARAMS)
def test_value_and_grad(case, backend):
    args = case.args()
    expected = case.fn(*case.args())
    value, grads = ac.value_and_grad(_compiled(case.fn, backend),
                                     argnums=case.differentiate)(*args)
    what = f"{case.name} on {backend}: value_and_grad"
    _check_same(value, expected, f"{what}: value", _single(case))
    assert len(grads) == len(case.differentiate), f"{what}: {grads!r}"
    for k, g in zip(case.differentiate, grads):
        _check_gradient(g, args[k], _numeric_grad(case.name, k), expected,
                        f"{what}: gradient with respect to '{_param_name(case, k)}'")


# -- PyTorch as the gradient oracle ---------------------------------------------------------------

def t_mse(pred, target):
    return torch.mean((pred - target) ** 2)


def t_huber(pred, target):
    return torch.nn.functional.huber_loss(pred, target, reduction="sum", delta=1.0)


def t_cross_entropy(logits, onehot):
    return -(onehot * torch.log_softmax(logits, dim=1)).sum() / logits.shape[0]


def t_nll_int_labels(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels)


def t_binary_cross_entropy(z, y):
    return torch.nn.functional.binary_cross_entropy_with_logits(z, y)


def t_ridge(w, X, y, lam):
    return ((X @ w - y) ** 2).sum() + lam * torch.dot(w, w)


def t_logsumexp(x):
    return torch.logsumexp(x, dim=0)


def t_softmax_entropy(x):
    return -(torch.softmax(x, dim=0) * torch.log_softmax(x, dim=0)).sum()


def t_attention_loss(Q, K, V):
    w = torch.softmax(Q @ K.T / math.sqrt(Q.shape[1]), dim=1)
    return ((w @ V) ** 2).sum()


def t_mlp_loss(W1, b1, W2, b2, X, y):
    out = torch.tanh(X @ W1 + b1) @ W2 + b2
    return ((out[:, 0] - y) ** 2).mean()


def t_rosenbrock(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def t_least_squares(A, x, b):
    return ((A @ x - b) ** 2).sum()


def t_quadratic_form(x, A):
    return x @ A @ x


def t_gmm_loglik(X, means, log_vars, logits):
    log_w = torch.log_softmax(logits, dim=0)
    diff = X[:, None, :] - means[None, :, :]
    comp = -0.5 * (diff**2 / torch.exp(log_vars) + log_vars + math.log(2 * math.pi)).sum(2)
    return torch.logsumexp(comp + log_w, dim=1).sum()


def t_rk4_energy(y0):
    def rhs(y):
        return torch.cat([-y[:1], y[:-2] - 2.0 * y[1:-1] + y[2:], -y[-1:]])

    y, h = y0, 0.1
    for _ in range(4):
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * h * k1)
        k3 = rhs(y + 0.5 * h * k2)
        k4 = rhs(y + h * k3)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return (y**2).sum()


def t_det_loss(A):
    return torch.linalg.det(A) ** 2


def t_logdet_gram(L):
    return torch.logdet(L @ L.T)


def t_inv_quadratic(A, v):
    return v @ torch.linalg.inv(A) @ v


def t_solve_norm(A, b):
    x = torch.linalg.solve(A, b)
    return torch.dot(x, x)


def t_trace_product(A, B):
    return torch.trace(A @ B)


def t_frobenius(A):
    return torch.linalg.norm(A)


def t_rows_dot_squared(X, w):
    return ((X @ w) ** 2).sum()


def t_variance(x):
    return x.var(correction=0)


def t_clip_loss(x):
    return (x.clamp(-0.5, 0.5) ** 2).sum()


def t_softplus_sum(x, y):
    return torch.logaddexp(x, y).sum()


def t_gather_sum(x, idx):
    return (x[idx] ** 2).sum()


def t_positive_part_sum(x):
    return x[x > 0].sum()


TORCH = {
    "mse": t_mse, "mse-f32": t_mse, "huber": t_huber, "cross_entropy": t_cross_entropy,
    "cross_entropy-f32": t_cross_entropy, "nll_int_labels": t_nll_int_labels,
    "binary_cross_entropy": t_binary_cross_entropy, "ridge": t_ridge,
    "logsumexp": t_logsumexp, "logsumexp-large": t_logsumexp,
    "softmax_entropy": t_softmax_entropy, "attention_loss": t_attention_loss,
    "attention_loss-f32": t_attention_loss, "mlp_loss": t_mlp_loss,
    "rosenbrock": t_rosenbrock, "rosenbrock-f32": t_rosenbrock,
    "rosenbrock-strided": t_rosenbrock, "least_squares": t_least_squares,
    "quadratic_form": t_quadratic_form, "gmm_loglik": t_gmm_loglik,
    "rk4_energy": t_rk4_energy, "det_loss": t_det_loss, "logdet_gram": t_logdet_gram,
    "inv_quadratic": t_inv_quadratic, "solve_norm": t_solve_norm,
    "trace_product": t_trace_product, "frobenius": t_frobenius,
    "rows_dot_squared": t_rows_dot_squared, "variance": t_variance, "clip_loss": t_clip_loss,
    "softplus_sum": t_softplus_sum, "gather_sum": t_gather_sum,
    "positive_part_sum": t_positive_part_sum,
}


def _torch_value_and_grads(case):
    """PyTorch's value and gradients for a case, in the dtype of its arguments."""
    inputs = []
    for k, a in enumerate(case.args()):
        wanted = k in case.differentiate
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(a)).clone()
            inputs.append(t.requires_grad_(wanted) if a.dtype.kind == "f" else t)
        else:
            inputs.append(torch.tensor(a, dtype=torch.float64, requires_grad=wanted))
    value = TORCH[case.name](*inputs)
    grads = torch.autograd.grad(value, [inputs[k] for k in case.differentiate])
    return value.item(), [g.numpy() if g.ndim else g.item() for g in grads]


TORCH_CASES = [BY_NAME[name] for name in TORCH]


@pytest.mark.parametrize("case", TORCH_CASES, ids=[c.name for c in TORCH_CASES])
def test_torch_oracle_agrees_with_numpy_and_finite_differences(case):
    """The hand-written torch versions compute the corpus functions (checks the oracle)."""
    value, grads = _torch_value_and_grads(case)
    expected = case.fn(*case.args())
    rtol = 1e-5 if _single(case) else 1e-12
    assert value == pytest.approx(float(expected), rel=rtol, abs=rtol)
    for k, g in zip(case.differentiate, grads):
        _check_gradient(g, case.args()[k], _numeric_grad(case.name, k), expected,
                        f"{case.name}: torch's gradient for '{_param_name(case, k)}'")


TORCH_PARAMS = [_param(c, "torch", b) for c in TORCH_CASES for b in _backends(c, BACKENDS)]


@pytest.mark.parametrize("case,backend", TORCH_PARAMS)
def test_grad_matches_torch(case, backend):
    args = case.args()
    _, expected = _torch_value_and_grads(case)
    grads = ac.grad(_compiled(case.fn, backend), argnums=case.differentiate)(*args)
    for k, g, want in zip(case.differentiate, grads, expected):
        single = np.asarray(args[k]).dtype == np.float32
        rtol, atol = (1e-4, 1e-5) if single else (1e-10, 1e-12)
        np.testing.assert_allclose(
            np.asarray(g), want, rtol=rtol, atol=atol,
            err_msg=f"{case.name} on {backend}: gradient for '{_param_name(case, k)}' "
                    f"against PyTorch")


# -- second order and Jacobians (small cases) ---------------------------------------------------

HESSIAN = [("rosenbrock", 0), ("logsumexp", 0), ("softmax_entropy", 0), ("least_squares", 1),
           ("quadratic_form", 0), ("det_loss-2x2", 0), ("inv_quadratic", 1),
           ("gmm_loglik", 3), ("mlp_loss", 1), ("rk4_energy", 0), ("variance", 0)]
HESSIAN_PARAMS = [_param(BY_NAME[n], "hessian", b, k) for n, k in HESSIAN
                  for b in _backends(BY_NAME[n], DERIVATIVE_BACKENDS)]


@pytest.mark.parametrize("case,backend,k", HESSIAN_PARAMS)
def test_hessian(case, backend, k):
    compiled = _compiled(case.fn, backend)
    args = case.args()
    hess = np.asarray(ac.hessian(compiled, argnums=k)(*args))
    x = args[k]
    assert hess.shape == x.shape + x.shape, f"{case.name}: hessian shape {hess.shape}"
    g = ac.grad(compiled, argnums=k)
    columns = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1e-5
        up = g(*_with(case.args(), k, x + e.reshape(x.shape)))
        down = g(*_with(case.args(), k, x - e.reshape(x.shape)))
        columns.append((np.asarray(up) - np.asarray(down)).ravel() / 2e-5)
    numeric = np.stack(columns, axis=-1)
    flat = hess.reshape(x.size, x.size)
    scale = 1.0 + np.max(np.abs(numeric))
    np.testing.assert_allclose(flat, numeric, rtol=1e-5, atol=1e-6 * scale,
                               err_msg=f"{case.name} on {backend}: hessian against finite "
                                       f"differences of grad")
    np.testing.assert_allclose(flat, flat.T, rtol=1e-9, atol=1e-9 * scale,
                               err_msg=f"{case.name}: the hessian is not symmetric")


JACOBIAN = [("softmax", 0), ("rk4_step", 0), ("jacobian_2x2", 0), ("newton_2d", 0),
            ("normalize", 0), ("layer_norm", 0), ("solve_matrix", 1), ("shift_right", 0),
            ("concatenate_list", 1), ("array_of_scalars", 0), ("pairwise_sq_dists", 0),
            ("gather_literal", 0), ("write_through_view", 0), ("batched_matmul", 1)]
JACOBIAN_PARAMS = [_param(BY_NAME[n], "jacobian", b, k) for n, k in JACOBIAN
                   for b in _backends(BY_NAME[n], DERIVATIVE_BACKENDS)]


@pytest.mark.parametrize("case,backend,k", JACOBIAN_PARAMS)
def test_jacobian(case, backend, k):
    jac = np.asarray(ac.jacobian(_compiled(case.fn, backend), argnums=k)(*case.args()))
    numeric = _numeric_jacobian(case.name, k)
    assert jac.shape == numeric.shape, f"{case.name}: jacobian shape {jac.shape}, expected " \
                                       f"{numeric.shape}"
    scale = 1.0 + np.max(np.abs(numeric))
    np.testing.assert_allclose(jac, numeric, rtol=1e-5, atol=1e-6 * scale,
                               err_msg=f"{case.name} on {backend}: jacobian against finite "
                                       f"differences")
