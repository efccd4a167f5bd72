"""The kernels PyTorch takes from MKL, reproduced by calling MKL (runtime/mkl.py): each routed
op's values (and the gradients its backward formula computes with them) equal PyTorch's bit
for bit, in every layout; without MKL every kernel is today's numpy one.

The bit-equality tests need the `mkl==2024.2.0` wheel (the `mkl` and `test` extras) and are
skipped without it; the fallback tests switch MKL off with ADCOMPILE_MKL=0.
"""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import adcompile
from runtime import mkl

torch = pytest.importorskip("torch")

needs_mkl = pytest.mark.skipif(not mkl.available(),
                               reason=f"MKL {mkl.TORCH_MKL} is {mkl.status()}: the pip wheel "
                                      f"mkl=={mkl.TORCH_MKL}.0 gives PyTorch's kernels")

# op: where its inputs are drawn (every op of mkl.TORCH_VML has a row)
DOMAIN = {"sin": (-100, 100), "cos": (-100, 100), "tan": (-1.5, 1.5), "sqrt": (0, 1e4),
          "exp": (-80, 80), "log": (0, 1e4), "log10": (0, 1e4), "log2": (0, 1e4),
          "tanh": (-10, 10), "asin": (-1, 1), "acos": (-1, 1), "atan": (-100, 100),
          "erf": (-4, 4), "erfc": (-4, 9), "erfinv": (-1, 1)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-40, -1e-40, 1e30, -1e30, math.inf, -math.inf, math.nan]
DTYPES = ("float32", "float64")
LAYOUTS = ("contiguous", "strided", "transposed", "scalar", "odd")


def test_every_routed_op_has_a_domain():
    assert set(DOMAIN) == set(mkl.TORCH_VML)


def _data(layout, lo, hi, dtype, seed=0):
    """(numpy data, the same layout in torch) for one case."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(lo, hi, 1000).astype(dtype)
    if layout == "scalar":
        return values[:1].reshape(()), torch.tensor(values[0])
    if layout == "odd":  # not a multiple of any vector width
        return values[:17], torch.from_numpy(values[:17].copy())
    if layout == "strided":
        return values[::3], torch.from_numpy(values.copy())[::3]
    if layout == "transposed":
        return values.reshape(40, 25).T, torch.from_numpy(values.copy()).reshape(40, 25).T
    return values, torch.from_numpy(values.copy())


def _same_bits(ours, theirs):
    ours, theirs = np.ascontiguousarray(ours), np.ascontiguousarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    differ = ours.view(np.uint8) != theirs.view(np.uint8)
    assert not differ.any(), f"{np.count_nonzero(differ)} bytes differ"


@needs_mkl
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(DOMAIN))
def test_vml_op_equals_pytorch_bits(op, dtype, layout):
    data, expected = _data(layout, *DOMAIN[op], dtype)
    ours = getattr(adcompile, op)(adcompile.from_numpy(data))
    _same_bits(ours.numpy(), getattr(torch, op)(expected).numpy())


@needs_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(DOMAIN))
def test_vml_op_special_values_equal_pytorch_bits(op, dtype):
    data = np.array(SPECIAL, dtype)
    ours = getattr(adcompile, op)(adcompile.tensor(data))
    _same_bits(ours.numpy(), getattr(torch, op)(torch.tensor(data)).numpy())


@needs_mkl
@pytest.mark.parametrize("op", ["sin", "cos", "exp", "erf", "erfc", "erfinv", "sqrt", "log"])
def test_backward_formulas_use_the_same_kernels(op):
    """sin's gradient is cos(x), erf's exp(-x^2), ...: PyTorch's MKL kernels again."""
    data, _ = _data("contiguous", *DOMAIN[op], "float32", seed=1)
    data = np.maximum(data, 1e-3) if op in ("sqrt", "log") else data
    grads = []
    for lib in (adcompile, torch):
        x = lib.tensor(data, requires_grad=True)
        getattr(lib, op)(x).sum().backward()
        grads.append(x.grad.numpy())
    _same_bits(*grads)


@needs_mkl
def test_scalar_kernels_in_threads_keep_their_own_values():
    """A 0-dim value goes through a one-element buffer while MKL runs without the GIL: each
    thread has its own, so concurrent calls never see another thread's value."""
    from concurrent.futures import ThreadPoolExecutor
    values = np.random.default_rng(3).uniform(-100, 100, 4000).astype(np.float32)
    kernel = mkl.torch_kernel("sin", np.sin)
    expected = kernel(values)

    def run(part):
        return [kernel(v) for v in values[part::4]]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    for part, got in enumerate(results):
        _same_bits(np.array(got, np.float32), expected[part::4])


@needs_mkl
def test_inplace_on_a_strided_view_equals_pytorch():
    data = np.random.default_rng(2).uniform(0, 10, (30, 20)).astype(np.float32)
    ours, theirs = adcompile.tensor(data), torch.tensor(data)
    ours[:, ::3].sqrt_()
    theirs[:, ::3].sqrt_()
    _same_bits(ours.numpy(), theirs.numpy())


def _routes(op, dtype):
    """(the op's numpy ufunc, the ctypes route it replaced) for one dtype."""
    dtype = np.dtype(dtype)
    route = mkl.vml_route(mkl.TORCH_VML[op], dtype)
    assert isinstance(route, np.ufunc), "runtime/vml_ufunc.py could not build the ufunc"
    return route, mkl._CtypesRoute(mkl.library(), mkl.TORCH_VML[op], dtype)


def _ufunc_inputs(op, dtype, seed):
    """Values over the op's domain and many magnitudes, the special ones and 1300 more."""
    rng = np.random.default_rng(seed)
    lo, hi = DOMAIN[op]
    wide = rng.standard_normal(600) * 10.0 ** rng.uniform(-8, 8, 600)
    return np.concatenate([SPECIAL, rng.uniform(lo, hi, 700), wide]).astype(dtype)


@needs_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(DOMAIN))
def test_vml_ufunc_equals_the_ctypes_route_bits(op, dtype):
    """Dense runs of every length around the gather block, strided, reversed, transposed,
    broadcast and in-place runs, 0-dim values and empty arrays: the ufunc's bits are those
    of one VML call on the contiguous values."""
    ufunc, reference = _routes(op, dtype)
    x = _ufunc_inputs(op, dtype, seed=len(op))
    expected = reference(x, out=np.empty_like(x))
    for n in (0, 1, 7, 255, 256, 257, 513, x.size):
        _same_bits(ufunc(x[:n]), expected[:n])
    _same_bits(ufunc(np.repeat(x, 3)[::3]), expected)
    _same_bits(ufunc(x[::-1])[::-1], expected)
    _same_bits(ufunc(x[:1300].reshape(26, 50).T), expected[:1300].reshape(26, 50).T)
    wide = np.empty((3, 400), dtype)
    ufunc(x[:400], out=wide[:, ::-1][:, ::-1])
    _same_bits(wide, np.broadcast_to(expected[:400], (3, 400)))
    inplace = np.repeat(x[:300], 2)
    ufunc(inplace[::2], out=inplace[::2])
    _same_bits(inplace[::2], expected[:300])
    for i in range(0, x.size, 97):
        _same_bits(ufunc(x[i]), reference(x[i]))
        assert type(ufunc(x[i])) is type(x[i])


@needs_mkl
@pytest.mark.parametrize("dtype", DTYPES)
def test_vml_ufunc_warns_about_nothing(dtype):
    """PyTorch computes sin(inf), log(-1), exp(1000) quietly; numpy's errstate stays
    untouched by the ufuncs, which clear the exception flags they raise."""
    x = np.array([math.inf, -math.inf, math.nan, -1.0, 0.0, 1e30, -1e30, 1e300], "float64")
    x = x.astype(dtype) if dtype == "float64" else x[:-1].astype(dtype)
    with np.errstate(all="raise"):
        for op in sorted(DOMAIN):
            ufunc, _ = _routes(op, dtype)
            ufunc(x)
            for value in x:
                ufunc(value)
        with pytest.raises(FloatingPointError):  # numpy's own kernels still report
            np.log(x)


@needs_mkl
@pytest.mark.parametrize("layout", ["scalar", "strided", "transposed"])
def test_without_the_ufuncs_the_ctypes_route_gives_the_same_bits(monkeypatch, layout):
    """Where the ufuncs cannot be built (no llvmlite, another numpy), VML is called through
    ctypes, with PyTorch's bits still."""
    monkeypatch.setattr(mkl, "_ufunc", lambda lib, name: None)
    mkl.reset()
    try:
        assert isinstance(mkl.vml_route("Sin", np.dtype(np.float32)), mkl._CtypesRoute)
        for op in ("sin", "tanh", "exp"):
            data, expected = _data(layout, *DOMAIN[op], "float32", seed=6)
            ours = getattr(adcompile, op)(adcompile.from_numpy(data))
            _same_bits(ours.numpy(), getattr(torch, op)(expected).numpy())
    finally:
        monkeypatch.undo()
        mkl.reset()


# name: (m, k, n) of the products (Linear layers of one output, rows, columns, wide ones)
SHAPES = [(64, 10, 1), (5, 100, 1), (1, 385, 1), (1, 30, 17), (100, 3, 2), (7, 1000, 130),
          (64, 784, 256), (33, 17, 65)]


def _factors(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in ((m, k), (n, k), (n,), (k,), (m,))]


def _products(lib, a, w, bias, v, s):
    """Every product of the table, in one library (Linear's addmm with weight.t() included)."""
    t = lib.from_numpy
    return {"linear": lib.nn.functional.linear(t(a), t(w), t(bias)),
            "mm": lib.mm(t(a), t(w).t()),
            "mm_rowmajor": lib.mm(t(a), t(np.ascontiguousarray(w.T))),
            "addmm_scaled": lib.addmm(t(bias), t(a), t(w).t(), beta=0.5, alpha=-2.0),
            "mv": lib.mv(t(a), t(v)),
            "matmul_vec": lib.matmul(t(a), t(v)),
            "vec_matmul": lib.matmul(t(s), t(a)),
            "addmv": lib.addmv(t(s), t(a), t(v)),
            "addmv_scaled": lib.addmv(t(s), t(a), t(v), beta=2.0, alpha=0.25)}


@needs_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_blas_products_equal_pytorch_bits(m, k, n, dtype, torch_one_thread):
    factors = _factors(m, k, n, dtype)
    ours, theirs = _products(adcompile, *factors), _products(torch, *factors)
    for name in theirs:
        _same_bits(ours[name].numpy(), theirs[name].numpy())


@needs_mkl
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_linear_gradients_equal_pytorch_bits(m, k, n, torch_one_thread):
    a, w, bias, _, _ = _factors(m, k, n, np.float32, seed=3)
    grads = []
    for lib in (adcompile, torch):
        x, weight, b = (lib.tensor(d, requires_grad=True) for d in (a, w, bias))
        lib.nn.functional.linear(x, weight, b).sin().sum().backward()
        grads.append([t.grad.numpy() for t in (x, weight, b)])
    for ours, theirs in zip(*grads):
        _same_bits(ours, theirs)


@needs_mkl
def test_factors_that_do_not_fit_are_refused_not_read():
    a, v = np.ones((3, 4), np.float32), np.ones(3, np.float32)
    assert mkl.gemv(a, v) is None and mkl.gemm(a, a) is None
    with pytest.raises(RuntimeError):
        adcompile.mv(adcompile.from_numpy(a), adcompile.from_numpy(v))
    with pytest.raises(RuntimeError):
        adcompile.mm(adcompile.from_numpy(a), adcompile.from_numpy(a))


# optimizer (class and options): those whose update takes a square root (MKL's vector math in
# PyTorch); without MKL they drift by an ulp on 0.1-1 % of elements in 40 steps
OPTIMIZERS = {"Adam": ("Adam", {}), "Adam_amsgrad": ("Adam", {"amsgrad": True}),
              "AdamW": ("AdamW", {}), "RMSprop": ("RMSprop", {}),
              "RMSprop_centered": ("RMSprop", {"centered": True, "momentum": 0.9}),
              "Adagrad": ("Adagrad", {}), "NAdam": ("NAdam", {}), "RAdam": ("RAdam", {}),
              "Adadelta": ("Adadelta", {})}


@needs_mkl
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_trajectories_equal_pytorch_bits(name):
    cls, options = OPTIMIZERS[name]
    rng = np.random.default_rng(5)
    start = rng.standard_normal((37, 23)).astype(np.float32)
    grads = [rng.standard_normal((37, 23)).astype(np.float32) * 10 ** rng.uniform(-4, 1)
             for _ in range(40)]
    finals = []
    for lib in (adcompile, torch):
        p = lib.nn.Parameter(lib.tensor(start))
        opt = getattr(lib.optim, cls)([p], lr=0.01, **options)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        finals.append(p.detach().numpy().copy())
    _same_bits(*finals)


# -- without MKL -------------------------------------------------------------------------------

@pytest.fixture
def mkl_off(monkeypatch):
    monkeypatch.setenv("ADCOMPILE_MKL", "0")
    mkl.reset()
    yield
    monkeypatch.undo()
    mkl.reset()


def test_switched_off_mkl_leaves_todays_kernels(mkl_off):
    from runtime.ops.elementwise import via_double
    assert not mkl.available() and "ADCOMPILE_MKL=0" in mkl.status()
    x = np.random.default_rng(4).uniform(0.5, 10, 257).astype(np.float32)
    t = adcompile.from_numpy(x)
    _same_bits(adcompile.sin(t).numpy(), np.sin(x))
    _same_bits(adcompile.sqrt(t).numpy(), np.sqrt(x))
    _same_bits(adcompile.exp(t).numpy(), via_double(np.exp)(x))
    _same_bits(adcompile.log10(t).numpy(), np.log10(x))
    a = x[:256].astype(np.float64).reshape(16, 16)
    _same_bits(adcompile.mm(adcompile.from_numpy(a), adcompile.from_numpy(a)).numpy(), a @ a)
    assert mkl.gemm(a, a) is None and mkl.gemv(a, a[0]) is None


def test_another_mkl_version_is_not_used(monkeypatch):
    monkeypatch.setattr(mkl, "_version_string", lambda lib: "Intel(R) MKL Version 2099.1-x")
    mkl.reset()
    try:
        assert mkl.library() is None or not os.path.exists(mkl._candidates()[0])
        assert "not used" in mkl.status()
    finally:
        monkeypatch.undo()
        mkl.reset()


def test_a_missing_library_is_not_used(monkeypatch):
    monkeypatch.setattr(mkl, "_candidates", lambda: ("/nonexistent/libmkl_rt.so.2",))
    mkl.reset()
    try:
        assert mkl.library() is None and "not found" in mkl.status()
        assert mkl.gemm(np.eye(3), np.eye(3)) is None
        x = np.linspace(-3, 3, 11, dtype=np.float32)
        _same_bits(adcompile.sin(adcompile.from_numpy(x)).numpy(), np.sin(x))
    finally:
        monkeypatch.undo()
        mkl.reset()


def test_import_does_not_load_mkl_and_runs_without_it():
    code = ("import adcompile, numpy as np; from runtime import mkl; assert not mkl._state; "
            "x = adcompile.tensor([0.5, 2.0]); "
            "assert (adcompile.sin(x).numpy() == np.sin(np.float32([0.5, 2.0]))).all(); "
            "print(mkl.status())")
    env = dict(os.environ, ADCOMPILE_MKL="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stderr
    assert "ADCOMPILE_MKL=0" in done.stdout
