"""numpy's own inner loops for transcendental functions of arrays (backends/llvm/ufuncs.py).

On the LLVM backend `np.exp(a)` (and the other functions of ufuncs.NAMES) of a float32 or
float64 array calls the loop numpy itself calls, so the compiled result has numpy's bits:
for every function and both dtypes, on contiguous, strided, transposed, 0-d and empty arrays,
on a value computed block by block into a buffer (a lazy expression, a cast from integers),
on special numbers (infinities, NaN, signed zeros, arguments outside the domain) and on
arrays long enough to be cut into pieces for the pool's threads. The interpreter and the
Python backend, which call numpy, give the same bits; so do gradients through these
functions. Where no loop is found, the C library's function is used, fused as before."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import ufuncs
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import no_ir_cache  # noqa: F401 (a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
NAMES = list(ufuncs.NAMES)
NUMPY = [getattr(np, ufuncs.NAMES[name]) for name in NAMES]


def one_of(x, k):
    """NUMPY[k](x), with the functions in the order of ufuncs.NAMES."""
    if k == 0:
        return np.sin(x)
    elif k == 1:
        return np.cos(x)
    elif k == 2:
        return np.tan(x)
    elif k == 3:
        return np.exp(x)
    elif k == 4:
        return np.log(x)
    elif k == 5:
        return np.log1p(x)
    elif k == 6:
        return np.expm1(x)
    elif k == 7:
        return np.tanh(x)
    elif k == 8:
        return np.sinh(x)
    elif k == 9:
        return np.cosh(x)
    elif k == 10:
        return np.arcsin(x)
    elif k == 11:
        return np.arccos(x)
    elif k == 12:
        return np.arctan(x)
    elif k == 13:
        return np.log2(x)
    return np.log10(x)


def of_expression(x, k):
    """NUMPY[k] of an expression fused into the call's blocks (a lazy value)."""
    if k == 0:
        return np.sin(x * 0.5 + 0.25)
    elif k == 1:
        return np.cos(x * 0.5 + 0.25)
    elif k == 2:
        return np.tan(x * 0.5 + 0.25)
    elif k == 3:
        return np.exp(x * 0.5 + 0.25)
    elif k == 4:
        return np.log(x * 0.5 + 0.25)
    elif k == 5:
        return np.log1p(x * 0.5 + 0.25)
    elif k == 6:
        return np.expm1(x * 0.5 + 0.25)
    elif k == 7:
        return np.tanh(x * 0.5 + 0.25)
    elif k == 8:
        return np.sinh(x * 0.5 + 0.25)
    elif k == 9:
        return np.cosh(x * 0.5 + 0.25)
    elif k == 10:
        return np.arcsin(x * 0.5 + 0.25)
    elif k == 11:
        return np.arccos(x * 0.5 + 0.25)
    elif k == 12:
        return np.arctan(x * 0.5 + 0.25)
    elif k == 13:
        return np.log2(x * 0.5 + 0.25)
    return np.log10(x * 0.5 + 0.25)


def _inputs(k, shape, dtype, seed=0):
    """Numbers of NUMPY[k]'s domain, with a few outside it and special ones."""
    rng = np.random.default_rng(seed)
    name = NAMES[k]
    if name in ("asin", "acos"):
        x = rng.uniform(-1.0, 1.0, shape)
    elif name.startswith("log"):
        x = rng.uniform(0.0, 6.0, shape)
    else:
        x = rng.normal(0.0, 3.0, shape)
    flat = x.reshape(-1)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, -1.5, 1e300, 800.0, -800.0, 5e-324]
    flat[:len(specials)] = specials[:flat.size]
    return x.astype(dtype)


def _layouts(k, dtype):
    """(label, argument) pairs: the layouts the loop is called on."""
    matrix = _inputs(k, (23, 37), dtype, seed=1)
    return [
        ("contiguous", _inputs(k, (1500,), dtype)),
        ("one", _inputs(k, (1,), dtype)),
        ("empty", np.zeros(0, dtype)),
        ("strided", _inputs(k, (3000,), dtype)[::3]),
        ("reversed", _inputs(k, (700,), dtype)[::-1]),
        ("transposed", matrix.T),
        ("columns", matrix[:, ::2]),
        ("zero-d", np.asarray(_inputs(k, (3,), dtype)[-1])),
        ("empty rows", np.zeros((4, 0), dtype)),
    ]


_COMPILED = {}


def _compiled(fn, backend="llvm"):
    if (fn, backend) not in _COMPILED:
        _COMPILED[fn, backend] = ac.adcompile(fn, backend=backend)
    return _COMPILED[fn, backend]


def _expected(k, x):
    with np.errstate(all="ignore"):
        return NUMPY[k](x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_numpy_bits_on_every_layout(k, dtype):
    for label, x in _layouts(k, dtype):
        got = _compiled(one_of)(x, k)
        assert got.dtype == dtype, label
        _same_bits(got, _expected(k, x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_numpy_bits_of_a_fused_expression(k, dtype):
    for label, x in _layouts(k, dtype):
        x = np.asarray(x * dtype(2.0))  # (a 0-d array stays one, not a scalar)
        with np.errstate(all="ignore"):
            want = NUMPY[k](x * dtype(0.5) + dtype(0.25))
        _same_bits(_compiled(of_expression)(x, k), want)


@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_integers_are_cast_into_the_buffer(k):
    x = np.arange(-40, 60, dtype=np.int64)
    _same_bits(_compiled(one_of)(x, k), _expected(k, x))


@pytest.mark.parametrize("backend", ["interp", "python"])
@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_every_backend_gives_numpy_bits(k, backend):
    x = _inputs(k, (257,), np.float64)
    _same_bits(_compiled(one_of, backend)(x, k), _compiled(one_of)(x, k))


@pytest.mark.parametrize("k", range(len(NAMES)), ids=NAMES)
def test_long_arrays_in_pieces(k):
    """Long enough for the pool to cut the loop into pieces: the same bits as numpy and as
    one thread."""
    x = _inputs(k, (3, 100003), np.float64)
    want = _expected(k, x)
    _same_bits(_compiled(one_of)(x, k), want)
    serial = ac.adcompile(one_of, parallel=False)
    _same_bits(serial(x, k), want)


def softplus_loss(x, w):
    return np.sum(w * np.log1p(np.exp(x))) + np.sum(np.tanh(x) ** 2) - np.sum(np.arctan(x * w))


def log_sum_exp(x):
    top = np.max(x)
    return top + np.log(np.sum(np.exp(x - top)))


@pytest.mark.parametrize("n", [1, 5, 600, 70000])
def test_gradients_agree_with_the_interpreter(n):
    rng = np.random.default_rng(n)
    x, w = rng.normal(size=n), rng.normal(size=n)
    for fn, args in ((softplus_loss, (x, w)), (log_sum_exp, (x,))):
        want = ac.value_and_grad(_compiled(fn, "interp"))(*args)
        got = ac.value_and_grad(_compiled(fn))(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-300)
        step = 1e-6
        e = np.zeros(n)
        e[n // 2] = step
        lo, hi = _compiled(fn)(x - e, *args[1:]), _compiled(fn)(x + e, *args[1:])
        assert abs((hi - lo) / (2 * step) - got[1][n // 2]) < 1e-6 * (1 + abs(got[1][n // 2]))


def test_a_loop_is_checked_against_its_ufunc():
    """A loop is used only where it gives the ufunc's own bits on probe numbers."""
    address, cell = ufuncs._loops()["sin", "f64"]
    assert ufuncs._agrees(np.sin, np.float64, address, cell.value)
    assert not ufuncs._agrees(np.cos, np.float64, address, cell.value)
    assert ("exp", "f64") in ufuncs.key()[0]


def test_without_the_loops_the_c_library_computes_them(monkeypatch, no_ir_cache):
    monkeypatch.setattr(ufuncs, "_found", {})
    x = _inputs(3, (1001,), np.float64)[20:]
    f = ac.adcompile(of_expression)
    np.testing.assert_allclose(f(x, 3), np.exp(x * 0.5 + 0.25), rtol=1e-15)
    np.testing.assert_allclose(f(x, 7), np.tanh(x * 0.5 + 0.25), rtol=1e-15)


def extremes(x):
    return np.max(x), np.min(x)


def extremes_of_expression(x):
    return np.max(x * 2.0 - 1.0), np.min(x * 2.0 - 1.0)


def extremes_along(m):
    return np.max(m, axis=1), np.min(m, axis=0), np.max(m)


def _signed_zeros(n, dtype, seed):
    """Zeros of both signs, ones, and NaNs of several payloads: where the order in which
    numpy's max visits the elements shows in its result's bits."""
    rng = np.random.default_rng(seed)
    quiet = np.array([0x7FF8000000000001, 0xFFF8000000000002], np.uint64).view(np.float64)
    pools = [[0.0, -0.0], [0.0, -0.0, -1.0, 1.0], [0.0, -0.0, np.nan, *quiet, 2.0]]
    return rng.choice(np.array(pools[seed % 3]), n).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 33, 64, 130, 1000, 5003])
def test_max_and_min_reduce_with_numpys_loops(n, dtype):
    """numpy's max and min of a vector: the ±0 and the NaN payload numpy returns (its
    vectorised reduction does not keep the last of equal elements)."""
    for seed in range(6):
        x = _signed_zeros(n, dtype, seed)
        for label, a in (("contiguous", x), ("reversed", x[::-1]), ("strided", x[::2])):
            _same_bits(_compiled(extremes)(a), (np.max(a), np.min(a)))
        with np.errstate(all="ignore"):
            want = (np.max(x * 2.0 - 1.0), np.min(x * 2.0 - 1.0))
        _same_bits(_compiled(extremes_of_expression)(x), want)


@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (40, 3), (17, 300)])
def test_max_and_min_along_axes(shape):
    m = np.random.default_rng(3).normal(size=shape)
    m[0, ::2] = np.nan
    for a in (m, m.T, m[:, ::2]):
        got = _compiled(extremes_along)(a)
        want = (np.max(a, axis=1), np.min(a, axis=0), np.max(a))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


# -- short rows in registers (ufuncs.short_rows) ------------------------------------------------


def row_extremes(m):
    return np.min(m, axis=1), np.max(m, axis=-1), np.min(m[0]), np.max(m[-1])


def nearest(points, centres):
    total = 0.0
    for i in range(points.shape[0]):
        total += np.min(np.sum((centres - points[i]) ** 2, axis=1))
    return total


def _ties(shape, dtype, seed, nan=False, zeros=False):
    rng = np.random.default_rng(seed)
    pool = [0.0, -0.0] if zeros else [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf]
    return rng.choice(np.array(pool + ([np.nan] if nan else [])), shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_short_rows_reduce_with_numpys_bits(dtype):
    """Rows of every length up to past the longest a model covers, ties of zeros in every
    lane, NaNs (which go to numpy's loop), contiguous, reversed and strided rows."""
    f = _compiled(row_extremes)
    for n in list(range(1, 70)) + [127, 128, 129]:
        for seed, nan in ((n, False), (n + 1000, True)):
            m = _ties((5, n), dtype, seed, nan)
            for a in (m, m[:, ::-1], m[::-1], np.repeat(m, 2, axis=1)[:, ::2]):
                _same_bits(f(a), row_extremes(a))


def test_short_rows_in_a_loop():
    rng = np.random.default_rng(4)
    points, centres = rng.normal(size=(50, 16)), rng.normal(size=(10, 16))
    centres[3] = points[7]  # an exact zero distance
    assert _compiled(nearest)(points, centres) == nearest(points, centres)


@pytest.mark.parametrize("prim,dtype", [(p, d) for p in ("amin", "amax") for d in ("f64", "f32")])
def test_the_lane_model_is_fitted_to_numpy(prim, dtype):
    """The fitted model reproduces numpy's reductions of rows with ties, and the fit has
    teeth: the plain scalar loop, or the model with its lanes folded the other way, does
    not (on a machine whose numpy reduces in vectors: a width above 1)."""
    lanes = ufuncs.short_rows(prim, dtype)
    assert lanes is not None and lanes.longest == ufuncs.LONGEST
    scalar = np.float64 if dtype == "f64" else np.float32
    ufunc = np.minimum if prim == "amin" else np.maximum
    less = np.less if prim == "amin" else np.greater
    plain = ufuncs.Lanes(1, False, (), lanes.longest)
    flipped = lanes._replace(upper_first=tuple(not u for u in lanes.upper_first))
    w = lanes.width
    for n in (1, 7, w, w + 1, 2 * w, 2 * w + 3, 3 * w, lanes.longest):
        rows = _ties((4000, n + 1), scalar, n, zeros=True)
        want = ufunc.reduce(rows, axis=1).tobytes()
        assert ufuncs._reduced(lanes, rows, n, less).tobytes() == want
        if w > 1 and n % w == 0:  # (of zeros alone, a row's last element wins a tail)
            for wrong in (plain, flipped):
                assert ufuncs._reduced(wrong, rows, n, less).tobytes() != want


def test_short_rows_take_the_model(monkeypatch, no_ir_cache):
    """The compiled code follows the model: a wrong one (lanes folded the other way) changes
    which zero np.min returns, and without the models every row is a call again."""
    lanes = ufuncs.short_rows("amin", "f64")
    if lanes.width == 1:
        pytest.skip("numpy reduces these rows with a scalar loop here")
    m = _ties((4000, 3 * lanes.width + 1), np.float64, 11, zeros=True)  # the cell, 3 groups
    want = np.min(m, axis=1)
    _same_bits(ac.adcompile(_min_rows)(m), want)
    monkeypatch.setitem(ufuncs._models, ("amin", "f64"), lanes._replace(
        upper_first=tuple(not u for u in lanes.upper_first)))
    assert ac.adcompile(_min_rows)(m).tobytes() != want.tobytes()
    monkeypatch.setattr(ufuncs, "SHORT_ROWS", False)
    _same_bits(ac.adcompile(_min_rows)(m), want)


def _min_rows(m):
    return np.min(m, axis=1)
