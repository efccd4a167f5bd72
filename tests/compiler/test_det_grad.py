"""The derivative of np.linalg.det in compiled code is the cofactor matrix adj(A)^T, at singular
matrices too (where it used to invert A and raise LinAlgError; compiler fuzzer seed
863270560412): a table of rank-deficient matrices, each with an exact zero pivot in LU, on
every backend (and the LLVM backend's own LU, without LAPACK), in reverse and forward mode,
against the cofactor matrix from minors and PyTorch 2.13's create_graph gradient (its SVD
path for singular inputs; its plain path returns 0 there, which eager code copies,
tests/test_linalg.py)."""

import itertools

import numpy as np
import pytest
import torch

import adcompile as ac
from adcompile.backends.llvm import capi

BACKENDS = ("interp", "python", "llvm", "llvm-own-lu")
SINGULAR = {  # name: matrix (rank < n, det exactly 0.0 in numpy)
    "rank1-2x2": [[1.0, 2.0], [2.0, 4.0]],
    "zero-column-2x2": [[0.0, 1.0], [0.0, 2.0]],
    "zero-2x2": [[0.0, 0.0], [0.0, 0.0]],
    "zero-1x1": [[0.0]],
    "rank2-3x3": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],
    "rank2-3x3-late-pivot": [[1.0, 2.0, 3.0], [0.0, 1.0, 1.0], [1.0, 3.0, 4.0]],
    "rank2-3x3-first-column-zero": [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]],
    "rank1-3x3": np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]),
    "rank3-4x4": [[2.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [2.0, 1.0, 2.0, 1.0],
                  [1.0, 1.0, 0.0, 3.0]],
    "rank2-4x4": np.array([[1.0, 2.0], [0.0, 1.0], [3.0, 1.0], [1.0, 1.0]])
    @ np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 1.0, 2.0]]),
}


def det(a):
    return np.linalg.det(a)


def det_times(a, c):
    return c * np.linalg.det(a)


def det_inverse_t(a):
    return np.linalg.det(a) * np.linalg.inv(a).T


def det_sum(a):
    total = 0.0
    for i in range(a.shape[0]):
        total += np.linalg.det(a[i])
    return total


def cofactor_by_minors(a):
    n = len(a)
    out = np.zeros((n, n))
    for i, j in itertools.product(range(n), range(n)):
        minor = np.delete(np.delete(a, i, 0), j, 1)
        out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def torch_cofactor(a):
    x = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.linalg.det(x), x, create_graph=True)
    return g.detach().numpy()


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    if request.param == "llvm-own-lu":
        monkeypatch.setattr(capi, "_lapack", {})
        return "llvm"
    return request.param


def _compiled(fn, backend):
    return ac.adcompile(fn, backend=backend)


def _check(got, a, what):
    want = cofactor_by_minors(np.asarray(a, np.float64))
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale, err_msg=what)
    np.testing.assert_allclose(got, torch_cofactor(a), rtol=1e-9, atol=1e-9 * scale,
                               err_msg=f"{what} against PyTorch")


@pytest.mark.parametrize("name", SINGULAR)
def test_grad_at_singular_matrix(name, backend):
    a = np.array(SINGULAR[name], dtype=np.float64)
    assert np.linalg.det(a) == 0.0  # the case the old rule's inverse raised at
    _check(ac.grad(_compiled(det, backend))(a), a, f"{name} on {backend}")
    ga, gc = ac.grad(_compiled(det_times, backend), argnums=(0, 1))(a, 2.5)
    _check(ga / 2.5, a, f"{name} (scaled) on {backend}")
    assert gc == 0.0


@pytest.mark.parametrize("name", SINGULAR)
def test_jvp_at_singular_matrix(name, backend):
    a = np.array(SINGULAR[name], dtype=np.float64)
    t = np.arange(a.size, dtype=np.float64).reshape(a.shape) - 1.5
    value, tangent = ac.jvp(_compiled(det, backend), (a,), (t,))
    assert value == 0.0
    want = float(np.sum(cofactor_by_minors(a) * t))
    assert tangent == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_grad_of_batch_with_singular_entries(backend):
    names = ("rank2-3x3", "rank1-3x3", "rank2-3x3-late-pivot")
    a = np.stack([np.array(SINGULAR[n]) for n in names] + [np.diag([1.0, 2.0, 3.0])])
    got = ac.grad(_compiled(det_sum, backend))(a)
    for k in range(len(a)):
        _check(got[k], a[k], f"entry {k} on {backend}")


def test_float32_singular_matrix(backend):
    a = np.array(SINGULAR["rank2-3x3"], dtype=np.float32)
    got = ac.grad(_compiled(det, backend))(a)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, cofactor_by_minors(a).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_invertible_matrix_keeps_det_times_inverse(backend, dtype):
    """Where A is invertible the gradient is det(A) * inv(A).T as the backend computes that
    expression (numpy's, bit for bit, but with the LLVM backend's own LU)."""
    a = (np.random.default_rng(5).standard_normal((4, 4)) + 3 * np.eye(4)).astype(dtype)
    got = ac.grad(_compiled(det, backend))(a)
    np.testing.assert_array_equal(got, _compiled(det_inverse_t, backend)(a))
    if backend != "llvm" or capi._lapack != {}:  # None: not loaded yet
        np.testing.assert_array_equal(got, det_inverse_t(a))
