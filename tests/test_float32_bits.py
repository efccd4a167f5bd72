"""float32 results that agree with PyTorch 2.13 to the bit, where its algorithm can be followed.

Powers (runtime/simd_pow.py): one table of layouts (lengths around the 32-element vector
pairs, thread chunks, transposed, sliced and broadcast operands, tensor and number exponents,
number bases) run through `adcompile` and `torch` on the same data; every element, and every
gradient, must be equal. Losses: their reductions add in PyTorch's order.
"""

import importlib.util
import math

import numpy as np
import pytest

import adcompile
from runtime.simd_pow import sleef_pow

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch (the oracle) is not installed")
EXPONENTS = (4.0, 5, 2.5, -3.0, 0.3, 1.0, 7, -2)  # not 0.5: PyTorch takes MKL's sqrt


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    differ = ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs)))
    assert not differ.any(), (np.nonzero(differ.ravel())[0][:10], ours[differ][:5],
                              theirs[differ][:5])


# (name, shape, fn(L, x)) with x a float32 tensor of that shape
LAYOUTS = [
    *[(f"flat{n}", (n,), lambda L, x, e: x ** e) for n in (1, 5, 16, 31, 32, 33, 63, 100, 2000)],
    ("threads", (40001,), lambda L, x, e: x ** e),
    ("rows", (7, 45), lambda L, x, e: x ** e),
    ("transposed", (45, 7), lambda L, x, e: x.T ** e),
    ("sliced", (30, 50), lambda L, x, e: x[:, 3:40] ** e),
    ("tensor_exponent", (37, 41), lambda L, x, e: x.abs() ** (x * e)),
    ("column_exponents", (2000,), lambda L, x, e: x.unsqueeze(-1).pow(L.tensor([1.0, 2.0, e]))),
    ("row_exponents", (40, 40), lambda L, x, e: x.pow(L.linspace(0.5, e, 40))),
    ("number_base", (100,), lambda L, x, e: (abs(e) + 0.7) ** x),
    ("linspace", (1,), lambda L, x, e: L.linspace(-math.pi, math.pi, 2000) ** e),
]


@pytest.mark.parametrize("name,shape,fn", LAYOUTS, ids=[row[0] for row in LAYOUTS])
def test_float32_pow_bits_match_pytorch(name, shape, fn):
    import torch

    data = (np.random.default_rng(len(name)).standard_normal(shape) * 3).astype(np.float32)
    for e in EXPONENTS:
        _same(fn(adcompile, adcompile.tensor(data), e).numpy(),
              fn(torch, torch.tensor(data), e).numpy())


@pytest.mark.parametrize("e", [4.0, 5, 2.5])
def test_float32_pow_gradient_bits_match_pytorch(e):
    import torch

    data = np.linspace(-3, 3, 1000, dtype=np.float32)
    grads = []
    for L in (adcompile, torch):
        x = L.tensor(data, requires_grad=True)
        (x ** e).sum().backward()
        grads.append(x.grad.numpy())
    _same(*grads)


def test_special_values_follow_pytorch():
    import torch

    values = np.float32([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 1.4999999, 0.75, 1e-40, 2,
                         0.5, -2, 3, -3, 0.3, 3e7, -3e7, 1e30, 1e-30])
    x, y = (a.ravel() for a in np.meshgrid(values, values))
    x, y = np.tile(x, 2), np.tile(y, 2)  # long enough for the vector body
    _same(adcompile.tensor(x).pow(adcompile.tensor(y)).numpy(),
          torch.tensor(x).pow(torch.tensor(y)).numpy())
    _same(sleef_pow(x[:64], y[:64]), torch.tensor(x[:64]).pow(torch.tensor(y[:64])).numpy())


LOSSES = [
    ("mse", lambda L, a, b, r: L.nn.functional.mse_loss(a, b, reduction=r)),
    ("bce", lambda L, a, b, r: L.nn.functional.binary_cross_entropy(L.sigmoid(a), b.abs().clamp(max=1),
                                                                    reduction=r)),
    ("bce_logits", lambda L, a, b, r: L.nn.functional.binary_cross_entropy_with_logits(
        a, b.abs().clamp(max=1), reduction=r)),
]


@pytest.mark.parametrize("name,fn", LOSSES, ids=[row[0] for row in LOSSES])
@pytest.mark.parametrize("n", [100, 2000, 5000])
def test_float32_loss_reductions_match_pytorch(name, fn, n):
    import torch

    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(np.float32) * 3 for _ in range(2))
    for reduction in ("sum", "mean"):
        _same(fn(adcompile, adcompile.tensor(a), adcompile.tensor(b), reduction).numpy(),
              fn(torch, torch.tensor(a), torch.tensor(b), reduction).numpy())


@pytest.mark.parametrize("name", ["tan", "exp", "tanh"])
def test_transcendental_float32_agree_with_pytorch_mostly(name):
    """PyTorch takes these from MKL's vector math library, whose float32 algorithms cannot be
    followed; computing in float64 and rounding agrees on >= 98 % of elements (numpy's own
    float32 kernels: 60-75 %). An ulp is the most either differs by."""
    import torch

    x = (np.random.default_rng(0).standard_normal(20000) * 3).astype(np.float32)
    ours = getattr(adcompile, name)(adcompile.tensor(x)).numpy()
    theirs = getattr(torch, name)(torch.tensor(x)).numpy()
    assert np.mean(ours == theirs) >= 0.98
    ulps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32))
    assert ulps.max() <= 1


# float32 functions whose PyTorch kernel calls the C library's float function (glibc's sinhf
# ...) outside its vector body, asinh and acosh everywhere (runtime/libm_float.py); each with
# its input domain
LIBM_FUNCTIONS = {"sinh": lambda x: x, "cosh": lambda x: x, "atanh": lambda x: np.tanh(x / 3),
                  "asinh": lambda x: x, "acosh": lambda x: np.abs(x) + 1}
# (name, shape, fn(L, x)): layouts PyTorch's loop runs through the C library alone (fuzz seed
# 3730671723953: sinh of a 0-dim float32 was one ulp off glibc's sinhf)
SCALAR_LOOP_LAYOUTS = [
    ("zero_dim", (), lambda L, x: x),
    *[(f"flat{n}", (n,), lambda L, x: x) for n in (1, 5, 15, 31)],
    ("rows_of_17", (20, 20), lambda L, x: x[:, 3:]),
    ("stepped", (400,), lambda L, x: x[::2]),
]


@pytest.mark.parametrize("name", sorted(LIBM_FUNCTIONS))
@pytest.mark.parametrize("layout,shape,fn", SCALAR_LOOP_LAYOUTS,
                         ids=[row[0] for row in SCALAR_LOOP_LAYOUTS])
def test_scalar_loop_float32_functions_match_pytorch(name, layout, shape, fn):
    import torch

    x = LIBM_FUNCTIONS[name]((np.random.default_rng(1).standard_normal(shape) * 3))
    x = np.asarray(x, np.float32)
    ours = adcompile.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y, z = getattr(fn(adcompile, ours), name)(), getattr(fn(torch, theirs), name)()
    _same(y.detach().numpy(), z.detach().numpy())
    y.sum().backward()
    z.sum().backward()
    _same(ours.grad.numpy(), theirs.grad.numpy())  # sinh's is cosh's kernel, and cosh's sinh's


@pytest.mark.parametrize("name", sorted(LIBM_FUNCTIONS))
@pytest.mark.parametrize("n", [100, 2000])
def test_vector_body_float32_functions_leave_pytorchs_tail_to_libm(name, n):
    """The elements after the last pair of vectors are the C library's, bit for bit (all of
    them for asinh and acosh); the vector body (SLEEF's) is the rounded double, mostly."""
    import torch

    from runtime.simd_pow import VECTOR_PAIR

    x = np.asarray(LIBM_FUNCTIONS[name](np.linspace(-3, 3, n)), np.float32)
    ours = getattr(adcompile, name)(adcompile.tensor(x)).numpy()
    theirs = getattr(torch, name)(torch.tensor(x)).numpy()
    tail = n % VECTOR_PAIR
    _same(ours[n - tail:], theirs[n - tail:])
    assert np.mean(ours == theirs) >= (1.0 if name in ("asinh", "acosh") else 0.98)


# (name, fn(L, x, y, z)) on float32 vectors of one length; PyTorch's kernels fuse these
FUSED = [
    ("lerp_small", lambda L, x, y, z: L.lerp(x, y, 0.1)),
    ("lerp_large", lambda L, x, y, z: L.lerp(x, y, 0.7)),
    ("lerp_", lambda L, x, y, z: x.clone().lerp_(y, 1 - 0.9)),
    ("lerp_tensor_weight", lambda L, x, y, z: L.lerp(x, y, z * 0.1)),
    ("lerp_0dim_weight", lambda L, x, y, z: L.lerp(x, y, L.tensor(-2.6))),
    ("addcmul", lambda L, x, y, z: L.addcmul(x, y, z, value=0.001)),
    ("addcmul_", lambda L, x, y, z: x.clone().mul_(0.999).addcmul_(y, y, value=1 - 0.999)),
    ("add_alpha", lambda L, x, y, z: L.add(x, y, alpha=-0.37)),
    ("sub_alpha_", lambda L, x, y, z: x.clone().sub_(y, alpha=0.37)),
    ("addcdiv_", lambda L, x, y, z: x.clone().addcdiv_(y, z.abs() + 1, value=-0.01)),
    ("sgd_momentum_", lambda L, x, y, z: x.clone().add_(y.clone().mul_(0.9).add_(z), alpha=-0.01)),
    ("add_alpha_strided", lambda L, x, y, z: L.add(x[1::2], y[1::2], alpha=0.3)),
    ("add_alpha_self_", lambda L, x, y, z: x.clone().add_(x[0].expand_as(x).clone(), alpha=3)),
]


@pytest.mark.parametrize("name,fn", FUSED, ids=[row[0] for row in FUSED])
@pytest.mark.parametrize("n", [37, 1200, 70001])
def test_fused_float32_kernels_match_pytorch(name, fn, n):
    import torch

    x, y, z = (np.random.default_rng(n).standard_normal((3, n)) * 10).astype(np.float32)
    _same(fn(adcompile, *map(adcompile.tensor, (x, y, z))).numpy(),
          fn(torch, *map(torch.tensor, (x, y, z))).numpy())


# (m, k, n): MKL's sgemm adds each output as FMA chains in k order for these (measured), one
# chain per block of k (numpy_ops.k_blocks: 576 = 288 + 288, 1000 = 384 + 308 + 308, ...);
# skinny products (a row, a few columns, small m times n with a transposed right factor)
# take other MKL kernels, whose order is not followed; outputs whose width is not a multiple
# of 16 (OpenBLAS regroups their sums unless the left factor is column-major)
PRODUCTS = [(16, 40, 30), (16, 30, 5), (64, 128, 10), (100, 5, 100), (2000, 3, 4),
            (64, 384, 64), (8, 100, 16), (32, 576, 10), (32, 385, 16), (64, 1000, 64),
            (128, 1537, 100), (16, 96, 24), (16, 96, 8), (32, 50, 27), (20, 200, 40)]


@pytest.mark.parametrize("m,k,n", PRODUCTS)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_float32_matrix_products_match_pytorch(m, k, n, layout, torch_one_thread):
    import torch

    rng = np.random.default_rng(m * k * n)
    a = rng.standard_normal((m, k) if layout[0] == "N" else (k, m)).astype(np.float32)
    b = rng.standard_normal((k, n) if layout[1] == "N" else (n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def products(L):
        ta, tb = L.tensor(a), L.tensor(b)
        ta, tb = (ta if layout[0] == "N" else ta.t()), (tb if layout[1] == "N" else tb.t())
        return L.mm(ta, tb), L.addmm(L.tensor(bias), ta, tb)

    for ours, theirs in zip(products(adcompile), products(torch)):
        _same(ours.numpy(), theirs.numpy())


def test_linear_layer_gradients_match_pytorch():
    import torch

    rng = np.random.default_rng(0)
    x, w, b, g = (rng.standard_normal(s).astype(np.float32)
                  for s in ((16, 40), (30, 40), (30,), (16, 30)))
    grads = []
    for L in (adcompile, torch):
        xs, ws, bs = (L.tensor(v, requires_grad=True) for v in (x, w, b))
        out = L.nn.functional.linear(xs, ws, bs)
        out.backward(L.tensor(g))
        grads.append([out.detach().numpy()] + [t.grad.numpy() for t in (xs, ws, bs)])
    for ours, theirs in zip(*grads):
        _same(ours, theirs)


# (rows, classes, logit scale): classes below, at and across the 16-lane vector
SOFTMAX_SHAPES = [(32, 10, 1.0), (64, 7, 3.0), (8, 16, 0.3), (5, 33, 2.0), (3, 100, 8.0),
                  (1, 1, 1.0)]


@pytest.mark.parametrize("compiled", [True, False], ids=["llvmlite", "numpy"])
@pytest.mark.parametrize("rows,classes,scale", SOFTMAX_SHAPES)
def test_log_softmax_and_cross_entropy_bits_match_pytorch(rows, classes, scale, compiled,
                                                          torch_one_thread, monkeypatch):
    """log_softmax along the last axis (SLEEF's exp and log, lane sums), its gradient, and
    cross_entropy / nll_loss (mean, sum, class weights, an ignored sample) bit-equal, with
    the compiled kernels and with the numpy ones."""
    import torch

    from runtime import simd_compiled

    if not compiled:
        monkeypatch.setattr(simd_compiled, "kernels", lambda: None)

    rng = np.random.default_rng(rows * classes)
    z = (rng.standard_normal((rows, classes)) * scale).astype(np.float32)
    g = rng.standard_normal((rows, classes)).astype(np.float32)
    y = rng.integers(0, classes, rows)
    y[rows // 2] = -100
    w = rng.uniform(0.5, 2, classes).astype(np.float32)
    results = []
    for L in (adcompile, torch):
        got = []
        zt = L.tensor(z, requires_grad=True)
        out = L.log_softmax(zt, -1)
        out.backward(L.tensor(g))
        got += [out.detach().numpy(), zt.grad.numpy()]
        for kwargs in ({}, {"reduction": "sum"}, {"weight": L.tensor(w)}):
            zt = L.tensor(z, requires_grad=True)
            loss = L.nn.functional.cross_entropy(zt, L.tensor(y), **kwargs)
            loss.backward()
            got += [loss.detach().numpy(), zt.grad.numpy()]
        results.append(got)
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("n", [*range(0, 40), 4096, 100003])
@pytest.mark.parametrize("layout", ["same", "new", "fresh", "strided_c"])
def test_saxpy_path_equals_fma_emulation(n, layout):
    """runtime/fma.py hands number * array + array to BLAS's saxpy when saxpy fuses (the
    calibration); it must give the emulation's bits on every length and operand layout."""
    from runtime import fma

    rng = np.random.default_rng(n)
    x, c = rng.standard_normal((2, 2 * n)).astype(np.float32)
    x, c = x[:n], (c[::2] if layout == "strided_c" else c[:n]) * np.float32(1e-3)
    alpha = np.float32(-0.0123)
    want = fma._fma(x, alpha, c, None)
    if layout == "same":  # in place, as SGD's step
        c = c.copy()
        got = fma.fma(alpha, x, c, c)
    elif layout == "fresh":
        got = fma.fma(x, alpha, c, np.empty(n, np.float32))
    else:
        got = fma.fma(alpha, x, c)
    _same(got, want)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_log_softmax_kernels_equal_the_numpy_ones(seed):
    """runtime/simd_compiled.py (llvmlite) computes log_softmax and its gradient with the
    numpy kernels' operations in their order: the same bits on rows shorter than, equal to and
    longer than the 16 lanes, logits of every scale, whole numbers and signed zeros."""
    from runtime import simd_compiled, simd_softmax

    pytest.importorskip("llvmlite")
    assert simd_compiled.kernels() is not None
    rng = np.random.default_rng(seed)
    for rows, n in [(1, 1), (3, 15), (7, 16), (64, 10), (5, 17), (9, 33), (2, 100)]:
        for scale in (1e-3, 1.0, 30.0, 1e3):
            z = (rng.standard_normal((rows, n)) * scale).astype(np.float32)
            z = np.round(z) if seed % 2 else z
            g = rng.standard_normal((rows, n)).astype(np.float32)
            g[:, ::3] = -0.0 if seed % 3 == 0 else g[:, ::3]
            z[:, 0] = np.where(z.max(1) == 0, 1, z[:, 0])  # a zero maximum is refused
            want = simd_softmax._log_softmax(z - z.max(1, keepdims=True))
            got = np.empty_like(z)
            assert simd_compiled.log_softmax(z, got)
            _same(got, want)
            assert simd_compiled.log_softmax_grad(g, want, got)
            _same(got, simd_softmax._log_softmax_grad(g, want))
    z = np.ones((3, 4), np.float32)
    for row, value in ((0, 0.0), (1, np.inf), (2, np.nan)):
        bad = z.copy()
        bad[row] = np.where(np.arange(4) == 2, value, -1.0 if value == 0 else 1.0)
        assert not simd_compiled.log_softmax(bad, np.empty_like(z))
        if value:
            assert not simd_compiled.log_softmax_grad(bad, z, np.empty_like(z))
            assert not simd_compiled.log_softmax_grad(z, bad, np.empty_like(z))


@pytest.mark.parametrize("n", [1, 2, 16, 17, 64, 257, 4097, 70000])
def test_compiled_nll_ladder_equals_the_numpy_one(n, monkeypatch):
    """simd_compiled's nll_loss ladder adds as cascade_sum.nll_sum's numpy and loop forms do,
    with and without a mask of counted samples (ignored rows), signed zeros included."""
    from runtime import cascade_sum, simd_compiled

    pytest.importorskip("llvmlite")
    assert simd_compiled.kernels() is not None
    rng = np.random.default_rng(n)
    power = max(4, cascade_sum._ceil_log2(n) // cascade_sum._NLL_LEVELS)
    cases = [(rng.standard_normal(n) * 100).astype(np.float32),
             np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(np.float32)]
    for values in cases:
        for counted in (None, rng.random(n) < 0.7):
            got = simd_compiled.nll_sum(values, counted, power)
            everything = np.ones(n, bool) if counted is None else counted
            _same(got, cascade_sum._nll_sum_loop(values, everything, power))
            with monkeypatch.context() as patch:
                patch.setattr(simd_compiled, "kernels", lambda: None)
                _same(got, cascade_sum.nll_sum(values, counted))


def test_deferred_tie_test_gives_the_repairing_fma_bits():
    """fma.deferred_ties rounds float64 sums straight to float32 and tests them for false ties
    only at the end: a false tie (a product just below half an ulp of an odd addend) must
    send the kernel round again, an exact tie (rounded to even either way) must not."""
    from runtime import fma

    rng = np.random.default_rng(5)
    a, b, c = rng.standard_normal((3, 640)).astype(np.float32)
    one_ulp = np.float32(2.0 ** -23)
    a[7], b[7], c[7] = 1 + one_ulp, np.float32(2.0 ** -24) * (1 - one_ulp), 1 + one_ulp
    a[9], b[9], c[9] = 1, np.float32(2.0 ** -24), 1  # exact tie
    calls = []

    def kernel(x, y, z):
        calls.append(None)
        return fma.fma(fma.fma(x, y, z), np.float32(0.5), z)

    want = fma._fma(fma._fma(a, b, c, None), np.float32(0.5), c, None)
    assert fma._fma(a[7:8], b[7:8], c[7:8], None)[0] == 1 + one_ulp
    assert np.float32(np.float64(a[7]) * np.float64(b[7]) + c[7]) == 1 + 2 * one_ulp
    _same(fma.deferred_ties(kernel, a, b, c), want)
    assert len(calls) == 2
    a[7], calls[:] = 0, []
    _same(fma.deferred_ties(kernel, a, b, c), fma._fma(fma._fma(a, b, c, None),
                                                        np.float32(0.5), c, None))
    assert len(calls) == 1


# (rows, columns): blocks of four 8-lane vectors, single vectors and leftover columns, row
# counts below, at and past the ladder's step of 16
SUM_SHAPES = [(4, 3), (64, 10), (64, 256), (17, 40), (300, 7), (33, 33), (2, 9), (1000, 5)]


@pytest.mark.parametrize("rows,columns", SUM_SHAPES)
def test_matrix_sums_and_bias_gradients_match_pytorch(rows, columns):
    """Column sums (a bias's gradient, through sum_to) and row sums (log_softmax's backward)
    add in PyTorch's order."""
    import torch

    x = (np.random.default_rng(rows * columns).standard_normal((rows, columns)) * 10)
    x = x.astype(np.float32)
    results = []
    for L in (adcompile, torch):
        b = L.zeros(columns, requires_grad=True)
        (L.tensor(x) + b).backward(L.tensor(x))
        t = L.tensor(x)
        results.append([b.grad.numpy(), t.sum(0).numpy(), t.sum(1).numpy(),
                        L.log_softmax(L.tensor(x), 1).sum().numpy()])
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("n", [1, 16, 17, 33, 300, 5000])
def test_nll_loss_sums_samples_as_pytorch(n, torch_one_thread):
    import torch

    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 3, n)
    y[::7] = -100
    losses = [L.nn.functional.nll_loss(L.tensor(x), L.tensor(y), reduction=r).numpy()
              for L in (adcompile, torch) for r in ("mean", "sum")]
    _same(losses[0], losses[2])
    _same(losses[1], losses[3])


@pytest.mark.parametrize("m,k,n", [(64, 784, 256), (2, 500, 7), (16, 1000, 300), (300, 400, 20),
                                   (5, 2049, 6), (64, 784, 64)])
def test_linear_with_long_rows_keeps_pytorchs_layout(m, k, n, torch_one_thread):
    """Past K = 384 a Linear's product sums MKL's k-blocks: laid out C-contiguous as
    PyTorch's, and the values bit-equal to PyTorch's where MKL's blocked chains apply."""
    import torch

    rng = np.random.default_rng(k)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,)))
    out = adcompile.nn.functional.linear(adcompile.tensor(x), adcompile.tensor(w),
                                         adcompile.tensor(b))
    theirs = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    assert out.is_contiguous() and out.stride() == theirs.stride()
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)
    if m >= 16 and 2 < n <= 128:  # small batches and wide outputs: other MKL blockings
        _same(out.numpy(), theirs.numpy())


@pytest.mark.parametrize("rows,columns", [(2, 2), (3, 9), (9, 3), (64, 10), (17, 40)])
def test_sums_of_negative_zeros_are_positive_as_pytorchs(rows, columns):
    """PyTorch's accumulators start at +0.0, so a row or column of -0.0 sums to +0.0."""
    import torch

    x = np.full((rows, columns), -0.0, np.float32)
    x[::3, ::2] = 1.5
    x[::3, ::2] -= np.float32(1.5)  # +0.0 here and there
    for dim in (0, 1):
        ours = adcompile.tensor(x).sum(dim).numpy()
        theirs = torch.tensor(x).sum(dim).numpy()
        assert np.array_equal(np.signbit(ours), np.signbit(theirs)), dim


# (batch, n, k, p): below 400 multiply-adds per batch entry PyTorch's bmm runs its own loop
# (products added in k order, no FMA), also for baddbmm, matmul of batches and the gradients
SMALL_BATCHES = [(2, 2, 3, 3), (3, 1, 7, 5), (1, 8, 6, 8), (4, 5, 1, 2), (2, 3, 44, 3)]


@pytest.mark.parametrize("batch,n,k,p", SMALL_BATCHES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_batched_products_match_pytorch(batch, n, k, p, dtype):
    import torch

    rng = np.random.default_rng(n * k * p)
    a, b, g = (rng.standard_normal(s).astype(dtype)
               for s in ((batch, n, k), (batch, k, p), (batch, n, p)))

    def products(L):
        ta, tb = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        out = L.bmm(ta, tb)
        out.backward(L.tensor(g))
        return [out, ta.grad, tb.grad, L.baddbmm(L.tensor(g), ta, tb, beta=0.5, alpha=1.5),
                ta.unsqueeze(0).expand(2, batch, n, k) @ tb]

    for ours, theirs in zip(products(adcompile), products(torch)):
        _same(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("shape", [(2, 2), (3, 20), (4, 3, 5)])
def test_sums_of_negative_zeros_are_positive(shape):
    """PyTorch's accumulators start at +0: a sum (or nansum, mean) of -0s is +0."""
    import torch

    for L in (adcompile, torch):
        x = L.full(shape, -0.0)
        for y in (x.sum(), x.sum(-1), x.sum(0), x.nansum(-1), x.mean(-1), x.sum(-1, True)):
            assert not np.signbit(y.numpy()).any(), (L.__name__, y)


def test_float32_atan2_agrees_with_pytorch_mostly():
    """PyTorch's vector atan2 (SLEEF, within an ulp) agrees with float64 rounded to float32
    on ~97.6 % of elements; numpy's float32 kernel on ~62 %."""
    import torch

    rng = np.random.default_rng(0)
    y, x = (rng.standard_normal((2, 20000)) * 3).astype(np.float32)
    ours = adcompile.atan2(adcompile.tensor(y), adcompile.tensor(x)).numpy()
    theirs = torch.atan2(torch.tensor(y), torch.tensor(x)).numpy()
    assert np.mean(ours == theirs) >= 0.95
    assert adcompile.atan2(adcompile.tensor(1.0), adcompile.tensor(1.0)).item() == \
        torch.atan2(torch.tensor(1.0), torch.tensor(1.0)).item()


@pytest.mark.parametrize("dyadic", [False, True])
def test_horner_equals_its_chain_of_fused_multiply_adds(dyadic):
    """fma.horner (float64 steps, one midpoint check per chain) against the chain of `fma`;
    dyadic operands make many float64 sums land exactly on float32 midpoints."""
    from runtime.fma import fma, horner

    rng = np.random.default_rng(11)
    for _ in range(50):
        if dyadic:
            x = (rng.integers(-64, 64, (30, 40)) / 64).astype(np.float32)
            cs = [(rng.integers(-1000, 1000, (30, 40)) / 1024).astype(np.float32)
                  for _ in range(5)]
        else:
            x = rng.standard_normal((30, 40)).astype(np.float32)
            cs = [np.float32(c) for c in rng.standard_normal(5)]
        chain = np.broadcast_to(cs[0], x.shape).astype(np.float32)
        for c in cs[1:]:
            chain = fma(chain, x, c)
        ours = horner([np.asarray(c, np.float64) for c in cs], x)
        _same(ours, chain)


def test_horner_repairs_a_false_midpoint():
    """(1 + 2^-23) (1 - 2^-23) 2^-24 + (1 + 2^-23) lies 2^-70 below a float32 midpoint: the
    float64 sum rounds onto the midpoint, whose even neighbour is the wrong one."""
    from runtime.fma import horner

    p = np.float32(1 + 2**-23)
    x = np.full((3, 4), (1 - 2**-23) * 2**-24, np.float32)
    assert horner([np.float64(p), np.float64(p)], x)[0, 0] == p
