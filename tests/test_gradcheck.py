"""gradcheck / gradgradcheck agree with PyTorch's verdicts, and catch wrong gradients."""

import numpy as np
import pytest
import torch

import adcompile

FUNCS = {
    "sin_matmul": (lambda a, b: (a @ b).sin(), [(3, 2), (2,)]),
    "softmax": (lambda a: a.softmax(0) * a, [(4,)]),
    "prod_mean": (lambda a: a.prod(1) + a.mean(0).sum(), [(3, 3)]),
    "index": (lambda a: a[[0, 2, 2]] * a + a[1:].sum(), [(3,)]),
    "exp_div": (lambda a, b: a.exp() / (b * b + 1), [(2, 3), (3,)]),
    "norm": (lambda a: a.norm(dim=1), [(2, 3)]),
    "detached_term_is_wrong": (lambda a: a * a.detach(), [(3,)]),
    "data_term_is_wrong": (lambda a: a.tanh() * a.data, [(2,)]),
}


def _inputs(lib, shapes):
    rng = np.random.default_rng(0)
    return tuple(lib.tensor(rng.uniform(0.5, 1.5, s), dtype=lib.float64, requires_grad=True)
                 for s in shapes)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_gradcheck_verdict_matches_torch(name):
    fn, shapes = FUNCS[name]
    ours = adcompile.autograd.gradcheck(fn, _inputs(adcompile, shapes), raise_exception=False)
    theirs = torch.autograd.gradcheck(fn, _inputs(torch, shapes), raise_exception=False)
    assert ours == theirs


@pytest.mark.parametrize("name", ["sin_matmul", "softmax", "exp_div", "norm"])
def test_gradgradcheck_passes_smooth_functions(name):
    fn, shapes = FUNCS[name]
    assert adcompile.autograd.gradgradcheck(fn, _inputs(adcompile, shapes))


def test_gradcheck_error_names_the_mismatch():
    fn, shapes = FUNCS["detached_term_is_wrong"]
    with pytest.raises(adcompile.autograd.GradcheckError, match="input 0.*numerical"):
        adcompile.autograd.gradcheck(fn, _inputs(adcompile, shapes))


def test_gradcheck_warns_on_float32():
    x = adcompile.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="float64"):
        adcompile.autograd.gradcheck(lambda a: a * 2, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)
