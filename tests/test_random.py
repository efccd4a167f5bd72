"""Differential tests: runtime.random against PyTorch's CPU generator, compared exactly.

Every test seeds both generators identically, runs the same calls on both, and requires
bit-identical values (np.array_equal, same dtype and shape) and, where it matters, identical
generator states afterwards (so stream consumption matches too).
"""

import os
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runtime import random as R  # noqa: E402

# runtime.random reproduces PyTorch's x86-64 kernels as built for AVX2 (used on AVX2 and AVX-512
# machines alike): their multiply-adds are fused (FMA) and float32 normals use the 8-wide
# polynomial log/sincos.  PyTorch's generic build (CPUs without AVX2, ATEN_CPU_CAPABILITY=default)
# rounds those multiply-adds separately and calls glibc's logf/cosf/sinf instead, which we do not
# reproduce; on such a platform the affected tests are expected to fail.
AVX2_KERNELS = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
avx2_kernels = pytest.mark.xfail(
    not AVX2_KERNELS,
    reason="PyTorch's generic (non-AVX2) CPU kernels round multiply-adds separately and use "
    "glibc logf/cosf/sinf for float32 normals; runtime.random reproduces the AVX2 kernels",
    strict=False,
)

SEEDS = [0, 1, 42, 12345]
SHAPES = [(), (1,), (2, 2), (15,), (16,), (17,), (33,), (100,), (256, 784)]
FLOAT_DTYPES = [
    (np.float32, torch.float32),
    (np.float64, torch.float64),
    (np.float16, torch.float16),
]
FLOAT_IDS = ["f32", "f64", "f16"]

TORCH_OF = {
    np.dtype(np.float16): torch.float16,
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
    np.dtype(np.int8): torch.int8,
    np.dtype(np.int16): torch.int16,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.bool_): torch.bool,
}


def assert_same(expected, got):
    expected = expected.numpy() if isinstance(expected, torch.Tensor) else expected
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if not np.array_equal(got, expected, equal_nan=got.dtype.kind == "f"):
        bad = np.argwhere(got != expected)
        first = tuple(bad[0])
        raise AssertionError(
            f"{len(bad)} of {got.size} elements differ; first at {first}: "
            f"torch {expected[first]!r} vs ours {got[first]!r}"
        )


def assert_same_state(tgen=None, rgen=None):
    tstate = (tgen.get_state() if tgen is not None else torch.get_rng_state()).numpy()
    rstate = rgen.get_state() if rgen is not None else R.get_rng_state()
    assert np.array_equal(tstate, rstate), "generator states diverged"


def seed_both(s):
    torch.manual_seed(s)
    R.manual_seed(s)


# --------------------------------------------------------------------------- known values


def test_tutorial_values():
    seed_both(0)
    ours = R.randn((2, 2), np.float32)
    assert_same(torch.randn(2, 2), ours)
    assert np.allclose(ours, [[1.5410, -0.2934], [-2.1788, 0.5684]], atol=1e-4)
    R.manual_seed(0)
    assert R.randint(0, 10, (1, 2), np.float32).tolist() == [[4.0, 9.0]]


# --------------------------------------------------------------------------- single factories


@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
def test_rand(seed, shape, dtypes):
    ndt, tdt = dtypes
    seed_both(seed)
    assert_same(torch.rand(shape, dtype=tdt), R.rand(shape, ndt))
    assert_same_state()


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
def test_randn(seed, shape, dtypes):
    ndt, tdt = dtypes
    seed_both(seed)
    assert_same(torch.randn(shape, dtype=tdt), R.randn(shape, ndt))
    assert_same_state()
    # a second call continues the stream (and, for the scalar path, uses the cached value)
    assert_same(torch.randn(shape, dtype=tdt), R.randn(shape, ndt))
    assert_same_state()


UNIFORM_BOUNDS = [(0.0, 1.0), (-2.0, 5.0), (-0.0625, 0.0625), (2.5, 3.3), (-1e-3, 0.0)]


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("bounds", UNIFORM_BOUNDS, ids=str)
@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000])
def test_uniform_(n, bounds, dtypes):
    ndt, tdt = dtypes
    a, b = bounds
    seed_both(3)
    t = torch.empty(n, dtype=tdt).uniform_(a, b)
    ours = R.uniform_(np.empty(n, ndt), a, b)
    assert_same(t, ours)
    assert_same_state()


@avx2_kernels
@pytest.mark.parametrize(
    "dtypes,a,b",
    [
        ((np.float32, torch.float32), 1e6, 1e6 + 1),  # many values round onto b
        ((np.float64, torch.float64), 1e15, 1e15 + 1),
        ((np.float16, torch.float16), 0.0, 1000.0),
        ((np.float16, torch.float16), 0.0, 1.0),
    ],
    ids=["f32", "f64", "f16-1000", "f16-1"],
)
def test_uniform_upper_bound_folds_to_lower(dtypes, a, b):
    ndt, tdt = dtypes
    seed_both(0)
    t = torch.empty(100000, dtype=tdt).uniform_(a, b)
    ours = R.uniform_(np.empty(100000, ndt), a, b)
    assert_same(t, ours)
    assert not np.any(ours == ndt(b)) or ndt(a) == ndt(b)


NORMAL_PARAMS = [(0.0, 1.0), (0.5, 3.0), (-2.0, 0.01), (1e3, 1e-3)]


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("params", NORMAL_PARAMS, ids=str)
@pytest.mark.parametrize("n", [1, 3, 15, 16, 17, 31, 100, 1000])
def test_normal_(n, params, dtypes):
    ndt, tdt = dtypes
    mean, std = params
    seed_both(5)
    t = torch.empty(n, dtype=tdt).normal_(mean, std)
    ours = R.normal_(np.empty(n, ndt), mean, std)
    assert_same(t, ours)
    assert_same_state()


def _noncontig_pairs():
    return [
        (lambda d: torch.empty(20, 30, dtype=d).t(), lambda d: np.empty((20, 30), d).T),
        (lambda d: torch.empty(40, 30, dtype=d)[::2], lambda d: np.empty((40, 30), d)[::2]),
        (
            lambda d: torch.empty(4, 5, 6, dtype=d).permute(2, 0, 1),
            lambda d: np.empty((4, 5, 6), d).transpose(2, 0, 1),
        ),
        (lambda d: torch.empty(10, 7, dtype=d)[:, 1:5], lambda d: np.empty((10, 7), d)[:, 1:5]),
    ]


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("which", range(4))
@pytest.mark.parametrize("op", ["normal_", "uniform_"])
def test_noncontiguous_fill(op, which, dtypes):
    ndt, tdt = dtypes
    make_t, make_n = _noncontig_pairs()[which]
    seed_both(7)
    t = make_t(tdt)
    arr = make_n(ndt)
    assert not t.is_contiguous() or which == 3
    args = (0.25, 2.0)
    getattr(t, op)(*args)
    getattr(R, op)(arr, *args)
    assert_same(t, arr)
    assert_same_state()


# --------------------------------------------------------------------------- randint

RANDINT_RANGES = [
    (0, 10),
    (-5, 5),
    (-100, -3),
    (0, 2),
    (0, 256),
    (-128, 128),
    (0, 2**28 - 1),  # last range that uses 32-bit draws
    (0, 2**28),  # first range that uses 64-bit draws
    (0, 2**31 - 1),
    (-(2**31), 2**31 - 1),
    (0, 2**32),
    (0, 2**40),
    (-(2**40), 2**40),
    (3, 2**33 + 7),
    (-(2**62), 2**62),
    (-(2**63), 2**63 - 1),
]
RANDINT_DTYPES = [
    np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_, np.float16, np.float32, np.float64
]


def _run_both(fn_t, fn_r):
    """Run both; they must agree on raising (same message) or on the exact result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = fn_t()
        except RuntimeError as e:
            expected = e
    try:
        got = fn_r()
    except RuntimeError as e:
        got = e
    if isinstance(expected, Exception) or isinstance(got, Exception):
        assert isinstance(expected, Exception) and isinstance(got, Exception), (expected, got)
        assert str(expected) == str(got)
        return False
    assert_same(expected, got)
    return True


@pytest.mark.parametrize("ndt", RANDINT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bounds", RANDINT_RANGES, ids=str)
def test_randint(bounds, ndt):
    lo, hi = bounds
    tdt = TORCH_OF[np.dtype(ndt)]
    for seed in (0, 42):
        for shape in [(), (7,), (3, 5)]:
            seed_both(seed)
            if _run_both(
                lambda: torch.randint(lo, hi, shape, dtype=tdt),
                lambda: R.randint(lo, hi, shape, ndt),
            ):
                assert_same_state()


@pytest.mark.parametrize(
    "ndt,lo,hi",
    [
        (np.float32, 0, 2**28),
        (np.float32, 2**28 + 1, 2**29),
        (np.float32, -(2**30) - 1, 5),
        (np.float32, 0, 2**25 + 3),
        (np.float32, 2**25 + 1, 2**25 + 2),  # empty after PyTorch's bound adjustment
        (np.float16, 0, 2049),
        (np.float16, 2047, 4001),
        (np.float16, -60001, 65000),
        (np.float64, 0, 2**53 + 3),
        (np.float64, 2**60, 2**62 + 1),
    ],
)
def test_randint_float_bound_adjustment(ndt, lo, hi):
    tdt = TORCH_OF[np.dtype(ndt)]
    seed_both(2)
    _run_both(
        lambda: torch.randint(lo, hi, (300,), dtype=tdt), lambda: R.randint(lo, hi, (300,), ndt)
    )


def test_randint_rejects_empty_range():
    with pytest.raises(RuntimeError):
        R.randint(5, 5, (2,), np.int64)
    with pytest.raises(RuntimeError):
        R.randint(0, 300, (2,), np.uint8)


# --------------------------------------------------------------------------- randperm


@pytest.mark.parametrize("ndt", [np.int64, np.int32, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 10000])
@pytest.mark.parametrize("seed", SEEDS)
def test_randperm(seed, n, ndt):
    tdt = TORCH_OF[np.dtype(ndt)]
    seed_both(seed)
    assert_same(torch.randperm(n, dtype=tdt), R.randperm(n, ndt))
    assert_same_state()


@pytest.mark.parametrize(
    "ndt,n",
    [(np.uint8, 256), (np.uint8, 257), (np.int8, 129), (np.float16, 2049), (np.float16, 2050)],
)
def test_randperm_dtype_limits(ndt, n):
    tdt = TORCH_OF[np.dtype(ndt)]
    seed_both(1)
    _run_both(lambda: torch.randperm(n, dtype=tdt), lambda: R.randperm(n, ndt))


# --------------------------------------------------------------------------- interleaved streams


def _sequence_ops(tdt, ndt, shape):
    """(torch call, our call) pairs, each drawing from the given generators."""
    return [
        (lambda g: torch.rand(shape, dtype=tdt, generator=g), lambda g: R.rand(shape, ndt, g)),
        (lambda g: torch.randn(shape, dtype=tdt, generator=g), lambda g: R.randn(shape, ndt, g)),
        (
            lambda g: torch.randint(-7, 1000, shape, generator=g),
            lambda g: R.randint(-7, 1000, shape, np.int64, g),
        ),
        (
            lambda g: torch.randint(0, 2**40, shape, generator=g),
            lambda g: R.randint(0, 2**40, shape, np.int64, g),
        ),
        (
            lambda g: torch.empty(shape, dtype=tdt).uniform_(-0.3, 0.7, generator=g),
            lambda g: R.uniform_(np.empty(shape, ndt), -0.3, 0.7, g),
        ),
        (
            lambda g: torch.empty(shape, dtype=tdt).normal_(1.5, 0.25, generator=g),
            lambda g: R.normal_(np.empty(shape, ndt), 1.5, 0.25, g),
        ),
        (lambda g: torch.randn(shape, dtype=tdt, generator=g), lambda g: R.randn(shape, ndt, g)),
        (lambda g: torch.randperm(37, generator=g), lambda g: R.randperm(37, np.int64, g)),
        (lambda g: torch.randn(3, dtype=tdt, generator=g), lambda g: R.randn(3, ndt, g)),
    ]


SEQ_SHAPES = [(), (1,), (2, 2), (15,), (16,), (17,), (33,), (100,), (16, 49)]


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("shape", SEQ_SHAPES, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
def test_interleaved_default_generator(seed, shape, dtypes):
    ndt, tdt = dtypes
    seed_both(seed)
    for tcall, rcall in _sequence_ops(tdt, ndt, shape) * 2:
        assert_same(tcall(None), rcall(None))
        assert_same_state()


@avx2_kernels
@pytest.mark.parametrize("dtypes", FLOAT_DTYPES[:2], ids=FLOAT_IDS[:2])
@pytest.mark.parametrize("seed", SEEDS)
def test_interleaved_mixed_shapes_explicit_generator(seed, dtypes):
    ndt, tdt = dtypes
    tg = torch.Generator().manual_seed(seed)
    rg = R.Generator().manual_seed(seed)
    ops = []
    for shape in [(1,), (17,), (2, 2), (100,), (), (33,), (15,), (16,)]:
        ops += _sequence_ops(tdt, ndt, shape)
    for tcall, rcall in ops:
        assert_same(tcall(tg), rcall(rg))
    assert_same_state(tg, rg)


def test_explicit_generator_is_independent_of_default():
    seed_both(0)
    tg = torch.Generator().manual_seed(99)
    rg = R.Generator().manual_seed(99)
    assert_same(torch.randn(5, generator=tg), R.randn(5, np.float32, rg))
    assert_same(torch.randn(5), R.randn(5, np.float32))
    assert_same_state()
    assert_same_state(tg, rg)


def test_fresh_generator_default_seed():
    tg, rg = torch.Generator(), R.Generator()
    assert tg.initial_seed() == rg.initial_seed() == 67280421310721
    assert_same_state(tg, rg)
    assert_same(torch.rand(20, generator=tg), R.rand(20, np.float32, rg))


@avx2_kernels
def test_scalar_normal_cache_spans_calls_and_seeding_clears_it():
    seed_both(4)
    for n in (1, 1, 3, 2, 1):
        assert_same(torch.randn(n, dtype=torch.float64), R.randn(n, np.float64))
        assert_same_state()
    # large calls do not touch the cache
    assert_same(torch.randn(1), R.randn(1, np.float32))
    assert_same(torch.randn(64), R.randn(64, np.float32))
    assert_same(torch.randn(1), R.randn(1, np.float32))
    assert_same_state()
    seed_both(4)
    assert_same(torch.randn(1), R.randn(1, np.float32))
    assert_same_state()


# --------------------------------------------------------------------------- seeds and states


@pytest.mark.parametrize("s", [0, 1, -1, -5, 2**32 - 1, 2**32 + 7, 2**63, 2**64 - 1, -(2**63)])
def test_seed_normalisation(s):
    torch.manual_seed(s)
    R.manual_seed(s)
    assert torch.initial_seed() == R.initial_seed()
    assert_same_state()
    assert_same(torch.randn(3), R.randn(3, np.float32))


@pytest.mark.parametrize("s", [2**64, -(2**63) - 1])
def test_seed_out_of_range(s):
    with pytest.raises(ValueError):
        torch.manual_seed(s)
    with pytest.raises(ValueError):
        R.manual_seed(s)


def test_seed_and_initial_seed():
    value = R.seed()
    assert 0 <= value < 2**64 and R.initial_seed() == value
    g = R.Generator()
    assert g.seed() == g.initial_seed()


def test_state_roundtrip():
    R.manual_seed(21)
    R.randn(3, np.float64)  # leaves a cached normal in the state
    state = R.get_rng_state()
    first = [R.randn(5, np.float32), R.rand(40, np.float64), R.randint(0, 9, (4,), np.int64)]
    R.set_rng_state(state)
    again = [R.randn(5, np.float32), R.rand(40, np.float64), R.randint(0, 9, (4,), np.int64)]
    for a, b in zip(first, again):
        assert_same(a, b)


@pytest.mark.parametrize("draws", [0, 1, 3, 623, 624, 625, 1300])
def test_state_exchange_with_torch(draws):
    # torch -> ours
    torch.manual_seed(8)
    if draws:
        torch.randint(0, 5, (draws,))
    torch.randn(1, dtype=torch.float64)
    R.set_rng_state(torch.get_rng_state().numpy())
    assert_same_state()
    assert_same(torch.randn(9, dtype=torch.float64), R.randn(9, np.float64))
    # ours -> torch
    R.manual_seed(8)
    if draws:
        R.randint(0, 5, (draws,), np.int64)
    torch.set_rng_state(torch.from_numpy(R.get_rng_state()))
    assert_same_state()
    assert_same(torch.rand(30), R.rand(30, np.float32))


def test_generator_state_objects():
    tg = torch.Generator().manual_seed(123)
    rg = R.Generator().manual_seed(123)
    torch.randn(7, generator=tg)
    R.randn(7, np.float32, rg)
    assert_same_state(tg, rg)
    rg2 = R.Generator()
    rg2.set_state(rg.get_state())
    assert_same(R.randn(20, np.float32, rg), R.randn(20, np.float32, rg2))


def test_set_state_rejects_bad_input():
    with pytest.raises(RuntimeError):
        R.set_rng_state(np.zeros(10, np.uint8))
    with pytest.raises(RuntimeError):
        R.set_rng_state(np.zeros(5056, np.uint8))  # not seeded / left == 0


# --------------------------------------------------------------------------- performance


def test_large_factories_are_fast():
    import time

    R.manual_seed(0)
    start = time.perf_counter()
    R.randn((784, 256), np.float32)
    R.rand((784, 256), np.float32)
    R.uniform_(np.empty((784, 256), np.float32), -0.05, 0.05)
    assert time.perf_counter() - start < 1.0


_DEFAULT_KERNEL_SCRIPT = """
import numpy as np, torch
torch.manual_seed(0)
a = torch.randn(100).numpy()
b = torch.empty(100).uniform_(-0.3, 0.7).numpy()
np.save(__import__("sys").argv[1], np.concatenate([a, b]))
"""


@pytest.mark.xfail(
    reason="not reproduced: PyTorch's generic CPU build (no AVX2, or ATEN_CPU_CAPABILITY=default) "
    "computes float32 normals (>= 16 elements) with glibc logf/cosf/sinf, which are not correctly "
    "rounded in about 1% of cases, and rounds x*(b-a)+a and z*std+mean without FMA; values then "
    "differ from ours in the last bit for a fraction of elements (distribution is the same)",
    strict=True,
)
def test_generic_cpu_kernels_not_reproduced(tmp_path):
    import subprocess

    out = tmp_path / "vals.npy"
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    subprocess.run(
        [sys.executable, "-c", _DEFAULT_KERNEL_SCRIPT, str(out)], env=env, check=True, timeout=120
    )
    expected = np.load(out)
    g = R.Generator().manual_seed(0)
    normals = R.randn(100, np.float32, g)
    uniforms = R.uniform_(np.empty(100, np.float32), -0.3, 0.7, g)
    got = np.concatenate([normals, uniforms])
    assert_same(expected, got)


# --------------------------------------------------------------------------- torch.* samplers
# normal's four overloads, bernoulli and Generator objects through the public namespace
# (`import adcompile as torch`): values, dtypes, grad_fn names and the generator state after.

_SAMPLERS = {
    "normal_numbers": lambda L, g: L.normal(0.5, 2.0, (40,), generator=g),
    "normal_numbers_f64": lambda L, g: L.normal(-1.0, 0.25, (3, 7), generator=g,
                                                dtype=L.float64),
    "normal_tensor_mean": lambda L, g: L.normal(L.linspace(-3, 3, 21).requires_grad_(), 0.5,
                                                generator=g),
    "normal_tensor_std": lambda L, g: L.normal(2.0, L.linspace(0, 1, 9).requires_grad_(),
                                               generator=g),
    "normal_both": lambda L, g: L.normal(L.linspace(-3, 3, 33, dtype=L.float64),
                                         L.linspace(0.1, 2, 33, dtype=L.float64)
                                         .requires_grad_(), generator=g),
    "normal_broadcast": lambda L, g: L.normal(L.linspace(-1, 1, 5), L.ones(4, 1), generator=g),
    "bernoulli": lambda L, g: L.bernoulli(L.linspace(0, 1, 37).requires_grad_(), generator=g),
    "bernoulli_f64_method": lambda L, g: L.linspace(0.2, 0.9, 20, dtype=L.float64).bernoulli(
        generator=g),
    "bernoulli_f16": lambda L, g: L.bernoulli(L.linspace(0, 1, 18, dtype=L.float16),
                                              generator=g),
}


@avx2_kernels
@pytest.mark.parametrize("own_generator", [False, True], ids=["default", "Generator"])
@pytest.mark.parametrize("name", list(_SAMPLERS))
def test_torch_samplers(name, own_generator):
    import adcompile

    results = []
    for L in (torch, adcompile):
        g = L.Generator().manual_seed(11) if own_generator else None
        L.manual_seed(3)
        out = _SAMPLERS[name](L, g)
        after = L.rand(5, generator=g)  # the stream continues in step
        grad_fn = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        zero_grads = None
        if out.requires_grad:
            leaf = out.grad_fn.next_functions[-1][0].variable
            (grad,) = L.autograd.grad(out.sum(), leaf)
            zero_grads = not grad.numpy().any()
        results.append((out.detach().numpy(), after.numpy(), grad_fn, zero_grads))
    (theirs, t_after, *t_facts), (ours, o_after, *o_facts) = results
    assert_same(theirs, ours)
    assert_same(t_after, o_after)
    assert o_facts == t_facts


def test_bernoulli_with_a_number_p_is_refused():
    import adcompile

    with pytest.raises(NotImplementedError):
        adcompile.bernoulli(adcompile.ones(3), 0.5)
